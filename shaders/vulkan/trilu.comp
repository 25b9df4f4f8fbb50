#version 450
// Trilu (backends/vulkan/vk_movement.c): dst = src with the elements of
// each trailing [M, N] matrix outside the kept band zeroed; upper keeps
// column - row >= k, lower keeps column - row <= k. One invocation masks
// one word: ES = 1, 2, 4 (4, 2, 1 elements) or 8 (half an element).
#extension GL_GOOGLE_include_directive : require
#include "move.glsl"
#include "tensor.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128;
layout(constant_id = 1) const uint ES = 4;
layout(constant_id = 2) const uint KDT = 0; // dtype of k; 0: absent (k = 0)

VKL_TENSOR_IN(src, 0)
VKL_TENSOR_IN(kt, 1)
VKL_TENSOR_OUT(dst, 2)

layout(push_constant) uniform Push {
    uint units;  // words of dst
    uint count;  // elements
    uint M, N;
    uint upper;
    uint lim;    // M + N: beyond +-lim, k changes nothing
} pc;

// k clamped to [-lim, lim], whatever its integer type and size
int read_k() {
    if (KDT == 0u) return 0;
    const int lim = int(pc.lim);
    const uint lo = kt[0];
    int v;
    if (KDT == VKL_DT_I64) {
        const uint hi = kt[1];
        if (hi != vkl_hi_word(VKL_DT_I64, lo)) return int(hi) < 0 ? -lim : lim;
        v = int(lo);
    } else if (KDT == VKL_DT_U64) {
        if (kt[1] != 0u || lo > 0x7fffffffu) return lim;
        v = int(lo);
    } else if (KDT == VKL_DT_U32) {
        if (lo > 0x7fffffffu) return lim;
        v = int(lo);
    } else {
        v = vkl_field_to_i(KDT, vkl_field(lo, KDT, 0u));
    }
    return clamp(v, -lim, lim);
}

bool kept(uint e, int k) {
    const int d = int(e % pc.N) - int((e / pc.N) % pc.M);
    return pc.upper != 0u ? d >= k : d <= k;
}

void main() {
    const uint u = VKL_MOVE_ID(WG);
    if (u >= pc.units) return;
    const int k = read_k();
    if (ES == 8u) {
        dst[u] = kept(u >> 1, k) ? src[u] : 0u;
        return;
    }
    const uint per = 4u / ES, field = ES == 4u ? 0xffffffffu : ES == 2u ? 0xffffu : 0xffu;
    uint mask = 0u;
    for (uint j = 0u; j < per; j++) {
        const uint e = u * per + j;
        if (e < pc.count && kept(e, k)) mask |= field << (8u * ES * j);
    }
    dst[u] = src[u] & mask;
}
