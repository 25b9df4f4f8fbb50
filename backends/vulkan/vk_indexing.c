/* Gather, GatherElements, GatherND and ScatterND on Vulkan. Data of any
 * dtype of 1 to 8 bytes; indices i32 or i64, negative ones counted from the
 * end. An index out of range is an error ref reports from the data; the
 * kernels cannot report it, so they clamp it (gathers) or skip it
 * (ScatterND) and never touch memory outside their tensors (index.glsl).
 * Where every index must be out of range (an empty axis, a non-empty
 * output) prepare says so, with ref's status. */
#include <string.h>

#include "../../engine/ops.h"
#include "vk_internal.h"

static int64_t span(const int64_t *dims, uint32_t from, uint32_t to) {
    int64_t n = 1;
    for (uint32_t d = from; d < to; d++) n *= dims[d];
    return n;
}

static vkl_status index_tensor(const vkl_vk_node *nd, const vkl_vk_tensor *idx) {
    if (idx->dtype == VKL_DTYPE_I64 || idx->dtype == VKL_DTYPE_I32) return VKL_OK;
    return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "indices must be i32 or i64, not %s", vkl_dtype_name(idx->dtype));
}

/* The kernels index in 32 bits and wrap negative indices as int. */
static vkl_status index_limits(const vkl_vk_node *nd, const vkl_vk_tensor *data, const vkl_vk_tensor *idx,
                               const vkl_vk_tensor *y) {
    if (data->count >= (1ll << 31) || idx->count >= (1ll << 31) || y->count >= (1ll << 31) ||
        data->bytes / 4 >= (1ull << 31) || y->bytes / 4 >= (1ull << 31))
        return vkl_vk_node_unsupported(nd, "tensors of %lld, %lld and %lld elements exceed 31-bit indexing",
                                       (long long)data->count, (long long)idx->count, (long long)y->count);
    return VKL_OK;
}

static vkl_status empty_axis(const vkl_vk_node *nd, uint32_t axis) {
    return vkl_vk_node_fail(nd, VKL_ERR_INVALID_ARGUMENT,
                            "data axis %u is empty, so every index is out of range", axis);
}

static void dispatch_init(const vkl_vk_node *nd, vkl_vk_dispatch *d, const char *shader) {
    memset(d, 0, sizeof(*d));
    d->shader = shader;
    d->spec[0] = vkl_vk_move_wg(nd->dev);
}

/* Gather: out[o, j, i] = data[o, idx[j], i], o over the dims before axis,
 * i over those after. Rows of whole words (every f32, i64, f64 table; f16
 * and bf16 of even width) go to gather_rows, 16 bytes an invocation where
 * rows allow; others to gather (per element).
 *
 * A table over the binding limit (an embedding: dims[0] rows in pieces,
 * vk_weights.c) is gathered along axis 0 by one gather_rows dispatch per
 * piece, each copying the rows whose index falls in its piece and skipping
 * the rest: the kernel keeps one binding and any number of pieces works,
 * where a kernel with a binding per piece would stop at 8 bindings; the cost
 * is each dispatch reading the indices again (a few per token). */
/* Gather along axis 0 of a table in row pieces: one gather_rows dispatch
 * per piece, words units per row. */
static vkl_status gather_pieces(const vkl_vk_node *nd, const vkl_vk_tensor *data, const vkl_vk_tensor *idx,
                                const vkl_vk_tensor *y, int64_t words, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_vk_weight *w = data->weight;
    if (w->n_pieces > VKL_VK_MAX_DISPATCHES)
        return vkl_vk_node_unsupported(nd, "a table in %u pieces needs more than %u dispatches", w->n_pieces,
                                       VKL_VK_MAX_DISPATCHES);
    for (uint32_t i = 0; i < w->n_pieces; i++) {
        const vkl_vk_piece *p = &w->piece[i];
        vkl_vk_dispatch *d = &out[i];
        dispatch_init(nd, d, "gather_rows");
        d->spec[1] = (uint32_t)idx->dtype;
        d->n_spec = 2;
        d->push[0] = (uint32_t)(idx->count * words);
        d->push[1] = (uint32_t)words;
        d->push[2] = (uint32_t)idx->count;
        d->push[3] = (uint32_t)data->dims[0];
        d->push[4] = (uint32_t)p->row0;
        d->push[5] = (uint32_t)p->rows;
        d->n_push = 6;
        vkl_status st = vkl_vk_grid(nd, (uint64_t)(idx->count * words), d->spec[0], d->groups);
        if (st) return st;
        d->bind[0] = p->qs;
        d->bind[1] = idx->at;
        d->bind[2] = y->at;
        d->n_bind = 3;
    }
    *count = w->n_pieces;
    return VKL_OK;
}

