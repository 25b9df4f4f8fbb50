/* vkllm on Vulkan: every knob of the Vulkan backend as an option, and the
 * contract for running on an app's own VkDevice (a game, a camera or AR app
 * that already renders with Vulkan and wants an LLM on the same GPU).
 *
 *   vkl_vulkan_options vk;
 *   vkl_vulkan_options_init(&vk);
 *   vk.external = &my_device;          (optional: see vkl_vulkan_external)
 *   vkl_model_options mo;
 *   vkl_model_options_init(&mo);
 *   mo.backend = "vulkan";
 *   mo.vulkan = &vk;
 *   vkl_model_load(ctx, "model.vkm", &mo, &model);
 *
 * The library reads no environment variable for any of this; the vkllm and
 * vkbench tools map VKL_VK_* variables onto these options for users who want
 * them (docs/vulkan.md lists them). docs/vulkan.md, "Embedding vkllm in a
 * Vulkan app", walks through the contract step by step. */
#ifndef VKLLM_VULKAN_H
#define VKLLM_VULKAN_H

#include <stdbool.h>
#include <stdint.h>
#include <vulkan/vulkan_core.h>

#include "vkllm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The app's device, borrowed for the model's lifetime.
 *
 * What vkllm then does, and does not do:
 *  - it creates no instance and no device; it loads the functions it needs
 *    through get_instance_proc_addr (no process-global function pointers),
 *  - it submits only to (queue_family, queue_index), never calls
 *    vkDeviceWaitIdle or vkQueueWaitIdle, and waits only for its own fences,
 *  - it creates and destroys only its own objects (buffers, memory,
 *    pipelines, command pools, fences); vkl_model_free leaves the device as
 *    it found it, once the model's own work has finished,
 *  - it uses only the features and extensions the app enabled (listed here),
 *    never what the physical device merely offers,
 *  - where the app submits to the same queue from other threads, it brackets
 *    each vkQueueSubmit with queue_lock / queue_unlock (Vulkan requires
 *    external synchronization of a queue).
 * The app must keep every handle valid until vkl_model_free returns. */
typedef struct vkl_vulkan_external {
    PFN_vkGetInstanceProcAddr get_instance_proc_addr; /* required: the loader's or the app's */
    VkInstance instance;                 /* required */
    uint32_t api_version;                /* VkApplicationInfo.apiVersion the instance was made with (>= 1.1) */
    VkPhysicalDevice physical_device;    /* required */
    VkDevice device;                     /* required */
    uint32_t queue_family;               /* a family with VK_QUEUE_COMPUTE_BIT */
    uint32_t queue_index;                /* a queue the app created in that family (Vulkan cannot tell
                                            vkllm how many it created: only the family's count is checked) */
    /* The chain the app passed to vkCreateDevice as pNext (a
     * VkPhysicalDeviceFeatures2, possibly followed by
     * VkPhysicalDeviceVulkan12Features or
     * VkPhysicalDeviceShaderFloat16Int8Features, and for the integer-dot
     * matvecs VkPhysicalDeviceVulkan13Features or
     * VkPhysicalDeviceShaderIntegerDotProductFeatures with
     * shaderIntegerDotProduct), or NULL when it passed
     * pEnabledFeatures instead (then enabled_core_features) or none. */
    const void *enabled_features_chain;
    const VkPhysicalDeviceFeatures *enabled_core_features; /* or NULL */
    /* The device extensions the app enabled. */
    const char *const *enabled_extensions;
    uint32_t enabled_extension_count;
    /* Optional, both or neither: the app's lock for the queue. */
    void (*queue_lock)(void *user);
    void (*queue_unlock)(void *user);
    void *queue_lock_user;
} vkl_vulkan_external;

/* Global queue priority (VK_KHR_global_priority / VK_EXT_global_priority)
 * of the queue vkllm creates on its own device. LOW keeps an app's
 * rendering smooth while the model runs (Transformer-Lite's fix for UI lag);
 * where the driver does not grant a priority, vkllm says so in its log and
 * runs at the default. On an app's device the app chose the priority. */
typedef enum vkl_vulkan_priority {
    VKL_VULKAN_PRIORITY_LOW = 0, /* the default */
    VKL_VULKAN_PRIORITY_MEDIUM,
    VKL_VULKAN_PRIORITY_HIGH,
    VKL_VULKAN_PRIORITY_REALTIME,
    VKL_VULKAN_PRIORITY_DRIVER   /* ask for nothing: the driver's default */
} vkl_vulkan_priority;

/* The matvecs' arithmetic (docs/vulkan.md says why f32 is the default). */
typedef enum vkl_vulkan_math {
    VKL_VULKAN_MATH_DEFAULT = 0, /* f32 */
    VKL_VULKAN_MATH_F32,
    VKL_VULKAN_MATH_F16          /* needs shaderFloat16 (VKL_FEATURE_FP16); the model fails to load without */
} vkl_vulkan_math;

