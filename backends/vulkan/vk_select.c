/* ArgMax and TopK on Vulkan: per-line selection in select.comp, with the
 * ref kernels' order (backends/ref/reduce.c: NaN largest; ArgMax ties to
 * the first index, or the last with select_last_index; TopK ties to the
 * lower index, values in sorted order whatever `sorted` says). K is the
 * output's dim along the axis, checked against a constant K input. An
 * ArgMax of a few long lines (greedy sampling's one logits row) runs in two
 * levels instead (argmax_split.comp), so that a vocabulary spreads over
 * many workgroups rather than one. */
#include <string.h>

#include "../../engine/ops.h"
#include "vk_internal.h"

static bool is_numeric(vkl_dtype t) {
    switch (t) {
    case VKL_DTYPE_F32: case VKL_DTYPE_F16: case VKL_DTYPE_BF16: case VKL_DTYPE_F64:
    case VKL_DTYPE_I64: case VKL_DTYPE_I32: case VKL_DTYPE_I16: case VKL_DTYPE_I8:
    case VKL_DTYPE_U32: case VKL_DTYPE_U16: case VKL_DTYPE_U8: return true;
    default: return false;
    }
}

/* select.comp over the lines of X around axis: the first K of each line */
static vkl_status record_select(const vkl_vk_node *nd, uint32_t axis, int64_t K, bool largest, bool tie_last,
                                const vkl_vk_tensor *values, const vkl_vk_tensor *indices, vkl_vk_dispatch *out,
                                uint32_t *count) {
    const vkl_vk_tensor *X = &nd->in[0];
    int64_t outer = 1, inner = 1;
    for (uint32_t d = 0; d < X->rank; d++) {
        if (d < axis) outer *= X->dims[d];
        if (d > axis) inner *= X->dims[d];
    }
    const int64_t n = X->dims[axis], lines = outer * inner;
    *count = 0;
    if (X->count >= (1ll << 31) || lines * K >= (1ll << 31))
        return vkl_vk_node_unsupported(nd, "%lld elements exceed 32-bit indexing", (long long)X->count);
    if (!lines || !K) return VKL_OK;
    vkl_vk_dispatch *d = &out[0];
    const bool coop = n >= 64;
    const uint32_t wg = coop ? vkl_vk_wg_size(nd, n) : 64;
    vkl_status st = vkl_vk_grid(nd, coop ? (uint64_t)lines * wg : (uint64_t)lines, wg, d->groups);
    if (st) return st;
    d->shader = "select"; /* keys are compared as bits: no f64 arithmetic, any device */
    d->spec[0] = wg;
    d->spec[1] = X->dtype;
    d->spec[2] = largest;
    d->spec[3] = tie_last;
    d->spec[4] = coop;
    d->spec[5] = (values ? 1u : 0u) | (indices ? 2u : 0u);
    d->n_spec = 6;
    const vkl_vk_tensor *any = values ? values : indices;
    d->bind[0] = X->at;
    vkl_vk_bind_or(d, 1, values, any);
    vkl_vk_bind_or(d, 2, indices, any);
    d->n_bind = 3;
    d->push[0] = (uint32_t)lines;
    d->push[1] = (uint32_t)n;
    d->push[2] = (uint32_t)inner;
    d->push[3] = (uint32_t)K;
    d->n_push = 4;
    *count = 1;
    return VKL_OK;
}

/* The two-level ArgMax: at most SPLIT_LINES lines (more fill a GPU with
 * select.comp's workgroup a line), each cut into chunks of SPLIT_ELEMS
 * elements an invocation (more where that makes over SPLIT_PARTS chunks),
 * and only where a line makes two chunks or more. */
#define SPLIT_LINES 16
#define SPLIT_ELEMS 4
#define SPLIT_PARTS 1024

