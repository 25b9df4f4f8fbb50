#version 450
// Gather of whole-word rows (backends/vulkan/vk_indexing.c): dst row
// (o, j) = data row (o, idx[j]), I words (uvec4s in the _v4 build) per
// row. The embedding lookup that starts every decode step: one workgroup
// row per (o, j) (grid y and z), reading its index once, its invocations
// copying the row with coalesced loads. Out-of-range indices are clamped
// (index.glsl).
#extension GL_GOOGLE_include_directive : require
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
    uint I;     // units per row
    uint J;     // indices
    uint n;     // data rows per o (the axis)
    uint rows;  // outer * J
} pc;

void main() {
    const uint r = gl_WorkGroupID.z * gl_NumWorkGroups.y + gl_WorkGroupID.y;
    if (r >= pc.rows) return;
    const uint o = r / pc.J, j = r % pc.J;
    const uint src = (o * pc.n + VKL_INDEX_AT(idx, IDT, j, pc.n)) * pc.I;
    for (uint w = gl_WorkGroupID.x * WG + gl_LocalInvocationID.x; w < pc.I; w += gl_NumWorkGroups.x * WG)
        dst[r * pc.I + w] = data[src + w];
}
