/* The SPIR-V modules embedded at build time: cmake/shaders.cmake compiles
 * each shaders/vulkan/<name>.comp (and its variants) with glslc and
 * cmake/embed_spirv.cmake writes the table, sorted by name. A variant
 * "<shader>_<suffix>" is the same source compiled with extra defines. */
#ifndef VKL_VK_SHADERS_H
#define VKL_VK_SHADERS_H

#include <stddef.h>
#include <stdint.h>

typedef struct vkl_vk_spirv {
    const char *name;     /* file name without .comp, plus _<suffix> for a variant */
    const uint32_t *words;
    size_t n_words;
} vkl_vk_spirv;

extern const vkl_vk_spirv vkl_vk_spirv_table[];
extern const size_t vkl_vk_spirv_count;

#endif
