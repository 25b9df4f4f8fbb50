#version 450
// ScatterND's update pass (backends/vulkan/vk_indexing.c; out = data is
// copied first): for each index tuple t in order, the slice of S elements
// at sum(idx[t] * strides) is combined with updates[t] (RED: 0 replace,
// 1 add, 2 mul, 3 max, 4 min). The tuples run in order inside each
// invocation, so repeated indices reduce in ref's order and no atomics are
// needed: every word of out belongs to one invocation.
//   ALIGNED (slices are whole words): invocation u owns word u of every
//     slice (8-byte elements: element u, two words).
//   otherwise: invocation u owns word u of out and checks every tuple.
// A tuple with an entry outside [-dim, dim) is skipped (index.glsl).
// Arithmetic: floats in f32 (f16 and bf16 rounded back), integers of up to
// 32 bits in 32-bit wrapping arithmetic, 64-bit integers in exact two-word
// arithmetic, f64 max/min by comparing bits (no shaderFloat64).
#extension GL_GOOGLE_include_directive : require
#include "move.glsl"
#include "tensor.glsl"
#include "index.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128;
layout(constant_id = 1) const uint ES = 4;   // 1, 2, 4 or 8
layout(constant_id = 2) const uint DT = VKL_DT_F32;
layout(constant_id = 3) const uint RED = 0;
layout(constant_id = 4) const uint ALIGNED = 1;
layout(constant_id = 5) const uint IDT = VKL_DT_I64;

layout(set = 0, binding = 0, std430) readonly buffer Idx { uint idx[]; };
layout(set = 0, binding = 1, std430) readonly buffer Upd { uint upd[]; };
layout(set = 0, binding = 2, std430) buffer Out { uint outw[]; };

layout(push_constant) uniform Push {
    uint units;   // invocations
    uint count;   // elements of out
    uint T;       // tuples
    uint m;       // tuple length
    uint S;       // slice elements
    uint dims[8];
    uint strides[8];
} pc;

// element offset of tuple t's slice; false when an entry is out of range
bool tuple_offset(uint t, out uint off) {
    off = 0u;
    for (uint k = 0u; k < pc.m; k++) {
        const uint n = pc.dims[k];
        int v = VKL_INDEX_RAW(idx, IDT, t * pc.m + k, n);
        if (v < -int(n) || v >= int(n)) return false;
        if (v < 0) v += int(n);
        off += uint(v) * pc.strides[k];
    }
    return true;
}

// fields of ES <= 4 bytes, in their low bits
uint combine(uint x, uint u) {
    const uint field = ES == 4u ? 0xffffffffu : ES == 2u ? 0xffffu : 0xffu;
    if (RED == 0u) return u;
    if (DT == VKL_DT_F32 || DT == VKL_DT_F16 || DT == VKL_DT_BF16) {
        const float a = vkl_field_to_f(DT, x, 0u), b = vkl_field_to_f(DT, u, 0u);
        const float r = RED == 1u ? a + b : RED == 2u ? a * b : RED == 3u ? (a > b ? a : b) : (a < b ? a : b);
        return vkl_f_bits(DT, r) & field;
    }
    if (DT == VKL_DT_U32) return RED == 1u ? x + u : RED == 2u ? x * u : RED == 3u ? (x > u ? x : u) : (x < u ? x : u);
    const int a = vkl_field_to_i(DT, x), b = vkl_field_to_i(DT, u);
    const int r = RED == 1u ? a + b : RED == 2u ? a * b : RED == 3u ? (a > b ? a : b) : (a < b ? a : b);
    return DT == VKL_DT_BOOL ? (r != 0 ? 1u : 0u) : uint(r) & field;
}

// a < b for 64-bit values as words (x: low, y: high)
bool less_i64(uvec2 a, uvec2 b) { return int(a.y) < int(b.y) || (a.y == b.y && a.x < b.x); }
bool is_nan_f64(uvec2 a) { return (a.y & 0x7ff00000u) == 0x7ff00000u && ((a.y & 0xfffffu) | a.x) != 0u; }
// a < b for non-NaN doubles, by their bits: negative ones order reversed
bool less_f64(uvec2 a, uvec2 b) {
    if (((a.y | b.y) & 0x7fffffffu) == 0u && (a.x | b.x) == 0u) return false; // -0 == +0
    const uvec2 ka = (a.y & 0x80000000u) != 0u ? ~a : uvec2(a.x, a.y | 0x80000000u);
    const uvec2 kb = (b.y & 0x80000000u) != 0u ? ~b : uvec2(b.x, b.y | 0x80000000u);
    return ka.y < kb.y || (ka.y == kb.y && ka.x < kb.x);
}

uvec2 combine64(uvec2 x, uvec2 u) {
    if (RED == 0u) return u;
    if (DT == VKL_DT_F64) { // max and min only (the recorder refuses f64 add and mul)
        if (is_nan_f64(x) || is_nan_f64(u)) return u;
        return (RED == 3u ? less_f64(u, x) : less_f64(x, u)) ? x : u;
    }
    if (RED == 1u) {
        uint carry;
        const uint lo = uaddCarry(x.x, u.x, carry);
        return uvec2(lo, x.y + u.y + carry);
    }
    if (RED == 2u) {
        uint hi, lo;
        umulExtended(x.x, u.x, hi, lo);
        return uvec2(lo, hi + x.x * u.y + x.y * u.x);
    }
    return (RED == 3u ? less_i64(u, x) : less_i64(x, u)) ? x : u;
}

void main() {
    const uint u = VKL_MOVE_ID(WG);
    if (u >= pc.units) return;
    if (ES == 8u) { // ALIGNED: element u of each slice
        for (uint t = 0u; t < pc.T; t++) {
            uint off;
            if (!tuple_offset(t, off)) continue;
            const uint w = 2u * (off + u), s = 2u * (t * pc.S + u);
            const uvec2 r = combine64(uvec2(outw[w], outw[w + 1u]), uvec2(upd[s], upd[s + 1u]));
            outw[w] = r.x;
            outw[w + 1u] = r.y;
        }
        return;
    }
    const uint per = 4u / ES, field = ES == 4u ? 0xffffffffu : ES == 2u ? 0xffffu : 0xffu;
    if (ALIGNED != 0u) { // word u of each slice
        for (uint t = 0u; t < pc.T; t++) {
            uint off;
            if (!tuple_offset(t, off)) continue;
            const uint w = off / per + u;
            uint x = outw[w], y = 0u;
            for (uint q = 0u; q < per; q++) {
                const uint sh = 8u * ES * q;
                y |= combine((x >> sh) & field, VKL_MV_LOAD(upd, ES, t * pc.S + u * per + q)) << sh;
            }
            outw[w] = y;
        }
        return;
    }
    // word u of out, against every tuple
    const uint e0 = u * per;
    uint x = outw[u];
    bool changed = false;
    for (uint t = 0u; t < pc.T; t++) {
        uint off;
        if (!tuple_offset(t, off) || e0 + per <= off || e0 >= off + pc.S) continue;
        for (uint q = 0u; q < per; q++) {
            const uint e = e0 + q, sh = 8u * ES * q;
            if (e >= pc.count || e < off || e >= off + pc.S) continue;
            const uint r = combine((x >> sh) & field, VKL_MV_LOAD(upd, ES, t * pc.S + (e - off)));
            x = (x & ~(field << sh)) | (r << sh);
            changed = true;
        }
    }
    if (changed) outw[u] = x;
}