vkl_status vkl_vk_record_gather(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_vk_tensor *data = &nd->in[0], *idx = &nd->in[1], *y = &nd->out[0];
    uint32_t axis = 0, es = 0; /* set by the checks below; -O3 cannot see it */
    int64_t dims[VKL_MAX_RANK];
    *count = 0;
    vkl_status st = vkl_vk_axis_attr(nd, data->rank, &axis);
    if (!st) st = vkl_vk_elem_bytes(nd, data, &es);
    if (!st) st = index_tensor(nd, idx);
    if (st) return st;
    const uint32_t r = data->rank, q = idx->rank;
    if (q + r - 1 > VKL_MAX_RANK) return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "output rank %u", q + r - 1);
    for (uint32_t d = 0; d < q + r - 1; d++)
        dims[d] = d < axis ? data->dims[d] : d < axis + q ? idx->dims[d - axis] : data->dims[d - q + 1];
    if ((st = vkl_vk_check_dims(nd, 0, dims, q + r - 1)) || !y->count) return st;
    if (!data->dims[axis]) return empty_axis(nd, axis);
    if ((st = index_limits(nd, data, idx, y))) return st;
    const int64_t outer = span(data->dims, 0, axis), n = data->dims[axis];
    const int64_t inner = span(data->dims, axis + 1, r);
    if (data->pieced || idx->pieced || y->pieced) {
        if (axis || inner * es % 4 || !data->weight || idx->pieced || y->pieced)
            return vkl_vk_node_unsupported(nd, "a tensor is over the binding limit (%s, %llu bytes); Gather takes "
                                           "only a weight table in pieces, along axis 0, with rows of whole words",
                                           vkl_vk_bind_limit_name(nd->dev), (unsigned long long)nd->dev->bind_limit);
        return gather_pieces(nd, data, idx, y, inner * es / 4, out, count);
    }
    vkl_vk_dispatch *d = &out[0];
    if (inner * es % 4 == 0) {
        const int64_t words = inner * es / 4, rows = outer * idx->count;
        const bool v4 = words % 4 == 0 && data->at.offset % 16 == 0 && y->at.offset % 16 == 0;
        const int64_t I = v4 ? words / 4 : words;
        dispatch_init(nd, d, v4 ? "gather_rows_v4" : "gather_rows");
        d->spec[1] = (uint32_t)idx->dtype;
        d->n_spec = 2;
        d->push[0] = (uint32_t)(rows * I);
        d->push[1] = (uint32_t)I;
        d->push[2] = (uint32_t)idx->count;
        d->push[3] = (uint32_t)n;
        d->push[4] = 0;
        d->push[5] = (uint32_t)n;
        d->n_push = 6;
        if ((st = vkl_vk_grid(nd, (uint64_t)(rows * I), d->spec[0], d->groups))) return st;
    } else {
        const uint64_t units = ((uint64_t)y->count * es + 3) / 4;
        dispatch_init(nd, d, "gather");
        d->spec[1] = es;
        d->spec[2] = (uint32_t)idx->dtype;
        d->n_spec = 3;
        d->push[0] = (uint32_t)units;
        d->push[1] = (uint32_t)y->count;
        d->push[2] = (uint32_t)inner;
        d->push[3] = (uint32_t)idx->count;
        d->push[4] = (uint32_t)n;
        d->n_push = 5;
        if ((st = vkl_vk_grid(nd, units, d->spec[0], d->groups))) return st;
    }
    d->bind[0] = data->at;
    d->bind[1] = idx->at;
    d->bind[2] = y->at;
    d->n_bind = 3;
    *count = 1;
    return VKL_OK;
}

