#version 450
// dst = a strided view of src (backends/vulkan/vk_copy.c): Transpose,
// Expand, Tile, Slice (negative steps: negative strides), plain copies.
// One invocation writes one word of dst (4, 2 or 1 elements of ES bytes),
// or one 8-byte element (two words); the _v4 build one 16-byte element (a
// uvec4: runs of 16 contiguous bytes, such as a head's row in an attention
// transpose, found by one index computation). Element e of dst reads src
// element base + the view's index of e (view.glsl).
#extension GL_GOOGLE_include_directive : require
#include "move.glsl"
#include "view.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128;
layout(constant_id = 1) const uint ES = 4;   // element bytes: 1, 2, 4 or 8 (the _v4 build: 16)

#ifdef VKL_VEC4
layout(set = 0, binding = 0, std430) readonly buffer Src { uvec4 src[]; };
layout(set = 0, binding = 1, std430) writeonly buffer Dst { uvec4 dst[]; };
#else
layout(set = 0, binding = 0, std430) readonly buffer Src { uint src[]; };
layout(set = 0, binding = 1, std430) writeonly buffer Dst { uint dst[]; };
#endif

layout(push_constant) uniform Push {
    uint count;                      // elements of dst
    uint dims[VKL_VIEW_RANK];
    uint strides[1][VKL_VIEW_RANK];  // two's complement where negative
    uint base;                       // src element of dst element 0
    uint units;                      // invocations: words of dst, or elements of 8 or 16 bytes
} pc;

void main() {
    const uint u = VKL_MOVE_ID(WG);
    if (u >= pc.units) return;
    uint s;
#ifdef VKL_VEC4
    VKL_VIEW_SRC_INDEX(pc, 0, u, s);
    dst[u] = src[pc.base + s];
#else
    if (ES == 8u) {
        VKL_VIEW_SRC_INDEX(pc, 0, u, s);
        s = 2u * (pc.base + s);
        dst[2u * u] = src[s];
        dst[2u * u + 1u] = src[s + 1u];
        return;
    }
    const uint per = 4u / ES;
    uint word = 0u;
    for (uint j = 0u; j < per; j++) {
        const uint e = u * per + j;
        if (e >= pc.count) break; // the last word's tail is padding
        VKL_VIEW_SRC_INDEX(pc, 0, e, s);
        word |= VKL_MV_LOAD(src, ES, pc.base + s) << (8u * ES * j);
    }
    dst[u] = word;
#endif
}
