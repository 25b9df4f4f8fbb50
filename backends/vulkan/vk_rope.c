/* RoPE on Vulkan (shaders/vulkan/rope.comp): one invocation per word of
 * Y, rotate_half or interleaved pairs as the op's attribute says, cos/sin
 * per position ([S, R]) or per batch and position ([B or 1, S, R]). The
 * shape checks the ref kernel makes at run time (symbolic dims that shape
 * inference could not compare) are made here, with its statuses. */
#include "../../engine/graph.h"
#include "../../engine/ops.h"
#include "vk_internal.h"

#define ROPE_WG 64

static bool is_float(vkl_dtype t) {
    return t == VKL_DTYPE_F32 || t == VKL_DTYPE_F16 || t == VKL_DTYPE_BF16 || t == VKL_DTYPE_F64;
}

vkl_status vkl_vk_record_rope(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_backend_device *dev = nd->dev;
    const vkl_vk_tensor *x = &nd->in[0], *cs = &nd->in[1], *sn = &nd->in[2], *y = &nd->out[0];
    *count = 0;
    if (!is_float(x->dtype)) return vkl_vk_node_unsupported(nd, "X dtype %s is not supported", vkl_dtype_name(x->dtype));
    if (!is_float(cs->dtype) || sn->dtype != cs->dtype)
        return vkl_vk_node_unsupported(nd, "cos/sin dtype %s is not supported", vkl_dtype_name(sn->dtype));
    if (x->rank != 4 || (cs->rank != 2 && cs->rank != 3) || sn->rank != cs->rank)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "X must be [B, H, S, D] and cos, sin both [S, R] or [B, S, R]");
    for (uint32_t d = 0; d < cs->rank; d++)
        if (cs->dims[d] != sn->dims[d]) return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "cos and sin differ in dim %u", d);
    const int64_t B = x->dims[0], H = x->dims[1], S = x->dims[2], D = x->dims[3];
    const int64_t R = cs->dims[cs->rank - 1], cb = cs->rank == 3 ? cs->dims[0] : 1;
    if (cs->dims[cs->rank - 2] != S)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "cos's and X's sequence lengths differ (%lld vs %lld)",
                                (long long)cs->dims[cs->rank - 2], (long long)S);
    if (cb != 1 && cb != B)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "cos's and X's batch differ (%lld vs %lld)", (long long)cb,
                                (long long)B);
    if (R % 2 || R > D)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "rotary width %lld must be even and at most D = %lld",
                                (long long)R, (long long)D);
    if (y->dtype != x->dtype || y->count != x->count)
        return vkl_vk_node_unsupported(nd, "Y is %s with %lld elements; X's dtype and size expected",
                                       vkl_dtype_name(y->dtype), (long long)y->count);
    const bool f64 = x->dtype == VKL_DTYPE_F64 || cs->dtype == VKL_DTYPE_F64;
    if (f64 && !dev->has_f64)
        return vkl_vk_node_unsupported(nd, "f64 tensors need shaderFloat64: %s has none (or VKL_VK_NO_F64 is set)",
                                       dev->caps.device_name);
    int64_t interleaved = 0;
    vkl_status st = vkl_op_attr_int(nd->g, nd->index, "interleaved", &interleaved);
    if (st) return st;
    if (!x->count) return VKL_OK;
    const int64_t per = x->dtype == VKL_DTYPE_F16 || x->dtype == VKL_DTYPE_BF16 ? 2 : 1;
    const int64_t units = (x->count + per - 1) / per, groups = (units + ROPE_WG - 1) / ROPE_WG;
    const uint32_t *maxg = dev->props.limits.maxComputeWorkGroupCount;
    const int64_t gx = groups < maxg[0] ? groups : maxg[0], gy = (groups + gx - 1) / gx;
    /* element and word indices are 32-bit in the shader (f64: 2 words each) */
    if (x->count * (f64 ? 2 : 1) >= (1ll << 32) || cs->count >= (1ll << 32) || gy > maxg[1])
        return vkl_vk_node_unsupported(nd, "%lld elements exceed the kernel's 32-bit indexing or dispatch range",
                                       (long long)x->count);
    vkl_vk_dispatch *d = &out[0];
    d->shader = f64 ? "rope_f64" : "rope";
    d->spec[0] = ROPE_WG;
    d->spec[1] = (uint32_t)x->dtype;
    d->spec[2] = (uint32_t)cs->dtype;
    d->spec[3] = interleaved ? 1u : 0u;
    d->n_spec = 4;
    d->bind[0] = x->at;
    d->bind[1] = cs->at;
    d->bind[2] = sn->at;
    d->bind[3] = y->at;
    d->n_bind = 4;
    const uint32_t push[] = {(uint32_t)x->count, (uint32_t)H, (uint32_t)S, (uint32_t)D, (uint32_t)R,
                             cb != 1 ? 1u : 0u, (uint32_t)gx};
    d->n_push = (uint32_t)(sizeof(push) / sizeof(push[0]));
    for (uint32_t i = 0; i < d->n_push; i++) d->push[i] = push[i];
    d->groups[0] = (uint32_t)gx;
    d->groups[1] = (uint32_t)gy;
    d->groups[2] = 1;
    *count = 1;
    return VKL_OK;
}
