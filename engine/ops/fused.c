/* Table entries and shape rules for the fused LLM ops of domain "vkllm"
 * that the importer's passes create: RoPE, Attention, KvAppend. (RMSNorm is
 * with the norms in norm.c.) Each entry's comment is the op's definition;
 * the ref kernel in backends/ref/fused.c implements exactly that. */
#include "nn_util.h"
#include "op_defs.h"

static vkl_status infer_rope(vkl_graph *g, uint32_t node) {
    const vkl_tensor *in[3];
    vkl_status st = vkl_nn_inputs(g, node, 3, in);
    if (st) return st;
    const vkl_tensor *x = in[0], *cs = in[1], *sn = in[2];
    st = vkl_nn_need_float(g, node, x, "X");
    if (!st) st = vkl_nn_need_float(g, node, cs, "cos");
    if (!st) st = vkl_nn_same_dtype(g, node, cs, sn, "cos and sin");
    if (!st) st = vkl_nn_need_rank(g, node, x, 4, false, "X");
    if (!st && cs->shape.rank != 2) st = vkl_nn_need_rank(g, node, cs, 3, false, "cos");
    if (st) return st;
    if (!vkl_shape_equal(&cs->shape, &sn->shape)) {
        char a[160], b[160];
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "RoPE: cos %s and sin %s differ", vkl_shape_str(g, &cs->shape, a, sizeof(a)),
                        vkl_shape_str(g, &sn->shape, b, sizeof(b)));
    }
    uint32_t r = cs->shape.rank;
    vkl_expr rot = cs->shape.dims[r - 1], rem;
    int64_t rv;
    st = vkl_nn_dims_agree(g, node, cs->shape.dims[r - 2], x->shape.dims[2], "cos's and X's sequence lengths");
    if (!st && r == 3) {
        vkl_shape cb = {1, {cs->shape.dims[0]}}, xb = {1, {x->shape.dims[0]}};
        st = vkl_nn_broadcast_to(g, node, &cb, &xb, "cos's batch dim");
    }
    if (!st) st = vkl_expr_mod(g->syms, rot, 2, &rem);
    if (!st && vkl_expr_is_const(g->syms, rem, &rv) && rv != 0)
        st = vkl_fail(g->ctx, VKL_ERR_SHAPE, "RoPE: the rotary width (cos's last dim) must be even");
    if (!st && vkl_expr_compare(g->syms, rot, x->shape.dims[3]) == VKL_SYM_GT)
        st = vkl_fail(g->ctx, VKL_ERR_SHAPE, "RoPE: the rotary width (cos's last dim) exceeds X's head dim");
    if (!st) st = vkl_node_set_out(g, node, 0, x->dtype, &x->shape);
    return st;
}

static const vkl_attr_schema rope_attrs[] = {{"interleaved", VKL_ATTR_INT, false, 0, 0, NULL}};

/* RoPE (domain vkllm): inputs X [B, H, S, D], cos, sin ([B, S, R] with B
 * possibly 1, or [S, R]); attr interleaved = 0. R is even, R <= D; the first
 * R dims of each head rotate, dims >= R pass through. cos/sin are given at
 * full width R, as Hugging Face computes them. Y has X's shape and dtype.
 *   interleaved = 0 (rotate_half), for i < R/2, h = R/2:
 *     y[i]   = x[i]   * cos[i]   - x[i+h] * sin[i]
 *     y[i+h] = x[i+h] * cos[i+h] + x[i]   * sin[i+h]
 *   interleaved = 1 (GPT-J pairs), for i < R/2:
 *     y[2i]   = x[2i]   * cos[2i]   - x[2i+1] * sin[2i]
 *     y[2i+1] = x[2i+1] * cos[2i+1] + x[2i]   * sin[2i+1]
 * Computed in fp32 or wider. */
const vkl_op_info vkl_op_info_rope = {"RoPE", "vkllm", 3, 3, 1, 1, false, -1, rope_attrs, 1, infer_rope};

/* A KV cache dtype (docs/quant.md "KV cache"): f32, f16, bf16, f64, fp8
 * e4m3fn / e5m2 (no scale), or Q_INT8 with group = the row width `width`
 * (one block, f32 scale + int8s, per row of one position and head). */
