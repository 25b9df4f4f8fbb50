/* The Vulkan device: loader (volk, loaded at run time, so a machine without
 * Vulkan gets a status, never a crash), instance with optional validation,
 * physical device choice, what it can do (caps), logical device and compute
 * queue at the asked global priority, or all of these borrowed from an app
 * (vkllm_vulkan.h), and the device lock every vtable call holds
 * (vkl_vk_enter / vkl_vk_leave, vk_internal.h says why). Every knob comes
 * from vkl_vulkan_options: the library reads no environment variable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_internal.h"

#define VALIDATION_LAYER "VK_LAYER_KHRONOS_validation"

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
    vkl_status st = VKL_VKG(ctx, vkEnumerateInstanceLayerProperties, (&n, NULL));
    VkLayerProperties *layers = st || !n ? NULL : vkl_calloc(ctx, n, sizeof(*layers));
    if (!st && n && !layers) return VKL_ERR_OUT_OF_MEMORY;
    if (!st && n) st = VKL_VKG(ctx, vkEnumerateInstanceLayerProperties, (&n, layers));
    bool found = false;
    for (uint32_t i = 0; !st && i < n; i++) found |= !strcmp(layers[i].layerName, VALIDATION_LAYER);
    vkl_free(ctx, layers);
    if (!st && !found)
        st = vkl_fail(ctx, VKL_ERR_UNSUPPORTED,
                      "vulkan: validation asked for, but %s is not installed (Debian: vulkan-validationlayers; "
                      "or point VK_LAYER_PATH at its .json)",
                      VALIDATION_LAYER);
    return st;
}

/* The instance functions, from the instance's own vkGetInstanceProcAddr. */
static vkl_status load_instance_table(vkl_backend_device *dev, PFN_vkGetInstanceProcAddr gipa, bool messenger) {
    vkl_vk_instance_table *t = &dev->vki;
    memset(t, 0, sizeof(*t));
    t->vkGetInstanceProcAddr = gipa;
#define LOAD(fn) (t->fn = (PFN_##fn)gipa(dev->instance, #fn))
    const bool ok = LOAD(vkDestroyInstance) && LOAD(vkEnumeratePhysicalDevices) &&
                    LOAD(vkGetPhysicalDeviceProperties) && LOAD(vkGetPhysicalDeviceProperties2) &&
                    LOAD(vkGetPhysicalDeviceFeatures2) && LOAD(vkGetPhysicalDeviceMemoryProperties) &&
                    LOAD(vkGetPhysicalDeviceMemoryProperties2) &&
                    LOAD(vkGetPhysicalDeviceQueueFamilyProperties) && LOAD(vkEnumerateDeviceExtensionProperties) &&
                    LOAD(vkCreateDevice) && LOAD(vkGetDeviceProcAddr) &&
                    (!messenger || (LOAD(vkCreateDebugUtilsMessengerEXT) && LOAD(vkDestroyDebugUtilsMessengerEXT)));
#undef LOAD
    if (!ok)
        return vkl_fail(dev->ctx, VKL_ERR_DEVICE,
                        "vulkan: vkGetInstanceProcAddr gave no address for a Vulkan 1.1 instance function "
                        "(an instance made for Vulkan 1.0, or a broken loader)");
    return VKL_OK;
}

/* Loader, instance and (with validation) the messenger. A machine without a
 * loader, a driver or a device is VKL_ERR_NOT_FOUND saying which. */
static vkl_status instance_create(vkl_backend_device *dev, const vkl_vulkan_options *o) {
    vkl_context *ctx = dev->ctx;
    if (volkInitialize() != VK_SUCCESS)
        return vkl_fail(ctx, VKL_ERR_NOT_FOUND,
                        "vulkan: no Vulkan loader: libvulkan.so.1 could not be loaded (Debian: libvulkan1)");
    uint32_t version = volkGetInstanceVersion();
    if (version < VK_API_VERSION_1_1)
        return vkl_fail(ctx, VKL_ERR_NOT_FOUND, "vulkan: the loader offers Vulkan %u.%u; vkllm needs 1.1",
                        VK_API_VERSION_MAJOR(version), VK_API_VERSION_MINOR(version));
    const bool validation = o->validation;
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
    dev->instance_version = app.apiVersion;
    if ((st = load_instance_table(dev, vkGetInstanceProcAddr, validation))) return st;
    if (validation)
        st = VKL_VKI(dev, vkCreateDebugUtilsMessengerEXT, (dev->instance, &mi, NULL, &dev->messenger));
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

static void device_uuid(vkl_backend_device *dev, VkPhysicalDevice p, uint8_t *uuid) {
    VkPhysicalDeviceIDProperties id = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &id};
    dev->vki.vkGetPhysicalDeviceProperties2(p, &p2);
    memcpy(uuid, id.deviceUUID, VK_UUID_SIZE);
}

/* By UUID, else by index in the loader's order, else the best type:
 * discrete > integrated > virtual > cpu, first among equals. */