static bool record_arg_max_split(const vkl_vk_node *nd, uint32_t axis, bool tie_last, vkl_vk_dispatch *out,
                                 uint32_t *count) {
    const vkl_vk_tensor *X = &nd->in[0], *Y = &nd->out[0];
    int64_t outer = 1, inner = 1;
    for (uint32_t d = 0; d < X->rank; d++) {
        if (d < axis) outer *= X->dims[d];
        if (d > axis) inner *= X->dims[d];
    }
    const int64_t n = X->dims[axis], lines = outer * inner;
    const uint32_t wg = vkl_vk_wg_size(nd, n);
    int64_t chunk = (int64_t)wg * SPLIT_ELEMS;
    if ((n + chunk - 1) / chunk > SPLIT_PARTS) chunk = ((n + SPLIT_PARTS - 1) / SPLIT_PARTS + wg - 1) / wg * wg;
    const int64_t parts = (n + chunk - 1) / chunk;
    const uint64_t bytes = (uint64_t)(lines * parts) * 16u; /* a uvec4 a part */
    if (lines < 1 || lines > SPLIT_LINES || parts < 2 || X->count >= (1ll << 31) ||
        bytes > nd->dev->props.limits.maxStorageBufferRange || parts > nd->dev->props.limits.maxComputeWorkGroupCount[0])
        return false;
    const VkDeviceSize own = vkl_vk_scratch_own(nd);
    const uint32_t push[] = {(uint32_t)lines, (uint32_t)n, (uint32_t)inner, (uint32_t)chunk, (uint32_t)parts};
    for (uint32_t k = 0; k < 2; k++) {
        vkl_vk_dispatch *d = &out[k];
        d->shader = "argmax_split";
        d->spec[0] = wg;
        d->spec[1] = X->dtype;
        d->spec[2] = tie_last;
        d->spec[3] = k; /* FINAL */
        d->n_spec = 4;
        d->bind[0] = X->at;
        d->bind[1] = Y->at;
        d->bind[2] = vkl_vk_scratch(own, bytes);
        d->n_bind = 3;
        memcpy(d->push, push, sizeof(push));
        d->n_push = (uint32_t)(sizeof(push) / sizeof(push[0]));
        d->groups[0] = k ? 1u : (uint32_t)parts;
        d->groups[1] = (uint32_t)lines;
        d->groups[2] = 1;
    }
    *count = 2;
    return true;
}

vkl_status vkl_vk_record_arg_max(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_vk_tensor *X = &nd->in[0], *Y = &nd->out[0];
    int64_t last;
    uint32_t axis = 0; /* set by the axis check; -O3 cannot see it */
    *count = 0;
    if (!is_numeric(X->dtype))
        return vkl_vk_node_unsupported(nd, "data dtype %s is not supported", vkl_dtype_name(X->dtype));
    vkl_status st = vkl_vk_axis_attr(nd, X->rank, &axis);
    if (!st) st = vkl_op_attr_int(nd->g, nd->index, "select_last_index", &last);
    if (st) return st;
    if (X->dims[axis] == 0 && X->count == 0 && Y->count > 0)
        return vkl_vk_node_fail(nd, VKL_ERR_INVALID_ARGUMENT, "axis %u has no elements", axis);
    if (record_arg_max_split(nd, axis, last != 0, out, count)) return VKL_OK;
    return record_select(nd, axis, 1, true, last != 0, NULL, Y, out, count);
}

vkl_status vkl_vk_record_top_k(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_vk_tensor *X = &nd->in[0];
    const vkl_vk_tensor *values = nd->out[0].id != VKL_NONE ? &nd->out[0] : NULL;
    const vkl_vk_tensor *indices = nd->n_out > 1 && nd->out[1].id != VKL_NONE ? &nd->out[1] : NULL;
    int64_t largest, kc;
    uint32_t axis = 0, n = 0; /* set by the checks; -O3 cannot see it */
    *count = 0;
    if (!is_numeric(X->dtype))
        return vkl_vk_node_unsupported(nd, "X dtype %s is not supported", vkl_dtype_name(X->dtype));
    if (nd->in[1].count != 1)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "K has %lld elements; 1 expected", (long long)nd->in[1].count);
    vkl_status st = vkl_vk_axis_attr(nd, X->rank, &axis);
    if (!st) st = vkl_op_attr_int(nd->g, nd->index, "largest", &largest);
    if (st) return st;
    const vkl_vk_tensor *first = values ? values : indices;
    if (!first) return VKL_OK; /* no output asked for */
    /* K's value where it is known at prepare (a constant), else the output's dim */
    const int64_t K = vkl_vk_const_ints(nd, 1, &kc, 1, &n) ? kc : first->dims[axis];
    if (K < 0 || K > X->dims[axis])
        return vkl_vk_node_fail(nd, VKL_ERR_INVALID_ARGUMENT, "K = %lld is not in [0, %lld]", (long long)K,
                                (long long)X->dims[axis]);
    if (first->dims[axis] != K)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "the output's axis dim (%lld) and K (%lld) differ",
                                (long long)first->dims[axis], (long long)K);
    return record_select(nd, axis, K, largest != 0, false, values, indices, out, count);
}
