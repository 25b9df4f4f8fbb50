/* The Vulkan device: loader (volk, loaded at run time, so a machine without
 * Vulkan gets a status, never a crash), instance with optional validation
 * (VKL_VK_VALIDATION=1), physical device choice, what it can do (caps),
 * logical device and compute queue, and the device lock every vtable call
 * holds (vkl_vk_enter / vkl_vk_leave, vk_internal.h says why). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_internal.h"

#define VALIDATION_LAYER "VK_LAYER_KHRONOS_validation"

static bool env_on(const char *name) {
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

/* VKL_VK_DISABLE=fp16,int8-dot,coopmat,priority,timestamps: features
 * masked as if the device lacked them (beside the options'
 * disable_features), the one-line workaround for a driver bug in an
 * optional path, and how the test suite runs every path's fallback. */
static uint32_t env_disabled_features(void) {
    static const struct { const char *name; uint32_t bit; } names[] = {
        {"fp16", VKL_FEATURE_FP16},         {"int8-dot", VKL_FEATURE_INT8_DOT}, {"coopmat", VKL_FEATURE_COOPMAT},
        {"fusion", VKL_FEATURE_FUSION},     {"priority", VKL_FEATURE_PRIORITY}, {"timestamps", VKL_FEATURE_TIMESTAMPS}};
    const char *v = getenv("VKL_VK_DISABLE");
    uint32_t mask = 0;
    for (size_t i = 0; v && i < sizeof(names) / sizeof(names[0]); i++) {
        size_t n = strlen(names[i].name);
        for (const char *p = strstr(v, names[i].name); p; p = strstr(p + 1, names[i].name))
            if ((p == v || p[-1] == ',') && (p[n] == 0 || p[n] == ',')) mask |= names[i].bit;
    }
    return mask;
}

/* Validation messages are counted (the next vtable call then fails, see
 * vkl_vk_validation_status) and logged through the context, so a test's log
 * callback also sees those emitted while objects are destroyed. The
 * loader's own chatter (GENERAL type) is only logged at debug level. */
static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT type,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *data, void *user) {
    vkl_vk_messages *m = user;
    const char *text = data && data->pMessage ? data->pMessage : "(no text)";
    if ((type & VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT) &&
        severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
        pthread_mutex_lock(&m->lock);
        if (m->count == m->reported) snprintf(m->first, sizeof(m->first), "%s", text);
        m->count++;
        pthread_mutex_unlock(&m->lock);
        vkl_log(m->ctx, severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? VKL_LOG_ERROR : VKL_LOG_WARN,
                "vulkan validation: %s", text);
    } else {
        vkl_log(m->ctx, VKL_LOG_DEBUG, "vulkan: %s", text);
    }
    return VK_FALSE;
}

static void messenger_info(vkl_vk_messages *m, VkDebugUtilsMessengerCreateInfoEXT *info) {
    memset(info, 0, sizeof(*info));
    info->sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
    info->messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                            VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    info->messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                        VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    info->pfnUserCallback = on_message;
    info->pUserData = m;
}

static vkl_status have_validation_layer(vkl_context *ctx) {
    uint32_t n = 0;
    vkl_status st = VKL_VKI(ctx, vkEnumerateInstanceLayerProperties, (&n, NULL));
    VkLayerProperties *layers = st || !n ? NULL : vkl_calloc(ctx, n, sizeof(*layers));
    if (!st && n && !layers) return VKL_ERR_OUT_OF_MEMORY;
    if (!st && n) st = VKL_VKI(ctx, vkEnumerateInstanceLayerProperties, (&n, layers));
    bool found = false;
    for (uint32_t i = 0; !st && i < n; i++) found |= !strcmp(layers[i].layerName, VALIDATION_LAYER);
    vkl_free(ctx, layers);
    if (!st && !found)
        st = vkl_fail(ctx, VKL_ERR_UNSUPPORTED,
                      "vulkan: VKL_VK_VALIDATION=1 but %s is not installed (Debian: vulkan-validationlayers; "
                      "or point VK_LAYER_PATH at its .json)",
                      VALIDATION_LAYER);
    return st;
}

/* Loader, instance and (with validation) the messenger. A machine without a
 * loader, a driver or a device is VKL_ERR_NOT_FOUND saying which. */
