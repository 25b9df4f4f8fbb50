/* The Vulkan backend's internals, shared by the files of backends/vulkan/
 * only: the structs behind the vtable's opaque handles and what each file
 * offers the others. Tests and tools use vulkan_backend.h instead.
 *
 *   vk_device.c        volk, instance, validation messages, device choice, caps
 *   vk_quirks.c        the driver-quirk table and its application to caps
 *   vk_buffer.c        memory types, buffers, staged upload/download, one-shot submits
 *   vk_pipeline.c      embedded SPIR-V -> shader modules, layouts, pipelines
 *   vk_pipeline_cache.c the pipeline cache's file: where, checked reading, atomic writing
 *   vk_backend.c       the vtable: open/close, buffers, weights, prepare, execute, timing
 *   vk_weights.c       weights_load: every weight repacked into device memory, in row pieces where a limit needs
 *   vk_limits.c        binding and allocation limits (and their testing knob), sub-range bindings, memory budget
 *   vk_ops.c           op -> recorder table; node views for recorders
 *   vk_quant_matmul.c  QuantMatMul's recorder (matvec for decode, GEMM for prefill)
 *   vk_gemm_tuning.c   the GEMM's kernel choice at open: coopmat shape, tiles, threshold
 *   vk_fuse.c          fusion at prepare: which QuantMatMul + Add / SiluMul, RoPE + KvAppend patterns run as one dispatch
 *   vk_copy.c          grids, strided-view and plain copies shared by the movement recorders
 *   vk_movement.c      Transpose, Expand, Tile, Slice, Trilu
 *   vk_reshape.c       Reshape, Squeeze, Unsqueeze, Flatten
 *   vk_concat.c        Concat, Split
 *   vk_indexing.c      Gather, GatherElements, GatherND, ScatterND
 *   vk_rope.c          RoPE's recorder
 *   vk_attention.c     Attention's recorder: flash attention (prefill), split-K decoding
 *   vk_kv_append.c     KvAppend's recorder (the in-place KV cache write)
 *   vk_rope_kv.c       the fused RoPE(K) + KvAppend(K) [+ KvAppend(V)] [+ RoPE(Q)] recorder
 *   vk_dequant.c       GPU dequantization (the bit-exactness test's entry)
 *   vk_measure.c       device copy bandwidth (vkbench's roofline)
 *   vk_peak.c          fp32 / fp16 / cooperative-matrix FMA peaks (vkbench's compute limits)
 *   vk_result.c        VkResult -> vkl_status with the call's name
 *
 * Device-level functions go through each device's own VolkDeviceTable and
 * instance-level ones through each device's vkl_vk_instance_table, both
 * loaded from the instance's vkGetInstanceProcAddr (the app's, on an app's
 * device), so several devices and instances can be in use at once and
 * nothing rests on process-global function pointers. volk supplies only the
 * loader's global entry points (vkCreateInstance, vkEnumerateInstance*) for
 * the instance vkllm makes itself.
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
#include "vkllm_vulkan.h"
#include "vulkan_backend.h"

#define VKL_VK_MAX_BINDINGS 13        /* storage buffers per dispatch (13: the fused Q/K/V matvec; 9 RoPE + KvAppend) */
#define VKL_VK_PUSH_BYTES 128         /* maxPushConstantsSize every device has */
#define VKL_VK_MAX_SPEC 12            /* specialization constants per pipeline */
#define VKL_VK_MAX_DISPATCHES 64      /* dispatches one node may record (pieces: one per piece and row group) */
#define VKL_VK_WAIT_NS 120000000000ull /* a fence wait longer than this is a hang */

/* ---- status (vk_result.c) ----------------------------------------------------------------------- */

/* VK_SUCCESS -> VKL_OK; otherwise a failure naming the call and the result
 * (VK_ERROR_OUT_OF_*_MEMORY -> VKL_ERR_OUT_OF_MEMORY, else VKL_ERR_DEVICE). */
vkl_status vkl_vk_check(vkl_context *ctx, VkResult r, const char *call);
const char *vkl_vk_result_name(VkResult r);
/* Global functions (volk's loader entry points), instance functions (the
 * device's instance table) and device functions (the device's table):
 *   st = VKL_VKG(ctx, vkCreateInstance, (&info, NULL, &inst));
 *   st = VKL_VKI(dev, vkEnumeratePhysicalDevices, (dev->instance, &n, NULL));
 *   st = VKL_VKD(dev, vkCreateBuffer, (dev->device, &info, NULL, &buf)); */
#define VKL_VKG(ctx, fn, args) vkl_vk_check((ctx), fn args, #fn)
#define VKL_VKI(dev, fn, args) vkl_vk_check((dev)->ctx, (dev)->vki.fn args, #fn)
#define VKL_VKD(dev, fn, args) vkl_vk_check((dev)->ctx, (dev)->vk.fn args, #fn)

/* The instance-level functions the backend calls, per instance. */
typedef struct vkl_vk_instance_table {
    PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr;
    PFN_vkDestroyInstance vkDestroyInstance;
    PFN_vkEnumeratePhysicalDevices vkEnumeratePhysicalDevices;
    PFN_vkGetPhysicalDeviceProperties vkGetPhysicalDeviceProperties;
    PFN_vkGetPhysicalDeviceProperties2 vkGetPhysicalDeviceProperties2;
    PFN_vkGetPhysicalDeviceFeatures2 vkGetPhysicalDeviceFeatures2;
    PFN_vkGetPhysicalDeviceMemoryProperties vkGetPhysicalDeviceMemoryProperties;
    PFN_vkGetPhysicalDeviceMemoryProperties2 vkGetPhysicalDeviceMemoryProperties2;
    PFN_vkGetPhysicalDeviceQueueFamilyProperties vkGetPhysicalDeviceQueueFamilyProperties;
    PFN_vkEnumerateDeviceExtensionProperties vkEnumerateDeviceExtensionProperties;
    PFN_vkCreateDevice vkCreateDevice;
    PFN_vkGetDeviceProcAddr vkGetDeviceProcAddr;
    PFN_vkCreateDebugUtilsMessengerEXT vkCreateDebugUtilsMessengerEXT;   /* with validation only */
    PFN_vkDestroyDebugUtilsMessengerEXT vkDestroyDebugUtilsMessengerEXT; /* with validation only */
} vkl_vk_instance_table;

/* ---- buffers (vk_buffer.c) ---------------------------------------------------------------------- */