static vkl_status choose_physical(vkl_backend_device *dev, const vkl_vulkan_options *o) {
    vkl_context *ctx = dev->ctx;
    uint32_t n = 0;
    vkl_status st = VKL_VKI(dev, vkEnumeratePhysicalDevices, (dev->instance, &n, NULL));
    if (st) return st;
    if (!n)
        return vkl_fail(ctx, VKL_ERR_NOT_FOUND, "vulkan: no Vulkan device (a driver is installed but reports none)");
    VkPhysicalDevice *all = vkl_calloc(ctx, n, sizeof(*all));
    if (!all) return VKL_ERR_OUT_OF_MEMORY;
    st = VKL_VKI(dev, vkEnumeratePhysicalDevices, (dev->instance, &n, all));
    int best = -1, best_rank = -1, by_uuid = -1;
    for (uint32_t i = 0; !st && i < n; i++) {
        VkPhysicalDeviceProperties p;
        dev->vki.vkGetPhysicalDeviceProperties(all[i], &p);
        if (p.apiVersion < VK_API_VERSION_1_1) continue;
        uint8_t uuid[VK_UUID_SIZE];
        device_uuid(dev, all[i], uuid);
        if (o->use_device_uuid && by_uuid < 0 && !memcmp(uuid, o->device_uuid, VK_UUID_SIZE)) by_uuid = (int)i;
        if (type_rank(p.deviceType) > best_rank) {
            best = (int)i;
            best_rank = type_rank(p.deviceType);
        }
    }
    int want = o->use_device_uuid ? by_uuid : o->device_index >= 0 ? o->device_index : best;
    if (!st && o->use_device_uuid && want < 0)
        st = vkl_fail(ctx, VKL_ERR_NOT_FOUND, "vulkan: no Vulkan 1.1 device has the UUID in the options (%u device(s))",
                      n);
    else if (!st && !o->use_device_uuid && o->device_index >= 0 && (uint32_t)o->device_index >= n)
        st = vkl_fail(ctx, VKL_ERR_NOT_FOUND, "vulkan: device index %d, but there are %u device(s)", o->device_index,
                      n);
    else if (!st && want < 0)
        st = vkl_fail(ctx, VKL_ERR_NOT_FOUND, "vulkan: none of the %u device(s) supports Vulkan 1.1", n);
    if (!st) dev->phys = all[want];
    vkl_free(ctx, all);
    return st;
}

static vkl_status check_api_version(vkl_backend_device *dev) {
    dev->vki.vkGetPhysicalDeviceProperties(dev->phys, &dev->props);
    if (dev->props.apiVersion < VK_API_VERSION_1_1 || dev->instance_version < VK_API_VERSION_1_1)
        return vkl_fail(dev->ctx, VKL_ERR_UNSUPPORTED,
                        "vulkan: %s: device Vulkan %u.%u, instance made for %u.%u; vkllm needs 1.1 for both",
                        dev->props.deviceName, VK_API_VERSION_MAJOR(dev->props.apiVersion),
                        VK_API_VERSION_MINOR(dev->props.apiVersion), VK_API_VERSION_MAJOR(dev->instance_version),
                        VK_API_VERSION_MINOR(dev->instance_version));
    return VKL_OK;
}

/* Own device: the first compute-capable queue family, preferring one with
 * timestamps. The app's: the family it named, which must do compute. */
