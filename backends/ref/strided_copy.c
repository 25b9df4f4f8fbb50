/* Strided copies shared by the ref data-movement kernels, and the checks
 * they all make (element size, output dims against the run-time data). */
#include <stdio.h>
#include <string.h>

#include "strided_copy.h"

/* count elements, src stepping by `stride` elements, dst contiguous. Fixed
 * sizes let the compiler turn memcpy into plain loads and stores. */
static void copy_row(unsigned char *dst, const unsigned char *src, int64_t count, int64_t stride, size_t esize) {
    if (stride == 1) {
        memcpy(dst, src, (size_t)count * esize);
        return;
    }
    int64_t step = stride * (int64_t)esize;
    switch (esize) {
    case 1: for (int64_t i = 0; i < count; i++) dst[i] = src[i * step]; break;
    case 2: for (int64_t i = 0; i < count; i++) memcpy(dst + 2 * i, src + i * step, 2); break;
    case 4: for (int64_t i = 0; i < count; i++) memcpy(dst + 4 * i, src + i * step, 4); break;
    case 8: for (int64_t i = 0; i < count; i++) memcpy(dst + 8 * i, src + i * step, 8); break;
    default: for (int64_t i = 0; i < count; i++) memcpy(dst + esize * (size_t)i, src + i * step, esize); break;
    }
}

void vkl_ref_strided_copy(void *dst, const void *src, uint32_t rank, const int64_t *dims, const int64_t *strides,
                          size_t esize) {
    /* Drop size-1 dims and merge neighbours that are contiguous in src, so
     * a plain copy is one memcpy and a transpose has the longest rows. */
    int64_t nd[VKL_REF_VIEW_MAX_RANK], ns[VKL_REF_VIEW_MAX_RANK], total = 1;
    uint32_t n = 0;
    for (uint32_t d = 0; d < rank; d++) {
        total *= dims[d];
        if (dims[d] == 1) continue;
        if (n && ns[n - 1] == strides[d] * dims[d]) {
            nd[n - 1] *= dims[d];
            ns[n - 1] = strides[d];
        } else {
            nd[n] = dims[d];
            ns[n] = strides[d];
            n++;
        }
    }
    if (total == 0) return;
    if (n == 0) nd[n] = 1, ns[n++] = 1;
    /* rows along the last merged dim; an odometer over the others */
    int64_t row = nd[n - 1], row_stride = ns[n - 1], idx[VKL_REF_VIEW_MAX_RANK] = {0}, off = 0;
    unsigned char *out = dst;
    const unsigned char *in = src;
    size_t row_bytes = (size_t)row * esize;
    for (int64_t r = 0, rows = total / row; r < rows; r++) {
        copy_row(out, in + off * (int64_t)esize, row, row_stride, esize);
        out += row_bytes;
        for (int32_t d = (int32_t)n - 2; d >= 0; d--) {
            off += ns[d];
            if (++idx[d] < nd[d]) break;
            off -= ns[d] * nd[d];
            idx[d] = 0;
        }
    }
}

const char *vkl_ref_op_name(const vkl_ref_args *a) {
    const vkl_op_info *info = vkl_op_info_get((vkl_op)a->g->nodes[a->node].op);
    return info ? info->name : "?";
}

vkl_status vkl_ref_elem_size(const vkl_ref_args *a, vkl_dtype t, size_t *esize) {
    *esize = vkl_dtype_size(t);
    if (*esize) return VKL_OK;
    return vkl_fail(a->ctx, VKL_ERR_UNSUPPORTED, "%s: dtype %s is not supported by the ref kernel", vkl_ref_op_name(a),
                    vkl_dtype_name(t));
}

vkl_status vkl_ref_view_of_input(const vkl_ref_args *a, size_t *esize, int64_t *strides) {
    vkl_ref_strides(&a->in[0], strides);
    return vkl_ref_elem_size(a, a->in[0].dtype, esize);
}

static const char *dims_str(const int64_t *dims, uint32_t rank, char *buf, size_t cap) {
    size_t used = (size_t)snprintf(buf, cap, "[");
    for (uint32_t d = 0; d < rank && used < cap; d++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%lld", d ? ", " : "", (long long)dims[d]);
    if (used < cap) snprintf(buf + used, cap - used, "]");
    return buf;
}

vkl_status vkl_ref_check_dims(const vkl_ref_args *a, uint32_t k, const int64_t *dims, uint32_t rank) {
    const vkl_ref_tensor *o = &a->out[k];
    if (o->rank == rank && (rank == 0 || !memcmp(o->dims, dims, rank * sizeof(int64_t)))) return VKL_OK;
    char want[128], got[128];
    return vkl_fail(a->ctx, VKL_ERR_SHAPE, "%s: output %u has shape %s, but the inputs give %s", vkl_ref_op_name(a), k,
                    dims_str(o->dims, o->rank, got, sizeof(got)), dims_str(dims, rank, want, sizeof(want)));
}
