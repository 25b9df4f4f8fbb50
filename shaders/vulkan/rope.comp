#version 450
// RoPE: Y = X rotated in pairs over the first R dims of each head, X [B, H,
// S, D], cos / sin [S, R] or [B or 1, S, R] (engine/ops/fused.c):
//   rotate_half (INTERLEAVED = 0): pairs (i, i + R/2); GPT-J (1): (2i, 2i + 1)
//   y[i1] = x[i1] cos[i1] - x[i2] sin[i1],  y[i2] = x[i2] cos[i2] + x[i1] sin[i2]
// dims >= R are copied. One invocation per word of Y (two elements of a
// 16-bit Y), f32 arithmetic (f64 in the _f64 variant).
#include "kv_common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint XDT = 1;      // X's and Y's dtype
layout(constant_id = 2) const uint CDT = 1;      // cos's and sin's dtype
layout(constant_id = 3) const uint INTERLEAVED = 0;

VKL_TENSOR_IN(Xb, 0)
VKL_TENSOR_IN(Cb, 1)
VKL_TENSOR_IN(Sb, 2)
layout(set = 0, binding = 3, std430) writeonly buffer Yb_t { uint Yb[]; };
VKL_STORE_PAIR(Yb)

layout(push_constant) uniform Push {
    uint count;        // elements of X
    uint H, S, D, R;
    uint per_batch;    // cos / sin have a batch dim of B (else one table for all)
    uint row_words;    // groups in x: word index = (y * row_words + x) * WG + local
} pc;

REAL rope_at(uint e) {
    const uint d = e % pc.D, row = e - d;
    if (d >= pc.R) return VKL_REAL_AT(Xb, XDT, e);
    const uint s = (e / pc.D) % pc.S, b = e / (pc.D * pc.S * pc.H);
    const uint co = ((pc.per_batch != 0u ? b : 0u) * pc.S + s) * pc.R;
    uint i1, i2;
    if (INTERLEAVED != 0u) {
        i1 = d & ~1u;
        i2 = i1 + 1u;
    } else {
        i1 = d < pc.R / 2u ? d : d - pc.R / 2u;
        i2 = i1 + pc.R / 2u;
    }
    const REAL x1 = VKL_REAL_AT(Xb, XDT, row + i1), x2 = VKL_REAL_AT(Xb, XDT, row + i2);
    if (d == i1) return x1 * VKL_REAL_AT(Cb, CDT, co + i1) - x2 * VKL_REAL_AT(Sb, CDT, co + i1);
    return x2 * VKL_REAL_AT(Cb, CDT, co + i2) + x1 * VKL_REAL_AT(Sb, CDT, co + i2);
}

void main() {
    const uint unit = (gl_WorkGroupID.y * pc.row_words + gl_WorkGroupID.x) * WG + gl_LocalInvocationID.x;
    const uint per = XDT == VKL_DT_F16 || XDT == VKL_DT_BF16 ? 2u : 1u; // elements per unit
    const uint e = unit * per;
    if (e >= pc.count) return;
    const bool two = per == 2u && e + 1u < pc.count;
    Yb_store2(XDT, e, rope_at(e), two ? rope_at(e + 1u) : REAL(0), two);
}
