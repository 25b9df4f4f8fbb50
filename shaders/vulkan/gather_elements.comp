#version 450
// GatherElements (backends/vulkan/vk_indexing.c): dst[p] = data[p with
// p[axis] = idx[p]]; dst and idx share a shape (dims, 8 of them, leading
// ones first), data's strides are pushed. One invocation writes one word
// of dst (4, 2 or 1 elements), or for 8-byte elements one element (two
// words). Out-of-range indices are clamped (index.glsl).
#extension GL_GOOGLE_include_directive : require
#include "move.glsl"
#include "tensor.glsl"
#include "index.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128;
layout(constant_id = 1) const uint ES = 4;   // 1, 2, 4 or 8
layout(constant_id = 2) const uint IDT = VKL_DT_I64;

layout(set = 0, binding = 0, std430) readonly buffer Data { uint data[]; };
layout(set = 0, binding = 1, std430) readonly buffer Idx { uint idx[]; };
layout(set = 0, binding = 2, std430) writeonly buffer Dst { uint dst[]; };

layout(push_constant) uniform Push {
    uint units;  // invocations
    uint count;  // elements of dst
    uint axis;   // in the 8 padded dims
    uint n;      // data's size along the axis
    uint dims[8];
    uint strides[8];
} pc;

// data element of dst element e
uint source(uint e) {
    uint rem = e, off = 0u;
    for (int d = 7; d >= 0; d--) {
        const uint c = rem % pc.dims[d];
        rem /= pc.dims[d];
        off += (uint(d) == pc.axis ? VKL_INDEX_AT(idx, IDT, e, pc.n) : c) * pc.strides[d];
    }
    return off;
}

void main() {
    const uint u = VKL_MOVE_ID(WG);
    if (u >= pc.units) return;
    if (ES == 8u) {
        const uint s = source(u);
        dst[2u * u] = data[2u * s];
        dst[2u * u + 1u] = data[2u * s + 1u];
        return;
    }
    const uint per = 4u / ES;
    uint word = 0u;
    for (uint q = 0u; q < per; q++) {
        const uint e = u * per + q;
        if (e >= pc.count) break;
        word |= VKL_MV_LOAD(data, ES, source(e)) << (8u * ES * q);
    }
    dst[u] = word;
}