typedef struct vkl_vk_buffer {
    VkBuffer buf;         /* VK_NULL_HANDLE: none */
    VkDeviceMemory mem;
    VkDeviceSize size;    /* bytes asked for (the VkBuffer may be larger) */
    void *mapped;         /* persistently mapped when host-visible, else NULL */
    bool coherent;
    VkDeviceSize device_local; /* bytes of a device-local heap it holds (dev->device_bytes) */
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
    /* The app's device (vkllm_vulkan.h), borrowed: instance, physical device,
     * device and queue are its, never destroyed or waited idle here; NULL:
     * vkllm made them. */
    const vkl_vulkan_external *external;
    /* The app's queue lock, when it shares the queue across threads. */
    void (*queue_lock)(void *user);
    void (*queue_unlock)(void *user);
    void *queue_lock_user;
    char priority[64];              /* the global priority granted, in words (caps.queue_priority) */
    VkInstance instance;
    uint32_t instance_version;      /* the apiVersion the instance was made with */
    vkl_vk_instance_table vki;
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
    bool profile;                   /* executables record per-node timestamps (options.profile) */
    bool subgroup_arith;            /* compute shaders may use subgroupAdd */
    bool has_f16;                   /* shaderFloat16, before options mask VKL_FEATURE_FP16 */
    bool has_dot_ext;               /* VK_KHR_shader_integer_dot_product listed (enabled with matvec_dot) */
    bool has_f64;                   /* shaderFloat64 enabled: the _f64 kernel variants may run */
    bool has_khr_priority, has_ext_priority; /* VK_KHR/EXT_global_priority (own device only) */
    uint32_t subgroup_size;
    bool subgroup_fixed;            /* every compute dispatch runs at subgroup_size (min = max, Vulkan 1.3) */
    vkl_backend_caps caps;
    /* one-shot work (uploads, downloads, measurements), waited for at once */
    VkCommandPool pool;
    VkCommandBuffer once;
    VkFence once_fence;
    vkl_vk_buffer staging;          /* host-visible bounce buffer, grown on demand */
    /* pipelines */
    VkPipelineCache cache;
    /* Where the cache file goes (vkl_vk_cache_path): NULL, the default
     * directory; "", no file; else that directory. Borrowed from
     * vkl_vulkan_options.pipeline_cache_dir: valid during open only. */
    const char *cache_dir_option;
    const char *cache_file_option;  /* pipeline_cache_file, the same way: a file named by the user */
    char *cache_path;               /* the file: loaded at open, saved at close; NULL: none */
    size_t cache_loaded;            /* driver bytes loaded from it */
    bool cache_rewrite;             /* it was absent, empty or bad: written at close whatever happens */
    double pipeline_seconds;        /* spent in vkCreateComputePipelines since open */
    VkDescriptorSetLayout set_layout[VKL_VK_MAX_BINDINGS + 1]; /* by binding count, made on demand */
    VkPipelineLayout pipe_layout[VKL_VK_MAX_BINDINGS + 1];
    vkl_vk_pipeline *pipelines;
    uint32_t n_pipelines, cap_pipelines;
    /* matvec tuning (specialization constants): workgroup size, output rows
     * per workgroup, activations staged through shared memory or not, K
     * steps per invocation per block, E0M4 codes built as f32 directly
     * (f32 math), 4-bit codes centered (w1 - b, q - z) before the fp16
     * products, else the fold (f16 math; quant_matvec_e0m4.comp), the
     * integer-dot matvecs' activations as two int8 terms (code and
     * residual) rather than one (quant_act_int8.comp). The integer-dot
     * matvecs (quant_matvec_dot.glsl) read qmv_wg, qmv_unroll and qmv_rows
     * (rows per team) too, and split K over teams of qmv_team invocations,
     * reduced by subgroupAdd alone where qmv_team_sg (the team is one
     * subgroup of a fixed size) */
    uint32_t qmv_wg, qmv_rows, qmv_stage, qmv_unroll, qmv_e0m4_f32, qmv_f16_center, qmv_dot_residual;
    uint32_t qmv_team;
    bool qmv_team_sg;
    /* the matvecs' arithmetic: the _f16 shader variants (fp16 products and
     * sums within each 16-byte step) or f32; decided once, at open, by
     * vk_device.c's choose_math (shaderFloat16 is enabled iff true or
     * gemm_coopmat) */
    bool f16_math;
    /* the decode matvecs' products: the _dot variants (int8 activations,
     * packed integer dot products) or the float ones (f16_math says which);
     * decided at open by vk_device.c's choose_matvec (shaderIntegerDotProduct
     * is enabled iff true). has_int8_dot: the feature is usable (the
     * device's, or the app's enabled); int8_dot_fast: the driver reports
     * both 4 x 8-bit packed forms the shaders use (signed, mixed signedness)
     * as accelerated. */
    bool matvec_dot, has_int8_dot, int8_dot_fast;
    /* the quantized GEMM (prefill; vk_gemm_tuning.c, at open): QuantMatMul
     * with at least qmm_min_rows rows of A runs it. Tiled build: qmm_wx x
     * qmm_wy invocations of qmm_tm x qmm_tn outputs. Cooperative-matrix
     * build (gemm_coopmat: has_coopmat_nv and neither coopmat nor fp16
     * masked): cm_wg invocations in cm_sg_m x cm_sg_n subgroups of cm_fm x
     * cm_fn fragments of cm_m x cm_n x cm_k (the device's fp16 shape), K in
     * steps of cm_bk codes. gemm_cm_emulated: that build's body with the
     * fragments in plain arithmetic instead (option gemm_coopmat_emulate,
     * for tests), same tiles; gemm_coopmat is then false. Either splits K
     * into cm_split slices where set, else into 2 where a node has fewer
     * than cm_target tiles (1: never). */
    uint32_t qmm_wx, qmm_wy, qmm_tm, qmm_tn, qmm_min_rows;
    bool has_coopmat_nv;            /* VK_NV_cooperative_matrix usable (feature, memory model, fp16, a shape) */
    bool gemm_coopmat, gemm_cm_emulated;
    uint32_t cm_m, cm_n, cm_k, cm_wg, cm_sg_m, cm_sg_n, cm_fm, cm_fn, cm_bk, cm_split, cm_target;
    vkl_vk_host_work work;          /* counted at each call (vulkan_backend.h) */
    /* Limits (vk_limits.c, at open): the most bytes one descriptor range may
     * span (maxStorageBufferRange, or less by options.max_binding_bytes, a
     * multiple of 16) and one allocation may hold (maxMemoryAllocationSize).
     * Tensors and weights beyond them go in pieces. */
    VkDeviceSize bind_limit, alloc_limit;
    bool bind_knob;                 /* bind_limit was lowered by the option */
    /* The memory budget: VK_EXT_memory_budget's (own device: enabled when
     * present; the app's: only if it enabled it), else the heap's size;
     * capped by options.memory_budget_bytes when non-zero. */
    bool has_memory_budget;
    bool pipeline_stats;            /* options.pipeline_stats where the device has the extension (vk_pipeline.c) */
    uint64_t budget_cap;
    uint64_t device_bytes;          /* device-local bytes allocated through vkl_vk_buffer_alloc now */
    /* attention (vk_attention.c's vkl_vk_attention_tuning, at open): which
     * kernel (0: by the number of query rows; 1: flash prefill always;
     * 2: split-K decoding wherever it applies), the split count (0: from
     * the KV length and attn_target, the workgroups a decode step aims at) */
    uint32_t attn_kernel, attn_splits, attn_target;
    uint32_t attn_fold;             /* 1: attn_decode_sg merges its chunks (options.attention_fold) */
    uint32_t attn_sg_from;          /* auto: keys from which attn_decode_sg runs (options.attention_sg_from) */
    /* attn_decode.comp: the most chunks its last workgroup merges (0: never),
     * V rows loaded at once (0: a block's in one round), strips of the max
     * and sum, V loads before the scores (options.attention_wg_*) */
    uint32_t attn_wg_fold, attn_wg_vb, attn_wg_parts, attn_wg_preload;
    uint32_t attn_wg_size;          /* its invocations (options.attention_wg_size) */
    uint32_t attn_rows, attn_keys; /* prefill attention's largest tile: query rows, keys */
    /* prefill attention on the matrix units (attn_prefill_cm.comp): attn_cm
     * 0 off, 1 its cooperative-matrix build, 2 its emulated build (tests);
     * attn_cm_sg subgroups of 16 query rows and attn_cm_keys keys per tile,
     * the largest a node gets (its shared memory may halve them) */
    uint32_t attn_cm, attn_cm_sg, attn_cm_keys;
    /* prepare fuses node patterns into one dispatch (vk_fuse.c): the device
     * has VKL_FEATURE_FUSION (not disabled, no quirk) and no_fusion is off;
     * fuse_off: the patterns options.fusions_off turned off
     * (VKL_VULKAN_FUSE_*) */
    bool fuse;
    uint32_t fuse_off;
};

