# The Vulkan backend's prerequisites and its shader build. SPIR-V is made at
# build time, never on a device: every shaders/vulkan/*.comp (plus the
# variants listed below) is compiled by glslc, checked by spirv-val when it is
# installed, and embedded as uint32_t arrays in one generated .c by
# cmake/embed_spirv.cmake (no xxd). Nothing generated is committed.
#
# VKL_VULKAN (default ON) switches itself off, with a message, when the
# Vulkan headers, volk (Debian libvulkan-volk-dev: volk.h + volk.c; volk
# loads libvulkan at run time, so nothing links libvulkan) or glslc are
# missing. The result is VKL_HAVE_VULKAN (a plain variable, so installing
# the tools and re-running cmake turns the backend back on).
option(VKL_VULKAN "Build the Vulkan backend (needs Vulkan headers, volk and glslc)" ON)

set(VKL_HAVE_VULKAN OFF)
if(VKL_VULKAN)
  find_path(VKL_VULKAN_INCLUDE_DIR vulkan/vulkan.h)
  find_path(VKL_VOLK_INCLUDE_DIR volk.h)
  find_file(VKL_VOLK_SOURCE volk.c HINTS ${VKL_VOLK_INCLUDE_DIR} NO_CACHE)
  find_program(VKL_GLSLC glslc)
  find_program(VKL_SPIRV_VAL spirv-val)
  set(missing "")
  if(NOT VKL_VULKAN_INCLUDE_DIR)
    list(APPEND missing "vulkan/vulkan.h (libvulkan-dev)")
  endif()
  if(NOT VKL_VOLK_INCLUDE_DIR OR NOT VKL_VOLK_SOURCE)
    list(APPEND missing "volk.h/volk.c (libvulkan-volk-dev)")
  endif()
  if(NOT VKL_GLSLC)
    list(APPEND missing "glslc")
  endif()
  if(missing)
    string(REPLACE ";" ", " missing "${missing}")
    message(STATUS "Vulkan backend OFF: missing ${missing} (scripts/setup installs them)")
  else()
    set(VKL_HAVE_VULKAN ON)
    message(STATUS "Vulkan backend ON (glslc: ${VKL_GLSLC}; spirv-val: ${VKL_SPIRV_VAL})")
  endif()
endif()