static vkl_status instance_create(vkl_backend_device *dev) {
    vkl_context *ctx = dev->ctx;
    if (volkInitialize() != VK_SUCCESS)
        return vkl_fail(ctx, VKL_ERR_NOT_FOUND,
                        "vulkan: no Vulkan loader: libvulkan.so.1 could not be loaded (Debian: libvulkan1)");
    uint32_t version = volkGetInstanceVersion();
    if (version < VK_API_VERSION_1_1)
        return vkl_fail(ctx, VKL_ERR_NOT_FOUND, "vulkan: the loader offers Vulkan %u.%u; vkllm needs 1.1",
                        VK_API_VERSION_MAJOR(version), VK_API_VERSION_MINOR(version));
    bool validation = env_on("VKL_VK_VALIDATION");
    vkl_status st = validation ? have_validation_layer(ctx) : VKL_OK;
    if (st) return st;
    if (validation) {
        vkl_vk_messages *m = vkl_calloc(ctx, 1, sizeof(*m));
        if (!m) return VKL_ERR_OUT_OF_MEMORY;
        if (pthread_mutex_init(&m->lock, NULL)) {
            vkl_free(ctx, m);
            return vkl_fail(ctx, VKL_ERR_INTERNAL, "vulkan: pthread_mutex_init failed for the validation messages");
        }
        m->ctx = ctx;
        dev->msgs = m;
    }
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = "vkllm",
                             .pEngineName = "vkllm",
                             .apiVersion = version < VK_API_VERSION_1_3 ? version : VK_API_VERSION_1_3};
    const char *layer = VALIDATION_LAYER, *ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    VkDebugUtilsMessengerCreateInfoEXT mi;
    if (validation) messenger_info(dev->msgs, &mi);
    VkInstanceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                                 .pNext = validation ? &mi : NULL, /* messages of create/destroy too */
                                 .pApplicationInfo = &app,
                                 .enabledLayerCount = validation ? 1 : 0,
                                 .ppEnabledLayerNames = validation ? &layer : NULL,
                                 .enabledExtensionCount = validation ? 1 : 0,
                                 .ppEnabledExtensionNames = validation ? &ext : NULL};
    VkResult r = vkCreateInstance(&info, NULL, &dev->instance);
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
        return vkl_fail(ctx, VKL_ERR_NOT_FOUND,
                        "vulkan: no Vulkan driver (vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER); "
                        "headless NVIDIA hosts: see docs/vulkan.md");
    if ((st = vkl_vk_check(ctx, r, "vkCreateInstance"))) return st;
    volkLoadInstanceOnly(dev->instance);
    if (validation) st = VKL_VKI(ctx, vkCreateDebugUtilsMessengerEXT, (dev->instance, &mi, NULL, &dev->messenger));
    return st;
}

static int type_rank(VkPhysicalDeviceType t) {
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 4;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 3;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 1;
    default: return 0;
    }
}

/* options->device_index (>= 0: that device in the loader's order), else the
 * best type: discrete > integrated > virtual > cpu, first among equals. */
static vkl_status choose_physical(vkl_backend_device *dev, const vkl_backend_options *opt) {
    vkl_context *ctx = dev->ctx;
    uint32_t n = 0;
    vkl_status st = VKL_VKI(ctx, vkEnumeratePhysicalDevices, (dev->instance, &n, NULL));
    if (st) return st;
    if (!n)
        return vkl_fail(ctx, VKL_ERR_NOT_FOUND, "vulkan: no Vulkan device (a driver is installed but reports none)");
    VkPhysicalDevice *all = vkl_calloc(ctx, n, sizeof(*all));
    if (!all) return VKL_ERR_OUT_OF_MEMORY;
    st = VKL_VKI(ctx, vkEnumeratePhysicalDevices, (dev->instance, &n, all));
    int best = -1, best_rank = -1;
    for (uint32_t i = 0; !st && i < n; i++) {
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(all[i], &p);
        if (p.apiVersion < VK_API_VERSION_1_1) continue;
        if (type_rank(p.deviceType) > best_rank) {
            best = (int)i;
            best_rank = type_rank(p.deviceType);
        }
    }
    int want = opt && opt->device_index >= 0 ? opt->device_index : best;
    if (!st && opt && opt->device_index >= 0 && (uint32_t)opt->device_index >= n)
        st = vkl_fail(ctx, VKL_ERR_NOT_FOUND, "vulkan: device index %d, but there are %u device(s)",
                      opt->device_index, n);
    else if (!st && want < 0)
        st = vkl_fail(ctx, VKL_ERR_NOT_FOUND, "vulkan: none of the %u device(s) supports Vulkan 1.1", n);
    if (!st) {
        dev->phys = all[want];
        vkGetPhysicalDeviceProperties(dev->phys, &dev->props);
        if (dev->props.apiVersion < VK_API_VERSION_1_1)
            st = vkl_fail(ctx, VKL_ERR_UNSUPPORTED,
                          "vulkan: device %d (%s) supports only Vulkan %u.%u; vkllm needs 1.1", want,
                          dev->props.deviceName, VK_API_VERSION_MAJOR(dev->props.apiVersion),
                          VK_API_VERSION_MINOR(dev->props.apiVersion));
    }
    vkl_free(ctx, all);
    return st;
}

