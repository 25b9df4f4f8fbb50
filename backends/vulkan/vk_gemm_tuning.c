/* The quantized GEMM's (prefill's) kernel choice, made at open: whether the
 * device can run the cooperative-matrix build (VK_NV_cooperative_matrix
 * with its feature, the Vulkan memory model its SPIR-V declares, fp16, and
 * an fp16 x fp16 -> f32 subgroup shape that tiles a 32-code K step), the
 * tiles of both builds from the probed limits, and the number of rows of A
 * from which QuantMatMul leaves the matvec (vk_quant_matmul.c). */
#include <stdio.h>
#include <string.h>

#include "vk_internal.h"

/* What the app enabled at vkCreateDevice for the cooperative-matrix build.
 * The memory model counts only with its device scope: once the model is
 * enabled, every other kernel's device-scope atomics (the sub-word stores
 * of tensor.glsl) need vulkanMemoryModelDeviceScope too (VUID-RuntimeSpirv-
 * vulkanMemoryModel-06265; an H100's validation layer reported it). */
static void app_coopmat_features(const vkl_vulkan_external *x, bool *coopmat, bool *memory_model) {
    bool model = false, scope = false;
    *coopmat = false;
    for (const VkBaseInStructure *p = x->enabled_features_chain; p; p = p->pNext) {
        if (p->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV) {
            *coopmat |= ((const VkPhysicalDeviceCooperativeMatrixFeaturesNV *)p)->cooperativeMatrix;
        } else if (p->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES) {
            model |= ((const VkPhysicalDeviceVulkanMemoryModelFeatures *)p)->vulkanMemoryModel;
            scope |= ((const VkPhysicalDeviceVulkanMemoryModelFeatures *)p)->vulkanMemoryModelDeviceScope;
        } else if (p->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES) {
            model |= ((const VkPhysicalDeviceVulkan12Features *)p)->vulkanMemoryModel;
            scope |= ((const VkPhysicalDeviceVulkan12Features *)p)->vulkanMemoryModelDeviceScope;
        }
    }
    *memory_model = model && scope;
}

/* The device's fp16 x fp16 -> f32 subgroup shapes: 16x16x16 where listed
 * (the common one), else the first whose K divides the 32-code step and is
 * a multiple of 8 (quant_gemm_coopmat.glsl addresses shared memory in
 * uvec4s of 8 halves). */
static bool pick_shape(vkl_backend_device *dev, PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV get) {
    uint32_t n = 0;
    if (get(dev->phys, &n, NULL) != VK_SUCCESS || !n) return false;
    VkCooperativeMatrixPropertiesNV *p = vkl_calloc(dev->ctx, n, sizeof(*p));
    if (!p) return false; /* no coopmat rather than no device */
    for (uint32_t i = 0; i < n; i++) p[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV;
    bool found = false;
    if (get(dev->phys, &n, p) == VK_SUCCESS)
        for (uint32_t i = 0; i < n; i++) {
            const VkCooperativeMatrixPropertiesNV *c = &p[i];
            if (c->AType != VK_COMPONENT_TYPE_FLOAT16_NV || c->BType != VK_COMPONENT_TYPE_FLOAT16_NV ||
                c->CType != VK_COMPONENT_TYPE_FLOAT32_NV || c->DType != VK_COMPONENT_TYPE_FLOAT32_NV ||
                c->scope != VK_SCOPE_SUBGROUP_NV || !c->KSize || 32 % c->KSize || c->KSize % 8 || !c->MSize ||
                !c->NSize)
                continue;
            const bool best = c->MSize == 16 && c->NSize == 16 && c->KSize == 16;
            if (!found || best) {
                dev->cm_m = c->MSize;
                dev->cm_n = c->NSize;
                dev->cm_k = c->KSize;
            }
            found = true;
            if (best) break;
        }
    vkl_free(dev->ctx, p);
    return found;
}

void vkl_vk_coopmat_probe(vkl_backend_device *dev, bool nv_extension) {
    dev->has_coopmat_nv = false;
    if (!nv_extension || dev->props.apiVersion < VK_API_VERSION_1_2 || dev->instance_version < VK_API_VERSION_1_2) return;
    PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV get =
        (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV)dev->vki.vkGetInstanceProcAddr(
            dev->instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV");
    if (!get) return;
    bool coopmat, memory_model;
    if (dev->external) {
        app_coopmat_features(dev->external, &coopmat, &memory_model);
    } else {
        VkPhysicalDeviceVulkanMemoryModelFeatures mm = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
        VkPhysicalDeviceCooperativeMatrixFeaturesNV cm = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV, .pNext = &mm};
        VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &cm};
        dev->vki.vkGetPhysicalDeviceFeatures2(dev->phys, &f2);
        coopmat = cm.cooperativeMatrix;
        memory_model = mm.vulkanMemoryModel && mm.vulkanMemoryModelDeviceScope; /* app_coopmat_features says why */
    }
    dev->has_coopmat_nv = coopmat && memory_model && dev->has_f16 && pick_shape(dev, get);
}