/* GatherElements: out[p] = data[p with p[axis] = idx[p]]; out has idx's shape. */
vkl_status vkl_vk_record_gather_elements(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_vk_tensor *data = &nd->in[0], *idx = &nd->in[1], *y = &nd->out[0];
    uint32_t axis = 0, es = 0; /* set by the checks below; -O3 cannot see it */
    int64_t strides[VKL_MAX_RANK];
    *count = 0;
    vkl_status st = vkl_vk_axis_attr(nd, data->rank, &axis);
    if (!st) st = vkl_vk_elem_bytes(nd, data, &es);
    if (!st) st = index_tensor(nd, idx);
    if (!st) st = vkl_vk_check_dims(nd, 0, idx->dims, idx->rank);
    if (st) return st;
    bool ok = idx->rank == data->rank;
    for (uint32_t d = 0; ok && d < data->rank; d++) ok = d == axis || idx->dims[d] <= data->dims[d];
    if (!ok) return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "indices do not fit data along axis %u", axis);
    if (!y->count) return VKL_OK;
    if (!data->dims[axis]) return empty_axis(nd, axis);
    if ((st = index_limits(nd, data, idx, y))) return st;
    vkl_vk_contiguous_strides(data->rank, data->dims, strides);
    const uint32_t pad = 8 - data->rank;
    const uint64_t units = es == 8 ? (uint64_t)y->count : ((uint64_t)y->count * es + 3) / 4;
    vkl_vk_dispatch *d = &out[0];
    dispatch_init(nd, d, "gather_elements");
    d->spec[1] = es;
    d->spec[2] = (uint32_t)idx->dtype;
    d->n_spec = 3;
    d->push[0] = (uint32_t)units;
    d->push[1] = (uint32_t)y->count;
    d->push[2] = pad + axis;
    d->push[3] = (uint32_t)data->dims[axis];
    for (uint32_t i = 0; i < 8; i++) {
        d->push[4 + i] = i < pad ? 1u : (uint32_t)idx->dims[i - pad];
        d->push[12 + i] = i < pad ? 0u : (uint32_t)strides[i - pad];
    }
    d->n_push = 20;
    d->bind[0] = data->at;
    d->bind[1] = idx->at;
    d->bind[2] = y->at;
    d->n_bind = 3;
    if ((st = vkl_vk_grid(nd, units, d->spec[0], d->groups))) return st;
    *count = 1;
    return VKL_OK;
}

/* GatherND: for each index tuple (the last dim of idx, m entries) within
 * its batch (batch_dims b), the slice data[batch, tuple..., :];
 * out = idx.shape[:-1] + data.shape[b + m:]. */
vkl_status vkl_vk_record_gather_nd(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_vk_tensor *data = &nd->in[0], *idx = &nd->in[1], *y = &nd->out[0];
    int64_t bd, dims[VKL_MAX_RANK], strides[VKL_MAX_RANK];
    uint32_t es;
    *count = 0;
    vkl_status st = vkl_op_attr_int(nd->g, nd->index, "batch_dims", &bd);
    if (!st) st = vkl_vk_elem_bytes(nd, data, &es);
    if (!st) st = index_tensor(nd, idx);
    if (st) return st;
    const uint32_t r = data->rank, q = idx->rank;
    const uint32_t b = (uint32_t)bd, m = q ? (uint32_t)idx->dims[q - 1] : 0;
    bool ok = bd >= 0 && bd < q && bd < r && m >= 1 && m <= r - b && q - 1 + r - b - m <= VKL_MAX_RANK;
    for (uint32_t d = 0; ok && d < b; d++) ok = data->dims[d] == idx->dims[d];
    if (!ok) return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "indices do not fit data (batch_dims %lld)", (long long)bd);
    for (uint32_t d = 0; d < q - 1; d++) dims[d] = idx->dims[d];
    for (uint32_t d = b + m; d < r; d++) dims[q - 1 + d - b - m] = data->dims[d];
    if ((st = vkl_vk_check_dims(nd, 0, dims, q - 1 + r - b - m)) || !y->count) return st;
    for (uint32_t k = 0; k < m; k++)
        if (!data->dims[b + k]) return empty_axis(nd, b + k);
    if ((st = index_limits(nd, data, idx, y))) return st;
    vkl_vk_contiguous_strides(r, data->dims, strides);
    const int64_t tuples = idx->count / m, batches = span(data->dims, 0, b);
    /* slice, batch stride and the tuple's strides, widened together */
    int64_t v[2 + VKL_MAX_RANK];
    v[0] = span(data->dims, b + m, r);
    v[1] = span(data->dims, b, r);
    for (uint32_t k = 0; k < m; k++) v[2 + k] = strides[b + k];
    if (es == 8)
        for (uint32_t k = 0; k < 2 + m; k++) v[k] *= 2;
    es = es == 8 ? 4 : es;
    for (bool even = true; es < 4 && even; ) {
        for (uint32_t k = 0; k < 2 + m && even; k++) even = v[k] % 2 == 0;
        if (!even) break;
        for (uint32_t k = 0; k < 2 + m; k++) v[k] /= 2;
        es *= 2;
    }
    const int64_t elems = (int64_t)(y->bytes / es);
    const uint64_t units = ((uint64_t)elems * es + 3) / 4;
    vkl_vk_dispatch *d = &out[0];
    dispatch_init(nd, d, "gather_nd");
    d->spec[1] = es;
    d->spec[2] = (uint32_t)idx->dtype;
    d->n_spec = 3;
    d->push[0] = (uint32_t)units;
    d->push[1] = (uint32_t)elems;
    d->push[2] = (uint32_t)v[0];
    d->push[3] = (uint32_t)(tuples / batches);
    d->push[4] = (uint32_t)v[1];
    d->push[5] = m;
    for (uint32_t k = 0; k < 8; k++) {
        d->push[6 + k] = k < m ? (uint32_t)data->dims[b + k] : 1u;
        d->push[14 + k] = k < m ? (uint32_t)v[2 + k] : 0u;
    }
    d->n_push = 22;
    d->bind[0] = data->at;
    d->bind[1] = idx->at;
    d->bind[2] = y->at;
    d->n_bind = 3;
    if ((st = vkl_vk_grid(nd, units, d->spec[0], d->groups))) return st;
    *count = 1;
    return VKL_OK;
}

