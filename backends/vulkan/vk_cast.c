/* Cast and CastLike on Vulkan (shaders/vulkan/ew_cast.comp): every pair of
 * plain dtypes, fp8 included, bit for bit as the ref kernel, one dispatch.
 * Integer bit operations only, so f64 casts need no shaderFloat64. */
#include <string.h>

#include "../../engine/ops.h"
#include "vk_internal.h"

static bool castable(vkl_dtype t) {
    return vkl_vk_ew_domain(t) >= 0 || t == VKL_DTYPE_FP8_E4M3 || t == VKL_DTYPE_FP8_E5M2;
}

vkl_status vkl_vk_record_cast(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_vk_tensor *x = &nd->in[0], *y = &nd->out[0];
    *count = 0;
    if (!castable(x->dtype) || !castable(y->dtype))
        return vkl_vk_node_unsupported(nd, "no cast from %s to %s", vkl_dtype_name(x->dtype), vkl_dtype_name(y->dtype));
    if (x->count != y->count)
        return vkl_vk_node_unsupported(nd, "input of %lld elements, output of %lld", (long long)x->count,
                                       (long long)y->count);
    int64_t saturate;
    vkl_status st = vkl_op_attr_int(nd->g, nd->index, "saturate", &saturate);
    if (st) return st;
    if (!y->count) return VKL_OK;
    if (y->count >= (1ll << 32) - 8)
        return vkl_vk_node_unsupported(nd, "%lld elements exceed 32-bit indexing", (long long)y->count);
    const uint32_t wg = vkl_vk_ew_wg(nd->dev);
    vkl_vk_dispatch *d = &out[0];
    memset(d, 0, sizeof(*d));
    d->shader = "ew_cast";
    d->spec[0] = wg;
    d->spec[1] = (uint32_t)x->dtype;
    d->spec[2] = (uint32_t)y->dtype;
    d->spec[3] = saturate != 0;
    d->n_spec = 4;
    d->bind[0] = x->at;
    d->bind[1] = y->at;
    d->n_bind = 2;
    d->push[0] = (uint32_t)y->count;
    d->n_push = 1;
    if ((st = vkl_vk_ew_grid(nd, vkl_vk_ew_units(y->dtype, y->count), wg, d->groups))) return st;
    *count = 1;
    return VKL_OK;
}
