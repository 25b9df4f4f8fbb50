/* Ref kernel of Slice: ONNX's negative-index and clamping rules per axis
 * (vkl_mv_slice_range, shared with the shape rule), then a strided view. */
#include <string.h>

#include "../../engine/ops/movement_util.h"
#include "ref_ops.h"
#include "strided_copy.h"

/* Slice: for each listed axis, elements first, first + step, ... (len of
 * them) after ONNX's negative-index and clamping rules; a strided view. */
vkl_status vkl_ref_slice(const vkl_ref_args *a) {
    const vkl_ref_tensor *in = &a->in[0];
    int64_t dims[VKL_MAX_RANK], strides[VKL_MAX_RANK], offset = 0;
    size_t es;
    vkl_status st = vkl_ref_view_of_input(a, &es, strides);
    if (st) return st;
    memcpy(dims, in->dims, sizeof(dims));
    int64_t n = a->in[1].count;
    bool has_axes = vkl_ref_present(a, 3), has_steps = vkl_ref_present(a, 4);
    if (a->in[2].count != n || (has_axes && a->in[3].count != n) || (has_steps && a->in[4].count != n))
        return vkl_fail(a->ctx, VKL_ERR_SHAPE, "Slice: starts, ends, axes and steps differ in length");
    uint32_t seen = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t axis = has_axes ? vkl_ref_get_i(&a->in[3], i) : i, step = has_steps ? vkl_ref_get_i(&a->in[4], i) : 1;
        uint32_t ax;
        if (!vkl_ref_axis(axis, in->rank, &ax) || (seen & (1u << ax)) || step == 0)
            return vkl_fail(a->ctx, VKL_ERR_SHAPE, "Slice: axes[%lld] = %lld or steps[%lld] = %lld is invalid",
                            (long long)i, (long long)axis, (long long)i, (long long)step);
        seen |= 1u << ax;
        int64_t first;
        vkl_mv_slice_range(in->dims[ax], vkl_ref_get_i(&a->in[1], i), vkl_ref_get_i(&a->in[2], i), step, &first,
                           &dims[ax]);
        offset += first * strides[ax];
        strides[ax] *= step;
    }
    if ((st = vkl_ref_check_dims(a, 0, dims, in->rank)) || a->out[0].count == 0) return st;
    vkl_ref_strided_copy(a->out[0].data, (const unsigned char *)in->data + offset * (int64_t)es, in->rank, dims,
                         strides, es);
    return VKL_OK;
}
