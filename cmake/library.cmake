# libvkllm, the library that is installed: the objects of the library's
# parts (object libraries: engine, backends, Vulkan, volk, tokenizer) in one
# static archive (default) or one shared object (BUILD_SHARED_LIBS=ON).
# Inside the build, tools and tests link vkllm_core / vkllm_tokenizer
# instead: static libraries of the same objects that also reach internals.
#
# The parts are compiled with hidden visibility; only functions marked
# VKLLM_API (the public headers) are exported. A static archive has no
# export list, so its objects are first prelinked into one relocatable
# object whose hidden symbols are then made local: an app sees the public
# API and nothing else here either (no clash with its own symbols; volk's
# function pointers, named like Vulkan's own functions, cannot capture an
# app's calls into libvulkan).

# vkl_library_part(<object library>): compiled for libvkllm.
function(vkl_library_part target)
  set_target_properties(${target} PROPERTIES C_VISIBILITY_PRESET hidden POSITION_INDEPENDENT_CODE ON)
endfunction()

function(vkl_add_public_library parts)
  set(objects "")
  foreach(p ${parts})
    list(APPEND objects $<TARGET_OBJECTS:${p}>)
  endforeach()
  # Before 1.0 a minor version may break the ABI, so it is part of the soname.
  if(PROJECT_VERSION_MAJOR GREATER 0)
    set(soversion ${PROJECT_VERSION_MAJOR})
  else()
    set(soversion ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
  endif()
  # Link-time optimization objects cannot be prelinked by `cc -r` without
  # the LTO flags: then the archive holds the objects as they are.
  string(TOUPPER "${CMAKE_BUILD_TYPE}" type)
  set(prelink ON)
  if(CMAKE_INTERPROCEDURAL_OPTIMIZATION OR "${CMAKE_C_FLAGS} ${CMAKE_C_FLAGS_${type}}" MATCHES "-flto")
    set(prelink OFF)
  endif()

  if(BUILD_SHARED_LIBS)
    add_library(vkllm SHARED ${objects})
    set_target_properties(vkllm PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION ${soversion})
    # Every dependency named at link time (sanitizer runtimes are not).
    if(NOT VKL_SANITIZE AND NOT VKL_FUZZ)
      target_link_options(vkllm PRIVATE LINKER:--no-undefined)
    endif()
  elseif(prelink)
    set(prelinked ${CMAKE_CURRENT_BINARY_DIR}/vkllm_prelinked.o)
    add_custom_command(
      OUTPUT ${prelinked}
      COMMAND ${CMAKE_C_COMPILER} -r -nostdlib -o ${prelinked} ${objects}
      COMMAND ${CMAKE_OBJCOPY} --localize-hidden ${prelinked}
      DEPENDS ${parts} ${objects}
      COMMAND_EXPAND_LISTS VERBATIM
      COMMENT "Prelinking libvkllm (internal symbols made local)")
    add_library(vkllm STATIC ${prelinked})
    set_target_properties(vkllm PROPERTIES LINKER_LANGUAGE C)
  else()
    add_library(vkllm STATIC ${objects})
  endif()
  target_include_directories(vkllm PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/engine/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(vkllm PRIVATE m Threads::Threads ${CMAKE_DL_LIBS} PkgConfig::vkllm_cjson
    PkgConfig::vkllm_utf8proc)
  add_library(vkllm::vkllm ALIAS vkllm)
endfunction()
