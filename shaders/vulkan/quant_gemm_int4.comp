#version 450
#extension GL_GOOGLE_include_directive : require
// int4 GEMM (prefill), the baseline E0M4 is measured against: codes decoded
// once per workgroup and K step into shared memory as q - z (exact in f32
// and fp16: integers -15..15), the scale d applied to each group's sums in
// f32 (quant_gemm.glsl, or quant_gemm_coopmat.glsl). fp16 runs of 4
// products: finite while any 4 activations sum below 65504 / 15 = 4366.
#define QG_CODES 8u
#include "quant_common.glsl"

#ifdef VKL_COOPMAT
// Pair s of word u as f32 q - z (the cooperative-matrix body's form).
void qg_decode_pairs(uint u, uint p, out vec2 v[4]) {
    const float z = unpackHalf2x16(p >> 16).x;  // an integer 0..15
    for (uint s = 0u; s < 4u; s++) v[s] = VKL_INT4_PAIR(u, s) - z;
}
#else
#ifdef VKL_F16
#define QG_T float16_t
#else
#define QG_T float
#endif

void qg_decode(uint u, uint p, out QG_T v[8]) {
    const QG_T z = QG_T(unpackHalf2x16(p >> 16).x);  // an integer 0..15
    for (uint s = 0u; s < 4u; s++) {
        const uvec2 q = VKL_INT4_CODES(u, s);
        v[2u * s] = QG_T(q.x) - z;
        v[2u * s + 1u] = QG_T(q.y) - z;
    }
}
#endif

float qg_scale(uint p) { return vkl_half_exact(p & 0xFFFFu); }

#ifdef VKL_COOPMAT
#include "quant_gemm_coopmat.glsl"
#else
#include "quant_gemm.glsl"
#endif
