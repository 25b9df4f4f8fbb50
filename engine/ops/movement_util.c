/* Helpers shared by the data-movement, indexing and generator shape rules:
 * value-dependent inputs, axis lists and symbolic value propagation. */
#include <string.h>

#include "movement_util.h"

const char *vkl_mv_op_name(const vkl_graph *g, uint32_t node) {
    const vkl_op_info *info = vkl_op_info_get((vkl_op)g->nodes[node].op);
    return info ? info->name : "?";
}

vkl_status vkl_mv_check_int_input(vkl_graph *g, uint32_t node, uint32_t k, const char *what, uint32_t rank) {
    const vkl_tensor *t;
    vkl_status st = vkl_node_require(g, node, k, &t);
    if (st) return st;
    const char *op = vkl_mv_op_name(g, node);
    if (!vkl_dtype_is_int(t->dtype))
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "%s: input %u (%s) must be an integer tensor, not %s", op, k, what,
                        vkl_dtype_name(t->dtype));
    int64_t n;
    bool one_elem = t->shape.rank == 1 && vkl_shape_const_numel(g, &t->shape, &n) && n == 1;
    if (t->shape.rank != rank && !(rank == 0 && one_elem)) {
        char s[128];
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "%s: input %u (%s) must have rank %u; its shape is %s", op, k, what,
                        rank, vkl_shape_str(g, &t->shape, s, sizeof(s)));
    }
    return VKL_OK;
}

vkl_status vkl_mv_input_value(vkl_graph *g, uint32_t node, uint32_t k, const char *what, vkl_expr *out,
                              uint32_t cap, uint32_t *count) {
    const vkl_tensor *t = vkl_node_in(g, node, k);
    if (t && vkl_tensor_value(g, t, out, cap, count)) return VKL_OK;
    return vkl_fail(g->ctx, VKL_ERR_UNSUPPORTED, "%s: output shape depends on the run-time value of input %u (%s '%s')",
                    vkl_mv_op_name(g, node), k, what, t ? t->name : "absent");
}

vkl_status vkl_mv_input_ints(vkl_graph *g, uint32_t node, uint32_t k, const char *what, int64_t *out,
                             uint32_t cap, uint32_t *count) {
    vkl_expr v[VKL_MAX_VALUE_ELEMS];
    if (cap > VKL_MAX_VALUE_ELEMS) cap = VKL_MAX_VALUE_ELEMS;
    vkl_status st = vkl_mv_input_value(g, node, k, what, v, cap, count);
    for (uint32_t i = 0; !st && i < *count; i++) {
        if (vkl_expr_is_const(g->syms, v[i], &out[i])) continue;
        char buf[128];
        vkl_expr_print(g->syms, v[i], buf, sizeof(buf));
        st = vkl_fail(g->ctx, VKL_ERR_UNSUPPORTED, "%s: input %u (%s) element %u is %s; it must be a constant",
                      vkl_mv_op_name(g, node), k, what, i, buf);
    }
    return st;
}

vkl_status vkl_mv_axes(vkl_graph *g, uint32_t node, const char *what, const int64_t *axes, uint32_t n,
                       uint32_t rank, uint32_t *norm, uint32_t *mask) {
    *mask = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (axes[i] < -(int64_t)rank || axes[i] >= (int64_t)rank)
            return vkl_fail(g->ctx, VKL_ERR_SHAPE, "%s: %s[%u] = %lld is out of range for rank %u",
                            vkl_mv_op_name(g, node), what, i, (long long)axes[i], rank);
        uint32_t a = (uint32_t)(axes[i] < 0 ? axes[i] + (int64_t)rank : axes[i]);
        if (*mask & (1u << a))
            return vkl_fail(g->ctx, VKL_ERR_SHAPE, "%s: %s names axis %u twice", vkl_mv_op_name(g, node), what, a);
        *mask |= 1u << a;
        if (norm) norm[i] = a;
    }
    return VKL_OK;
}

bool vkl_mv_const_dims(const vkl_graph *g, const vkl_shape *s, int64_t *dims) {
    for (uint32_t d = 0; d < s->rank; d++)
        if (!vkl_expr_is_const(g->syms, s->dims[d], &dims[d]) || dims[d] < 0) return false;
    return true;
}

