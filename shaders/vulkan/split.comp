#version 450
// Split (backends/vulkan/vk_concat.c): output j holds, per row of the
// input (L elements; one row per index of the dims before the axis), the
// row positions [P[j], P[j] + LJ[j]). Up to 7 outputs per dispatch, their
// words numbered one after another (output j owns invocations [U[j],
// U[j + 1])); one invocation writes one word (4, 2 or 1 elements of ES
// bytes), or in the _v4 build one 16-byte element (a uvec4).
#extension GL_GOOGLE_include_directive : require
#include "move.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128;
layout(constant_id = 1) const uint ES = 4; // 1, 2 or 4

#ifdef VKL_VEC4
#define UNIT uvec4
#else
#define UNIT uint
#endif
layout(set = 0, binding = 0, std430) readonly buffer Src { UNIT src[]; };
layout(set = 0, binding = 1, std430) writeonly buffer D0 { UNIT d0[]; };
layout(set = 0, binding = 2, std430) writeonly buffer D1 { UNIT d1[]; };
layout(set = 0, binding = 3, std430) writeonly buffer D2 { UNIT d2[]; };
layout(set = 0, binding = 4, std430) writeonly buffer D3 { UNIT d3[]; };
layout(set = 0, binding = 5, std430) writeonly buffer D4 { UNIT d4[]; };
layout(set = 0, binding = 6, std430) writeonly buffer D5 { UNIT d5[]; };
layout(set = 0, binding = 7, std430) writeonly buffer D6 { UNIT d6[]; };

layout(push_constant) uniform Push {
    uint L;      // elements of an input row
    uint outer;  // rows
    uint n;      // outputs in this dispatch
    uint P[7];
    uint LJ[7];
    uint U[8];   // U[n]: invocations in all
} pc;

void store(uint j, uint w, UNIT word) {
    switch (j) {
    case 0u: d0[w] = word; break;
    case 1u: d1[w] = word; break;
    case 2u: d2[w] = word; break;
    case 3u: d3[w] = word; break;
    case 4u: d4[w] = word; break;
    case 5u: d5[w] = word; break;
    default: d6[w] = word; break;
    }
}

void main() {
    const uint g = VKL_MOVE_ID(WG);
    if (g >= pc.U[pc.n]) return;
    uint j = 0u;
    while (j + 1u < pc.n && g >= pc.U[j + 1u]) j++;
    const uint u = g - pc.U[j], lj = pc.LJ[j];
#ifdef VKL_VEC4
    store(j, u, src[(u / lj) * pc.L + pc.P[j] + u % lj]);
#else
    const uint per = 4u / ES, count = pc.outer * lj;
    uint word = 0u;
    for (uint i = 0u; i < per; i++) {
        const uint e = u * per + i;
        if (e >= count) break; // the last word's tail is padding
        word |= VKL_MV_LOAD(src, ES, (e / lj) * pc.L + pc.P[j] + e % lj) << (8u * ES * i);
    }
    store(j, u, word);
#endif
}