static bool kv_quantized(vkl_dtype t) {
    return t == VKL_DTYPE_Q_INT8 || t == VKL_DTYPE_FP8_E4M3 || t == VKL_DTYPE_FP8_E5M2;
}

static vkl_status need_kv_dtype(vkl_graph *g, uint32_t node, const vkl_tensor *t, vkl_expr width, const char *what) {
    int64_t w;
    switch (t->dtype) {
    case VKL_DTYPE_F32: case VKL_DTYPE_F16: case VKL_DTYPE_BF16: case VKL_DTYPE_F64: return VKL_OK;
    case VKL_DTYPE_FP8_E4M3: case VKL_DTYPE_FP8_E5M2:
        if (t->group == 0) return VKL_OK;
        return vkl_fail(g->ctx, VKL_ERR_FORMAT, "%s: %s is %s with a group (%u)", vkl_nn_op_name(g, node), what,
                        vkl_dtype_name(t->dtype), t->group);
    case VKL_DTYPE_Q_INT8:
        if (!vkl_expr_is_const(g->syms, width, &w))
            return vkl_fail(g->ctx, VKL_ERR_SHAPE, "%s: %s is int8, so its head dim must be a constant",
                            vkl_nn_op_name(g, node), what);
        if (w <= 0 || t->group != (uint64_t)w)
            return vkl_fail(g->ctx, VKL_ERR_FORMAT, "%s: %s is int8 with group %u; the group must be the head dim %lld",
                            vkl_nn_op_name(g, node), what, t->group, (long long)w);
        return VKL_OK;
    default:
        return vkl_fail(g->ctx, VKL_ERR_UNSUPPORTED,
                        "%s: %s has dtype %s; f32, f16, bf16, f64, fp8e4m3, fp8e5m2 or int8 (group = head dim) expected",
                        vkl_nn_op_name(g, node), what, vkl_dtype_name(t->dtype));
    }
}

/* Q [B, Hq, S, D]; K/V per kv_layout; Hkv must divide Hq. */
static vkl_status check_attention_kv(vkl_graph *g, uint32_t node, const vkl_tensor *q, const vkl_tensor *k,
                                     const vkl_tensor *v, int64_t layout, vkl_expr *t_len) {
    /* dim positions of B, Hkv, T, D in K and V */
    const uint32_t pos0[4] = {0, 1, 2, 3}, pos1[4] = {1, 2, 0, 3};
    const uint32_t *p = layout ? pos1 : pos0;
    const vkl_shape *ks = &k->shape, *vs = &v->shape;
    if (layout != 0 && layout != 1)
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Attention: kv_layout %lld; 0 or 1 expected", (long long)layout);
    vkl_status st = vkl_nn_dims_agree(g, node, ks->dims[p[0]], q->shape.dims[0], "K's and Q's batch");
    if (!st) st = vkl_nn_dims_agree(g, node, vs->dims[p[0]], q->shape.dims[0], "V's and Q's batch");
    if (!st) st = vkl_nn_dims_agree(g, node, vs->dims[p[1]], ks->dims[p[1]], "V's and K's heads");
    if (!st) st = vkl_nn_dims_agree(g, node, vs->dims[p[2]], ks->dims[p[2]], "V's and K's lengths");
    if (!st) st = vkl_nn_dims_agree(g, node, ks->dims[p[3]], q->shape.dims[3], "K's and Q's head dims");
    if (st) return st;
    /* GQA needs Hkv | Hq: checked wherever the algebra can decide it (both
     * constant, or provably divisible); unrelated symbols are left to the kernel. */
    vkl_expr hq = q->shape.dims[1], hkv = ks->dims[p[1]];
    int64_t a, b;
    if (!vkl_expr_divisible(g->syms, hq, hkv) && vkl_expr_is_const(g->syms, hq, &a) &&
        vkl_expr_is_const(g->syms, hkv, &b) && (b == 0 || a % b != 0))
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Attention: Q's heads (%lld) are not a multiple of K's heads (%lld)",
                        (long long)a, (long long)b);
    *t_len = ks->dims[p[2]];
    return VKL_OK;
}

