/* The Vulkan backend's internals, shared by the files of backends/vulkan/
 * only: the structs behind the vtable's opaque handles and what each file
 * offers the others. Tests and tools use vulkan_backend.h instead.
 *
 *   vk_device.c        volk, instance, validation messages, device choice, caps
 *   vk_buffer.c        memory types, buffers, staged upload/download, one-shot submits
 *   vk_pipeline.c      embedded SPIR-V -> shader modules, layouts, pipelines, cache
 *   vk_backend.c       the vtable: open/close, buffers, weights, prepare, execute, timing
 *   vk_weights.c       weights_load: every weight repacked into device memory
 *   vk_ops.c           op -> recorder table; node views for recorders
 *   vk_quant_matmul.c  QuantMatMul's recorder (matvec shaders)
 *   vk_dequant.c       GPU dequantization (the bit-exactness test's entry)
 *   vk_measure.c       device copy bandwidth (vkbench's roofline)
 *   vk_result.c        VkResult -> vkl_status with the call's name
 *
 * Device-level functions go through each device's own VolkDeviceTable, so
 * several devices can be open at once; instance-level ones through volk's
 * global pointers (loader trampolines, valid for every instance).
 *
 * Threads: sessions of one model share its device and call the vtable from
 * their own threads. Every vtable call holds the device's `lock` for its
 * whole length (but a wait on an executable's own fence) and sets dev->ctx to
 * its caller's context meanwhile, so the functions below, which use the
 * device's shared state and report to dev->ctx, need no locking of their
 * own. */
#ifndef VKL_VK_INTERNAL_H
#define VKL_VK_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <volk.h>

#include "../../engine/backend.h"
#include "../../engine/context.h"
#include "../../engine/quant/quant.h"

#define VKL_VK_MAX_BINDINGS 8         /* storage buffers per dispatch */
#define VKL_VK_PUSH_BYTES 128         /* maxPushConstantsSize every device has */
#define VKL_VK_MAX_SPEC 8             /* specialization constants per pipeline */
#define VKL_VK_MAX_DISPATCHES 4       /* dispatches one node may record */
#define VKL_VK_WAIT_NS 120000000000ull /* a fence wait longer than this is a hang */

/* ---- status (vk_result.c) ----------------------------------------------------------------------- */

/* VK_SUCCESS -> VKL_OK; otherwise a failure naming the call and the result
 * (VK_ERROR_OUT_OF_*_MEMORY -> VKL_ERR_OUT_OF_MEMORY, else VKL_ERR_DEVICE). */
vkl_status vkl_vk_check(vkl_context *ctx, VkResult r, const char *call);
const char *vkl_vk_result_name(VkResult r);
/* Global/instance functions (volk's pointers) and device functions (the device's table):
 *   st = VKL_VKI(ctx, vkCreateInstance, (&info, NULL, &inst));
 *   st = VKL_VKD(dev, vkCreateBuffer, (dev->device, &info, NULL, &buf)); */
#define VKL_VKI(ctx, fn, args) vkl_vk_check((ctx), fn args, #fn)
#define VKL_VKD(dev, fn, args) vkl_vk_check((dev)->ctx, (dev)->vk.fn args, #fn)

/* ---- buffers (vk_buffer.c) ---------------------------------------------------------------------- */

typedef struct vkl_vk_buffer {
    VkBuffer buf;         /* VK_NULL_HANDLE: none */
    VkDeviceMemory mem;
    VkDeviceSize size;    /* bytes asked for (the VkBuffer may be larger) */
    void *mapped;         /* persistently mapped when host-visible, else NULL */
    bool coherent;
} vkl_vk_buffer;

struct vkl_backend_buffer {
    vkl_vk_buffer b;
    vkl_buffer_usage usage;
};

/* Validation messages of one instance (VKL_VK_VALIDATION=1): counted, the
 * first kept, each logged through open()'s context. Guarded by their own
 * lock: the layer may call back during a fence wait, outside the device's. */
typedef struct vkl_vk_messages {
    pthread_mutex_t lock;
    vkl_context *ctx;
    uint32_t count;       /* validation warnings and errors so far */
    uint32_t reported;    /* how many a status has already reported */
    char first[512];      /* the first unreported one */
} vkl_vk_messages;

/* A pipeline made on first use: (shader, specialization) -> VkPipeline. */
typedef struct vkl_vk_pipeline {
    const char *shader;   /* name in vkl_vk_spirv_table (static storage) */
    uint32_t spec[VKL_VK_MAX_SPEC], n_spec;
    uint32_t n_bindings;
    VkPipeline pipeline;
} vkl_vk_pipeline;

