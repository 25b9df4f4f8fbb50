/* The engine's one way to drive a backend, as sqlite's os.c wraps every VFS
 * call: sessions (engine/session.c) and the check runner (engine/runner.c,
 * which one-shot runs use too) lay memory out with the planner
 * (engine/plan.h) and make, fill, run and read it through these functions,
 * so a backend sees one call sequence, with one set of checks, from every
 * caller. */
#ifndef VKL_EXECUTOR_H
#define VKL_EXECUTOR_H

#include "backend.h"
#include "plan.h"

typedef struct vkl_host_tensor {
    vkl_dtype dtype;
    uint32_t rank;
    int64_t dims[VKL_MAX_RANK];
    void *data;    /* inputs: caller's bytes; outputs: allocated by vkl_read_outputs (vkl_free) */
    size_t nbytes;
} vkl_host_tensor;

/* Bytes [from, to) of buf set to `byte`, through a bounded host buffer. */
vkl_status vkl_buffer_fill(vkl_context *ctx, const vkl_backend_vtable *be, vkl_backend_device *dev,
                           vkl_backend_buffer *buf, size_t from, size_t to, unsigned char byte);

/* A device arena of `bytes` for a layout whose states end at states_end:
 * the states zeroed (the KV cache starts empty, and its masked rows are
 * still read: an int8 key row needs a finite scale, and 0 x NaN is NaN);
 * the rest poisoned when `poison` (vkl_arena_poison). */
vkl_status vkl_arena_create(vkl_context *ctx, const vkl_backend_vtable *be, vkl_backend_device *dev, size_t bytes,
                            size_t states_end, bool poison, vkl_backend_buffer **out);

/* Bytes [from, to) set to 0xFF: NaN in every float type and -1 in ints, so
 * an output a kernel forgets to write cannot pass a comparison, and a
 * kernel that reads bytes it does not own reads garbage, not a neighbour's
 * plausible values. */
static inline vkl_status vkl_arena_poison(vkl_context *ctx, const vkl_backend_vtable *be, vkl_backend_device *dev,
                                         vkl_backend_buffer *arena, size_t from, size_t to) {
    return vkl_buffer_fill(ctx, be, dev, arena, from, to, 0xFF);
}

/* Symbol values from the concrete dims of the graph inputs (in graph input
 * order): a dim that is a bare symbol binds it; every other dim must then
 * evaluate to the given size. values[] has vkl_symtab_symbol_count entries;
 * symbols no input mentions stay VKL_SYM_UNBOUND. */
vkl_status vkl_bind_from_inputs(const vkl_graph *g, const vkl_host_tensor *inputs, int64_t *values, size_t count);

/* The host tensors (graph input order) written to the arena at their
 * offsets, each checked against the graph's dtype and its bytes under
 * `values`; the first that differs is named. */
vkl_status vkl_write_inputs(vkl_context *ctx, const vkl_backend_vtable *be, vkl_backend_device *dev,
                            const vkl_memory_map *mem, const vkl_graph *g, const int64_t *values, size_t count,
                            const vkl_host_tensor *inputs);

/* One run of a prepared executable, waited for: execute, or execute_checked
 * when `first` is given (the first node whose output held NaN or infinity;
 * a backend without it cannot check and says so). */
vkl_status vkl_exec_run(vkl_context *ctx, const vkl_backend_vtable *be, vkl_backend_device *dev,
                        vkl_backend_exec *exec, const vkl_binding *b, vkl_nonfinite *first);

/* Every graph output read back after a run: dtype, dims under `values`,
 * freshly allocated data (vkl_free) from the arena at its offset, or a copy
 * of the bytes of an output that is a weight. On failure none stays
 * allocated. */
vkl_status vkl_read_outputs(vkl_context *ctx, const vkl_backend_vtable *be, vkl_backend_device *dev,
                            const vkl_memory_map *mem, const vkl_graph *g, const int64_t *values, size_t count,
                            vkl_host_tensor *outputs);

#endif
