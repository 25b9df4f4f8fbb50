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
// Word u as 4 packed fp16 pairs of d (q - z), in fp16 arithmetic: each
// pair's codes ORed into the mantissas of 1024.0 (0x6400: 1024 + q, no
// conversion), 1024 + z subtracted (exact: integers below 2048), times d
// (an fp16) rounded once -- the exact f32 product rounded to fp16.
void qg_decode_h2(uint u, uint p, out uint h[4]) {
    const f16vec2 z = f16vec2(1024.0hf + unpackFloat2x16(p >> 16).x);  // z an integer 0..15
    const f16vec2 d = f16vec2(unpackFloat2x16(p).x);
    for (uint s = 0u; s < 4u; s++)
        h[s] = packFloat2x16((unpackFloat2x16(((u >> (4u * s)) & 0x000F000Fu) | 0x64006400u) - z) * d);
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

#ifdef VKL_COOPMAT
#include "quant_gemm_coopmat.glsl"
#else
float qg_scale(uint p) { return vkl_half_exact(p & 0xFFFFu); }

#include "quant_gemm.glsl"
#endif