/* A tuning option: 0 keeps the device's choice; else within [lo, hi]. */
static vkl_status option_range(vkl_context *ctx, const char *name, uint32_t x, uint32_t lo, uint32_t hi, uint32_t *v) {
    if (!x) return VKL_OK;
    if (x < lo || x > hi)
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "vulkan: option %s = %u: want %u..%u", name, x, lo, hi);
    *v = x;
    return VKL_OK;
}

void vkl_vk_gemm_tile(const vkl_backend_device *dev, bool coopmat, uint32_t *bm, uint32_t *bn) {
    *bm = coopmat ? dev->cm_sg_m * dev->cm_fm * dev->cm_m : dev->qmm_wy * dev->qmm_tm;
    *bn = coopmat ? dev->cm_sg_n * dev->cm_fn * dev->cm_n : dev->qmm_wx * dev->qmm_tn;
}

size_t vkl_vk_gemm_shared_bytes(const vkl_backend_device *dev, bool coopmat) {
    uint32_t bm, bn;
    vkl_vk_gemm_tile(dev, coopmat, &bm, &bn);
    if (coopmat) {
        /* quant_gemm_coopmat.glsl's As and Ws: two buffers of bm + bn rows of
         * cm_bk + 8 halves; Cs: a fragment of floats per subgroup */
        const size_t staging = (size_t)dev->cm_sg_m * dev->cm_sg_n * dev->cm_m * dev->cm_n;
        return 2 * 2 * ((size_t)bm + bn) * (dev->cm_bk + 8) + 4 * staging;
    }
    return (dev->f16_math ? 2 : 4) * 32 * ((size_t)bm + 1 + bn + 1) + 4 * (size_t)bn; /* quant_gemm.glsl's As, Ws, ds */
}

