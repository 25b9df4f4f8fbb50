/* Shape rules and table entries of the indexing ops: Gather, GatherND,
 * GatherElements, ScatterND; Gather and friends also propagate values. */
#include <string.h>

#include "movement_util.h"
#include "op_defs.h"

/* False when both dims are constants that differ (symbolic: checked by the
 * kernel at run time). */
static bool dims_may_match(const vkl_graph *g, vkl_expr a, vkl_expr b) {
    int64_t ca, cb;
    return a == b || !vkl_expr_is_const(g->syms, a, &ca) || !vkl_expr_is_const(g->syms, b, &cb) || ca == cb;
}

static vkl_status check_indices_dtype(vkl_graph *g, uint32_t node, const vkl_tensor *idx) {
    if (idx->dtype == VKL_DTYPE_I64 || idx->dtype == VKL_DTYPE_I32) return VKL_OK;
    return vkl_fail(g->ctx, VKL_ERR_SHAPE, "%s: indices must be i32 or i64, not %s", vkl_mv_op_name(g, node),
                    vkl_dtype_name(idx->dtype));
}

/* Constant indices (weights or known values) are checked against a constant
 * axis size now rather than at run time. */
static vkl_status check_const_indices(vkl_graph *g, uint32_t node, const vkl_tensor *idx, vkl_expr dim, uint32_t axis,
                                      int64_t *vals, uint32_t *count) {
    int64_t d;
    *count = 0;
    if (!vkl_tensor_const_ints(g, idx, vals, VKL_MAX_VALUE_ELEMS, count)) {
        *count = UINT32_MAX; /* unknown */
        return VKL_OK;
    }
    if (!vkl_expr_is_const(g->syms, dim, &d)) return VKL_OK;
    for (uint32_t i = 0; i < *count; i++)
        if (vals[i] < -d || vals[i] >= d)
            return vkl_fail(g->ctx, VKL_ERR_INVALID_ARGUMENT, "%s: index %lld is out of range for axis %u of size %lld",
                            vkl_mv_op_name(g, node), (long long)vals[i], axis, (long long)d);
    return VKL_OK;
}

/* Gather and GatherElements: data, integer indices and the axis attribute. */
static vkl_status gather_inputs(vkl_graph *g, uint32_t node, const vkl_tensor **data, const vkl_tensor **idx,
                                uint32_t *axis) {
    int64_t axis_attr;
    vkl_status st = vkl_node_require(g, node, 0, data);
    if (!st) st = vkl_node_require(g, node, 1, idx);
    if (!st) st = vkl_op_attr_int(g, node, "axis", &axis_attr);
    if (!st) st = check_indices_dtype(g, node, *idx);
    if (st) return st;
    if ((*data)->shape.rank == 0)
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "%s: data must have rank >= 1", vkl_mv_op_name(g, node));
    if ((st = vkl_axis_norm(g, axis_attr, (*data)->shape.rank, false, axis)))
        return vkl_fail_prefix(g->ctx, st, "%s: attribute axis", vkl_mv_op_name(g, node));
    return VKL_OK;
}

/* ---- Gather -------------------------------------------------------------- */

/* out[o, j, i] = data[o, idx[j], i] over (outer, indices, inner). */
static vkl_status gather_value(vkl_graph *g, uint32_t node, const vkl_tensor *data, uint32_t axis, const int64_t *idx,
                               uint32_t m) {
    vkl_expr v[VKL_MAX_VALUE_ELEMS], o[VKL_MAX_VALUE_ELEMS];
    int64_t dims[VKL_MAX_RANK], outer = 1, inner = 1;
    uint32_t cnt, pos = 0;
    if (m == UINT32_MAX || !vkl_mv_known_value(g, data, v, &cnt, dims)) return VKL_OK;
    for (uint32_t d = 0; d < axis; d++) outer *= dims[d];
    for (uint32_t d = axis + 1; d < data->shape.rank; d++) inner *= dims[d];
    if (outer * m * inner > VKL_MAX_VALUE_ELEMS) return VKL_OK;
    for (int64_t a = 0; a < outer; a++)
        for (uint32_t j = 0; j < m; j++) {
            int64_t k = idx[j] < 0 ? idx[j] + dims[axis] : idx[j];
            memcpy(o + pos, v + (a * dims[axis] + k) * inner, (size_t)inner * sizeof(vkl_expr));
            pos += (uint32_t)inner;
        }
    return vkl_mv_set_value(g, node, 0, o, pos);
}