vkl_status vkl_vk_buffer_alloc(vkl_backend_device *dev, vkl_buffer_usage usage, size_t bytes, vkl_vk_buffer *out);
void vkl_vk_buffer_free(vkl_backend_device *dev, vkl_vk_buffer *b);
/* Blocking; through the staging buffer when b is not host-visible. */
vkl_status vkl_vk_buffer_upload(vkl_backend_device *dev, vkl_vk_buffer *b, size_t offset, const void *src,
                                size_t bytes);
/* Host writes into b's mapped memory made visible (non-coherent memory). */
vkl_status vkl_vk_buffer_flush(vkl_backend_device *dev, vkl_vk_buffer *b);
vkl_status vkl_vk_buffer_download(vkl_backend_device *dev, vkl_vk_buffer *b, size_t offset, void *dst, size_t bytes);
/* One-shot command buffer: begin (after waiting for nothing: one-shot work
 * is always waited for), record, then end = submit + wait. */
vkl_status vkl_vk_once_begin(vkl_backend_device *dev, VkCommandBuffer *cmd);
vkl_status vkl_vk_once_end(vkl_backend_device *dev);
/* vkQueueSubmit on the device's queue, inside the app's queue lock when it
 * gave one. */
vkl_status vkl_vk_submit(vkl_backend_device *dev, const VkSubmitInfo *submit, VkFence fence);
/* Every earlier shader/transfer/host write visible to every later
 * shader/transfer/host access: the conservative barrier between steps. */
void vkl_vk_barrier_all(vkl_backend_device *dev, VkCommandBuffer cmd);
/* A compute-to-compute barrier: what dispatches in one recording need between them. */
void vkl_vk_barrier_compute(vkl_backend_device *dev, VkCommandBuffer cmd);

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

/* ---- the quantized GEMM's choice (vk_gemm_tuning.c) ---------------------------------------------- */

/* describe(): dev->has_coopmat_nv and the fragment shape (cm_m, cm_n,
 * cm_k), given whether the device (the app: enabled) has the extension. */
void vkl_vk_coopmat_probe(vkl_backend_device *dev, bool nv_extension);
/* At open, after the math is chosen: tiles, threshold, coopmat on or off
 * (options gemm_min_rows, gemm_tile_m, gemm_tile_n, gemm_step_k,
 * gemm_subgroups_m, gemm_subgroups_n, gemm_coopmat_emulate; bad values
 * fail). */
vkl_status vkl_vk_gemm_tuning(vkl_backend_device *dev, const vkl_vulkan_options *o);
/* Shared memory the tiled (coopmat false) or cooperative-matrix build needs. */
size_t vkl_vk_gemm_shared_bytes(const vkl_backend_device *dev, bool coopmat);
/* The rows of A (*bm) and of W (*bn) one workgroup of that build takes. */
void vkl_vk_gemm_tile(const vkl_backend_device *dev, bool coopmat, uint32_t *bm, uint32_t *bn);

/* ---- driver quirks (vk_quirks.c) ----------------------------------------------------------------- */

/* Paths a quirk (or kill switch) turns off beside the VKL_FEATURE_* bits. */
#define VKL_VK_OFF_SUBGROUP_ARITH (1u << 16) /* subgroupAdd reductions: the shared-memory ones instead */
#define VKL_VK_OFF_F64 (1u << 17)            /* shaderFloat64: f64 tensors refused */

/* A device and driver on which optional paths go wrong. Matches when the
 * vendor is the device's, and device_id (0: any), driver_id (a VkDriverId,
 * 0: any; a device older than Vulkan 1.2 reports none and matches only 0)
 * and driverVersion in [driver_min, driver_max] (the vendor's own
 * encoding) agree. */
typedef struct vkl_vk_quirk {
    const char *name;              /* short and unique: logs, vkbench --probe */
    uint32_t vendor_id, device_id, driver_id;
    uint32_t driver_min, driver_max;
    uint32_t off;                  /* VKL_FEATURE_* and VKL_VK_OFF_* turned off */
    const char *reason;            /* what goes wrong, one line */
    const char *symptom;           /* what was seen that justified the entry */
} vkl_vk_quirk;

extern const vkl_vk_quirk vkl_vk_quirks[];
extern const size_t vkl_vk_quirk_count;
bool vkl_vk_quirk_applies(const vkl_vk_quirk *q, const VkPhysicalDeviceProperties *p, uint32_t driver_id);
/* What the matching entries turn off; each logged at info through `log`
 * (NULL: silent) and listed in names ("name (what off); ...", "" none). */
uint32_t vkl_vk_quirks_for(const VkPhysicalDeviceProperties *p, uint32_t driver_id, vkl_context *log, char *names,
                           size_t cap);
/* "fp16, coopmat, subgroup arithmetic" for the bits of `off`. */
void vkl_vk_off_names(uint32_t off, char *buf, size_t cap);
/* describe()'s last step: the quirks of dev's device and driver turn their
 * paths off in caps (features_quirked, quirks) and in the device's flags. */
void vkl_vk_apply_quirks(vkl_backend_device *dev);

/* ---- pipelines (vk_pipeline.c) ------------------------------------------------------------------ */

/* The pipeline cache, from its file when there is one, and the file saved
 * back at destroy. */
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

/* ---- the pipeline cache's file (vk_pipeline_cache.c) ---------------------------------------------- */

/* This device's cache file (*out, allocated through own_ctx) in dir_option:
 * NULL, the default ($XDG_CACHE_HOME/vkllm, else $HOME/.cache/vkllm); "",
 * none. The directory is made 0700 when missing. *out stays NULL, with an
 * info line saying why, when there is no usable directory or "" turns the
 * file off; only running out of memory is an error. The name holds the
 * vendor, device, driver version, pipelineCacheUUID and a hash of the
 * embedded SPIR-V, so another driver or build never reads the file. */
vkl_status vkl_vk_cache_path(vkl_backend_device *dev, const char *dir_option, char **out);
/* dev->cache_path's driver data (*size bytes; free with dev->ctx), or NULL:
 * absent, empty, or ignored with a warning saying what was wrong (corrupt,
 * truncated, another build's, another device's or driver's), to be replaced
 * at close. A FIFO, directory or device under the name, and a file a user
 * named (user_named) that is no pipeline cache at all, are neither read nor
 * replaced: cache_path becomes NULL. */
