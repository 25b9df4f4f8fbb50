/* Shape rules and table entries of the data-movement ops: Concat, Split,
 * Transpose, Expand, Tile, Trilu (Slice: slice.c; reshapes: reshape.c). */
#include <string.h>

#include "movement_util.h"
#include "op_defs.h"

/* ---- Concat -------------------------------------------------------------- */

/* Non-axis dims of the inputs must agree: a mismatch of two constants is an
 * error; where symbols differ (seq vs n), keep the constant or the first and
 * let the kernel check at run time. */
static vkl_status concat_merge_dim(vkl_graph *g, vkl_expr *acc, vkl_expr d, uint32_t k, uint32_t axis,
                                   const vkl_tensor *first, const vkl_tensor *t) {
    int64_t ca, cd;
    bool ka = vkl_expr_is_const(g->syms, *acc, &ca), kd = vkl_expr_is_const(g->syms, d, &cd);
    if (*acc == d) return VKL_OK;
    if (ka && kd) {
        char s0[128], sk[128];
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Concat: input %u %s does not match input 0 %s outside axis %u", k,
                        vkl_shape_str(g, &t->shape, sk, sizeof(sk)), vkl_shape_str(g, &first->shape, s0, sizeof(s0)),
                        axis);
    }
    if (kd) *acc = d;
    return VKL_OK;
}

/* Values of concatenated small integer tensors: per outer row, each input's
 * chunk in turn. */
static vkl_status concat_value(vkl_graph *g, uint32_t node, uint32_t axis) {
    const vkl_node *n = &g->nodes[node];
    vkl_expr all[VKL_MAX_VALUE_ELEMS], out[VKL_MAX_VALUE_ELEMS];
    uint32_t start[VKL_MAX_VALUE_ELEMS + 1], total = 0;
    if (n->n_inputs > VKL_MAX_VALUE_ELEMS) return VKL_OK;
    for (uint32_t k = 0; k < n->n_inputs; k++) {
        vkl_expr v[VKL_MAX_VALUE_ELEMS];
        uint32_t cnt;
        if (!vkl_mv_known_value(g, vkl_node_in(g, node, k), v, &cnt, NULL) || cnt > VKL_MAX_VALUE_ELEMS - total)
            return VKL_OK;
        memcpy(all + total, v, cnt * sizeof(vkl_expr));
        start[k] = total;
        total += cnt;
    }
    start[n->n_inputs] = total;
    int64_t dims[VKL_MAX_RANK], outer = 1;
    vkl_mv_const_dims(g, &vkl_node_in(g, node, 0)->shape, dims);
    for (uint32_t d = 0; d < axis; d++) outer *= dims[d];
    uint32_t pos = 0;
    for (int64_t o = 0; o < outer; o++) {
        for (uint32_t k = 0; k < n->n_inputs; k++) {
            uint32_t chunk = (uint32_t)((start[k + 1] - start[k]) / outer);
            memcpy(out + pos, all + start[k] + o * chunk, chunk * sizeof(vkl_expr));
            pos += chunk;
        }
    }
    return vkl_mv_set_value(g, node, 0, out, total);
}

static vkl_status concat_infer(vkl_graph *g, uint32_t node) {
    const vkl_node *n = &g->nodes[node];
    const vkl_tensor *first;
    int64_t axis_attr;
    uint32_t axis;
    vkl_status st = vkl_node_require(g, node, 0, &first);
    if (!st) st = vkl_op_attr_int(g, node, "axis", &axis_attr);
    if (st) return st;
    if (first->shape.rank == 0) return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Concat: inputs must have rank >= 1");
    if ((st = vkl_axis_norm(g, axis_attr, first->shape.rank, false, &axis)))
        return vkl_fail_prefix(g->ctx, st, "Concat: attribute axis");
    vkl_shape out = first->shape;
    vkl_expr sum;
    if ((st = vkl_mv_const(g, 0, &sum))) return st;
    for (uint32_t k = 0; k < n->n_inputs; k++) {
        const vkl_tensor *t;
        if ((st = vkl_node_require(g, node, k, &t))) return st;
        if (t->dtype != first->dtype)
            return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Concat: input %u is %s; input 0 is %s", k,
                            vkl_dtype_name(t->dtype), vkl_dtype_name(first->dtype));
        if (t->shape.rank != first->shape.rank)
            return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Concat: input %u has rank %u; input 0 has rank %u", k,
                            t->shape.rank, first->shape.rank);
        for (uint32_t d = 0; d < out.rank && !st; d++)
            if (d != axis) st = concat_merge_dim(g, &out.dims[d], t->shape.dims[d], k, axis, first, t);
        if (!st) st = vkl_expr_add(g->syms, sum, t->shape.dims[axis], &sum);
        if (st) return st;
    }
    out.dims[axis] = sum;
    if ((st = vkl_node_set_out(g, node, 0, first->dtype, &out))) return st;
    return concat_value(g, node, axis);
}

