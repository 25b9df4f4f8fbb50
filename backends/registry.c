/* The compiled-in backends, in preference order for "auto". The only file
 * that knows every backend's name. */
#include <string.h>

#include "../engine/backend.h"
#ifdef VKL_HAVE_VULKAN
#include "vkllm_vulkan.h"
#endif

extern const vkl_backend_vtable vkl_backend_ref;
extern const vkl_backend_vtable vkl_backend_cpu;
#ifdef VKL_HAVE_VULKAN
extern const vkl_backend_vtable vkl_backend_vulkan;
#endif

/* Preference order for "auto" (engine/model.c): the first hardware GPU,
 * else the first backend written for the CPU — cpu, the fast one; ref, the
 * oracle, by name — and a GPU API on the CPU (lavapipe) only by name. */
static const vkl_backend_vtable *const backends[] = {
#ifdef VKL_HAVE_VULKAN
    &vkl_backend_vulkan,
#endif
    &vkl_backend_cpu,
    &vkl_backend_ref,
};

size_t vkl_backend_count(void) { return sizeof(backends) / sizeof(backends[0]); }

const vkl_backend_vtable *vkl_backend_at(size_t index) {
    return index < vkl_backend_count() ? backends[index] : NULL;
}

const vkl_backend_vtable *vkl_backend_find(const char *name) {
    for (size_t i = 0; i < vkl_backend_count(); i++)
        if (!strcmp(backends[i]->name, name)) return backends[i];
    return NULL;
}

bool vkl_vulkan_external_given(const struct vkl_vulkan_options *o) {
#ifdef VKL_HAVE_VULKAN
    return o && o->external;
#else
    (void)o;
    return false;
#endif
}
