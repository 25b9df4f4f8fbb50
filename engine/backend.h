/* The backend contract. Every backend (ref, vulkan, opencl, cpu, npu)
 * implements this vtable; the engine sees backends only through it. It is
 * shaped for the GPU backends: weights repacked once at load, executables
 * prepared once per bound shape and replayed, asynchronous execution.
 *
 * Call order: probe* -> open -> weights_load -> (buffer_create, prepare)* ->
 * (buffer_write, execute, wait, buffer_read)* -> release everything -> close.
 *
 * Threads (what sessions of one model rely on, docs/runtime.md):
 *  - open, weights_load, weights_release and close are the device's own:
 *    they run alone (no other call on the device at the same time) and
 *    report through the context given to open() (probe: its own argument).
 *  - caps reports nothing and only copies what open() found: any thread,
 *    any time between open and close.
 *  - Every other function takes the context to report failures to and to
 *    allocate host memory through (its caller's: a session's). Calls on
 *    different buffers and executables may run on different threads at the
 *    same time; the backend guards whatever the device shares between them
 *    (a queue, staging memory, a pipeline cache). Calls on one buffer or one
 *    executable come from one thread at a time, and an object is released
 *    with a context of the allocator it was made with. */
#ifndef VKL_BACKEND_H
#define VKL_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph.h"

typedef struct vkl_backend_device vkl_backend_device;   /* backend-defined */
typedef struct vkl_backend_buffer vkl_backend_buffer;   /* backend-defined */
typedef struct vkl_backend_weights vkl_backend_weights; /* backend-defined */
typedef struct vkl_backend_exec vkl_backend_exec;       /* backend-defined */

/* Optional features (VKL_FEATURE_*, public: vkllm.h): a backend reports
 * what it has; options mask them off. */

/* How "auto" tells devices apart (engine/model.c's choice). */
typedef enum vkl_device_class {
    VKL_DEVICE_CPU = 0,      /* a backend written for the CPU (ref, cpu) */
    VKL_DEVICE_GPU,          /* a hardware GPU (discrete, integrated or virtual) */
    VKL_DEVICE_EMULATED      /* a GPU API run on the CPU (lavapipe, PoCL): for tests, never chosen by "auto" */
} vkl_device_class;

/* CPU instruction sets (VKL_ISA_*): public, vkllm.h. */

typedef struct vkl_backend_caps {
    char device_name[128];
    char driver[128];
    uint32_t features;          /* VKL_FEATURE_* present after masking */
    /* Why features are missing (vkbench --probe): those the device has that
     * the options or the backend's kill switches turned off, those a driver
     * quirk turned off, and the quirks that matched ("name (what off); ...",
     * "" for none). */
    uint32_t features_disabled;
    uint32_t features_quirked;
    char quirks[256];
    uint64_t device_memory;     /* bytes usable for buffers, 0 if unknown */
    bool unified_memory;        /* host and device share memory (phones, CPU) */
    size_t buffer_alignment;    /* required offset alignment inside a buffer */
    vkl_device_class device_class;
    char queue_priority[64];    /* the queue's global priority as granted, in words ("" where none applies) */
} vkl_backend_caps;

static inline size_t vkl_arena_alignment(const vkl_backend_caps *caps) {
    return caps && caps->buffer_alignment > VKL_ARENA_ALIGN ? caps->buffer_alignment : VKL_ARENA_ALIGN;
}

typedef struct vkl_backend_options {
    uint32_t disable_features;  /* VKL_FEATURE_* to turn off */
    /* The Vulkan backend's options (vkllm_vulkan.h: the app's device, device
     * choice, priority, kill switches, tuning); NULL: its defaults. Other
     * backends ignore it. */
    const struct vkl_vulkan_options *vulkan;
    /* Record per-node timestamps in executables (node_times answers);
     * off, executables carry no timing work at all. */
    bool profile;
    /* Host backends (cpu): worker threads, the calling thread included, made
     * once at open (0: one per online CPU), and VKL_ISA_* to turn off. */
    unsigned threads;
    uint32_t disable_isa;
    /* Host backends: threads' shares of a matrix product kept equal instead
     * of sized by each one's measured speed; and an emulated slow core,
     * thread slow_worker (0: the caller) slow_factor times slower (0: off;
     * engine/pool.h's vkl_pool_options, docs/cpu.md "Threads"). */
    bool equal_shares;
    unsigned slow_worker;
    double slow_factor;
} vkl_backend_options;

typedef enum vkl_buffer_usage {
    VKL_BUFFER_DEVICE = 0,      /* device-local working memory (the arena) */
    VKL_BUFFER_UPLOAD = 1,      /* host-visible, written by the host */
    VKL_BUFFER_READBACK = 2     /* host-visible, read by the host */
} vkl_buffer_usage;