static vkl_status choose_queue(vkl_backend_device *dev) {
    uint32_t n = 0;
    dev->vki.vkGetPhysicalDeviceQueueFamilyProperties(dev->phys, &n, NULL);
    VkQueueFamilyProperties *f = n ? vkl_calloc(dev->ctx, n, sizeof(*f)) : NULL;
    if (n && !f) return VKL_ERR_OUT_OF_MEMORY;
    dev->vki.vkGetPhysicalDeviceQueueFamilyProperties(dev->phys, &n, f);
    int pick = -1;
    const vkl_vulkan_external *x = dev->external;
    vkl_status st = VKL_OK;
    if (x) {
        if (x->queue_family >= n || !(f[x->queue_family].queueFlags & VK_QUEUE_COMPUTE_BIT) ||
            x->queue_index >= f[x->queue_family].queueCount)
            st = vkl_fail(dev->ctx, VKL_ERR_INVALID_ARGUMENT,
                          "vulkan: the app's queue (family %u, index %u) is not a compute queue of %s (%u families)",
                          x->queue_family, x->queue_index, dev->props.deviceName, n);
        else
            pick = (int)x->queue_family;
    }
    for (uint32_t i = 0; !x && i < n; i++) {
        if (!(f[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
        if (pick < 0 || (f[i].timestampValidBits && !f[pick].timestampValidBits)) pick = (int)i;
    }
    if (pick >= 0) {
        dev->queue_family = (uint32_t)pick;
        dev->timestamp_bits = f[pick].timestampValidBits;
    }
    vkl_free(dev->ctx, f);
    if (!st && pick < 0)
        st = vkl_fail(dev->ctx, VKL_ERR_UNSUPPORTED, "vulkan: %s has no compute queue", dev->props.deviceName);
    return st;
}

static bool has_extension(const VkExtensionProperties *e, uint32_t n, const char *name) {
    for (uint32_t i = 0; i < n; i++)
        if (!strcmp(e[i].extensionName, name)) return true;
    return false;
}

static bool app_enabled(const vkl_vulkan_external *x, const char *name) {
    for (uint32_t i = 0; i < x->enabled_extension_count; i++)
        if (x->enabled_extensions && x->enabled_extensions[i] && !strcmp(x->enabled_extensions[i], name)) return true;
    return false;
}

/* What the app enabled at vkCreateDevice: shaderFloat16 (1.2 features or
 * the float16/int8 struct), shaderIntegerDotProduct (1.3 features or the
 * extension's struct) and shaderFloat64, from its pNext chain or its
 * pEnabledFeatures. */
static void app_features(const vkl_vulkan_external *x, bool *f16, bool *f64, bool *dot) {
    *f16 = *f64 = *dot = false;
    if (x->enabled_core_features) *f64 = x->enabled_core_features->shaderFloat64;
    for (const VkBaseInStructure *p = x->enabled_features_chain; p; p = p->pNext) {
        if (p->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2)
            *f64 |= ((const VkPhysicalDeviceFeatures2 *)p)->features.shaderFloat64;
        else if (p->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES)
            *f16 |= ((const VkPhysicalDeviceVulkan12Features *)p)->shaderFloat16;
        else if (p->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES)
            *f16 |= ((const VkPhysicalDeviceShaderFloat16Int8Features *)p)->shaderFloat16;
        else if (p->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES)
            *dot |= ((const VkPhysicalDeviceVulkan13Features *)p)->shaderIntegerDotProduct;
        else if (p->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES)
            *dot |= ((const VkPhysicalDeviceShaderIntegerDotProductFeatures *)p)->shaderIntegerDotProduct;
    }
}

/* Everything vkl_backend_caps reports, and what the kernels may use. The
 * features are the device's (on an app's device: what the app enabled); of
 * fp16, integer dot and cooperative matrix the kernels use fp16 when
 * choose_math says so and NVIDIA's cooperative matrix for the prefill GEMM
 * (vk_gemm_tuning.c; docs/vulkan.md). */
static vkl_status describe(vkl_backend_device *dev, const vkl_backend_options *opt, const vkl_vulkan_options *o) {
    vkl_context *ctx = dev->ctx;
    vkl_backend_caps *c = &dev->caps;
    memset(c, 0, sizeof(*c));
    dev->vki.vkGetPhysicalDeviceMemoryProperties(dev->phys, &dev->memory);
    const bool v12 = dev->props.apiVersion >= VK_API_VERSION_1_2;
    uint32_t n_ext = 0;
    vkl_status st = VKL_VKI(dev, vkEnumerateDeviceExtensionProperties, (dev->phys, NULL, &n_ext, NULL));
    VkExtensionProperties *ext = st || !n_ext ? NULL : vkl_calloc(ctx, n_ext, sizeof(*ext));
    if (!st && n_ext && !ext) return VKL_ERR_OUT_OF_MEMORY;
    if (!st && n_ext) st = VKL_VKI(dev, vkEnumerateDeviceExtensionProperties, (dev->phys, NULL, &n_ext, ext));
    if (st) {
        vkl_free(ctx, ext);
        return st;
    }
    /* integer dot products: core in Vulkan 1.3 (the device's and the
     * instance's version), else the KHR extension; its structs are chained
     * only where one of them is there */
    const bool v13 = dev->props.apiVersion >= VK_API_VERSION_1_3 && dev->instance_version >= VK_API_VERSION_1_3;
    dev->has_dot_ext = has_extension(ext, n_ext, "VK_KHR_shader_integer_dot_product");
    const bool dot_known = dev->has_dot_ext || v13;
    VkPhysicalDeviceSubgroupSizeControlProperties size = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
    VkPhysicalDeviceShaderIntegerDotProductProperties dotp = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES, .pNext = v13 ? &size : NULL};
    VkPhysicalDeviceDriverProperties drv = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES,
                                            .pNext = dot_known ? &dotp : NULL};
    VkPhysicalDeviceSubgroupProperties sub = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES,
                                              .pNext = v12 ? (void *)&drv : dot_known ? (void *)&dotp : NULL};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &sub};
    dev->vki.vkGetPhysicalDeviceProperties2(dev->phys, &p2);
    VkPhysicalDeviceShaderIntegerDotProductFeatures dotf = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES};
    VkPhysicalDeviceShaderFloat16Int8Features f16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES, .pNext = dot_known ? &dotf : NULL};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                    .pNext = v12 ? (void *)&f16 : dot_known ? (void *)&dotf : NULL};
    dev->vki.vkGetPhysicalDeviceFeatures2(dev->phys, &f2);
    bool has_f16 = v12 && f16.shaderFloat16, has_f64 = f2.features.shaderFloat64;
    bool has_dot = dot_known && dotf.shaderIntegerDotProduct;
    if (dev->external) {
        bool app_dot;
        app_features(dev->external, &has_f16, &has_f64, &app_dot);
        /* the app enabled the feature, and the extension where it is not core */
        has_dot = has_dot && app_dot &&
                  (v13 || app_enabled(dev->external, "VK_KHR_shader_integer_dot_product"));
    }
    /* the shaders' two forms (OpSDotKHR, OpSUDotKHR) on packed 4 x 8 bits */
    dev->int8_dot_fast = has_dot && dotp.integerDotProduct4x8BitPackedSignedAccelerated &&
                         dotp.integerDotProduct4x8BitPackedMixedSignednessAccelerated;
    snprintf(c->device_name, sizeof(c->device_name), "%.127s", dev->props.deviceName);
    if (v12 && drv.driverName[0])
        snprintf(c->driver, sizeof(c->driver), "%.40s %.50s, Vulkan %u.%u.%u", drv.driverName, drv.driverInfo,
                 VK_API_VERSION_MAJOR(dev->props.apiVersion), VK_API_VERSION_MINOR(dev->props.apiVersion),
                 VK_API_VERSION_PATCH(dev->props.apiVersion));
    else
        snprintf(c->driver, sizeof(c->driver), "driver 0x%x, Vulkan %u.%u.%u", dev->props.driverVersion,
                 VK_API_VERSION_MAJOR(dev->props.apiVersion), VK_API_VERSION_MINOR(dev->props.apiVersion),
                 VK_API_VERSION_PATCH(dev->props.apiVersion));
    /* An extension counts if the device has it and, on an app's device,
     * the app enabled it. */