/* The first compute-capable queue family, preferring one with timestamps. */
static vkl_status choose_queue(vkl_backend_device *dev) {
    uint32_t n = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(dev->phys, &n, NULL);
    VkQueueFamilyProperties *f = n ? vkl_calloc(dev->ctx, n, sizeof(*f)) : NULL;
    if (n && !f) return VKL_ERR_OUT_OF_MEMORY;
    vkGetPhysicalDeviceQueueFamilyProperties(dev->phys, &n, f);
    int pick = -1;
    for (uint32_t i = 0; i < n; i++) {
        if (!(f[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
        if (pick < 0 || (f[i].timestampValidBits && !f[pick].timestampValidBits)) pick = (int)i;
    }
    if (pick >= 0) {
        dev->queue_family = (uint32_t)pick;
        dev->timestamp_bits = f[pick].timestampValidBits;
    }
    vkl_free(dev->ctx, f);
    if (pick < 0)
        return vkl_fail(dev->ctx, VKL_ERR_UNSUPPORTED, "vulkan: %s has no compute queue", dev->props.deviceName);
    return VKL_OK;
}

static bool has_extension(const VkExtensionProperties *e, uint32_t n, const char *name) {
    for (uint32_t i = 0; i < n; i++)
        if (!strcmp(e[i].extensionName, name)) return true;
    return false;
}

/* Everything vkl_backend_caps reports, and what the kernels may use. The
 * features are the device's; of fp16, integer dot and cooperative matrix the
 * kernels use fp16 only, when choose_math says so (docs/vulkan.md). */
static vkl_status describe(vkl_backend_device *dev, const vkl_backend_options *opt) {
    vkl_context *ctx = dev->ctx;
    vkl_backend_caps *c = &dev->caps;
    memset(c, 0, sizeof(*c));
    vkGetPhysicalDeviceMemoryProperties(dev->phys, &dev->memory);
    const bool v12 = dev->props.apiVersion >= VK_API_VERSION_1_2;
    VkPhysicalDeviceDriverProperties drv = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceSubgroupProperties sub = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES,
                                              .pNext = v12 ? &drv : NULL};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &sub};
    vkGetPhysicalDeviceProperties2(dev->phys, &p2);
    VkPhysicalDeviceShaderFloat16Int8Features f16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = v12 ? &f16 : NULL};
    vkGetPhysicalDeviceFeatures2(dev->phys, &f2);

    uint32_t n_ext = 0;
    vkl_status st = VKL_VKI(ctx, vkEnumerateDeviceExtensionProperties, (dev->phys, NULL, &n_ext, NULL));
    VkExtensionProperties *ext = st || !n_ext ? NULL : vkl_calloc(ctx, n_ext, sizeof(*ext));
    if (!st && n_ext && !ext) return VKL_ERR_OUT_OF_MEMORY;
    if (!st && n_ext) st = VKL_VKI(ctx, vkEnumerateDeviceExtensionProperties, (dev->phys, NULL, &n_ext, ext));
    if (st) {
        vkl_free(ctx, ext);
        return st;
    }
    snprintf(c->device_name, sizeof(c->device_name), "%.127s", dev->props.deviceName);
    if (v12 && drv.driverName[0])
        snprintf(c->driver, sizeof(c->driver), "%.40s %.50s, Vulkan %u.%u.%u", drv.driverName, drv.driverInfo,
                 VK_API_VERSION_MAJOR(dev->props.apiVersion), VK_API_VERSION_MINOR(dev->props.apiVersion),
                 VK_API_VERSION_PATCH(dev->props.apiVersion));
    else
        snprintf(c->driver, sizeof(c->driver), "driver 0x%x, Vulkan %u.%u.%u", dev->props.driverVersion,
                 VK_API_VERSION_MAJOR(dev->props.apiVersion), VK_API_VERSION_MINOR(dev->props.apiVersion),
                 VK_API_VERSION_PATCH(dev->props.apiVersion));
    uint32_t f = 0;
    dev->has_f16 = v12 && f16.shaderFloat16;
    /* f64 tensors run in the _f64 kernel variants, which need shaderFloat64
     * (desktop GPUs and lavapipe have it, phone GPUs do not);
     * VKL_VK_NO_F64=1 refuses them as if it were missing. */
    dev->has_f64 = f2.features.shaderFloat64 && !env_on("VKL_VK_NO_F64");
    if (dev->has_f16) f |= VKL_FEATURE_FP16;
    if (has_extension(ext, n_ext, "VK_KHR_shader_integer_dot_product")) f |= VKL_FEATURE_INT8_DOT;
    if (has_extension(ext, n_ext, "VK_KHR_cooperative_matrix") || has_extension(ext, n_ext, "VK_NV_cooperative_matrix"))
        f |= VKL_FEATURE_COOPMAT;
    if (has_extension(ext, n_ext, "VK_KHR_global_priority") || has_extension(ext, n_ext, "VK_EXT_global_priority"))
        f |= VKL_FEATURE_PRIORITY;
    if (dev->timestamp_bits && dev->props.limits.timestampPeriod > 0) f |= VKL_FEATURE_TIMESTAMPS;
    vkl_free(ctx, ext);
    c->features = f & ~((opt ? opt->disable_features : 0u) | env_disabled_features());
    c->features_disabled = f & ~c->features;
    if (!(c->features & VKL_FEATURE_TIMESTAMPS)) dev->timestamp_bits = 0;
    dev->profile = opt && opt->profile && dev->timestamp_bits;
    for (uint32_t i = 0; i < dev->memory.memoryHeapCount; i++)
        if ((dev->memory.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) &&
            dev->memory.memoryHeaps[i].size > c->device_memory)
            c->device_memory = dev->memory.memoryHeaps[i].size;
    c->unified_memory = dev->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ||
                        dev->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
    VkDeviceSize align = dev->props.limits.minStorageBufferOffsetAlignment;
    c->buffer_alignment = align > 16 ? (size_t)align : 16;
    dev->subgroup_size = sub.subgroupSize;
    /* VKL_VK_NO_SUBGROUP_OPS=1: the shared-memory reductions, for a driver
     * whose subgroup arithmetic is suspect. */
    dev->subgroup_arith = (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                          (sub.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT) &&
                          (sub.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) &&
                          !env_on("VKL_VK_NO_SUBGROUP_OPS");
    vkl_vk_apply_quirks(dev);
    return VKL_OK;
}

/* An integer knob from the environment: in [lo, hi], a power of two if pow2. */
static vkl_status env_uint(vkl_context *ctx, const char *name, uint32_t lo, uint32_t hi, bool pow2, uint32_t *v) {
    const char *s = getenv(name);
    if (!s || !*s) return VKL_OK;
    char *end;
    unsigned long x = strtoul(s, &end, 10);
    if (*end || x < lo || x > hi || (pow2 && (x & (x - 1))))
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "vulkan: %s=%s: want %s%u..%u", name, s,
                        pow2 ? "a power of two in " : "", lo, hi);
    *v = (uint32_t)x;
    return VKL_OK;
}