static const vkl_attr_schema concat_attrs[] = {{"axis", VKL_ATTR_INT, true, 0, 0, NULL}};
const vkl_op_info vkl_op_info_concat = {"Concat", "", 1, VKL_VARIADIC, 1, 1, false, -1,
                                        concat_attrs, 1, concat_infer};

/* ---- Split --------------------------------------------------------------- */

/* Equal chunks of ceil(D / n), the last one smaller (opset 18). */
static vkl_status split_even(vkl_graph *g, vkl_expr dim, uint32_t n, vkl_expr *sizes) {
    vkl_expr num, chunk, last, used;
    vkl_status st = vkl_mv_const(g, n, &num);
    if (st) return st;
    if (vkl_expr_divisible(g->syms, dim, num)) {
        st = vkl_expr_div_exact(g->syms, dim, num, &chunk);
        for (uint32_t i = 0; !st && i < n; i++) sizes[i] = chunk;
        return st;
    }
    vkl_expr n_minus_1, bias;
    if (!st) st = vkl_mv_const(g, n - 1, &n_minus_1);
    if (!st) st = vkl_expr_add(g->syms, dim, n_minus_1, &bias);
    if (!st) st = vkl_expr_floordiv(g->syms, bias, n, &chunk);
    if (!st) st = vkl_expr_mul(g->syms, chunk, n_minus_1, &used);
    if (!st) st = vkl_expr_sub(g->syms, dim, used, &last);
    int64_t c;
    if (!st && vkl_expr_is_const(g->syms, last, &c) && c < 0) {
        int64_t d = 0;
        vkl_expr_is_const(g->syms, dim, &d);
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Split: a dim of %lld cannot be split into %u chunks of ceil(%lld/%u)",
                        (long long)d, n, (long long)d, n);
    }
    for (uint32_t i = 0; !st && i < n; i++) sizes[i] = i + 1 < n ? chunk : last;
    return st;
}

static vkl_status split_listed(vkl_graph *g, uint32_t node, vkl_expr dim, uint32_t n, vkl_expr *sizes) {
    uint32_t cnt;
    vkl_status st = vkl_mv_check_int_input(g, node, 1, "split", 1);
    if (!st) st = vkl_mv_input_value(g, node, 1, "split", sizes, VKL_MAX_VALUE_ELEMS, &cnt);
    if (st) return st;
    if (cnt != n) return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Split: input 1 (split) has %u entries for %u outputs", cnt, n);
    vkl_expr sum;
    if ((st = vkl_mv_const(g, 0, &sum))) return st;
    for (uint32_t i = 0; i < n && !st; i++) {
        int64_t c;
        if (vkl_expr_is_const(g->syms, sizes[i], &c) && c < 0)
            return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Split: split[%u] = %lld is negative", i, (long long)c);
        st = vkl_expr_add(g->syms, sum, sizes[i], &sum);
    }
    int64_t cs, cd;
    if (!st && vkl_expr_is_const(g->syms, sum, &cs) && vkl_expr_is_const(g->syms, dim, &cd) && cs != cd)
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Split: split sums to %lld; the axis has %lld", (long long)cs,
                        (long long)cd);
    return st;
}