static vkl_status infer_attention(vkl_graph *g, uint32_t node) {
    const vkl_tensor *in[3], *mask = vkl_node_in(g, node, 3);
    int64_t layout;
    vkl_expr t_len = VKL_EXPR_INVALID;
    vkl_status st = vkl_nn_inputs(g, node, 3, in);
    if (st) return st;
    const vkl_tensor *q = in[0], *k = in[1], *v = in[2];
    st = vkl_nn_need_float(g, node, q, "Q");
    if (!st) st = vkl_nn_need_rank(g, node, q, 4, false, "Q");
    if (!st) st = vkl_nn_need_rank(g, node, k, 4, false, "K");
    if (!st) st = vkl_nn_need_rank(g, node, v, 4, false, "V");
    if (!st) st = need_kv_dtype(g, node, k, k->shape.dims[3], "K");
    if (!st) st = need_kv_dtype(g, node, v, v->shape.dims[3], "V");
    if (!st) st = vkl_op_attr_int(g, node, "kv_layout", &layout);
    if (!st && layout != 1 && (kv_quantized(k->dtype) || kv_quantized(v->dtype)))
        st = vkl_fail(g->ctx, VKL_ERR_UNSUPPORTED,
                      "Attention: K %s / V %s: int8 and fp8 caches are read with kv_layout 1 only (the importer's "
                      "sequence-first cache); kv_layout is %lld",
                      vkl_dtype_name(k->dtype), vkl_dtype_name(v->dtype), (long long)layout);
    if (!st) st = check_attention_kv(g, node, q, k, v, layout, &t_len);
    if (st) return st;
    vkl_shape scores = {4, {q->shape.dims[0], q->shape.dims[1], q->shape.dims[2], t_len}};
    if (mask && mask->dtype != VKL_DTYPE_BOOL) st = vkl_nn_need_float(g, node, mask, "mask");
    if (!st && mask) st = vkl_nn_broadcast_to(g, node, &mask->shape, &scores, "mask");
    vkl_shape out = q->shape;
    out.dims[3] = v->shape.dims[3];
    if (!st) st = vkl_node_set_out(g, node, 0, q->dtype, &out);
    return st;
}

static const vkl_attr_schema attention_attrs[] = {
    {"scale", VKL_ATTR_FLOAT, false, 0, 0.0f, NULL},
    {"causal", VKL_ATTR_INT, false, 0, 0, NULL},
    {"window", VKL_ATTR_INT, false, 0, 0, NULL},
    {"kv_layout", VKL_ATTR_INT, false, 0, 0, NULL},
};

/* Attention (domain vkllm): inputs Q [B, Hq, S, D], K, V, mask?; attrs
 * scale = 0 (meaning 1/sqrt(D)), causal = 0, window = 0 (none), kv_layout = 0.
 *   kv_layout 0: K [B, Hkv, T, D], V [B, Hkv, T, Dv]
 *   kv_layout 1: K [T, B, Hkv, D], V [T, B, Hkv, Dv] (sequence-first cache)
 * Q is f32, f16, bf16 or f64. K and V each are one of those, or a quantized
 * KV cache (docs/quant.md "KV cache"; kv_layout 1 only, else
 * VKL_ERR_UNSUPPORTED): fp8e4m3 / fp8e5m2 (one byte per element, no scale),
 * or int8 with group = its last dim (each row of one position and head is a
 * Q_INT8 block: f32 d, int8 q[D]). Their elements are read as engine/quant
 * defines them, exactly, in f32: fp8 by vkl_fp8_e4m3_to_f32 /
 * vkl_fp8_e5m2_to_f32, int8 as (float)q * d (vkl_kv_dequantize_keys, which
 * refuses a row whose d is not a finite f32 >= 0: VKL_ERR_FORMAT); only rows
 * of visible keys are read. Below, K and V mean those values.
 * Hq is a multiple of Hkv; query head h reads kv head h / (Hq / Hkv) (GQA).
 * Queries are the last S of T positions: query i is at p = i + T - S. Key j
 * is visible iff (!causal || j <= p) && (window <= 0 || p - j < window) and,
 * for a bool mask, mask[b, h, i, j]. The mask broadcasts to [B, Hq, S, T]; a
 * float mask is added to the scaled scores (a score of -inf is invisible).
 *   out[b, h, i, :] = sum_j softmax_j(scale * Q[b,h,i,:] . K[b,g,j,:] + mask) V[b,g,j,:]
 * over the visible j, softmax in fp32 or wider with max subtraction; a row
 * with no visible key is zeros. Output [B, Hq, S, Dv], Q's dtype. */
