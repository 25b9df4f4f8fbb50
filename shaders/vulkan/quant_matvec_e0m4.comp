#version 450
#extension GL_GOOGLE_include_directive : require
// E0M4 matvec (Transformer-Lite §2.3): per uvec4 of W (32 codes, one group)
//   sum_k a_k * (w1_k - b) * d  =  d * (sum_k w1_k * a_k  -  b * sum_k a_k)
// so the dequantization costs one shift, one AND and one OR per two codes
// and one multiply-add per uvec4 (the group fold, per 32 codes here).
// The loop, loads and reduction: quant_matvec.glsl (quant_matvec_dot.glsl
// for the integer-dot builds).
#define QV_CHUNK 32u
#include "quant_common.glsl"

#if defined(VKL_DOT)
// int8 activations (quant_matvec_dot.glsl, "Integer dot products"): E0M4 is an
// int4 asymmetric format in disguise. b = 2^n (1 + z/16), z its top four
// fraction bits (the quantizer zeroes the rest, and loading rejects a b
// that is not such a code of [2, 4) or [4, 8): engine/quant/e0m4.c), and
// w1 = 2^n (1 + q/16), so w0 = (w1 - b) d = d 2^(n-4) (q - z) exactly:
//   sum_k ia_k w0_k = d 2^(n-4) (sum_k ia_k q_k - z sum_k ia_k),
// the integer parts qv_dot_raw and qv_dot_zero, the scale d 2^(n-4)
// qv_dot_scale; integers up to 32 * 127 * 15 each side, exact in int32.
int qv_dot_raw(uvec4 w, uint ia[8]) { return vkl_dot_nibbles(w, ia); }

int qv_dot_zero(uint p) { return int(bitfieldExtract(p, 22, 4)); }

float qv_dot_scale(uint p) {
    return vkl_half_exact(p & 0xFFFFu) * (unpackHalf2x16((p >> 16) & 0xFC00u).x * 0.0625);  // d 2^n / 16
}
#elif !defined(VKL_F16)
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
#else
// fp16 math (the paper's setting): the code pairs are bitcast to f16vec2
// (shift + AND + OR, no conversion), centered on b in fp16 (w1 - b: one
// f16vec2 subtraction, exact for 2^(n-6) <= |b| < 2^(n+7) or b = 0 --
// checked over every such fp16 b and code -- and rounded once otherwise),
// multiplied and summed in two f16vec4 accumulators (8 lanes of 4 fused
// multiply-adds each), the lanes summed in f32, times d in f32:
//   d * sum (w1 - b) a.
// The alternative, VKL_VK_F16_CENTER=0, is the fold of the f32 path in
// fp16: lanes of w1 a, then d * (sum w1 a - b * sum a) in f32. It saves the
// subtraction but its lanes carry b a (b ~ 3 for n = 1, far from the
// [-1, 1] the weight's own part spans), so their rounding is relative to
// |b a| rather than to what survives the fold: 3-7x the error (E0M4 the
// most; measured in docs/vulkan.md), at the same speed on the H100.
//
// Overflow (fp16 max 65504): a lane's partial sums are at most
// max|w1 - b| * (sum of the lane's 4 |a|). A group whose weights span 0
// (LLM weight groups do) has b inside the codes' range [2^n, 2^(n+1)], so
// |w1 - b| < 2^n <= 4: finite while any 4 activations of a lane sum below
// 65504 / 4 = 16376 in magnitude (each |a| < 65504 for the staging
// conversion). A group far from 0 relative to its range has |b| up to
// that ratio times 2^n, and the headroom shrinks by it; the fold's lanes
// are bounded by 2^(n+1) = 8 instead, whatever b. LLM activations entering
// a matmul (normed hidden states, attention outputs, gated FFN products)
// stay far below these; the test uses N(0, 1) with spikes of 50.
layout(constant_id = 5) const bool CENTER = true;

float qv_chunk(uvec4 w, f16vec4 x[8], float sum_x, uint p) {
    const uint e = (p >> 16) & 0xFC00u;  // EXP: b's sign and exponent, every code's
    const uint e2 = e | (e << 16);
    const f16vec4 bc = CENTER ? f16vec4(unpackFloat2x16(p >> 16).x) : f16vec4(0.0hf);
    f16vec4 s0 = f16vec4(0.0hf), s1 = f16vec4(0.0hf);
    for (uint t = 0u; t < 4u; t++) {
        const uint u = w[t];
        f16vec4 w0 = f16vec4(VKL_E0M4_H2_0(u, e2), VKL_E0M4_H2_1(u, e2));
        f16vec4 w1 = f16vec4(VKL_E0M4_H2_2(u, e2), VKL_E0M4_H2_3(u, e2));
        if (CENTER) {
            w0 -= bc;
            w1 -= bc;
        }
        s0 = fma(w0, x[2u * t], s0);
        s1 = fma(w1, x[2u * t + 1u], s1);
    }
    const vec4 s = vec4(s0) + vec4(s1);
    const float b = CENTER ? 0.0 : unpackHalf2x16(p >> 16).x;
    return vkl_half_exact(p & 0xFFFFu) * (((s.x + s.y) + (s.z + s.w)) - b * sum_x);
}
#endif

#ifdef VKL_DOT
#include "quant_matvec_dot.glsl"
#else
#include "quant_matvec.glsl"
#endif
