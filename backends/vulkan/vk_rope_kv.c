/* The fused RoPE + KvAppend dispatch (shaders/vulkan/rope_kv_append.comp;
 * vk_fuse.c decides when): RoPE(K) written straight into the K cache by
 * KvAppend(K), with KvAppend(V) and RoPE(Q) of the same layer where
 * present. The node's views are VKL_VK_ROPE_KV_IN inputs (K before RoPE,
 * cos, sin, position_ids, K state, V, V state, Q before RoPE) and
 * VKL_VK_ROPE_KV_OUT outputs (K state, V state, RoPE(Q)); absent parts have
 * id VKL_NONE. What the fused kernel takes is narrower than the unfused
 * recorders (no f64, in-place states only): the fit check says so, and
 * vk_fuse.c leaves anything else unfused. */
#include "../../engine/ops.h"
#include "vk_internal.h"

#define ROPE_KV_WG 64 /* a power of two: the int8 row maximum is a tree (kv_append_row.glsl) */

enum { IN_K, IN_COS, IN_SIN, IN_POS, IN_KS, IN_V, IN_VS, IN_Q };
enum { OUT_K, OUT_V, OUT_Q };

static bool float_x(vkl_dtype t) { return t == VKL_DTYPE_F32 || t == VKL_DTYPE_F16 || t == VKL_DTYPE_BF16; }

/* x [B, H, S, D] appended to state [T, B, H, D] (in place, out the state's
 * range) at position_ids [B, S], in a dtype the fused kernel encodes */
static bool append_fits(const vkl_vk_tensor *state, const vkl_vk_tensor *x, const vkl_vk_tensor *pos,
                        const vkl_vk_tensor *out) {
    if (state->rank != 4 || x->rank != 4 || pos->rank != 2 || !float_x(x->dtype) || state->weight || out->pieced ||
        state->pieced)
        return false;
    const vkl_dtype sdt = state->dtype;
    const int64_t D = x->dims[3];
    const bool int8 = sdt == VKL_DTYPE_Q_INT8;
    if (!(float_x(sdt) || sdt == VKL_DTYPE_FP8_E4M3 || sdt == VKL_DTYPE_FP8_E5M2 || int8) ||
        (int8 && (D <= 0 || state->group != (uint64_t)D)))
        return false;
    if (state->dims[1] != x->dims[0] || state->dims[2] != x->dims[1] || state->dims[3] != D ||
        pos->dims[0] != x->dims[0] || pos->dims[1] != x->dims[2])
        return false;
    if (out->dtype != sdt || out->bytes != state->bytes || out->at.buffer != state->at.buffer ||
        out->at.offset != state->at.offset)
        return false;
    const int64_t row_bytes = int8 ? 4 + D : (int64_t)vkl_dtype_size(sdt) * D;
    return row_bytes % 4 == 0 && state->bytes / 4 < (1ull << 32) && state->dims[0] < (1ll << 31) &&
           x->count < (1ll << 31);
}

/* X [B, H, S, D] rotated by cos / sin ([S, R] or [B or 1, S, R], not f64),
 * R even and at most D */
static bool rope_fits(const vkl_vk_tensor *x, const vkl_vk_tensor *cs, const vkl_vk_tensor *sn) {
    if (x->rank != 4 || !float_x(x->dtype) || !float_x(cs->dtype) || sn->dtype != cs->dtype ||
        (cs->rank != 2 && cs->rank != 3) || sn->rank != cs->rank || x->pieced || cs->pieced || sn->pieced)
        return false;
    for (uint32_t d = 0; d < cs->rank; d++)
        if (cs->dims[d] != sn->dims[d]) return false;
    const int64_t R = cs->dims[cs->rank - 1], cb = cs->rank == 3 ? cs->dims[0] : 1;
    return cs->dims[cs->rank - 2] == x->dims[2] && (cb == 1 || cb == x->dims[0]) && R % 2 == 0 && R <= x->dims[3] &&
           x->count < (1ll << 31) && cs->count < (1ll << 31);
}

bool vkl_vk_rope_kv_fits(const vkl_vk_node *nd) {
    const vkl_vk_tensor *in = nd->in, *out = nd->out;
    if (nd->n_in != VKL_VK_ROPE_KV_IN || nd->n_out != VKL_VK_ROPE_KV_OUT ||
        nd->dev->props.limits.maxPerStageDescriptorStorageBuffers < VKL_VK_ROPE_KV_BINDINGS)
        return false;
    if (in[IN_POS].dtype != VKL_DTYPE_I64 && in[IN_POS].dtype != VKL_DTYPE_I32) return false;
    if (!rope_fits(&in[IN_K], &in[IN_COS], &in[IN_SIN]) ||
        !append_fits(&in[IN_KS], &in[IN_K], &in[IN_POS], &out[OUT_K]))
        return false;
    const int64_t B = in[IN_K].dims[0], S = in[IN_K].dims[2];
    if (in[IN_V].id != VKL_NONE &&
        (!append_fits(&in[IN_VS], &in[IN_V], &in[IN_POS], &out[OUT_V]) || in[IN_V].dims[0] != B ||
         in[IN_V].dims[2] != S))
        return false;
    const vkl_vk_tensor *q = &in[IN_Q], *y = &out[OUT_Q];
    if (q->id != VKL_NONE) {
        const bool pairs = q->dtype != VKL_DTYPE_F32; /* 16-bit Q: rows of whole words */
        if (!rope_fits(q, &in[IN_COS], &in[IN_SIN]) || q->dims[0] != B || q->dims[2] != S ||
            y->dtype != q->dtype || y->count != q->count || y->pieced || (pairs && q->dims[3] % 2))
            return false;
    }
    return true;
}

