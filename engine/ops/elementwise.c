/* Shared pieces of the elementwise shape rules: dtype checks, broadcasting of
 * several inputs, and broadcasting of known values (shape arithmetic). */
#include "elementwise.h"

static const char *op_name(const vkl_graph *g, uint32_t node) {
    const vkl_op_info *info = vkl_op_info_get((vkl_op)g->nodes[node].op);
    return info ? info->name : "?";
}

bool vkl_ew_dtype_in(vkl_dtype t, unsigned set) {
    switch (t) {
    case VKL_DTYPE_F32: case VKL_DTYPE_F16: case VKL_DTYPE_BF16: case VKL_DTYPE_F64:
        return set & VKL_EW_FLOAT;
    case VKL_DTYPE_I8: case VKL_DTYPE_I16: case VKL_DTYPE_I32: case VKL_DTYPE_I64:
        return set & VKL_EW_SINT;
    case VKL_DTYPE_U8: case VKL_DTYPE_U16: case VKL_DTYPE_U32: case VKL_DTYPE_U64:
        return set & VKL_EW_UINT;
    case VKL_DTYPE_BOOL:
        return set & VKL_EW_BOOL;
    case VKL_DTYPE_FP8_E4M3: case VKL_DTYPE_FP8_E5M2:
        return set & VKL_EW_FP8;
    default:
        return false;
    }
}

vkl_status vkl_ew_input(vkl_graph *g, uint32_t node, uint32_t k, unsigned set, const vkl_tensor **out) {
    vkl_status st = vkl_node_require(g, node, k, out);
    if (st) return st;
    if (!vkl_ew_dtype_in((*out)->dtype, set))
        return vkl_fail(g->ctx, VKL_ERR_UNSUPPORTED, "%s does not support dtype %s (input %u '%s')", op_name(g, node),
                        vkl_dtype_name((*out)->dtype), k, (*out)->name);
    return VKL_OK;
}

vkl_status vkl_ew_same_dtype(vkl_graph *g, uint32_t node, const vkl_tensor *first, const vkl_tensor *t, uint32_t k) {
    if (t->dtype == first->dtype) return VKL_OK;
    return vkl_fail(g->ctx, VKL_ERR_SHAPE, "%s: input %u '%s' is %s but input 0 '%s' is %s; they must match",
                    op_name(g, node), k, t->name, vkl_dtype_name(t->dtype), first->name, vkl_dtype_name(first->dtype));
}

vkl_status vkl_ew_broadcast(vkl_graph *g, uint32_t node, uint32_t from, uint32_t count, vkl_shape *out) {
    const vkl_tensor *t;
    vkl_status st = vkl_node_require(g, node, from, &t);
    if (st) return st;
    vkl_shape s = t->shape;
    for (uint32_t k = from + 1; k < from + count; k++) {
        if ((st = vkl_node_require(g, node, k, &t))) return st;
        if ((st = vkl_shape_broadcast(g, &s, &t->shape, &s)))
            return vkl_fail_prefix(g->ctx, st, "%s: input %u '%s'", op_name(g, node), k, t->name);
    }
    *out = s;
    return VKL_OK;
}

bool vkl_ew_value_slots(vkl_graph *g, vkl_dtype dtype, const vkl_shape *shape, uint32_t *count) {
    int64_t n;
    if (!vkl_dtype_is_int(dtype) && dtype != VKL_DTYPE_BOOL) return false;
    if (!vkl_shape_const_numel(g, shape, &n) || n > VKL_MAX_VALUE_ELEMS) return false;
    *count = (uint32_t)n;
    return true;
}

/* Constant dims of a shape; false if any dim is symbolic. */
static bool const_dims(vkl_graph *g, const vkl_shape *s, int64_t *dims) {
    for (uint32_t d = 0; d < s->rank; d++)
        if (!vkl_expr_is_const(g->syms, s->dims[d], &dims[d])) return false;
    return true;
}

bool vkl_ew_value_broadcast(vkl_graph *g, const vkl_tensor *t, const vkl_shape *out, vkl_expr *vals) {
    vkl_expr src[VKL_MAX_VALUE_ELEMS];
    int64_t od[VKL_MAX_RANK], sd[VKL_MAX_RANK];
    uint32_t n_src, n_out;
    if (t->shape.rank > out->rank || !const_dims(g, out, od) || !const_dims(g, &t->shape, sd)) return false;
    if (!vkl_ew_value_slots(g, VKL_DTYPE_I64, out, &n_out)) return false;
    if (!vkl_tensor_value(g, t, src, VKL_MAX_VALUE_ELEMS, &n_src)) return false;
    int64_t n_shape;
    if (!vkl_shape_const_numel(g, &t->shape, &n_shape) || n_shape != (int64_t)n_src) return false;
    uint32_t lead = out->rank - t->shape.rank; /* t is right-aligned against out */
    for (uint32_t d = 0; d < t->shape.rank; d++)
        if (sd[d] != 1 && sd[d] != od[lead + d]) return false;
    for (uint32_t i = 0; i < n_out; i++) {
        /* Walk the output index from the last dim; size-1 dims of t repeat. */
        int64_t rest = i, off = 0, stride = 1;
        for (int32_t d = (int32_t)out->rank - 1; d >= 0; d--) {
            int64_t idx = rest % od[d];
            rest /= od[d];
            int32_t s = d - (int32_t)lead;
            if (s < 0) continue;
            if (sd[s] != 1) off += idx * stride;
            stride *= sd[s];
        }
        vals[i] = src[off];
    }
    return true;
}

vkl_status vkl_ew_value_status(vkl_status st) {
    return st == VKL_ERR_OUT_OF_MEMORY ? st : VKL_OK;
}
