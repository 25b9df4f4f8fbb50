/* Table entries and shape rules for reductions and scans: ReduceMean,
 * ReduceSum, ReduceMax (opset 18 form: axes is an input), ArgMax, CumSum,
 * TopK. ReduceSum and ReduceMax also propagate known integer values. */
#include "nn_util.h"
#include "op_defs.h"

/* Floats and the integers that fit int64 (the kernels order and sum in int64). */
static bool is_numeric(vkl_dtype t) {
    return (vkl_dtype_is_int(t) && t != VKL_DTYPE_U64) || t == VKL_DTYPE_F32 || t == VKL_DTYPE_F16 ||
           t == VKL_DTYPE_BF16 || t == VKL_DTYPE_F64;
}

static vkl_status need_numeric(vkl_graph *g, uint32_t node, const vkl_tensor *t, const char *what) {
    if (is_numeric(t->dtype)) return VKL_OK;
    return vkl_fail(g->ctx, VKL_ERR_UNSUPPORTED, "%s: %s has dtype %s; a number type expected",
                    vkl_nn_op_name(g, node), what, vkl_dtype_name(t->dtype));
}

static vkl_status runtime_value(vkl_graph *g, uint32_t node, uint32_t k, const vkl_tensor *t) {
    return vkl_fail(g->ctx, VKL_ERR_UNSUPPORTED, "%s: output shape depends on the run-time value of input %u (%s)",
                    vkl_nn_op_name(g, node), k, t->name);
}

/* The reduced dims of a ReduceXxx node, from its axes input (a constant or
 * a known symbolic value) and noop_with_empty_axes. */
static vkl_status reduce_axes(vkl_graph *g, uint32_t node, uint32_t rank, bool *mask) {
    const vkl_tensor *axes_t = vkl_node_in(g, node, 1);
    int64_t noop, axes[VKL_MAX_VALUE_ELEMS];
    uint32_t n = 0;
    vkl_status st = vkl_op_attr_int(g, node, "noop_with_empty_axes", &noop);
    if (st) return st;
    if (axes_t) {
        if (!vkl_dtype_is_int(axes_t->dtype) || axes_t->shape.rank != 1)
            return vkl_fail(g->ctx, VKL_ERR_SHAPE, "%s: axes must be a 1-D integer tensor", vkl_nn_op_name(g, node));
        if (!vkl_tensor_const_ints(g, axes_t, axes, VKL_MAX_VALUE_ELEMS, &n)) return runtime_value(g, node, 1, axes_t);
    }
    return vkl_nn_reduce_mask(g->ctx, vkl_nn_op_name(g, node), axes, n, rank, noop != 0, mask);
}

/* Reduced dims become 1 (keepdims) or disappear. */
static vkl_status reduced_shape(vkl_graph *g, const vkl_shape *in, const bool *mask, bool keepdims, vkl_shape *out) {
    vkl_expr one;
    vkl_status st = vkl_expr_const(g->syms, 1, &one);
    out->rank = 0;
    for (uint32_t d = 0; !st && d < in->rank; d++) {
        if (!mask[d]) out->dims[out->rank++] = in->dims[d];
        else if (keepdims) out->dims[out->rank++] = one;
    }
    return st;
}

/* Known integer value of ReduceSum / ReduceMax: combine each input element
 * into its output element. Left unknown where a max has no elements. */