/* Values of the chunks of a small integer tensor: views at running offsets. */
static vkl_status split_value(vkl_graph *g, uint32_t node, const vkl_tensor *in, uint32_t axis, const vkl_expr *sizes) {
    vkl_expr v[VKL_MAX_VALUE_ELEMS], out[VKL_MAX_VALUE_ELEMS];
    int64_t dims[VKL_MAX_RANK], odims[VKL_MAX_RANK], strides[VKL_MAX_RANK], start = 0;
    uint32_t cnt;
    if (!vkl_mv_known_value(g, in, v, &cnt, dims)) return VKL_OK;
    vkl_mv_strides(dims, in->shape.rank, strides);
    memcpy(odims, dims, sizeof(dims));
    for (uint32_t k = 0; k < g->nodes[node].n_outputs; k++) {
        if (!vkl_expr_is_const(g->syms, sizes[k], &odims[axis]) || start + odims[axis] > dims[axis]) return VKL_OK;
        int64_t ocnt = 1;
        for (uint32_t d = 0; d < in->shape.rank; d++) ocnt *= odims[d];
        vkl_mv_view(v, start * strides[axis], in->shape.rank, odims, strides, out);
        vkl_status st = vkl_mv_set_value(g, node, k, out, (uint32_t)ocnt);
        if (st) return st;
        start += odims[axis];
    }
    return VKL_OK;
}

static vkl_status split_infer(vkl_graph *g, uint32_t node) {
    const vkl_node *n = &g->nodes[node];
    const vkl_tensor *in;
    int64_t axis_attr, num = 0;
    uint32_t axis;
    vkl_status st = vkl_node_require(g, node, 0, &in);
    if (!st) st = vkl_op_attr_int(g, node, "axis", &axis_attr);
    if (!st) st = vkl_op_attr_int(g, node, "num_outputs", &num);
    if (st) return st;
    if ((st = vkl_axis_norm(g, axis_attr, in->shape.rank, false, &axis)))
        return vkl_fail_prefix(g->ctx, st, "Split: attribute axis");
    bool has_num = vkl_node_attr(n, "num_outputs") != NULL, has_split = vkl_node_in(g, node, 1) != NULL;
    if (has_num && has_split)
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Split: give either input 'split' or attribute num_outputs, not both");
    if (has_num && num != (int64_t)n->n_outputs)
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Split: num_outputs = %lld but the node has %u outputs", (long long)num,
                        n->n_outputs);
    if (n->n_outputs > VKL_MAX_VALUE_ELEMS)
        return vkl_fail(g->ctx, VKL_ERR_UNSUPPORTED, "Split: %u outputs; at most %d", n->n_outputs, VKL_MAX_VALUE_ELEMS);
    vkl_expr sizes[VKL_MAX_VALUE_ELEMS];
    st = has_split ? split_listed(g, node, in->shape.dims[axis], n->n_outputs, sizes)
                   : split_even(g, in->shape.dims[axis], n->n_outputs, sizes);
    for (uint32_t k = 0; !st && k < n->n_outputs; k++) {
        vkl_shape s = in->shape;
        s.dims[axis] = sizes[k];
        st = vkl_node_set_out(g, node, k, in->dtype, &s);
    }
    return st ? st : split_value(g, node, in, axis, sizes);
}

static const vkl_attr_schema split_attrs[] = {
    {"axis", VKL_ATTR_INT, false, 0, 0, NULL},
    {"num_outputs", VKL_ATTR_INT, false, 0, 0, NULL},
};
const vkl_op_info vkl_op_info_split = {"Split", "", 1, 2, 1, VKL_VARIADIC, false, -1, split_attrs, 2, split_infer};

/* ---- Transpose ----------------------------------------------------------- */

