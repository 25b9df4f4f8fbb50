/* Ref kernels of the shape sources (Shape, Size) and generators (Constant,
 * ConstantOfShape, Range). */
#include <math.h>
#include <string.h>

#include "ref_ops.h"
#include "strided_copy.h"

/* Shape: i64 dims[start:end]; negatives count from the rank, both clamp
 * into [0, rank]. */
vkl_status vkl_ref_shape(const vkl_ref_args *a) {
    const vkl_ref_tensor *in = &a->in[0];
    int64_t start, end, r = in->rank;
    vkl_status st = vkl_op_attr_int(a->g, a->node, "start", &start);
    if (!st) st = vkl_op_attr_int(a->g, a->node, "end", &end);
    if (st) return st;
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = start < 0 ? 0 : start > r ? r : start;
    end = end < start ? start : end > r ? r : end;
    int64_t n = end - start;
    if ((st = vkl_ref_check_dims(a, 0, &n, 1))) return st;
    for (int64_t i = 0; i < n; i++) vkl_ref_set_i(&a->out[0], i, in->dims[start + i]);
    return VKL_OK;
}

/* Size: the element count, an i64 scalar. */
vkl_status vkl_ref_size(const vkl_ref_args *a) {
    vkl_status st = vkl_ref_check_dims(a, 0, NULL, 0);
    if (!st) vkl_ref_set_i(&a->out[0], 0, a->in[0].count);
    return st;
}

/* The weight named by the node's TENSOR attribute `value`, or NULL. */
static const vkl_tensor *value_attr(const vkl_ref_args *a) {
    const vkl_attr *at = vkl_node_attr(&a->g->nodes[a->node], "value");
    if (!at || at->kind != VKL_ATTR_TENSOR || at->i < 0 || at->i >= (int64_t)a->g->n_tensors) return NULL;
    return &a->g->tensors[at->i];
}

/* Constant: the attribute tensor's bytes. */
vkl_status vkl_ref_constant(const vkl_ref_args *a) {
    const vkl_tensor *w = value_attr(a);
    size_t es;
    if (!w || !w->data) return vkl_fail(a->ctx, VKL_ERR_FORMAT, "Constant: attribute value is missing");
    vkl_status st = vkl_ref_elem_size(a, w->dtype, &es);
    if (st) return st;
    if (a->out[0].dtype != w->dtype || (size_t)a->out[0].count * es != w->nbytes)
        return vkl_fail(a->ctx, VKL_ERR_SHAPE, "Constant: output does not match the %zu-byte value", w->nbytes);
    if (w->nbytes) memcpy(a->out[0].data, w->data, w->nbytes);
    return VKL_OK;
}

/* ConstantOfShape: dims = the input's values, every element = the one
 * element of `value` (default f32 0). */
vkl_status vkl_ref_constant_of_shape(const vkl_ref_args *a) {
    const vkl_ref_tensor *shape = &a->in[0];
    const vkl_tensor *w = value_attr(a);
    static const float zero = 0.0f;
    const void *fill = w ? w->data : &zero;
    vkl_dtype dt = w ? w->dtype : VKL_DTYPE_F32;
    int64_t dims[VKL_MAX_RANK];
    size_t es;
    vkl_status st = vkl_ref_elem_size(a, dt, &es);
    if (st) return st;
    if (shape->count > VKL_MAX_RANK || (w && w->nbytes != es) || a->out[0].dtype != dt)
        return vkl_fail(a->ctx, VKL_ERR_SHAPE, "ConstantOfShape: rank %lld or value is invalid", (long long)shape->count);
    for (int64_t d = 0; d < shape->count; d++) dims[d] = vkl_ref_get_i(shape, d);
    if ((st = vkl_ref_check_dims(a, 0, dims, (uint32_t)shape->count))) return st;
    for (int64_t i = 0; i < a->out[0].count; i++) memcpy((unsigned char *)a->out[0].data + (size_t)i * es, fill, es);
    return VKL_OK;
}

/* Range: out[i] = start + i * delta for i < max(ceil((limit - start) / delta), 0);
 * floats in double rounded on store, integers exact in int64. */
vkl_status vkl_ref_range(const vkl_ref_args *a) {
    const vkl_ref_tensor *s = &a->in[0], *l = &a->in[1], *dl = &a->in[2];
    vkl_ref_tensor *out = &a->out[0];
    int64_t n;
    if (vkl_dtype_is_float(s->dtype)) {
        double start = vkl_ref_get_f(s, 0), delta = vkl_ref_get_f(dl, 0);
        /* the span in the input type, as ONNX Runtime computes it */
        double span = s->dtype == VKL_DTYPE_F32 ? (double)((float)vkl_ref_get_f(l, 0) - (float)start)
                                                : vkl_ref_get_f(l, 0) - start;
        double c = delta == 0 ? NAN : ceil(span / delta);
        if (!(c < 4e18)) return vkl_fail(a->ctx, VKL_ERR_SHAPE, "Range: delta is 0 or the length is too large");
        n = c > 0 ? (int64_t)c : 0;
        vkl_status st = vkl_ref_check_dims(a, 0, &n, 1);
        for (int64_t i = 0; !st && i < n; i++) vkl_ref_set_f(out, i, start + (double)i * delta);
        return st;
    }
    int64_t start = vkl_ref_get_i(s, 0), limit = vkl_ref_get_i(l, 0), delta = vkl_ref_get_i(dl, 0);
    if (delta == 0) return vkl_fail(a->ctx, VKL_ERR_SHAPE, "Range: delta is 0");
    int64_t span, ad = delta > 0 ? delta : -delta;
    if (delta == INT64_MIN || !(delta > 0 ? vkl_sub_i64(limit, start, &span) : vkl_sub_i64(start, limit, &span)) ||
        (span > 0 && span > INT64_MAX - ad))
        return vkl_fail(a->ctx, VKL_ERR_OVERFLOW, "Range: (%lld, %lld, %lld) overflows", (long long)start,
                        (long long)limit, (long long)delta);
    n = span > 0 ? (span + ad - 1) / ad : 0;
    vkl_status st = vkl_ref_check_dims(a, 0, &n, 1);
    for (int64_t i = 0; !st && i < n; i++) vkl_ref_set_i(out, i, (int64_t)((uint64_t)start + (uint64_t)i * (uint64_t)delta));
    return st;
}