vkl_status vkl_mv_const(vkl_graph *g, int64_t v, vkl_expr *out) {
    return vkl_expr_const(g->syms, v, out);
}

vkl_status vkl_mv_shape_from_exprs(vkl_graph *g, const vkl_expr *dims, uint32_t rank, vkl_shape *out) {
    if (rank > VKL_MAX_RANK)
        return vkl_fail(g->ctx, VKL_ERR_UNSUPPORTED, "output would have rank %u; at most %d", rank, VKL_MAX_RANK);
    out->rank = rank;
    for (uint32_t d = 0; d < rank; d++) out->dims[d] = dims[d];
    return VKL_OK;
}

bool vkl_mv_value_dtype(vkl_dtype t) {
    return vkl_dtype_is_int(t);
}

bool vkl_mv_known_value(vkl_graph *g, const vkl_tensor *t, vkl_expr *val, uint32_t *count, int64_t *dims) {
    int64_t tmp[VKL_MAX_RANK], n;
    if (!t || !vkl_mv_value_dtype(t->dtype) || !vkl_mv_const_dims(g, &t->shape, dims ? dims : tmp)) return false;
    if (!vkl_shape_const_numel(g, &t->shape, &n) || n > VKL_MAX_VALUE_ELEMS) return false;
    return vkl_tensor_value(g, t, val, VKL_MAX_VALUE_ELEMS, count) && *count == (uint32_t)n;
}

vkl_status vkl_mv_set_value(vkl_graph *g, uint32_t node, uint32_t k, const vkl_expr *val, uint32_t count) {
    const vkl_tensor *t = vkl_node_out(g, node, k);
    int64_t n;
    if (!t || !vkl_mv_value_dtype(t->dtype) || count > VKL_MAX_VALUE_ELEMS) return VKL_OK;
    if (!vkl_shape_const_numel(g, &t->shape, &n) || n != (int64_t)count) return VKL_OK;
    return vkl_node_set_value(g, node, k, val, count);
}

vkl_status vkl_mv_pass_value(vkl_graph *g, uint32_t node) {
    vkl_expr v[VKL_MAX_VALUE_ELEMS];
    uint32_t n;
    if (!vkl_mv_known_value(g, vkl_node_in(g, node, 0), v, &n, NULL)) return VKL_OK;
    return vkl_mv_set_value(g, node, 0, v, n);
}

void vkl_mv_view(const vkl_expr *src, int64_t offset, uint32_t rank, const int64_t *dims, const int64_t *strides,
                 vkl_expr *out) {
    int64_t idx[2 * VKL_MAX_RANK] = {0}, total = 1;
    for (uint32_t d = 0; d < rank; d++) total *= dims[d];
    for (int64_t i = 0; i < total; i++) {
        int64_t off = offset;
        for (uint32_t d = 0; d < rank; d++) off += idx[d] * strides[d];
        out[i] = src[off];
        /* odometer: advance the row-major multi-index */
        for (int32_t d = (int32_t)rank - 1; d >= 0 && ++idx[d] == dims[d]; d--) idx[d] = 0;
    }
}

void vkl_mv_strides(const int64_t *dims, uint32_t rank, int64_t *strides) {
    int64_t s = 1;
    for (int32_t d = (int32_t)rank - 1; d >= 0; d--) {
        strides[d] = s;
        s *= dims[d];
    }
}

static int64_t clamp_i64(int64_t x, int64_t lo, int64_t hi) {
    return x < lo ? lo : x > hi ? hi : x;
}

void vkl_mv_slice_range(int64_t d, int64_t start, int64_t end, int64_t step, int64_t *first, int64_t *len) {
    if (start < 0) start += d;
    if (end < 0) end += d;
    *first = 0;
    *len = 0;
    if (d == 0) return;
    if (step > 0) {
        start = clamp_i64(start, 0, d);
        end = clamp_i64(end, 0, d);
        if (end > start) *len = (end - start - 1) / step + 1;
    } else {
        start = clamp_i64(start, 0, d - 1);
        end = clamp_i64(end, -1, d - 1);
        /* -step may overflow for INT64_MIN; (start - end - 1) / step <= 0 avoids it */
        if (start > end) *len = 1 - (start - end - 1) / step;
    }
    *first = start;
}