struct vkl_backend_device {
    /* The context of the vtable call in progress (its caller's, a session's:
     * set under `lock`), else open()'s. Everything reports to it. */
    vkl_context *ctx;
    /* open()'s context: what lives as long as the device (the device
     * itself, the pipeline list, the validation messages) is allocated
     * through it, whichever session's call makes it. */
    vkl_context *own_ctx;
    /* Held by every vtable call (vk_backend.c): the queue (vkQueueSubmit),
     * the command pool and the one-shot command buffer need external
     * synchronization, and the staging buffer and the pipeline list are
     * shared mutable state. One lock: calls are short (record, submit, copy)
     * and a session waits for its own fence without it. */
    pthread_mutex_t lock;
    bool lock_made;                 /* `lock` initialized (close destroys it) */
    /* external_device (an app's VkInstance/VkPhysicalDevice/VkDevice/queue
     * family and index, borrowed and never destroyed) goes here, with a flag
     * saying so; open() refuses it until it is implemented. */
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    vkl_vk_messages *msgs;          /* heap: the messenger keeps its address */
    VkPhysicalDevice phys;
    VkDevice device;
    struct VolkDeviceTable vk;      /* this device's entry points */
    VkQueue queue;
    uint32_t queue_family;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties memory;
    uint32_t timestamp_bits;        /* valid bits on our queue; 0: no timestamps */
    bool subgroup_arith;            /* compute shaders may use subgroupAdd */
    bool has_f16;                   /* shaderFloat16, before options mask VKL_FEATURE_FP16 */
    uint32_t subgroup_size;
    vkl_backend_caps caps;
    /* one-shot work (uploads, downloads, measurements), waited for at once */
    VkCommandPool pool;
    VkCommandBuffer once;
    VkFence once_fence;
    vkl_vk_buffer staging;          /* host-visible bounce buffer, grown on demand */
    /* pipelines */
    VkPipelineCache cache;
    char *cache_path;               /* VKL_VK_PIPELINE_CACHE: loaded at open, saved at close */
    VkDescriptorSetLayout set_layout[VKL_VK_MAX_BINDINGS + 1]; /* by binding count, made on demand */
    VkPipelineLayout pipe_layout[VKL_VK_MAX_BINDINGS + 1];
    vkl_vk_pipeline *pipelines;
    uint32_t n_pipelines, cap_pipelines;
    /* matvec tuning (specialization constants): workgroup size, output rows
     * per workgroup, activations staged through shared memory or not, K
     * steps per invocation per block, E0M4 codes built as f32 directly
     * (f32 math), 4-bit codes centered (w1 - b, q - z) before the fp16
     * products, else the fold (f16 math; quant_matvec_e0m4.comp) */
    uint32_t qmv_wg, qmv_rows, qmv_stage, qmv_unroll, qmv_e0m4_f32, qmv_f16_center;
    /* the matvecs' arithmetic: the _f16 shader variants (fp16 products and
     * sums within each 16-byte step) or f32; decided once, at open, by
     * vk_device.c's choose_math (shaderFloat16 is enabled iff true) */
    bool f16_math;
};

vkl_status vkl_vk_buffer_alloc(vkl_backend_device *dev, vkl_buffer_usage usage, size_t bytes, vkl_vk_buffer *out);
void vkl_vk_buffer_free(vkl_backend_device *dev, vkl_vk_buffer *b);
/* Blocking; through the staging buffer when b is not host-visible. */
vkl_status vkl_vk_buffer_upload(vkl_backend_device *dev, vkl_vk_buffer *b, size_t offset, const void *src,
                                size_t bytes);
vkl_status vkl_vk_buffer_download(vkl_backend_device *dev, vkl_vk_buffer *b, size_t offset, void *dst, size_t bytes);
/* One-shot command buffer: begin (after waiting for nothing: one-shot work
 * is always waited for), record, then end = submit + wait. */
vkl_status vkl_vk_once_begin(vkl_backend_device *dev, VkCommandBuffer *cmd);
vkl_status vkl_vk_once_end(vkl_backend_device *dev);
/* Every earlier shader/transfer/host write visible to every later
 * shader/transfer/host access: the conservative barrier between steps. */
void vkl_vk_barrier_all(vkl_backend_device *dev, VkCommandBuffer cmd);

/* ---- device (vk_device.c) ----------------------------------------------------------------------- */

/* Instance, physical device by options (index, or discrete > integrated >
 * virtual > cpu), logical device and queue; fills dev->caps. */
vkl_status vkl_vk_device_create(vkl_context *ctx, const vkl_backend_options *opt, vkl_backend_device *dev);
void vkl_vk_device_destroy(vkl_backend_device *dev);
vkl_status vkl_vk_probe(vkl_context *ctx, const vkl_backend_options *opt, vkl_backend_caps *out);
/* st, or, when st is VKL_OK and validation reported something new since the
 * last call, VKL_ERR_DEVICE naming `what` and the first new message. */
vkl_status vkl_vk_validation_status(vkl_backend_device *dev, vkl_status st, const char *what);
/* A vtable call's bracket: enter takes the device lock and makes ctx the
 * one everything reports to; leave restores open()'s, unlocks, returns st. */
void vkl_vk_enter(vkl_backend_device *dev, vkl_context *ctx);
vkl_status vkl_vk_leave(vkl_backend_device *dev, vkl_status st);

/* ---- pipelines (vk_pipeline.c) ------------------------------------------------------------------ */