static vkl_status transpose_infer(vkl_graph *g, uint32_t node) {
    const vkl_tensor *in;
    const int64_t *perm_attr;
    uint32_t np, perm[VKL_MAX_RANK], mask;
    vkl_status st = vkl_node_require(g, node, 0, &in);
    if (!st) st = vkl_op_attr_ints(g, node, "perm", &perm_attr, &np);
    if (st) return st;
    uint32_t r = in->shape.rank;
    if (!perm_attr) {
        for (uint32_t d = 0; d < r; d++) perm[d] = r - 1 - d;
    } else if (np != r) {
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Transpose: perm has %u entries for an input of rank %u", np, r);
    } else if ((st = vkl_mv_axes(g, node, "perm", perm_attr, np, r, perm, &mask))) {
        return vkl_fail_prefix(g->ctx, st, "Transpose: perm is not a permutation of 0..%u", r ? r - 1 : 0);
    }
    vkl_shape out = {.rank = r};
    for (uint32_t d = 0; d < r; d++) out.dims[d] = in->shape.dims[perm[d]];
    if ((st = vkl_node_set_out(g, node, 0, in->dtype, &out))) return st;
    /* value: out[i0..] = in[perm-permuted index] */
    vkl_expr v[VKL_MAX_VALUE_ELEMS], o[VKL_MAX_VALUE_ELEMS];
    int64_t dims[VKL_MAX_RANK], strides[VKL_MAX_RANK], odims[VKL_MAX_RANK], ostrides[VKL_MAX_RANK];
    uint32_t cnt;
    if (!vkl_mv_known_value(g, in, v, &cnt, dims)) return VKL_OK;
    vkl_mv_strides(dims, r, strides);
    for (uint32_t d = 0; d < r; d++) odims[d] = dims[perm[d]], ostrides[d] = strides[perm[d]];
    vkl_mv_view(v, 0, r, odims, ostrides, o);
    return vkl_mv_set_value(g, node, 0, o, cnt);
}

static const vkl_attr_schema transpose_attrs[] = {{"perm", VKL_ATTR_INTS, false, 0, 0, NULL}};
const vkl_op_info vkl_op_info_transpose = {"Transpose", "", 1, 1, 1, 1, false, -1, transpose_attrs, 1, transpose_infer};

/* ---- Expand and Tile ----------------------------------------------------- */

/* Value of a broadcast/tiled small tensor: a view of the input with dims
 * `vdims` and element strides `vstrides` (0 where an axis repeats). */
static vkl_status repeat_value(vkl_graph *g, uint32_t node, uint32_t rank, const int64_t *vdims,
                               const int64_t *vstrides) {
    vkl_expr v[VKL_MAX_VALUE_ELEMS], o[VKL_MAX_VALUE_ELEMS];
    uint32_t cnt;
    int64_t total = 1;
    for (uint32_t d = 0; d < rank; d++) total *= vdims[d];
    if (total > VKL_MAX_VALUE_ELEMS || !vkl_mv_known_value(g, vkl_node_in(g, node, 0), v, &cnt, NULL)) return VKL_OK;
    vkl_mv_view(v, 0, rank, vdims, vstrides, o);
    return vkl_mv_set_value(g, node, 0, o, (uint32_t)total);
}

static vkl_status expand_infer(vkl_graph *g, uint32_t node) {
    const vkl_tensor *in;
    vkl_expr dims[VKL_MAX_VALUE_ELEMS];
    uint32_t r;
    vkl_shape target, out;
    vkl_status st = vkl_node_require(g, node, 0, &in);
    if (!st) st = vkl_mv_check_int_input(g, node, 1, "shape", 1);
    if (!st) st = vkl_mv_input_value(g, node, 1, "shape", dims, VKL_MAX_VALUE_ELEMS, &r);
    if (!st) st = vkl_mv_shape_from_exprs(g, dims, r, &target);
    for (uint32_t d = 0; !st && d < r; d++) {
        int64_t c;
        if (vkl_expr_is_const(g->syms, dims[d], &c) && c < 0)
            st = vkl_fail(g->ctx, VKL_ERR_SHAPE, "Expand: shape[%u] = %lld is negative", d, (long long)c);
    }
    if (!st && (st = vkl_shape_broadcast(g, &in->shape, &target, &out)))
        return vkl_fail_prefix(g->ctx, st, "Expand");
    if (!st) st = vkl_node_set_out(g, node, 0, in->dtype, &out);
    if (st) return st;
    int64_t idims[VKL_MAX_RANK], odims[VKL_MAX_RANK], istrides[VKL_MAX_RANK], vstrides[VKL_MAX_RANK] = {0};
    if (!vkl_mv_const_dims(g, &in->shape, idims) || !vkl_mv_const_dims(g, &out, odims)) return VKL_OK;
    vkl_mv_strides(idims, in->shape.rank, istrides);
    for (uint32_t d = 0; d < in->shape.rank; d++) {
        uint32_t od = out.rank - in->shape.rank + d;
        vstrides[od] = idims[d] == 1 ? 0 : istrides[d];
    }
    return repeat_value(g, node, out.rank, odims, vstrides);
}

