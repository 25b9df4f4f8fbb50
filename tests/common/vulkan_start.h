/* The start every Vulkan test program shares (tests/vulkan). Needs
 * setenv: define _POSIX_C_SOURCE before any include. */
#ifndef VKL_TEST_VULKAN_START_H
#define VKL_TEST_VULKAN_START_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_env_open.h"

/* Validation-layer messages seen through the context's logger (set
 * `log = test_vulkan_log` in the context options): any one fails a Vulkan
 * test. Warnings and errors are printed as they come. */
static int validation_messages;

static inline void test_vulkan_log(void *user, vkl_log_level level, const char *message) {
    (void)user;
    if (strstr(message, "vulkan validation")) validation_messages++;
    if (level <= VKL_LOG_WARN) fprintf(stderr, "log: %s\n", message);
}

/* A Vulkan test's start: validation on unless the environment says
 * otherwise, then the backend opened (dev non-NULL) or probed (into caps) as
 * the tools would. VKL_ERR_NOT_FOUND (no backend, no driver or device) is
 * said as "NAME: skipped: why" for the caller to exit 77 (ctest's skip);
 * any other status is the open's or probe's. */
static inline vkl_status test_vulkan_start(vkl_context *ctx, const char *name, const vkl_backend_vtable **vk,
                                           vkl_backend_device **dev, vkl_backend_caps *caps) {
    setenv("VKL_VK_VALIDATION", "1", 0);
    *vk = vkl_backend_find("vulkan");
    vkl_status st = !*vk ? VKL_ERR_NOT_FOUND
                  : dev  ? test_open_env(ctx, *vk, 0, false, dev)
                         : test_probe_env(ctx, *vk, caps);
    if (st == VKL_ERR_NOT_FOUND)
        printf("%s: skipped: %s\n", name, *vk ? vkl_context_error(ctx) : "no vulkan backend in this build");
    return st;
}

/* A Vulkan test's main up to its first case: a context logging through
 * test_vulkan_log, then test_vulkan_start (its status in *st). Returns the
 * exit code when the test ends here: 77 with no Vulkan (why is said;
 * nothing stays open), 2 when no context could be made; else -1 with *ctx
 * open. */
static inline int test_vulkan_main_start(const char *name, vkl_context **ctx, const vkl_backend_vtable **vk,
                                         vkl_backend_device **dev, vkl_backend_caps *caps, vkl_status *st) {
    vkl_context_options o;
    vkl_context_options_init(&o);
    o.log = test_vulkan_log;
    if (vkl_context_create(&o, ctx)) return 2;
    *st = test_vulkan_start(*ctx, name, vk, dev, caps);
    if (*st == VKL_ERR_NOT_FOUND) {
        vkl_context_destroy(*ctx);
        return 77;
    }
    return -1;
}

#endif
