# The version is written once, in the public header (VKLLM_VERSION_* in
# engine/include/vkllm.h); project() takes it from there, so the header, the
# library's soname, vkllm.pc and the CMake package cannot disagree.
# Included before project(): sets VKL_HEADER_VERSION.
file(STRINGS ${CMAKE_CURRENT_LIST_DIR}/../engine/include/vkllm.h _vkl_lines
  REGEX "^#define VKLLM_VERSION_(MAJOR|MINOR|PATCH|STRING) ")
set(_vkl_parts "")
foreach(part MAJOR MINOR PATCH)
  if(NOT _vkl_lines MATCHES "VKLLM_VERSION_${part} ([0-9]+)")
    message(FATAL_ERROR "engine/include/vkllm.h: no '#define VKLLM_VERSION_${part} <number>'")
  endif()
  list(APPEND _vkl_parts ${CMAKE_MATCH_1})
endforeach()
list(JOIN _vkl_parts "." VKL_HEADER_VERSION)
if(NOT _vkl_lines MATCHES "VKLLM_VERSION_STRING \"([^\"]*)\"" OR NOT CMAKE_MATCH_1 STREQUAL VKL_HEADER_VERSION)
  message(FATAL_ERROR "engine/include/vkllm.h: VKLLM_VERSION_STRING must be \"${VKL_HEADER_VERSION}\" "
    "(MAJOR.MINOR.PATCH of the lines above it)")
endif()
