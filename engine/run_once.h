/* One-shot execution of a graph on a backend, without a session: every
 * tensor gets its own memory (no reuse), the arena is poisoned first. For
 * op tests, `vkllm check` and tools; sessions (engine/session) plan memory. */
#ifndef VKL_RUN_ONCE_H
#define VKL_RUN_ONCE_H

#include "backend.h"

typedef struct vkl_host_tensor {
    vkl_dtype dtype;
    uint32_t rank;
    int64_t dims[VKL_MAX_RANK];
    void *data;    /* inputs: caller's bytes; outputs: allocated by vkl_run_once (vkl_free) */
    size_t nbytes;
} vkl_host_tensor;

/* Symbol values from the concrete dims of the graph inputs (in graph input
 * order): a dim that is a bare symbol binds it; every other dim must then
 * evaluate to the given size. values[] has vkl_symtab_symbol_count entries;
 * symbols no input mentions stay VKL_SYM_UNBOUND. */
vkl_status vkl_bind_from_inputs(const vkl_graph *g, const vkl_host_tensor *inputs, int64_t *values, size_t count);

/* Every graph output read back after an execute: dtype, dims under
 * `values`, freshly allocated data (vkl_free) from the arena at its offset,
 * or a copy of the bytes of an output that is a weight. On failure none
 * stays allocated. Shared by vkl_run_once and engine/runner. */
vkl_status vkl_read_outputs(vkl_context *ctx, const vkl_backend_vtable *be, vkl_backend_device *dev,
                            const vkl_memory_map *mem, const vkl_graph *g, const int64_t *values, size_t count,
                            vkl_host_tensor *outputs);

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