static vkl_status gather_infer(vkl_graph *g, uint32_t node) {
    const vkl_tensor *data, *idx;
    int64_t vals[VKL_MAX_VALUE_ELEMS];
    uint32_t axis, m;
    vkl_status st = gather_inputs(g, node, &data, &idx, &axis);
    if (st) return st;
    uint32_t r = data->shape.rank, q = idx->shape.rank;
    if (q + r - 1 > VKL_MAX_RANK)
        return vkl_fail(g->ctx, VKL_ERR_UNSUPPORTED, "Gather: output rank %u > %d", q + r - 1, VKL_MAX_RANK);
    vkl_shape out = {.rank = q + r - 1};
    for (uint32_t d = 0; d < out.rank; d++)
        out.dims[d] = d < axis ? data->shape.dims[d] : d < axis + q ? idx->shape.dims[d - axis] : data->shape.dims[d - q + 1];
    if ((st = check_const_indices(g, node, idx, data->shape.dims[axis], axis, vals, &m))) return st;
    if ((st = vkl_node_set_out(g, node, 0, data->dtype, &out))) return st;
    return gather_value(g, node, data, axis, vals, m);
}

static const vkl_attr_schema gather_attrs[] = {{"axis", VKL_ATTR_INT, false, 0, 0, NULL}};
const vkl_op_info vkl_op_info_gather = {"Gather", "", 2, 2, 1, 1, false, -1, gather_attrs, 1, gather_infer};

/* ---- GatherElements ------------------------------------------------------ */

/* out[i] = data[i with its axis coordinate replaced by idx[i]]. */
static vkl_status gather_elements_value(vkl_graph *g, uint32_t node, const vkl_tensor *data, const vkl_tensor *idx,
                                        uint32_t axis, const int64_t *vals, uint32_t m) {
    vkl_expr v[VKL_MAX_VALUE_ELEMS], o[VKL_MAX_VALUE_ELEMS];
    int64_t dims[VKL_MAX_RANK], idims[VKL_MAX_RANK], strides[VKL_MAX_RANK], pos[VKL_MAX_RANK] = {0};
    uint32_t cnt;
    if (m == UINT32_MAX || !vkl_mv_known_value(g, data, v, &cnt, dims) || !vkl_mv_const_dims(g, &idx->shape, idims))
        return VKL_OK;
    vkl_mv_strides(dims, data->shape.rank, strides);
    for (uint32_t i = 0; i < m; i++) {
        int64_t off = 0;
        for (uint32_t d = 0; d < data->shape.rank; d++) {
            int64_t c = d == axis ? (vals[i] < 0 ? vals[i] + dims[d] : vals[i]) : pos[d];
            off += c * strides[d];
        }
        o[i] = v[off];
        for (int32_t d = (int32_t)data->shape.rank - 1; d >= 0 && ++pos[d] == idims[d]; d--) pos[d] = 0;
    }
    return vkl_mv_set_value(g, node, 0, o, m);
}

static vkl_status gather_elements_infer(vkl_graph *g, uint32_t node) {
    const vkl_tensor *data, *idx;
    int64_t vals[VKL_MAX_VALUE_ELEMS];
    uint32_t axis, m;
    vkl_status st = gather_inputs(g, node, &data, &idx, &axis);
    if (st) return st;
    char sd[128], si[128];
    if (idx->shape.rank != data->shape.rank)
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "GatherElements: data %s and indices %s must have the same rank",
                        vkl_shape_str(g, &data->shape, sd, sizeof(sd)), vkl_shape_str(g, &idx->shape, si, sizeof(si)));
    for (uint32_t d = 0; d < data->shape.rank; d++) {
        int64_t a, b;
        if (d != axis && vkl_expr_is_const(g->syms, idx->shape.dims[d], &a) &&
            vkl_expr_is_const(g->syms, data->shape.dims[d], &b) && a > b)
            return vkl_fail(g->ctx, VKL_ERR_SHAPE, "GatherElements: indices %s exceed data %s in dim %u",
                            vkl_shape_str(g, &idx->shape, si, sizeof(si)), vkl_shape_str(g, &data->shape, sd, sizeof(sd)), d);
    }
    if ((st = check_const_indices(g, node, idx, data->shape.dims[axis], axis, vals, &m))) return st;
    if ((st = vkl_node_set_out(g, node, 0, data->dtype, &idx->shape))) return st;
    return gather_elements_value(g, node, data, idx, axis, vals, m);
}