/* The decode matvec's products (docs/vulkan.md, "Integer dot products"). */
typedef enum vkl_vulkan_matvec {
    VKL_VULKAN_MATVEC_DEFAULT = 0, /* DOT where the device accelerates 4 x 8-bit dot products, else FLOAT */
    VKL_VULKAN_MATVEC_FLOAT,       /* float activations, the math option's arithmetic */
    VKL_VULKAN_MATVEC_DOT          /* int8 activations (per 32 or 16), packed integer dot products; needs
                                    * shaderIntegerDotProduct (VKL_FEATURE_INT8_DOT); the model fails to load
                                    * without */
} vkl_vulkan_matvec;

/* Which attention kernel runs. */
typedef enum vkl_vulkan_attention {
    VKL_VULKAN_ATTENTION_AUTO = 0, /* by the number of query rows */
    VKL_VULKAN_ATTENTION_PREFILL,  /* the flash (prefill) kernel always */
    VKL_VULKAN_ATTENTION_DECODE,   /* split-K decoding wherever it applies */
    VKL_VULKAN_ATTENTION_DECODE_WG /* the same with the workgroup-barrier kernel, never the subgroup one */
} vkl_vulkan_attention;

/* Which prefill (flash) attention kernel runs where the node allows both. */
typedef enum vkl_vulkan_attention_prefill {
    VKL_VULKAN_ATTENTION_PREFILL_AUTO = 0, /* the faster on this device: scalar for now (the cooperative-matrix
                                            * one measured slower on an H200; docs/vulkan.md) */
    VKL_VULKAN_ATTENTION_PREFILL_COOPMAT,  /* the cooperative-matrix one; opening fails on a device without */
    VKL_VULKAN_ATTENTION_PREFILL_SCALAR,   /* the f32 one (attn_prefill.comp) always */
    VKL_VULKAN_ATTENTION_PREFILL_EMULATED  /* for tests: the cooperative-matrix body with its fragments in
                                            * plain f32 arithmetic, on any device */
} vkl_vulkan_attention_prefill;

/* The fusion patterns of docs/vulkan.md, "Fusion", one bit each. */
enum {
    VKL_VULKAN_FUSE_ADD = 1u << 0,        /* QuantMatMul + Add */
    VKL_VULKAN_FUSE_GLU = 1u << 1,        /* gate/up QuantMatMuls + SiluMul */
    VKL_VULKAN_FUSE_ROPE_KV = 1u << 2,    /* RoPE + KvAppend */
    VKL_VULKAN_FUSE_QKV = 1u << 3,        /* Q/K/V QuantMatMuls of one A */
    VKL_VULKAN_FUSE_NORM_CODES = 1u << 4, /* an RMSNorm writing its readers' int8 codes */
    VKL_VULKAN_FUSE_GLU_CODES = 1u << 5,  /* the gate/up matvec writing the down projection's codes */
    VKL_VULKAN_FUSE_ATTN_CODES = 1u << 6, /* the decode Attention writing the o_proj's codes */
    VKL_VULKAN_FUSE_GEMM = 1u << 7,       /* the Add and Q/K/V patterns on the prefill GEMM too */
};

