# What libvkllm links besides libc: libm, threads, libdl (volk loads
# libvulkan at run time), and the tokenizer's cJSON and utf8proc, found with
# pkg-config (Debian 12's utf8proc has no CMake package) under vkllm's own
# target names. Used when vkllm is built and, for a static libvkllm, by a
# consumer's find_package(vkllm). Sets vkllm_DEPENDENCIES_FOUND and, when
# something is missing, vkllm_DEPENDENCIES_MISSING.
set(vkllm_DEPENDENCIES_MISSING "")
find_package(Threads QUIET)
if(NOT Threads_FOUND)
  list(APPEND vkllm_DEPENDENCIES_MISSING "threads")
endif()
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(vkllm_cjson QUIET IMPORTED_TARGET libcjson)
  pkg_check_modules(vkllm_utf8proc QUIET IMPORTED_TARGET libutf8proc)
  if(NOT vkllm_cjson_FOUND)
    list(APPEND vkllm_DEPENDENCIES_MISSING "libcjson (Debian: libcjson-dev)")
  endif()
  if(NOT vkllm_utf8proc_FOUND)
    list(APPEND vkllm_DEPENDENCIES_MISSING "libutf8proc (Debian: libutf8proc-dev)")
  endif()
else()
  list(APPEND vkllm_DEPENDENCIES_MISSING "pkg-config")
endif()
if(vkllm_DEPENDENCIES_MISSING)
  set(vkllm_DEPENDENCIES_FOUND FALSE)
else()
  set(vkllm_DEPENDENCIES_FOUND TRUE)
endif()
