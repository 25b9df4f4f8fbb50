/* The executor the host-memory backends share (ref, and cpu, which reuses
 * ref's kernels for every op it has no faster one for): host buffers,
 * executables that run one kernel per live node in topological order, the
 * state-traffic count and the NaN check. The functions have the vtable's
 * shapes, so a backend puts most of them into its vtable as they are; the
 * device argument is unused. */
#ifndef VKL_HOST_EXEC_H
#define VKL_HOST_EXEC_H

#include "../../engine/backend.h"
#include "ref_kernels.h"

/* The scratch bytes a backend's kernel will ask for (vkl_ref_scratch_get)
 * on a node with these operands, their shapes as prepared, data unread.
 * prepare sizes the executable's scratch for the largest of them and its
 * own rule (a few doubles per element of the longest dimension, which ref's
 * kernels stay within), so executing never allocates. */
typedef size_t (*vkl_host_scratch_fn)(const vkl_ref_args *a);

/* What a backend runs: table[op] where the table has an entry, ref's kernel
 * otherwise. `user` reaches the kernels as vkl_ref_args.backend (ref: NULL);
 * `name` prefixes the executor's messages. */
typedef struct vkl_host_kernels {
    const char *name;
    const vkl_ref_kernel *table;        /* VKL_OP_COUNT_ entries, or NULL: all ref's */
    const vkl_host_scratch_fn *scratch; /* VKL_OP_COUNT_ entries beside table's, or NULL: the rule above */
    void *user;
    /* Time each live node of every execute by the host clock, for
     * vkl_host_node_times (vkl_backend_options.profile); off, no clock is
     * read. */
    bool profile;
} vkl_host_kernels;

vkl_status vkl_host_buffer_create(vkl_backend_device *dev, vkl_context *ctx, vkl_buffer_usage usage, size_t bytes,
                                  vkl_backend_buffer **out);
void vkl_host_buffer_destroy(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_buffer *b);
vkl_status vkl_host_buffer_write(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_buffer *b, size_t offset,
                                 const void *src, size_t bytes);
vkl_status vkl_host_buffer_read(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_buffer *b, size_t offset,
                                void *dst, size_t bytes);
/* A buffer's first byte (64-byte aligned). */
unsigned char *vkl_host_buffer_data(const vkl_backend_buffer *b);

/* The vtable's prepare, with the kernels to run; kernels is copied. */
vkl_status vkl_host_prepare(vkl_backend_device *dev, vkl_context *ctx, const vkl_graph *g,
                            const vkl_host_kernels *kernels, const vkl_memory_map *mem, const vkl_binding *b,
                            vkl_backend_exec **out);
void vkl_host_exec_release(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_exec *e);
vkl_status vkl_host_execute(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_exec *e, const vkl_binding *actual);
vkl_status vkl_host_execute_checked(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_exec *e,
                                    const vkl_binding *actual, vkl_nonfinite *first);
vkl_status vkl_host_wait(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_exec *e);
vkl_status vkl_host_state_traffic(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_exec *e,
                                  vkl_state_traffic *out);
/* The vtable's node_times: milliseconds per live node of the last execute
 * that completed, wall time on the calling thread (a kernel that splits
 * over a pool returns when its threads are done); a node that was a view of
 * its input's bytes, 0. VKL_ERR_UNSUPPORTED unless prepared with profile,
 * VKL_ERR_STATE before an execute completed. */
vkl_status vkl_host_node_times(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_exec *e, double *ms, size_t cap,
                               size_t *count);

/* The vtable entries every host backend takes from here as they are. */
#define VKL_HOST_EXEC_VTABLE_ENTRIES                                                                   \
    .buffer_create = vkl_host_buffer_create, .buffer_destroy = vkl_host_buffer_destroy,              \
    .buffer_write = vkl_host_buffer_write, .buffer_read = vkl_host_buffer_read,                      \
    .exec_release = vkl_host_exec_release, .execute = vkl_host_execute, .wait = vkl_host_wait,       \
    .execute_checked = vkl_host_execute_checked, .state_traffic = vkl_host_state_traffic

#endif