static const vkl_attr_schema gather_elements_attrs[] = {{"axis", VKL_ATTR_INT, false, 0, 0, NULL}};
const vkl_op_info vkl_op_info_gather_elements = {"GatherElements", "", 2, 2, 1, 1, false, -1,
                                                 gather_elements_attrs, 1, gather_elements_infer};

/* ---- GatherND / ScatterND ------------------------------------------------ */

/* indices [..., m]: m, the length of each index tuple, must be a constant
 * in [1, rank - batch_dims]. */
static vkl_status index_depth(vkl_graph *g, uint32_t node, const vkl_tensor *data, const vkl_tensor *idx, uint32_t b,
                              uint32_t *m) {
    int64_t c;
    char si[128];
    if (idx->shape.rank == 0)
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "%s: indices must have rank >= 1", vkl_mv_op_name(g, node));
    if (!vkl_expr_is_const(g->syms, idx->shape.dims[idx->shape.rank - 1], &c))
        return vkl_fail(g->ctx, VKL_ERR_UNSUPPORTED, "%s: the last dim of indices %s must be a constant",
                        vkl_mv_op_name(g, node), vkl_shape_str(g, &idx->shape, si, sizeof(si)));
    if (c < 1 || c > (int64_t)data->shape.rank - (int64_t)b)
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "%s: index tuples of length %lld for data of rank %u (batch_dims %u)",
                        vkl_mv_op_name(g, node), (long long)c, data->shape.rank, b);
    *m = (uint32_t)c;
    return VKL_OK;
}

/* GatherND value: both small and known. */
static vkl_status gather_nd_value(vkl_graph *g, uint32_t node, const vkl_tensor *data, const vkl_tensor *idx,
                                  uint32_t b, uint32_t m) {
    vkl_expr v[VKL_MAX_VALUE_ELEMS], o[VKL_MAX_VALUE_ELEMS];
    int64_t dims[VKL_MAX_RANK], strides[VKL_MAX_RANK], iv[VKL_MAX_VALUE_ELEMS], idims[VKL_MAX_RANK];
    uint32_t cnt, icnt, pos = 0;
    if (!vkl_mv_known_value(g, data, v, &cnt, dims) || !vkl_mv_const_dims(g, &idx->shape, idims) ||
        !vkl_tensor_const_ints(g, idx, iv, VKL_MAX_VALUE_ELEMS, &icnt))
        return VKL_OK;
    vkl_mv_strides(dims, data->shape.rank, strides);
    int64_t batch = 1, slice = 1, per_batch;
    for (uint32_t d = 0; d < b; d++) batch *= dims[d];
    for (uint32_t d = b + m; d < data->shape.rank; d++) slice *= dims[d];
    per_batch = batch ? icnt / m / batch : 0;
    if (icnt / m * slice > VKL_MAX_VALUE_ELEMS) return VKL_OK;
    for (int64_t bi = 0; bi < batch; bi++)
        for (int64_t t = 0; t < per_batch; t++) {
            const int64_t *tuple = iv + (bi * per_batch + t) * m;
            int64_t off = b ? bi * strides[b - 1] : 0;
            for (uint32_t k = 0; k < m; k++) {
                int64_t d = dims[b + k], c = tuple[k] < 0 ? tuple[k] + d : tuple[k];
                if (c < 0 || c >= d)
                    return vkl_fail(g->ctx, VKL_ERR_INVALID_ARGUMENT, "GatherND: index %lld out of range for dim %u of size %lld",
                                    (long long)tuple[k], b + k, (long long)d);
                off += c * strides[b + k];
            }
            memcpy(o + pos, v + off, (size_t)slice * sizeof(vkl_expr));
            pos += (uint32_t)slice;
        }
    return vkl_mv_set_value(g, node, 0, o, pos);
}

