/* Reshape, Squeeze, Unsqueeze and Flatten on Vulkan: the output keeps the
 * input's bytes, so each is one plain copy (vk_copy.c). The output dims
 * come from shape inference; a run-time element count that contradicts
 * them is VKL_ERR_SHAPE, as in ref. */
#include "vk_internal.h"

vkl_status vkl_vk_record_reshape(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_vk_tensor *in = &nd->in[0], *y = &nd->out[0];
    uint32_t es;
    *count = 0;
    vkl_status st = vkl_vk_elem_bytes(nd, in, &es);
    if (st) return st;
    if (in->dtype != y->dtype)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "input is %s, output %s", vkl_dtype_name(in->dtype),
                                vkl_dtype_name(y->dtype));
    if (in->count != y->count)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "%lld elements in, %lld out", (long long)in->count,
                                (long long)y->count);
    return vkl_vk_record_copy(nd, in, y, out, count);
}
