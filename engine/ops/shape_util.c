/* Helpers shared by the shape rules: input/output access, broadcasting,
 * reading integer values of small tensors. */
#include <string.h>

#include "shape_util.h"

const vkl_tensor *vkl_node_in(const vkl_graph *g, uint32_t node, uint32_t k) {
    const vkl_node *n = &g->nodes[node];
    if (k >= n->n_inputs || n->inputs[k] == VKL_NONE) return NULL;
    return &g->tensors[n->inputs[k]];
}

vkl_tensor *vkl_node_out(vkl_graph *g, uint32_t node, uint32_t k) {
    const vkl_node *n = &g->nodes[node];
    if (k >= n->n_outputs || n->outputs[k] == VKL_NONE) return NULL;
    return &g->tensors[n->outputs[k]];
}

vkl_status vkl_node_set_out(vkl_graph *g, uint32_t node, uint32_t k, vkl_dtype dtype, const vkl_shape *shape) {
    vkl_tensor *t = vkl_node_out(g, node, k);
    if (!t) return VKL_OK;
    if (shape->rank > VKL_MAX_RANK)
        return vkl_fail(g->ctx, VKL_ERR_UNSUPPORTED, "output %u would have rank %u; at most %d", k, shape->rank,
                        VKL_MAX_RANK);
    t->dtype = dtype;
    t->shape = *shape;
    t->value = NULL;
    t->value_count = 0;
    return VKL_OK;
}

vkl_status vkl_node_set_value(vkl_graph *g, uint32_t node, uint32_t k, const vkl_expr *value, uint32_t count) {
    const vkl_node *n = &g->nodes[node];
    if (k >= n->n_outputs || n->outputs[k] == VKL_NONE) return VKL_OK;
    return vkl_graph_set_value(g, n->outputs[k], value, count);
}

vkl_status vkl_node_require(const vkl_graph *g, uint32_t node, uint32_t k, const vkl_tensor **out) {
    *out = vkl_node_in(g, node, k);
    if (*out) return VKL_OK;
    const vkl_op_info *info = vkl_op_info_get((vkl_op)g->nodes[node].op);
    return vkl_fail(g->ctx, VKL_ERR_SHAPE, "input %u of %s is required", k, info ? info->name : "?");
}

static vkl_expr const_expr(vkl_graph *g, int64_t v, vkl_status *st) {
    vkl_expr e = VKL_EXPR_INVALID;
    if (!*st) *st = vkl_expr_const(g->syms, v, &e);
    return e;
}

vkl_status vkl_shape_broadcast(vkl_graph *g, const vkl_shape *a, const vkl_shape *b, vkl_shape *out) {
    vkl_shape r = {0};
    r.rank = a->rank > b->rank ? a->rank : b->rank;
    vkl_status st = VKL_OK;
    vkl_expr one = const_expr(g, 1, &st);
    if (st) return st;
    for (uint32_t i = 0; i < r.rank; i++) {
        /* right-aligned */
        int32_t ia = (int32_t)a->rank - (int32_t)r.rank + (int32_t)i;
        int32_t ib = (int32_t)b->rank - (int32_t)r.rank + (int32_t)i;
        vkl_expr da = ia >= 0 ? a->dims[ia] : one;
        vkl_expr db = ib >= 0 ? b->dims[ib] : one;
        int64_t ca, cb;
        bool ka = vkl_expr_is_const(g->syms, da, &ca), kb = vkl_expr_is_const(g->syms, db, &cb);
        if (da == db || (kb && cb == 1)) {
            r.dims[i] = da;
        } else if (ka && ca == 1) {
            r.dims[i] = db;
        } else if (ka && kb) {
            char sa[128], sb[128];
            return vkl_fail(g->ctx, VKL_ERR_SHAPE, "cannot broadcast %s with %s (dim %u: %lld vs %lld)",
                            vkl_shape_str(g, a, sa, sizeof(sa)), vkl_shape_str(g, b, sb, sizeof(sb)), i,
                            (long long)ca, (long long)cb);
        } else {
            st = vkl_expr_max(g->syms, da, db, &r.dims[i]);
            if (st) return st;
        }
    }
    *out = r;
    return VKL_OK;
}

vkl_status vkl_shape_from_ints(vkl_graph *g, const int64_t *dims, uint32_t rank, vkl_shape *out) {
    if (rank > VKL_MAX_RANK) return vkl_fail(g->ctx, VKL_ERR_UNSUPPORTED, "rank %u > %d", rank, VKL_MAX_RANK);
    out->rank = rank;
    for (uint32_t i = 0; i < rank; i++) {
        vkl_status st = vkl_expr_const(g->syms, dims[i], &out->dims[i]);
        if (st) return st;
    }
    return VKL_OK;
}