static vkl_status gather_nd_infer(vkl_graph *g, uint32_t node) {
    const vkl_tensor *data, *idx;
    int64_t bd;
    uint32_t m;
    vkl_status st = vkl_node_require(g, node, 0, &data);
    if (!st) st = vkl_node_require(g, node, 1, &idx);
    if (!st) st = vkl_op_attr_int(g, node, "batch_dims", &bd);
    if (st) return st;
    if (idx->dtype != VKL_DTYPE_I64)
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "GatherND: indices must be i64, not %s", vkl_dtype_name(idx->dtype));
    uint32_t r = data->shape.rank, q = idx->shape.rank;
    if (bd < 0 || bd >= (int64_t)(q < r ? q : r))
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "GatherND: batch_dims %lld must be in [0, min(rank(data) %u, rank(indices) %u))",
                        (long long)bd, r, q);
    uint32_t b = (uint32_t)bd;
    if ((st = index_depth(g, node, data, idx, b, &m))) return st;
    char sd[128], si[128];
    for (uint32_t d = 0; d < b; d++)
        if (!dims_may_match(g, data->shape.dims[d], idx->shape.dims[d]))
            return vkl_fail(g->ctx, VKL_ERR_SHAPE, "GatherND: batch dim %u of data %s and indices %s differ", d,
                            vkl_shape_str(g, &data->shape, sd, sizeof(sd)), vkl_shape_str(g, &idx->shape, si, sizeof(si)));
    vkl_shape out = {.rank = q - 1 + r - b - m};
    if (out.rank > VKL_MAX_RANK)
        return vkl_fail(g->ctx, VKL_ERR_UNSUPPORTED, "GatherND: output rank %u > %d", out.rank, VKL_MAX_RANK);
    for (uint32_t d = 0; d < q - 1; d++) out.dims[d] = idx->shape.dims[d];
    for (uint32_t d = b + m; d < r; d++) out.dims[q - 1 + d - b - m] = data->shape.dims[d];
    if ((st = vkl_node_set_out(g, node, 0, data->dtype, &out))) return st;
    return gather_nd_value(g, node, data, idx, b, m);
}

static const vkl_attr_schema gather_nd_attrs[] = {{"batch_dims", VKL_ATTR_INT, false, 0, 0, NULL}};
const vkl_op_info vkl_op_info_gather_nd = {"GatherND", "", 2, 2, 1, 1, false, -1, gather_nd_attrs, 1, gather_nd_infer};

static vkl_status scatter_nd_infer(vkl_graph *g, uint32_t node) {
    const vkl_tensor *data, *idx, *upd;
    const char *red;
    uint32_t m;
    vkl_status st = vkl_node_require(g, node, 0, &data);
    if (!st) st = vkl_node_require(g, node, 1, &idx);
    if (!st) st = vkl_node_require(g, node, 2, &upd);
    if (!st) st = vkl_op_attr_string(g, node, "reduction", &red);
    if (st) return st;
    if (strcmp(red, "none") && strcmp(red, "add") && strcmp(red, "mul") && strcmp(red, "max") && strcmp(red, "min"))
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "ScatterND: reduction '%s' is not none, add, mul, max or min", red);
    if (idx->dtype != VKL_DTYPE_I64)
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "ScatterND: indices must be i64, not %s", vkl_dtype_name(idx->dtype));
    if (upd->dtype != data->dtype)
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "ScatterND: updates are %s; data is %s", vkl_dtype_name(upd->dtype),
                        vkl_dtype_name(data->dtype));
    if ((st = index_depth(g, node, data, idx, 0, &m))) return st;
    /* updates: indices.shape[:-1] + data.shape[m:] */
    uint32_t q = idx->shape.rank, r = data->shape.rank;
    bool ok = upd->shape.rank == q - 1 + r - m;
    for (uint32_t d = 0; ok && d < upd->shape.rank; d++)
        ok = dims_may_match(g, upd->shape.dims[d], d < q - 1 ? idx->shape.dims[d] : data->shape.dims[d - (q - 1) + m]);
    if (!ok) {
        char sd[128], si[128], su[128];
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "ScatterND: updates %s must be indices.shape[:-1] + data.shape[%u:] "
                        "(data %s, indices %s)", vkl_shape_str(g, &upd->shape, su, sizeof(su)), m,
                        vkl_shape_str(g, &data->shape, sd, sizeof(sd)), vkl_shape_str(g, &idx->shape, si, sizeof(si)));
    }
    return vkl_node_set_out(g, node, 0, data->dtype, &data->shape);
}

static const vkl_attr_schema scatter_nd_attrs[] = {{"reduction", VKL_ATTR_STRING, false, 0, 0, "none"}};
const vkl_op_info vkl_op_info_scatter_nd = {"ScatterND", "", 3, 3, 1, 1, false, -1, scatter_nd_attrs, 1,
                                            scatter_nd_infer};
