/* ReduceSum, ReduceMean, ReduceMax (reduce.comp) and CumSum (cumsum.comp)
 * on Vulkan, with the ref kernels' semantics (backends/ref/reduce.c): axes
 * from a constant input read at prepare through the same rule
 * (vkl_nn_reduce_mask), keepdims and noop_with_empty_axes; CumSum's axis
 * read by the kernel at run time. */
#include <string.h>

#include "../../engine/ops.h"
#include "../../engine/ops/nn_util.h"
#include "vk_internal.h"

static const vkl_vk_variants reduce_shader = {"reduce", "reduce_sg", "reduce_f64"};
static const vkl_vk_variants cumsum_shader = {"cumsum", NULL, "cumsum_f64"};

enum { OP_SUM = 0, OP_MEAN = 1, OP_MAX = 2 };

static bool is_int(vkl_dtype t) {
    switch (t) {
    case VKL_DTYPE_I64: case VKL_DTYPE_I32: case VKL_DTYPE_I16: case VKL_DTYPE_I8:
    case VKL_DTYPE_U32: case VKL_DTYPE_U16: case VKL_DTYPE_U8: return true;
    default: return false;
    }
}

/* dims and strides of n dims merged as reduce.comp reads them (6 words each) */
static vkl_status merged(const vkl_vk_node *nd, uint32_t n, const int64_t *dims, const int64_t *strides,
                         uint32_t *push) {
    int64_t s[1][VKL_MAX_RANK];
    vkl_vk_view v;
    memcpy(s[0], strides, sizeof(int64_t) * n);
    vkl_status st = vkl_vk_view_make(nd, n, dims, 1, (const int64_t (*)[VKL_MAX_RANK])s, &v);
    for (uint32_t d = 0; !st && d < VKL_VK_VIEW_RANK; d++) {
        push[d] = (uint32_t)v.dims[d];
        push[VKL_VK_VIEW_RANK + d] = (uint32_t)v.strides[0][d];
    }
    return st;
}

static vkl_status reduce(const vkl_vk_node *nd, uint32_t op, const char *name, vkl_vk_dispatch *out,
                         uint32_t *count) {
    const vkl_vk_tensor *X = &nd->in[0], *Y = &nd->out[0];
    *count = 0;
    if (!vkl_vk_dtype_float(X->dtype) && !is_int(X->dtype) && !(op == OP_MAX && X->dtype == VKL_DTYPE_BOOL))
        return vkl_vk_node_unsupported(nd, "data dtype %s is not supported", vkl_dtype_name(X->dtype));
    int64_t noop, axes[VKL_MAX_RANK + 1];
    uint32_t n_axes = 0;
    bool mask[VKL_MAX_RANK];
    vkl_status st = vkl_op_attr_int(nd->g, nd->index, "noop_with_empty_axes", &noop);
    if (st) return st;
    if (nd->n_in > 1 && nd->in[1].id != VKL_NONE && !vkl_vk_const_ints(nd, 1, axes, VKL_MAX_RANK + 1, &n_axes))
        return vkl_vk_node_unsupported(nd, "axes are known only at run time");
    if ((st = vkl_nn_reduce_mask(nd->dev->ctx, name, axes, n_axes, X->rank, noop != 0, mask))) {
        char what[160];
        return vkl_fail_prefix(nd->dev->ctx, st, "vulkan: %s", vkl_node_str(nd->g, nd->index, what, sizeof(what)));
    }
    int64_t own[VKL_MAX_RANK], kd[VKL_MAX_RANK], ks[VKL_MAX_RANK], rd[VKL_MAX_RANK], rs[VKL_MAX_RANK];
    int64_t groups = 1, size = 1;
    uint32_t nk = 0, nr = 0;
    vkl_vk_contiguous_strides(X->rank, X->dims, own);
    for (uint32_t d = 0; d < X->rank; d++) {
        if (mask[d]) {
            rd[nr] = X->dims[d];
            rs[nr++] = own[d];
            size *= X->dims[d];
        } else {
            kd[nk] = X->dims[d];
            ks[nk++] = own[d];
            groups *= X->dims[d];
        }
    }
    if (Y->count != groups)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "Y has %lld elements, the axes give %lld", (long long)Y->count,
                                (long long)groups);
    if (X->count >= (1ll << 31))
        return vkl_vk_node_unsupported(nd, "%lld elements exceed 32-bit indexing", (long long)X->count);
    if (!groups) return VKL_OK;
    vkl_vk_dispatch *d = &out[0];
    d->push[0] = (uint32_t)groups;
    d->push[1] = (uint32_t)size;
    st = merged(nd, nk, kd, ks, d->push + 2);
    if (!st) st = merged(nd, nr, rd, rs, d->push + 2 + 2 * VKL_VK_VIEW_RANK);
    if (st) return st;
    d->n_push = 2 + 4 * VKL_VK_VIEW_RANK;
    /* a workgroup per output for long groups, an invocation per output otherwise */
    const bool coop = size >= 64;
    const uint32_t wg = coop ? vkl_vk_wg_size(nd, size) : 64;
    st = vkl_vk_pick(nd, vkl_vk_node_has_f64(nd), &reduce_shader, &d->shader);
    if (!st) st = vkl_vk_grid(nd, coop ? (uint64_t)groups * wg : (uint64_t)groups, wg, d->groups);
    if (st) return st;
    d->spec[0] = wg;
    d->spec[1] = op;
    d->spec[2] = X->dtype;
    d->spec[3] = coop;
    d->n_spec = 4;
    d->bind[0] = X->at;
    d->bind[1] = Y->at;
    d->n_bind = 2;
    *count = 1;
    return VKL_OK;
}

