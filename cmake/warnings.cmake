# Warning flags shared by every vkllm target.
function(vkl_target_defaults target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wvla
    -Wstrict-prototypes -Wmissing-prototypes -Wno-missing-field-initializers)
  # gcc can limit shadow warnings to locals; clang has only the plain form.
  if(CMAKE_C_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wshadow=local)
  else()
    target_compile_options(${target} PRIVATE -Wshadow)
  endif()
  if(VKL_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
