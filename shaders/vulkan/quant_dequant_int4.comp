#version 450
#extension GL_GOOGLE_include_directive : require
// int4 dequantization on the GPU: w = (float(q) - z) * d, exact in f32
// (q - z is an integer in -15..15, d has 11 significant bits). Loop:
// quant_dequant.glsl.
#include "quant_common.glsl"

void dq_word(uint u, uint p, out float v[8]) {
    const float d = vkl_half_exact(p & 0xFFFFu), z = unpackHalf2x16(p >> 16).x;
    precise vec2 x0 = (VKL_INT4_PAIR(u, 0u) - z) * d, x1 = (VKL_INT4_PAIR(u, 1u) - z) * d;
    precise vec2 x2 = (VKL_INT4_PAIR(u, 2u) - z) * d, x3 = (VKL_INT4_PAIR(u, 3u) - z) * d;
    v[0] = x0.x; v[1] = x0.y; v[2] = x1.x; v[3] = x1.y;
    v[4] = x2.x; v[5] = x2.y; v[6] = x3.x; v[7] = x3.y;
}

#include "quant_dequant.glsl"