static vkl_status reduce_value(vkl_graph *g, uint32_t node, const vkl_tensor *x, const bool *mask, bool is_max) {
    vkl_expr in[VKL_MAX_VALUE_ELEMS], out[VKL_MAX_VALUE_ELEMS];
    bool seen[VKL_MAX_VALUE_ELEMS] = {false};
    int64_t dims[VKL_MAX_RANK], n_out = 1;
    uint32_t n;
    if (!vkl_dtype_is_int(x->dtype) || !vkl_tensor_value(g, x, in, VKL_MAX_VALUE_ELEMS, &n)) return VKL_OK;
    for (uint32_t d = 0; d < x->shape.rank; d++) {
        if (!vkl_expr_is_const(g->syms, x->shape.dims[d], &dims[d])) return VKL_OK;
        if (!mask[d]) n_out *= dims[d];
    }
    if (n_out > VKL_MAX_VALUE_ELEMS) return VKL_OK;
    vkl_status st = VKL_OK;
    for (uint32_t i = 0; !st && i < n; i++) {
        int64_t rest = i, o = 0, stride = 1;
        for (int32_t d = (int32_t)x->shape.rank - 1; d >= 0; d--) {
            int64_t idx = rest % dims[d];
            rest /= dims[d];
            if (mask[d]) continue;
            o += idx * stride;
            stride *= dims[d];
        }
        if (!seen[o]) out[o] = in[i];
        else if (is_max) st = vkl_expr_max(g->syms, out[o], in[i], &out[o]);
        else st = vkl_expr_add(g->syms, out[o], in[i], &out[o]);
        seen[o] = true;
    }
    for (int64_t o = 0; !st && o < n_out; o++) {
        if (seen[o]) continue;
        if (is_max) return VKL_OK;
        st = vkl_expr_const(g->syms, 0, &out[o]);
    }
    if (!st) st = vkl_node_set_value(g, node, 0, out, (uint32_t)n_out);
    return st;
}

/* ReduceMean/Sum/Max-18: (data, axes?) -> reduced, data's dtype. */
static vkl_status infer_reduce(vkl_graph *g, uint32_t node) {
    const vkl_tensor *x;
    int64_t keepdims;
    bool mask[VKL_MAX_RANK];
    vkl_shape out;
    vkl_op op = (vkl_op)g->nodes[node].op;
    vkl_status st = vkl_nn_inputs(g, node, 1, &x);
    if (!st && !(op == VKL_OP_REDUCE_MAX && x->dtype == VKL_DTYPE_BOOL)) st = need_numeric(g, node, x, "data");
    if (!st) st = vkl_op_attr_int(g, node, "keepdims", &keepdims);
    if (!st) st = reduce_axes(g, node, x->shape.rank, mask);
    if (!st) st = reduced_shape(g, &x->shape, mask, keepdims != 0, &out);
    if (!st) st = vkl_node_set_out(g, node, 0, x->dtype, &out);
    if (!st && op != VKL_OP_REDUCE_MEAN) st = reduce_value(g, node, x, mask, op == VKL_OP_REDUCE_MAX);
    return st;
}

static const vkl_attr_schema reduce_attrs[] = {
    {"keepdims", VKL_ATTR_INT, false, 1, 0, NULL},
    {"noop_with_empty_axes", VKL_ATTR_INT, false, 0, 0, NULL},
};

const vkl_op_info vkl_op_info_reduce_mean = {"ReduceMean", "", 1, 2, 1, 1, false, -1, reduce_attrs, 2, infer_reduce};
const vkl_op_info vkl_op_info_reduce_sum = {"ReduceSum", "", 1, 2, 1, 1, false, -1, reduce_attrs, 2, infer_reduce};
const vkl_op_info vkl_op_info_reduce_max = {"ReduceMax", "", 1, 2, 1, 1, false, -1, reduce_attrs, 2, infer_reduce};

/* ArgMax-13: index (i64) of the max along axis; that dim becomes 1 or goes. */
static vkl_status infer_arg_max(vkl_graph *g, uint32_t node) {
    const vkl_tensor *x;
    int64_t keepdims, n;
    bool mask[VKL_MAX_RANK] = {false};
    uint32_t ax;
    vkl_shape out;
    vkl_status st = vkl_nn_inputs(g, node, 1, &x);
    if (!st) st = need_numeric(g, node, x, "data");
    if (!st) st = vkl_op_attr_int(g, node, "keepdims", &keepdims);
    if (!st) st = vkl_nn_axis(g, node, x, &ax);
    if (st) return st;
    if (vkl_expr_is_const(g->syms, x->shape.dims[ax], &n) && n == 0)
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "ArgMax: axis %u of the input has no elements", ax);
    mask[ax] = true;
    st = reduced_shape(g, &x->shape, mask, keepdims != 0, &out);
    if (!st) st = vkl_node_set_out(g, node, 0, VKL_DTYPE_I64, &out);
    return st;
}

static const vkl_attr_schema arg_max_attrs[] = {
    {"axis", VKL_ATTR_INT, false, 0, 0, NULL},
    {"keepdims", VKL_ATTR_INT, false, 1, 0, NULL},
    {"select_last_index", VKL_ATTR_INT, false, 0, 0, NULL},
};

