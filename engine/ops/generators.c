/* Shape rules and table entries of the shape sources (Shape, Size) and the
 * generators (Constant, ConstantOfShape, Range). Shape and Size always carry
 * their value: the seeds of symbolic value propagation. */
#include <math.h>

#include "movement_util.h"
#include "op_defs.h"

/* ---- Shape / Size -------------------------------------------------------- */

/* Shape-15: dims[start:end], both clamped into [0, rank] after adding rank
 * to negatives; an absent end is INT64_MAX (clamps to rank). */
static vkl_status shape_infer(vkl_graph *g, uint32_t node) {
    const vkl_tensor *in;
    int64_t start, end;
    vkl_status st = vkl_node_require(g, node, 0, &in);
    if (!st) st = vkl_op_attr_int(g, node, "start", &start);
    if (!st) st = vkl_op_attr_int(g, node, "end", &end);
    if (st) return st;
    int64_t r = in->shape.rank;
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = start < 0 ? 0 : start > r ? r : start;
    end = end < 0 ? 0 : end > r ? r : end;
    int64_t n = end > start ? end - start : 0;
    int64_t dims[1] = {n};
    vkl_shape out;
    if ((st = vkl_shape_from_ints(g, dims, 1, &out))) return st;
    if ((st = vkl_node_set_out(g, node, 0, VKL_DTYPE_I64, &out))) return st;
    return vkl_node_set_value(g, node, 0, in->shape.dims + start, (uint32_t)n);
}

static const vkl_attr_schema shape_attrs[] = {
    {"end", VKL_ATTR_INT, false, INT64_MAX, 0, NULL},
    {"start", VKL_ATTR_INT, false, 0, 0, NULL},
};
const vkl_op_info vkl_op_info_shape = {"Shape", "", 1, 1, 1, 1, true, -1, shape_attrs, 2, shape_infer};

static vkl_status size_infer(vkl_graph *g, uint32_t node) {
    const vkl_tensor *in;
    vkl_expr n;
    vkl_shape scalar = {.rank = 0};
    vkl_status st = vkl_node_require(g, node, 0, &in);
    if (!st) st = vkl_shape_numel(g, &in->shape, 0, in->shape.rank, &n);
    if (!st) st = vkl_node_set_out(g, node, 0, VKL_DTYPE_I64, &scalar);
    return st ? st : vkl_node_set_value(g, node, 0, &n, 1);
}

const vkl_op_info vkl_op_info_size = {"Size", "", 1, 1, 1, 1, true, -1, NULL, 0, size_infer};

/* ---- Constant / ConstantOfShape ------------------------------------------ */

/* The weight a TENSOR attribute names, or NULL when absent. */
static vkl_status tensor_attr(vkl_graph *g, uint32_t node, const vkl_tensor **out) {
    const vkl_attr *a = vkl_node_attr(&g->nodes[node], "value");
    *out = NULL;
    if (!a) return VKL_OK;
    if (a->kind != VKL_ATTR_TENSOR || a->i < 0 || a->i >= (int64_t)g->n_tensors ||
        g->tensors[a->i].kind != VKL_TENSOR_WEIGHT || !g->tensors[a->i].data)
        return vkl_fail(g->ctx, VKL_ERR_FORMAT, "%s: attribute value must name a weight tensor with data",
                        vkl_mv_op_name(g, node));
    *out = &g->tensors[a->i];
    return VKL_OK;
}

static vkl_status constant_infer(vkl_graph *g, uint32_t node) {
    const vkl_tensor *w;
    vkl_status st = tensor_attr(g, node, &w);
    if (st) return st;
    if (!w) return vkl_fail(g->ctx, VKL_ERR_FORMAT, "Constant: attribute value is missing");
    if ((st = vkl_node_set_out(g, node, 0, w->dtype, &w->shape))) return st;
    vkl_expr v[VKL_MAX_VALUE_ELEMS];
    uint32_t n;
    if (!vkl_mv_known_value(g, w, v, &n, NULL)) return VKL_OK;
    return vkl_mv_set_value(g, node, 0, v, n);
}

