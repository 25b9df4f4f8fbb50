/* Transpose, Expand, Tile and Slice on Vulkan: each is a strided view of
 * its input (one copy_view dispatch, vk_copy.c); and Trilu (trilu.comp),
 * which masks whole words of its input. Every dtype of 1 to 8 bytes: they
 * move bytes. The concrete dims prepare binds are checked against the op's
 * rule (VKL_ERR_SHAPE, as ref reports at run time). */
#include <string.h>

#include "../../engine/ops.h"
#include "../../engine/ops/movement_util.h"
#include "vk_internal.h"

static bool norm_axis(int64_t a, uint32_t rank, uint32_t *out) {
    if (a < -(int64_t)rank || a >= (int64_t)rank) return false;
    *out = (uint32_t)(a < 0 ? a + rank : a);
    return true;
}

/* Transpose: out dim d is input dim perm[d] (reversed axes by default). */
vkl_status vkl_vk_record_transpose(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_vk_tensor *in = &nd->in[0];
    const int64_t *perm;
    uint32_t np, seen = 0;
    int64_t own[VKL_MAX_RANK], dims[VKL_MAX_RANK], strides[VKL_MAX_RANK];
    *count = 0;
    vkl_status st = vkl_op_attr_ints(nd->g, nd->index, "perm", &perm, &np);
    if (st) return st;
    if (perm && np != in->rank)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "perm has %u entries for rank %u", np, in->rank);
    vkl_vk_contiguous_strides(in->rank, in->dims, own);
    for (uint32_t d = 0; d < in->rank; d++) {
        uint32_t ax;
        if (!norm_axis(perm ? perm[d] : (int64_t)(in->rank - 1 - d), in->rank, &ax) || (seen & (1u << ax)))
            return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "perm is not a permutation");
        seen |= 1u << ax;
        dims[d] = in->dims[ax];
        strides[d] = own[ax];
    }
    if ((st = vkl_vk_check_dims(nd, 0, dims, in->rank))) return st;
    return vkl_vk_record_view(nd, in, &nd->out[0], in->rank, dims, strides, 0, out, count);
}

/* Expand: the input broadcast to the output's dims (stride 0 where it is 1). */
vkl_status vkl_vk_record_expand(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_vk_tensor *in = &nd->in[0], *y = &nd->out[0];
    int64_t own[VKL_MAX_RANK], strides[VKL_MAX_RANK];
    *count = 0;
    if (in->rank > y->rank)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "input of rank %u expanded to rank %u", in->rank, y->rank);
    vkl_vk_contiguous_strides(in->rank, in->dims, own);
    const uint32_t lead = y->rank - in->rank;
    for (uint32_t d = 0; d < y->rank; d++) {
        const int64_t x = d < lead ? 1 : in->dims[d - lead];
        if (x != y->dims[d] && x != 1)
            return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "input dim %lld cannot broadcast to %lld", (long long)x,
                                    (long long)y->dims[d]);
        strides[d] = x == 1 ? 0 : own[d - lead];
    }
    return vkl_vk_record_view(nd, in, y, y->rank, y->dims, strides, 0, out, count);
}

/* Tile: out dim d = in dim d * repeats[d]; as a view, each dim splits into
 * (repeat, in dim) with stride 0 on the repeat. The repeats are the
 * output's dims over the input's, so run-time repeats cost nothing here. */
vkl_status vkl_vk_record_tile(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_vk_tensor *in = &nd->in[0], *y = &nd->out[0];
    int64_t own[VKL_MAX_RANK], dims[2 * VKL_MAX_RANK], strides[2 * VKL_MAX_RANK];
    *count = 0;
    if (in->rank != y->rank)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "input rank %u, output rank %u", in->rank, y->rank);
    if (!y->count) return VKL_OK;
    vkl_vk_contiguous_strides(in->rank, in->dims, own);
    for (uint32_t d = 0; d < in->rank; d++) {
        if (!in->dims[d] || y->dims[d] % in->dims[d])
            return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "output dim %u (%lld) is not a multiple of the input's (%lld)", d,
                                    (long long)y->dims[d], (long long)in->dims[d]);
        dims[2 * d] = y->dims[d] / in->dims[d];
        strides[2 * d] = 0;
        dims[2 * d + 1] = in->dims[d];
        strides[2 * d + 1] = own[d];
    }
    return vkl_vk_record_view(nd, in, y, 2 * in->rank, dims, strides, 0, out, count);
}

/* Slice: ONNX's clamping per listed axis (vkl_mv_slice_range, shared with
 * the shape rule and ref), then a view: base at the first element, strides
 * times the steps (negative ones walk backwards). starts/ends/axes/steps
 * must be known at prepare: constants, or shape values under the binding. */
