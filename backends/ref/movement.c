/* Ref kernels of the data-movement ops: Concat, Split, Transpose, Expand,
 * Tile, Trilu (Slice: slice.c). Every dtype: they move bytes. */
#include <string.h>

#include "ref_ops.h"
#include "strided_copy.h"

/* Product of dims [from, to). */
static int64_t span(const int64_t *dims, uint32_t from, uint32_t to) {
    int64_t n = 1;
    for (uint32_t d = from; d < to; d++) n *= dims[d];
    return n;
}

static vkl_status attr_axis(const vkl_ref_args *a, const char *name, uint32_t rank, uint32_t *axis) {
    int64_t v;
    vkl_status st = vkl_op_attr_int(a->g, a->node, name, &v);
    if (st) return st;
    if (!vkl_ref_axis(v, rank, axis))
        return vkl_fail(a->ctx, VKL_ERR_SHAPE, "%s: %s %lld is out of range for rank %u", vkl_ref_op_name(a), name,
                        (long long)v, rank);
    return VKL_OK;
}

/* Concat: out [..., sum d_k, ...] = per outer row, each input's d_k * inner
 * block in turn. Zero-length inputs contribute nothing. */
vkl_status vkl_ref_concat(const vkl_ref_args *a) {
    vkl_ref_tensor *out = &a->out[0];
    uint32_t axis;
    size_t es;
    vkl_status st = attr_axis(a, "axis", out->rank, &axis);
    if (!st) st = vkl_ref_elem_size(a, out->dtype, &es);
    if (st) return st;
    int64_t dims[VKL_MAX_RANK];
    memcpy(dims, a->in[0].dims, sizeof(dims));
    dims[axis] = 0;
    for (uint32_t k = 0; k < a->n_in; k++) {
        const vkl_ref_tensor *t = &a->in[k];
        bool ok = t->rank == out->rank && t->dtype == out->dtype;
        for (uint32_t d = 0; ok && d < out->rank; d++) ok = d == axis || t->dims[d] == a->in[0].dims[d];
        if (!ok)
            return vkl_fail(a->ctx, VKL_ERR_SHAPE, "Concat: input %u does not match input 0 outside axis %u", k, axis);
        dims[axis] += t->dims[axis];
    }
    if ((st = vkl_ref_check_dims(a, 0, dims, out->rank))) return st;
    int64_t outer = span(dims, 0, axis), inner = span(dims, axis + 1, out->rank);
    unsigned char *dst = out->data;
    for (int64_t o = 0; o < outer; o++)
        for (uint32_t k = 0; k < a->n_in; k++) {
            size_t bytes = (size_t)(a->in[k].dims[axis] * inner) * es;
            if (!bytes) continue;
            memcpy(dst, (const unsigned char *)a->in[k].data + (size_t)o * bytes, bytes);
            dst += bytes;
        }
    return VKL_OK;
}

/* Split sizes: the `split` input, else num_outputs (or the output count)
 * chunks of ceil(D / n) with a smaller last one. */
static vkl_status split_sizes(const vkl_ref_args *a, int64_t dim, int64_t *sizes) {
    uint32_t n = a->n_out;
    if (vkl_ref_present(a, 1)) {
        if (a->in[1].count != n)
            return vkl_fail(a->ctx, VKL_ERR_SHAPE, "Split: %lld split sizes for %u outputs", (long long)a->in[1].count, n);
        int64_t sum = 0;
        for (uint32_t k = 0; k < n; k++) {
            sizes[k] = vkl_ref_get_i(&a->in[1], k);
            if (sizes[k] < 0) return vkl_fail(a->ctx, VKL_ERR_SHAPE, "Split: split[%u] = %lld", k, (long long)sizes[k]);
            sum += sizes[k];
        }
        if (sum != dim)
            return vkl_fail(a->ctx, VKL_ERR_SHAPE, "Split: sizes sum to %lld; the axis has %lld", (long long)sum, (long long)dim);
        return VKL_OK;
    }
    int64_t chunk = dim % n ? dim / n + 1 : dim / n;
    for (uint32_t k = 0; k < n; k++) sizes[k] = k + 1 < n ? chunk : dim - chunk * (n - 1);
    if (sizes[n - 1] < 0)
        return vkl_fail(a->ctx, VKL_ERR_SHAPE, "Split: %lld cannot be split into %u chunks", (long long)dim, n);
    return VKL_OK;
}

