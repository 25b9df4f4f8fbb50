/* The compiled-in backends, in preference order for "auto". The only file
 * that knows every backend's name. */
#include <string.h>

#include "../engine/backend.h"

extern const vkl_backend_vtable vkl_backend_ref;
extern const vkl_backend_vtable vkl_backend_cpu;
#ifdef VKL_HAVE_VULKAN
extern const vkl_backend_vtable vkl_backend_vulkan;
#endif

/* "auto" takes the first whose probe succeeds. Vulkan runs every op but
 * stays after ref until auto-choice can tell a real GPU from a software
 * rasterizer (lavapipe) and knows the driver quirks: it is asked for by name.
 * cpu (issue 13) is asked for by name too until it is made the default
 * where no GPU is. */
static const vkl_backend_vtable *const backends[] = {
    &vkl_backend_ref,
    &vkl_backend_cpu,
#ifdef VKL_HAVE_VULKAN
    &vkl_backend_vulkan,
#endif
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