vkl_status vkl_vk_record_rope_kv(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    *count = 0;
    if (!vkl_vk_rope_kv_fits(nd)) return vkl_vk_node_unsupported(nd, "fused RoPE + KvAppend, yet not what it takes");
    const vkl_vk_tensor *in = nd->in, *k = &in[IN_K], *cs = &in[IN_COS], *v = &in[IN_V], *q = &in[IN_Q];
    const bool has_v = v->id != VKL_NONE, has_q = q->id != VKL_NONE;
    const int64_t B = k->dims[0], Hk = k->dims[1], S = k->dims[2], Dk = k->dims[3];
    const int64_t Hv = has_v ? v->dims[1] : 0, Dv = has_v ? v->dims[3] : 0;
    const int64_t Hq = has_q ? q->dims[1] : 0, Dq = has_q ? q->dims[3] : 0;
    const int64_t k_rows = B * S * Hk, v_rows = B * S * Hv, q_rows = B * Hq * S, rows = k_rows + v_rows + q_rows;
    uint32_t gx, gy;
    if (rows >= (1ll << 31) || !vkl_vk_grid_2d(nd->dev, rows, &gx, &gy))
        return vkl_vk_node_unsupported(nd, "%lld rows exceed the fused RoPE + KvAppend's dispatch range",
                                       (long long)rows);
    if (!rows || !Dk) return VKL_OK;
    vkl_vk_dispatch *d = out;
    d->shader = "rope_kv_append";
    int64_t interleaved = 0;
    vkl_status st = vkl_op_attr_int(nd->g, nd->fusion->nodes[0], "interleaved", &interleaved);
    if (st) return st;
    const uint32_t spec[] = {ROPE_KV_WG,
                             (uint32_t)k->dtype,
                             (uint32_t)cs->dtype,
                             interleaved ? 1u : 0u,
                             (uint32_t)in[IN_POS].dtype,
                             (uint32_t)in[IN_KS].dtype,
                             (uint32_t)(has_v ? v->dtype : VKL_DTYPE_F32),
                             (uint32_t)(has_v ? in[IN_VS].dtype : VKL_DTYPE_F32),
                             (uint32_t)(has_q ? q->dtype : VKL_DTYPE_F32)};
    d->n_spec = (uint32_t)(sizeof(spec) / sizeof(spec[0]));
    for (uint32_t i = 0; i < d->n_spec; i++) d->spec[i] = spec[i];
    /* an absent part's bindings hold K's ranges: the kernel never touches them */
    d->bind[0] = k->at;
    d->bind[1] = cs->at;
    d->bind[2] = in[IN_SIN].at;
    d->bind[3] = in[IN_POS].at;
    d->bind[4] = nd->out[OUT_K].at;
    d->bind[5] = has_v ? v->at : k->at;
    d->bind[6] = has_v ? nd->out[OUT_V].at : nd->out[OUT_K].at;
    d->bind[7] = has_q ? q->at : k->at;
    d->bind[8] = has_q ? nd->out[OUT_Q].at : nd->out[OUT_K].at;
    d->n_bind = VKL_VK_ROPE_KV_BINDINGS;
    const uint32_t push[] = {(uint32_t)in[IN_KS].dims[0],
                             has_v ? (uint32_t)in[IN_VS].dims[0] : 0u,
                             (uint32_t)B,
                             (uint32_t)S,
                             (uint32_t)Hk,
                             (uint32_t)Hv,
                             (uint32_t)Hq,
                             (uint32_t)Dk,
                             (uint32_t)Dv,
                             (uint32_t)Dq,
                             (uint32_t)cs->dims[cs->rank - 1],
                             cs->rank == 3 && cs->dims[0] != 1 ? 1u : 0u,
                             (uint32_t)k_rows,
                             (uint32_t)v_rows,
                             (uint32_t)q_rows,
                             gx};
    d->n_push = (uint32_t)(sizeof(push) / sizeof(push[0]));
    for (uint32_t i = 0; i < d->n_push; i++) d->push[i] = push[i];
    d->groups[0] = gx;
    d->groups[1] = gy;
    d->groups[2] = 1;
    *count = 1;
    return VKL_OK;
}
