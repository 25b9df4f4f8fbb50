/* The compiled-in backends, in preference order for "auto". The only file
 * that knows every backend's name. */
#include <string.h>

#include "../engine/backend.h"

extern const vkl_backend_vtable vkl_backend_ref;

static const vkl_backend_vtable *const backends[] = {
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
