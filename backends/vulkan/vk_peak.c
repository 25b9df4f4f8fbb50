/* The device's arithmetic peaks, vkbench's compute roofline beside the copy
 * bandwidth (vk_measure.c): register-only shaders timed on the device, the
 * best median over batches run for RUN_SECONDS. f32 fused multiply-adds
 * (peak_fma), fp16 ones (peak_fma_f16) where this device runs fp16 math or
 * the cooperative-matrix GEMM (shaderFloat16 is enabled at open only
 * then), and fp16 x fp16 -> f32
 * cooperative-matrix products (peak_coopmat) where the GEMM uses them, in
 * the GEMM's fragment shape. Sized by device type so a CPU device
 * (lavapipe) finishes in a fraction of a second. */
#include <stdio.h>
#include <string.h>

#include "vk_internal.h"

#define RUN_SECONDS 0.3
#define WG 256u

typedef struct peak_run {
    const char *shader;
    uint32_t spec[4], n_spec;
    uint32_t groups;
    uint64_t floats;              /* stored per workgroup */
    uint64_t flops_per_iter;      /* per workgroup */
} peak_run;

static vkl_status measure(vkl_backend_device *dev, const peak_run *r, double *flops) {
    const bool cpu = dev->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
    const uint32_t iters = cpu ? 64 : 4096;
    const size_t bytes = (size_t)(r->groups * r->floats * 4);
    vkl_vk_buffer out = {0};
    VkDescriptorPool pool = VK_NULL_HANDLE;
    const vkl_vk_pipeline *pl = NULL;
    vkl_status st = vkl_vk_buffer_alloc(dev, VKL_BUFFER_DEVICE, bytes, &out);
    if (!st) st = vkl_vk_pipeline_get(dev, r->shader, 1, r->spec, r->n_spec, &pl);
    const VkDescriptorBufferInfo b = {out.buf, 0, bytes};
    vkl_vk_timed t = {.pipe = pl ? pl->pipeline : VK_NULL_HANDLE, .n_bind = 1, .n_push = 3, .seconds = RUN_SECONDS};
    t.push[0] = iters;
    t.push[1] = vkl_vk_f32_bits(0.999f);
    t.push[2] = vkl_vk_f32_bits(1e-4f);
    t.groups[0] = r->groups;
    t.groups[1] = t.groups[2] = 1;
    if (!st) st = vkl_vk_set_once(dev, 1, &b, &pool, &t.set);
    double s = 0;
    if (!st) st = vkl_vk_time_dispatch(dev, &t, &s);
    if (!st) *flops = (double)r->flops_per_iter * r->groups * iters / s;
    if (pool) dev->vk.vkDestroyDescriptorPool(dev->device, pool, NULL);
    vkl_vk_buffer_free(dev, &out);
    return st;
}

vkl_status vkl_vk_compute_peaks(vkl_backend_device *dev, vkl_compute_peaks *out) {
    memset(out, 0, sizeof(*out));
    const bool cpu = dev->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
    uint32_t wg = WG;
    if (wg > dev->props.limits.maxComputeWorkGroupInvocations) wg = dev->props.limits.maxComputeWorkGroupInvocations;
    if (wg > dev->props.limits.maxComputeWorkGroupSize[0]) wg = dev->props.limits.maxComputeWorkGroupSize[0];
    /* enough workgroups to fill a large GPU several times over */
    peak_run fma = {"peak_fma", {wg}, 1, cpu ? 8 : 4096, wg, 64ull * wg};
    vkl_status st = measure(dev, &fma, &out->f32);
    if (!st && (dev->f16_math || dev->gemm_coopmat)) { /* shaderFloat16 enabled */
        fma.shader = "peak_fma_f16";
        st = measure(dev, &fma, &out->f16);
    } else if (!st) {
        snprintf(out->f16_why, sizeof(out->f16_why), "%s",
                 (dev->caps.features & VKL_FEATURE_FP16) ? "fp16 arithmetic off (VKL_VK_MATH=f16 turns it on)"
                                                          : "no fp16 arithmetic");
    }
    if (!st && dev->gemm_coopmat) {
        const uint64_t subgroups = dev->cm_wg / dev->subgroup_size;
        const peak_run cm = {"peak_coopmat", {dev->cm_wg, dev->cm_m, dev->cm_n, dev->cm_k}, 4, 4096,
                             subgroups * 4 * dev->cm_m * dev->cm_n, subgroups * 8ull * dev->cm_m * dev->cm_n * dev->cm_k};
        snprintf(out->coopmat_shape, sizeof(out->coopmat_shape), "%ux%ux%u", dev->cm_m, dev->cm_n, dev->cm_k);
        st = measure(dev, &cm, &out->coopmat);
    } else if (!st) {
        snprintf(out->coopmat_why, sizeof(out->coopmat_why), "%s",
                 dev->has_coopmat_nv ? "cooperative matrix off (options, quirks or f32 math)"
                                     : "no usable VK_NV_cooperative_matrix");
    }
    return st;
}
