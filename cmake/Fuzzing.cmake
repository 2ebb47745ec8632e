# -DSHOAL_FUZZ=ON: every library is built with libFuzzer's coverage hooks and
# AddressSanitizer + UndefinedBehaviorSanitizer (any UB report aborts, so the
# fuzzer keeps it as a crash), and fuzz/ builds one libFuzzer binary per harness.
if(NOT SHOAL_FUZZ)
  return()
endif()
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "SHOAL_FUZZ needs clang (libFuzzer): configure with CC=clang-16 CXX=clang++-16, as `make fuzz` does")
endif()
if(CMAKE_CXX_COMPILER_VERSION VERSION_LESS 16)
  message(FATAL_ERROR "SHOAL_FUZZ needs clang 16 or newer (Debian's clang-16): older ones cannot compile std::expected")
endif()
if(CMAKE_CXX_COMPILER_VERSION VERSION_LESS 19)
  # libstdc++ 12 offers std::expected only when __cpp_concepts says P0848
  # (conditionally trivial special members), which clang implements from 16
  # but announces only from 19.
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-U__cpp_concepts> $<$<COMPILE_LANGUAGE:CXX>:-D__cpp_concepts=202002L>
                      $<$<COMPILE_LANGUAGE:CXX>:-Wno-builtin-macro-redefined>)
endif()
add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
                    -fno-omit-frame-pointer -gline-tables-only)
add_link_options(-fsanitize=address,undefined)
