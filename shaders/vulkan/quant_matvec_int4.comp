#version 450
#extension GL_GOOGLE_include_directive : require
// int4 (asymmetric) matvec, the baseline E0M4 is measured against: per
// uvec4 of W (32 codes, one group)
//   sum_k a_k * (q_k - z) * d  =  d * (sum_k q_k * a_k  -  z * sum_k a_k)
// with each code shifted, masked and converted to float. Same loop, loads
// and reduction as E0M4 (quant_matvec.glsl, quant_matvec_dot.glsl); only
// the decode differs.
#define QV_CHUNK 32u
#include "quant_common.glsl"

#if defined(VKL_DOT)
// int8 activations (quant_matvec_dot.glsl, "Integer dot products"):
//   sum_k ia_k (q_k - z) = sum_k ia_k q_k - z sum_k ia_k, exact in int32.
int qv_dot_raw(uvec4 w, uint ia[8]) { return vkl_dot_nibbles(w, ia); }

int qv_dot_zero(uint p) { return int(unpackHalf2x16(p >> 16).x); }  // z: an integer 0..15

float qv_dot_scale(uint p) { return vkl_half_exact(p & 0xFFFFu); }
#elif !defined(VKL_F16)
float qv_chunk(uvec4 w, vec4 x[8], float sum_x, uint p) {
    float s0 = 0.0, s1 = 0.0;
    for (uint t = 0u; t < 4u; t++) {
        const uint u = w[t];
        s0 += dot(VKL_INT4_PAIR(u, 0u), x[2u * t].xy);
        s1 += dot(VKL_INT4_PAIR(u, 1u), x[2u * t].zw);
        s0 += dot(VKL_INT4_PAIR(u, 2u), x[2u * t + 1u].xy);
        s1 += dot(VKL_INT4_PAIR(u, 3u), x[2u * t + 1u].zw);
    }
    const float z = unpackHalf2x16(p >> 16).x;  // an integer 0..15
    return vkl_half_exact(p & 0xFFFFu) * ((s0 + s1) - z * sum_x);
}
#else
// fp16 math: the codes converted to f16 (exact: 0..15) and centered on z in
// fp16 (q - z, exact), then the same f16vec4 lanes and f32 scale as E0M4
// (quant_matvec_e0m4.comp), and the same alternative VKL_VK_F16_CENTER=0
// (lanes of q a, then d * (sum q a - z * sum a) in f32).
// Overflow: |q - z| <= 15 (q <= 15 in the fold), so a lane's partial sums
// are at most 15 * (sum of its 4 |a|): finite while any 4 activations of a
// lane sum below 65504 / 15 = 4366 in magnitude (and each |a| < 65504).
layout(constant_id = 5) const bool CENTER = true;

float qv_chunk(uvec4 w, f16vec4 x[8], float sum_x, uint p) {
    const f16vec4 zc = CENTER ? f16vec4(unpackFloat2x16(p >> 16).x) : f16vec4(0.0hf);
    f16vec4 s0 = f16vec4(0.0hf), s1 = f16vec4(0.0hf);
    for (uint t = 0u; t < 4u; t++) {
        const uint u = w[t];
        f16vec4 q0 = f16vec4(VKL_INT4_H2(u, 0u), VKL_INT4_H2(u, 1u));
        f16vec4 q1 = f16vec4(VKL_INT4_H2(u, 2u), VKL_INT4_H2(u, 3u));
        if (CENTER) {
            q0 -= zc;
            q1 -= zc;
        }
        s0 = fma(q0, x[2u * t], s0);
        s1 = fma(q1, x[2u * t + 1u], s1);
    }
    const vec4 s = vec4(s0) + vec4(s1);
    const float z = CENTER ? 0.0 : unpackHalf2x16(p >> 16).x;  // an integer 0..15
    return vkl_half_exact(p & 0xFFFFu) * (((s.x + s.y) + (s.z + s.w)) - z * sum_x);
}
#endif

#ifdef VKL_DOT
#include "quant_matvec_dot.glsl"
#else
#include "quant_matvec.glsl"
#endif
