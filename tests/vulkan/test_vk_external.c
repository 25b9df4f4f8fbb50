/* The app's own device (vkllm_vulkan.h): what the backend accepts, refuses
 * and reads from it, on a device this test makes through the loader:
 *  - missing handles, an unpaired queue lock, a queue family that does not
 *    exist or an index past its queues: VKL_ERR_INVALID_ARGUMENT, saying which;
 *  - features are the app's: on a device made without shaderFloat16, fp16
 *    math is refused (naming the app) even where the hardware has it, and
 *    caps report no VKL_FEATURE_FP16; enabled through the 1.2 feature chain,
 *    it is granted;
 *  - a model-free open/close leaves the device usable (a buffer is made and
 *    destroyed after) and reports "the app's" priority;
 *  - vkllm's own device chosen by UUID: this device's is found, an unknown
 *    one is VKL_ERR_NOT_FOUND.
 * Exit 77 when no Vulkan 1.2 device. */
#include <stdio.h>
#include <string.h>

/* volk, not the loader's prototypes: this test links the in-tree library,
 * whose volk defines the vk* names as function pointers. */
#include <volk.h>

#include "backend_env_open.h"
#include "check.h"
#include "vkllm_vulkan.h"

typedef struct own {
    VkInstance instance;
    VkPhysicalDevice phys;
    VkDevice device;
    uint32_t family;
    uint32_t family_queues; /* queueCount of that family */
    bool has_f16;
} own;

static bool make_device(own *o, bool enable_f16) {
    if (volkInitialize() != VK_SUCCESS) return false;
    VkApplicationInfo ai = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .apiVersion = VK_API_VERSION_1_2};
    VkInstanceCreateInfo ii = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &ai};
    if (vkCreateInstance(&ii, NULL, &o->instance) != VK_SUCCESS) return false;
    volkLoadInstanceOnly(o->instance);
    uint32_t n = 1;
    VkResult r = vkEnumeratePhysicalDevices(o->instance, &n, &o->phys);
    if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || !n) return false;
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(o->phys, &p);
    if (p.apiVersion < VK_API_VERSION_1_2) return false;
    VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f12};
    vkGetPhysicalDeviceFeatures2(o->phys, &f2);
    o->has_f16 = f12.shaderFloat16;
    uint32_t nf = 8;
    VkQueueFamilyProperties fam[8];
    vkGetPhysicalDeviceQueueFamilyProperties(o->phys, &nf, fam);
    o->family = UINT32_MAX;
    for (uint32_t i = 0; i < nf && o->family == UINT32_MAX; i++)
        if (fam[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
            o->family = i;
            o->family_queues = fam[i].queueCount;
        }
    const float prio = 1.0f;
    VkDeviceQueueCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, .queueFamilyIndex = o->family,
                                  .queueCount = 1, .pQueuePriorities = &prio};
    VkPhysicalDeviceVulkan12Features want12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                               .shaderFloat16 = enable_f16 && o->has_f16};
    VkPhysicalDeviceFeatures2 want = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &want12};
    VkDeviceCreateInfo di = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .pNext = &want,
                             .queueCreateInfoCount = 1, .pQueueCreateInfos = &qi};
    if (o->family == UINT32_MAX || vkCreateDevice(o->phys, &di, NULL, &o->device) != VK_SUCCESS) return false;
    volkLoadDevice(o->device);
    return true;
}

static void free_device(own *o) {
    if (o->device) vkDestroyDevice(o->device, NULL);
    if (o->instance) vkDestroyInstance(o->instance, NULL);
}

static void lock(void *u) { (void)u; }

/* Open the Vulkan backend on `x` with the environment's other options. */
static vkl_status open_on(vkl_context *ctx, const vkl_vulkan_external *x, vkl_vulkan_math math,
                          vkl_backend_device **dev) {
    vkl_env_options e;
    *dev = NULL;
    vkl_status st = vkl_env_options_read(ctx, &e);
    if (st) return st;
    e.vulkan.validation = false; /* the app's instance: its layers are its own */
    e.vulkan.external = x;
    e.vulkan.math = math;
    return vkl_backend_find("vulkan")->open(ctx, &e.backend, dev);
}

