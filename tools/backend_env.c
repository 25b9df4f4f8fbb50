/* VKL_VK_*, VKL_CPU_DISABLE and VKL_CPU_SLOW_WORKER environment variables -> backend options, VKL_DEVICE_SAMPLING
 * -> session options (backend_env.h). */
#include <stdlib.h>
#include <string.h>

#include "backend_env.h"
#include "profile.h"

static const char *env(const char *name) {
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* A variable's words and what each means. */
typedef struct env_name {
    const char *name;
    uint32_t value;
} env_name;

static vkl_status env_unknown(vkl_context *ctx, const char *var, const char *v, const char *word, size_t len,
                              const env_name *names, size_t n) {
    char list[200] = "";
    for (size_t i = 0; i < n; i++) {
        strncat(list, names[i].name, sizeof(list) - strlen(list) - 1);
        if (i + 1 < n) strncat(list, ", ", sizeof(list) - strlen(list) - 1);
    }
    return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "%s=%s: '%.*s' is not one of %s", var, v, (int)len, word, list);
}

/* The OR of the values of the comma-separated words in `var` into *bits. */
static vkl_status env_list(vkl_context *ctx, const char *var, const env_name *names, size_t n, uint32_t *bits) {
    const char *v = env(var);
    for (const char *p = v; p && *p;) {
        const size_t len = strcspn(p, ",");
        size_t i = 0;
        while (i < n && (strlen(names[i].name) != len || strncmp(p, names[i].name, len))) i++;
        if (i == n) return env_unknown(ctx, var, v, p, len, names, n);
        *bits |= names[i].value;
        p += len + (p[len] == ',');
    }
    return VKL_OK;
}

#define N_NAMES(a) (sizeof(a) / sizeof(a[0]))

/* VKL_VK_DISABLE: every Vulkan kill switch by name, in one variable; the
 * two that are not VKL_FEATURE_* bits go to the Vulkan options.
 * VKL_CPU_DISABLE: the cpu backend's instruction sets, and "balance" (the
 * threads' shares sized by speed), which is not an instruction set. */
#define OFF_SUBGROUP_OPS (1u << 30)
#define OFF_F64 (1u << 31)
#define OFF_BALANCE (1u << 29)

static vkl_status env_disable(vkl_context *ctx, vkl_env_options *e) {
    static const env_name vk[] = {
        {"fp16", VKL_FEATURE_FP16},     {"int8-dot", VKL_FEATURE_INT8_DOT}, {"coopmat", VKL_FEATURE_COOPMAT},
        {"fusion", VKL_FEATURE_FUSION}, {"priority", VKL_FEATURE_PRIORITY}, {"timestamps", VKL_FEATURE_TIMESTAMPS},
        {"subgroup-ops", OFF_SUBGROUP_OPS}, {"f64", OFF_F64}};
    static const env_name isa[] = {
        {"avx2", VKL_ISA_AVX2}, {"dotprod", VKL_ISA_DOTPROD}, {"i8mm", VKL_ISA_I8MM}, {"amx", VKL_ISA_AMX},
        {"avx512vnni", VKL_ISA_AVX512VNNI}, {"avxvnni", VKL_ISA_AVXVNNI}, {"balance", OFF_BALANCE}};
    uint32_t off = 0;
    vkl_status st = env_list(ctx, "VKL_VK_DISABLE", vk, N_NAMES(vk), &off);
    e->backend.disable_features |= off & ~(OFF_SUBGROUP_OPS | OFF_F64);
#ifdef VKL_HAVE_VULKAN
    if (off & OFF_SUBGROUP_OPS) e->vulkan.no_subgroup_ops = true;
    if (off & OFF_F64) e->vulkan.no_f64 = true;
#endif
    if (!st) st = env_list(ctx, "VKL_CPU_DISABLE", isa, N_NAMES(isa), &e->backend.disable_isa);
    e->backend.equal_shares = e->backend.disable_isa & OFF_BALANCE;
    e->backend.disable_isa &= ~OFF_BALANCE;
    return st;
}

