/* The Vulkan backend as tests and tools see it beside the vtable: the
 * vtable itself (also listed in backends/registry.c) and what has no place
 * in the backend contract. Nothing in engine/ includes this. */
#ifndef VKL_VULKAN_BACKEND_H
#define VKL_VULKAN_BACKEND_H

#include "../../engine/backend.h"

extern const vkl_backend_vtable vkl_backend_vulkan;

/* Dequantize canonical blocks W [rows, cols] (Q_E0M4 / Q_INT4 / Q_INT8,
 * groups of `group` along cols) on the device: packed with engine/quant's
 * GPU packer, decoded by the quant_dequant_* shaders with the same decode
 * the matvecs use, read back as rows * cols f32 into out. 4-bit values are
 * exact, so they must equal engine/quant's vkl_quant_dequantize bit for
 * bit. A device handle from vkl_backend_vulkan.open; reports to ctx, and may
 * run beside vtable calls on other threads as they do. */
vkl_status vkl_vk_dequantize(vkl_backend_device *dev, vkl_context *ctx, vkl_dtype dtype, uint32_t group, int64_t rows,
                             int64_t cols, const void *canon, size_t canon_bytes, float *out);

/* Validation warnings and errors seen so far on this device (0 unless
 * VKL_VK_VALIDATION=1). Each also fails the vtable call it happened in and
 * is logged through the context at VKL_LOG_WARN / VKL_LOG_ERROR as
 * "vulkan validation: ...". */
uint32_t vkl_vk_validation_messages(const vkl_backend_device *dev);

/* True when the QuantMatMul matvecs of this device compute in fp16 (the
 * _f16 shaders), false for f32. Decided at open: fp16 iff the device has
 * shaderFloat16, VKL_FEATURE_FP16 is not disabled in the options, and
 * VKL_VK_MATH=f16 (f32 is the default; VKL_VK_MATH=f32 forces it). */
bool vkl_vk_f16_math(const vkl_backend_device *dev);

/* True when the QuantMatMul matvecs of this device run the _dot shaders
 * (int8 activations, packed integer dot products; docs/vulkan.md, "Integer
 * dot products"). Decided at open: iff VKL_FEATURE_INT8_DOT is in caps and
 * VKL_VK_MATVEC=dot, or it is unset (default) and the driver reports the
 * 4 x 8-bit dot products accelerated; VKL_VK_MATVEC=float forces false. */
bool vkl_vk_matvec_dot(const vkl_backend_device *dev);

/* The QuantMatMul matvec this device runs, in words, into buf: the float
 * build's shape, or the integer-dot build's ("integer dot, two int8 terms:
 * workgroups of 64 in teams of 32 (one subgroup: subgroupAdd), 4 rows a
 * team, 2 steps a lane in flight"). For tests and vkbench. */
void vkl_vk_matvec_describe(const vkl_backend_device *dev, char *buf, size_t cap);

/* Which prefill attention kernel this device runs where a node allows
 * both (float K and V, no f64; vk_attention.c): 1 attn_prefill_cm.comp on
 * the matrix units, 2 its emulated build, 0 attn_prefill.comp (f32).
 * Decided at open from VKL_VK_ATTN_PREFILL (options.attention_prefill):
 * by default 1 where VK_NV_cooperative_matrix has the 16x16x16 fp16 shape,
 * neither coopmat nor fp16 is disabled and VKL_VK_MATH is not f32. */
int vkl_vk_attention_coopmat(const vkl_backend_device *dev);

/* Which QuantMatMul GEMM (prefill) this device runs, in words, into buf:
 * "cooperative matrix (NV) 16x16x16 fp16 -> f32, ..." or "tiled f32, ...".
 * Decided at open (backends/vulkan/vk_gemm_tuning.c): the cooperative-matrix
 * build where VK_NV_cooperative_matrix is usable, neither coopmat nor fp16
 * is disabled and VKL_VK_MATH is not f32; else the tiled build in the
 * matvecs' arithmetic. */
void vkl_vk_gemm_describe(const vkl_backend_device *dev, char *buf, size_t cap);

/* What an executable of this backend recorded: compute dispatches, the
 * barriers between them, and the nodes whose work another node's fused
 * dispatch does (backends/vulkan/vk_fuse.c; 0 with VKL_VK_NO_FUSE=1). For
 * tests and tools that prepare through the vtable. */
typedef struct vkl_vk_exec_stats {
    uint32_t dispatches, barriers, fused;
    uint32_t rope_kv; /* of the dispatches, fused RoPE + KvAppend ones (one per attention layer at most) */
    uint32_t qkv;     /* of the dispatches, fused Q/K/V matvecs (two or three QuantMatMuls of one A each) */
    uint32_t rope_kv_all; /* of the rope_kv ones, those doing their layer's KvAppend(V) and RoPE(Q) too */
    uint32_t glu_codes; /* of the dispatches, fused gate/up matvecs that write their readers' int8 codes */
    uint32_t attn_codes; /* of the nodes, decode Attentions writing their readers' int8 codes (ATTN_CODES) */
} vkl_vk_exec_stats;
void vkl_vk_exec_stats_get(const vkl_backend_exec *e, vkl_vk_exec_stats *out);

/* Host work this device has done since open, counted at each call: the
 * per-step budget a decode step must keep (tests/vulkan/test_vk_model.c:
 * no allocations, recordings, pipelines or descriptor writes; one submit and
 * one wait). Staged transfers count their submits and waits too. */
typedef struct vkl_vk_host_work {
    uint64_t allocations;       /* vkAllocateMemory */
    uint64_t recordings;        /* vkBeginCommandBuffer */
    uint64_t pipelines;         /* vkCreateComputePipelines */
    uint64_t descriptor_writes; /* vkUpdateDescriptorSets calls */
    uint64_t submits;           /* vkQueueSubmit */
    uint64_t waits;             /* vkWaitForFences */
    /* Bytes read back from device memory: executables' downloads (at each
     * execute) and buffer_read of any buffer but a readback one (whose bytes
     * a download already counted): what a decode step costs the host. */
    uint64_t downloaded;
} vkl_vk_host_work;
void vkl_vk_get_host_work(const vkl_backend_device *dev, vkl_vk_host_work *out);

#endif
