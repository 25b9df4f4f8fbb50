#version 450
// RoPE(K) + KvAppend(K) [+ KvAppend(V)] [+ RoPE(Q)] of one attention layer
// as one dispatch (vk_fuse.c, "ROPE_KV"): K's new rows rotated and written
// straight into the K cache in its dtype, V's rows into the V cache, Q
// rotated into the tensor attention reads. The values are the unfused
// kernels' bit for bit: RoPE through rope_at.glsl, rounded to RoPE's output
// dtype (K's) as rope.comp stores it and read back as kv_append.comp reads
// it, then encoded by kv_append_row.glsl. Workgroup = one row: rows
// [0, k_rows) are K's (b, s, h) as kv_append.comp orders them, then V's,
// then Q's rows of [B, Hq, S, Dq]. Q and V absent: q_rows, v_rows 0 (their
// bindings then hold K's ranges, never touched).
#include "rope_at.glsl"
#include "kv_append_row.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;          // a power of two
layout(constant_id = 1) const uint KXDT = 1;         // K's (RoPE's input and output) dtype: f32, f16, bf16
layout(constant_id = 2) const uint CDT = 1;          // cos's and sin's dtype
layout(constant_id = 3) const uint INTERLEAVED = 0;
layout(constant_id = 4) const uint PDT = 5;          // position_ids: i64 or i32
layout(constant_id = 5) const uint KSDT = 1;         // the K cache's dtype
layout(constant_id = 6) const uint VXDT = 1;         // V's dtype: f32, f16, bf16
layout(constant_id = 7) const uint VSDT = 1;         // the V cache's dtype
layout(constant_id = 8) const uint QXDT = 1;         // Q's (in and out) dtype: f32, f16, bf16

VKL_TENSOR_IN(Kx, 0)
VKL_TENSOR_IN(Cb, 1)
VKL_TENSOR_IN(Sb, 2)
VKL_TENSOR_IN(Pb, 3)
layout(set = 0, binding = 4, std430) buffer Kc_t { uint Kc[]; };
VKL_TENSOR_IN(Vx, 5)
layout(set = 0, binding = 6, std430) buffer Vc_t { uint Vc[]; };
VKL_TENSOR_IN(Qx, 7)
layout(set = 0, binding = 8, std430) writeonly buffer Qy_t { uint Qy[]; };
VKL_STORE_PAIR(Qy)

layout(push_constant) uniform Push {
    uint Tk, Tv, B, S, Hk, Hv, Hq, Dk, Dv, Dq, R;
    uint per_batch;    // cos / sin have a batch dim of B (else one table for all)
    uint k_rows;       // B * S * Hk
    uint v_rows;       // B * S * Hv, or 0
    uint q_rows;       // B * Hq * S, or 0
    uint groups_x;     // row = y * groups_x + x
} pc;

shared uint sRed[WG];

VKL_ROPE_AT(rope_k, Kx, KXDT, Cb, Sb, CDT)
VKL_ROPE_AT(rope_q, Qx, QXDT, Cb, Sb, CDT)

// RoPE(K)'s element i as the f32 bits kv_append.comp reads from it: rope.comp
// stores it in K's dtype, kv_append.comp widens that to f32
uint k_bits(uint i) {
    const uint f = floatBitsToUint(float(rope_k(i, pc.Dk, pc.S, pc.Hk, pc.R, pc.per_batch != 0u)));
    if (KXDT == VKL_DT_F16) return vkl_f16_to_f32_bits(vkl_f32_to_f16_bits(f));
    if (KXDT == VKL_DT_BF16) return vkl_f32_to_bf16_bits(f) << 16;
    return f;
}

// V's element i as the f32 bits of (float)v, as kv_append.comp reads it
uint v_bits(uint i) {
    if (VXDT == VKL_DT_F16) return vkl_f16_to_f32_bits(vkl_field(Vx[i >> 1], VXDT, i));
    if (VXDT == VKL_DT_BF16) return vkl_field(Vx[i >> 1], VXDT, i) << 16;
    return Vx[i];
}

VKL_KV_WRITE_ROW(write_k_row, Kc, KSDT, k_bits)
VKL_KV_WRITE_ROW(write_v_row, Vc, VSDT, v_bits)
VKL_KV_POSITION(position, Pb, PDT)

// KvAppend's row `row` (b, s, h) of a cache of T rows, H heads, D dims
void append_row(bool is_v, uint row, uint H, uint D, uint T, uint tid) {
    const uint h = row % H, s = (row / H) % pc.S, b = row / (H * pc.S);
    uint p;
    if (!position(b * pc.S + s, T, p)) return;
    const uint dst = (p * pc.B + b) * H + h, src = ((b * H + h) * pc.S + s) * D;
    if (is_v) write_v_row(dst, src, D, tid);
    else write_k_row(dst, src, D, tid);
}

void main() {
    const uint row = gl_WorkGroupID.y * pc.groups_x + gl_WorkGroupID.x, tid = gl_LocalInvocationID.x;
    if (row < pc.k_rows) {
        append_row(false, row, pc.Hk, pc.Dk, pc.Tk, tid);
    } else if (row < pc.k_rows + pc.v_rows) {
        append_row(true, row - pc.k_rows, pc.Hv, pc.Dv, pc.Tv, tid);
    } else if (row < pc.k_rows + pc.v_rows + pc.q_rows) {
        // RoPE(Q)'s row as rope.comp writes it: words of two elements for a
        // 16-bit Q (the recorder asks for an even Dq), one otherwise
        const uint q = row - pc.k_rows - pc.v_rows, per = QXDT == VKL_DT_F16 || QXDT == VKL_DT_BF16 ? 2u : 1u;
        for (uint u = tid; u * per < pc.Dq; u += WG) {
            const uint e = q * pc.Dq + u * per;
            const bool two = per == 2u;
            Qy_store2(QXDT, e, rope_q(e, pc.Dq, pc.S, pc.Hq, pc.R, pc.per_batch != 0u),
                      two ? rope_q(e + 1u, pc.Dq, pc.S, pc.Hq, pc.R, pc.per_batch != 0u) : REAL(0), two);
        }
    }
}