#define EXT(name) (has_extension(ext, n_ext, name) && (!dev->external || app_enabled(dev->external, name)))
    uint32_t f = 0;
    dev->has_f16 = has_f16;
    /* f64 tensors run in the _f64 kernel variants, which need shaderFloat64
     * (desktop GPUs and lavapipe have it, phone GPUs do not); no_f64
     * refuses them as if it were missing. */
    dev->has_f64 = has_f64 && !o->no_f64;
    if (dev->has_f16) f |= VKL_FEATURE_FP16;
    dev->has_int8_dot = has_dot;
    if (has_dot) f |= VKL_FEATURE_INT8_DOT;
    if (EXT("VK_KHR_cooperative_matrix") || EXT("VK_NV_cooperative_matrix")) f |= VKL_FEATURE_COOPMAT;
    vkl_vk_coopmat_probe(dev, EXT("VK_NV_cooperative_matrix"));
    /* a priority vkllm can ask for: only on its own device */
    dev->has_khr_priority = !dev->external && has_extension(ext, n_ext, "VK_KHR_global_priority");
    dev->has_ext_priority = !dev->external && has_extension(ext, n_ext, "VK_EXT_global_priority");
    if (dev->has_khr_priority || dev->has_ext_priority) f |= VKL_FEATURE_PRIORITY;
    if (dev->timestamp_bits && dev->props.limits.timestampPeriod > 0) f |= VKL_FEATURE_TIMESTAMPS;
    f |= VKL_FEATURE_FUSION; /* vk_fuse.c's patterns need nothing of the device */
    /* the heap's budget, for the check at load (vk_limits.c): enabled on our
     * own device when present, used on the app's only if it enabled it */
    dev->has_memory_budget = EXT("VK_EXT_memory_budget");
    dev->pipeline_stats = o->pipeline_stats && !dev->external &&
                          has_extension(ext, n_ext, "VK_KHR_pipeline_executable_properties");
    if (o->pipeline_stats && !dev->pipeline_stats)
        vkl_log(ctx, VKL_LOG_WARN, "vulkan: pipeline_stats: %s", dev->external ? "not on an app's device"
                : "the device has no VK_KHR_pipeline_executable_properties");
#undef EXT
    vkl_free(ctx, ext);
    c->features = f & ~(opt ? opt->disable_features : 0u);
    c->features_disabled = f & ~c->features;
    if (!(c->features & VKL_FEATURE_TIMESTAMPS)) dev->timestamp_bits = 0;
    dev->profile = opt && opt->profile && dev->timestamp_bits;
    for (uint32_t i = 0; i < dev->memory.memoryHeapCount; i++)
        if ((dev->memory.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) &&
            dev->memory.memoryHeaps[i].size > c->device_memory)
            c->device_memory = dev->memory.memoryHeaps[i].size;
    c->unified_memory = dev->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ||
                        dev->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
    c->device_class = dev->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? VKL_DEVICE_EMULATED : VKL_DEVICE_GPU;
    VkDeviceSize align = dev->props.limits.minStorageBufferOffsetAlignment;
    c->buffer_alignment = align > 16 ? (size_t)align : 16;
    dev->subgroup_size = sub.subgroupSize;
    /* kernels that size arrays by the subgroup (attn_decode_sg.comp) need
     * every dispatch to run at the one size the device reports */
    dev->subgroup_fixed = v13 && size.minSubgroupSize == size.maxSubgroupSize &&
                          size.maxSubgroupSize == sub.subgroupSize;
    /* no_subgroup_ops: the shared-memory reductions, for a driver whose
     * subgroup arithmetic is suspect. */
    dev->subgroup_arith = (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                          (sub.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT) &&
                          (sub.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) && !o->no_subgroup_ops;
    vkl_vk_apply_quirks(dev);
    /* after the quirks: one may turn fusion off for a driver */
    dev->fuse = (c->features & VKL_FEATURE_FUSION) && !o->no_fusion;
    dev->fuse_off = o->fusions_off;
    return VKL_OK;
}

/* A tuning option: 0 keeps the device's choice; else within [lo, hi], a
 * power of two if pow2. */
static vkl_status option_uint(vkl_context *ctx, const char *name, uint32_t x, uint32_t lo, uint32_t hi, bool pow2,
                              uint32_t *v) {
    if (!x) return VKL_OK;
    if (x < lo || x > hi || (pow2 && (x & (x - 1))))
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "vulkan: option %s = %u: want %s%u..%u", name, x,
                        pow2 ? "a power of two in " : "", lo, hi);
    *v = x;
    return VKL_OK;
}

/* A yes/no tuning option: -1 keeps the device's choice. */
static vkl_status option_bool(vkl_context *ctx, const char *name, int x, uint32_t *v) {
    if (x < -1 || x > 1) return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "vulkan: option %s = %d: want -1, 0 or 1", name, x);
    if (x >= 0) *v = (uint32_t)x;
    return VKL_OK;
}

/* The matvecs' arithmetic, decided here and nowhere else:
 *
 *   fp16 math  iff  the device has shaderFloat16 (VKL_FEATURE_FP16 in caps:
 *                   Vulkan 1.2+, on an app's device enabled by the app, and
 *                   not masked by disable_features)
 *              and  options.math is F16, or DEFAULT and VKL_VK_F16_DEFAULT
 *                   (false: f32 is the default);
 *   f32 math   otherwise; F32 forces it.
 *
 * F16 on a device without the feature (or with it masked) fails open,
 * saying why, rather than silently measuring f32. Why f32 is the default
 * (fp16's error and overflow range against f32's): docs/vulkan.md. */
#define VKL_VK_F16_DEFAULT false