/* VKL_CPU_SLOW_WORKER=i:factor: the cpu backend's thread i runs factor times
 * slower (engine/pool.h), a LITTLE core emulated; the pool checks i against
 * its threads and the factor's range. */
static vkl_status env_slow_worker(vkl_context *ctx, vkl_backend_options *o) {
    const char *v = env("VKL_CPU_SLOW_WORKER");
    if (!v) return VKL_OK;
    char *colon, *end = NULL;
    const unsigned long worker = strtoul(v, &colon, 10);
    const bool worker_ok = colon != v && v[0] != '-' && *colon == ':' && worker <= UINT32_MAX;
    const double factor = worker_ok ? strtod(colon + 1, &end) : 0;
    if (!worker_ok || end == colon + 1 || *end)
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT,
                        "VKL_CPU_SLOW_WORKER=%s: want WORKER:FACTOR, e.g. 1:3 (thread 1 three times slower)", v);
    o->slow_worker = (unsigned)worker;
    o->slow_factor = factor;
    return VKL_OK;
}

#ifdef VKL_HAVE_VULKAN
/* An unsigned number in [lo, hi] (0 stays "unset" for the options); like
 * the flags and choices below, only the Vulkan variables have one. */
static vkl_status env_uint(vkl_context *ctx, const char *name, uint32_t lo, uint32_t hi, uint32_t *out) {
    const char *v = env(name);
    if (!v) return VKL_OK;
    char *end;
    unsigned long x = strtoul(v, &end, 10);
    if (*end || v[0] == '-' || x < lo || x > hi)
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "%s=%s: want a number in %u..%u", name, v, lo, hi);
    *out = (uint32_t)x;
    return VKL_OK;
}

/* A byte count up to 2^62 (0 stays "unset"). */
static vkl_status env_bytes(vkl_context *ctx, const char *name, uint64_t *out) {
    const char *v = env(name);
    if (!v) return VKL_OK;
    char *end;
    unsigned long long x = strtoull(v, &end, 10);
    if (*end || v[0] == '-' || x > (1ull << 62))
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "%s=%s: want a number of bytes", name, v);
    *out = (uint64_t)x;
    return VKL_OK;
}

static vkl_status env_flag(vkl_context *ctx, const char *name, int *out) {
    uint32_t x = 0;
    vkl_status st = env_uint(ctx, name, 0, 1, &x);
    if (!st && env(name)) *out = (int)x;
    return st;
}

/* The value of the word in `var` (*out unchanged when unset). */
static vkl_status env_choice(vkl_context *ctx, const char *var, const env_name *names, size_t n, uint32_t *out) {
    const char *v = env(var);
    for (size_t i = 0; v && i < n; i++)
        if (!strcmp(v, names[i].name)) {
            *out = names[i].value;
            return VKL_OK;
        }
    return v ? env_unknown(ctx, var, v, v, strlen(v), names, n) : VKL_OK;
}

