/* Conv on Vulkan: direct convolution in conv.comp, one invocation per
 * output, 1 to 3 spatial dims, groups, strides, dilations, explicit or
 * automatic pads, as the ref kernel (backends/ref/conv.c) reads them
 * (engine/ops' vkl_nn_conv_attrs / vkl_nn_conv_dim); geometry the shape
 * rule could not check fails here with ref's VKL_ERR_SHAPE. */
#include <string.h>

#include "../../engine/ops.h"
#include "../../engine/ops/nn_util.h"
#include "vk_internal.h"

static const vkl_vk_variants conv_shader = {"conv", NULL, "conv_f64"};

vkl_status vkl_vk_record_conv(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_vk_tensor *X = &nd->in[0], *W = &nd->in[1], *Y = &nd->out[0];
    const vkl_vk_tensor *B = nd->n_in > 2 && nd->in[2].id != VKL_NONE ? &nd->in[2] : NULL;
    *count = 0;
    if (!vkl_vk_dtype_float(X->dtype) || W->dtype != X->dtype || (B && B->dtype != X->dtype) || Y->dtype != X->dtype)
        return vkl_vk_node_unsupported(nd, "X %s, W %s: one float dtype expected", vkl_dtype_name(X->dtype),
                                       vkl_dtype_name(W->dtype));
    if (X->rank < 3 || W->rank != X->rank)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "X of rank %u and W of rank %u", X->rank, W->rank);
    const uint32_t n_sp = X->rank - 2;
    if (n_sp > 3) return vkl_vk_node_unsupported(nd, "%u spatial dims; the kernel takes 1 to 3", n_sp);
    vkl_nn_conv c;
    char what[160];
    vkl_status st = vkl_nn_conv_attrs(nd->g, nd->index, n_sp, &c);
    if (st) return vkl_fail_prefix(nd->dev->ctx, st, "vulkan: %s", vkl_node_str(nd->g, nd->index, what, sizeof(what)));
    const int64_t M = W->dims[0], cg = W->dims[1], C = X->dims[1];
    if (C != cg * c.group)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "X's channels (%lld) and W[1] * group (%lld) differ", (long long)C,
                                (long long)(cg * c.group));
    if (M % c.group)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "%lld output channels are not a multiple of group %lld",
                                (long long)M, (long long)c.group);
    if (B && B->count != M)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "B has %lld elements for %lld output channels",
                                (long long)B->count, (long long)M);
    /* spatial dims padded in front to three */
    uint32_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, o[3] = {1, 1, 1}, s[3] = {1, 1, 1}, dil[3] = {1, 1, 1};
    int32_t pad[3] = {0, 0, 0};
    for (uint32_t i = 0; i < n_sp; i++) {
        const uint32_t j = 3 - n_sp + i;
        int64_t od, pd;
        if (c.has_kernel_shape && c.kernel_shape[i] != W->dims[2 + i])
            return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "kernel_shape[%u] = %lld, W's dim is %lld", i,
                                    (long long)c.kernel_shape[i], (long long)W->dims[2 + i]);
        st = vkl_nn_conv_dim(nd->dev->ctx, &c, i, X->dims[2 + i], W->dims[2 + i], &od, &pd);
        if (st)
            return vkl_fail_prefix(nd->dev->ctx, st, "vulkan: %s", vkl_node_str(nd->g, nd->index, what, sizeof(what)));
        if (Y->dims[2 + i] != od)
            return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "Y's spatial dim %u is %lld, the geometry gives %lld", i,
                                    (long long)Y->dims[2 + i], (long long)od);
        if (X->dims[2 + i] >= (1ll << 31) || c.strides[i] >= (1ll << 31) || c.dilations[i] >= (1ll << 31) ||
            pd >= (1ll << 31) || W->dims[2 + i] >= (1ll << 31))
            return vkl_vk_node_unsupported(nd, "spatial dim %u beyond 32-bit indexing", i);
        in[j] = (uint32_t)X->dims[2 + i];
        k[j] = (uint32_t)W->dims[2 + i];
        o[j] = (uint32_t)od;
        s[j] = (uint32_t)c.strides[i];
        dil[j] = (uint32_t)c.dilations[i];
        pad[j] = (int32_t)pd;
    }
    if (X->count >= (1ll << 31) || W->count >= (1ll << 31) || Y->count >= (1ll << 31))
        return vkl_vk_node_unsupported(nd, "tensors beyond 32-bit indexing");
    if (!Y->count) return VKL_OK;
    vkl_vk_dispatch *d = &out[0];
    const uint32_t wg = 64;
    st = vkl_vk_pick(nd, vkl_vk_node_has_f64(nd), &conv_shader, &d->shader);
    if (!st) st = vkl_vk_grid(nd, (uint64_t)Y->count, wg, d->groups);
    if (st) return st;
    const uint32_t spec[] = {wg, X->dtype, W->dtype, B ? B->dtype : VKL_DTYPE_F32, Y->dtype, B != NULL};
    memcpy(d->spec, spec, sizeof(spec));
    d->n_spec = 6;
    d->bind[0] = X->at;
    d->bind[1] = W->at;
    vkl_vk_bind_or(d, 2, B, X);
    d->bind[3] = Y->at;
    d->n_bind = 4;
    uint32_t *p = d->push, n = 0;
    p[n++] = (uint32_t)Y->count;
    p[n++] = (uint32_t)C;
    p[n++] = (uint32_t)M;
    p[n++] = (uint32_t)cg;
    p[n++] = (uint32_t)(M / c.group);
    for (uint32_t i = 0; i < 3; i++) p[n++] = in[i];
    for (uint32_t i = 0; i < 3; i++) p[n++] = k[i];
    for (uint32_t i = 0; i < 3; i++) p[n++] = o[i];
    for (uint32_t i = 0; i < 3; i++) p[n++] = s[i];
    for (uint32_t i = 0; i < 3; i++) p[n++] = dil[i];
    for (uint32_t i = 0; i < 3; i++) p[n++] = (uint32_t)pad[i];
    d->n_push = n;
    *count = 1;
    return VKL_OK;
}