/* ScatterND: out = data (a copy), then for each index tuple t in order
 * out[tuple_t, :] = reduction(out[tuple_t, :], updates[t, :]) (scatter_nd.comp). */
vkl_status vkl_vk_record_scatter_nd(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    const vkl_vk_tensor *data = &nd->in[0], *idx = &nd->in[1], *upd = &nd->in[2], *y = &nd->out[0];
    const char *red_name;
    uint32_t es, red = VKL_ARRAY_LEN(names);
    int64_t strides[VKL_MAX_RANK];
    *count = 0;
    vkl_status st = vkl_op_attr_string(nd->g, nd->index, "reduction", &red_name);
    for (uint32_t i = 0; !st && i < VKL_ARRAY_LEN(names); i++)
        if (!strcmp(red_name, names[i])) red = i;
    if (!st && red == VKL_ARRAY_LEN(names)) st = vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "unknown reduction '%s'", red_name);
    if (!st) st = vkl_vk_elem_bytes(nd, data, &es);
    if (!st) st = index_tensor(nd, idx);
    if (!st) st = vkl_vk_check_dims(nd, 0, data->dims, data->rank);
    if (st) return st;
    const uint32_t q = idx->rank, m = q ? (uint32_t)idx->dims[q - 1] : 0;
    const int64_t tuples = m ? idx->count / m : 0, slice = m <= data->rank ? span(data->dims, m, data->rank) : 0;
    if (m < 1 || m > data->rank || upd->count != tuples * slice || upd->dtype != data->dtype)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "updates (%lld elements) do not fit %lld tuples of %lld",
                                (long long)upd->count, (long long)tuples, (long long)slice);
    if (red && (data->dtype == VKL_DTYPE_FP8_E4M3 || data->dtype == VKL_DTYPE_FP8_E5M2))
        return vkl_vk_node_unsupported(nd, "reduction on %s", vkl_dtype_name(data->dtype));
    if ((red == 1 || red == 2) && data->dtype == VKL_DTYPE_F64)
        return vkl_vk_node_unsupported(nd, "reduction '%s' on f64 (no f64 arithmetic on this path)", names[red]);
    if ((st = vkl_vk_record_copy(nd, data, y, &out[0], count))) return st;
    if (!tuples || !slice) return VKL_OK;
    if ((st = index_limits(nd, data, idx, y))) return st;
    vkl_vk_contiguous_strides(data->rank, data->dims, strides);
    const bool aligned = es == 8 || slice * es % 4 == 0;
    const uint64_t units = es == 8 ? (uint64_t)slice
                           : aligned ? (uint64_t)(slice * es / 4)
                                     : ((uint64_t)y->count * es + 3) / 4;
    vkl_vk_dispatch *d = &out[*count];
    dispatch_init(nd, d, "scatter_nd");
    d->spec[1] = es;
    d->spec[2] = (uint32_t)data->dtype;
    d->spec[3] = red;
    d->spec[4] = aligned ? 1u : 0u;
    d->spec[5] = (uint32_t)idx->dtype;
    d->n_spec = 6;
    d->push[0] = (uint32_t)units;
    d->push[1] = (uint32_t)y->count;
    d->push[2] = (uint32_t)tuples;
    d->push[3] = m;
    d->push[4] = (uint32_t)slice;
    for (uint32_t k = 0; k < 8; k++) {
        d->push[5 + k] = k < m ? (uint32_t)data->dims[k] : 1u;
        d->push[13 + k] = k < m ? (uint32_t)strides[k] : 0u;
    }
    d->n_push = 21;
    d->bind[0] = idx->at;
    d->bind[1] = upd->at;
    d->bind[2] = y->at;
    d->n_bind = 3;
    if ((st = vkl_vk_grid(nd, units, d->spec[0], d->groups))) return st;
    (*count)++;
    return VKL_OK;
}