static vkl_status choose_math(vkl_backend_device *dev, const vkl_vulkan_options *o) {
    const bool can = (dev->caps.features & VKL_FEATURE_FP16) != 0;
    bool want = VKL_VK_F16_DEFAULT && can;
    if (o->math > VKL_VULKAN_MATH_F16)
        return vkl_fail(dev->ctx, VKL_ERR_INVALID_ARGUMENT, "vulkan: option math = %d: want DEFAULT, F32 or F16",
                        (int)o->math);
    if (o->math != VKL_VULKAN_MATH_DEFAULT) {
        want = o->math == VKL_VULKAN_MATH_F16;
        if (want && !can)
            return vkl_fail(dev->ctx, VKL_ERR_UNSUPPORTED, "vulkan: f16 math asked for, but %s %s",
                            dev->caps.device_name,
                            dev->has_f16 ? "has fp16 disabled by the options (VKL_FEATURE_FP16)"
                            : dev->external ? "was made without shaderFloat16 enabled by the app"
                                            : "has no shaderFloat16 (or is older than Vulkan 1.2)");
    }
    dev->f16_math = want;
    return VKL_OK;
}

/* The decode matvecs' products, decided here and nowhere else:
 *
 *   integer dot (the _dot variants)  iff  VKL_FEATURE_INT8_DOT is in caps
 *              (shaderIntegerDotProduct: Vulkan 1.3 or the KHR extension,
 *              on an app's device enabled by the app, not masked)
 *         and  options.matvec is DOT, or DEFAULT and the driver reports the
 *              4 x 8-bit packed signed and mixed-signedness dot products as
 *              accelerated (lavapipe does not: its CI runs force DOT);
 *   float (options.math's arithmetic) otherwise; FLOAT forces it.
 *
 * DOT on a device without the feature fails open, saying why. The dot
 * matvecs replace the float ones whatever options.math says; the GEMM keeps
 * options.math. */
static vkl_status choose_matvec(vkl_backend_device *dev, const vkl_vulkan_options *o) {
    const bool can = (dev->caps.features & VKL_FEATURE_INT8_DOT) != 0;
    if (o->matvec > VKL_VULKAN_MATVEC_DOT)
        return vkl_fail(dev->ctx, VKL_ERR_INVALID_ARGUMENT, "vulkan: option matvec = %d: want DEFAULT, FLOAT or DOT",
                        (int)o->matvec);
    if (o->matvec == VKL_VULKAN_MATVEC_DOT && !can)
        return vkl_fail(dev->ctx, VKL_ERR_UNSUPPORTED, "vulkan: integer-dot matvecs asked for, but %s %s",
                        dev->caps.device_name,
                        dev->has_int8_dot ? "has integer dot disabled by the options (VKL_FEATURE_INT8_DOT)"
                        : dev->external   ? "was made without shaderIntegerDotProduct enabled by the app"
                                          : "has no shaderIntegerDotProduct (Vulkan 1.3 or "
                                            "VK_KHR_shader_integer_dot_product)");
    dev->matvec_dot = o->matvec == VKL_VULKAN_MATVEC_DOT || (o->matvec == VKL_VULKAN_MATVEC_DEFAULT && can &&
                                                             dev->int8_dot_fast);
    return VKL_OK;
}

