#version 450
#extension GL_GOOGLE_include_directive : require
// E0M4 matvec (Transformer-Lite §2.3): per uvec4 of W (32 codes, one group)
//   sum_k a_k * (w1_k - b) * d  =  d * (sum_k w1_k * a_k  -  b * sum_k a_k)
// so the dequantization costs one shift, one AND and one OR per two codes
// and one multiply-add per uvec4 (the group fold, per 32 codes here).
// The loop, loads and reduction: quant_matvec.glsl.
#define QV_CHUNK 32u
#include "quant_common.glsl"

// A measured alternative, off by default (VKL_VK_E0M4_F32=1): build each
// code directly as the f32 with the same value, uintBitsToFloat(EXP32 |
// q << 19) -- the E0M4 idea in an f32 container: one shift and one AND/OR
// per code and no fp16 -> f32 conversion. Same values, same sums.
layout(constant_id = 4) const bool DECODE_F32 = false;

float e0m4_f32(uint bits, uint e32) { return uintBitsToFloat((bits & 0x00780000u) | e32); }

float qv_chunk(uvec4 w, vec4 x[8], float sum_x, uint p) {
    const float b = unpackHalf2x16(p >> 16).x;  // the bias code: a normal fp16 value
    float s0 = 0.0, s1 = 0.0;
    if (DECODE_F32) {
        const uint e = floatBitsToUint(b) & 0xFF800000u;  // b's sign and exponent as f32
        for (uint t = 0u; t < 4u; t++) {
            const uint u = w[t];
            const vec4 lo = x[2u * t], hi = x[2u * t + 1u];
            s0 += lo.x * e0m4_f32(u << 19, e) + lo.y * e0m4_f32(u << 3, e);
            s1 += lo.z * e0m4_f32(u << 15, e) + lo.w * e0m4_f32(u >> 1, e);
            s0 += hi.x * e0m4_f32(u << 11, e) + hi.y * e0m4_f32(u >> 5, e);
            s1 += hi.z * e0m4_f32(u << 7, e) + hi.w * e0m4_f32(u >> 9, e);
        }
    } else {
        const uint e = (p >> 16) & 0xFC00u;  // EXP: b's sign and exponent, every code's
        const uint e2 = e | (e << 16);
        for (uint t = 0u; t < 4u; t++) {
            const uint u = w[t];
            s0 += dot(VKL_E0M4_PAIR0(u, e2), x[2u * t].xy);
            s1 += dot(VKL_E0M4_PAIR1(u, e2), x[2u * t].zw);
            s0 += dot(VKL_E0M4_PAIR2(u, e2), x[2u * t + 1u].xy);
            s1 += dot(VKL_E0M4_PAIR3(u, e2), x[2u * t + 1u].zw);
        }
    }
    return vkl_half_exact(p & 0xFFFFu) * ((s0 + s1) - b * sum_x);
}

#include "quant_matvec.glsl"