const vkl_op_info vkl_op_info_expand = {"Expand", "", 2, 2, 1, 1, false, -1, NULL, 0, expand_infer};

static vkl_status tile_infer(vkl_graph *g, uint32_t node) {
    const vkl_tensor *in;
    vkl_expr reps[VKL_MAX_VALUE_ELEMS];
    uint32_t r;
    vkl_status st = vkl_node_require(g, node, 0, &in);
    if (!st) st = vkl_mv_check_int_input(g, node, 1, "repeats", 1);
    if (!st) st = vkl_mv_input_value(g, node, 1, "repeats", reps, VKL_MAX_VALUE_ELEMS, &r);
    if (st) return st;
    if (r != in->shape.rank)
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Tile: repeats has %u entries for an input of rank %u", r,
                        in->shape.rank);
    vkl_shape out = {.rank = r};
    for (uint32_t d = 0; d < r && !st; d++) {
        int64_t c;
        if (vkl_expr_is_const(g->syms, reps[d], &c) && c < 0)
            return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Tile: repeats[%u] = %lld is negative", d, (long long)c);
        st = vkl_expr_mul(g->syms, in->shape.dims[d], reps[d], &out.dims[d]);
    }
    if (!st) st = vkl_node_set_out(g, node, 0, in->dtype, &out);
    if (st) return st;
    /* out[(a, b)] with a < repeats[d], b < dims[d] reads in[b]: a 2r-dim view */
    int64_t idims[VKL_MAX_RANK], istrides[VKL_MAX_RANK], vdims[2 * VKL_MAX_RANK], vstrides[2 * VKL_MAX_RANK];
    if (!vkl_mv_const_dims(g, &in->shape, idims)) return VKL_OK;
    vkl_mv_strides(idims, r, istrides);
    for (uint32_t d = 0; d < r; d++) {
        if (!vkl_expr_is_const(g->syms, reps[d], &vdims[2 * d])) return VKL_OK;
        vstrides[2 * d] = 0;
        vdims[2 * d + 1] = idims[d];
        vstrides[2 * d + 1] = istrides[d];
    }
    return repeat_value(g, node, 2 * r, vdims, vstrides);
}

const vkl_op_info vkl_op_info_tile = {"Tile", "", 2, 2, 1, 1, false, -1, NULL, 0, tile_infer};

/* ---- Trilu --------------------------------------------------------------- */

static vkl_status trilu_infer(vkl_graph *g, uint32_t node) {
    const vkl_tensor *in;
    vkl_status st = vkl_node_require(g, node, 0, &in);
    if (st) return st;
    if (in->shape.rank < 2) {
        char s[128];
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Trilu: input must have rank >= 2; its shape is %s",
                        vkl_shape_str(g, &in->shape, s, sizeof(s)));
    }
    if (vkl_node_in(g, node, 1) && (st = vkl_mv_check_int_input(g, node, 1, "k", 0))) return st;
    return vkl_node_set_out(g, node, 0, in->dtype, &in->shape);
}

static const vkl_attr_schema trilu_attrs[] = {{"upper", VKL_ATTR_INT, false, 1, 0, NULL}};
const vkl_op_info vkl_op_info_trilu = {"Trilu", "", 1, 2, 1, 1, false, -1, trilu_attrs, 1, trilu_infer};
