/* Driver quirks: devices and drivers on which an optional path is known to
 * go wrong, each with what it turns off, why, and what was seen (and where).
 * Applied at open and probe after the device's own features; listed by
 * `vkbench --probe`. Adding one: docs/vulkan.md, "Driver quirks and kill
 * switches". Only paths vkllm has are keyed here: fp16 arithmetic, subgroup
 * arithmetic, integer dot product, cooperative matrix, timestamps, f64. */
#include <stdio.h>
#include <string.h>

#include "vk_internal.h"

#define ANY_VERSION 0, UINT32_MAX

const vkl_vk_quirk vkl_vk_quirks[] = {
    /* ggml-org/llama.cpp issue #15846 (workaround: PR #15886, ggml-vulkan
     * stops using subgroup arithmetic on AMD under MoltenVK). */
    {"amd-moltenvk-subgroup", 0x1002, 0, VK_DRIVER_ID_MOLTENVK, ANY_VERSION, VKL_VK_OFF_SUBGROUP_ARITH,
     "subgroup reductions (subgroupAdd) give wrong sums on AMD GPUs under MoltenVK",
     "llama.cpp generated gibberish on Radeon RX 5700 XT / 5500 XT (RDNA1) through MoltenVK until its "
     "reductions stopped using subgroup arithmetic"},
    /* ggml-org/llama.cpp PR #11074: ggml-vulkan allows cooperative matrix
     * on AMD's own drivers only for RDNA3 (by name, later by architecture). */
    {"amd-proprietary-coopmat", 0x1002, 0, VK_DRIVER_ID_AMD_PROPRIETARY, ANY_VERSION, VKL_FEATURE_COOPMAT,
     "the driver reports VK_KHR_cooperative_matrix on GPUs without matrix cores (before RDNA3)",
     "llama.cpp had to keep its cooperative-matrix kernels to RDNA3 on this driver; a table keyed by driver "
     "cannot tell RDNA3 apart, so it is off on every GPU until a device list is known"},
    {"amdvlk-coopmat", 0x1002, 0, VK_DRIVER_ID_AMD_OPEN_SOURCE, ANY_VERSION, VKL_FEATURE_COOPMAT,
     "AMDVLK reports VK_KHR_cooperative_matrix on GPUs without matrix cores (before RDNA3)",
     "as amd-proprietary-coopmat: the same driver code (llama.cpp PR #11074)"},
    /* ggml-org/llama.cpp PR #10597 (tests failing on the Windows driver,
     * emulation on Mesa ANV), PR #14001 and PR #24404 (kept to Xe2 and
     * later: regressions on Arc A770). */
    {"intel-coopmat", 0x8086, 0, 0, ANY_VERSION, VKL_FEATURE_COOPMAT,
     "cooperative matrix is wrong (Windows driver) or emulated on the shader cores (Mesa ANV) on Arc A-series",
     "llama.cpp's backend tests failed with cooperative matrix on an Arc A750 under Windows, and ran slower "
     "than without it on an A770; llama.cpp allows it on Xe2 and later only"},
    /* EdVince/Hey-PowerVR-FP16, a study of ncnn's use_fp16_arithmetic (ncnn's
     * own tests keep fp16 arithmetic off: "fp16a may produce large error"). */
    {"powervr-fp16", 0x1010, 0, 0, ANY_VERSION, VKL_FEATURE_FP16,
     "fp16 arithmetic rounds toward zero, not to nearest (the same GPU's OpenCL driver says so for half)",
     "ncnn's softmax in fp16 arithmetic was 14x further from fp32 on a PowerVR GE8320 (0.019) than on an "
     "Adreno 630 (0.0014)"},
};
const size_t vkl_vk_quirk_count = sizeof(vkl_vk_quirks) / sizeof(vkl_vk_quirks[0]);

bool vkl_vk_quirk_applies(const vkl_vk_quirk *q, const VkPhysicalDeviceProperties *p, uint32_t driver_id) {
    return q->vendor_id == p->vendorID && (!q->device_id || q->device_id == p->deviceID) &&
           (!q->driver_id || q->driver_id == driver_id) && p->driverVersion >= q->driver_min &&
           p->driverVersion <= q->driver_max;
}

void vkl_vk_off_names(uint32_t off, char *buf, size_t cap) {
    static const struct {
        uint32_t bit;
        const char *name;
    } names[] = {{VKL_FEATURE_FP16, "fp16"},
                 {VKL_FEATURE_INT8_DOT, "int8-dot"},
                 {VKL_FEATURE_COOPMAT, "coopmat"},
                 {VKL_FEATURE_FUSION, "fusion"},
                 {VKL_FEATURE_PRIORITY, "priority"},
                 {VKL_FEATURE_TIMESTAMPS, "timestamps"},
                 {VKL_VK_OFF_SUBGROUP_ARITH, "subgroup arithmetic"},
                 {VKL_VK_OFF_F64, "f64"}};
    size_t n = 0;
    buf[0] = 0;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && n < cap; i++)
        if (off & names[i].bit) n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", names[i].name);
}

uint32_t vkl_vk_quirks_for(const VkPhysicalDeviceProperties *p, uint32_t driver_id, vkl_context *log, char *names,
                           size_t cap) {
    uint32_t off = 0;
    size_t n = 0;
    names[0] = 0;
    for (size_t i = 0; i < vkl_vk_quirk_count; i++) {
        const vkl_vk_quirk *q = &vkl_vk_quirks[i];
        if (!vkl_vk_quirk_applies(q, p, driver_id)) continue;
        off |= q->off;
        if (log)
            vkl_log(log, VKL_LOG_INFO, "vulkan: driver quirk %s on %s: %s; seen: %s", q->name, p->deviceName, q->reason,
                    q->symptom);
        char what[128];
        vkl_vk_off_names(q->off, what, sizeof(what));
        if (n < cap) n += (size_t)snprintf(names + n, cap - n, "%s%s (%s off)", n ? "; " : "", q->name, what);
    }
    return off;
}

void vkl_vk_apply_quirks(vkl_backend_device *dev) {
    /* The driver's identity: VkDriverId from Vulkan 1.2; 0 (unknown)
     * before, which only driver-agnostic entries match. */
    VkPhysicalDeviceDriverProperties drv = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &drv};
    if (dev->props.apiVersion >= VK_API_VERSION_1_2) dev->vki.vkGetPhysicalDeviceProperties2(dev->phys, &p2);
    vkl_backend_caps *c = &dev->caps;
    uint32_t off = vkl_vk_quirks_for(&dev->props, (uint32_t)drv.driverID, dev->ctx, c->quirks, sizeof(c->quirks));
    c->features_quirked = c->features & off;
    c->features &= ~off;
    if (off & VKL_VK_OFF_SUBGROUP_ARITH) dev->subgroup_arith = false;
    if (off & VKL_VK_OFF_F64) dev->has_f64 = false;
    if (off & VKL_FEATURE_TIMESTAMPS) {
        dev->timestamp_bits = 0;
        dev->profile = false;
    }
}