static const vkl_attr_schema constant_attrs[] = {{"value", VKL_ATTR_TENSOR, true, 0, 0, NULL}};
const vkl_op_info vkl_op_info_constant = {"Constant", "", 0, 0, 1, 1, false, -1, constant_attrs, 1, constant_infer};

static vkl_status constant_of_shape_infer(vkl_graph *g, uint32_t node) {
    const vkl_tensor *w;
    vkl_expr dims[VKL_MAX_VALUE_ELEMS];
    uint32_t r;
    vkl_status st = tensor_attr(g, node, &w);
    if (!st) st = vkl_mv_check_int_input(g, node, 0, "input", 1);
    if (!st) st = vkl_mv_input_value(g, node, 0, "input", dims, VKL_MAX_VALUE_ELEMS, &r);
    if (st) return st;
    int64_t one;
    if (w && !(vkl_shape_const_numel(g, &w->shape, &one) && one == 1))
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "ConstantOfShape: attribute value must hold one element");
    vkl_shape out;
    if ((st = vkl_mv_shape_from_exprs(g, dims, r, &out))) return vkl_fail_prefix(g->ctx, st, "ConstantOfShape");
    for (uint32_t d = 0; d < r; d++) {
        int64_t c;
        if (vkl_expr_is_const(g->syms, dims[d], &c) && c < 0)
            return vkl_fail(g->ctx, VKL_ERR_SHAPE, "ConstantOfShape: dim %u is %lld", d, (long long)c);
    }
    vkl_dtype dt = w ? w->dtype : VKL_DTYPE_F32;
    if ((st = vkl_node_set_out(g, node, 0, dt, &out))) return st;
    /* value: the fill repeated, when small */
    vkl_expr fill[VKL_MAX_VALUE_ELEMS], v[VKL_MAX_VALUE_ELEMS];
    uint32_t n;
    int64_t count;
    if (!w || !vkl_mv_known_value(g, w, fill, &n, NULL) || !vkl_shape_const_numel(g, &out, &count) ||
        count > VKL_MAX_VALUE_ELEMS)
        return VKL_OK;
    for (int64_t i = 0; i < count; i++) v[i] = fill[0];
    return vkl_mv_set_value(g, node, 0, v, (uint32_t)count);
}

static const vkl_attr_schema constant_of_shape_attrs[] = {{"value", VKL_ATTR_TENSOR, false, 0, 0, NULL}};
const vkl_op_info vkl_op_info_constant_of_shape = {"ConstantOfShape", "", 1, 1, 1, 1, false, -1,
                                                   constant_of_shape_attrs, 1, constant_of_shape_infer};

/* ---- Range --------------------------------------------------------------- */

/* max(ceil((limit - start) / delta), 0) for a constant delta; the max is
 * dropped when the span is provably non-negative. */
static vkl_status range_len_sym(vkl_graph *g, vkl_expr start, vkl_expr limit, int64_t delta, vkl_expr *len) {
    vkl_expr span, zero, bias;
    int64_t a = delta > 0 ? delta : -delta;
    vkl_status st = delta > 0 ? vkl_expr_sub(g->syms, limit, start, &span) : vkl_expr_sub(g->syms, start, limit, &span);
    if (!st) st = vkl_mv_const(g, 0, &zero);
    if (st) return st;
    vkl_sym_order o = vkl_expr_compare(g->syms, span, zero);
    if (o != VKL_SYM_GE && o != VKL_SYM_GT && o != VKL_SYM_EQ && (st = vkl_expr_max(g->syms, span, zero, &span)))
        return st;
    if (a == 1) {
        *len = span;
        return VKL_OK;
    }
    st = vkl_mv_const(g, a - 1, &bias);
    if (!st) st = vkl_expr_add(g->syms, span, bias, &bias);
    return st ? st : vkl_expr_floordiv(g->syms, bias, a, len);
}

/* Float Range: the inputs must be constant weights; computed in the input
 * type like ONNX Runtime (difference in T, division in double). */