/* Where every non-weight tensor lives for one prepared executable: tensor i at
 * byte offsets[i] of `arena` (VKL_NO_OFFSET for weights and tensors of dead
 * nodes). The planner makes this; states (KV cache) have offsets that stay
 * fixed for the session. */
#define VKL_NO_OFFSET SIZE_MAX

/* A copy an executable makes itself between a host-visible buffer
 * (VKL_BUFFER_UPLOAD / VKL_BUFFER_READBACK) and a tensor in the arena, so a
 * step's host work is writing and reading those buffers (a memcpy) around
 * one execute and one wait, with no staged transfer of its own. */
typedef struct vkl_io_copy {
    vkl_backend_buffer *buffer;
    size_t buffer_offset;
    uint32_t tensor;       /* a graph tensor with an arena offset */
    size_t tensor_offset;  /* bytes into the tensor */
    size_t bytes;
} vkl_io_copy;

typedef struct vkl_memory_map {
    vkl_backend_buffer *arena;
    const size_t *offsets; /* n_tensors entries */
    size_t n_offsets;
    /* Optional: made before the first kernel of every execute (uploads:
     * buffer -> tensor) and after the last (downloads: tensor -> buffer).
     * prepare copies these arrays; the buffers must outlive the executable. */
    const vkl_io_copy *uploads;
    size_t n_uploads;
    const vkl_io_copy *downloads;
    size_t n_downloads;
} vkl_memory_map;

/* Symbol values. For prepare: the (padded) values the executable is built
 * for; shapes, dispatch sizes and everything recorded follow them. For
 * execute: the same values — an executable replays exactly the shape it was
 * prepared for, with no host work beyond the submit. What changes between
 * replays of one padded shape (the true length, the KV write position)
 * travels as graph *inputs* the session writes before each execute: the
 * attention mask marks padded keys, position_ids give the KV rows
 * (docs/runtime.md, "Executables and padding"). Kernels read those from
 * memory, so nothing recorded (push constants included) depends on them. */
typedef struct vkl_binding {
    const int64_t *values; /* indexed like the graph's symbol table */
    size_t count;
} vkl_binding;

/* Bytes one execute moved to and from state tensors (the KV cache), as the
 * kernels touched them: `written` by in-place appends (KvAppend's new rows),
 * `read` by the ops meant to consume a state (Attention's K/V), `copied` by
 * anything else that read a state (a Concat, Transpose, Cast ... of the
 * cache): the traffic an in-place cache exists to remove. */
typedef struct vkl_state_traffic {
    uint64_t written, read, copied;
} vkl_state_traffic;

/* Where NaN or infinity first appeared during one checked execute: the
 * first node, in the executable's execution order, one of whose
 * floating-point outputs held a non-finite element after it ran. */
typedef struct vkl_nonfinite {
    bool found;
    uint32_t node;   /* graph node index */
    uint32_t output; /* which of its outputs */
    int64_t element; /* row-major index of the first non-finite element */
    double value;    /* NaN, +inf or -inf */
} vkl_nonfinite;

/* Arithmetic peaks in FLOP/s (a fused multiply-add counts 2); 0 where not
 * measured, with the reason in the matching *_why. */
typedef struct vkl_compute_peaks {
    double f32;          /* f32 fused multiply-adds */
    double f16;          /* fp16 fused multiply-adds */
    double coopmat;      /* fp16 x fp16 -> f32 matrix units (cooperative matrix) */
    char f16_why[96], coopmat_why[96];
    char coopmat_shape[32]; /* "16x16x16" where measured */
} vkl_compute_peaks;

