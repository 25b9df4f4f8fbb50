/* Ref kernels of the indexing ops: Gather, GatherElements, GatherND (any
 * dtype: they move bytes) and ScatterND (reductions in fp32/f64 or int64). */
#include <string.h>

#include "ref_ops.h"
#include "strided_copy.h"

/* Index i of `idx`, negative ones counted from the end of a dim of size d;
 * VKL_ERR_INVALID_ARGUMENT when outside [-d, d). */
static vkl_status read_index(const vkl_ref_args *a, const vkl_ref_tensor *idx, int64_t i, int64_t d, int64_t *out) {
    int64_t v = vkl_ref_get_i(idx, i);
    *out = 0;
    if (v < -d || v >= d)
        return vkl_fail(a->ctx, VKL_ERR_INVALID_ARGUMENT, "%s: index %lld is out of range [%lld, %lld)",
                        vkl_ref_op_name(a), (long long)v, (long long)-d, (long long)d);
    *out = v < 0 ? v + d : v;
    return VKL_OK;
}

static int64_t span(const int64_t *dims, uint32_t from, uint32_t to) {
    int64_t n = 1;
    for (uint32_t d = from; d < to; d++) n *= dims[d];
    return n;
}

/* Gather: out[o, j..., i] = data[o, idx[j...], i], with o over data dims
 * before axis and i over those after it. */
vkl_status vkl_ref_gather(const vkl_ref_args *a) {
    const vkl_ref_tensor *data = &a->in[0], *idx = &a->in[1];
    int64_t axis_attr, dims[VKL_MAX_RANK];
    uint32_t axis, r = data->rank, q = idx->rank;
    size_t es;
    vkl_status st = vkl_op_attr_int(a->g, a->node, "axis", &axis_attr);
    if (!st) st = vkl_ref_elem_size(a, data->dtype, &es);
    if (st) return st;
    if (!vkl_ref_axis(axis_attr, r, &axis) || q + r - 1 > VKL_MAX_RANK)
        return vkl_fail(a->ctx, VKL_ERR_SHAPE, "Gather: axis %lld or index rank %u is invalid", (long long)axis_attr, q);
    for (uint32_t d = 0; d < q + r - 1; d++)
        dims[d] = d < axis ? data->dims[d] : d < axis + q ? idx->dims[d - axis] : data->dims[d - q + 1];
    if ((st = vkl_ref_check_dims(a, 0, dims, q + r - 1))) return st;
    int64_t outer = span(data->dims, 0, axis), inner = span(data->dims, axis + 1, r), n = data->dims[axis];
    size_t row = (size_t)inner * es;
    unsigned char *dst = a->out[0].data;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < idx->count; j++, dst += row) {
            int64_t k;
            if ((st = read_index(a, idx, j, n, &k))) return st;
            memcpy(dst, (const unsigned char *)data->data + (size_t)(o * n + k) * row, row);
        }
    return VKL_OK;
}

/* GatherElements: out[p] = data[p with p[axis] replaced by idx[p]]; out has
 * the shape of idx. */
vkl_status vkl_ref_gather_elements(const vkl_ref_args *a) {
    const vkl_ref_tensor *data = &a->in[0], *idx = &a->in[1];
    int64_t axis_attr, strides[VKL_MAX_RANK], pos[VKL_MAX_RANK] = {0};
    uint32_t axis, r = data->rank;
    size_t es;
    vkl_status st = vkl_op_attr_int(a->g, a->node, "axis", &axis_attr);
    if (!st) st = vkl_ref_elem_size(a, data->dtype, &es);
    if (!st) st = vkl_ref_check_dims(a, 0, idx->dims, idx->rank);
    if (st) return st;
    bool ok = vkl_ref_axis(axis_attr, r, &axis) && idx->rank == r;
    for (uint32_t d = 0; ok && d < r; d++) ok = d == axis || idx->dims[d] <= data->dims[d];
    if (!ok) return vkl_fail(a->ctx, VKL_ERR_SHAPE, "GatherElements: indices do not fit data along axis %lld", (long long)axis_attr);
    vkl_ref_strides(data, strides);
    for (int64_t i = 0; i < idx->count; i++) {
        int64_t off = 0, k;
        if ((st = read_index(a, idx, i, data->dims[axis], &k))) return st;
        for (uint32_t d = 0; d < r; d++) off += (d == axis ? k : pos[d]) * strides[d];
        memcpy((unsigned char *)a->out[0].data + (size_t)i * es, (const unsigned char *)data->data + (size_t)off * es, es);
        for (int32_t d = (int32_t)r - 1; d >= 0 && ++pos[d] == idx->dims[d]; d--) pos[d] = 0;
    }
    return VKL_OK;
}

/* Element offset in `data` of index tuple t (m entries at idx element
 * t * m) within batch b; the slice after the tuple's dims is contiguous. */
static vkl_status tuple_offset(const vkl_ref_args *a, const vkl_ref_tensor *data, const vkl_ref_tensor *idx,
                               uint32_t b, uint32_t m, int64_t batch, int64_t t, int64_t *off) {
    int64_t strides[VKL_MAX_RANK];
    vkl_ref_strides(data, strides);
    *off = b ? batch * strides[b - 1] : 0;
    for (uint32_t k = 0; k < m; k++) {
        int64_t c;
        vkl_status st = read_index(a, idx, t * m + k, data->dims[b + k], &c);
        if (st) return st;
        *off += c * strides[b + k];
    }
    return VKL_OK;
}

/* GatherND: for each index tuple idx[..., :] (within its batch), the slice
 * data[batch, tuple..., :]. out = idx.shape[:-1] + data.shape[b+m:]. */
