# `cmake --install BUILD --prefix P`: libvkllm, the public headers, the
# vkllm and vkbench programs, lib/pkgconfig/vkllm.pc and the CMake package
# (find_package(vkllm) -> vkllm::vkllm). tests/install/run.sh builds
# examples/generate.c against the result both ways.
include(CMakePackageConfigHelpers)
set(VKL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/vkllm)

install(TARGETS vkllm EXPORT vkllmTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES engine/include/vkllm.h engine/include/vkllm_tokenizer.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(VKL_HAVE_VULKAN)
  install(FILES engine/include/vkllm_vulkan.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endif()
install(TARGETS vkllm_cli vkbench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

install(EXPORT vkllmTargets NAMESPACE vkllm:: DESTINATION ${VKL_CMAKE_DIR})
set(VKL_STATIC_LIBRARY ON)
if(BUILD_SHARED_LIBS)
  set(VKL_STATIC_LIBRARY OFF)
endif()
configure_package_config_file(cmake/vkllmConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/vkllmConfig.cmake
  INSTALL_DESTINATION ${VKL_CMAKE_DIR})
# Before 1.0 a minor version may break the API: 0.1.x satisfies 0.1 only.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/vkllmConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/vkllmConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/vkllmConfigVersion.cmake
  cmake/vkllmDependencies.cmake DESTINATION ${VKL_CMAKE_DIR})

# vkllm.pc finds its prefix relative to itself (pkg-config's ${pcfiledir}),
# so the installed tree works wherever `cmake --install --prefix` put it.
# A static libvkllm needs its dependencies on the consumer's link line
# (`pkg-config --static`); a shared one records them itself.
set(pc_dir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(VKL_PC_PREFIX ${CMAKE_INSTALL_PREFIX})
  set(VKL_PC_LIBDIR ${CMAKE_INSTALL_FULL_LIBDIR})
  set(VKL_PC_INCLUDEDIR ${CMAKE_INSTALL_FULL_INCLUDEDIR})
else()
  file(RELATIVE_PATH up /root/${pc_dir} /root)
  string(REGEX REPLACE "/$" "" up "${up}")
  set(VKL_PC_PREFIX "\${pcfiledir}/${up}")
  set(VKL_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
  set(VKL_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
set(VKL_PC_PRIVATE "")
if(NOT BUILD_SHARED_LIBS)
  set(libs "-lm -pthread")
  foreach(l ${CMAKE_DL_LIBS})
    string(APPEND libs " -l${l}")
  endforeach()
  set(VKL_PC_PRIVATE "Requires.private: libcjson libutf8proc\nLibs.private: ${libs}")
endif()
configure_file(cmake/vkllm.pc.in ${CMAKE_CURRENT_BINARY_DIR}/vkllm.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/vkllm.pc DESTINATION ${pc_dir})