static vkl_status tuning(vkl_backend_device *dev, const vkl_vulkan_options *o) {
    /* Matvec shape: 64 invocations, 4 output rows each on a GPU: on an H100
     * with compute-only barriers, a 1B decode ran 4% faster than with 8
     * rows (the best of ten configurations when every barrier also waited
     * for host and transfer access; docs/vulkan.md): more workgroups for the
     * 512- and 2048-row projections. 8 on a CPU device, unmeasured since.
     * The others with one K step per invocation ran 8-20% slower, the
     * unrolled ones 4% to 2.7x slower. The matvec_* options
     * override them for tuning on a new device (quant_matvec*.glsl/.comp
     * say what each does). */
    dev->qmv_wg = 64;
    dev->qmv_rows = dev->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? 8 : 4;
    dev->qmv_stage = dev->props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU;
    dev->qmv_unroll = 1;
    /* The dot matvecs (quant_matvec_dot.glsl) read activations quantized
     * by a pass of their own, so their loop is loads and dot products:
     * teams of one subgroup where every dispatch runs at one subgroup size
     * (a subgroupAdd ends it, no shared memory, no barrier), else the whole
     * workgroup; two steps per lane in flight; one row a team on a GPU, 4
     * on a CPU device (unmeasured there). An H200's 1B decode (2026-11-26,
     * 640 tokens, one run each): 646.6 tok/s at 1 row, 634.6 at 2, 584.0
     * at 4, 603.6 at 2 rows with 4 steps in flight, 626.7 at 2 rows in
     * workgroups of 32: a 2048-wide projection has 2048 teams at one row,
     * enough subgroups in flight to hide the loads. The matvec_* options
     * (VKL_VK_QMV_*) sweep them on a new device. */
    const bool sg_teams = dev->subgroup_arith && dev->subgroup_fixed && dev->subgroup_size >= 4 &&
                          dev->subgroup_size <= 64 && !(dev->subgroup_size & (dev->subgroup_size - 1));
    dev->qmv_team = sg_teams ? dev->subgroup_size : 0; /* 0: the workgroup, once its size is known */
    if (dev->matvec_dot) {
        dev->qmv_rows = dev->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? 4 : 1;
        dev->qmv_unroll = 2;
        /* 4 teams a workgroup on a discrete GPU: an H100's 1B decode
         * (2026-11-27, three alternations, ms a step) took 1.222-1.246 at
         * 128 invocations, 1.236-1.244 at 256 and 1.267-1.315 at 64, as
         * 256 had led 64 by 1-2% in each earlier session; elsewhere
         * unmeasured, so 64 */
        if (sg_teams && dev->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU) dev->qmv_wg = 128;
    }
    dev->qmv_e0m4_f32 = 0;
    dev->qmv_f16_center = 1; /* fp16 math: as fast as the fold on the H100, 3-7x smaller error */
    /* two int8 terms: one alone broke the bundled model's greedy text
     * (docs/vulkan.md, "Integer dot products") */
    dev->qmv_dot_residual = 1;
    uint32_t max_wg = dev->props.limits.maxComputeWorkGroupSize[0];
    if (dev->props.limits.maxComputeWorkGroupInvocations < max_wg)
        max_wg = dev->props.limits.maxComputeWorkGroupInvocations;
    vkl_context *ctx = dev->ctx;
    vkl_status st = option_uint(ctx, "matvec_workgroup", o->matvec_workgroup, 32, max_wg, true, &dev->qmv_wg);
    if (!st) st = option_uint(ctx, "matvec_rows", o->matvec_rows, 1, 16, false, &dev->qmv_rows);
    if (!st) st = option_bool(ctx, "matvec_stage", o->matvec_stage, &dev->qmv_stage);
    if (!st) st = option_uint(ctx, "matvec_unroll", o->matvec_unroll, 1, 4, false, &dev->qmv_unroll);
    if (!st) st = option_bool(ctx, "matvec_e0m4_f32", o->matvec_e0m4_f32, &dev->qmv_e0m4_f32);
    if (!st) st = option_bool(ctx, "matvec_f16_center", o->matvec_f16_center, &dev->qmv_f16_center);
    if (!st) st = option_bool(ctx, "matvec_dot_residual", o->matvec_dot_residual, &dev->qmv_dot_residual);
    if (!st) st = option_uint(ctx, "matvec_team", o->matvec_team, 1, max_wg, true, &dev->qmv_team);
    if (!st && o->matvec_team > dev->qmv_wg)
        st = vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "vulkan: option matvec_team = %u: more than the matvec "
                      "workgroup's %u invocations", o->matvec_team, dev->qmv_wg);
    /* the default, a subgroup larger than a workgroup the options made small: the workgroup */
    if (!dev->qmv_team || dev->qmv_team > dev->qmv_wg) dev->qmv_team = dev->qmv_wg;
    dev->qmv_team_sg = dev->subgroup_arith && dev->subgroup_fixed && dev->qmv_team == dev->subgroup_size;
    /* the dot matvec's lane r of a team stores its row r */
    if (!st && dev->matvec_dot && dev->qmv_rows > dev->qmv_team)
        st = vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "vulkan: matvec_rows = %u rows a team, more than its %u "
                      "invocations (matvec_team, or the workgroup)", dev->qmv_rows, dev->qmv_team);
    /* Shared memory: the float matvecs' staged activations (9 vec4 per
     * invocation and unrolled step for 4-bit formats) and one partial sum
     * per invocation and row; the dot matvecs' partial sums unless a
     * subgroupAdd reduces the team. */
    const size_t shared = vkl_vk_qmv_shared_bytes(dev, false);
    if (!st) st = vkl_vk_attention_tuning(dev, o);
    if (!st && shared > dev->props.limits.maxComputeSharedMemorySize)
        st = vkl_fail(dev->ctx, VKL_ERR_INVALID_ARGUMENT,
                      "vulkan: matvec workgroup %u, %u rows, unroll %u, staging %s needs %zu bytes of shared memory; "
                      "the device has %u", dev->qmv_wg, dev->qmv_rows, dev->qmv_unroll, dev->qmv_stage ? "on" : "off",
                      shared, dev->props.limits.maxComputeSharedMemorySize);
    return st;
}

/* The app's instance and physical device, checked as far as Vulkan lets us. */
static vkl_status adopt_external(vkl_backend_device *dev, const vkl_vulkan_external *x) {
    if (!x->get_instance_proc_addr || !x->instance || !x->physical_device || !x->device)
        return vkl_fail(dev->ctx, VKL_ERR_INVALID_ARGUMENT,
                        "vulkan: the app's device needs get_instance_proc_addr, instance, physical_device and device");
    if (!x->queue_lock != !x->queue_unlock)
        return vkl_fail(dev->ctx, VKL_ERR_INVALID_ARGUMENT, "vulkan: the app's queue_lock and queue_unlock go together");
    dev->external = x;
    dev->instance = x->instance;
    dev->instance_version = x->api_version;
    dev->phys = x->physical_device;
    dev->queue_lock = x->queue_lock;
    dev->queue_unlock = x->queue_unlock;
    dev->queue_lock_user = x->queue_lock_user;
    return load_instance_table(dev, x->get_instance_proc_addr, false);
}

/* Instance (or the app's), physical device, queue family, caps: what probe
 * and open share. */
static vkl_status find_device(vkl_backend_device *dev, const vkl_backend_options *opt, const vkl_vulkan_options *o) {
    vkl_status st = o->external ? adopt_external(dev, o->external) : instance_create(dev, o);
    if (!st && !o->external) st = choose_physical(dev, o);
    if (!st) st = check_api_version(dev);
    if (!st) st = choose_queue(dev);
    if (!st) st = describe(dev, opt, o);
    return st;
}

static const char *priority_name(vkl_vulkan_priority p) {
    static const char *names[] = {"LOW", "MEDIUM", "HIGH", "REALTIME"};
    return p < VKL_VULKAN_PRIORITY_DRIVER ? names[p] : "the driver's default";
}