/* The matvecs' arithmetic, decided here and nowhere else:
 *
 *   fp16 math  iff  the device has shaderFloat16 (VKL_FEATURE_FP16 in caps:
 *                   Vulkan 1.2+ and not masked by options->disable_features)
 *              and  VKL_VK_MATH=f16, or VKL_VK_MATH unset and
 *                   VKL_VK_F16_DEFAULT (false: f32 is the default);
 *   f32 math   otherwise; VKL_VK_MATH=f32 forces it.
 *
 * VKL_VK_MATH=f16 on a device without the feature (or with it masked) fails
 * open, saying why, rather than silently measuring f32. Why f32 is the
 * default (fp16's error and overflow range against f32's): docs/vulkan.md. */
#define VKL_VK_F16_DEFAULT false

static vkl_status choose_math(vkl_backend_device *dev) {
    const bool can = (dev->caps.features & VKL_FEATURE_FP16) != 0;
    const char *v = getenv("VKL_VK_MATH");
    bool want = VKL_VK_F16_DEFAULT && can;
    if (v && *v) {
        if (strcmp(v, "f16") && strcmp(v, "f32"))
            return vkl_fail(dev->ctx, VKL_ERR_INVALID_ARGUMENT, "vulkan: VKL_VK_MATH=%s: want f16 or f32", v);
        want = !strcmp(v, "f16");
        if (want && !can)
            return vkl_fail(dev->ctx, VKL_ERR_UNSUPPORTED,
                            "vulkan: VKL_VK_MATH=f16, but %s %s", dev->caps.device_name,
                            dev->has_f16 ? "has fp16 disabled by the options (VKL_FEATURE_FP16)"
                                         : "has no shaderFloat16 (or is older than Vulkan 1.2)");
    }
    dev->f16_math = want;
    return VKL_OK;
}

