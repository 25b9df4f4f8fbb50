#version 450
// Gather of whole-word rows (backends/vulkan/vk_indexing.c): dst row
// (o, j) = data row (o, idx[j]), I words (uvec4s in the _v4 build) per
// row; the embedding lookup that starts every decode step. One invocation
// copies one unit, the row found by one division; neighbours read the same
// index (a cache hit), so rows of any length keep every invocation busy.
// Out-of-range indices are clamped (index.glsl).
#extension GL_GOOGLE_include_directive : require
#include "move.glsl"
#include "tensor.glsl"
#include "index.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128;
layout(constant_id = 1) const uint IDT = VKL_DT_I64;

#ifdef VKL_VEC4
#define UNIT uvec4
#else
#define UNIT uint
#endif
layout(set = 0, binding = 0, std430) readonly buffer Data { UNIT data[]; };
layout(set = 0, binding = 1, std430) readonly buffer Idx { uint idx[]; };
layout(set = 0, binding = 2, std430) writeonly buffer Dst { UNIT dst[]; };

layout(push_constant) uniform Push {
    uint units;  // of dst: rows * I
    uint I;      // units per row
    uint J;      // indices
    uint n;      // data rows per o (the axis)
} pc;

void main() {
    const uint u = VKL_MOVE_ID(WG);
    if (u >= pc.units) return;
    const uint r = u / pc.I, o = r / pc.J, j = r % pc.J;
    dst[u] = data[(o * pc.n + VKL_INDEX_AT(idx, IDT, j, pc.n)) * pc.I + u % pc.I];
}
