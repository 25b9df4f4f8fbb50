#version 450
// Concat (backends/vulkan/vk_concat.c): each output row (one per index of
// the dims before the axis) is the sources' rows, of P[k+1] - P[k]
// elements each, one after another. Up to 7 sources per dispatch; one
// invocation writes one word of dst (4, 2 or 1 elements of ES bytes), each
// element read from whichever source holds it, so pieces that share a word
// need no second pass. A node of more sources records several dispatches,
// each writing the words that hold elements of its own sources; a word
// shared with another dispatch's sources keeps their bits as dst has them
// (earlier dispatches' elements; later ones overwrite the rest). The _v4
// build moves 16-byte elements (uvec4s: pieces of whole uvec4s).
#extension GL_GOOGLE_include_directive : require
#include "move.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128;
layout(constant_id = 1) const uint ES = 4; // 1, 2 or 4

#ifdef VKL_VEC4
#define UNIT uvec4
#define LOAD(BUF, i) BUF[i]
#else
#define UNIT uint
#define LOAD(BUF, i) VKL_MV_LOAD(BUF, ES, i)
#endif
layout(set = 0, binding = 0, std430) buffer Dst { UNIT dst[]; };
layout(set = 0, binding = 1, std430) readonly buffer S0 { UNIT s0[]; };
layout(set = 0, binding = 2, std430) readonly buffer S1 { UNIT s1[]; };
layout(set = 0, binding = 3, std430) readonly buffer S2 { UNIT s2[]; };
layout(set = 0, binding = 4, std430) readonly buffer S3 { UNIT s3[]; };
layout(set = 0, binding = 5, std430) readonly buffer S4 { UNIT s4[]; };
layout(set = 0, binding = 6, std430) readonly buffer S5 { UNIT s5[]; };
layout(set = 0, binding = 7, std430) readonly buffer S6 { UNIT s6[]; };

layout(push_constant) uniform Push {
    uint units;  // words of dst
    uint count;  // elements of dst
    uint L;      // elements of an output row
    uint n;      // sources in this dispatch
    uint P[8];   // source k fills row positions [P[k], P[k + 1])
} pc;

UNIT load(uint k, uint i) {
    switch (k) {
    case 0u: return LOAD(s0, i);
    case 1u: return LOAD(s1, i);
    case 2u: return LOAD(s2, i);
    case 3u: return LOAD(s3, i);
    case 4u: return LOAD(s4, i);
    case 5u: return LOAD(s5, i);
    default: return LOAD(s6, i);
    }
}

// source and index of row position r in row o
uint source(uint o, uint r, out uint k) {
    k = 0u;
    while (k + 1u < pc.n && r >= pc.P[k + 1u]) k++;
    return o * (pc.P[k + 1u] - pc.P[k]) + (r - pc.P[k]);
}

void main() {
    const uint u = VKL_MOVE_ID(WG);
    if (u >= pc.units) return;
#ifdef VKL_VEC4
    const uint r = u % pc.L;
    if (r < pc.P[0] || r >= pc.P[pc.n]) return; // another dispatch's element
    uint k;
    const uint i = source(u / pc.L, r, k);
    dst[u] = load(k, i);
#else
    const uint per = 4u / ES, field = ES == 4u ? 0xffffffffu : ES == 2u ? 0xffffu : 0xffu;
    uint word = 0u, keep = 0u;
    bool mine = false;
    for (uint j = 0u; j < per; j++) {
        const uint e = u * per + j;
        if (e >= pc.count) break; // the last word's tail is padding
        const uint o = e / pc.L, r = e % pc.L;
        if (r < pc.P[0] || r >= pc.P[pc.n]) {
            keep |= field << (8u * ES * j);
            continue;
        }
        mine = true;
        uint k;
        const uint i = source(o, r, k);
        word |= load(k, i) << (8u * ES * j);
    }
    if (!mine) return;
    if (keep != 0u) word |= dst[u] & keep;
    dst[u] = word;
#endif
}
