// The _qkv builds of the quantized matvecs (VKL_FUSE_QKV; vk_fuse.c decides,
// docs/vulkan.md "Fusion"): up to three matvecs of one A in one dispatch --
// a layer's Q, K and V projections. Set s has its own W (qs, params), Y and
// bias; workgroup x runs a block of rows of set 0 below qkv_b1, of set 1
// below qkv_b2, of set 2 above, each set's blocks numbered from 0 exactly
// as its own dispatch numbers them, so every row's sum is the unfused one
// bit for bit. The set is uniform per workgroup: its branches never diverge.
// Included by quant_matvec.glsl and quant_matvec_dot.glsl after their push
// constants, which end with the QMV_FUSE_PUSH fields.
uint qv_set = 0u;

uvec4 qv_load(uint r, uint i) {
    if (qv_set == 0u) return qs[i];
    if (qv_set == 1u) return qs_k[i];
    return qs_v[i];
}

uint qv_param(uint r, uint i) {
    if (qv_set == 0u) return params[i];
    if (qv_set == 1u) return params_k[i];
    return params_v[i];
}

// This workgroup's set (into qv_set), its block of rows in that set and the
// set's row count.
uint qkv_pick(out uint n_rows) {
    const uint x = gl_WorkGroupID.x;
    qv_set = x < pc.qkv_b1 ? 0u : x < pc.qkv_b2 ? 1u : 2u;
    n_rows = qv_set == 0u ? pc.N : qv_set == 1u ? pc.N1 : pc.N2;
    return x - (qv_set == 0u ? 0u : qv_set == 1u ? pc.qkv_b1 : pc.qkv_b2);
}

// Row n of row m of this set's Y: the sum v plus the set's bias, stored as
// the plain build stores it.
void qkv_store(uint m, uint n, float v) {
    if (qv_set == 0u) {
        y[pc.y_off + m * pc.y_stride + n] = v + (pc.has_bias != 0u ? bias[pc.bias_off + n] : 0.0);
    } else if (qv_set == 1u) {
        y_k[pc.y_off1 + m * pc.N1 + n] = v + (pc.has_bias1 != 0u ? bias_k[n] : 0.0);
    } else {
        y_v[pc.y_off2 + m * pc.N2 + n] = v + (pc.has_bias2 != 0u ? bias_v[n] : 0.0);
    }
}
