/* Table entry and shape rule for Conv (N-D, groups, dilations, pads,
 * auto_pad), and the attribute reading the ref kernel shares. */
#include <string.h>

#include "nn_util.h"
#include "op_defs.h"

/* An INTS attribute of n positive (or, with allow_zero, non-negative)
 * entries, or `def` everywhere when absent. */
static vkl_status spatial_ints(const vkl_graph *g, uint32_t node, const char *name, uint32_t n, int64_t def,
                               bool allow_zero, int64_t *out) {
    const int64_t *v;
    uint32_t count;
    vkl_status st = vkl_op_attr_ints(g, node, name, &v, &count);
    if (st) return st;
    if (count == 0) {
        for (uint32_t i = 0; i < n; i++) out[i] = def;
        return VKL_OK;
    }
    if (count != n)
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Conv: %s has %u entries; %u expected", name, count, n);
    for (uint32_t i = 0; i < n; i++) {
        if (v[i] < (allow_zero ? 0 : 1))
            return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Conv: %s[%u] = %lld is out of range", name, i, (long long)v[i]);
        out[i] = v[i];
    }
    return VKL_OK;
}

vkl_status vkl_nn_conv_attrs(const vkl_graph *g, uint32_t node, uint32_t n_spatial, vkl_nn_conv *out) {
    static const char *const pad_names[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
    const char *auto_pad;
    const int64_t *ks;
    uint32_t n_ks;
    memset(out, 0, sizeof(*out));
    out->n_spatial = n_spatial;
    if (n_spatial < 1 || n_spatial > VKL_MAX_RANK - 2)
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Conv: %u spatial dims; 1 to %d supported", n_spatial,
                        VKL_MAX_RANK - 2);
    vkl_status st = vkl_op_attr_int(g, node, "group", &out->group);
    if (!st && out->group < 1)
        st = vkl_fail(g->ctx, VKL_ERR_SHAPE, "Conv: group %lld must be positive", (long long)out->group);
    if (!st) st = vkl_op_attr_string(g, node, "auto_pad", &auto_pad);
    if (st) return st;
    uint32_t p = 0;
    while (p < 4 && strcmp(auto_pad, pad_names[p])) p++;
    if (p == 4) return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Conv: unknown auto_pad '%s'", auto_pad);
    out->auto_pad = (vkl_nn_auto_pad)p;
    st = spatial_ints(g, node, "strides", n_spatial, 1, false, out->strides);
    if (!st) st = spatial_ints(g, node, "dilations", n_spatial, 1, false, out->dilations);
    if (!st) st = spatial_ints(g, node, "pads", 2 * n_spatial, 0, true, out->pads);
    if (!st) st = vkl_op_attr_ints(g, node, "kernel_shape", &ks, &n_ks);
    if (!st && n_ks) {
        out->has_kernel_shape = true;
        st = spatial_ints(g, node, "kernel_shape", n_spatial, 1, false, out->kernel_shape);
    }
    return st;
}

vkl_status vkl_nn_conv_dim(vkl_context *ctx, const vkl_nn_conv *c, uint32_t i, int64_t in, int64_t k, int64_t *out,
                           int64_t *pad_begin) {
    int64_t s = c->strides[i], span = (k - 1) * c->dilations[i] + 1;
    int64_t total;
    switch (c->auto_pad) {
    case VKL_NN_PAD_SAME_UPPER:
    case VKL_NN_PAD_SAME_LOWER:
        /* ceil(in / s) outputs; the odd pad goes at the end (UPPER) or the start (LOWER). */
        *out = (in + s - 1) / s;
        total = (*out - 1) * s + span - in;
        if (total < 0) total = 0;
        *pad_begin = c->auto_pad == VKL_NN_PAD_SAME_UPPER ? total / 2 : total - total / 2;
        return VKL_OK;
    case VKL_NN_PAD_VALID: total = 0; *pad_begin = 0; break;
    default: total = c->pads[i] + c->pads[c->n_spatial + i]; *pad_begin = c->pads[i]; break;
    }
    if (in + total < span)
        return vkl_fail(ctx, VKL_ERR_SHAPE, "Conv: spatial dim %u: the kernel spans %lld but the padded input is %lld",
                        i, (long long)span, (long long)(in + total));
    *out = (in + total - span) / s + 1;
    return VKL_OK;
}

/* Output size of spatial dim i, symbolically: floor((in + pads - span) / s) + 1,
 * or ceil(in / s) for SAME_*. */
