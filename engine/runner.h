/* Multi-step execution with persistent state: the KV cache (state tensors,
 * sequence dimension first) keeps fixed offsets across steps, sized for a
 * maximum context; every other tensor gets fresh memory per step (no reuse
 * yet). Used by `vkllm check` to run prefill then decode steps. */
#ifndef VKL_RUNNER_H
#define VKL_RUNNER_H

#include "run_once.h"

typedef struct vkl_runner vkl_runner;

typedef struct vkl_sym_value {
    const char *name; /* a symbol of the graph */
    int64_t value;
} vkl_sym_value;

/* max_context: rows reserved along dim 0 of every state tensor; opt: the
 * backend's options (NULL: defaults). */
vkl_status vkl_runner_create(vkl_context *ctx, const vkl_backend_vtable *be, const vkl_backend_options *opt,
                             const vkl_graph *g, int64_t max_context, vkl_runner **out);
void vkl_runner_destroy(vkl_runner *r);

/* One step: inputs in graph input order; symbols the inputs do not bind
 * (e.g. `past` once the KV cache is internal) come from `extra`. Outputs
 * as in vkl_run_once (allocated; the caller frees data with vkl_free). */
vkl_status vkl_runner_step(vkl_runner *r, const vkl_host_tensor *inputs, const vkl_sym_value *extra, size_t n_extra,
                           vkl_host_tensor *outputs);

/* Copy rows [0, rows) of state tensor `tensor` (dim 0 = sequence) to dst,
 * which holds rows * row_bytes bytes; row_bytes from the last step's shapes. */
vkl_status vkl_runner_read_state(vkl_runner *r, uint32_t tensor, int64_t rows, void *dst, size_t cap,
                                 size_t *row_bytes);

#endif