void *vkl_vk_cache_read(vkl_backend_device *dev, bool user_named, size_t *size);
/* Writes the cache to dev->cache_path atomically when it changed since the
 * read (or the file must be replaced); a failure is a warning. */
void vkl_vk_cache_save(vkl_backend_device *dev);

/* ---- weights (vk_weights.c) --------------------------------------------------------------------- */

/* A run of whole rows of a weight in its own allocation, every range within
 * dev->bind_limit and the allocation within dev->alloc_limit. Quantized: the
 * GPU packed layout's two planes for these rows (qs, then params at an
 * offset aligned for a descriptor); plain: the rows' bytes unchanged. */
typedef struct vkl_vk_piece {
    vkl_vk_buffer buf;
    int64_t row0, rows;             /* rows [row0, row0 + rows) of the weight */
    VkDescriptorBufferInfo qs;      /* plain weights: the data */
    VkDescriptorBufferInfo params;  /* quantized only */
} vkl_vk_piece;

/* One weight tensor on the device: one piece (the whole weight), or several
 * when it is larger than a limit (only the recorders that take pieces read
 * those: vkl_vk_takes_pieces). Rows are dims[0] (N of a quantized [N, K]). */
typedef struct vkl_vk_weight {
    vkl_vk_piece *piece;            /* n_pieces of them; NULL: not loaded */
    uint32_t n_pieces;
    int64_t rows;
    vkl_quant_gpu_layout lay;       /* quantized dtypes only: the whole weight's layout */
    uint64_t bytes;                 /* device bytes held */
} vkl_vk_weight;

struct vkl_backend_weights {
    const vkl_graph *g;
    vkl_vk_weight *w;              /* per graph tensor */
    uint32_t n;
    uint64_t bytes;                /* device bytes held */
};

vkl_status vkl_vk_weights_load(vkl_backend_device *dev, const vkl_graph *g, vkl_backend_weights **out);
void vkl_vk_weights_release(vkl_backend_device *dev, vkl_backend_weights *w);
/* Packs canonical blocks into `w` (device memory, in row pieces where a
 * limit needs) with engine/quant's GPU packer; straight into the mapped
 * memory where device-local memory is host-visible (unified memory). */
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
    VkDescriptorBufferInfo at;     /* arena range, or a plain weight's data (its first piece's) */
    const vkl_vk_weight *weight;   /* weights only */
    /* Over the binding limit: a weight of several pieces, or an arena tensor
     * larger than dev->bind_limit (then `at` spans it all: never bind it
     * whole, only vkl_vk_sub_range pieces of it). */
    bool pieced;
} vkl_vk_tensor;

/* One compute dispatch as a recorder describes it. */
typedef struct vkl_vk_dispatch {
    const char *shader;
    uint32_t spec[VKL_VK_MAX_SPEC], n_spec;
    VkDescriptorBufferInfo bind[VKL_VK_MAX_BINDINGS];
    uint32_t n_bind;
    uint32_t push[VKL_VK_PUSH_BYTES / 4], n_push; /* words */
    uint32_t groups[3];
    /* bit j: binding j is only read, though it is no input of the node (a
     * shared scratch range an earlier node filled); without it, such a
     * binding counts as written (vk_backend.c's barriers) */
    uint32_t reads;
} vkl_vk_dispatch;

/* Scratch memory for what a node's dispatches pass to each other (split-K
 * attention's partial results): a recorder binds vkl_vk_scratch(offset,
 * bytes), a range of one device buffer that prepare allocates per
 * executable, sized to the largest end any dispatch asks for, and binds in
 * place of the marker (a null VkBuffer: no real binding has one). Nodes run
 * one after another with a full barrier after every dispatch, so they all
 * share it; its contents are undefined when a node starts. Offsets must be
 * multiples of minStorageBufferOffsetAlignment, ranges at most
 * maxStorageBufferRange (the recorder checks; prepare refuses otherwise). */
static inline VkDescriptorBufferInfo vkl_vk_scratch(VkDeviceSize offset, VkDeviceSize bytes) {
    VkDescriptorBufferInfo b = {VK_NULL_HANDLE, offset, bytes};
    return b;
}
/* The scratch buffer's first bytes: counters, zero between nodes (the
 * buffer is zeroed at prepare and each node's last workgroups set theirs
 * back): attn_decode_sg.comp's, one per (batch, KV head, row block)
 * (vk_attention.c), and the _glu_codes matvecs', one per step of a row
 * (vk_quant_matmul.c).
 * Past them, vk_scratch.c hands out ranges: shared ones, which several
 * nodes read, and a node's own. */
#define VKL_VK_SCRATCH_COUNTERS 65536
/* The cooperative-matrix GEMM's most K slices (vk_quant_matmul.c). */
#define VKL_VK_GEMM_MAX_SPLIT 16

/* The scratch ranges an executable's recorders have been handed
 * (vk_scratch.c): shared ones by key, in node order. */
typedef struct vkl_vk_scratch_range {
    uint32_t tensor;               /* the graph tensor the contents derive from */
    uint64_t tag;                  /* what was made of it (the recorder's own code) */
    VkDeviceSize offset, bytes;
} vkl_vk_scratch_range;
typedef struct vkl_vk_scratch_book {
    vkl_vk_scratch_range *ranges;
    uint32_t n, cap;
    VkDeviceSize end;              /* bytes past the counters the shared ranges take */
} vkl_vk_scratch_book;

typedef struct vkl_vk_node {
    vkl_backend_device *dev;
    const vkl_graph *g;
    uint32_t index;                /* node index in g */
    const vkl_vk_tensor *in, *out;
    uint32_t n_in, n_out;
    const vkl_binding *binding;    /* the symbol values prepare was called with */
    const vkl_backend_weights *weights; /* the graph's, for TENSOR attributes (Constant's value) */
    vkl_vk_scratch_book *book;     /* the executable's scratch ranges (recording only; else NULL) */
    const struct vkl_vk_fusion *fusion; /* what fusion made of this position (recording only; else NULL) */
} vkl_vk_node;

/* ---- scratch ranges (vk_scratch.c) ---------------------------------------------------------------- */

/* A scratch range that later nodes may read too, keyed by (tensor, tag):
 * the one already handed out (*made false: an earlier node's dispatches
 * fill it before this node runs; bytes must agree), or a new one past the
 * earlier shared ranges (*made true: the caller records what fills it).
 * Contents stay until the executable's end. */
vkl_status vkl_vk_scratch_shared(const vkl_vk_node *node, uint32_t tensor, uint64_t tag, VkDeviceSize bytes,
                                 VkDescriptorBufferInfo *out, bool *made);
/* Where the node's own ranges may start: above every shared range so far
 * (aligned for a binding). */
VkDeviceSize vkl_vk_scratch_own(const vkl_vk_node *node);
void vkl_vk_scratch_book_free(vkl_context *ctx, vkl_vk_scratch_book *book);

/* Checks what the op needs (dtypes, shapes, limits: VKL_ERR_UNSUPPORTED
 * naming the node otherwise) and describes its dispatches, in order. */