static vkl_status env_vulkan(vkl_context *ctx, vkl_vulkan_options *o) {
    static const env_name maths[] = {
        {"default", VKL_VULKAN_MATH_DEFAULT}, {"f32", VKL_VULKAN_MATH_F32}, {"f16", VKL_VULKAN_MATH_F16}};
    static const env_name matvecs[] = {
        {"default", VKL_VULKAN_MATVEC_DEFAULT}, {"float", VKL_VULKAN_MATVEC_FLOAT}, {"dot", VKL_VULKAN_MATVEC_DOT}};
    static const env_name priorities[] = {{"low", VKL_VULKAN_PRIORITY_LOW},
                                          {"medium", VKL_VULKAN_PRIORITY_MEDIUM},
                                          {"high", VKL_VULKAN_PRIORITY_HIGH},
                                          {"realtime", VKL_VULKAN_PRIORITY_REALTIME},
                                          {"driver", VKL_VULKAN_PRIORITY_DRIVER}};
    static const env_name attention[] = {{"auto", VKL_VULKAN_ATTENTION_AUTO},
                                         {"prefill", VKL_VULKAN_ATTENTION_PREFILL},
                                         {"decode", VKL_VULKAN_ATTENTION_DECODE},
                                         {"decode-wg", VKL_VULKAN_ATTENTION_DECODE_WG}};
    static const env_name prefills[] = {{"auto", VKL_VULKAN_ATTENTION_PREFILL_AUTO},
                                        {"coopmat", VKL_VULKAN_ATTENTION_PREFILL_COOPMAT},
                                        {"scalar", VKL_VULKAN_ATTENTION_PREFILL_SCALAR},
                                        {"emulated", VKL_VULKAN_ATTENTION_PREFILL_EMULATED}};
    int flag = 0;
    uint32_t choice;
    uint32_t device = 0;
    vkl_status st = env_flag(ctx, "VKL_VK_VALIDATION", &flag);
    o->validation = flag;
    if (!st && env("VKL_VK_DEVICE") && !(st = env_uint(ctx, "VKL_VK_DEVICE", 0, 1u << 16, &device)))
        o->device_index = (int)device;
    choice = (uint32_t)o->priority;
    if (!st && !(st = env_choice(ctx, "VKL_VK_PRIORITY", priorities, N_NAMES(priorities), &choice)))
        o->priority = (vkl_vulkan_priority)choice;
    choice = (uint32_t)o->math;
    if (!st && !(st = env_choice(ctx, "VKL_VK_MATH", maths, N_NAMES(maths), &choice))) o->math = (vkl_vulkan_math)choice;
    choice = (uint32_t)o->matvec;
    if (!st && !(st = env_choice(ctx, "VKL_VK_MATVEC", matvecs, N_NAMES(matvecs), &choice)))
        o->matvec = (vkl_vulkan_matvec)choice;
    choice = (uint32_t)o->attention;
    if (!st && !(st = env_choice(ctx, "VKL_VK_ATTN", attention, N_NAMES(attention), &choice)))
        o->attention = (vkl_vulkan_attention)choice;
    choice = (uint32_t)o->attention_prefill;
    if (!st && !(st = env_choice(ctx, "VKL_VK_ATTN_PREFILL", prefills, N_NAMES(prefills), &choice)))
        o->attention_prefill = (vkl_vulkan_attention_prefill)choice;
    if (!st && env("VKL_VK_PIPELINE_CACHE_DIR")) o->pipeline_cache_dir = getenv("VKL_VK_PIPELINE_CACHE_DIR");
    if (!st && env("VKL_VK_PIPELINE_CACHE")) o->pipeline_cache_file = getenv("VKL_VK_PIPELINE_CACHE");
    flag = 0;
    if (!st && !(st = env_flag(ctx, "VKL_VK_PIPELINE_STATS", &flag))) o->pipeline_stats |= flag;
    flag = 0;
    if (!st && !(st = env_flag(ctx, "VKL_VK_NO_SUBGROUP_OPS", &flag))) o->no_subgroup_ops |= flag;
    flag = 0;
    if (!st && !(st = env_flag(ctx, "VKL_VK_NO_F64", &flag))) o->no_f64 |= flag;
    flag = 0;
    if (!st && !(st = env_flag(ctx, "VKL_VK_NO_FUSE", &flag))) o->no_fusion |= flag;
    static const env_name fusions[] = {{"add", VKL_VULKAN_FUSE_ADD},
                                       {"glu", VKL_VULKAN_FUSE_GLU},
                                       {"rope-kv", VKL_VULKAN_FUSE_ROPE_KV},
                                       {"qkv", VKL_VULKAN_FUSE_QKV},
                                       {"norm-codes", VKL_VULKAN_FUSE_NORM_CODES},
                                       {"glu-codes", VKL_VULKAN_FUSE_GLU_CODES},
                                       {"attn-codes", VKL_VULKAN_FUSE_ATTN_CODES},
                                       {"gemm", VKL_VULKAN_FUSE_GEMM}};
    if (!st) st = env_list(ctx, "VKL_VK_FUSE_OFF", fusions, N_NAMES(fusions), &o->fusions_off);
    flag = 0;
    if (!st && !(st = env_flag(ctx, "VKL_VK_GEMM_CM_EMULATE", &flag))) o->gemm_coopmat_emulate |= flag;
    /* ranges are the backend's to check; these only parse */
    if (!st) st = env_uint(ctx, "VKL_VK_QMV_WG", 1, 1u << 16, &o->matvec_workgroup);
    if (!st) st = env_uint(ctx, "VKL_VK_QMV_ROWS", 1, 1u << 16, &o->matvec_rows);
    if (!st) st = env_flag(ctx, "VKL_VK_QMV_STAGE", &o->matvec_stage);
    if (!st) st = env_uint(ctx, "VKL_VK_QMV_UNROLL", 1, 1u << 16, &o->matvec_unroll);
    if (!st) st = env_uint(ctx, "VKL_VK_QMV_TEAM", 1, 1u << 16, &o->matvec_team);
    if (!st) st = env_flag(ctx, "VKL_VK_E0M4_F32", &o->matvec_e0m4_f32);
    if (!st) st = env_flag(ctx, "VKL_VK_F16_CENTER", &o->matvec_f16_center);
    if (!st) st = env_flag(ctx, "VKL_VK_DOT_RESIDUAL", &o->matvec_dot_residual);
    if (!st) st = env_uint(ctx, "VKL_VK_GEMM_MIN_ROWS", 1, UINT32_MAX, &o->gemm_min_rows);
    if (!st) st = env_uint(ctx, "VKL_VK_GEMM_TM", 1, 1u << 16, &o->gemm_tile_m);
    if (!st) st = env_uint(ctx, "VKL_VK_GEMM_TN", 1, 1u << 16, &o->gemm_tile_n);
    if (!st) st = env_uint(ctx, "VKL_VK_GEMM_BK", 1, 1u << 16, &o->gemm_step_k);
    if (!st) st = env_uint(ctx, "VKL_VK_GEMM_SPLIT", 1, 1u << 16, &o->gemm_split_k);
    if (!st) st = env_uint(ctx, "VKL_VK_GEMM_TARGET", 1, 1u << 16, &o->gemm_target);
    if (!st) st = env_uint(ctx, "VKL_VK_GEMM_SGM", 1, 1u << 16, &o->gemm_subgroups_m);
    if (!st) st = env_uint(ctx, "VKL_VK_GEMM_SGN", 1, 1u << 16, &o->gemm_subgroups_n);
    if (!st) st = env_uint(ctx, "VKL_VK_ATTN_SPLITS", 0, 1u << 16, &o->attention_splits);
    if (!st) st = env_uint(ctx, "VKL_VK_ATTN_TARGET", 1, 1u << 16, &o->attention_target);
    if (!st) st = env_flag(ctx, "VKL_VK_ATTN_FOLD", &o->attention_fold);
    if (!st) st = env_uint(ctx, "VKL_VK_ATTN_SG_FROM", 1, 1u << 30, &o->attention_sg_from);
    uint32_t wg_fold = 0; /* 0, 1 (to 64 chunks) or 2 (to 16) */
    if (!st && env("VKL_VK_ATTN_WG_FOLD") && !(st = env_uint(ctx, "VKL_VK_ATTN_WG_FOLD", 0, 2, &wg_fold)))
        o->attention_wg_fold = (int)wg_fold;
    if (!st) st = env_uint(ctx, "VKL_VK_ATTN_WG_VB", 1, 1u << 16, &o->attention_wg_vb);
    if (!st) st = env_uint(ctx, "VKL_VK_ATTN_WG_PARTS", 1, 1u << 16, &o->attention_wg_parts);
    if (!st) st = env_uint(ctx, "VKL_VK_ATTN_WG_SIZE", 1, 1u << 16, &o->attention_wg_size);
    uint32_t preload = 0;
    if (!st && env("VKL_VK_ATTN_WG_PRELOAD") && !(st = env_uint(ctx, "VKL_VK_ATTN_WG_PRELOAD", 0, 3, &preload)))
        o->attention_wg_preload = (int)preload;
    if (!st) st = env_uint(ctx, "VKL_VK_ATTN_ROWS", 1, 1u << 16, &o->attention_rows);
    if (!st) st = env_uint(ctx, "VKL_VK_ATTN_KEYS", 1, 1u << 16, &o->attention_keys);
    if (!st) st = env_bytes(ctx, "VKL_VK_MAX_BINDING_BYTES", &o->max_binding_bytes);
    if (!st) st = env_bytes(ctx, "VKL_VK_MEMORY_BUDGET", &o->memory_budget_bytes);
    return st;
}
#endif

