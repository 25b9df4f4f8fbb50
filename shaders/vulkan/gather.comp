#version 450
// Gather of elements smaller than a word in rows that are not whole words
// (backends/vulkan/vk_indexing.c; whole-word rows go to gather_rows):
// dst[o, j, i] = data[o, idx[j], i]; one invocation writes one word of dst,
// its 4 or 2 elements each found on their own. Out-of-range indices are
// clamped (index.glsl).
#extension GL_GOOGLE_include_directive : require
#include "move.glsl"
#include "tensor.glsl"
#include "index.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128;
layout(constant_id = 1) const uint ES = 2;   // 1 or 2
layout(constant_id = 2) const uint IDT = VKL_DT_I64;

layout(set = 0, binding = 0, std430) readonly buffer Data { uint data[]; };
layout(set = 0, binding = 1, std430) readonly buffer Idx { uint idx[]; };
layout(set = 0, binding = 2, std430) writeonly buffer Dst { uint dst[]; };

layout(push_constant) uniform Push {
    uint units;  // words of dst
    uint count;  // elements of dst
    uint I;      // elements per row
    uint J;      // indices
    uint n;      // the axis
} pc;

void main() {
    const uint u = VKL_MOVE_ID(WG);
    if (u >= pc.units) return;
    const uint per = 4u / ES;
    uint word = 0u;
    for (uint q = 0u; q < per; q++) {
        const uint e = u * per + q;
        if (e >= pc.count) break;
        const uint i = e % pc.I, t = e / pc.I, j = t % pc.J, o = t / pc.J;
        const uint s = (o * pc.n + VKL_INDEX_AT(idx, IDT, j, pc.n)) * pc.I + i;
        word |= VKL_MV_LOAD(data, ES, s) << (8u * ES * q);
    }
    dst[u] = word;
}