static vkl_status tuning(vkl_backend_device *dev) {
    /* Matvec shape: 64 invocations, 8 output rows each: the best of ten
     * (workgroup, rows, staging, unroll) configurations on an H100
     * (docs/vulkan.md); the others with one K step per invocation ran 8-20%
     * slower, the unrolled ones 4% to 2.7x slower. VKL_VK_QMV_WG / _ROWS /
     * _STAGE / _UNROLL, VKL_VK_E0M4_F32 and VKL_VK_F16_CENTER override them
     * for tuning on a new device (quant_matvec*.glsl/.comp say what each does). */
    dev->qmv_wg = 64;
    dev->qmv_rows = 8;
    dev->qmv_stage = dev->props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU;
    dev->qmv_unroll = 1;
    dev->qmv_e0m4_f32 = 0;
    dev->qmv_f16_center = 1; /* fp16 math: as fast as the fold on the H100, 3-7x smaller error */
    uint32_t max_wg = dev->props.limits.maxComputeWorkGroupSize[0];
    if (dev->props.limits.maxComputeWorkGroupInvocations < max_wg)
        max_wg = dev->props.limits.maxComputeWorkGroupInvocations;
    vkl_status st = env_uint(dev->ctx, "VKL_VK_QMV_WG", 32, max_wg, true, &dev->qmv_wg);
    if (!st) st = env_uint(dev->ctx, "VKL_VK_QMV_ROWS", 1, 16, false, &dev->qmv_rows);
    if (!st) st = env_uint(dev->ctx, "VKL_VK_QMV_STAGE", 0, 1, false, &dev->qmv_stage);
    if (!st) st = env_uint(dev->ctx, "VKL_VK_QMV_UNROLL", 1, 4, false, &dev->qmv_unroll);
    if (!st) st = env_uint(dev->ctx, "VKL_VK_E0M4_F32", 0, 1, false, &dev->qmv_e0m4_f32);
    if (!st) st = env_uint(dev->ctx, "VKL_VK_F16_CENTER", 0, 1, false, &dev->qmv_f16_center);
    /* Shared memory: staged activations (9 vec4 per invocation and unrolled
     * step for 4-bit formats) and one partial sum per invocation and row. */
    const size_t shared =
        (size_t)dev->qmv_wg * ((dev->qmv_stage ? 9 * 16 * dev->qmv_unroll : 0) + 4 * dev->qmv_rows);
    if (!st) st = vkl_vk_attention_tuning(dev);
    if (!st && shared > dev->props.limits.maxComputeSharedMemorySize)
        st = vkl_fail(dev->ctx, VKL_ERR_INVALID_ARGUMENT,
                      "vulkan: matvec workgroup %u, %u rows, unroll %u, staging %s needs %zu bytes of shared memory; "
                      "the device has %u", dev->qmv_wg, dev->qmv_rows, dev->qmv_unroll, dev->qmv_stage ? "on" : "off",
                      shared, dev->props.limits.maxComputeSharedMemorySize);
    return st;
}