static vkl_status range_len_float(vkl_graph *g, uint32_t node, vkl_dtype dt, vkl_expr *len) {
    double v[3];
    for (uint32_t k = 0; k < 3; k++)
        if (!vkl_tensor_const_scalar(vkl_node_in(g, node, k), 0, &v[k]))
            return vkl_fail(g->ctx, VKL_ERR_UNSUPPORTED,
                            "Range: output shape depends on the run-time value of input %u (%s)", k,
                            k == 0 ? "start" : k == 1 ? "limit" : "delta");
    if (v[2] == 0) return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Range: delta is 0");
    double span = dt == VKL_DTYPE_F32 ? (double)((float)v[1] - (float)v[0]) : v[1] - v[0];
    double n = ceil(span / v[2]);
    if (!(n < 4e18)) return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Range: length %g is too large", n);
    return vkl_mv_const(g, n > 0 ? (int64_t)n : 0, len);
}

static vkl_status range_int(vkl_graph *g, uint32_t node, vkl_expr *start, vkl_expr *len, int64_t *delta) {
    static const char *const names[] = {"start", "limit", "delta"};
    vkl_expr v[3];
    uint32_t n;
    for (uint32_t k = 0; k < 3; k++) {
        vkl_status st = vkl_mv_input_value(g, node, k, names[k], &v[k], 1, &n);
        if (st) return st;
    }
    if (!vkl_expr_is_const(g->syms, v[2], delta))
        return vkl_fail(g->ctx, VKL_ERR_UNSUPPORTED, "Range: delta must be a constant");
    if (*delta == 0) return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Range: delta is 0");
    *start = v[0];
    return range_len_sym(g, v[0], v[1], *delta, len);
}

static vkl_status range_infer(vkl_graph *g, uint32_t node) {
    const vkl_tensor *t[3];
    vkl_status st = VKL_OK;
    for (uint32_t k = 0; k < 3 && !st; k++) st = vkl_node_require(g, node, k, &t[k]);
    if (st) return st;
    vkl_dtype dt = t[0]->dtype;
    if (dt != VKL_DTYPE_F32 && dt != VKL_DTYPE_F64 && dt != VKL_DTYPE_I16 && dt != VKL_DTYPE_I32 && dt != VKL_DTYPE_I64)
        return vkl_fail(g->ctx, VKL_ERR_UNSUPPORTED, "Range: dtype %s (f32, f64, i16, i32, i64 only)", vkl_dtype_name(dt));
    for (uint32_t k = 0; k < 3; k++) {
        int64_t n;
        if (t[k]->dtype != dt || !vkl_shape_const_numel(g, &t[k]->shape, &n) || n != 1 || t[k]->shape.rank > 1)
            return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Range: input %u must be a scalar of dtype %s", k, vkl_dtype_name(dt));
    }
    vkl_shape out = {.rank = 1};
    vkl_expr start = VKL_EXPR_INVALID;
    int64_t delta, count;
    if (vkl_dtype_is_float(dt)) {
        st = range_len_float(g, node, dt, &out.dims[0]);
        return st ? st : vkl_node_set_out(g, node, 0, dt, &out);
    }
    if ((st = range_int(g, node, &start, &out.dims[0], &delta))) return st;
    if ((st = vkl_node_set_out(g, node, 0, dt, &out))) return st;
    /* value: start + i * delta */
    vkl_expr v[VKL_MAX_VALUE_ELEMS], step;
    if (!vkl_expr_is_const(g->syms, out.dims[0], &count) || count > VKL_MAX_VALUE_ELEMS) return VKL_OK;
    for (int64_t i = 0; i < count && !st; i++) {
        st = vkl_mv_const(g, i * delta, &step);
        if (!st) st = vkl_expr_add(g->syms, start, step, &v[i]);
    }
    return st ? st : vkl_mv_set_value(g, node, 0, v, (uint32_t)count);
}

const vkl_op_info vkl_op_info_range = {"Range", "", 3, 3, 1, 1, false, -1, NULL, 0, range_infer};
