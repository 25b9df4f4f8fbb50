#version 450
#extension GL_GOOGLE_include_directive : require
// int4 (asymmetric) matvec, the baseline E0M4 is measured against: per
// uvec4 of W (32 codes, one group)
//   sum_k a_k * (q_k - z) * d  =  d * (sum_k q_k * a_k  -  z * sum_k a_k)
// with each code shifted, masked and converted to float. Same loop, loads
// and reduction as E0M4 (quant_matvec.glsl); only the decode differs.
#define QV_CHUNK 32u
#include "quant_common.glsl"

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

#include "quant_matvec.glsl"
