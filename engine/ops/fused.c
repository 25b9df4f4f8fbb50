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
    if (!st) st = vkl_nn_need_float(g, node, k, "K");
    if (!st) st = vkl_nn_need_float(g, node, v, "V");
    if (!st) st = vkl_nn_need_rank(g, node, q, 4, false, "Q");
    if (!st) st = vkl_nn_need_rank(g, node, k, 4, false, "K");
    if (!st) st = vkl_nn_need_rank(g, node, v, 4, false, "V");
    if (!st) st = vkl_op_attr_int(g, node, "kv_layout", &layout);
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
    st = vkl_nn_need_float(g, node, state, "state");
    if (!st) st = vkl_nn_need_float(g, node, x, "x");
    if (!st) st = vkl_nn_need_rank(g, node, state, 4, false, "state");
    if (!st) st = vkl_nn_need_rank(g, node, x, 4, false, "x");
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
    return st;
}

/* KvAppend (domain vkllm): inputs state [T, B, H, D], x [B, H, S, D],
 * position_ids [B, S] (i64 or i32). Output 0 IS the state, updated in place
 * (inplace_input 0):
 *   out[pos[b, s], b, h, :] = x[b, h, s, :]   (cast to the state's dtype)
 * other rows untouched. A position outside [0, T) is an error. */
const vkl_op_info vkl_op_info_kv_append = {"KvAppend", "vkllm", 3, 3, 1, 1, false, 0, NULL, 0, infer_kv_append};