# Variants of a shader compiled with extra -D defines, as
# "<shader>:<suffix>:<DEF>[,<DEF>...]"; each becomes "<shader>_<suffix>" in
# the embedded table. The _sg variants reduce with subgroup arithmetic; the
# plain ones use shared memory only, for devices without it. The _f16 ones
# compute in fp16 (needs shaderFloat16; choose_math in vk_device.c says when).
# The _cm ones run on NVIDIA's matrix units (GL_NV_cooperative_matrix, which
# this glslc compiles; vk_gemm_tuning.c says when); the _cmemu ones are the
# same body with its fragments in plain arithmetic, for tests on any device
# (likewise attn_prefill_cm.comp, the flash attention on the matrix units,
# and its _emu build).
# quant_act_int8 (the _dot matvecs' activations as int8 codes) is built for
# the 4-bit formats' steps of 32 and, as _bytes, for int8's steps of 16; so
# are norm's _codes builds (an RMSNorm writing those codes: vk_fuse.c) and
# the decode attention's merge's (attn_combine, attn_decode's and attn_decode_sg's folds:
# the Attention writing o_proj's codes).
# The _v4 builds of gather_rows, copy_view, concat and split move 16 bytes
# an invocation (uvec4s) where rows and pieces allow.
# The _f64 ones compute in double for f64 tensors (need shaderFloat64).
set(VKL_SHADER_VARIANTS
  "quant_matvec_e0m4:sg:VKL_SUBGROUP=1"
  "quant_matvec_int4:sg:VKL_SUBGROUP=1"
  "quant_matvec_int8:sg:VKL_SUBGROUP=1"
  "quant_matvec_e0m4:f16:VKL_F16=1"
  "quant_matvec_int4:f16:VKL_F16=1"
  "quant_matvec_int8:f16:VKL_F16=1"
  "quant_matvec_e0m4:sg_f16:VKL_SUBGROUP=1,VKL_F16=1"
  "quant_matvec_int4:sg_f16:VKL_SUBGROUP=1,VKL_F16=1"
  "quant_matvec_int8:sg_f16:VKL_SUBGROUP=1,VKL_F16=1"
  "quant_act_int8:bytes:VKL_QA_BYTES=1"
  "quant_gemm_e0m4:f16:VKL_F16=1"
  "quant_gemm_int4:f16:VKL_F16=1"
  "quant_gemm_int8:f16:VKL_F16=1"
  "quant_gemm_e0m4:cm:VKL_F16=1,VKL_COOPMAT=1"
  "quant_gemm_int4:cm:VKL_F16=1,VKL_COOPMAT=1"
  "quant_gemm_int8:cm:VKL_F16=1,VKL_COOPMAT=1"
  "quant_gemm_e0m4:cmemu:VKL_F16=1,VKL_COOPMAT=1,VKL_COOPMAT_EMULATED=1"
  "quant_gemm_int4:cmemu:VKL_F16=1,VKL_COOPMAT=1,VKL_COOPMAT_EMULATED=1"
  "quant_gemm_int8:cmemu:VKL_F16=1,VKL_COOPMAT=1,VKL_COOPMAT_EMULATED=1"
  "peak_fma:f16:VKL_F16=1"
  "gather_rows:v4:VKL_VEC4=1"
  "copy_view:v4:VKL_VEC4=1"
  "concat:v4:VKL_VEC4=1"
  "split:v4:VKL_VEC4=1"
  "norm:sg:VKL_SUBGROUP=1"
  "norm:codes:VKL_QA_CODES=1"
  "norm:sg_codes:VKL_SUBGROUP=1,VKL_QA_CODES=1"
  "norm:codes_bytes:VKL_QA_CODES=1,VKL_QA_BYTES=1"
  "norm:sg_codes_bytes:VKL_SUBGROUP=1,VKL_QA_CODES=1,VKL_QA_BYTES=1"
  "norm:f64:VKL_F64=1"
  "softmax_lines:f64:VKL_F64=1"
  "matvec:sg:VKL_SUBGROUP=1"
  "matvec:f64:VKL_F64=1"
  "matmul:f64:VKL_F64=1"
  "conv:f64:VKL_F64=1"
  "reduce:sg:VKL_SUBGROUP=1"
  "reduce:f64:VKL_F64=1"
  "cumsum:f64:VKL_F64=1"
  "attn_prefill:f64:VKL_F64=1"
  "attn_prefill_cm:emu:VKL_COOPMAT_EMULATED=1"
  "attn_decode:f64:VKL_F64=1"
  "attn_combine:f64:VKL_F64=1"
  "attn_combine:codes:VKL_QA_CODES=1"
  "attn_combine:codes_bytes:VKL_QA_CODES=1,VKL_QA_BYTES=1"
  "attn_decode:codes:VKL_QA_CODES=1"
  "attn_decode:codes_bytes:VKL_QA_CODES=1,VKL_QA_BYTES=1"
  "attn_decode_sg:codes:VKL_QA_CODES=1"
  "attn_decode_sg:codes_bytes:VKL_QA_CODES=1,VKL_QA_BYTES=1"
  "rope:f64:VKL_F64=1"
  "ew_binary:f64:VKL_F64=1"
  "ew_unary:f64:VKL_F64=1"
  "range:f64:VKL_F64=1")
# The fused matvecs (backends/vulkan/vk_fuse.c): _add folds a residual Add
# into the store, _glu computes gate and up rows and stores silu(gate) * up,
# _qkv runs up to three matvecs of one A (the Q, K and V projections); each
# in the builds of the plain matvec.
foreach(fmt e0m4 int4 int8)
  foreach(fuse "add:VKL_FUSE_ADD=1" "glu:VKL_FUSE_GLU=1" "qkv:VKL_FUSE_QKV=1")
    string(REPLACE ":" ";" fuse "${fuse}")
    list(GET fuse 0 fsuffix)
    list(GET fuse 1 fdef)
    list(APPEND VKL_SHADER_VARIANTS
      "quant_matvec_${fmt}:${fsuffix}:${fdef}"
      "quant_matvec_${fmt}:sg_${fsuffix}:VKL_SUBGROUP=1,${fdef}"
      "quant_matvec_${fmt}:f16_${fsuffix}:VKL_F16=1,${fdef}"
      "quant_matvec_${fmt}:sg_f16_${fsuffix}:VKL_SUBGROUP=1,VKL_F16=1,${fdef}"
      "quant_matvec_${fmt}:dot_${fsuffix}:VKL_DOT=1,${fdef}"
      "quant_matvec_${fmt}:sg_dot_${fsuffix}:VKL_SUBGROUP=1,VKL_DOT=1,${fdef}")
  endforeach()
  # int8 activations through integer dot products (VKL_VK_MATVEC=dot;
  # vk_device.c's choose_matvec says when; the body is quant_matvec_dot.glsl,
  # reading what quant_act_int8 made): the plain and fused builds.
  # _glu_codes: the _glu that also writes its output's codes for the down
  # projection's dot matvec (vk_fuse.c's GLU codes), so no quant_act_int8
  # runs between them.
  list(APPEND VKL_SHADER_VARIANTS
    "quant_matvec_${fmt}:dot:VKL_DOT=1"
    "quant_matvec_${fmt}:sg_dot:VKL_SUBGROUP=1,VKL_DOT=1"
    "quant_matvec_${fmt}:dot_glu_codes:VKL_DOT=1,VKL_FUSE_GLU=1,VKL_GLU_CODES=1"
    "quant_matvec_${fmt}:sg_dot_glu_codes:VKL_SUBGROUP=1,VKL_DOT=1,VKL_FUSE_GLU=1,VKL_GLU_CODES=1")
