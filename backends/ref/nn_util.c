/* Helpers shared by the nn family's ref kernels: dtype checks, run-time
 * shape checks, broadcasting offsets. */
#include <stdio.h>

#include "nn_util.h"

/* "[2, 3]" for messages. */
static const char *dims_str(const int64_t *dims, uint32_t rank, char *buf, size_t cap) {
    size_t used = (size_t)snprintf(buf, cap, "[");
    for (uint32_t d = 0; d < rank && used < cap; d++)
        used += (size_t)snprintf(buf + used, cap - used, d ? ", %lld" : "%lld", (long long)dims[d]);
    if (used < cap) snprintf(buf + used, cap - used, "]");
    return buf;
}

bool vkl_ref_nn_is_float(vkl_dtype t) {
    return t == VKL_DTYPE_F32 || t == VKL_DTYPE_F16 || t == VKL_DTYPE_BF16 || t == VKL_DTYPE_F64;
}

vkl_status vkl_ref_nn_bad_dtype(const vkl_ref_args *a, const char *op, const char *what, vkl_dtype t) {
    return vkl_fail(a->ctx, VKL_ERR_UNSUPPORTED, "%s: %s dtype %s is not supported", op, what, vkl_dtype_name(t));
}

int64_t vkl_ref_nn_prod(const int64_t *dims, uint32_t from, uint32_t to) {
    int64_t n = 1;
    for (uint32_t d = from; d < to; d++) n *= dims[d];
    return n;
}

vkl_status vkl_ref_nn_attr(const vkl_ref_args *a, const char *name, int64_t *out) {
    return vkl_op_attr_int(a->g, a->node, name, out);
}

vkl_status vkl_ref_nn_axis(const vkl_ref_args *a, const char *op, int64_t axis, uint32_t rank, uint32_t *out) {
    if (vkl_ref_axis(axis, rank, out)) return VKL_OK;
    return vkl_fail(a->ctx, VKL_ERR_SHAPE, "%s: axis %lld out of range for rank %u", op, (long long)axis, rank);
}

vkl_status vkl_ref_nn_dim_eq(const vkl_ref_args *a, const char *op, int64_t x, int64_t y, const char *what) {
    if (x == y) return VKL_OK;
    return vkl_fail(a->ctx, VKL_ERR_SHAPE, "%s: %s differ (%lld vs %lld)", op, what, (long long)x, (long long)y);
}

vkl_status vkl_ref_nn_broadcast_to(const vkl_ref_args *a, const char *op, const vkl_ref_tensor *src,
                                   const int64_t *dims, uint32_t rank, const char *what) {
    bool ok = src->rank <= rank;
    for (uint32_t d = 0; ok && d < src->rank; d++) {
        int64_t s = src->dims[d];
        ok = s == 1 || s == dims[rank - src->rank + d];
    }
    if (ok) return VKL_OK;
    char ss[128], ds[128];
    return vkl_fail(a->ctx, VKL_ERR_SHAPE, "%s: %s of shape %s does not broadcast to %s", op, what,
                    dims_str(src->dims, src->rank, ss, sizeof(ss)), dims_str(dims, rank, ds, sizeof(ds)));
}

int64_t vkl_ref_nn_broadcast_flat(const vkl_ref_tensor *src, const int64_t *dims, uint32_t rank, int64_t flat) {
    int64_t off = 0, stride = 1;
    for (int32_t d = (int32_t)rank - 1; d >= 0; d--) {
        int64_t i = flat % dims[d];
        flat /= dims[d];
        int32_t sd = d - (int32_t)(rank - src->rank);
        if (sd < 0) continue;
        if (src->dims[sd] != 1) off += i * stride;
        stride *= src->dims[sd];
    }
    return off;
}
