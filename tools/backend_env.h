/* The VKL_VK_*, VKL_CPU_DISABLE and VKL_CPU_SLOW_WORKER environment variables as backend options (and
 * VKL_DEVICE_SAMPLING as a session option), for the command
 * line tools and the tests. The library reads no environment (vkllm_vulkan.h);
 * a user who wants a knob without writing code sets one of these, and the
 * tools map it here. docs/vulkan.md lists them. */
#ifndef VKL_BACKEND_ENV_H
#define VKL_BACKEND_ENV_H

#include "backend.h"
#include "context.h"
#ifdef VKL_HAVE_VULKAN
#include "vkllm_vulkan.h"
#endif

typedef struct vkl_env_options {
    /* Points into this struct: read in place, never copied. */
    vkl_backend_options backend;
#ifdef VKL_HAVE_VULKAN
    vkl_vulkan_options vulkan;
#endif
} vkl_env_options;

/* Defaults, then the environment: VKL_VK_DISABLE (comma list: fp16,
 * int8-dot, coopmat, fusion, priority, timestamps, subgroup-ops, f64),
 * VKL_VK_VALIDATION, VKL_VK_DEVICE, VKL_VK_PRIORITY, VKL_VK_MATH, VKL_VK_MATVEC (default, float, dot),
 * VKL_VK_PIPELINE_CACHE_DIR, VKL_VK_PIPELINE_CACHE (a file), VKL_VK_NO_SUBGROUP_OPS, VKL_VK_NO_F64, the
 * matvec tuning (VKL_VK_QMV_WG, _ROWS, _STAGE, _UNROLL, _TEAM, VKL_VK_E0M4_F32,
 * VKL_VK_F16_CENTER, VKL_VK_DOT_RESIDUAL), attention (VKL_VK_ATTN, _SPLITS, _TARGET, _FOLD, _SG_FROM,
 * the workgroup decode kernel's _WG_FOLD, _WG_VB, _WG_PARTS, _WG_PRELOAD, _WG_SIZE, and
 * VKL_VK_ATTN_PREFILL: auto, coopmat, scalar, emulated) and the
 * limits' testing knobs (VKL_VK_MAX_BINDING_BYTES, VKL_VK_MEMORY_BUDGET); for the
 * cpu backend VKL_CPU_DISABLE (comma list: avx2, dotprod, i8mm, amx -> disable_isa; balance ->
 * equal_shares) and VKL_CPU_SLOW_WORKER (WORKER:FACTOR -> slow_worker, slow_factor). A
 * malformed value is VKL_ERR_INVALID_ARGUMENT naming the variable. */
vkl_status vkl_env_options_read(vkl_context *ctx, vkl_env_options *out);

/* Device index (-1: the best), matvec math and integer-dot matvecs (dot:
 * forced, with or without the residual term; else float) of the Vulkan
 * options, for vkbench's sweeps; nothing without Vulkan. */
void vkl_env_set_device(vkl_env_options *e, int index);
void vkl_env_set_f16_math(vkl_env_options *e, bool f16);
void vkl_env_set_matvec_dot(vkl_env_options *e, bool dot, bool residual);

/* VKL_DEVICE_SAMPLING=0 -> so->host_sampling = 1 (the kill switch of greedy
 * sampling on the device; 1 or unset: the library's choice). Another value
 * is VKL_ERR_INVALID_ARGUMENT naming the variable. */
vkl_status vkl_env_session_options(vkl_context *ctx, vkl_session_options *so);

/* vkl_model_load with the environment's backend options added to mo's. */
vkl_status vkl_env_model_load(vkl_context *ctx, const char *path, vkl_model_options *mo, vkl_model **out);
/* The same with per-node timestamps (engine/profile.h), for vkbench --profile. */
vkl_status vkl_env_model_load_profiled(vkl_context *ctx, const char *path, vkl_model_options *mo, vkl_model **out);

#endif
