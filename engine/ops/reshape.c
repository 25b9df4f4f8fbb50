/* Shape rules and table entries of the ops that keep the bytes and change
 * only the shape: Reshape, Squeeze, Unsqueeze, Flatten. Values pass through. */
#include "movement_util.h"
#include "op_defs.h"

/* ---- Reshape ------------------------------------------------------------- */

/* Shape text of a target as given (with its 0 and -1 entries). */
static const char *target_str(vkl_graph *g, const vkl_expr *dims, uint32_t r, char *buf, size_t cap) {
    vkl_shape s = {.rank = r};
    for (uint32_t d = 0; d < r; d++) s.dims[d] = dims[d];
    return vkl_shape_str(g, &s, buf, cap);
}

/* Resolve 0 (copy the input dim unless allowzero) and note the -1 entry;
 * *known gets the product of the other entries. */
static vkl_status reshape_entries(vkl_graph *g, const vkl_tensor *in, const vkl_expr *target, uint32_t r,
                                  bool allowzero, vkl_expr *dims, int32_t *infer, vkl_expr *known) {
    bool zero = false;
    vkl_status st = vkl_mv_const(g, 1, known);
    *infer = -1;
    for (uint32_t i = 0; i < r && !st; i++) {
        int64_t c;
        dims[i] = target[i];
        if (!vkl_expr_is_const(g->syms, target[i], &c) || c > 0) {
            st = vkl_expr_mul(g->syms, *known, dims[i], known);
            continue;
        }
        if (c == -1) {
            if (*infer >= 0)
                return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Reshape: shape has two -1 entries (%d and %u)", *infer, i);
            *infer = (int32_t)i;
            continue;
        }
        if (c < -1) return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Reshape: shape[%u] = %lld is invalid", i, (long long)c);
        zero = true;
        if (!allowzero) {
            if (i >= in->shape.rank)
                return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Reshape: shape[%u] = 0 copies input dim %u, but the input has rank %u",
                                i, i, in->shape.rank);
            dims[i] = in->shape.dims[i];
        }
        st = vkl_expr_mul(g->syms, *known, dims[i], known);
    }
    if (!st && allowzero && zero && *infer >= 0)
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Reshape: with allowzero = 1, shape may not hold both 0 and -1");
    return st;
}

static vkl_status reshape_infer(vkl_graph *g, uint32_t node) {
    const vkl_tensor *in;
    int64_t allowzero;
    vkl_expr target[VKL_MAX_VALUE_ELEMS], dims[VKL_MAX_RANK], numel, known;
    uint32_t r;
    int32_t infer;
    vkl_status st = vkl_node_require(g, node, 0, &in);
    if (!st) st = vkl_op_attr_int(g, node, "allowzero", &allowzero);
    if (!st) st = vkl_mv_check_int_input(g, node, 1, "shape", 1);
    if (!st) st = vkl_mv_input_value(g, node, 1, "shape", target, VKL_MAX_VALUE_ELEMS, &r);
    if (st) return st;
    if (r > VKL_MAX_RANK) return vkl_fail(g->ctx, VKL_ERR_UNSUPPORTED, "Reshape: target rank %u > %d", r, VKL_MAX_RANK);
    if ((st = reshape_entries(g, in, target, r, allowzero != 0, dims, &infer, &known))) return st;
    if ((st = vkl_shape_numel(g, &in->shape, 0, in->shape.rank, &numel))) return st;
    char si[160], so[160], sn[64], sk[64];
    int64_t cn, ck;
    bool kn = vkl_expr_is_const(g->syms, numel, &cn), kk = vkl_expr_is_const(g->syms, known, &ck);
    if (infer >= 0) {
        if (kk && ck == 0)
            return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Reshape: cannot infer the -1 in %s: the other dims hold no elements",
                            target_str(g, target, r, so, sizeof(so)));
        if (vkl_expr_div_exact(g->syms, numel, known, &dims[infer]) != VKL_OK) {
            vkl_expr_print(g->syms, numel, sn, sizeof(sn));
            vkl_expr_print(g->syms, known, sk, sizeof(sk));
            return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Reshape: cannot reshape %s to %s: %s elements are not a multiple of %s",
                            vkl_shape_str(g, &in->shape, si, sizeof(si)), target_str(g, target, r, so, sizeof(so)), sn, sk);
        }
    } else if (kn && kk && cn != ck) {
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Reshape: cannot reshape %s (%lld elements) to %s (%lld elements)",
                        vkl_shape_str(g, &in->shape, si, sizeof(si)), (long long)cn,
                        target_str(g, target, r, so, sizeof(so)), (long long)ck);
    }
    vkl_shape out;
    if (!st) st = vkl_mv_shape_from_exprs(g, dims, r, &out);
    if (!st) st = vkl_node_set_out(g, node, 0, in->dtype, &out);
    return st ? st : vkl_mv_pass_value(g, node);
}

static const vkl_attr_schema reshape_attrs[] = {{"allowzero", VKL_ATTR_INT, false, 0, 0, NULL}};
const vkl_op_info vkl_op_info_reshape = {"Reshape", "", 2, 2, 1, 1, false, -1, reshape_attrs, 1, reshape_infer};

/* ---- Squeeze / Unsqueeze ------------------------------------------------- */

