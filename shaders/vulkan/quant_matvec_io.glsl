// The quantized matvecs' bindings 1-12, shared by the float body
// (quant_matvec.glsl) and the integer-dot one (quant_matvec_dot.glsl), so
// that vk_quant_matmul.c binds W, its parameters, Y, the bias and the
// fused operands (the _qkv's sets 1 and 2 at 5-12) the same way for both;
// binding 0 (the activations: f32 A, or its int8 codes) is each body's own.
layout(set = 0, binding = 1, std430) readonly buffer BufQ { uvec4 qs[]; };     // [N, KQ / QV_CHUNK]
layout(set = 0, binding = 2, std430) readonly buffer BufP { uint params[]; };  // [N, KQ / group]
#ifdef VKL_GLU_CODES
// coherent: the workgroup that completes a step of the down_proj's codes
// reads the other workgroups' stores back (quant_matvec_dot.glsl)
layout(set = 0, binding = 3, std430) coherent buffer BufY { float y[]; };      // [M, y_stride]
#else
layout(set = 0, binding = 3, std430) writeonly buffer BufY { float y[]; };     // [M, y_stride]
#endif
layout(set = 0, binding = 4, std430) readonly buffer BufB { float bias[]; };   // [N] if has_bias
#if defined(VKL_FUSE_ADD)
layout(set = 0, binding = 5, std430) readonly buffer BufR { float res[]; };    // [M, N]
#elif defined(VKL_FUSE_GLU)
#include "ew_math.glsl"
layout(set = 0, binding = 5, std430) readonly buffer BufQU { uvec4 qs_up[]; };
layout(set = 0, binding = 6, std430) readonly buffer BufPU { uint params_up[]; };
#ifdef VKL_GLU_CODES
// the output's int8 codes (quant_act.glsl) and the steps' arrival counters
layout(set = 0, binding = 7, std430) writeonly buffer BufQO { uint qo[]; };
layout(set = 0, binding = 8, std430) coherent buffer BufCnt { uint cnt[]; };
#endif
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
// Appended to each body's push constants, the fused builds' own: the
// _qkv's sets 1 and 2's rows, the first workgroup of each, where their Y
// rows start, and whether they add a bias; the _glu_codes' uvec4s per row
// of the output's codes (bound whole at binding 7).
#ifdef VKL_FUSE_QKV
#define QMV_FUSE_PUSH uint N1, N2, qkv_b1, qkv_b2, y_off1, y_off2, has_bias1, has_bias2;
#elif defined(VKL_GLU_CODES)
#define QMV_FUSE_PUSH uint qo_stride;
#else
#define QMV_FUSE_PUSH
#endif
