# VKL_SANITIZE: ASan + UBSan on every target (CI runs the unit tests this way);
# VKL_SANITIZE_THREAD: TSan on every target (CI runs the tests labelled tsan:
# sessions on several threads); VKL_FUZZ: libFuzzer targets, which need clang.
if(VKL_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined
    -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
if(VKL_SANITIZE_THREAD AND (VKL_SANITIZE OR VKL_FUZZ))
  message(FATAL_ERROR "VKL_SANITIZE_THREAD cannot be combined with VKL_SANITIZE or VKL_FUZZ (ASan)")
endif()
if(VKL_SANITIZE_THREAD AND NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "VKL_SANITIZE_THREAD needs clang (Debian: clang, libclang-rt-14-dev): "
    "configure with -DCMAKE_C_COMPILER=clang")
endif()
if(VKL_SANITIZE_THREAD)
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
endif()
if(VKL_FUZZ AND NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "VKL_FUZZ needs clang: configure with -DCMAKE_C_COMPILER=clang")
endif()
if(VKL_FUZZ)
  # Coverage instrumentation everywhere; only fuzz targets link libFuzzer's
  # main. VKL_FUZZING lets parsers ignore checksum mismatches so the fuzzer
  # explores past them (the checks still run).
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
    -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
  add_compile_definitions(VKL_FUZZING=1)
endif()
