/* Helpers shared by the nn recorders (vk_norm.c, vk_reduce.c, vk_select.c,
 * vk_linalg.c, vk_conv.c, vk_quant_matmul.c): status messages naming the
 * node, the choice of a shader build (_sg, _f64), 2-D workgroup grids,
 * workgroup sizes, constant integer inputs. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../../engine/ops.h"
#include "../../engine/ops/shape_util.h"
#include "vk_internal.h"

bool vkl_vk_dtype_float(vkl_dtype t) {
    return t == VKL_DTYPE_F32 || t == VKL_DTYPE_F16 || t == VKL_DTYPE_BF16 || t == VKL_DTYPE_F64;
}

bool vkl_vk_node_has_f64(const vkl_vk_node *nd) {
    for (uint32_t i = 0; i < nd->n_in + nd->n_out; i++) {
        const vkl_vk_tensor *t = i < nd->n_in ? &nd->in[i] : &nd->out[i - nd->n_in];
        if (t->id != VKL_NONE && t->dtype == VKL_DTYPE_F64) return true;
    }
    return false;
}

vkl_status vkl_vk_pick(const vkl_vk_node *nd, bool f64, const vkl_vk_variants *v, const char **out) {
    *out = NULL;
    if (f64) {
        if (!v->f64) return vkl_vk_node_unsupported(nd, "f64 tensors: this kernel has no f64 build");
        if (!nd->dev->has_f64)
            return vkl_vk_node_unsupported(nd, "f64 tensors need shaderFloat64, which %s lacks (or VKL_VK_NO_F64 is set)",
                                           nd->dev->caps.device_name);
        *out = v->f64;
        return VKL_OK;
    }
    *out = nd->dev->subgroup_arith && v->sg ? v->sg : v->plain;
    return VKL_OK;
}

uint32_t vkl_vk_wg_size_max(const vkl_vk_node *nd, int64_t work, uint32_t cap) {
    const VkPhysicalDeviceLimits *lim = &nd->dev->props.limits;
    while (cap > lim->maxComputeWorkGroupInvocations || cap > lim->maxComputeWorkGroupSize[0]) cap /= 2;
    uint32_t wg = 32;
    while (wg < cap && (int64_t)wg * 4 < work) wg *= 2;
    return wg;
}

uint32_t vkl_vk_wg_size(const vkl_vk_node *nd, int64_t work) { return vkl_vk_wg_size_max(nd, work, 256); }

bool vkl_vk_const_ints(const vkl_vk_node *nd, uint32_t k, int64_t *out, uint32_t cap, uint32_t *n) {
    *n = 0;
    if (k >= nd->n_in || nd->in[k].id == VKL_NONE || nd->in[k].count > cap) return false;
    const vkl_tensor *t = &nd->g->tensors[nd->in[k].id];
    const int64_t count = nd->in[k].count;
    for (int64_t i = 0; i < count; i++) {
        double d;
        if (t->value && (uint32_t)i < t->value_count) {
            if (!vkl_expr_is_const(nd->g->syms, t->value[i], &out[i])) return false;
        } else if (vkl_tensor_const_scalar(t, i, &d)) {
            out[i] = (int64_t)d;
        } else {
            return false;
        }
    }
    *n = (uint32_t)count;
    return true;
}

uint32_t vkl_vk_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

void vkl_vk_bind_or(vkl_vk_dispatch *d, uint32_t j, const vkl_vk_tensor *t, const vkl_vk_tensor *fallback) {
    d->bind[j] = t && t->id != VKL_NONE ? t->at : fallback->at;
}