/* Split: output k = input[..., off_k : off_k + size_k, ...] along axis. */
vkl_status vkl_ref_split(const vkl_ref_args *a) {
    const vkl_ref_tensor *in = &a->in[0];
    uint32_t axis;
    size_t es;
    int64_t sizes[VKL_VARIADIC]; /* a node has at most 255 outputs */
    if (a->n_out == 0 || a->n_out > VKL_ARRAY_LEN(sizes))
        return vkl_fail(a->ctx, VKL_ERR_UNSUPPORTED, "Split: %u outputs", a->n_out);
    vkl_status st = attr_axis(a, "axis", in->rank, &axis);
    if (!st) st = vkl_ref_elem_size(a, in->dtype, &es);
    if (!st) st = split_sizes(a, in->dims[axis], sizes);
    if (st) return st;
    int64_t outer = span(in->dims, 0, axis), inner = span(in->dims, axis + 1, in->rank), off = 0;
    for (uint32_t k = 0; k < a->n_out; off += sizes[k], k++) {
        if (a->out[k].dtype == VKL_DTYPE_INVALID) continue; /* output not requested */
        int64_t dims[VKL_MAX_RANK];
        memcpy(dims, in->dims, sizeof(dims));
        dims[axis] = sizes[k];
        if ((st = vkl_ref_check_dims(a, k, dims, in->rank))) return st;
        size_t bytes = (size_t)(sizes[k] * inner) * es;
        for (int64_t o = 0; o < outer && bytes; o++)
            memcpy((unsigned char *)a->out[k].data + (size_t)o * bytes,
                   (const unsigned char *)in->data + (size_t)((o * in->dims[axis] + off) * inner) * es, bytes);
    }
    return VKL_OK;
}

/* Transpose: out[i_0, ..., i_r-1] = in[j] with j[perm[d]] = i_d; perm
 * defaults to the reversed axes. */
vkl_status vkl_ref_transpose(const vkl_ref_args *a) {
    const vkl_ref_tensor *in = &a->in[0];
    const int64_t *perm;
    uint32_t np, seen = 0;
    size_t es;
    int64_t dims[VKL_MAX_RANK], strides[VKL_MAX_RANK], in_strides[VKL_MAX_RANK];
    vkl_status st = vkl_op_attr_ints(a->g, a->node, "perm", &perm, &np);
    if (!st) st = vkl_ref_view_of_input(a, &es, in_strides);
    if (st) return st;
    if (perm && np != in->rank)
        return vkl_fail(a->ctx, VKL_ERR_SHAPE, "Transpose: perm has %u entries for rank %u", np, in->rank);
    for (uint32_t d = 0; d < in->rank; d++) {
        int64_t p = perm ? perm[d] : (int64_t)(in->rank - 1 - d);
        uint32_t ax;
        if (!vkl_ref_axis(p, in->rank, &ax) || (seen & (1u << ax)))
            return vkl_fail(a->ctx, VKL_ERR_SHAPE, "Transpose: perm is not a permutation");
        seen |= 1u << ax;
        dims[d] = in->dims[ax];
        strides[d] = in_strides[ax];
    }
    if ((st = vkl_ref_check_dims(a, 0, dims, in->rank))) return st;
    vkl_ref_strided_copy(a->out[0].data, in->data, in->rank, dims, strides, es);
    return VKL_OK;
}

/* Expand: out = input broadcast (numpy rules, both ways) with `shape`; a
 * view with stride 0 along the broadcast axes. */
vkl_status vkl_ref_expand(const vkl_ref_args *a) {
    const vkl_ref_tensor *in = &a->in[0], *shape = &a->in[1];
    int64_t dims[VKL_MAX_RANK], strides[VKL_MAX_RANK] = {0}, in_strides[VKL_MAX_RANK];
    size_t es;
    vkl_status st = vkl_ref_view_of_input(a, &es, in_strides);
    if (st) return st;
    uint32_t r = (uint32_t)(shape->count > in->rank ? shape->count : in->rank);
    if (shape->count > VKL_MAX_RANK) return vkl_fail(a->ctx, VKL_ERR_SHAPE, "Expand: rank %u > %d", r, VKL_MAX_RANK);
    for (uint32_t d = 0; d < r; d++) {
        int32_t di = (int32_t)d - (int32_t)(r - in->rank), ds = (int32_t)d - (int32_t)(r - shape->count);
        int64_t x = di >= 0 ? in->dims[di] : 1, y = ds >= 0 ? vkl_ref_get_i(shape, ds) : 1;
        if (x != y && x != 1 && y != 1)
            return vkl_fail(a->ctx, VKL_ERR_SHAPE, "Expand: input dim %lld cannot broadcast to %lld", (long long)x,
                            (long long)y);
        dims[d] = x == 1 ? y : x;
        if (di >= 0 && x != 1) strides[d] = in_strides[di];
    }
    if ((st = vkl_ref_check_dims(a, 0, dims, r))) return st;
    vkl_ref_strided_copy(a->out[0].data, in->data, r, dims, strides, es);
    return VKL_OK;
}

