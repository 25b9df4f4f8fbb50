// The quantized matvecs' bindings 1-6, shared by the float body
// (quant_matvec.glsl) and the integer-dot one (quant_matvec_dot.glsl), so
// that vk_quant_matmul.c binds W, its parameters, Y, the bias and the
// fused operands the same way for both; binding 0 (the activations: f32 A,
// or its int8 codes) is each body's own.
layout(set = 0, binding = 1, std430) readonly buffer BufQ { uvec4 qs[]; };     // [N, KQ / QV_CHUNK]
layout(set = 0, binding = 2, std430) readonly buffer BufP { uint params[]; };  // [N, KQ / group]
layout(set = 0, binding = 3, std430) writeonly buffer BufY { float y[]; };     // [M, y_stride]
layout(set = 0, binding = 4, std430) readonly buffer BufB { float bias[]; };   // [N] if has_bias
#if defined(VKL_FUSE_ADD)
layout(set = 0, binding = 5, std430) readonly buffer BufR { float res[]; };    // [M, N]
#elif defined(VKL_FUSE_GLU)
#include "ew_math.glsl"
layout(set = 0, binding = 5, std430) readonly buffer BufQU { uvec4 qs_up[]; };
layout(set = 0, binding = 6, std430) readonly buffer BufPU { uint params_up[]; };
#endif