vkl_status vkl_vk_device_create(vkl_context *ctx, const vkl_backend_options *opt, vkl_backend_device *dev) {
    dev->ctx = dev->own_ctx = ctx;
    vkl_status st = instance_create(dev);
    if (!st) st = choose_physical(dev, opt);
    if (!st) st = choose_queue(dev);
    if (!st) st = describe(dev, opt);
    if (!st) st = tuning(dev);
    if (!st) st = choose_math(dev);
    if (st) return st;
    const float priority = 1.0f;
    VkDeviceQueueCreateInfo q = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                 .queueFamilyIndex = dev->queue_family,
                                 .queueCount = 1,
                                 .pQueuePriorities = &priority};
    /* Features the kernels use: shaderFloat16 for the fp16 matvecs only
     * (they keep f16 in registers and shared memory: no 16-bit storage);
     * shaderFloat64 where the device has it, for f64 tensors. */
    VkPhysicalDeviceShaderFloat16Int8Features f16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES, .shaderFloat16 = VK_TRUE};
    VkPhysicalDeviceFeatures core = {.shaderFloat64 = dev->has_f64};
    VkDeviceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                               .pNext = dev->f16_math ? &f16 : NULL,
                               .queueCreateInfoCount = 1,
                               .pQueueCreateInfos = &q,
                               .pEnabledFeatures = &core};
    if ((st = VKL_VKI(ctx, vkCreateDevice, (dev->phys, &info, NULL, &dev->device)))) return st;
    volkLoadDeviceTable(&dev->vk, dev->device);
    dev->vk.vkGetDeviceQueue(dev->device, dev->queue_family, 0, &dev->queue);
    VkCommandPoolCreateInfo pool = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                    .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                    .queueFamilyIndex = dev->queue_family};
    st = VKL_VKD(dev, vkCreateCommandPool, (dev->device, &pool, NULL, &dev->pool));
    VkCommandBufferAllocateInfo cb = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = dev->pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    if (!st) st = VKL_VKD(dev, vkAllocateCommandBuffers, (dev->device, &cb, &dev->once));
    VkFenceCreateInfo fence = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if (!st) st = VKL_VKD(dev, vkCreateFence, (dev->device, &fence, NULL, &dev->once_fence));
    if (!st) st = vkl_vk_pipelines_init(dev);
    return vkl_vk_validation_status(dev, st, "open");
}

void vkl_vk_device_destroy(vkl_backend_device *dev) {
    if (dev->device) {
        dev->vk.vkDeviceWaitIdle(dev->device); /* nothing may run on what we free */
        vkl_vk_pipelines_destroy(dev);
        vkl_vk_buffer_free(dev, &dev->staging);
        if (dev->once_fence) dev->vk.vkDestroyFence(dev->device, dev->once_fence, NULL);
        if (dev->pool) dev->vk.vkDestroyCommandPool(dev->device, dev->pool, NULL);
        dev->vk.vkDestroyDevice(dev->device, NULL);
    }
    if (dev->messenger) vkDestroyDebugUtilsMessengerEXT(dev->instance, dev->messenger, NULL);
    if (dev->instance) vkDestroyInstance(dev->instance, NULL);
    if (dev->msgs) pthread_mutex_destroy(&dev->msgs->lock);
    vkl_free(dev->own_ctx, dev->msgs);
    dev->msgs = NULL;
    dev->device = VK_NULL_HANDLE;
    dev->instance = VK_NULL_HANDLE;
}

vkl_status vkl_vk_probe(vkl_context *ctx, const vkl_backend_options *opt, vkl_backend_caps *out) {
    memset(out, 0, sizeof(*out));
    if (opt && opt->external_device)
        return vkl_fail(ctx, VKL_ERR_UNSUPPORTED, "vulkan: an external (app-owned) device is not supported yet");
    vkl_backend_device dev = {.ctx = ctx, .own_ctx = ctx};
    vkl_status st = instance_create(&dev);
    if (!st) st = choose_physical(&dev, opt);
    if (!st) st = choose_queue(&dev);
    if (!st) st = describe(&dev, opt);
    if (!st) *out = dev.caps;
    st = vkl_vk_validation_status(&dev, st, "probe");
    vkl_vk_device_destroy(&dev);
    return st;
}

vkl_status vkl_vk_validation_status(vkl_backend_device *dev, vkl_status st, const char *what) {
    vkl_vk_messages *m = dev->msgs;
    if (st || !m) return st;
    char first[sizeof(m->first)];
    pthread_mutex_lock(&m->lock);
    uint32_t n = m->count - m->reported;
    m->reported = m->count;
    memcpy(first, m->first, sizeof(first));
    pthread_mutex_unlock(&m->lock);
    if (!n) return st;
    return vkl_fail(dev->ctx, VKL_ERR_DEVICE, "vulkan validation: %u message(s) during %s; the first: %s", n, what,
                    first);
}

void vkl_vk_enter(vkl_backend_device *dev, vkl_context *ctx) {
    pthread_mutex_lock(&dev->lock);
    dev->ctx = ctx;
}

vkl_status vkl_vk_leave(vkl_backend_device *dev, vkl_status st) {
    dev->ctx = dev->own_ctx;
    pthread_mutex_unlock(&dev->lock);
    return st;
}
