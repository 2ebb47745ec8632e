# Test harness libraries for the Azure Blob (Azurite) and WebHDFS backends:
# shoal_test_azurite (tests/harness/azurite.h), shoal_test_webhdfs (tests/harness/webhdfs.h),
# and shoal_test_harness_util (tests/harness/harness_util.h), which they and
# shoal_test_s3rver share. Included from tests/harness/CMakeLists.txt; other suites may link them.
include_guard(GLOBAL)

set(_shoal_harness_dir ${CMAKE_CURRENT_LIST_DIR})

# Where the repository's test tools are; scratch directories.
add_library(shoal_test_harness_util STATIC ${_shoal_harness_dir}/harness_util.cc)
target_include_directories(shoal_test_harness_util PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
target_compile_definitions(shoal_test_harness_util PRIVATE SHOAL_HARNESS_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
target_link_libraries(shoal_test_harness_util PUBLIC shoal_common)

# Starts tests/webhdfs_server.py (needs /usr/bin/python3).
add_library(shoal_test_webhdfs STATIC ${_shoal_harness_dir}/webhdfs.cc)
target_include_directories(shoal_test_webhdfs PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(shoal_test_webhdfs PUBLIC shoal_common shoal_ufs shoal_test_harness_util PRIVATE nlohmann_json::nlohmann_json)

# Starts Azurite's blob service from tools/node_modules (installed by scripts/bootstrap).
add_library(shoal_test_azurite STATIC ${_shoal_harness_dir}/azurite.cc)
target_include_directories(shoal_test_azurite PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(shoal_test_azurite PUBLIC shoal_common shoal_ufs shoal_test_harness_util)

# Stated here too so the targets build the same wherever this file is included.
target_compile_features(shoal_test_harness_util PUBLIC cxx_std_23)
target_compile_features(shoal_test_webhdfs PUBLIC cxx_std_23)
target_compile_features(shoal_test_azurite PUBLIC cxx_std_23)
