/* vkl_run_once: one step of a check runner. */
#include "run_once.h"

vkl_status vkl_run_once(vkl_context *ctx, const vkl_backend_vtable *be, const vkl_graph *g,
                        const vkl_host_tensor *inputs, vkl_host_tensor *outputs) {
    vkl_backend_device *dev;
    vkl_status st = be->open(ctx, NULL, &dev);
    if (st) return st;
    st = vkl_run_once_on(ctx, be, dev, g, inputs, outputs);
    be->close(dev);
    return st;
}

vkl_status vkl_run_once_on(vkl_context *ctx, const vkl_backend_vtable *be, vkl_backend_device *dev,
                           const vkl_graph *g, const vkl_host_tensor *inputs, vkl_host_tensor *outputs) {
    for (uint32_t k = 0; k < g->n_outputs; k++) outputs[k].data = NULL;
    vkl_runner *r;
    vkl_status st = vkl_runner_create_on(ctx, be, dev, g, 0, &r);
    if (!st) st = vkl_runner_step(r, inputs, NULL, 0, outputs);
    vkl_runner_destroy(r);
    return st;
}
