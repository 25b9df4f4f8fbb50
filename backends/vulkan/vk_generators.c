/* The shape sources and generators on Vulkan: Shape and Size (their values
 * are known at prepare: a fill from push constants), ConstantOfShape (a
 * fill with the value's bytes), Constant (a copy of its value, loaded with
 * the weights) and Range (range.comp reads start and delta at run time). */
#include <string.h>

#include "../../engine/ops.h"
#include "vk_internal.h"

/* An i64 output of n values known now, filled in one dispatch. */
static vkl_status fill_i64(const vkl_vk_node *nd, const int64_t *v, uint32_t n, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_vk_tensor *y = &nd->out[0];
    uint32_t words[VKL_VK_EW_FILL_MAX];
    if (y->dtype != VKL_DTYPE_I64 || y->count != (int64_t)n || 2 * n > VKL_VK_EW_FILL_MAX)
        return vkl_vk_node_unsupported(nd, "output %s of %lld elements, want i64 of %u", vkl_dtype_name(y->dtype),
                                       (long long)y->count, n);
    if (!n) return VKL_OK;
    for (uint32_t i = 0; i < n; i++) {
        words[2 * i] = (uint32_t)(uint64_t)v[i];
        words[2 * i + 1] = (uint32_t)((uint64_t)v[i] >> 32);
    }
    vkl_status st = vkl_vk_ew_fill(nd, y->at, y->bytes, words, 2 * n, &out[0]);
    if (!st) *count = 1;
    return st;
}

/* Shape: dims[start:end] of the input as bound now; negatives count from
 * the rank, both clamp into [0, rank] (Shape-15). */
vkl_status vkl_vk_record_shape(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    int64_t start, end, r = nd->in[0].rank;
    *count = 0;
    vkl_status st = vkl_op_attr_int(nd->g, nd->index, "start", &start);
    if (!st) st = vkl_op_attr_int(nd->g, nd->index, "end", &end);
    if (st) return st;
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = start < 0 ? 0 : start > r ? r : start;
    end = end < start ? start : end > r ? r : end;
    return fill_i64(nd, nd->in[0].dims + start, (uint32_t)(end - start), out, count);
}

vkl_status vkl_vk_record_size(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    *count = 0;
    return fill_i64(nd, &nd->in[0].count, 1, out, count);
}

/* The weight a TENSOR attribute `value` names, or NULL when absent. */
static const vkl_tensor *value_attr(const vkl_vk_node *nd, uint32_t *id) {
    const vkl_attr *a = vkl_node_attr(&nd->g->nodes[nd->index], "value");
    if (!a || a->kind != VKL_ATTR_TENSOR || a->i < 0 || a->i >= (int64_t)nd->g->n_tensors) return NULL;
    *id = (uint32_t)a->i;
    return &nd->g->tensors[a->i];
}

/* ConstantOfShape: every element = value's one element (default f32 0),
 * repeated as whole words. */
vkl_status vkl_vk_record_constant_of_shape(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_vk_tensor *y = &nd->out[0];
    uint32_t id;
    const vkl_tensor *v = value_attr(nd, &id);
    const vkl_dtype dt = v ? v->dtype : VKL_DTYPE_F32;
    const size_t es = vkl_dtype_size(dt);
    *count = 0;
    if (!es || vkl_dtype_is_quantized(dt) || (v && (!v->data || v->nbytes != es)) || y->dtype != dt)
        return vkl_vk_node_unsupported(nd, "value of %s, output %s: want one element of the output's plain dtype",
                                       vkl_dtype_name(dt), vkl_dtype_name(y->dtype));
    if (!y->bytes) return VKL_OK;
    unsigned char elem[8] = {0}, pattern[8];
    if (v) memcpy(elem, v->data, es);
    for (size_t i = 0; i < sizeof(pattern); i++) pattern[i] = elem[i % es];
    uint32_t words[2];
    memcpy(words, pattern, sizeof(words));
    vkl_status st = vkl_vk_ew_fill(nd, y->at, y->bytes, words, es == 8 ? 2 : 1, &out[0]);
    if (!st) *count = 1;
    return st;
}

/* Constant: its value's bytes, copied from the device copy weights_load made. */
vkl_status vkl_vk_record_constant(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_vk_tensor *y = &nd->out[0];
    uint32_t id;
    const vkl_tensor *v = value_attr(nd, &id);
    *count = 0;
    if (!v || !v->data) return vkl_vk_node_fail(nd, VKL_ERR_FORMAT, "attribute value is missing");
    if (y->dtype != v->dtype || y->bytes != v->nbytes)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "output does not match the %zu-byte value", v->nbytes);
    if (!y->bytes) return VKL_OK;
    const vkl_vk_weight *w = nd->weights && id < nd->weights->n ? &nd->weights->w[id] : NULL;
    if (!w || !w->n_pieces) return vkl_vk_node_fail(nd, VKL_ERR_STATE, "value '%s' was not loaded", v->name);
    if (w->n_pieces > 1 || y->pieced)
        return vkl_vk_node_unsupported(nd, "value '%s' of %zu bytes is over the binding limit (%s)", v->name,
                                       v->nbytes, vkl_vk_bind_limit_name(nd->dev));
    vkl_status st = vkl_vk_ew_copy(nd, w->piece[0].qs, y->at, y->bytes, &out[0]);
    if (!st) *count = 1;
    return st;
}

/* Range: out[i] = start + i * delta; the length is the output's. */
vkl_status vkl_vk_record_range(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_vk_tensor *y = &nd->out[0];
    *count = 0;
    if (nd->n_in != 3) return vkl_vk_node_unsupported(nd, "Range takes 3 inputs, not %u", nd->n_in);
    for (uint32_t k = 0; k < 3; k++)
        if (nd->in[k].dtype != y->dtype || nd->in[k].count != 1)
            return vkl_vk_node_unsupported(nd, "input %u: %s of %lld elements, want one %s", k,
                                           vkl_dtype_name(nd->in[k].dtype), (long long)nd->in[k].count,
                                           vkl_dtype_name(y->dtype));
    const int domain = vkl_vk_ew_domain(y->dtype);
    if (domain < 0 || y->dtype == VKL_DTYPE_BOOL)
        return vkl_vk_node_unsupported(nd, "no Range of dtype %s", vkl_dtype_name(y->dtype));
    vkl_status st = domain == 2 ? vkl_vk_ew_need_f64(nd) : VKL_OK;
    if (st || !y->count) return st;
    if (y->count >= (1ll << 32) - 8)
        return vkl_vk_node_unsupported(nd, "%lld elements exceed 32-bit indexing", (long long)y->count);
    const uint32_t wg = vkl_vk_ew_wg(nd->dev);
    vkl_vk_dispatch *d = &out[0];
    memset(d, 0, sizeof(*d));
    d->shader = domain == 2 ? "range_f64" : "range";
    d->spec[0] = wg;
    d->spec[1] = (uint32_t)y->dtype;
    d->spec[2] = (uint32_t)domain;
    d->n_spec = 3;
    d->bind[0] = nd->in[0].at;
    d->bind[1] = nd->in[2].at;
    d->bind[2] = y->at;
    d->n_bind = 3;
    d->push[0] = (uint32_t)y->count;
    d->n_push = 1;
    if ((st = vkl_vk_ew_grid(nd, vkl_vk_ew_units(y->dtype, y->count), wg, d->groups))) return st;
    *count = 1;
    return VKL_OK;
}
