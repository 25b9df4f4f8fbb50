/* Shape-rule helpers shared by the nn family: dtype/rank checks, symbolic
 * dim agreement, unidirectional broadcasting, reduce-axes sets. */
#include "nn_util.h"

vkl_status vkl_nn_inputs(vkl_graph *g, uint32_t node, uint32_t n, const vkl_tensor **t) {
    vkl_status st = VKL_OK;
    for (uint32_t k = 0; !st && k < n; k++) st = vkl_node_require(g, node, k, &t[k]);
    return st;
}

vkl_status vkl_nn_axis(vkl_graph *g, uint32_t node, const vkl_tensor *x, uint32_t *axis) {
    int64_t a;
    vkl_status st = vkl_op_attr_int(g, node, "axis", &a);
    if (!st) st = vkl_axis_norm(g, a, x->shape.rank, false, axis);
    return st;
}

const char *vkl_nn_op_name(const vkl_graph *g, uint32_t node) {
    const vkl_op_info *info = vkl_op_info_get((vkl_op)g->nodes[node].op);
    return info ? info->name : "?";
}

vkl_status vkl_nn_need_float(vkl_graph *g, uint32_t node, const vkl_tensor *t, const char *what) {
    switch (t->dtype) {
    case VKL_DTYPE_F32: case VKL_DTYPE_F16: case VKL_DTYPE_BF16: case VKL_DTYPE_F64: return VKL_OK;
    default:
        return vkl_fail(g->ctx, VKL_ERR_UNSUPPORTED, "%s: %s has dtype %s; f32, f16, bf16 or f64 expected",
                        vkl_nn_op_name(g, node), what, vkl_dtype_name(t->dtype));
    }
}

vkl_status vkl_nn_same_dtype(vkl_graph *g, uint32_t node, const vkl_tensor *a, const vkl_tensor *b, const char *what) {
    if (a->dtype == b->dtype) return VKL_OK;
    return vkl_fail(g->ctx, VKL_ERR_SHAPE, "%s: %s have different dtypes (%s vs %s)", vkl_nn_op_name(g, node), what,
                    vkl_dtype_name(a->dtype), vkl_dtype_name(b->dtype));
}

vkl_status vkl_nn_need_rank(vkl_graph *g, uint32_t node, const vkl_tensor *t, uint32_t rank, bool at_least,
                            const char *what) {
    if (t->shape.rank == rank || (at_least && t->shape.rank > rank)) return VKL_OK;
    char s[160];
    return vkl_fail(g->ctx, VKL_ERR_SHAPE, "%s: %s has shape %s; rank %s%u expected", vkl_nn_op_name(g, node), what,
                    vkl_shape_str(g, &t->shape, s, sizeof(s)), at_least ? ">= " : "", rank);
}

vkl_status vkl_nn_dims_agree(vkl_graph *g, uint32_t node, vkl_expr a, vkl_expr b, const char *what) {
    vkl_sym_order o = vkl_expr_compare(g->syms, a, b);
    if (o != VKL_SYM_LT && o != VKL_SYM_GT) return VKL_OK;
    char sa[96], sb[96];
    vkl_expr_print(g->syms, a, sa, sizeof(sa));
    vkl_expr_print(g->syms, b, sb, sizeof(sb));
    return vkl_fail(g->ctx, VKL_ERR_SHAPE, "%s: %s differ (%s vs %s)", vkl_nn_op_name(g, node), what, sa, sb);
}

vkl_status vkl_nn_broadcast_to(vkl_graph *g, uint32_t node, const vkl_shape *src, const vkl_shape *dst,
                               const char *what) {
    char ss[160], ds[160];
    bool ok = src->rank <= dst->rank;
    for (uint32_t i = 0; ok && i < src->rank; i++) {
        vkl_expr d = src->dims[i], t = dst->dims[dst->rank - src->rank + i];
        int64_t c;
        if (vkl_expr_is_const(g->syms, d, &c) && c == 1) continue;
        vkl_sym_order o = vkl_expr_compare(g->syms, d, t);
        ok = o != VKL_SYM_LT && o != VKL_SYM_GT;
    }
    if (ok) return VKL_OK;
    return vkl_fail(g->ctx, VKL_ERR_SHAPE, "%s: %s of shape %s does not broadcast to %s", vkl_nn_op_name(g, node),
                    what, vkl_shape_str(g, src, ss, sizeof(ss)), vkl_shape_str(g, dst, ds, sizeof(ds)));
}

vkl_shape vkl_nn_shape_tail(const vkl_shape *s, uint32_t from) {
    vkl_shape r = {0};
    for (uint32_t d = from; d < s->rank; d++) r.dims[r.rank++] = s->dims[d];
    return r;
}

vkl_status vkl_nn_reduce_mask(vkl_context *ctx, const char *op, const int64_t *axes, uint32_t n_axes, uint32_t rank,
                              bool noop_with_empty_axes, bool *mask) {
    for (uint32_t d = 0; d < rank; d++) mask[d] = n_axes == 0 && !noop_with_empty_axes;
    for (uint32_t k = 0; k < n_axes; k++) {
        int64_t ax = axes[k];
        if (ax < -(int64_t)rank || ax >= (int64_t)rank)
            return vkl_fail(ctx, VKL_ERR_SHAPE, "%s: axis %lld out of range for rank %u", op, (long long)ax, rank);
        uint32_t d = (uint32_t)(ax < 0 ? ax + (int64_t)rank : ax);
        if (mask[d])
            return vkl_fail(ctx, VKL_ERR_SHAPE, "%s: axis %lld is repeated in axes", op, (long long)ax);
        mask[d] = true;
    }
    return VKL_OK;
}
