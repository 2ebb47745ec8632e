# The version headers, written at configure time:
#  - include/shoal/version.h (installed): the project version as macros;
#  - src/cli/build_info.h (the `shoal` binary only): the git commit the build
#    was configured from ("unknown" outside a git checkout) and the build type,
#    for `shoal --version`. Configure again to pick up a new commit.
execute_process(COMMAND git -C ${PROJECT_SOURCE_DIR} rev-parse --short=12 HEAD
                OUTPUT_VARIABLE SHOAL_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE
                RESULT_VARIABLE _shoal_git_rc ERROR_QUIET)
if(NOT _shoal_git_rc EQUAL 0 OR SHOAL_GIT_COMMIT STREQUAL "")
  set(SHOAL_GIT_COMMIT unknown)
endif()
set(SHOAL_GENERATED_INCLUDE_DIR ${PROJECT_BINARY_DIR}/generated)
configure_file(${PROJECT_SOURCE_DIR}/include/shoal/version.h.in ${SHOAL_GENERATED_INCLUDE_DIR}/shoal/version.h @ONLY)
configure_file(${PROJECT_SOURCE_DIR}/src/cli/build_info.h.in ${SHOAL_GENERATED_INCLUDE_DIR}/cli/build_info.h @ONLY)
# Only the targets that include them get the directory (target_include_directories
# with SHOAL_GENERATED_INCLUDE_DIR), so that a new commit rebuilds one file.