typedef struct vkl_vulkan_options {
    /* The app's device, or NULL: vkllm creates its own instance and device. */
    const vkl_vulkan_external *external;
    /* Own device only. Which physical device: device_uuid when set (the
     * VkPhysicalDeviceIDProperties.deviceUUID to match), else device_index
     * (>= 0: that one in the loader's order), else the best type (discrete >
     * integrated > virtual > cpu). */
    bool use_device_uuid;
    uint8_t device_uuid[VK_UUID_SIZE];
    int device_index;              /* -1 (init): the best */
    vkl_vulkan_priority priority;  /* LOW (init) */
    /* The Khronos validation layer on vkllm's own instance; every message
     * it reports fails the call in progress. For tests and bug reports. */
    bool validation;
    /* Each pipeline's statistics as the driver compiled it (registers,
     * shared memory, instructions: VK_KHR_pipeline_executable_properties,
     * own device only), logged at VKL_LOG_INFO as it is made. For tuning:
     * a driver may skip its pipeline cache for these. */
    bool pipeline_stats;
    /* Directory of the pipeline cache file (one per device, driver and vkllm
     * build, written atomically at close). NULL (init): $XDG_CACHE_HOME/vkllm
     * or ~/.cache/vkllm; "": no cache on disk. */
    const char *pipeline_cache_dir;
    /* Or this file, ahead of the directory: a file the user named, read
     * only if it is a vkllm pipeline cache and replaced only then (a FIFO,
     * device, directory or other file is left alone, with a warning). */
    const char *pipeline_cache_file;
    /* Kill switches beyond vkl_model_options.disable_features, for drivers
     * whose subgroup arithmetic or f64 support is suspect: the kernels then
     * use shared-memory reductions / refuse f64 tensors. */
    bool no_subgroup_ops;
    bool no_f64;
    /* Fused dispatches off (docs/vulkan.md, "Fusion"): every node recorded
     * on its own, as with VKL_FEATURE_FUSION in disable_features. */
    bool no_fusion;
    /* Or some patterns off, an OR of these (VKL_VK_FUSE_OFF=add,glu,...):
     * to time each pattern's gain, or to step around one on a driver. */
    uint32_t fusions_off;
    vkl_vulkan_math math;
    vkl_vulkan_matvec matvec;
    /* Tuning for a new device; 0 (init) is the backend's choice for the
     * probed device (docs/vulkan.md, "Tuning"). */
    uint32_t matvec_workgroup;     /* invocations per matvec workgroup, a power of two >= 32 */
    uint32_t matvec_rows;          /* output rows per workgroup, 1..16 */
    int matvec_stage;              /* -1 (init): by device; 0: no; 1: activations staged in shared memory */
    uint32_t matvec_unroll;        /* K steps per invocation, 1..4 */
    uint32_t matvec_team;          /* integer-dot matvec: invocations splitting one row group's K, a power of
                                    * two (0: the subgroup where its size is fixed, else the workgroup) */
    int matvec_e0m4_f32;           /* -1 (init): by device; 1: E0M4 codes built as f32 (f32 math) */
    int matvec_f16_center;         /* -1 (init): by device; 1: 4-bit codes centered before fp16 products */
    int matvec_dot_residual;       /* -1 (init): by device; 1: the dot matvecs' activations as two int8 terms */
    uint32_t gemm_min_rows;        /* rows of A from which QuantMatMul runs the GEMM, not the matvec */
    uint32_t gemm_tile_m;          /* tiled GEMM: outputs per invocation along M, 1..16 */
    uint32_t gemm_tile_n;          /* and along N, 1..16 */
    uint32_t gemm_step_k;          /* cooperative-matrix GEMM: codes per K step, 32, 64 or 128 */
    uint32_t gemm_subgroups_m;     /* and its subgroups per workgroup along M, 1..8 */
    uint32_t gemm_subgroups_n;     /* and along N, 1..8 */
    uint32_t gemm_split_k;         /* and its K slices, 1..16 (0: from gemm_target) */
    uint32_t gemm_target;          /* tiles below which it sums K in 2 slices (0: by device; 1: never) */
    vkl_vulkan_attention attention;
    uint32_t attention_splits;     /* split-K pieces of a decode step, 0: from the KV length */
    uint32_t attention_target;     /* workgroups a decode step aims at, 0: by device type */
    uint32_t attention_sg_from;    /* AUTO: keys from which the subgroup decode kernel replaces the workgroup
                                    * one (0: by device; 1: wherever it runs) */
    int attention_fold;            /* -1 (init): by device; 1: the subgroup decode kernel merges its own
                                    * chunks (no combine dispatch); 0: it never does */
    /* The workgroup decode kernel (attn_decode.comp; docs/vulkan.md, "Decode
     * attention latency"): */
    int attention_wg_fold;         /* -1 (init), 0: a combine dispatch; 1: its chunks' last workgroup merges
                                    * them, up to 64 chunks; 2: where at most 16 (one round of loads) */
    uint32_t attention_wg_vb;      /* V rows an invocation loads at once, 1..64 (0: 8) */
    uint32_t attention_wg_parts;   /* strips of a row's max and sum, a power of two 1..64 (0: 8; 1: serial) */
    uint32_t attention_wg_size;    /* invocations a workgroup, a power of two >= 64 (0: 128): more key lanes
                                    * for V, halved where their sums overflow shared memory */
    int attention_wg_preload;      /* loads issued before they are needed, a mask: 1 V (before the scores),
                                    * 2 K (before the barrier ahead of them; D <= 128); -1 (init): none */
    uint32_t attention_rows;       /* prefill attention: query rows per workgroup, a power of two 1..64 */
    uint32_t attention_keys;       /* and keys per shared-memory tile, a power of two 4..128 */
    vkl_vulkan_attention_prefill attention_prefill;
    /* Limits, lowered for tests (docs/vulkan.md, "Limits"); 0 (init): the
     * device's own. max_binding_bytes: a binding limit below
     * maxStorageBufferRange (at least 4096), so that small models exercise
     * weights and tensors stored and bound in pieces. memory_budget_bytes: a
     * budget below the heap's, so that a model or session that does not fit
     * fails at load, saying so. */
    uint64_t max_binding_bytes;
    uint64_t memory_budget_bytes;
    /* For tests: the cooperative-matrix GEMM's body with its fragments in
     * plain f32 arithmetic (the _cmemu shaders), on a device with fp16 math
     * (math = F16), with or without cooperative matrices, so that a device
     * without them checks the rest of that kernel (docs/vulkan.md, "Prefill:
     * the quantized GEMM"). */
    bool gemm_coopmat_emulate;
} vkl_vulkan_options;

/* Defaults: own device, the best one, LOW priority, no validation, the
 * default cache directory, nothing turned off, the device's tuning. */
VKLLM_API void vkl_vulkan_options_init(vkl_vulkan_options *options);

#ifdef __cplusplus
}
#endif

#endif