vkl_status vkl_vk_pipelines_init(vkl_backend_device *dev);
void vkl_vk_pipelines_destroy(vkl_backend_device *dev);
/* The pipeline of `shader` (an embedded name) with n_bindings storage
 * buffers at bindings 0.., VKL_VK_PUSH_BYTES of push constants, and
 * specialization constants 0..n_spec-1; made on first use, then cached.
 * *out is valid until the next call (the cache may grow): keep its handle. */
vkl_status vkl_vk_pipeline_get(vkl_backend_device *dev, const char *shader, uint32_t n_bindings,
                               const uint32_t *spec, uint32_t n_spec, const vkl_vk_pipeline **out);
/* A descriptor pool with one set of n storage buffers, written: for one-shot
 * work (dequantize, measurements). The caller destroys *pool. */
vkl_status vkl_vk_set_once(vkl_backend_device *dev, uint32_t n, const VkDescriptorBufferInfo *bufs,
                           VkDescriptorPool *pool, VkDescriptorSet *set);
/* Bind pipe (n_bind storage buffers) and set, push constants, dispatch. */
void vkl_vk_cmd_dispatch(vkl_backend_device *dev, VkCommandBuffer cmd, VkPipeline pipe, uint32_t n_bind,
                         VkDescriptorSet set, const uint32_t *push, uint32_t n_push, const uint32_t groups[3]);

/* ---- weights (vk_weights.c) --------------------------------------------------------------------- */

/* One weight tensor on the device. Quantized: the GPU packed layout's two
 * planes (qs at 0, params at an offset aligned for a descriptor); plain:
 * its bytes unchanged. */
typedef struct vkl_vk_weight {
    vkl_vk_buffer buf;             /* buf.buf == VK_NULL_HANDLE: not loaded */
    vkl_quant_gpu_layout lay;      /* quantized dtypes only */
    VkDeviceSize qs_offset, qs_range;         /* plain weights: the data */
    VkDeviceSize params_offset, params_range; /* quantized only */
} vkl_vk_weight;

struct vkl_backend_weights {
    const vkl_graph *g;
    vkl_vk_weight *w;              /* per graph tensor */
    uint32_t n;
    uint64_t bytes;                /* device bytes held */
};

vkl_status vkl_vk_weights_load(vkl_backend_device *dev, const vkl_graph *g, vkl_backend_weights **out);
void vkl_vk_weights_release(vkl_backend_device *dev, vkl_backend_weights *w);
/* Packs canonical blocks into `w` (device memory) with engine/quant's GPU packer. */
vkl_status vkl_vk_weight_pack(vkl_backend_device *dev, vkl_dtype dtype, uint32_t group, int64_t rows, int64_t cols,
                              const void *canon, size_t canon_bytes, vkl_vk_weight *w);
void vkl_vk_weight_free(vkl_backend_device *dev, vkl_vk_weight *w);

/* ---- ops (vk_ops.c, one recorder per op file) --------------------------------------------------- */

/* A node's tensor as prepare binds it: concrete shape and device range. */
typedef struct vkl_vk_tensor {
    uint32_t id;                   /* graph tensor index; VKL_NONE: absent optional input */
    vkl_dtype dtype;
    uint32_t group;
    uint32_t rank;
    int64_t dims[VKL_MAX_RANK];
    int64_t count;
    size_t bytes;
    VkDescriptorBufferInfo at;     /* arena range, or a plain weight's data */
    const vkl_vk_weight *weight;   /* weights only */
} vkl_vk_tensor;

/* One compute dispatch as a recorder describes it. */
typedef struct vkl_vk_dispatch {
    const char *shader;
    uint32_t spec[VKL_VK_MAX_SPEC], n_spec;
    VkDescriptorBufferInfo bind[VKL_VK_MAX_BINDINGS];
    uint32_t n_bind;
    uint32_t push[VKL_VK_PUSH_BYTES / 4], n_push; /* words */
    uint32_t groups[3];
} vkl_vk_dispatch;

typedef struct vkl_vk_node {
    vkl_backend_device *dev;
    const vkl_graph *g;
    uint32_t index;                /* node index in g */
    const vkl_vk_tensor *in, *out;
    uint32_t n_in, n_out;
} vkl_vk_node;

/* Checks what the op needs (dtypes, shapes, limits: VKL_ERR_UNSUPPORTED
 * naming the node otherwise) and describes its dispatches, in order. */
typedef vkl_status (*vkl_vk_recorder)(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
/* NULL: the op has no Vulkan kernel yet. */
vkl_vk_recorder vkl_vk_recorder_for(uint32_t op);
vkl_status vkl_vk_record_quant_mat_mul(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
/* "vulkan: node 3 'name' (QuantMatMul): <why>" as VKL_ERR_UNSUPPORTED. */
vkl_status vkl_vk_node_unsupported(const vkl_vk_node *node, const char *fmt, ...) VKL_PRINTF(2, 3);

/* ---- measurement (vk_measure.c) ----------------------------------------------------------------- */

vkl_status vkl_vk_copy_bandwidth(vkl_backend_device *dev, size_t bytes, double *bytes_per_second);

#endif
