#version 450
#extension GL_GOOGLE_include_directive : require
// int8 GEMM (prefill; symmetric, f32 scale): codes decoded once per
// workgroup and K step into shared memory (exact in f32 and fp16:
// -128..127), the scale d applied to each group's sums in f32
// (quant_gemm.glsl, or quant_gemm_coopmat.glsl). fp16 runs of 4 products:
// finite while any 4 activations sum below 65504 / 128 = 511.
#define QG_CODES 4u
#include "quant_common.glsl"

#ifdef VKL_COOPMAT
// Word u as 2 packed fp16 pairs of d c: the scale is an f32, so the
// product is made in f32 (exact for an 8-bit code) and rounded once.
void qg_decode_h2(uint u, uint p, out uint h[2]) {
    const int w = int(u);
    const float d = uintBitsToFloat(p);
    for (int s = 0; s < 2; s++)
        h[s] = packFloat2x16(f16vec2(d * vec2(bitfieldExtract(w, 16 * s, 8), bitfieldExtract(w, 16 * s + 8, 8))));
}
#else
#ifdef VKL_F16
#define QG_T float16_t
#else
#define QG_T float
#endif

void qg_decode(uint u, uint p, out QG_T v[4]) {
    const int w = int(u);
    for (int c = 0; c < 4; c++) v[c] = QG_T(bitfieldExtract(w, 8 * c, 8));
}
#endif

#ifdef VKL_COOPMAT
#include "quant_gemm_coopmat.glsl"
#else
float qg_scale(uint p) { return uintBitsToFloat(p); }

#include "quant_gemm.glsl"
#endif
