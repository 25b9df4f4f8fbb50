/* Ref kernel for Conv: direct N-D convolution with groups, strides,
 * dilations, explicit or automatic padding; double accumulation. */
#include "nn_util.h"
#include "ref_ops.h"

/* Concrete geometry of one Conv call. */
typedef struct conv_geom {
    vkl_nn_conv attrs;
    uint32_t n_sp;                                  /* spatial dims */
    int64_t in[VKL_MAX_RANK], k[VKL_MAX_RANK];      /* input and kernel sizes */
    int64_t out[VKL_MAX_RANK], pad[VKL_MAX_RANK];   /* output sizes, leading pads */
    int64_t n_in_sp, n_k, n_out_sp;                 /* element counts of each */
} conv_geom;

/* Checks the channel counts, kernel_shape and B, and derives the geometry. */
static vkl_status conv_geometry(const vkl_ref_args *a, conv_geom *c) {
    const vkl_ref_tensor *x = &a->in[0], *w = &a->in[1], *b = a->n_in > 2 && a->in[2].data ? &a->in[2] : NULL;
    const vkl_ref_tensor *y = &a->out[0];
    c->n_sp = x->rank - 2;
    vkl_status st = vkl_nn_conv_attrs(a->g, a->node, c->n_sp, &c->attrs);
    if (!st && w->rank != x->rank) st = vkl_fail(a->ctx, VKL_ERR_SHAPE, "Conv: W's rank differs from X's");
    if (!st) st = vkl_ref_nn_dim_eq(a, "Conv", x->dims[1], w->dims[1] * c->attrs.group, "X's channels and W[1] * group");
    if (!st && w->dims[0] % c->attrs.group)
        st = vkl_fail(a->ctx, VKL_ERR_SHAPE, "Conv: %lld output channels are not a multiple of group %lld",
                      (long long)w->dims[0], (long long)c->attrs.group);
    if (!st && b) st = vkl_ref_nn_dim_eq(a, "Conv", b->count, w->dims[0], "B's length and W's output channels");
    c->n_in_sp = c->n_k = c->n_out_sp = 1;
    for (uint32_t i = 0; !st && i < c->n_sp; i++) {
        c->in[i] = x->dims[2 + i];
        c->k[i] = w->dims[2 + i];
        if (c->attrs.has_kernel_shape)
            st = vkl_ref_nn_dim_eq(a, "Conv", c->attrs.kernel_shape[i], c->k[i], "kernel_shape and W's dims");
        if (!st) st = vkl_nn_conv_dim(a->ctx, &c->attrs, i, c->in[i], c->k[i], &c->out[i], &c->pad[i]);
        if (!st) st = vkl_ref_nn_dim_eq(a, "Conv", y->dims[2 + i], c->out[i], "Y's spatial dims and the geometry");
        c->n_in_sp *= c->in[i];
        c->n_k *= c->k[i];
        c->n_out_sp *= c->out[i];
    }
    return st;
}

/* Offset within one input channel's plane of the tap at kernel position q
 * for output position p, or -1 when the tap falls in the padding. */
static int64_t tap_offset(const conv_geom *c, int64_t p, int64_t q) {
    int64_t off = 0, plane_stride = 1;
    for (int32_t i = (int32_t)c->n_sp - 1; i >= 0; i--) {
        int64_t o = p % c->out[i], kk = q % c->k[i];
        p /= c->out[i];
        q /= c->k[i];
        int64_t pos = o * c->attrs.strides[i] - c->pad[i] + kk * c->attrs.dilations[i];
        if (pos < 0 || pos >= c->in[i]) return -1;
        off += pos * plane_stride;
        plane_stride *= c->in[i];
    }
    return off;
}

/* Conv-11: X [N, C, D...], W [M, C/group, k...], B? [M] -> Y [N, M, O...]:
 *   Y[n, m, o] = B[m] + sum over c < C/group and kernel positions q of
 *                X[n, g * C/group + c, o * stride - pad + q * dilation] * W[m, c, q]
 * with g = m / (M / group) and taps in the padding counting as zero. */
vkl_status vkl_ref_conv(const vkl_ref_args *a) {
    const vkl_ref_tensor *x = &a->in[0], *w = &a->in[1], *b = a->n_in > 2 && a->in[2].data ? &a->in[2] : NULL;
    vkl_ref_tensor *y = &a->out[0];
    conv_geom c;
    if (!vkl_ref_nn_is_float(x->dtype)) return vkl_ref_nn_bad_dtype(a, "Conv", "X", x->dtype);
    if (w->dtype != x->dtype || (b && b->dtype != x->dtype)) return vkl_ref_nn_bad_dtype(a, "Conv", "W/B", w->dtype);
    if (x->rank < 3) return vkl_fail(a->ctx, VKL_ERR_SHAPE, "Conv: X has rank %u; at least 3 expected", x->rank);
    vkl_status st = conv_geometry(a, &c);
    if (st) return st;
    int64_t batch = x->dims[0], M = w->dims[0], cg = w->dims[1], m_per_group = M / c.attrs.group;
    for (int64_t n = 0; n < batch; n++) {
        for (int64_t m = 0; m < M; m++) {
            int64_t first_c = (m / m_per_group) * cg;
            for (int64_t p = 0; p < c.n_out_sp; p++) {
                double acc = b ? vkl_ref_get_f(b, m) : 0;
                for (int64_t ci = 0; ci < cg; ci++) {
                    int64_t x_plane = (n * x->dims[1] + first_c + ci) * c.n_in_sp;
                    int64_t w_plane = (m * cg + ci) * c.n_k;
                    for (int64_t q = 0; q < c.n_k; q++) {
                        int64_t t = tap_offset(&c, p, q);
                        if (t >= 0) acc += vkl_ref_get_f(x, x_plane + t) * vkl_ref_get_f(w, w_plane + q);
                    }
                }
                vkl_ref_set_f(y, (n * M + m) * c.n_out_sp + p, acc);
            }
        }
    }
    return VKL_OK;
}