/* Which dims Squeeze removes: the listed axes (each must be 1; a symbolic
 * dim is trusted and checked by the kernel), or every dim provably 1. */
static vkl_status squeeze_mask(vkl_graph *g, uint32_t node, const vkl_tensor *in, uint32_t *mask) {
    int64_t axes[VKL_MAX_VALUE_ELEMS], c;
    uint32_t n;
    *mask = 0;
    if (!vkl_node_in(g, node, 1)) {
        for (uint32_t d = 0; d < in->shape.rank; d++)
            if (vkl_expr_is_const(g->syms, in->shape.dims[d], &c) && c == 1) *mask |= 1u << d;
        return VKL_OK;
    }
    vkl_status st = vkl_mv_check_int_input(g, node, 1, "axes", 1);
    if (!st) st = vkl_mv_input_ints(g, node, 1, "axes", axes, VKL_MAX_VALUE_ELEMS, &n);
    if (!st) st = vkl_mv_axes(g, node, "axes", axes, n, in->shape.rank, NULL, mask);
    for (uint32_t d = 0; !st && d < in->shape.rank; d++) {
        if (!(*mask & (1u << d)) || !vkl_expr_is_const(g->syms, in->shape.dims[d], &c) || c == 1) continue;
        char s[128];
        st = vkl_fail(g->ctx, VKL_ERR_SHAPE, "Squeeze: axis %u of %s has size %lld, not 1", d,
                      vkl_shape_str(g, &in->shape, s, sizeof(s)), (long long)c);
    }
    return st;
}

static vkl_status squeeze_infer(vkl_graph *g, uint32_t node) {
    const vkl_tensor *in;
    uint32_t mask;
    vkl_status st = vkl_node_require(g, node, 0, &in);
    if (!st) st = squeeze_mask(g, node, in, &mask);
    if (st) return st;
    vkl_shape out = {0};
    for (uint32_t d = 0; d < in->shape.rank; d++)
        if (!(mask & (1u << d))) out.dims[out.rank++] = in->shape.dims[d];
    if ((st = vkl_node_set_out(g, node, 0, in->dtype, &out))) return st;
    return vkl_mv_pass_value(g, node);
}

const vkl_op_info vkl_op_info_squeeze = {"Squeeze", "", 1, 2, 1, 1, false, -1, NULL, 0, squeeze_infer};

static vkl_status unsqueeze_infer(vkl_graph *g, uint32_t node) {
    const vkl_tensor *in;
    int64_t axes[VKL_MAX_VALUE_ELEMS];
    uint32_t n, mask;
    vkl_expr one;
    vkl_status st = vkl_node_require(g, node, 0, &in);
    if (!st) st = vkl_mv_check_int_input(g, node, 1, "axes", 1);
    if (!st) st = vkl_mv_input_ints(g, node, 1, "axes", axes, VKL_MAX_VALUE_ELEMS, &n);
    if (st) return st;
    uint32_t r = in->shape.rank + n;
    if (r > VKL_MAX_RANK)
        return vkl_fail(g->ctx, VKL_ERR_UNSUPPORTED, "Unsqueeze: output rank %u > %d", r, VKL_MAX_RANK);
    if ((st = vkl_mv_axes(g, node, "axes", axes, n, r, NULL, &mask)) || (st = vkl_mv_const(g, 1, &one))) return st;
    vkl_shape out = {.rank = r};
    for (uint32_t d = 0, k = 0; d < r; d++) out.dims[d] = (mask & (1u << d)) ? one : in->shape.dims[k++];
    if ((st = vkl_node_set_out(g, node, 0, in->dtype, &out))) return st;
    return vkl_mv_pass_value(g, node);
}

const vkl_op_info vkl_op_info_unsqueeze = {"Unsqueeze", "", 2, 2, 1, 1, false, -1, NULL, 0, unsqueeze_infer};

/* ---- Flatten ------------------------------------------------------------- */

static vkl_status flatten_infer(vkl_graph *g, uint32_t node) {
    const vkl_tensor *in;
    int64_t axis_attr;
    uint32_t axis;
    vkl_shape out = {.rank = 2};
    vkl_status st = vkl_node_require(g, node, 0, &in);
    if (!st) st = vkl_op_attr_int(g, node, "axis", &axis_attr);
    if (st) return st;
    /* axis in [-r, r]; a negative one counts from r (not r + 1 as for Unsqueeze) */
    int64_t r = in->shape.rank;
    if (axis_attr < -r || axis_attr > r)
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Flatten: axis %lld is out of range for rank %lld", (long long)axis_attr,
                        (long long)r);
    axis = (uint32_t)(axis_attr < 0 ? axis_attr + r : axis_attr);
    st = vkl_shape_numel(g, &in->shape, 0, axis, &out.dims[0]);
    if (!st) st = vkl_shape_numel(g, &in->shape, axis, in->shape.rank, &out.dims[1]);
    if (!st) st = vkl_node_set_out(g, node, 0, in->dtype, &out);
    return st ? st : vkl_mv_pass_value(g, node);
}

static const vkl_attr_schema flatten_attrs[] = {{"axis", VKL_ATTR_INT, false, 1, 0, NULL}};
const vkl_op_info vkl_op_info_flatten = {"Flatten", "", 1, 1, 1, 1, false, -1, flatten_attrs, 1, flatten_infer};