vkl_status vkl_env_options_read(vkl_context *ctx, vkl_env_options *e) {
    memset(e, 0, sizeof(*e));
#ifdef VKL_HAVE_VULKAN
    vkl_vulkan_options_init(&e->vulkan);
    e->backend.vulkan = &e->vulkan;
    vkl_status st = env_vulkan(ctx, &e->vulkan);
    if (!st) st = env_disable(ctx, e);
#else
    vkl_status st = env_disable(ctx, e);
#endif
    return st ? st : env_slow_worker(ctx, &e->backend);
}

vkl_status vkl_env_session_options(vkl_context *ctx, vkl_session_options *so) {
    const char *v = env("VKL_DEVICE_SAMPLING");
    if (!v || !strcmp(v, "1")) return VKL_OK;
    if (strcmp(v, "0"))
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "VKL_DEVICE_SAMPLING=%s: 0 (sample on the host) or 1 expected",
                        v);
    so->host_sampling = 1;
    return VKL_OK;
}

static vkl_status env_model_load(vkl_context *ctx, const char *path, vkl_model_options *mo, bool profile,
                                 vkl_model **out) {
    *out = NULL;
    vkl_env_options e;
    vkl_status st = vkl_env_options_read(ctx, &e);
    if (st) return st;
    mo->disable_features |= e.backend.disable_features;
    mo->disable_isa |= e.backend.disable_isa;
    mo->equal_shares |= e.backend.equal_shares;
    if (e.backend.slow_factor != 0) {
        mo->slow_worker = e.backend.slow_worker;
        mo->slow_factor = e.backend.slow_factor;
    }
    if (!mo->vulkan) mo->vulkan = e.backend.vulkan;
    st = profile ? vkl_model_load_profiled(ctx, path, mo, out) : vkl_model_load(ctx, path, mo, out);
    if (mo->vulkan == e.backend.vulkan) mo->vulkan = NULL; /* e ends here */
    return st;
}