typedef struct vkl_backend_vtable {
    const char *name; /* "ref", "vulkan", ... */

    /* Describe the device without keeping it open. */
    vkl_status (*probe)(vkl_context *ctx, const vkl_backend_options *opt, vkl_backend_caps *out);
    vkl_status (*open)(vkl_context *ctx, const vkl_backend_options *opt, vkl_backend_device **out);
    void (*close)(vkl_backend_device *dev);
    /* What the open device is and can do, after options masked it. */
    void (*caps)(vkl_backend_device *dev, vkl_backend_caps *out);

    vkl_status (*buffer_create)(vkl_backend_device *dev, vkl_context *ctx, vkl_buffer_usage usage, size_t bytes,
                                vkl_backend_buffer **out);
    void (*buffer_destroy)(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_buffer *buf);
    /* Blocking copies between host memory and a buffer (any usage). */
    vkl_status (*buffer_write)(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_buffer *buf, size_t offset,
                               const void *src, size_t bytes);
    vkl_status (*buffer_read)(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_buffer *buf, size_t offset,
                              void *dst, size_t bytes);

    /* Take the graph's weights once, repack them into the backend's layout and
     * keep them resident. The graph's weight bytes stay untouched (they may be
     * a read-only mmap). The graph must outlive the weights. */
    vkl_status (*weights_load)(vkl_backend_device *dev, const vkl_graph *g, vkl_backend_weights **out);
    void (*weights_release)(vkl_backend_device *dev, vkl_backend_weights *w);

    /* Build an executable for one binding: concrete shapes, kernels chosen,
     * (on GPUs) command buffers recorded with descriptors bound. `w` was
     * loaded from g or, for a graph derived from another (vkl_graph_derive:
     * the one-row graph), from its base (vkl_graph_weight_source), whose
     * weight tensors it shares index for index. Tensors with
     * a symbolic value and no producer (shape tensors left by the importer)
     * are evaluated here (vkl_tensor_value_bytes) and written to their place
     * in the arena at the start of every execute (ref: a memcpy; Vulkan: a
     * buffer update recorded first in the command buffer), since the
     * planner may let other tensors reuse those bytes between executes. */
    vkl_status (*prepare)(vkl_backend_device *dev, vkl_context *ctx, const vkl_graph *g, vkl_backend_weights *w,
                          const vkl_memory_map *mem, const vkl_binding *binding, vkl_backend_exec **out);
    void (*exec_release)(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_exec *exec);

    /* Submit; may return before the work is done. */
    vkl_status (*execute)(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_exec *exec,
                          const vkl_binding *actual);
    /* Block until the executable's last submission has completed. */
    vkl_status (*wait)(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_exec *exec);
    /* Optional (NULL when unsupported): execute as above, and after each node
     * check its floating-point outputs for NaN and infinity (a debugging aid:
     * sessions with check_finite). The first offender goes to *first (found =
     * false when none), valid once wait() returns. Every node still runs: an
     * infinity is not always a fault (an additive attention mask holds -inf),
     * so the caller decides from the outputs whether it matters. A GPU backend
     * can follow with a reduction after each dispatch into a small readback
     * buffer; the check must not change what the kernels compute. */
    vkl_status (*execute_checked)(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_exec *exec,
                                  const vkl_binding *actual, vkl_nonfinite *first);

    /* Optional (NULL when unsupported): milliseconds per live node of the last
     * execute, in the executable's node order; count = entries written. */
    vkl_status (*node_times)(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_exec *exec, double *ms,
                             size_t cap, size_t *count);
    /* Optional (NULL when unsupported): state traffic of the last execute. */
    vkl_status (*state_traffic)(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_exec *exec,
                                vkl_state_traffic *out);
    /* Optional (NULL when unsupported): the device memory's bandwidth as a
     * copy of `bytes` between two device buffers moves it, timed on the
     * device, in bytes read + written per second: the roofline against
     * which vkbench reports memory-bound kernels. */
    vkl_status (*copy_bandwidth)(vkl_backend_device *dev, vkl_context *ctx, size_t bytes, double *bytes_per_second);
    /* Optional (NULL when unsupported): the int8 multiply-add peak of the
     * instruction sequence the backend's GEMM uses, run on registers only on
     * all its threads, in ops per second (2 per multiply-add); *sequence
     * names the instructions (static text). The compute roof vkbench sets
     * a prefill against. */
    vkl_status (*int8_peak)(vkl_backend_device *dev, vkl_context *ctx, double *ops_per_second, const char **sequence);
    /* Optional (NULL when unsupported): a host backend's threads (0: the
     * calling thread), each one's int8 dot rate measured when the device
     * opened, in ops per second (2 per multiply-add), and its share of a
     * split matrix product now (the shares sum to 1). *count: the threads;
     * at most cap entries are written. */
    void (*worker_speeds)(vkl_backend_device *dev, double *ops_per_second, double *share, size_t cap,
                          size_t *count);
    /* Optional (NULL when unsupported): the device's arithmetic peaks as
     * register-only kernels reach them, timed on the device: the compute
     * roofline vkbench holds compute-bound kernels (prefill GEMMs) to. */
    vkl_status (*compute_peaks)(vkl_backend_device *dev, vkl_context *ctx, vkl_compute_peaks *out);
} vkl_backend_vtable;

/* backends/registry.c defines these: the compiled-in backends. */
size_t vkl_backend_count(void);
const vkl_backend_vtable *vkl_backend_at(size_t index);
const vkl_backend_vtable *vkl_backend_find(const char *name);
/* Whether options name an app's own Vulkan device (false without Vulkan). */
bool vkl_vulkan_external_given(const struct vkl_vulkan_options *options);

#endif