typedef vkl_status (*vkl_vk_recorder)(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
/* NULL: the op has no Vulkan kernel yet. */
vkl_vk_recorder vkl_vk_recorder_for(uint32_t op);
vkl_status vkl_vk_record_quant_mat_mul(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
/* Whether a QuantMatMul node runs the quantized matvec in one dispatch
 * (f32 A, a fast format, fewer rows than the GEMM's threshold, nothing in
 * pieces), *gemm = false, or the quantized GEMM on a whole W (prefill),
 * *gemm = true: what the fused recorders below take (the GEMM only as Add
 * and Q/K/V). False for anything its recorder would refuse. */
bool vkl_vk_qmm_fusable(const vkl_vk_node *node, bool *gemm);
/* Whether the gate/up build (twice the rows' sums) fits the device's shared
 * memory under the matvec tuning (a tuning knob may make it too large). */
bool vkl_vk_qmm_glu_fits(const vkl_backend_device *dev);
/* Shared memory of the matvec the device runs (float or integer dot, as
 * tuned), of its gate/up build if glu. */
size_t vkl_vk_qmv_shared_bytes(const vkl_backend_device *dev, bool glu);
/* The fused matvecs (vk_fuse.c; qmm_add on the GEMM too): node is the
 * QuantMatMul's (A, W, bias or absent) with in[3] the residual R (qmm_add:
 * Y = A W^T (+ bias) + R) or the up weight Wu (qmm_glu: Y = silu(A W^T) *
 * (A Wu^T)) and out[0] the fused output (the Add's or the SiluMul's). */
vkl_status vkl_vk_record_qmm_add(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
vkl_status vkl_vk_record_qmm_glu(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
/* Whether the gate QuantMatMul node (its A, W, no bias | its Y) of a gate/up
 * pair runs the _glu_codes build, which also writes the int8 codes of the
 * fused output for dot matvecs reading `steps` steps of `chunk` (its own
 * format's step, a whole Y row): the dot matvec, counters and bindings
 * that fit. vkl_vk_record_qmm_glu records it where node->fusion's steps
 * are set (vk_fuse.c decides). */
#define VKL_VK_GLU_CODES_BINDINGS 9 /* storage buffers */
bool vkl_vk_qmm_glu_codes_fit(const vkl_vk_node *gate, uint32_t steps, uint32_t chunk);
/* The fused Q/K/V matvec (the _qkv builds): up to three QuantMatMuls of one
 * A in one dispatch. The node's inputs: A, then W and bias (id VKL_NONE:
 * none) of each set; its outputs: each set's Y; the third set's W and Y
 * VKL_NONE when two are fused. Each set on the fusable matvec path with
 * one format, K and group (vk_fuse.c checked; refused here otherwise). */
#define VKL_VK_QKV_IN 7
#define VKL_VK_QKV_OUT 3
#define VKL_VK_QKV_BINDINGS 13 /* storage buffers: the device must allow that many per stage */
vkl_status vkl_vk_record_qmm_qkv(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
/* Whether the device binds the _qkv build's storage buffers in one stage
 * and one set (phones may allow fewer). */
bool vkl_vk_qmm_qkv_fits(const vkl_backend_device *dev);
/* Whether a QuantMatMul node records the integer-dot matvec (so reads A as
 * codes, not as A), and the codes' steps per row and elements per step. */
bool vkl_vk_qmm_reads_codes(const vkl_vk_node *node, uint32_t *steps, uint32_t *chunk);
/* The shared scratch range of the codes of `tensor` [M, ...] in steps of
 * chunk (shaders/vulkan/quant_act.glsl) and their uvec4s per row; *made as
 * vkl_vk_scratch_shared's. */
vkl_status vkl_vk_codes_range(const vkl_vk_node *node, uint32_t tensor, int64_t M, uint32_t steps, uint32_t chunk,
                              VkDescriptorBufferInfo *codes, uint64_t *row_vec4s, bool *made);
/* The same range for a node that writes the codes of its own output (an
 * RMSNorm, a gate/up matvec, an Attention: vk_fuse.c): unsupported unless
 * this node is the first to ask for it, since its readers find the range
 * made here and one made earlier would be another node's. */
vkl_status vkl_vk_codes_made_here(const vkl_vk_node *node, uint32_t tensor, int64_t M, uint32_t steps,
                                  uint32_t chunk, VkDescriptorBufferInfo *codes, uint64_t *row_vec4s);
uint64_t vkl_vk_codes_row_vec4s(const vkl_backend_device *dev, uint32_t steps, uint32_t chunk);
/* vk_norm.c: whether RMSNorm node writes its rows' codes in the fused build
 * (f32, the last axis, a one-row scale, nothing in pieces; rows of `cols`
 * elements), and the recorder of that build (node->fusion says the codes'
 * steps and chunk). */
bool vkl_vk_rms_codes_fit(const vkl_vk_node *node, int64_t cols, uint32_t steps, uint32_t chunk);
vkl_status vkl_vk_record_rms_codes(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
/* vk_attention.c: whether Attention node records the split-K decode whose
 * merge can write the codes of its output read as rows of `cols` elements
 * (f32, Dv a multiple of chunk and cols of Dv, cols = steps * chunk, the
 * codes within one binding), and the recorder of that build (node->fusion
 * says the steps, chunk and, in extra, the tensor its readers read). */
bool vkl_vk_attn_codes_fit(const vkl_vk_node *node, int64_t cols, uint32_t steps, uint32_t chunk);
vkl_status vkl_vk_record_attention_codes(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);

/* ---- fusion (vk_fuse.c) ----------------------------------------------------------------------------- */

/* What prepare records at each position of its node order. */
typedef enum vkl_vk_fuse_kind {
    VKL_VK_FUSE_NONE = 0, /* the node on its own */
    VKL_VK_FUSE_GONE,     /* a node another position's fused dispatch computes (a later one; QKV: an earlier one) */
    VKL_VK_FUSE_ADD,      /* an Add(QuantMatMul(A, W), R): vkl_vk_record_qmm_add */
    VKL_VK_FUSE_GLU,      /* a SiluMul(QuantMatMul(A, Wg), QuantMatMul(A, Wu)): vkl_vk_record_qmm_glu */
    VKL_VK_FUSE_NORM_CODES, /* an RMSNorm whose every reader is a dot matvec: it writes their codes, not its
                             * output (vkl_vk_record_rms_codes) */
    VKL_VK_FUSE_ROPE_KV,  /* RoPE(K) + KvAppend(K) [+ KvAppend(V)] [+ RoPE(Q)] of an attention: vkl_vk_record_rope_kv */
    VKL_VK_FUSE_QKV,      /* two or three QuantMatMuls of one A, at the first's position: vkl_vk_record_qmm_qkv */
    VKL_VK_FUSE_ATTN_CODES /* a decode Attention whose output (or a view of it) only dot matvecs read: its merge
                            * writes their codes, not its output (vkl_vk_record_attention_codes) */
} vkl_vk_fuse_kind;

typedef struct vkl_vk_fusion {
    vkl_vk_fuse_kind kind;
    uint32_t qmm;   /* ADD, GLU: the (gate) QuantMatMul's node index */
    uint32_t extra; /* ADD: the residual tensor; GLU: the up QuantMatMul's node index; ATTN_CODES: the tensor
                     * whose codes it writes (the output or a view of it) */
    /* NORM_CODES, ATTN_CODES, and GLU when it writes its output's codes too (steps 0: not): the codes' steps
     * per row and elements per step */
    uint32_t steps, chunk;
    /* ROPE_KV: the nodes RoPE(K), KvAppend(K), KvAppend(V), RoPE(Q) (the last two VKL_NONE when not fused);
     * QKV: the QuantMatMuls in their order (the third, fourth VKL_NONE when absent) */
    uint32_t nodes[4];
} vkl_vk_fusion;

/* A tensor as prepare binds it for the memory map and binding (vk_backend.c). */
vkl_status vkl_vk_bind_tensor(vkl_backend_device *dev, const vkl_graph *g, const vkl_backend_weights *w,
                              const vkl_memory_map *mem, const vkl_binding *b, uint32_t t, vkl_vk_tensor *v);
/* The same, then the range fusion moved t to instead (moved[t], when its
 * range is not 0; vkl_vk_fuse_plan). */
vkl_status vkl_vk_bind_moved(vkl_backend_device *dev, const vkl_graph *g, const vkl_backend_weights *w,
                             const vkl_memory_map *mem, const vkl_binding *b, const VkDescriptorBufferInfo *moved,
                             uint32_t t, vkl_vk_tensor *v);
/* Whether two bindings share bytes. */
bool vkl_vk_overlaps(const VkDescriptorBufferInfo *a, const VkDescriptorBufferInfo *b);
/* For the live nodes order[0..n) of an executable: fused[k] says what
 * position k records (all NONE when dev->fuse is off); moved[t] (per
 * tensor) the range a fused output lives in instead of its planned one,
 * in *moved_mem (allocated here, the executable's to free; range 0: not
 * moved), which every binding of t must use; *n_fused counts the nodes
 * that lost their own dispatches. Logs the count at debug level. */
vkl_status vkl_vk_fuse_plan(vkl_backend_device *dev, const vkl_graph *g, const vkl_backend_weights *w,
                            const vkl_memory_map *mem, const vkl_binding *b, const uint32_t *order, uint32_t n,
                            vkl_vk_fusion *fused, VkDescriptorBufferInfo *moved, vkl_vk_buffer *moved_mem,
                            uint32_t *n_fused);
/* Position k's fused node (ADD or GLU) bound into views[0..5) (A, W, bias,
 * R or Wu, the output), as vkl_vk_record_qmm_add/glu and the barriers read
 * it; *record is the recorder. */
vkl_status vkl_vk_fuse_node(vkl_backend_device *dev, const vkl_graph *g, const vkl_backend_weights *w,
                            const vkl_memory_map *mem, const vkl_binding *b, const VkDescriptorBufferInfo *moved,
                            const vkl_vk_fusion *f, uint32_t head, vkl_vk_tensor *views, vkl_vk_node *node,
                            vkl_vk_recorder *record);
/* Position k's fused RoPE + KvAppend bound into views[0..VKL_VK_ROPE_KV_IN
 * + VKL_VK_ROPE_KV_OUT) as vkl_vk_record_rope_kv reads them. */
vkl_status vkl_vk_fuse_rope_kv_node(vkl_backend_device *dev, const vkl_graph *g, const vkl_backend_weights *w,
                                    const vkl_memory_map *mem, const vkl_binding *b, const VkDescriptorBufferInfo *moved,
                                    const vkl_vk_fusion *f, vkl_vk_tensor *views, vkl_vk_node *node);
/* Position k's fused Q/K/V matvec bound into views[0..VKL_VK_QKV_IN +
 * VKL_VK_QKV_OUT) as vkl_vk_record_qmm_qkv reads them. */
vkl_status vkl_vk_fuse_qkv_node(vkl_backend_device *dev, const vkl_graph *g, const vkl_backend_weights *w,
                                const vkl_memory_map *mem, const vkl_binding *b, const VkDescriptorBufferInfo *moved,
                                const vkl_vk_fusion *f, vkl_vk_tensor *views, vkl_vk_node *node);
/* vk_movement.c: strided views (copy_view.comp) and Trilu (trilu.comp) */
vkl_status vkl_vk_record_transpose(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
vkl_status vkl_vk_record_expand(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
vkl_status vkl_vk_record_tile(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
vkl_status vkl_vk_record_slice(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
vkl_status vkl_vk_record_trilu(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
/* vk_reshape.c: Reshape, Squeeze, Unsqueeze, Flatten (the same bytes) */
vkl_status vkl_vk_record_reshape(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
/* vk_concat.c: Concat (concat.comp), Split (split.comp) */
vkl_status vkl_vk_record_concat(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
vkl_status vkl_vk_record_split(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
/* vk_indexing.c: Gather, GatherElements, GatherND, ScatterND */
vkl_status vkl_vk_record_gather(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
vkl_status vkl_vk_record_gather_elements(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
vkl_status vkl_vk_record_gather_nd(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
vkl_status vkl_vk_record_scatter_nd(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
/* vk_reduce.c */
vkl_status vkl_vk_record_reduce_sum(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
vkl_status vkl_vk_record_reduce_mean(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
vkl_status vkl_vk_record_reduce_max(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
vkl_status vkl_vk_record_cum_sum(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
/* vk_select.c */
vkl_status vkl_vk_record_arg_max(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
vkl_status vkl_vk_record_top_k(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
/* vk_conv.c */
vkl_status vkl_vk_record_conv(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
/* vk_linalg.c */
vkl_status vkl_vk_record_mat_mul(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
vkl_status vkl_vk_record_gemm(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
/* One product as shaders/vulkan/matmul_common.glsl reads it:
 *   Y[b, m, n] = alpha * sum_k A(b, m, k) B(b, k, n) + beta * C(m, n),
 * A(b, m, k) = A[a_off(b) + m a_rs + k a_cs] (B likewise), C(m, n) =
 * C[m c_rs + n c_cs], Y contiguous [batches, M, N], a_off(b) and b_off(b)
 * from b over batch_rank merged dims. B is B's tensor (b_dtype, b_at), or
 * a quantized W [N, K] in the GPU layout (b_dtype Q_*, codes at b_at,
 * params at p_at, q_row_bytes, q_group; then B(k, n) = w(n, k)). */
typedef struct vkl_vk_mm {
    const vkl_vk_tensor *A, *B, *C, *Y; /* C: NULL when none */
    int64_t M, N, K, batches;
    int64_t a_rs, a_cs, b_rs, b_cs, c_rs, c_cs;
    float alpha, beta;
    uint32_t batch_rank;
    int64_t bdims[4], a_bs[4], b_bs[4];
    vkl_dtype b_dtype;
    VkDescriptorBufferInfo b_at, p_at;
    uint32_t q_row_bytes, q_group;
    int64_t a_base;                /* A's first element (a piece of B reads A from column a_base on) */
} vkl_vk_mm;
/* matvec.comp for M = 1 or a quantized B, matmul.comp for other float
 * products, matmul_int.comp for i32/u32/i64. */
vkl_status vkl_vk_record_mm(const vkl_vk_node *node, const vkl_vk_mm *mm, vkl_vk_dispatch *out, uint32_t *count);
/* vk_norm.c */
vkl_status vkl_vk_record_softmax(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
vkl_status vkl_vk_record_log_softmax(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
vkl_status vkl_vk_record_rms_norm(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
vkl_status vkl_vk_record_layer_normalization(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
/* elementwise family: vk_elementwise.c (broadcasting binary ops, Where),
 * vk_ew_unary.c (math, activations, Not, Clip, Identity, Dropout), vk_cast.c */
vkl_status vkl_vk_record_binary(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
vkl_status vkl_vk_record_where(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
vkl_status vkl_vk_record_unary(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
vkl_status vkl_vk_record_identity(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
vkl_status vkl_vk_record_dropout(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
vkl_status vkl_vk_record_cast(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
/* generators family: vk_generators.c */
vkl_status vkl_vk_record_shape(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
vkl_status vkl_vk_record_size(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
vkl_status vkl_vk_record_constant(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
vkl_status vkl_vk_record_constant_of_shape(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
vkl_status vkl_vk_record_range(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
/* "vulkan: node 3 'name' (QuantMatMul): <why>" as VKL_ERR_UNSUPPORTED. */
vkl_status vkl_vk_node_unsupported(const vkl_vk_node *node, const char *fmt, ...) VKL_PRINTF(2, 3);
/* The same message with another status: VKL_ERR_SHAPE when the concrete
 * dims contradict the op (what ref's kernel reports at run time). */
vkl_status vkl_vk_node_fail(const vkl_vk_node *node, vkl_status st, const char *fmt, ...) VKL_PRINTF(3, 4);
/* The node's `axis` attribute within [-rank, rank), made non-negative;
 * VKL_ERR_SHAPE naming the node otherwise (ref's status). */
vkl_status vkl_vk_axis_attr(const vkl_vk_node *nd, uint32_t rank, uint32_t *axis);
/* The integer values of input k at prepare: a known value (shape-value
 * tensors and constants, evaluated under node->binding) or a plain weight's
 * data. Run-time data: VKL_ERR_UNSUPPORTED naming the input (`what`). */
vkl_status vkl_vk_input_ints(const vkl_vk_node *node, uint32_t k, const char *what, int64_t *out, uint32_t cap,
                             uint32_t *count);

/* ---- nn recorders' helpers (vk_nn_util.c) ------------------------------------------------------- */

bool vkl_vk_dtype_float(vkl_dtype t); /* f32, f16, bf16, f64 */
bool vkl_vk_node_has_f64(const vkl_vk_node *node);
/* A shader's builds: plain (shared-memory reductions, f32 arithmetic), _sg
 * (subgroup reductions; NULL: none) and _f64 (double arithmetic; NULL: none). */
typedef struct vkl_vk_variants {
    const char *plain, *sg, *f64;
} vkl_vk_variants;
/* The build to run: f64 when the node has f64 tensors (VKL_ERR_UNSUPPORTED
 * without shaderFloat64), else sg where the device has subgroup arithmetic. */
vkl_status vkl_vk_pick(const vkl_vk_node *node, bool f64, const vkl_vk_variants *v, const char **out);
/* A workgroup size for `work` items of parallel work: a power of two in
 * 32..256 within the device's limits, about work / 4. */
uint32_t vkl_vk_wg_size(const vkl_vk_node *node, int64_t work);
/* The same in 32..cap (a power of two). */
uint32_t vkl_vk_wg_size_max(const vkl_vk_node *node, int64_t work, uint32_t cap);
/* The values of integer input k when they are known at prepare (a weight's
 * data or constant symbolic values): false otherwise or beyond cap. */
bool vkl_vk_const_ints(const vkl_vk_node *node, uint32_t k, int64_t *out, uint32_t cap, uint32_t *n);
uint32_t vkl_vk_f32_bits(float f);
/* d->bind[j] = t's range, or fallback's when t is absent: a binding the
 * shader never touches still needs a valid buffer. */
void vkl_vk_bind_or(vkl_vk_dispatch *d, uint32_t j, const vkl_vk_tensor *t, const vkl_vk_tensor *fallback);
vkl_status vkl_vk_record_rope(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
vkl_status vkl_vk_record_attention(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
vkl_status vkl_vk_record_kv_append(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
/* vk_rope_kv.c: the fused RoPE(K) + KvAppend(K) [+ KvAppend(V)] [+ RoPE(Q)]
 * (rope_kv_append.comp). The node's inputs: K before RoPE, cos, sin,
 * position_ids, K state, V, V state, Q before RoPE; its outputs: K state,
 * V state, RoPE(Q); V's and Q's parts absent (id VKL_NONE) when not fused.
 * node->fusion->nodes[0] is the RoPE(K) node (its attributes). */
#define VKL_VK_ROPE_KV_IN 8
#define VKL_VK_ROPE_KV_OUT 3
#define VKL_VK_ROPE_KV_BINDINGS 9 /* storage buffers: the device must allow that many per stage */
/* Whether the fused kernel takes the node (dtypes, shapes, in-place
 * states, the device's bindings); its recorder refuses what this refuses. */
bool vkl_vk_rope_kv_fits(const vkl_vk_node *node);
vkl_status vkl_vk_record_rope_kv(const vkl_vk_node *node, vkl_vk_dispatch *out, uint32_t *count);
/* The attention knobs of the device (options attention, attention_splits,
 * attention_target, attention_rows, attention_keys), read at open. */
vkl_status vkl_vk_attention_tuning(vkl_backend_device *dev, const vkl_vulkan_options *o);

/* ---- strided views (vk_view.c; shaders/vulkan/view.glsl) ----------------------------------------- */

#define VKL_VK_VIEW_RANK 6 /* dims a strided kernel indexes (after merging) */
#define VKL_VK_VIEW_SRC 3  /* sources per view: push = 1 + 6 + 3 * 6 = 25 words */

/* Each source's element strides over an output index space of `rank` dims,
 * merged: size-1 dims dropped, neighbours every source walks as one joined.
 * Dims are outermost first, padded in front with size 1 (stride 0). */
typedef struct vkl_vk_view {
    int64_t count;
    uint32_t rank, n_src;
    int64_t dims[VKL_VK_VIEW_RANK];
    int64_t strides[VKL_VK_VIEW_SRC][VKL_VK_VIEW_RANK];
} vkl_vk_view;

void vkl_vk_contiguous_strides(uint32_t rank, const int64_t *dims, int64_t *strides);
/* t's strides over `dims` under numpy broadcasting (0 on broadcast dims). */
vkl_status vkl_vk_broadcast_strides(const vkl_vk_node *nd, const vkl_vk_tensor *t, uint32_t rank,
                                    const int64_t *dims, int64_t *strides);
/* VKL_ERR_UNSUPPORTED naming the node when more than VKL_VK_VIEW_RANK dims
 * remain or an index leaves 32 bits. Strides may be negative (reversed
 * views); the caller keeps every index it makes in range. */
vkl_status vkl_vk_view_make(const vkl_vk_node *nd, uint32_t rank, const int64_t *dims, uint32_t n_src,
                            const int64_t (*strides)[VKL_MAX_RANK], vkl_vk_view *v);
/* count, dims, then each source's strides, as view.glsl reads them; returns words written. */
uint32_t vkl_vk_view_push(const vkl_vk_view *v, uint32_t *push);

/* ---- data movement (vk_copy.c; shaders/vulkan/move.glsl) ---------------------------------------- */

/* Workgroup size of the movement and indexing kernels: 256, or less where the device allows less. */
uint32_t vkl_vk_move_wg(const vkl_backend_device *dev);
/* n workgroups as a 2D grid: x as large as the device allows, then y;
 * false where y exceeds the device's grid. */
bool vkl_vk_grid_2d(const vkl_backend_device *dev, uint64_t n, uint32_t *gx, uint32_t *gy);
/* Workgroups for `units` invocations of wg each, as a 2D grid (move.glsl's
 * VKL_MOVE_ID); VKL_ERR_UNSUPPORTED beyond the device's grid or 32 bits. */
vkl_status vkl_vk_grid(const vkl_vk_node *nd, uint64_t units, uint32_t wg, uint32_t groups[3]);
/* Bytes per element of t (1, 2, 4 or 8); VKL_ERR_UNSUPPORTED for block formats. */
vkl_status vkl_vk_elem_bytes(const vkl_vk_node *nd, const vkl_vk_tensor *t, uint32_t *es);
/* dst (contiguous) = the view of src that reads element base + sum(idx[d] *
 * strides[d]) (elements; strides may be 0 or negative) over dims[0..rank),
 * rank <= 2 * VKL_MAX_RANK: one copy_view dispatch at *d, *count + 1, or
 * none when dst is empty. VKL_ERR_SHAPE when the view leaves src. */
vkl_status vkl_vk_record_view(const vkl_vk_node *nd, const vkl_vk_tensor *src, const vkl_vk_tensor *dst, uint32_t rank,
                              const int64_t *dims, const int64_t *strides, int64_t base, vkl_vk_dispatch *d,
                              uint32_t *count);
/* dst = src's bytes (same size): copy_vec4 where 16-byte aligned, else
 * words; no dispatch when empty or the same range. */
vkl_status vkl_vk_record_copy(const vkl_vk_node *nd, const vkl_vk_tensor *src, const vkl_vk_tensor *dst,
                              vkl_vk_dispatch *d, uint32_t *count);
/* Output k has exactly these dims; VKL_ERR_SHAPE naming both otherwise. */
vkl_status vkl_vk_check_dims(const vkl_vk_node *nd, uint32_t k, const int64_t *dims, uint32_t rank);
/* ---- elementwise helpers (vk_elementwise.c), shared by the elementwise and generator recorders ---- */

/* Workgroup size of the ew_* / range shaders on this device. */
uint32_t vkl_vk_ew_wg(const vkl_backend_device *dev);
/* Workgroups for `units` invocations of wg each: x up to the device's
 * limit, then rows of y; VKL_ERR_UNSUPPORTED naming the node beyond it or
 * beyond the shaders' 32-bit unit index. */
vkl_status vkl_vk_ew_grid(const vkl_vk_node *nd, uint64_t units, uint32_t wg, uint32_t groups[3]);
/* 32-bit units (tensor.glsl: 4 elements of 1 byte, 2 of 2 bytes, 1 of 4 or 8) of n elements of dtype t. */
uint64_t vkl_vk_ew_units(vkl_dtype t, int64_t n);
/* The domain a dtype computes in (0 f32: f32/f16/bf16; 1 int64: integers and
 * bool; 2 f64), or -1 for dtypes with no arithmetic (fp8, quantized). */
int vkl_vk_ew_domain(vkl_dtype t);
/* VKL_ERR_UNSUPPORTED naming the node when an f64 kernel is needed and the
 * device has no shaderFloat64 (or VKL_VK_NO_F64=1 masks it). */
vkl_status vkl_vk_ew_need_f64(const vkl_vk_node *nd);
/* A copy of `bytes` (whole words) from src to dst, or a fill of dst with
 * `period` repeating words; one dispatch each. */
vkl_status vkl_vk_ew_copy(const vkl_vk_node *nd, VkDescriptorBufferInfo src, VkDescriptorBufferInfo dst, size_t bytes,
                          vkl_vk_dispatch *d);
vkl_status vkl_vk_ew_fill(const vkl_vk_node *nd, VkDescriptorBufferInfo dst, size_t bytes, const uint32_t *pattern,
                          uint32_t period, vkl_vk_dispatch *d);
#define VKL_VK_EW_FILL_MAX 30 /* words of a fill's pattern (push constants) */

/* ---- limits, pieces, budget (vk_limits.c) --------------------------------------------------------- */

/* dev->bind_limit, alloc_limit and the budget cap, from the device and
 * options (max_binding_bytes, memory_budget_bytes); at open. */
vkl_status vkl_vk_limits_init(vkl_backend_device *dev, const vkl_vulkan_options *o);
/* "maxStorageBufferRange" or "max_binding_bytes (the testing knob)": what set the binding limit, for messages. */
const char *vkl_vk_bind_limit_name(const vkl_backend_device *dev);
/* Bytes [off, off + bytes) of `whole` as a binding: the offset rounded down
 * to minStorageBufferOffsetAlignment, *skip the 4-byte words from there to
 * off (for the shader's push constants), the range whole words. false when
 * that range is over dev->bind_limit or leaves `whole`. */
bool vkl_vk_sub_range(const vkl_backend_device *dev, VkDescriptorBufferInfo whole, VkDeviceSize off,
                      VkDeviceSize bytes, VkDescriptorBufferInfo *out, uint32_t *skip);
/* Ops whose recorders read pieced tensors (QuantMatMul, MatMul, Gather); prepare
 * refuses a pieced tensor anywhere else, naming the node and the tensor. */
bool vkl_vk_takes_pieces(uint32_t op);
/* Whether `need` more bytes of device-local memory fit the heap's budget
 * now; VKL_ERR_OUT_OF_MEMORY naming what (`what`), the bytes needed and
 * available and the heap otherwise. */
vkl_status vkl_vk_budget_check(vkl_backend_device *dev, uint64_t need, const char *what);

/* ---- measurement (vk_measure.c) ----------------------------------------------------------------- */

/* One dispatch to time: pipeline, its set, push constants, grid; `first`
 * (optional) records setup into the first, untimed batch's command buffer. */
typedef struct vkl_vk_timed {
    VkPipeline pipe;
    uint32_t n_bind;
    VkDescriptorSet set;
    uint32_t push[VKL_VK_PUSH_BYTES / 4], n_push;
    uint32_t groups[3];
    double seconds;       /* keep timing batches for this long (two batches at least) */
    void (*first)(vkl_backend_device *dev, VkCommandBuffer cmd, void *user);
    void *user;
} vkl_vk_timed;
/* The best (over batches) median (over a batch of 9) of its GPU times. */
vkl_status vkl_vk_time_dispatch(vkl_backend_device *dev, const vkl_vk_timed *t, double *best_seconds);
vkl_status vkl_vk_copy_bandwidth(vkl_backend_device *dev, size_t bytes, double *bytes_per_second);
/* vk_peak.c: the arithmetic peaks (engine/backend.h's vkl_compute_peaks). */
vkl_status vkl_vk_compute_peaks(vkl_backend_device *dev, vkl_compute_peaks *out);

#endif
