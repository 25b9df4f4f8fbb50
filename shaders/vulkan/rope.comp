#version 450
// RoPE: Y = X rotated in pairs over the first R dims of each head, X [B, H,
// S, D], cos / sin [S, R] or [B or 1, S, R] (engine/ops/fused.c; the
// arithmetic is rope_at.glsl's). One invocation per word of Y (two elements
// of a 16-bit Y), f32 arithmetic (f64 in the _f64 variant).
#include "rope_at.glsl"

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

VKL_ROPE_AT(rope_at_of, Xb, XDT, Cb, Sb, CDT)
REAL rope_at(uint e) { return rope_at_of(e, pc.D, pc.S, pc.H, pc.R, pc.per_batch != 0u); }

void main() {
    const uint unit = (gl_WorkGroupID.y * pc.row_words + gl_WorkGroupID.x) * WG + gl_LocalInvocationID.x;
    const uint per = XDT == VKL_DT_F16 || XDT == VKL_DT_BF16 ? 2u : 1u; // elements per unit
    const uint e = unit * per;
    if (e >= pc.count) return;
    const bool two = per == 2u && e + 1u < pc.count;
    Yb_store2(XDT, e, rope_at(e), two ? rope_at(e + 1u) : REAL(0), two);
}