const vkl_op_info vkl_op_info_arg_max = {"ArgMax", "", 1, 1, 1, 1, false, -1, arg_max_attrs, 3, infer_arg_max};

/* A scalar integer input (CumSum axis, TopK k): rank 0 or one element. */
static vkl_status need_int_scalar(vkl_graph *g, uint32_t node, const vkl_tensor *t, const char *what) {
    int64_t n;
    bool one = t->shape.rank == 0 ||
               (t->shape.rank == 1 && vkl_expr_is_const(g->syms, t->shape.dims[0], &n) && n == 1);
    if (vkl_dtype_is_int(t->dtype) && one) return VKL_OK;
    char s[160];
    return vkl_fail(g->ctx, VKL_ERR_SHAPE, "%s: %s must be one integer; it is %s %s", vkl_nn_op_name(g, node), what,
                    vkl_dtype_name(t->dtype), vkl_shape_str(g, &t->shape, s, sizeof(s)));
}

/* CumSum-14: (x, axis) -> x's shape and dtype. The axis is read at run time;
 * checked here when known. */
static vkl_status infer_cum_sum(vkl_graph *g, uint32_t node) {
    const vkl_tensor *in[2];
    int64_t axis;
    uint32_t n, ax;
    vkl_status st = vkl_nn_inputs(g, node, 2, in);
    if (st) return st;
    const vkl_tensor *x = in[0], *axis_t = in[1];
    st = need_numeric(g, node, x, "x");
    if (!st) st = need_int_scalar(g, node, axis_t, "axis");
    if (!st && vkl_tensor_const_ints(g, axis_t, &axis, 1, &n)) st = vkl_axis_norm(g, axis, x->shape.rank, false, &ax);
    if (!st) st = vkl_node_set_out(g, node, 0, x->dtype, &x->shape);
    return st;
}

static const vkl_attr_schema cum_sum_attrs[] = {
    {"exclusive", VKL_ATTR_INT, false, 0, 0, NULL},
    {"reverse", VKL_ATTR_INT, false, 0, 0, NULL},
};

const vkl_op_info vkl_op_info_cum_sum = {"CumSum", "", 2, 2, 1, 1, false, -1, cum_sum_attrs, 2, infer_cum_sum};

/* TopK-11: (X, K) -> Values (X's dtype), Indices (i64), both X's shape with
 * dim axis = K. K may be a symbolic value (min(seq, 50)). */
static vkl_status infer_top_k(vkl_graph *g, uint32_t node) {
    const vkl_tensor *in[2];
    int64_t kc;
    uint32_t ax, n;
    vkl_expr k;
    vkl_status st = vkl_nn_inputs(g, node, 2, in);
    if (st) return st;
    const vkl_tensor *x = in[0], *k_t = in[1];
    st = need_numeric(g, node, x, "X");
    if (!st) st = need_int_scalar(g, node, k_t, "K");
    if (!st) st = vkl_nn_axis(g, node, x, &ax);
    if (st) return st;
    if (!vkl_tensor_value(g, k_t, &k, 1, &n) || n != 1) return runtime_value(g, node, 1, k_t);
    vkl_sym_order o = vkl_expr_compare(g->syms, k, x->shape.dims[ax]);
    if ((vkl_expr_is_const(g->syms, k, &kc) && kc < 0) || o == VKL_SYM_GT) {
        char ks[64], s[160];
        vkl_expr_print(g->syms, k, ks, sizeof(ks));
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "TopK: K = %s is not in [0, dim %u] of X %s", ks, ax,
                        vkl_shape_str(g, &x->shape, s, sizeof(s)));
    }
    vkl_shape out = x->shape;
    out.dims[ax] = k;
    st = vkl_node_set_out(g, node, 0, x->dtype, &out);
    if (!st) st = vkl_node_set_out(g, node, 1, VKL_DTYPE_I64, &out);
    return st;
}

static const vkl_attr_schema top_k_attrs[] = {
    {"axis", VKL_ATTR_INT, false, -1, 0, NULL},
    {"largest", VKL_ATTR_INT, false, 1, 0, NULL},
    {"sorted", VKL_ATTR_INT, false, 1, 0, NULL},
};

const vkl_op_info vkl_op_info_top_k = {"TopK", "", 2, 2, 1, 2, false, -1, top_k_attrs, 3, infer_top_k};
