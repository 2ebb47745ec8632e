# `make install` / `cmake --install`: the public headers, the client library
# with every project library it links, the `shoal` binary, a CMake package
# (find_package(Shoal) -> Shoal::client) and a pkg-config file (shoal.pc).
# Included at the end of the top-level CMakeLists.txt, once every target exists.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The public library's contract, carried by the exported target: the API is C++23
# (std::expected in shoal/status.h).
target_compile_features(shoal_client PUBLIC cxx_std_23)

# _shoal_link_closure(<target> <out-var>): <target> and the project libraries it
# links, directly or through others, each listed before the ones it depends on
# (the order a static link wants). Walked rather than listed, so that a library
# the client starts to link is installed and exported with it.
function(_shoal_visit tgt)
  get_property(seen GLOBAL PROPERTY _SHOAL_CLOSURE_SEEN)
  if(tgt IN_LIST seen)
    return()
  endif()
  set_property(GLOBAL APPEND PROPERTY _SHOAL_CLOSURE_SEEN ${tgt})
  get_target_property(deps ${tgt} INTERFACE_LINK_LIBRARIES)  # PRIVATE ones appear as $<LINK_ONLY:...>
  foreach(dep IN LISTS deps)
    string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" dep "${dep}")
    if(TARGET "${dep}")
      get_target_property(imported ${dep} IMPORTED)
      if(NOT imported)
        _shoal_visit(${dep})
      endif()
    endif()
  endforeach()
  set_property(GLOBAL APPEND PROPERTY _SHOAL_CLOSURE_ORDER ${tgt})
endfunction()

function(_shoal_link_closure tgt out)
  set_property(GLOBAL PROPERTY _SHOAL_CLOSURE_SEEN "")
  set_property(GLOBAL PROPERTY _SHOAL_CLOSURE_ORDER "")
  _shoal_visit(${tgt})
  get_property(order GLOBAL PROPERTY _SHOAL_CLOSURE_ORDER)
  list(REVERSE order)
  set(${out} ${order} PARENT_SCOPE)
endfunction()

_shoal_link_closure(shoal_client _shoal_libs)

set(_shoal_pc_libs "")
foreach(lib IN LISTS _shoal_libs)
  string(REGEX REPLACE "^shoal_" "" name ${lib})
  set_target_properties(${lib} PROPERTIES EXPORT_NAME ${name})  # Shoal::client, Shoal::ufs, ...
  get_target_property(type ${lib} TYPE)
  if(type STREQUAL "STATIC_LIBRARY")
    string(APPEND _shoal_pc_libs " -l${lib}")
  endif()
endforeach()

set(SHOAL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Shoal)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/shoal DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(FILES ${SHOAL_GENERATED_INCLUDE_DIR}/shoal/version.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/shoal)
install(TARGETS ${_shoal_libs} EXPORT ShoalTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS shoal RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT ShoalTargets NAMESPACE Shoal:: DESTINATION ${SHOAL_CMAKE_DIR})

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/ShoalConfig.cmake.in
  ${PROJECT_BINARY_DIR}/ShoalConfig.cmake INSTALL_DESTINATION ${SHOAL_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ShoalConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)  # 0.x: a minor release may change the API
install(FILES ${PROJECT_BINARY_DIR}/ShoalConfig.cmake ${PROJECT_BINARY_DIR}/ShoalConfigVersion.cmake
        DESTINATION ${SHOAL_CMAKE_DIR})

# shoal.pc names the prefix given at install time (cmake --install --prefix), so
# its first line is written then; the rest is fixed at configure time.
configure_file(${CMAKE_CURRENT_LIST_DIR}/shoal.pc.in ${PROJECT_BINARY_DIR}/shoal.pc.body @ONLY)
install(CODE "set(_shoal_pc_dir \"${PROJECT_BINARY_DIR}\")")
install(CODE [[
  file(READ "${_shoal_pc_dir}/shoal.pc.body" _shoal_pc_body)
  file(WRITE "${_shoal_pc_dir}/shoal.pc" "prefix=${CMAKE_INSTALL_PREFIX}\n${_shoal_pc_body}")
]])
install(FILES ${PROJECT_BINARY_DIR}/shoal.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