/* The global priority to chain into the queue's create info, or none (and
 * the reason in dev->priority). The KHR and EXT structs are one layout. */
static bool priority_request(vkl_backend_device *dev, const vkl_vulkan_options *o,
                             VkDeviceQueueGlobalPriorityCreateInfoKHR *gp, const char **ext) {
    static const VkQueueGlobalPriorityKHR levels[] = {VK_QUEUE_GLOBAL_PRIORITY_LOW_KHR, VK_QUEUE_GLOBAL_PRIORITY_MEDIUM_KHR,
                                                      VK_QUEUE_GLOBAL_PRIORITY_HIGH_KHR,
                                                      VK_QUEUE_GLOBAL_PRIORITY_REALTIME_KHR};
    if (o->priority >= VKL_VULKAN_PRIORITY_DRIVER) {
        snprintf(dev->priority, sizeof(dev->priority), "the driver's default (none asked for)");
        return false;
    }
    if (!(dev->caps.features & VKL_FEATURE_PRIORITY)) {
        snprintf(dev->priority, sizeof(dev->priority), "the driver's default (%s)",
                 dev->has_khr_priority || dev->has_ext_priority ? "priority turned off by the options"
                                                                : "no global priority extension");
        return false;
    }
    *gp = (VkDeviceQueueGlobalPriorityCreateInfoKHR){.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_GLOBAL_PRIORITY_CREATE_INFO_KHR,
                                                     .globalPriority = levels[o->priority]};
    *ext = dev->has_khr_priority ? "VK_KHR_global_priority" : "VK_EXT_global_priority";
    snprintf(dev->priority, sizeof(dev->priority), "%s (%s)", priority_name(o->priority), *ext);
    return true;
}

/* Own device: logical device and queue at the asked priority; a driver that
 * refuses the priority (VK_ERROR_NOT_PERMITTED) gets a device without one,
 * and the log says so. */
static vkl_status own_device_create(vkl_backend_device *dev, const vkl_vulkan_options *o) {
    const float level = 1.0f;
    VkDeviceQueueGlobalPriorityCreateInfoKHR gp;
    const char *ext = NULL;
    const bool ask = priority_request(dev, o, &gp, &ext);
    VkDeviceQueueCreateInfo q = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                 .pNext = ask ? &gp : NULL,
                                 .queueFamilyIndex = dev->queue_family,
                                 .queueCount = 1,
                                 .pQueuePriorities = &level};
    const bool coopmat = dev->gemm_coopmat || dev->attn_cm == 1;
    /* Features the kernels use: shaderFloat16 for the fp16 matvecs and
     * GEMMs (f16 kept in registers and shared memory: no 16-bit storage);
     * shaderFloat64 where the device has it, for f64 tensors. */
    VkPhysicalDeviceShaderFloat16Int8Features f16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES, .shaderFloat16 = VK_TRUE};
    /* The cooperative-matrix GEMM and prefill attention: the NV extension and feature, fp16, and
     * the Vulkan memory model (glslang declares it for every NV coopmat
     * shader) with its device scope (which the other kernels' atomics then
     * need: vk_gemm_tuning.c). */
    VkPhysicalDeviceVulkanMemoryModelFeatures mm = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES,
                                                    .vulkanMemoryModel = VK_TRUE,
                                                    .vulkanMemoryModelDeviceScope = VK_TRUE};
    VkPhysicalDeviceCooperativeMatrixFeaturesNV cm = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV, .pNext = &mm,
        .cooperativeMatrix = VK_TRUE};
    if (coopmat) f16.pNext = &cm;
    /* The dot matvecs: shaderIntegerDotProduct (SPIR-V DotProduct and
     * DotProductInput4x8BitPacked), with the extension where it is listed
     * (needed below Vulkan 1.3, harmless at or above it). */
    VkPhysicalDeviceShaderIntegerDotProductFeatures dotf = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES,
        .pNext = dev->f16_math || coopmat ? &f16 : NULL,
        .shaderIntegerDotProduct = VK_TRUE};
    void *chain = dev->matvec_dot ? (void *)&dotf : dev->f16_math || coopmat ? (void *)&f16 : NULL;
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR pe = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR,
        .pNext = chain,
        .pipelineExecutableInfo = VK_TRUE};
    if (dev->pipeline_stats) chain = &pe;
    const char *exts[5];
    uint32_t n_ext = 0;
    if (ask) exts[n_ext++] = ext; /* first: a refused priority drops it alone */
    if (coopmat) exts[n_ext++] = "VK_NV_cooperative_matrix";
    if (dev->has_memory_budget) exts[n_ext++] = "VK_EXT_memory_budget";
    if (dev->matvec_dot && dev->has_dot_ext) exts[n_ext++] = "VK_KHR_shader_integer_dot_product";
    if (dev->pipeline_stats) exts[n_ext++] = "VK_KHR_pipeline_executable_properties";
    VkPhysicalDeviceFeatures core = {.shaderFloat64 = dev->has_f64};
    VkDeviceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                               .pNext = chain,
                               .queueCreateInfoCount = 1,
                               .pQueueCreateInfos = &q,
                               .enabledExtensionCount = n_ext,
                               .ppEnabledExtensionNames = n_ext ? exts : NULL,
                               .pEnabledFeatures = &core};
    VkResult r = dev->vki.vkCreateDevice(dev->phys, &info, NULL, &dev->device);
    if (ask && (r == VK_ERROR_NOT_PERMITTED_KHR || r == VK_ERROR_INITIALIZATION_FAILED)) {
        vkl_log(dev->ctx, VKL_LOG_WARN, "vulkan: %s refused global priority %s (%s); running at its default",
                dev->caps.device_name, priority_name(o->priority), vkl_vk_result_name(r));
        snprintf(dev->priority, sizeof(dev->priority), "the driver's default (%.8s refused)",
                 priority_name(o->priority));
        q.pNext = NULL;
        info.enabledExtensionCount = n_ext - 1; /* the priority's was first */
        info.ppEnabledExtensionNames = n_ext > 1 ? exts + 1 : NULL;
        r = dev->vki.vkCreateDevice(dev->phys, &info, NULL, &dev->device);
    }
    return vkl_vk_check(dev->ctx, r, "vkCreateDevice");
}