/* Tile: out[i] = in[i mod dims], out dims = dims * repeats. As a view:
 * out index (a_d, b_d) with a_d < repeats[d] reads in[b] (stride 0 on a_d). */
vkl_status vkl_ref_tile(const vkl_ref_args *a) {
    const vkl_ref_tensor *in = &a->in[0], *reps = &a->in[1];
    int64_t dims[VKL_MAX_RANK], in_strides[VKL_MAX_RANK], vdims[VKL_REF_VIEW_MAX_RANK], vstrides[VKL_REF_VIEW_MAX_RANK];
    size_t es;
    vkl_status st = vkl_ref_view_of_input(a, &es, in_strides);
    if (st) return st;
    if (reps->count != in->rank)
        return vkl_fail(a->ctx, VKL_ERR_SHAPE, "Tile: %lld repeats for rank %u", (long long)reps->count, in->rank);
    for (uint32_t d = 0; d < in->rank; d++) {
        int64_t rep = vkl_ref_get_i(reps, d);
        if (rep < 0) return vkl_fail(a->ctx, VKL_ERR_SHAPE, "Tile: repeats[%u] = %lld", d, (long long)rep);
        dims[d] = in->dims[d] * rep;
        vdims[2 * d] = rep, vstrides[2 * d] = 0;
        vdims[2 * d + 1] = in->dims[d], vstrides[2 * d + 1] = in_strides[d];
    }
    if ((st = vkl_ref_check_dims(a, 0, dims, in->rank))) return st;
    vkl_ref_strided_copy(a->out[0].data, in->data, 2 * in->rank, vdims, vstrides, es);
    return VKL_OK;
}

/* Trilu over the last two dims [M, N]: upper keeps j - i >= k, lower keeps
 * j - i <= k; the rest is zero (all-zero bytes in every plain dtype). */
vkl_status vkl_ref_trilu(const vkl_ref_args *a) {
    const vkl_ref_tensor *in = &a->in[0];
    int64_t upper, k = 0;
    size_t es;
    vkl_status st = vkl_op_attr_int(a->g, a->node, "upper", &upper);
    if (!st) st = vkl_ref_elem_size(a, in->dtype, &es);
    if (!st) st = vkl_ref_check_dims(a, 0, in->dims, in->rank);
    if (st) return st;
    if (in->rank < 2) return vkl_fail(a->ctx, VKL_ERR_SHAPE, "Trilu: rank %u < 2", in->rank);
    if (vkl_ref_present(a, 1)) {
        if (a->in[1].count != 1) return vkl_fail(a->ctx, VKL_ERR_SHAPE, "Trilu: k must hold one value");
        k = vkl_ref_get_i(&a->in[1], 0);
    }
    int64_t M = in->dims[in->rank - 2], N = in->dims[in->rank - 1], mats = span(in->dims, 0, in->rank - 2);
    int64_t lim = M + N;
    k = k < -lim ? -lim : k > lim ? lim : k; /* beyond +-(M+N) nothing changes; avoids overflow */
    for (int64_t m = 0; m < mats; m++)
        for (int64_t i = 0; i < M; i++) {
            size_t row = (size_t)((m * M + i) * N) * es;
            const unsigned char *src = (const unsigned char *)in->data + row;
            unsigned char *dst = (unsigned char *)a->out[0].data + row;
            /* columns [lo, hi) are kept */
            int64_t lo = upper ? i + k : 0, hi = upper ? N : i + k + 1;
            lo = lo < 0 ? 0 : lo > N ? N : lo;
            hi = hi < lo ? lo : hi > N ? N : hi;
            memset(dst, 0, (size_t)N * es);
            memcpy(dst + (size_t)lo * es, src + (size_t)lo * es, (size_t)(hi - lo) * es);
        }
    return VKL_OK;
}
