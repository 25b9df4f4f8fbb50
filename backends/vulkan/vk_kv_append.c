/* KvAppend on Vulkan (shaders/vulkan/kv_append.comp): the new rows of x
 * written into the state at position_ids, in place — the executor gives
 * the output the state's memory (vkl_node_inplace_input), so nothing else
 * is touched. A caller that gives the output its own memory gets the state
 * copied there first (kv_state_copy.comp), as the ref kernel does.
 *
 * Every cache dtype the ref kernel writes, with engine/quant's bytes (the
 * shader encodes in integer arithmetic). What ref refuses from the data — a
 * position outside [0, T), an int8 row with NaN or inf — a GPU kernel
 * cannot report; it skips those rows (tests/ops/README.md, "data_error"). */
#include "../../engine/graph.h"
#include "vk_internal.h"

#define KV_WG 64 /* a power of two: the int8 row maximum is a tree */

static bool is_float(vkl_dtype t) {
    return t == VKL_DTYPE_F32 || t == VKL_DTYPE_F16 || t == VKL_DTYPE_BF16 || t == VKL_DTYPE_F64;
}

vkl_status vkl_vk_record_kv_append(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_backend_device *dev = nd->dev;
    const vkl_vk_tensor *state = &nd->in[0], *x = &nd->in[1], *pos = &nd->in[2], *y = &nd->out[0];
    *count = 0;
    if (!is_float(x->dtype)) return vkl_vk_node_unsupported(nd, "x dtype %s is not supported", vkl_dtype_name(x->dtype));
    if (pos->dtype != VKL_DTYPE_I64 && pos->dtype != VKL_DTYPE_I32)
        return vkl_vk_node_unsupported(nd, "position_ids dtype %s is not supported", vkl_dtype_name(pos->dtype));
    if (state->rank != 4 || x->rank != 4 || pos->rank != 2)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "state [T, B, H, D], x [B, H, S, D], position_ids [B, S] expected");
    const int64_t T = state->dims[0], B = x->dims[0], H = x->dims[1], S = x->dims[2], D = x->dims[3];
    const vkl_dtype sdt = state->dtype;
    const bool int8 = sdt == VKL_DTYPE_Q_INT8;
    if (!(is_float(sdt) || sdt == VKL_DTYPE_FP8_E4M3 || sdt == VKL_DTYPE_FP8_E5M2 || int8) ||
        (int8 && (D <= 0 || state->group != (uint64_t)D)))
        return vkl_vk_node_unsupported(nd, "a state of dtype %s (group %u) is not supported", vkl_dtype_name(sdt),
                                       state->group);
    const int64_t want[5][2] = {{state->dims[1], B}, {state->dims[2], H}, {state->dims[3], D}, {pos->dims[0], B},
                                {pos->dims[1], S}};
    static const char *const what[5] = {"state's and x's batch", "state's and x's heads", "state's and x's head dims",
                                        "position_ids' and x's batch", "position_ids' and x's lengths"};
    for (int i = 0; i < 5; i++)
        if (want[i][0] != want[i][1])
            return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "%s differ (%lld vs %lld)", what[i], (long long)want[i][0],
                                    (long long)want[i][1]);
    if (y->dtype != sdt || y->bytes != state->bytes)
        return vkl_vk_node_unsupported(nd, "the output is not the state's dtype and size");
    if (state->weight)
        return vkl_vk_node_unsupported(nd, "the state is a loaded weight; KvAppend writes a state in the arena");
    /* The kernel writes whole 32-bit words, one row per workgroup: rows
     * that share a word with the next row would race. */
    const int64_t row_bytes = int8 ? 4 + D : (int64_t)vkl_dtype_size(sdt) * D;
    if (row_bytes % 4)
        return vkl_vk_node_unsupported(nd, "a %s row of %lld elements is %lld bytes; the kernel writes rows of whole "
                                       "32-bit words", vkl_dtype_name(sdt), (long long)D, (long long)row_bytes);
    const int64_t rows = B * S * H;
    uint32_t gx, gy;
    if (state->bytes / 4 >= (1ull << 32) || x->count * 2 >= (1ll << 32) || T >= (1ll << 31) ||
        !vkl_vk_grid_2d(dev, rows, &gx, &gy))
        return vkl_vk_node_unsupported(nd, "the state (%zu bytes) or x (%lld elements) exceed the kernel's 32-bit "
                                       "indexing or dispatch range", state->bytes, (long long)x->count);
    vkl_vk_dispatch *d = out;
    /* Not aliased (a caller's own output memory): start from a copy of the state. */
    if (state->at.buffer != y->at.buffer || state->at.offset != y->at.offset) {
        const int64_t words = (int64_t)(state->bytes + 3) / 4;
        uint32_t cx, cy;
        if (!vkl_vk_grid_2d(dev, (words + KV_WG - 1) / KV_WG, &cx, &cy))
            return vkl_vk_node_unsupported(nd, "a state of %zu bytes exceeds the copy's dispatch range", state->bytes);
        if (words) {
            d->shader = "kv_state_copy";
            d->spec[0] = KV_WG;
            d->n_spec = 1;
            d->bind[0] = state->at;
            d->bind[1] = y->at;
            d->n_bind = 2;
            d->push[0] = (uint32_t)words;
            d->push[1] = cx;
            d->n_push = 2;
            d->groups[0] = cx;
            d->groups[1] = cy;
            d->groups[2] = 1;
            d++;
            (*count)++;
        }
    }
    if (!rows || !D) return VKL_OK;
    d->shader = "kv_append";
    d->spec[0] = KV_WG;
    d->spec[1] = (uint32_t)sdt;
    d->spec[2] = (uint32_t)x->dtype;
    d->spec[3] = (uint32_t)pos->dtype;
    d->n_spec = 4;
    d->bind[0] = x->at;
    d->bind[1] = pos->at;
    d->bind[2] = y->at;
    d->n_bind = 3;
    const uint32_t push[] = {(uint32_t)T, (uint32_t)B, (uint32_t)H, (uint32_t)S, (uint32_t)D, (uint32_t)rows, gx};
    d->n_push = (uint32_t)(sizeof(push) / sizeof(push[0]));
    for (uint32_t i = 0; i < d->n_push; i++) d->push[i] = push[i];
    d->groups[0] = gx;
    d->groups[1] = gy;
    d->groups[2] = 1;
    (*count)++;
    return VKL_OK;
}
