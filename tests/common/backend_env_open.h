/* Tests open backends as the tools do: with the VKL_VK_* environment mapped
 * onto the backend options (tools/backend_env.h; the library itself reads no
 * environment). ctest sets VKL_VK_VALIDATION=1; a test that sets a knob with
 * setenv() before opening exercises the same mapping a user's does. */
#ifndef VKL_TEST_BACKEND_ENV_OPEN_H
#define VKL_TEST_BACKEND_ENV_OPEN_H

#include <stdbool.h>

#include "backend_env.h"

static inline vkl_status test_open_env(vkl_context *ctx, const vkl_backend_vtable *be, uint32_t disable_features,
                                       bool profile, vkl_backend_device **out) {
    vkl_env_options e;
    *out = NULL;
    vkl_status st = vkl_env_options_read(ctx, &e);
    if (st) return st;
    e.backend.disable_features |= disable_features;
    e.backend.profile = profile;
    return be->open(ctx, &e.backend, out);
}

static inline vkl_status test_probe_env(vkl_context *ctx, const vkl_backend_vtable *be, vkl_backend_caps *out) {
    vkl_env_options e;
    vkl_status st = vkl_env_options_read(ctx, &e);
    return st ? st : be->probe(ctx, &e.backend, out);
}

#endif