vkl_status vkl_ref_gather_nd(const vkl_ref_args *a) {
    const vkl_ref_tensor *data = &a->in[0], *idx = &a->in[1];
    int64_t bd, dims[VKL_MAX_RANK];
    size_t es;
    vkl_status st = vkl_op_attr_int(a->g, a->node, "batch_dims", &bd);
    if (!st) st = vkl_ref_elem_size(a, data->dtype, &es);
    if (st) return st;
    uint32_t r = data->rank, q = idx->rank, b = (uint32_t)bd, m = q ? (uint32_t)idx->dims[q - 1] : 0;
    bool ok = bd >= 0 && bd < q && bd < r && m >= 1 && m <= r - b && q - 1 + r - b - m <= VKL_MAX_RANK;
    for (uint32_t d = 0; ok && d < b; d++) ok = data->dims[d] == idx->dims[d];
    if (!ok) return vkl_fail(a->ctx, VKL_ERR_SHAPE, "GatherND: indices do not fit data (batch_dims %lld)", (long long)bd);
    for (uint32_t d = 0; d < q - 1; d++) dims[d] = idx->dims[d];
    for (uint32_t d = b + m; d < r; d++) dims[q - 1 + d - b - m] = data->dims[d];
    if ((st = vkl_ref_check_dims(a, 0, dims, q - 1 + r - b - m))) return st;
    int64_t batches = span(data->dims, 0, b), tuples = idx->count / m, per_batch = batches ? tuples / batches : 0;
    size_t slice = (size_t)span(data->dims, b + m, r) * es;
    for (int64_t t = 0; t < tuples; t++) {
        int64_t off;
        if ((st = tuple_offset(a, data, idx, b, m, per_batch ? t / per_batch : 0, t, &off))) return st;
        memcpy((unsigned char *)a->out[0].data + (size_t)t * slice, (const unsigned char *)data->data + (size_t)off * es,
               slice);
    }
    return VKL_OK;
}

typedef enum { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN } reduction;

static double reduce_f(reduction r, double x, double u) {
    switch (r) {
    case RED_ADD: return x + u;
    case RED_MUL: return x * u;
    case RED_MAX: return x > u ? x : u;
    case RED_MIN: return x < u ? x : u;
    default: return u;
    }
}

/* Integers wrap like the output type (unsigned arithmetic, then stored). */
static int64_t reduce_i(reduction r, int64_t x, int64_t u) {
    switch (r) {
    case RED_ADD: return (int64_t)((uint64_t)x + (uint64_t)u);
    case RED_MUL: return (int64_t)((uint64_t)x * (uint64_t)u);
    case RED_MAX: return x > u ? x : u;
    case RED_MIN: return x < u ? x : u;
    default: return u;
    }
}

static vkl_status parse_reduction(const vkl_ref_args *a, reduction *r) {
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    const char *s;
    vkl_status st = vkl_op_attr_string(a->g, a->node, "reduction", &s);
    for (uint32_t i = 0; !st && i < VKL_ARRAY_LEN(names); i++)
        if (!strcmp(s, names[i])) {
            *r = (reduction)i;
            return VKL_OK;
        }
    return st ? st : vkl_fail(a->ctx, VKL_ERR_SHAPE, "ScatterND: unknown reduction '%s'", s);
}

/* ScatterND: out = data, then for each index tuple t in order
 * out[tuple_t, :] = reduction(out[tuple_t, :], updates[t, :]). */
vkl_status vkl_ref_scatter_nd(const vkl_ref_args *a) {
    const vkl_ref_tensor *data = &a->in[0], *idx = &a->in[1], *upd = &a->in[2];
    vkl_ref_tensor *out = &a->out[0];
    reduction red = RED_NONE;
    size_t es;
    vkl_status st = parse_reduction(a, &red);
    if (!st) st = vkl_ref_elem_size(a, data->dtype, &es);
    if (!st) st = vkl_ref_check_dims(a, 0, data->dims, data->rank);
    if (st) return st;
    uint32_t q = idx->rank, m = q ? (uint32_t)idx->dims[q - 1] : 0;
    int64_t tuples = m ? idx->count / m : 0, slice = m <= data->rank ? span(data->dims, m, data->rank) : 0;
    if (m < 1 || m > data->rank || upd->count != tuples * slice)
        return vkl_fail(a->ctx, VKL_ERR_SHAPE, "ScatterND: updates (%lld elements) do not fit %lld tuples of %lld",
                        (long long)upd->count, (long long)tuples, (long long)slice);
    if (red != RED_NONE && (data->dtype == VKL_DTYPE_FP8_E4M3 || data->dtype == VKL_DTYPE_FP8_E5M2))
        return vkl_fail(a->ctx, VKL_ERR_UNSUPPORTED, "ScatterND: reduction on %s", vkl_dtype_name(data->dtype));
    if (data->count) memcpy(out->data, data->data, (size_t)data->count * es);
    bool is_float = vkl_dtype_is_float(data->dtype);
    for (int64_t t = 0; t < tuples; t++) {
        int64_t off;
        if ((st = tuple_offset(a, data, idx, 0, m, 0, t, &off))) return st;
        if (red == RED_NONE) {
            memcpy((unsigned char *)out->data + (size_t)off * es, (const unsigned char *)upd->data + (size_t)(t * slice) * es,
                   (size_t)slice * es);
            continue;
        }
        for (int64_t i = 0; i < slice; i++) {
            if (is_float)
                vkl_ref_set_f(out, off + i, reduce_f(red, vkl_ref_get_f(out, off + i), vkl_ref_get_f(upd, t * slice + i)));
            else
                vkl_ref_set_i(out, off + i, reduce_i(red, vkl_ref_get_i(out, off + i), vkl_ref_get_i(upd, t * slice + i)));
        }
    }
    return VKL_OK;
}
