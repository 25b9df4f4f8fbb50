#version 450
#extension GL_GOOGLE_include_directive : require
// E0M4 dequantization on the GPU: w = (half(EXP | q << 6) - b) * d, exact in
// f32 (w1 - b has at most 5 significant bits, d 11). `precise` keeps the
// compiler from rewriting it as w1 * d - b * d. Loop: quant_dequant.glsl.
#include "quant_common.glsl"

void dq_word(uint u, uint p, out float v[8]) {
    const uint e = (p >> 16) & 0xFC00u;
    const uint e2 = e | (e << 16);
    const float d = vkl_half_exact(p & 0xFFFFu), b = unpackHalf2x16(p >> 16).x;
    const vec2 w0 = VKL_E0M4_PAIR0(u, e2), w1 = VKL_E0M4_PAIR1(u, e2);
    const vec2 w2 = VKL_E0M4_PAIR2(u, e2), w3 = VKL_E0M4_PAIR3(u, e2);
    precise vec2 x0 = (w0 - b) * d, x1 = (w1 - b) * d, x2 = (w2 - b) * d, x3 = (w3 - b) * d;
    v[0] = x0.x; v[1] = x0.y; v[2] = x1.x; v[3] = x1.y;
    v[4] = x2.x; v[5] = x2.y; v[6] = x3.x; v[7] = x3.y;
}

#include "quant_dequant.glsl"
