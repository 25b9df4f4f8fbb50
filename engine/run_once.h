/* One-shot execution of a graph on a backend, without a session: the check
 * runner (engine/runner.h: no memory reuse, poisoned arena) for one step.
 * For op tests, constant folding and tools. */
#ifndef VKL_RUN_ONCE_H
#define VKL_RUN_ONCE_H

#include "runner.h"

/* Run g once. inputs: one per graph input, in order; outputs: one per graph
 * output, filled in (dtype, dims, freshly allocated data). State tensors
 * start zeroed. On failure no output is allocated. */
vkl_status vkl_run_once(vkl_context *ctx, const vkl_backend_vtable *be, const vkl_graph *g,
                        const vkl_host_tensor *inputs, vkl_host_tensor *outputs);
/* The same on a device the caller opened (and closes): many small graphs on
 * one device, as the op-case runner does, without an open per graph. */
vkl_status vkl_run_once_on(vkl_context *ctx, const vkl_backend_vtable *be, vkl_backend_device *dev,
                           const vkl_graph *g, const vkl_host_tensor *inputs, vkl_host_tensor *outputs);

#endif
