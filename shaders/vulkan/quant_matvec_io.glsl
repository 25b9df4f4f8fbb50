// The quantized matvecs' bindings 1-12, shared by the float body
// (quant_matvec.glsl) and the integer-dot one (quant_matvec_dot.glsl), so
// that vk_quant_matmul.c binds W, its parameters, Y, the bias and the
// fused operands (the _qkv's sets 1 and 2 at 5-12) the same way for both;
// binding 0 (the activations: f32 A, or its int8 codes) is each body's own.
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
#elif defined(VKL_FUSE_QKV)
// sets 1 and 2 (quant_matvec_qkv.glsl), each bound as set 0 at 1-4
layout(set = 0, binding = 5, std430) readonly buffer BufQK { uvec4 qs_k[]; };
layout(set = 0, binding = 6, std430) readonly buffer BufPK { uint params_k[]; };
layout(set = 0, binding = 7, std430) writeonly buffer BufYK { float y_k[]; };
layout(set = 0, binding = 8, std430) readonly buffer BufBK { float bias_k[]; };
layout(set = 0, binding = 9, std430) readonly buffer BufQV { uvec4 qs_v[]; };
layout(set = 0, binding = 10, std430) readonly buffer BufPV { uint params_v[]; };
layout(set = 0, binding = 11, std430) writeonly buffer BufYV { float y_v[]; };
layout(set = 0, binding = 12, std430) readonly buffer BufBV { float bias_v[]; };
#endif
#ifdef VKL_FUSE_QKV
// appended to each body's push constants: sets 1 and 2's rows, the first
// workgroup of each, where their Y rows start, and whether they add a bias
#define QKV_PUSH uint N1, N2, qkv_b1, qkv_b2, y_off1, y_off2, has_bias1, has_bias2;
#else
#define QKV_PUSH
#endif
