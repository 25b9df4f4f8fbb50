/* The ref backend's vtable: the shared host executor (host_exec.c) with
 * ref's own kernels only, weights read in place. Synchronous; it is the
 * oracle every other backend is compared with. */
#include <stdio.h>
#include <string.h>

#include "host_exec.h"

struct vkl_backend_device {
    vkl_context *ctx; /* open()'s: the weights' */
};

struct vkl_backend_weights {
    const vkl_graph *g;
};

static vkl_status ref_probe(vkl_context *ctx, const vkl_backend_options *opt, vkl_backend_caps *out) {
    (void)ctx;
    memset(out, 0, sizeof(*out));
    snprintf(out->device_name, sizeof(out->device_name), "portable C reference (fp32)");
    snprintf(out->driver, sizeof(out->driver), "vkllm ref");
    out->features = VKL_FEATURE_FP16 & ~(opt ? opt->disable_features : 0u);
    out->unified_memory = true;
    out->buffer_alignment = 64;
    out->device_class = VKL_DEVICE_CPU;
    return VKL_OK;
}

static void ref_caps(vkl_backend_device *dev, vkl_backend_caps *out) { ref_probe(dev->ctx, NULL, out); }

static vkl_status ref_open(vkl_context *ctx, const vkl_backend_options *opt, vkl_backend_device **out) {
    (void)opt;
    *out = NULL;
    vkl_backend_device *dev = vkl_calloc(ctx, 1, sizeof(*dev));
    if (!dev) return VKL_ERR_OUT_OF_MEMORY;
    dev->ctx = ctx;
    *out = dev;
    return VKL_OK;
}

static void ref_close(vkl_backend_device *dev) {
    if (dev) vkl_free(dev->ctx, dev);
}

static vkl_status ref_weights_load(vkl_backend_device *dev, const vkl_graph *g, vkl_backend_weights **out) {
    /* The reference reads the canonical bytes in place: nothing to repack. */
    *out = vkl_calloc(dev->ctx, 1, sizeof(**out));
    if (!*out) return VKL_ERR_OUT_OF_MEMORY;
    (*out)->g = g;
    return VKL_OK;
}

static void ref_weights_release(vkl_backend_device *dev, vkl_backend_weights *w) {
    vkl_free(dev->ctx, w);
}

static vkl_status ref_prepare(vkl_backend_device *dev, vkl_context *ctx, const vkl_graph *g, vkl_backend_weights *w,
                              const vkl_memory_map *mem, const vkl_binding *b, vkl_backend_exec **out) {
    (void)w;
    const vkl_host_kernels kernels = {"ref", NULL, NULL, NULL};
    return vkl_host_prepare(dev, ctx, g, &kernels, mem, b, out);
}

const vkl_backend_vtable vkl_backend_ref = {
    .name = "ref",
    .probe = ref_probe,
    .open = ref_open,
    .close = ref_close,
    .caps = ref_caps,
    .weights_load = ref_weights_load,
    .weights_release = ref_weights_release,
    .prepare = ref_prepare,
    VKL_HOST_EXEC_VTABLE_ENTRIES,
};