static vkl_status conv_out_dim(vkl_graph *g, const vkl_nn_conv *c, uint32_t i, vkl_expr in, vkl_expr k,
                               vkl_expr *out) {
    vkl_symtab *t = g->syms;
    int64_t s = c->strides[i], d = c->dilations[i], pad = 0;
    vkl_expr e, span;
    vkl_status st;
    if (c->auto_pad == VKL_NN_PAD_SAME_UPPER || c->auto_pad == VKL_NN_PAD_SAME_LOWER) {
        st = vkl_expr_const(t, s - 1, &e);
        if (!st) st = vkl_expr_add(t, in, e, &e);
        if (!st) st = vkl_expr_floordiv(t, e, s, out);
        return st;
    }
    if (c->auto_pad == VKL_NN_PAD_NOTSET) pad = c->pads[i] + c->pads[c->n_spatial + i];
    /* span = (k - 1) * d + 1 = k * d - d + 1 */
    st = vkl_expr_const(t, d, &e);
    if (!st) st = vkl_expr_mul(t, k, e, &span);
    if (!st) st = vkl_expr_const(t, pad + d - 1, &e);
    if (!st) st = vkl_expr_add(t, in, e, &e);
    if (!st) st = vkl_expr_sub(t, e, span, &e);
    if (!st) st = vkl_expr_floordiv(t, e, s, &e);
    vkl_expr one;
    if (!st) st = vkl_expr_const(t, 1, &one);
    if (!st) st = vkl_expr_add(t, e, one, out);
    int64_t v;
    if (!st && vkl_expr_is_const(t, *out, &v) && v < 1)
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Conv: spatial dim %u: the kernel does not fit the padded input", i);
    return st;
}

/* Checks C == W[1] * group, M % group == 0, kernel_shape == W's spatial
 * dims and B [M]. */
static vkl_status check_channels(vkl_graph *g, uint32_t node, const vkl_tensor *x, const vkl_tensor *w,
                                 const vkl_tensor *b, const vkl_nn_conv *c) {
    vkl_expr grp, cin, rem, k;
    int64_t r;
    vkl_status st = vkl_expr_const(g->syms, c->group, &grp);
    if (!st) st = vkl_expr_mul(g->syms, w->shape.dims[1], grp, &cin);
    if (!st) st = vkl_nn_dims_agree(g, node, x->shape.dims[1], cin, "X's channels and W's channels times group");
    if (!st) st = vkl_expr_mod(g->syms, w->shape.dims[0], c->group, &rem);
    if (!st && vkl_expr_is_const(g->syms, rem, &r) && r != 0)
        st = vkl_fail(g->ctx, VKL_ERR_SHAPE, "Conv: W's output channels are not a multiple of group %lld",
                      (long long)c->group);
    for (uint32_t i = 0; !st && c->has_kernel_shape && i < c->n_spatial; i++) {
        st = vkl_expr_const(g->syms, c->kernel_shape[i], &k);
        if (!st) st = vkl_nn_dims_agree(g, node, w->shape.dims[2 + i], k, "kernel_shape and W's spatial dims");
    }
    if (!st && b) st = vkl_nn_need_rank(g, node, b, 1, false, "B");
    if (!st && b) st = vkl_nn_same_dtype(g, node, x, b, "X and B");
    if (!st && b) st = vkl_nn_dims_agree(g, node, b->shape.dims[0], w->shape.dims[0], "B's length and W's output channels");
    return st;
}

/* Conv-11: X [N, C, D1..Dn], W [M, C/group, k1..kn], B? [M] -> Y [N, M, O1..On]. */
static vkl_status infer_conv(vkl_graph *g, uint32_t node) {
    const vkl_tensor *in[2], *b = vkl_node_in(g, node, 2);
    vkl_nn_conv c;
    vkl_status st = vkl_nn_inputs(g, node, 2, in);
    if (st) return st;
    const vkl_tensor *x = in[0], *w = in[1];
    st = vkl_nn_need_float(g, node, x, "X");
    if (!st) st = vkl_nn_same_dtype(g, node, x, w, "X and W");
    if (!st) st = vkl_nn_need_rank(g, node, x, 3, true, "X");
    if (!st) st = vkl_nn_need_rank(g, node, w, x->shape.rank, false, "W");
    if (!st) st = vkl_nn_conv_attrs(g, node, x->shape.rank - 2, &c);
    if (!st) st = check_channels(g, node, x, w, b, &c);
    if (st) return st;
    vkl_shape out = {x->shape.rank, {x->shape.dims[0], w->shape.dims[0]}};
    for (uint32_t i = 0; !st && i < c.n_spatial; i++)
        st = conv_out_dim(g, &c, i, x->shape.dims[2 + i], w->shape.dims[2 + i], &out.dims[2 + i]);
    if (!st) st = vkl_node_set_out(g, node, 0, x->dtype, &out);
    return st;
}

static const vkl_attr_schema conv_attrs[] = {
    {"auto_pad", VKL_ATTR_STRING, false, 0, 0, "NOTSET"},
    {"dilations", VKL_ATTR_INTS, false, 0, 0, NULL},
    {"group", VKL_ATTR_INT, false, 1, 0, NULL},
    {"kernel_shape", VKL_ATTR_INTS, false, 0, 0, NULL},
    {"pads", VKL_ATTR_INTS, false, 0, 0, NULL},
    {"strides", VKL_ATTR_INTS, false, 0, 0, NULL},
};

const vkl_op_info vkl_op_info_conv = {"Conv", "", 2, 3, 1, 1, false, -1, conv_attrs, 6, infer_conv};
