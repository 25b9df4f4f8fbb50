/* vkl_vulkan_options' defaults (vkllm_vulkan.h): zero except where zero
 * would mean something else (device index 0, tuning switches off). */
#include <string.h>

#include "vk_internal.h"

void vkl_vulkan_options_init(vkl_vulkan_options *o) {
    if (!o) return;
    memset(o, 0, sizeof(*o));
    o->device_index = -1;
    o->priority = VKL_VULKAN_PRIORITY_LOW;
    o->matvec_stage = -1;
    o->matvec_e0m4_f32 = -1;
    o->matvec_f16_center = -1;
    o->attention_fold = -1;
    o->attention_wg_fold = -1;
    o->attention_wg_preload = -1;
    o->matvec_dot_residual = -1;
}
