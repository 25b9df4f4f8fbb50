/* VkResult -> vkl_status: every Vulkan call's result is checked, and a
 * failure's message names the call and the result. */
#include "vk_internal.h"

const char *vkl_vk_result_name(VkResult r) {
    switch (r) {
#define NAME(x) case x: return #x;
    NAME(VK_SUCCESS)
    NAME(VK_NOT_READY)
    NAME(VK_TIMEOUT)
    NAME(VK_EVENT_SET)
    NAME(VK_EVENT_RESET)
    NAME(VK_INCOMPLETE)
    NAME(VK_ERROR_OUT_OF_HOST_MEMORY)
    NAME(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    NAME(VK_ERROR_INITIALIZATION_FAILED)
    NAME(VK_ERROR_DEVICE_LOST)
    NAME(VK_ERROR_MEMORY_MAP_FAILED)
    NAME(VK_ERROR_LAYER_NOT_PRESENT)
    NAME(VK_ERROR_EXTENSION_NOT_PRESENT)
    NAME(VK_ERROR_FEATURE_NOT_PRESENT)
    NAME(VK_ERROR_INCOMPATIBLE_DRIVER)
    NAME(VK_ERROR_TOO_MANY_OBJECTS)
    NAME(VK_ERROR_FORMAT_NOT_SUPPORTED)
    NAME(VK_ERROR_FRAGMENTED_POOL)
    NAME(VK_ERROR_UNKNOWN)
    NAME(VK_ERROR_OUT_OF_POOL_MEMORY)
    NAME(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    NAME(VK_ERROR_FRAGMENTATION)
    NAME(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
    NAME(VK_PIPELINE_COMPILE_REQUIRED)
#undef NAME
    default: return "VkResult (unnamed)";
    }
}

vkl_status vkl_vk_check(vkl_context *ctx, VkResult r, const char *call) {
    if (r == VK_SUCCESS) return VKL_OK;
    vkl_status st = r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY ? VKL_ERR_OUT_OF_MEMORY
                                                                                            : VKL_ERR_DEVICE;
    return vkl_fail(ctx, st, "vulkan: %s failed: %s (%d)", call, vkl_vk_result_name(r), (int)r);
}
