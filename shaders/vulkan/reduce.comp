#version 450
#extension GL_GOOGLE_include_directive : require
// ReduceSum, ReduceMean, ReduceMax over any set of axes
// (backends/vulkan/vk_reduce.c): output element g is the reduction of the
// group_size input elements at kept_offset(g) + red_offset(r), both offsets
// through merged (dims, strides) lists of up to 6 dims in push constants.
// COOP: a workgroup per output (wg_reduce.glsl across the workgroup, for
// large groups: a row of logits); else an invocation per output (many
// small groups). Floats sum in f32 (f64 in the _f64 build); integers sum
// in 32-bit words, wrapping as the ref's wrap to the output type (i64: the
// low word, tensor.glsl's rule); Max compares order.glsl's keys, so NaN
// propagates and every integer type is exact. Empty groups: sum 0, mean
// NaN (0 for integers), max -inf or the integer type's minimum, as ref.
#include "wg_reduce.glsl"
#include "order.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint OP = 0; // 0 sum, 1 mean, 2 max
layout(constant_id = 2) const uint DT = 1; // input and output
layout(constant_id = 3) const bool COOP = false;

VKL_TENSOR_IN(X, 0)
VKL_REAL_IN(X)
VKL_RAW_IN(X)
VKL_TENSOR_STORE(Y, 1)

layout(push_constant) uniform Push {
    uint groups, group_size;
    uint kdims[6], kstrides[6]; // kept dims (outermost first, padded in front with 1)
    uint rdims[6], rstrides[6]; // reduced dims
} pc;

uvec2 sg_key_max(uvec2 k) {
#ifdef VKL_SUBGROUP
    const uint mx = subgroupMax(k.x);
    return uvec2(mx, subgroupMax(k.x == mx ? k.y : 0u));
#else
    return k;
#endif
}

VKL_WG_REDUCE(real, wg_sum, VKL_COMBINE_ADD, subgroupAdd)
VKL_WG_REDUCE(uint, wg_sum_u, VKL_COMBINE_ADD, subgroupAdd)
VKL_WG_REDUCE(uvec2, wg_key_max, vkl_key_max, sg_key_max)

uint offset(uint i, bool kept) {
    uint off = 0u;
    for (int d = 5; d >= 0; d--) {
        const uint n = kept ? pc.kdims[d] : pc.rdims[d];
        off += (i % n) * (kept ? pc.kstrides[d] : pc.rstrides[d]);
        i /= n;
    }
    return off;
}

const bool FLOAT = DT == VKL_DT_F32 || DT == VKL_DT_F16 || DT == VKL_DT_BF16 || DT == VKL_DT_F64;

// partial reduction of elements r = first, first + step, ... of group g
void partial(uint base, uint first, uint step, out real s, out uint si, out uvec2 k) {
    s = real(0.0);
    si = 0u;
    k = uvec2(0u); // below every key
    for (uint r = first; r < pc.group_size; r += step) {
        const uint i = base + offset(r, false);
        if (OP == 2u) k = vkl_key_max(k, vkl_key(DT, X_raw(DT, i)));
        else if (FLOAT) s += X_r(DT, i);
        else si += vkl_dt_is_signed(DT) ? uint(X_i(DT, i)) : X_raw(DT, i).x; // wraps
    }
}

uvec2 result(real s, uint si, uvec2 k) {
    const uint n = pc.group_size;
    if (OP == 2u) {
        if (n > 0u) return vkl_key_bits(DT, k);
        if (FLOAT) return vkl_real_bits(DT, -vkl_inf_real());
        if (DT == VKL_DT_I64) return uvec2(0u, 0x80000000u);
        if (DT == VKL_DT_I32) return uvec2(0x80000000u, 0u);
        if (DT == VKL_DT_I16) return uvec2(0x8000u, 0u);
        if (DT == VKL_DT_I8) return uvec2(0x80u, 0u);
        return uvec2(0u);
    }
    if (FLOAT) return vkl_real_bits(DT, OP == 1u ? (n > 0u ? s / real(n) : vkl_nan_real()) : s);
    if (OP == 1u && n > 0u) si = vkl_dt_is_signed(DT) ? uint(int(si) / int(n)) : si / n;
    else if (OP == 1u) si = 0u;
    return uvec2(si, vkl_hi_word(DT, si));
}

void main() {
    const uint tid = gl_LocalInvocationIndex, wid = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    real s;
    uint si;
    uvec2 k;
    if (COOP) {
        if (wid >= pc.groups) return; // the whole workgroup
        const uint base = offset(wid, true);
        partial(base, tid, WG, s, si, k);
        if (OP == 2u) k = wg_key_max(k);
        else if (FLOAT) s = wg_sum(s);
        else si = wg_sum_u(si);
        if (tid == 0u) Y_put(DT, wid, result(s, si, k));
    } else {
        const uint g = wid * WG + tid;
        if (g >= pc.groups) return;
        partial(offset(g, true), 0u, 1u, s, si, k);
        Y_put(DT, g, result(s, si, k));
    }
}