vkl_status vkl_shape_numel(vkl_graph *g, const vkl_shape *s, uint32_t from, uint32_t to, vkl_expr *out) {
    vkl_status st = vkl_expr_const(g->syms, 1, out);
    for (uint32_t i = from; !st && i < to && i < s->rank; i++) st = vkl_expr_mul(g->syms, *out, s->dims[i], out);
    return st;
}

bool vkl_shape_equal(const vkl_shape *a, const vkl_shape *b) {
    if (a->rank != b->rank) return false;
    for (uint32_t i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}

bool vkl_shape_const_numel(const vkl_graph *g, const vkl_shape *s, int64_t *count) {
    int64_t n = 1;
    for (uint32_t i = 0; i < s->rank; i++) {
        int64_t d;
        if (!vkl_expr_is_const(g->syms, s->dims[i], &d) || d < 0 || !vkl_mul_i64(n, d, &n)) return false;
    }
    *count = n;
    return true;
}

static bool weight_int(const vkl_tensor *t, int64_t i, int64_t *v) {
    const unsigned char *p = t->data;
    switch (t->dtype) {
    case VKL_DTYPE_I64: { int64_t x; memcpy(&x, p + i * 8, 8); *v = x; return true; }
    case VKL_DTYPE_I32: { int32_t x; memcpy(&x, p + i * 4, 4); *v = x; return true; }
    case VKL_DTYPE_I16: { int16_t x; memcpy(&x, p + i * 2, 2); *v = x; return true; }
    case VKL_DTYPE_I8: *v = (int8_t)p[i]; return true;
    case VKL_DTYPE_U8: case VKL_DTYPE_BOOL: *v = p[i]; return true;
    default: return false;
    }
}

bool vkl_tensor_value(vkl_graph *g, const vkl_tensor *t, vkl_expr *out, uint32_t cap, uint32_t *count) {
    if (t->value) {
        if (t->value_count > cap) return false;
        memcpy(out, t->value, t->value_count * sizeof(vkl_expr));
        *count = t->value_count;
        return true;
    }
    int64_t n;
    if (t->kind != VKL_TENSOR_WEIGHT || !t->data || !vkl_shape_const_numel(g, &t->shape, &n) || n > cap) return false;
    if ((size_t)n * vkl_dtype_size(t->dtype) > t->nbytes) return false;
    for (int64_t i = 0; i < n; i++) {
        int64_t v;
        if (!weight_int(t, i, &v) || vkl_expr_const(g->syms, v, &out[i])) return false;
    }
    *count = (uint32_t)n;
    return true;
}

bool vkl_tensor_const_ints(vkl_graph *g, const vkl_tensor *t, int64_t *out, uint32_t cap, uint32_t *count) {
    vkl_expr tmp[VKL_MAX_VALUE_ELEMS];
    uint32_t n;
    if (cap > VKL_MAX_VALUE_ELEMS) cap = VKL_MAX_VALUE_ELEMS;
    if (!vkl_tensor_value(g, t, tmp, cap, &n)) return false;
    for (uint32_t i = 0; i < n; i++)
        if (!vkl_expr_is_const(g->syms, tmp[i], &out[i])) return false;
    *count = n;
    return true;
}

bool vkl_tensor_const_scalar(const vkl_tensor *t, int64_t i, double *out) {
    if (t->kind != VKL_TENSOR_WEIGHT || !t->data) return false;
    size_t es = vkl_dtype_size(t->dtype);
    if (!es || (size_t)(i + 1) * es > t->nbytes) return false;
    const unsigned char *p = (const unsigned char *)t->data + (size_t)i * es;
    switch (t->dtype) {
    case VKL_DTYPE_F32: { float x; memcpy(&x, p, 4); *out = x; return true; }
    case VKL_DTYPE_F64: { double x; memcpy(&x, p, 8); *out = x; return true; }
    case VKL_DTYPE_F16: { uint16_t x; memcpy(&x, p, 2); *out = vkl_f16_to_f32(x); return true; }
    case VKL_DTYPE_BF16: { uint16_t x; memcpy(&x, p, 2); *out = vkl_bf16_to_f32(x); return true; }
    default: {
        int64_t v;
        if (!weight_int(t, i, &v)) return false;
        *out = (double)v;
        return true;
    }
    }
}

vkl_status vkl_axis_norm(vkl_graph *g, int64_t axis, uint32_t rank, bool inclusive, uint32_t *out) {
    int64_t r = (int64_t)rank + (inclusive ? 1 : 0);
    if (axis < -r || axis >= r)
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "axis %lld out of range for rank %u", (long long)axis, rank);
    *out = (uint32_t)(axis < 0 ? axis + r : axis);
    return VKL_OK;
}