vkl_status vkl_vk_gemm_tuning(vkl_backend_device *dev, const vkl_vulkan_options *o) {
    const VkPhysicalDeviceLimits *lim = &dev->props.limits;
    vkl_context *ctx = dev->ctx;
    /* Tiled build: 16 x 16 invocations of 4 x 4 outputs (64 x 64 tiles, the
     * shape of matmul.comp), 8 x 8 where the device allows fewer than 256
     * invocations; 2 x 2 outputs where shared memory is short. */
    const bool big = lim->maxComputeWorkGroupInvocations >= 256 && lim->maxComputeWorkGroupSize[0] >= 16 &&
                     lim->maxComputeWorkGroupSize[1] >= 16;
    dev->qmm_wx = dev->qmm_wy = big ? 16 : 8;
    dev->qmm_tm = dev->qmm_tn = 4;
    if (vkl_vk_gemm_shared_bytes(dev, false) > lim->maxComputeSharedMemorySize) dev->qmm_tm = dev->qmm_tn = 2;
    /* From 16 rows of A the GEMM reads W once per 64 rows where the matvec
     * reads it once per row; below, the matvec's one row per workgroup
     * wastes nothing of a 64-row tile. A guess to measure per device. A CPU
     * device (lavapipe) has no bandwidth to save and pays for every barrier
     * and shared-memory access: M = 64, K = N = 1024 took 784-1149 ms in the
     * GEMM against 496-583 ms in the matvec (2 busy cores), so it keeps the
     * matvec unless asked (ctest ops.vulkan.gemm and test_vk_quant ask). */
    dev->qmm_min_rows = dev->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? UINT32_MAX : 16;
    vkl_status st = option_range(ctx, "gemm_min_rows", o->gemm_min_rows, 1, UINT32_MAX, &dev->qmm_min_rows);
    if (!st) st = option_range(ctx, "gemm_tile_m", o->gemm_tile_m, 1, 16, &dev->qmm_tm);
    if (!st) st = option_range(ctx, "gemm_tile_n", o->gemm_tile_n, 1, 16, &dev->qmm_tn);
    if (!st && vkl_vk_gemm_shared_bytes(dev, false) > lim->maxComputeSharedMemorySize)
        st = vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT,
                      "vulkan: GEMM tiles of %u x %u outputs per invocation need %zu bytes of shared memory; the "
                      "device has %u", dev->qmm_tm, dev->qmm_tn, vkl_vk_gemm_shared_bytes(dev, false),
                      lim->maxComputeSharedMemorySize);
    if (st) return st;
    /* Cooperative-matrix build, where the device can (has_coopmat_nv) and
     * neither the options nor a quirk turned coopmat or fp16 off, unless
     * math = F32 asks for exact f32 products (its operands are fp16: A and
     * d * w rounded once each). The first default was 2 x 4 subgroups of
     * 2 x 1 fragments (64 x 64 tiles at 16 x 16 fragments, 256
     * invocations), K steps of 64 codes: with 16-byte loads, packed fp16
     * stores and double-buffered steps (one barrier each), an H200's 1B
     * prefill of 512 tokens (2026-11-26, median of 5, one run per setting)
     * took 20.8 ms at that shape, 25.5 at 2 x 2 subgroups of 1 x 2, 28.6 at
     * 2 x 2 of 2 x 1 with BK 32, 29.1 at 1 x 1 with BK 128, 31.2 at 2 x 2
     * of 2 x 1, 39.7-42.2 at 2 x 2 or 4 x 2 fragments, 49.7 at 4 x 4. The
     * first form (one f32 of A and one word of W per invocation, two
     * barriers per 32-code step) took 25.1 ms at its best. The larger
     * fragment counts were slow only because the fragment loops were not
     * unrolled (the fragments lived in arrays indexed at run time);
     * unrolled (quant_gemm_coopmat.glsl's CM_UNROLL), an H100's 1B prefill
     * (2026-11-27, three alternations) took 17.28-17.43 ms at 4 x 2
     * subgroups of 2 x 2 fragments with K steps of 32 (128 x 64 tiles),
     * 17.33-17.57 at 2 x 4 of 2 x 2, 17.68-17.97 at the first default
     * (17.97-18.15 before the unrolling), 19.1 at 2 x 2 of 4 x 4; shapes
     * whose shared memory passes 48 KiB fall back to the tiled build
     * (84-121 ms). The 8B shape then showed what the 1B could not: at 2 x 4
     * subgroups of 4 x 2 fragments (128 x 128 tiles, exactly 48 KiB) an
     * H200's 8B prefill took 78.1 ms against 107.1 at 128 x 64 (4 x 2 of
     * 2 x 2 fragments: 80.8), and the 1B 17.39-17.54 against 17.80-17.81;
     * that is the default now, and 128 x 64 where shared memory is short
     * (below). gemm_tile_m / gemm_tile_n set the fragments per
     * subgroup (1..8), gemm_subgroups_m / _n the subgroups (1..8, at most
     * the device's workgroup size), gemm_step_k the step (32, 64, 128; K
     * must be a multiple of it, else the node runs the tiled build). */
    const uint32_t need = VKL_FEATURE_COOPMAT | VKL_FEATURE_FP16;
    dev->gemm_coopmat = dev->has_coopmat_nv && (dev->caps.features & need) == need && dev->subgroup_size &&
                        o->math != VKL_VULKAN_MATH_F32;
    dev->cm_sg_m = 2;
    dev->cm_sg_n = 4;
    dev->cm_fm = 4;
    dev->cm_fn = 2;
    dev->cm_bk = 32;
    if (o->gemm_step_k && o->gemm_step_k != 32 && o->gemm_step_k != 64 && o->gemm_step_k != 128)
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "vulkan: option gemm_step_k = %u: want 32, 64 or 128",
                        o->gemm_step_k);
    /* Split K: a node whose tiles leave the device short of workgroups sums
     * K in 2 slices, each a plane of partial sums, then adds them (a second
     * dispatch). The 1B prefill's GEMMs have 64-256 tiles of 128 x 128 (the
     * H200 has 132 SMs, one such workgroup each): on an H200 (2026-11-27,
     * two alternations) the prefill took 15.33 ms with every GEMM in 2
     * slices against 17.40-17.46 unsplit; toward 264 workgroups by as many
     * slices as it takes (3-5) 15.93-15.99, toward 528 16.72-16.78; in 2
     * below 264 tiles 15.26-15.43, below 128 (Q/K/V, o_proj, down_proj:
     * 64-96 tiles; gate/up's 256 whole) 14.18-14.37, three alternations.
     * The Table 1 GEMMs of 128 tiles ran 10% (4096 x 4096) and 3% (11008 x
     * 4096) slower in 2 slices. So 2, below 128 tiles: fewer workgroups
     * than the H200 has SMs. */
    dev->cm_split = 0;
    dev->cm_target = 128;
    st = option_range(ctx, "gemm_subgroups_m", o->gemm_subgroups_m, 1, 8, &dev->cm_sg_m);
    if (!st) st = option_range(ctx, "gemm_subgroups_n", o->gemm_subgroups_n, 1, 8, &dev->cm_sg_n);
    if (!st) st = option_range(ctx, "gemm_split_k", o->gemm_split_k, 1, VKL_VK_GEMM_MAX_SPLIT, &dev->cm_split);
    if (!st) st = option_range(ctx, "gemm_target", o->gemm_target, 1, 65535, &dev->cm_target);
    if (st) return st;
    if (o->gemm_step_k) dev->cm_bk = o->gemm_step_k;
    /* The emulation (tests): the same body and tiles on fp16 math, at
     * 16x16x16 fragments where the device has no shape of its own. */
    dev->gemm_cm_emulated = false;
    if (o->gemm_coopmat_emulate) {
        if (!dev->f16_math || !dev->subgroup_size)
            return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "vulkan: option gemm_coopmat_emulate needs fp16 math "
                            "(math = F16 on a device with shaderFloat16) and a known subgroup size");
        dev->gemm_cm_emulated = true;
        dev->gemm_coopmat = false;
        if (!dev->has_coopmat_nv) dev->cm_m = dev->cm_n = dev->cm_k = 16;
    }
    if (dev->gemm_coopmat || dev->gemm_cm_emulated) {
        st = option_range(ctx, "gemm_tile_m", o->gemm_tile_m, 1, 8, &dev->cm_fm);
        if (!st) st = option_range(ctx, "gemm_tile_n", o->gemm_tile_n, 1, 8, &dev->cm_fn);
        if (st) return st;
        /* the default's 48 KiB where the device has less: 4 x 2 subgroups
         * of 2 x 2 fragments (128 x 64 tiles, 38 KiB), unless asked */
        const bool asked = o->gemm_subgroups_m || o->gemm_subgroups_n || o->gemm_tile_m || o->gemm_tile_n;
        if (!asked && vkl_vk_gemm_shared_bytes(dev, true) > lim->maxComputeSharedMemorySize) {
            dev->cm_sg_m = 4;
            dev->cm_sg_n = 2;
            dev->cm_fm = 2;
            dev->cm_fn = 2;
        }
        const uint64_t wg = (uint64_t)dev->cm_sg_m * dev->cm_sg_n * dev->subgroup_size;
        dev->cm_wg = (uint32_t)wg;
        /* Any tile fits the shader's loads (each invocation takes a rounded-up
         * share of a step); what can fail is the workgroup size and shared
         * memory (maxComputeSharedMemorySize: 48 KiB on an H200, which has
         * no larger opt-in under Vulkan). */
        if (wg > lim->maxComputeWorkGroupInvocations || wg > lim->maxComputeWorkGroupSize[0] ||
            vkl_vk_gemm_shared_bytes(dev, true) > lim->maxComputeSharedMemorySize) {
            uint32_t bm, bn;
            vkl_vk_gemm_tile(dev, true, &bm, &bn);
            vkl_log(ctx, VKL_LOG_INFO, "vulkan: cooperative-matrix GEMM off: %u x %u tiles (%u x %u subgroups of "
                    "%u x %u fragments of %ux%ux%u, K steps of %u) need %llu invocations and %zu bytes of shared "
                    "memory; the device allows %u and %u", bm, bn, dev->cm_sg_m, dev->cm_sg_n, dev->cm_fm, dev->cm_fn,
                    dev->cm_m, dev->cm_n, dev->cm_k, dev->cm_bk, (unsigned long long)wg,
                    vkl_vk_gemm_shared_bytes(dev, true), lim->maxComputeWorkGroupInvocations,
                    lim->maxComputeSharedMemorySize);
            dev->gemm_coopmat = dev->gemm_cm_emulated = false;
        }
    }
    return VKL_OK;
}