endforeach()

# Vulkan 1.1 / SPIR-V 1.3: the oldest target with subgroup operations.
set(VKL_SHADER_TARGET_ENV vulkan1.1)

# One shader (variant) to one .spv; appends the .spv to ${spv_list}.
function(_vkl_compile_shader src name defines spv_list)
  set(spv ${CMAKE_BINARY_DIR}/shaders/${name}.spv)
  set(args "")
  foreach(d ${defines})
    list(APPEND args -D${d})
  endforeach()
  set(validate "")
  if(VKL_SPIRV_VAL)
    set(validate COMMAND ${VKL_SPIRV_VAL} --target-env ${VKL_SHADER_TARGET_ENV} ${spv})
  endif()
  add_custom_command(
    OUTPUT ${spv}
    COMMAND ${VKL_GLSLC} --target-env=${VKL_SHADER_TARGET_ENV} -O -Werror
            -I ${PROJECT_SOURCE_DIR}/shaders/vulkan ${args} -MD -MF ${spv}.d -o ${spv} ${src}
    ${validate}
    DEPENDS ${src}
    DEPFILE ${spv}.d
    COMMENT "glslc ${name}"
    VERBATIM)
  set(${spv_list} ${${spv_list}} ${spv} PARENT_SCOPE)
endfunction()

# vkl_vulkan_shaders(<out_var>): compile every shader and variant; set
# <out_var> to the generated .c holding vkl_vk_spirv_table (declared in
# backends/vulkan/vk_shaders.h).
# VKL_SPIRV_TABLE_FROM names another build tree of the same checkout whose
# shaders/vk_spirv_table.c this one compiles instead of running glslc and
# spirv-val again: scripts/test's later builds take the first one's (the
# SPIR-V does not depend on the C compiler, its flags or the build type;
# glslc was a third of each build's CPU time).
set(VKL_SPIRV_TABLE_FROM "" CACHE PATH "A build tree whose compiled shaders this build reuses (scripts/test)")
function(vkl_vulkan_shaders out_var)
  if(VKL_SPIRV_TABLE_FROM)
    set(table ${VKL_SPIRV_TABLE_FROM}/shaders/vk_spirv_table.c)
    if(NOT EXISTS ${table})
      message(FATAL_ERROR "VKL_SPIRV_TABLE_FROM: ${table} does not exist (build that tree first)")
    endif()
    set(${out_var} ${table} PARENT_SCOPE)
    return()
  endif()
  file(GLOB comps CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/shaders/vulkan/*.comp)
  file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/shaders)
  set(spvs "")
  foreach(src ${comps})
    get_filename_component(name ${src} NAME_WE)
    _vkl_compile_shader(${src} ${name} "" spvs)
  endforeach()
  foreach(v ${VKL_SHADER_VARIANTS})
    string(REPLACE ":" ";" parts "${v}")
    list(GET parts 0 base)
    list(GET parts 1 suffix)
    list(GET parts 2 defs)
    string(REPLACE "," ";" defs "${defs}")
    set(src ${PROJECT_SOURCE_DIR}/shaders/vulkan/${base}.comp)
    if(NOT EXISTS ${src})
      message(FATAL_ERROR "shader variant '${v}': ${src} does not exist")
    endif()
    _vkl_compile_shader(${src} ${base}_${suffix} "${defs}" spvs)
  endforeach()
  set(gen ${CMAKE_BINARY_DIR}/shaders/vk_spirv_table.c)
  add_custom_command(
    OUTPUT ${gen}
    COMMAND ${CMAKE_COMMAND} "-DOUT=${gen}" "-DFILES=${spvs}" -P ${PROJECT_SOURCE_DIR}/cmake/embed_spirv.cmake
    DEPENDS ${spvs} ${PROJECT_SOURCE_DIR}/cmake/embed_spirv.cmake
    COMMENT "embedding ${CMAKE_BINARY_DIR}/shaders/*.spv"
    VERBATIM)
  set(${out_var} ${gen} PARENT_SCOPE)
endfunction()