const vkl_op_info vkl_op_info_attention = {"Attention", "vkllm", 3, 4, 1, 1, false, -1, attention_attrs, 4,
                                           infer_attention};

static vkl_status infer_kv_append(vkl_graph *g, uint32_t node) {
    const vkl_tensor *in[3];
    vkl_status st = vkl_nn_inputs(g, node, 3, in);
    if (st) return st;
    const vkl_tensor *state = in[0], *x = in[1], *pos = in[2];
    st = vkl_nn_need_float(g, node, x, "x");
    if (!st) st = vkl_nn_need_rank(g, node, state, 4, false, "state");
    if (!st) st = vkl_nn_need_rank(g, node, x, 4, false, "x");
    if (!st) st = need_kv_dtype(g, node, state, state->shape.dims[3], "state");
    if (!st) st = vkl_nn_need_rank(g, node, pos, 2, false, "position_ids");
    if (!st && pos->dtype != VKL_DTYPE_I64 && pos->dtype != VKL_DTYPE_I32)
        st = vkl_fail(g->ctx, VKL_ERR_UNSUPPORTED, "KvAppend: position_ids are %s; i64 or i32 expected",
                      vkl_dtype_name(pos->dtype));
    if (st) return st;
    const vkl_expr *sd = state->shape.dims, *xd = x->shape.dims, *pd = pos->shape.dims;
    st = vkl_nn_dims_agree(g, node, sd[1], xd[0], "state's and x's batch");
    if (!st) st = vkl_nn_dims_agree(g, node, sd[2], xd[1], "state's and x's heads");
    if (!st) st = vkl_nn_dims_agree(g, node, sd[3], xd[3], "state's and x's head dims");
    if (!st) st = vkl_nn_dims_agree(g, node, pd[0], xd[0], "position_ids' and x's batch");
    if (!st) st = vkl_nn_dims_agree(g, node, pd[1], xd[2], "position_ids' and x's lengths");
    if (!st) st = vkl_node_set_out(g, node, 0, state->dtype, &state->shape);
    vkl_tensor *out = st ? NULL : vkl_node_out(g, node, 0);
    if (out) out->group = state->group;
    return st;
}

/* KvAppend (domain vkllm): inputs state [T, B, H, D], x [B, H, S, D],
 * position_ids [B, S] (i64 or i32). Output 0 IS the state, updated in place
 * (inplace_input 0), with the state's dtype and group:
 *   out[pos[b, s], b, h, :] = x[b, h, s, :]   (converted to the state's dtype)
 * other rows untouched. A position outside [0, T) is an error, checked before
 * anything is written. x is f32, f16, bf16 or f64; the state is one of the
 * KV cache dtypes (docs/quant.md "KV cache"). An f64 state takes x's value;
 * every other state takes f = x's value as an f32 (exact for f32/f16/bf16 x,
 * f64 x rounded to nearest even), converted by:
 *   f32: f; f16 / bf16: round to nearest even (vkl_f32_to_f16 /
 *     vkl_f32_to_bf16; beyond the range: +-inf);
 *   fp8e4m3 / fp8e5m2: vkl_fp8_e4m3_from_f32 / vkl_fp8_e5m2_from_f32: round
 *     to nearest even, finite values beyond max and +-inf saturate to +-max
 *     (448 / 57344), NaN gives the NaN code 0x7F | sign;
 *   int8 (group = D): each row x[b, h, s, :] of D values is one Q_INT8 block
 *     made by vkl_kv_quantize_keys: d = max|x| / 127.0f, q = clamp(roundf(x /
 *     d), -127, 127) in f32 (d = 0, q = 0 for an all-zero row); a row with a
 *     NaN or inf is VKL_ERR_INVALID_ARGUMENT, checked before anything is
 *     written. Each row is quantized alone: older rows never change. */
const vkl_op_info vkl_op_info_kv_append = {"KvAppend", "vkllm", 3, 3, 1, 1, false, 0, NULL, 0, infer_kv_append};