void vkl_vk_gemm_describe(const vkl_backend_device *dev, char *buf, size_t cap) {
    if (!cap) return;
    if (!dev) {
        buf[0] = 0;
        return;
    }
    uint32_t bm, bn;
    const bool cm = dev->gemm_coopmat || dev->gemm_cm_emulated;
    vkl_vk_gemm_tile(dev, cm, &bm, &bn);
    if (dev->qmm_min_rows == UINT32_MAX)
        snprintf(buf, cap, "off (the matvec for every M; VKL_VK_GEMM_MIN_ROWS turns it on)");
    else if (cm) {
        char split[64];
        if (dev->cm_split)
            snprintf(split, sizeof(split), "K in %u slices", dev->cm_split);
        else if (dev->cm_target > 1)
            snprintf(split, sizeof(split), "K in 2 slices below %u tiles", dev->cm_target);
        else
            snprintf(split, sizeof(split), "K whole");
        snprintf(buf, cap, "%s %ux%ux%u fp16 -> f32, %ux%u tiles (%ux%u subgroups of %ux%u fragments), K steps of %u, "
                 "%s, from %u rows", dev->gemm_coopmat ? "cooperative matrix (NV)" : "coopmat body emulated in plain f32,",
                 dev->cm_m, dev->cm_n, dev->cm_k, bm, bn, dev->cm_sg_m, dev->cm_sg_n, dev->cm_fm, dev->cm_fn,
                 dev->cm_bk, split, dev->qmm_min_rows);
    }
    else
        snprintf(buf, cap, "tiled %s, %ux%u tiles of %ux%u invocations, from %u rows", dev->f16_math ? "fp16" : "f32",
                 bm, bn, dev->qmm_wx, dev->qmm_wy, dev->qmm_min_rows);
}