vkl_status vkl_vk_record_reduce_sum(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    return reduce(nd, OP_SUM, "ReduceSum", out, count);
}

vkl_status vkl_vk_record_reduce_mean(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    return reduce(nd, OP_MEAN, "ReduceMean", out, count);
}

vkl_status vkl_vk_record_reduce_max(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    return reduce(nd, OP_MAX, "ReduceMax", out, count);
}

vkl_status vkl_vk_record_cum_sum(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_vk_tensor *X = &nd->in[0], *A = &nd->in[1], *Y = &nd->out[0];
    int64_t exclusive, reverse, axis;
    uint32_t n;
    *count = 0;
    if (!vkl_vk_dtype_float(X->dtype) && !is_int(X->dtype))
        return vkl_vk_node_unsupported(nd, "x dtype %s is not supported", vkl_dtype_name(X->dtype));
    if (A->dtype != VKL_DTYPE_I32 && A->dtype != VKL_DTYPE_I64)
        return vkl_vk_node_unsupported(nd, "axis dtype %s; i32 or i64 expected", vkl_dtype_name(A->dtype));
    if (A->count != 1)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "axis has %lld elements; 1 expected", (long long)A->count);
    if (X->rank < 1) return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "x is a scalar: no axis to sum along");
    /* a known axis is checked here as ref checks it; a run-time one is the kernel's to clamp */
    if (vkl_vk_const_ints(nd, 1, &axis, 1, &n) && (axis < -(int64_t)X->rank || axis >= (int64_t)X->rank))
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "axis %lld out of range for rank %u", (long long)axis, X->rank);
    vkl_status st = vkl_op_attr_int(nd->g, nd->index, "exclusive", &exclusive);
    if (!st) st = vkl_op_attr_int(nd->g, nd->index, "reverse", &reverse);
    if (st) return st;
    if (X->count >= (1ll << 31))
        return vkl_vk_node_unsupported(nd, "%lld elements exceed 32-bit indexing", (long long)X->count);
    if (!X->count) return VKL_OK;
    vkl_vk_dispatch *d = &out[0];
    const uint32_t wg = 64;
    st = vkl_vk_pick(nd, vkl_vk_node_has_f64(nd), &cumsum_shader, &d->shader);
    if (!st) st = vkl_vk_grid(nd, (uint64_t)X->count, wg, d->groups);
    if (st) return st;
    d->spec[0] = wg;
    d->spec[1] = X->dtype;
    d->spec[2] = A->dtype;
    d->spec[3] = exclusive != 0;
    d->spec[4] = reverse != 0;
    d->n_spec = 5;
    d->bind[0] = X->at;
    d->bind[1] = A->at;
    d->bind[2] = Y->at;
    d->n_bind = 3;
    d->push[0] = X->rank;
    for (uint32_t i = 0; i < VKL_MAX_RANK; i++) d->push[1 + i] = i < X->rank ? (uint32_t)X->dims[i] : 1;
    d->n_push = 1 + VKL_MAX_RANK;
    *count = 1;
    return VKL_OK;
}