/* The device's function table, through this instance's vkGetDeviceProcAddr.
 * volk reads its global vkGetDeviceProcAddr while it loads a table; it is
 * pointed at ours for that moment only, under a lock, and put back. */
static void load_device_table(vkl_backend_device *dev) {
    static pthread_mutex_t volk_lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&volk_lock);
    PFN_vkGetDeviceProcAddr saved = vkGetDeviceProcAddr;
    vkGetDeviceProcAddr = dev->vki.vkGetDeviceProcAddr;
    volkLoadDeviceTable(&dev->vk, dev->device);
    vkGetDeviceProcAddr = saved;
    pthread_mutex_unlock(&volk_lock);
}

static const vkl_vulkan_options *options_of(const vkl_backend_options *opt, vkl_vulkan_options *defaults) {
    if (opt && opt->vulkan) return opt->vulkan;
    vkl_vulkan_options_init(defaults);
    return defaults;
}

vkl_status vkl_vk_device_create(vkl_context *ctx, const vkl_backend_options *opt, vkl_backend_device *dev) {
    dev->ctx = dev->own_ctx = ctx;
    vkl_vulkan_options defaults;
    const vkl_vulkan_options *o = options_of(opt, &defaults);
    vkl_status st = find_device(dev, opt, o);
    if (!st) st = choose_matvec(dev, o); /* before tuning: the dot matvecs' rows */
    if (!st) st = tuning(dev, o);
    if (!st) st = choose_math(dev, o);
    if (!st) st = vkl_vk_limits_init(dev, o);
    if (!st) st = vkl_vk_gemm_tuning(dev, o);
    if (st) return st;
    if (dev->external) {
        dev->device = dev->external->device;
        snprintf(dev->priority, sizeof(dev->priority), "the app's (its own queue)");
    } else if ((st = own_device_create(dev, o))) {
        return st;
    }
    snprintf(dev->caps.queue_priority, sizeof(dev->caps.queue_priority), "%s", dev->priority);
    load_device_table(dev);
    dev->vk.vkGetDeviceQueue(dev->device, dev->queue_family, dev->external ? dev->external->queue_index : 0,
                             &dev->queue);
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
    dev->cache_dir_option = o->pipeline_cache_dir; /* read by vkl_vk_pipelines_init only */
    dev->cache_file_option = o->pipeline_cache_file;
    if (!st) st = vkl_vk_pipelines_init(dev);
    return vkl_vk_validation_status(dev, st, "open");
}

/* Everything vkllm submitted has been waited for by now (executables wait
 * for their fence when released, one-shot work at once), so the app's
 * device is never waited idle; our own is, as a last guard. */
void vkl_vk_device_destroy(vkl_backend_device *dev) {
    if (dev->device) {
        if (!dev->external) dev->vk.vkDeviceWaitIdle(dev->device);
        vkl_vk_pipelines_destroy(dev);
        vkl_vk_buffer_free(dev, &dev->staging);
        if (dev->once_fence) dev->vk.vkDestroyFence(dev->device, dev->once_fence, NULL);
        if (dev->pool) dev->vk.vkDestroyCommandPool(dev->device, dev->pool, NULL);
        if (!dev->external) dev->vk.vkDestroyDevice(dev->device, NULL);
    }
    if (dev->messenger) dev->vki.vkDestroyDebugUtilsMessengerEXT(dev->instance, dev->messenger, NULL);
    if (dev->instance && !dev->external) dev->vki.vkDestroyInstance(dev->instance, NULL);
    if (dev->msgs) pthread_mutex_destroy(&dev->msgs->lock);
    vkl_free(dev->own_ctx, dev->msgs);
    dev->msgs = NULL;
    dev->device = VK_NULL_HANDLE;
    dev->instance = VK_NULL_HANDLE;
}

vkl_status vkl_vk_probe(vkl_context *ctx, const vkl_backend_options *opt, vkl_backend_caps *out) {
    memset(out, 0, sizeof(*out));
    vkl_backend_device dev = {.ctx = ctx, .own_ctx = ctx};
    vkl_vulkan_options defaults;
    const vkl_vulkan_options *o = options_of(opt, &defaults);
    vkl_status st = find_device(&dev, opt, o);
    if (!st) *out = dev.caps;
    st = vkl_vk_validation_status(&dev, st, "probe");
    vkl_vk_device_destroy(&dev);
    return st;
}

vkl_status vkl_vk_submit(vkl_backend_device *dev, const VkSubmitInfo *submit, VkFence fence) {
    if (dev->queue_lock) dev->queue_lock(dev->queue_lock_user);
    vkl_status st = VKL_VKD(dev, vkQueueSubmit, (dev->queue, 1, submit, fence));
    if (dev->queue_unlock) dev->queue_unlock(dev->queue_lock_user);
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
