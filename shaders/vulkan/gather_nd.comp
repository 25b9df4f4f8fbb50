#version 450
// GatherND (backends/vulkan/vk_indexing.c): index tuple t (m entries of
// idx from t * m) picks, within its batch, the contiguous slice of S
// elements at batch * bstride + sum(idx * strides); dst is the slices one
// after another. One invocation writes one word of dst (4, 2 or 1
// elements; 8-byte elements arrive as word pairs). Out-of-range entries
// are clamped (index.glsl).
#extension GL_GOOGLE_include_directive : require
#include "move.glsl"
#include "tensor.glsl"
#include "index.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128;
layout(constant_id = 1) const uint ES = 4;   // 1, 2 or 4
layout(constant_id = 2) const uint IDT = VKL_DT_I64;

layout(set = 0, binding = 0, std430) readonly buffer Data { uint data[]; };
layout(set = 0, binding = 1, std430) readonly buffer Idx { uint idx[]; };
layout(set = 0, binding = 2, std430) writeonly buffer Dst { uint dst[]; };

layout(push_constant) uniform Push {
    uint units;      // words of dst
    uint count;      // elements of dst
    uint S;          // slice elements
    uint per_batch;  // tuples per batch
    uint bstride;    // elements per batch
    uint m;          // tuple length
    uint dims[8];    // sizes of the dims the tuple indexes
    uint strides[8];
} pc;

void main() {
    const uint u = VKL_MOVE_ID(WG);
    if (u >= pc.units) return;
    const uint per = 4u / ES;
    uint word = 0u;
    for (uint q = 0u; q < per; q++) {
        const uint e = u * per + q;
        if (e >= pc.count) break;
        const uint t = e / pc.S;
        uint off = (t / pc.per_batch) * pc.bstride + e % pc.S;
        for (uint k = 0u; k < pc.m; k++) off += VKL_INDEX_AT(idx, IDT, t * pc.m + k, pc.dims[k]) * pc.strides[k];
        word |= VKL_MV_LOAD(data, ES, off) << (8u * ES * q);
    }
    dst[u] = word;
}