int main(void) {
    vkl_context *ctx;
    CHECK(vkl_context_create(NULL, &ctx) == VKL_OK);
    const vkl_backend_vtable *vk = vkl_backend_find("vulkan");
    own plain = {0}, with16 = {0};
    if (!vk || !make_device(&plain, false)) {
        printf("test_vk_external: skipped: no Vulkan 1.2 device with a compute queue\n");
        free_device(&plain);
        vkl_context_destroy(ctx);
        return 77;
    }
    vkl_vulkan_external x = {.get_instance_proc_addr = vkGetInstanceProcAddr, .instance = plain.instance,
                             .api_version = VK_API_VERSION_1_2, .physical_device = plain.phys, .device = plain.device,
                             .queue_family = plain.family};
    vkl_backend_device *dev = NULL;

    vkl_vulkan_external bad = x;
    bad.device = VK_NULL_HANDLE;
    CHECK_ERR(ctx, open_on(ctx, &bad, VKL_VULKAN_MATH_DEFAULT, &dev), VKL_ERR_INVALID_ARGUMENT, "device");
    bad = x;
    bad.queue_lock = lock;
    CHECK_ERR(ctx, open_on(ctx, &bad, VKL_VULKAN_MATH_DEFAULT, &dev), VKL_ERR_INVALID_ARGUMENT, "queue_unlock");
    bad = x;
    bad.queue_family = 99;
    CHECK_ERR(ctx, open_on(ctx, &bad, VKL_VULKAN_MATH_DEFAULT, &dev), VKL_ERR_INVALID_ARGUMENT, "family 99");
    bad = x;
    bad.queue_index = plain.family_queues; /* one past the family's last queue */
    char want[32];
    snprintf(want, sizeof(want), "index %u", plain.family_queues);
    CHECK_ERR(ctx, open_on(ctx, &bad, VKL_VULKAN_MATH_DEFAULT, &dev), VKL_ERR_INVALID_ARGUMENT, want);
    bad = x;
    bad.api_version = VK_API_VERSION_1_0;
    CHECK_ERR(ctx, open_on(ctx, &bad, VKL_VULKAN_MATH_DEFAULT, &dev), VKL_ERR_UNSUPPORTED, "instance made for 1.0");

    /* no shaderFloat16 enabled by the app: none used, whatever the hardware */
    CHECK_ERR(ctx, open_on(ctx, &x, VKL_VULKAN_MATH_F16, &dev), VKL_ERR_UNSUPPORTED, "enabled by the app");
    CHECK_OK(ctx, open_on(ctx, &x, VKL_VULKAN_MATH_DEFAULT, &dev));
    if (dev) {
        vkl_backend_caps caps;
        vk->caps(dev, &caps);
        CHECKF(!(caps.features & VKL_FEATURE_FP16), "fp16 reported on a device made without shaderFloat16");
        CHECKF(strstr(caps.queue_priority, "app") != NULL, "priority '%s'", caps.queue_priority);
        vk->close(dev);
        dev = NULL;
    }
    /* still the app's device, usable after vkllm closed */
    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = 256,
                             .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT};
    VkBuffer buf = VK_NULL_HANDLE;
    CHECK(vkCreateBuffer(plain.device, &bi, NULL, &buf) == VK_SUCCESS);
    if (buf) vkDestroyBuffer(plain.device, buf, NULL);

    /* vkllm's own device chosen by UUID: this one's, then one nobody has */
    {
        VkPhysicalDeviceIDProperties id = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
        VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &id};
        vkGetPhysicalDeviceProperties2(plain.phys, &p2);
        vkl_env_options e;
        CHECK_OK(ctx, vkl_env_options_read(ctx, &e));
        e.vulkan.use_device_uuid = true;
        memcpy(e.vulkan.device_uuid, id.deviceUUID, VK_UUID_SIZE);
        CHECK_OK(ctx, vk->open(ctx, &e.backend, &dev));
        if (dev) {
            vkl_backend_caps caps;
            vk->caps(dev, &caps);
            CHECKF(!strcmp(caps.device_name, p2.properties.deviceName), "by UUID: '%s', want '%s'", caps.device_name,
                   p2.properties.deviceName);
            vk->close(dev);
            dev = NULL;
        }
        memset(e.vulkan.device_uuid, 0xA5, VK_UUID_SIZE);
        CHECK_ERR(ctx, vk->open(ctx, &e.backend, &dev), VKL_ERR_NOT_FOUND, "UUID");
    }

    /* shaderFloat16 enabled through the 1.2 feature chain: granted */
    vkl_env_options env;
    const bool f16_masked = !vkl_env_options_read(ctx, &env) && (env.backend.disable_features & VKL_FEATURE_FP16);
    if (f16_masked) printf("fp16 on an app's device: not checked (VKL_VK_DISABLE turns fp16 off)\n");
    else if (plain.has_f16 && make_device(&with16, true)) {
        VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                                .shaderFloat16 = VK_TRUE};
        VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f12};
        vkl_vulkan_external x16 = x;
        x16.instance = with16.instance;
        x16.physical_device = with16.phys;
        x16.device = with16.device;
        x16.enabled_features_chain = &f2;
        CHECK_OK(ctx, open_on(ctx, &x16, VKL_VULKAN_MATH_F16, &dev));
        if (dev) vk->close(dev);
    } else {
        printf("fp16 on an app's device: not checked (the device has no shaderFloat16)\n");
    }
    free_device(&with16);
    free_device(&plain);
    vkl_context_destroy(ctx);
    return check_finish("test_vk_external");
}