vkl_status vkl_env_model_load(vkl_context *ctx, const char *path, vkl_model_options *mo, vkl_model **out) {
    return env_model_load(ctx, path, mo, false, out);
}

vkl_status vkl_env_model_load_profiled(vkl_context *ctx, const char *path, vkl_model_options *mo, vkl_model **out) {
    return env_model_load(ctx, path, mo, true, out);
}

void vkl_env_set_device(vkl_env_options *e, int index) {
#ifdef VKL_HAVE_VULKAN
    e->vulkan.device_index = index;
#else
    (void)e, (void)index;
#endif
}

void vkl_env_set_f16_math(vkl_env_options *e, bool f16) {
#ifdef VKL_HAVE_VULKAN
    e->vulkan.math = f16 ? VKL_VULKAN_MATH_F16 : VKL_VULKAN_MATH_F32;
#else
    (void)e, (void)f16;
#endif
}

void vkl_env_set_matvec_dot(vkl_env_options *e, bool dot, bool residual) {
#ifdef VKL_HAVE_VULKAN
    e->vulkan.matvec = dot ? VKL_VULKAN_MATVEC_DOT : VKL_VULKAN_MATVEC_FLOAT;
    e->vulkan.matvec_dot_residual = residual;
#else
    (void)e, (void)dot, (void)residual;
#endif
}
