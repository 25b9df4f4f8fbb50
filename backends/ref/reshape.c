/* Ref kernels of the ops that keep the bytes and change only the shape:
 * Reshape, Squeeze, Unsqueeze, Flatten. Each derives the output dims from
 * its inputs as ONNX defines them, checks them, and copies the bytes. */
#include <string.h>

#include "ref_ops.h"
#include "strided_copy.h"

static vkl_status copy_as(const vkl_ref_args *a, const int64_t *dims, uint32_t rank) {
    size_t es;
    vkl_status st = vkl_ref_elem_size(a, a->in[0].dtype, &es);
    if (!st) st = vkl_ref_check_dims(a, 0, dims, rank);
    if (!st && a->out[0].count != a->in[0].count)
        st = vkl_fail(a->ctx, VKL_ERR_SHAPE, "%s: %lld elements in, %lld out", vkl_ref_op_name(a),
                      (long long)a->in[0].count, (long long)a->out[0].count);
    if (!st && a->in[0].count) memcpy(a->out[0].data, a->in[0].data, (size_t)a->in[0].count * es);
    return st;
}

/* Reshape: shape entries 0 copy the input dim (unless allowzero), one -1
 * takes what is left of the element count. */
vkl_status vkl_ref_reshape(const vkl_ref_args *a) {
    const vkl_ref_tensor *in = &a->in[0], *shape = &a->in[1];
    int64_t allowzero, dims[VKL_MAX_RANK], known = 1;
    int32_t infer = -1;
    vkl_status st = vkl_op_attr_int(a->g, a->node, "allowzero", &allowzero);
    if (st) return st;
    if (shape->count > VKL_MAX_RANK) return vkl_fail(a->ctx, VKL_ERR_SHAPE, "Reshape: target rank %lld", (long long)shape->count);
    uint32_t r = (uint32_t)shape->count;
    for (uint32_t d = 0; d < r; d++) {
        dims[d] = vkl_ref_get_i(shape, d);
        if (dims[d] == 0 && !allowzero && d < in->rank) dims[d] = in->dims[d];
        if (dims[d] == -1 && infer < 0) infer = (int32_t)d;
        else if (dims[d] < 0) return vkl_fail(a->ctx, VKL_ERR_SHAPE, "Reshape: shape[%u] = %lld", d, (long long)dims[d]);
        else known *= dims[d];
    }
    if (infer >= 0) {
        if (known == 0 || in->count % known)
            return vkl_fail(a->ctx, VKL_ERR_SHAPE, "Reshape: %lld elements do not divide into %lld", (long long)in->count,
                            (long long)known);
        dims[infer] = in->count / known;
    }
    return copy_as(a, dims, r);
}

/* Squeeze: drop the listed axes (each of size 1), or every size-1 dim. */
vkl_status vkl_ref_squeeze(const vkl_ref_args *a) {
    const vkl_ref_tensor *in = &a->in[0];
    uint32_t drop = 0, r = 0;
    int64_t dims[VKL_MAX_RANK];
    bool listed = vkl_ref_present(a, 1);
    for (int64_t i = 0; listed && i < a->in[1].count; i++) {
        uint32_t ax;
        if (!vkl_ref_axis(vkl_ref_get_i(&a->in[1], i), in->rank, &ax) || in->dims[ax] != 1)
            return vkl_fail(a->ctx, VKL_ERR_SHAPE, "Squeeze: axes[%lld] is out of range or not of size 1", (long long)i);
        drop |= 1u << ax;
    }
    for (uint32_t d = 0; d < in->rank; d++)
        if (!(listed ? drop & (1u << d) : in->dims[d] == 1)) dims[r++] = in->dims[d];
    return copy_as(a, dims, r);
}

/* Unsqueeze: insert size-1 dims at the listed axes of the output. */
vkl_status vkl_ref_unsqueeze(const vkl_ref_args *a) {
    const vkl_ref_tensor *in = &a->in[0], *axes = &a->in[1];
    uint32_t r = in->rank + (uint32_t)axes->count, ins = 0;
    int64_t dims[VKL_MAX_RANK];
    if (r > VKL_MAX_RANK) return vkl_fail(a->ctx, VKL_ERR_SHAPE, "Unsqueeze: rank %u", r);
    for (int64_t i = 0; i < axes->count; i++) {
        uint32_t ax;
        if (!vkl_ref_axis(vkl_ref_get_i(axes, i), r, &ax) || (ins & (1u << ax)))
            return vkl_fail(a->ctx, VKL_ERR_SHAPE, "Unsqueeze: axes[%lld] is out of range or repeated", (long long)i);
        ins |= 1u << ax;
    }
    for (uint32_t d = 0, k = 0; d < r; d++) dims[d] = (ins & (1u << d)) ? 1 : in->dims[k++];
    return copy_as(a, dims, r);
}

/* Flatten: [prod(dims[:axis]), prod(dims[axis:])]. */
vkl_status vkl_ref_flatten(const vkl_ref_args *a) {
    const vkl_ref_tensor *in = &a->in[0];
    int64_t axis, dims[2] = {1, 1};
    vkl_status st = vkl_op_attr_int(a->g, a->node, "axis", &axis);
    if (st) return st;
    if (axis < 0) axis += in->rank;
    if (axis < 0 || axis > (int64_t)in->rank) return vkl_fail(a->ctx, VKL_ERR_SHAPE, "Flatten: axis out of range");
    for (uint32_t d = 0; d < in->rank; d++) dims[d < axis ? 0 : 1] *= in->dims[d];
    return copy_as(a, dims, 2);
}
