#version 450
#extension GL_GOOGLE_include_directive : require
// E0M4 GEMM (prefill): each word of 8 codes is decoded once per workgroup
// and K step into shared memory as w1 - b, the group's scale d applied to
// the group's sums in f32 (quant_gemm.glsl; the cooperative-matrix build:
// quant_gemm_coopmat.glsl). w1 - b is exact in f32 (at most 5 significant
// bits) and in fp16 for 2^(n-6) <= |b| < 2^(n+7) or b = 0 (rounded once
// otherwise: quant_matvec_e0m4.comp's centered form, checked there).
// fp16 runs of 4 products: |w1 - b| < 2^n <= 4 for a group spanning 0, so
// finite while any 4 activations sum below 65504 / 4 = 16376 in magnitude.
#define QG_CODES 8u
#include "quant_common.glsl"

#ifdef VKL_COOPMAT
// Word u as 4 packed fp16 pairs of d (w1 - b), in fp16 arithmetic: w1 - b
// is exact (b shares the codes' exponent: 2^n (q - z) / 16), and the
// product with d, itself an fp16, is rounded once -- the same value as the
// exact f32 product rounded to fp16, at one f16vec2 subtraction and one
// multiply per pair.
void qg_decode_h2(uint u, uint p, out uint h[4]) {
    const uint e = (p >> 16) & 0xFC00u;
    const uint e2 = e | (e << 16);
    const f16vec2 b = f16vec2(unpackFloat2x16(p >> 16).x);
    const f16vec2 d = f16vec2(unpackFloat2x16(p).x);
    h[0] = packFloat2x16((VKL_E0M4_H2_0(u, e2) - b) * d);
    h[1] = packFloat2x16((VKL_E0M4_H2_1(u, e2) - b) * d);
    h[2] = packFloat2x16((VKL_E0M4_H2_2(u, e2) - b) * d);
    h[3] = packFloat2x16((VKL_E0M4_H2_3(u, e2) - b) * d);
}
#elif defined(VKL_F16)
#define QG_T float16_t
void qg_decode(uint u, uint p, out float16_t v[8]) {
    const uint e = (p >> 16) & 0xFC00u;  // EXP: b's sign and exponent, every code's
    const uint e2 = e | (e << 16);
    const f16vec2 b = f16vec2(unpackFloat2x16(p >> 16).x);
    const f16vec2 w0 = VKL_E0M4_H2_0(u, e2) - b, w1 = VKL_E0M4_H2_1(u, e2) - b;
    const f16vec2 w2 = VKL_E0M4_H2_2(u, e2) - b, w3 = VKL_E0M4_H2_3(u, e2) - b;
    v[0] = w0.x; v[1] = w0.y; v[2] = w1.x; v[3] = w1.y;
    v[4] = w2.x; v[5] = w2.y; v[6] = w3.x; v[7] = w3.y;
}
#else
#define QG_T float
void qg_decode(uint u, uint p, out float v[8]) {
    const uint e = (p >> 16) & 0xFC00u;
    const uint e2 = e | (e << 16);
    const float b = unpackHalf2x16(p >> 16).x;
    const vec2 w0 = VKL_E0M4_PAIR0(u, e2) - b, w1 = VKL_E0M4_PAIR1(u, e2) - b;
    const vec2 w2 = VKL_E0M4_PAIR2(u, e2) - b, w3 = VKL_E0M4_PAIR3(u, e2) - b;
    v[0] = w0.x; v[1] = w0.y; v[2] = w1.x; v[3] = w1.y;
    v[4] = w2.x; v[5] = w2.y; v[6] = w3.x; v[7] = w3.y;
}
#endif

#ifdef VKL_COOPMAT
#include "quant_gemm_coopmat.glsl"
#else
float qg_scale(uint p) { return vkl_half_exact(p & 0xFFFFu); }

#include "quant_gemm.glsl"
#endif
