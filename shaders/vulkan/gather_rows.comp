#version 450
// Gather of whole-word rows (backends/vulkan/vk_indexing.c): dst row
// (o, j) = data row (o, idx[j]), I words (uvec4s in the _v4 build) per
// row; the embedding lookup that starts every decode step. One invocation
// copies one unit, the row found by one division; neighbours read the same
// index (a cache hit), so rows of any length keep every invocation busy.
// Out-of-range indices are clamped (index.glsl). A table over the binding
// limit is bound one row piece at a time (axis 0 only): this dispatch holds
// rows row0 .. row0 + rows - 1 and skips indices outside them; the other
// pieces' dispatches write those (vk_indexing.c).
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
    uint row0;   // the bound piece's first row (0: the whole table)
    uint rows;   // its rows (n: the whole table)
} pc;

void main() {
    const uint u = VKL_MOVE_ID(WG);
    if (u >= pc.units) return;
    const uint r = u / pc.I, o = r / pc.J, j = r % pc.J;
    const uint i = VKL_INDEX_AT(idx, IDT, j, pc.n);
    if (i < pc.row0 || i - pc.row0 >= pc.rows) return;
    dst[u] = data[(o * pc.rows + i - pc.row0) * pc.I + u % pc.I];
}
