/* The check runner: a graph run step by step on one device, memory laid out
 * by the planner with no reuse between tensors and poisoned (0xFF) before
 * every step, states (the KV cache, sequence dimension first) zeroed once
 * and kept at fixed offsets across steps. What `vkllm check`, the op-case
 * runner and one-shot runs (engine/run_once.h) use; sessions plan memory
 * with reuse and drive the backend through the same engine/executor.h. */
#ifndef VKL_RUNNER_H
#define VKL_RUNNER_H

#include "executor.h"

typedef struct vkl_runner vkl_runner;

typedef struct vkl_sym_value {
    const char *name; /* a symbol of the graph */
    int64_t value;
} vkl_sym_value;

/* Opens its own device. max_context: rows kept along dim 0 of every state
 * tensor; opt: the backend's options (NULL: defaults). Makes the graph's
 * plan, which interns expressions in its symbol table: no session may be
 * reading the graph meanwhile. */
vkl_status vkl_runner_create(vkl_context *ctx, const vkl_backend_vtable *be, const vkl_backend_options *opt,
                             const vkl_graph *g, int64_t max_context, vkl_runner **out);
/* The same on a device the caller opened and closes. state_rows 0: states
 * sized by each step's own binding (for a single step). */
vkl_status vkl_runner_create_on(vkl_context *ctx, const vkl_backend_vtable *be, vkl_backend_device *dev,
                                const vkl_graph *g, int64_t state_rows, vkl_runner **out);
void vkl_runner_destroy(vkl_runner *r);

/* One step: inputs in graph input order; symbols the inputs do not bind
 * (e.g. `past` once the KV cache is internal) come from `extra`. Outputs
 * as vkl_read_outputs gives them (allocated; the caller frees data with
 * vkl_free). On failure none is allocated. */
vkl_status vkl_runner_step(vkl_runner *r, const vkl_host_tensor *inputs, const vkl_sym_value *extra, size_t n_extra,
                           vkl_host_tensor *outputs);

/* Copy rows [0, rows) of state tensor `tensor` (dim 0 = sequence) to dst,
 * which holds rows * row_bytes bytes; row_bytes from the last step's shapes. */
vkl_status vkl_runner_read_state(vkl_runner *r, uint32_t tensor, int64_t rows, void *dst, size_t cap,
                                 size_t *row_bytes);

#endif
