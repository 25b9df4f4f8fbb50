#version 450
#extension GL_GOOGLE_include_directive : require
// int8 (symmetric, f32 scale; the lm_head per output channel) matvec: per
// uvec4 of W (16 codes of one group, so group % 16 == 0)
//   sum_k a_k * q_k * d  =  d * sum_k q_k * a_k.
// Same loop, loads and reduction as the 4-bit formats (quant_matvec.glsl,
// quant_matvec_dot.glsl).
#define QV_CHUNK 16u
#define VKL_QA_BYTES 1  // the codes this build writes (_glu_codes): element order (quant_act.glsl)
#include "quant_common.glsl"

#if defined(VKL_DOT)
// int8 activations (quant_matvec_dot.glsl, "Integer dot products"): word
// t's bytes are elements 4t..4t+3 in order, signed, against the
// activations' word t: OpSDotKHR, exact in int32 (16 * 128 * 127).
int qv_dot_raw(uvec4 w, uint ia[4]) {
    int s = 0;
    for (uint t = 0u; t < 4u; t++) s = vkl_sdot(ia[t], w[t], VKL_DOT_4X8) + s;
    return s;
}

int qv_dot_zero(uint p) { return 0; }  // symmetric codes

float qv_dot_scale(uint p) { return uintBitsToFloat(p); }
#elif !defined(VKL_F16)
float qv_chunk(uvec4 w, vec4 x[4], float sum_x, uint p) {
    float s = 0.0;
    for (uint t = 0u; t < 4u; t++) {
        const int u = int(w[t]);
        const vec4 q = vec4(bitfieldExtract(u, 0, 8), bitfieldExtract(u, 8, 8), bitfieldExtract(u, 16, 8),
                            bitfieldExtract(u, 24, 8));
        s += dot(q, x[t]);
    }
    return uintBitsToFloat(p) * s;
}
#else
// fp16 math: the codes converted to f16 (exact: -128..127), products and
// sums in two f16vec4 accumulators (8 lanes of 2 fused multiply-adds), the
// lanes summed in f32. Overflow: |q| <= 128, so a lane's partial sums are at
// most 128 * (sum of its 2 |a|): finite while any 2 activations of a lane
// sum to less than 65504 / 128 = 511 in magnitude -- the tightest of the
// three formats (an activation of ~500 against a code of 127 is the limit).
float qv_chunk(uvec4 w, f16vec4 x[4], float sum_x, uint p) {
    f16vec4 s0 = f16vec4(0.0hf), s1 = f16vec4(0.0hf);
    for (uint t = 0u; t < 4u; t += 2u) {
        const int u0 = int(w[t]), u1 = int(w[t + 1u]);
        const f16vec4 q0 = f16vec4(ivec4(bitfieldExtract(u0, 0, 8), bitfieldExtract(u0, 8, 8),
                                         bitfieldExtract(u0, 16, 8), bitfieldExtract(u0, 24, 8)));
        const f16vec4 q1 = f16vec4(ivec4(bitfieldExtract(u1, 0, 8), bitfieldExtract(u1, 8, 8),
                                         bitfieldExtract(u1, 16, 8), bitfieldExtract(u1, 24, 8)));
        s0 = fma(q0, x[t], s0);
        s1 = fma(q1, x[t + 1u], s1);
    }
    const vec4 s = vec4(s0) + vec4(s1);
    return uintBitsToFloat(p) * ((s.x + s.y) + (s.z + s.w));
}
#endif

#ifdef VKL_DOT
#include "quant_matvec_dot.glsl"
#else
#include "quant_matvec.glsl"
#endif