vkl_status vkl_vk_record_slice(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_vk_tensor *in = &nd->in[0];
    int64_t starts[VKL_MAX_VALUE_ELEMS], ends[VKL_MAX_VALUE_ELEMS], axes[VKL_MAX_VALUE_ELEMS],
        steps[VKL_MAX_VALUE_ELEMS], dims[VKL_MAX_RANK], strides[VKL_MAX_RANK], base = 0;
    uint32_t n, c, seen = 0;
    *count = 0;
    vkl_status st = vkl_vk_input_ints(nd, 1, "starts", starts, VKL_MAX_VALUE_ELEMS, &n);
    if (!st) st = vkl_vk_input_ints(nd, 2, "ends", ends, VKL_MAX_VALUE_ELEMS, &c);
    if (!st && c != n) st = vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "%u starts but %u ends", n, c);
    for (uint32_t i = 0; i < n; i++) axes[i] = i, steps[i] = 1;
    if (!st && nd->n_in > 3 && nd->in[3].id != VKL_NONE) {
        st = vkl_vk_input_ints(nd, 3, "axes", axes, VKL_MAX_VALUE_ELEMS, &c);
        if (!st && c != n) st = vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "%u axes for %u starts", c, n);
    }
    if (!st && nd->n_in > 4 && nd->in[4].id != VKL_NONE) {
        st = vkl_vk_input_ints(nd, 4, "steps", steps, VKL_MAX_VALUE_ELEMS, &c);
        if (!st && c != n) st = vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "%u steps for %u starts", c, n);
    }
    if (st) return st;
    memcpy(dims, in->dims, sizeof(dims));
    vkl_vk_contiguous_strides(in->rank, in->dims, strides);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t ax;
        if (!norm_axis(axes[i], in->rank, &ax) || (seen & (1u << ax)) || steps[i] == 0)
            return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "axes[%u] = %lld or steps[%u] = %lld is invalid", i,
                                    (long long)axes[i], i, (long long)steps[i]);
        seen |= 1u << ax;
        int64_t first;
        vkl_mv_slice_range(in->dims[ax], starts[i], ends[i], steps[i], &first, &dims[ax]);
        base += first * strides[ax];
        strides[ax] *= steps[i];
    }
    if ((st = vkl_vk_check_dims(nd, 0, dims, in->rank))) return st;
    return vkl_vk_record_view(nd, in, &nd->out[0], in->rank, dims, strides, base, out, count);
}

/* Trilu over the last two dims [M, N]: upper keeps column - row >= k,
 * lower <= k, the rest is zero. k is read by the shader from its input (a
 * constant or run-time data alike), clamped to +-(M + N) as ref does. */
vkl_status vkl_vk_record_trilu(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_vk_tensor *in = &nd->in[0], *y = &nd->out[0];
    const vkl_vk_tensor *k = nd->n_in > 1 && nd->in[1].id != VKL_NONE ? &nd->in[1] : NULL;
    int64_t upper;
    uint32_t es;
    *count = 0;
    vkl_status st = vkl_op_attr_int(nd->g, nd->index, "upper", &upper);
    if (!st) st = vkl_vk_elem_bytes(nd, in, &es);
    if (!st) st = vkl_vk_check_dims(nd, 0, in->dims, in->rank);
    if (st) return st;
    if (in->rank < 2) return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "rank %u < 2", in->rank);
    if (k && k->count != 1) return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "k must hold one value");
    if (k && !vkl_dtype_is_int(k->dtype)) return vkl_vk_node_unsupported(nd, "k is %s", vkl_dtype_name(k->dtype));
    const int64_t M = in->dims[in->rank - 2], N = in->dims[in->rank - 1];
    if (!y->count) return VKL_OK;
    /* the shader's int arithmetic: column - row - k within +-2^31 */
    if (M + N >= (1ll << 30) || y->count >= (1ll << 32))
        return vkl_vk_node_unsupported(nd, "[%lld, %lld] matrices or %lld elements exceed 32-bit indexing",
                                       (long long)M, (long long)N, (long long)y->count);
    const uint64_t units = es == 8 ? 2 * (uint64_t)y->count : ((uint64_t)y->count * es + 3) / 4;
    vkl_vk_dispatch *d = &out[0];
    memset(d, 0, sizeof(*d));
    d->shader = "trilu";
    d->spec[0] = vkl_vk_move_wg(nd->dev);
    d->spec[1] = es;
    d->spec[2] = k ? (uint32_t)k->dtype : 0;
    d->n_spec = 3;
    d->bind[0] = in->at;
    d->bind[1] = k ? k->at : in->at; /* KDT = 0 never reads it */
    d->bind[2] = y->at;
    d->n_bind = 3;
    d->push[0] = (uint32_t)units;
    d->push[1] = (uint32_t)y->count;
    d->push[2] = (uint32_t)M;
    d->push[3] = (uint32_t)N;
    d->push[4] = upper ? 1u : 0u;
    d->push[5] = (uint32_t)(M + N);
    d->n_push = 6;
    if ((st = vkl_vk_grid(nd, units, d->spec[0], d->groups))) return st;
    *count = 1;
    return VKL_OK;
}
