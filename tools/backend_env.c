/* VKL_VK_* environment variables -> backend options (backend_env.h). */
#include <stdlib.h>
#include <string.h>

#include "backend_env.h"
#include "profile.h"

static const char *env(const char *name) {
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* An unsigned number in [lo, hi] (0 stays "unset" for the options). */
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

static vkl_status env_flag(vkl_context *ctx, const char *name, int *out) {
    uint32_t x = 0;
    vkl_status st = env_uint(ctx, name, 0, 1, &x);
    if (!st && env(name)) *out = (int)x;
    return st;
}

/* One of names[] (its index), or the variable is unset. */
static vkl_status env_choice(vkl_context *ctx, const char *name, const char *const *names, int n, int *out) {
    const char *v = env(name);
    for (int i = 0; v && i < n; i++)
        if (!strcmp(v, names[i])) {
            *out = i;
            return VKL_OK;
        }
    if (!v) return VKL_OK;
    char list[160] = "";
    for (int i = 0; i < n; i++) {
        strncat(list, names[i], sizeof(list) - strlen(list) - 1);
        if (i + 1 < n) strncat(list, ", ", sizeof(list) - strlen(list) - 1);
    }
    return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "%s=%s: want one of %s", name, v, list);
}

/* VKL_VK_DISABLE: every kill switch by name, in one variable. */
static vkl_status env_disable(vkl_context *ctx, vkl_env_options *e) {
    static const struct { const char *name; uint32_t bit; } names[] = {
        {"fp16", VKL_FEATURE_FP16},     {"int8-dot", VKL_FEATURE_INT8_DOT}, {"coopmat", VKL_FEATURE_COOPMAT},
        {"fusion", VKL_FEATURE_FUSION}, {"priority", VKL_FEATURE_PRIORITY}, {"timestamps", VKL_FEATURE_TIMESTAMPS},
        {"subgroup-ops", 0},            {"f64", 0}};
    const char *v = env("VKL_VK_DISABLE");
    for (const char *p = v; p && *p;) {
        size_t n = strcspn(p, ",");
        size_t i = 0;
        while (i < sizeof(names) / sizeof(names[0]) && (strlen(names[i].name) != n || strncmp(p, names[i].name, n)))
            i++;
        if (i == sizeof(names) / sizeof(names[0]))
            return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT,
                            "VKL_VK_DISABLE=%s: '%.*s' is not one of fp16, int8-dot, coopmat, fusion, priority, "
                            "timestamps, subgroup-ops, f64",
                            v, (int)n, p);
        e->backend.disable_features |= names[i].bit;
#ifdef VKL_HAVE_VULKAN
        if (!strcmp(names[i].name, "subgroup-ops")) e->vulkan.no_subgroup_ops = true;
        if (!strcmp(names[i].name, "f64")) e->vulkan.no_f64 = true;
#endif
        p += n + (p[n] == ',');
    }
    return VKL_OK;
}

#ifdef VKL_HAVE_VULKAN
static vkl_status env_vulkan(vkl_context *ctx, vkl_vulkan_options *o) {
    static const char *const maths[] = {"default", "f32", "f16"};
    static const char *const priorities[] = {"low", "medium", "high", "realtime", "driver"};
    static const char *const attention[] = {"auto", "prefill", "decode"};
    int flag = 0, choice;
    uint32_t device = 0;
    vkl_status st = env_flag(ctx, "VKL_VK_VALIDATION", &flag);
    o->validation = flag;
    if (!st && env("VKL_VK_DEVICE") && !(st = env_uint(ctx, "VKL_VK_DEVICE", 0, 1u << 16, &device)))
        o->device_index = (int)device;
    choice = (int)o->priority;
    if (!st && !(st = env_choice(ctx, "VKL_VK_PRIORITY", priorities, 5, &choice))) o->priority = (vkl_vulkan_priority)choice;
    choice = (int)o->math;
    if (!st && !(st = env_choice(ctx, "VKL_VK_MATH", maths, 3, &choice))) o->math = (vkl_vulkan_math)choice;
    choice = (int)o->attention;
    if (!st && !(st = env_choice(ctx, "VKL_VK_ATTN", attention, 3, &choice))) o->attention = (vkl_vulkan_attention)choice;
    if (!st && env("VKL_VK_PIPELINE_CACHE_DIR")) o->pipeline_cache_dir = getenv("VKL_VK_PIPELINE_CACHE_DIR");
    if (!st && env("VKL_VK_PIPELINE_CACHE")) o->pipeline_cache_file = getenv("VKL_VK_PIPELINE_CACHE");
    flag = 0;
    if (!st && !(st = env_flag(ctx, "VKL_VK_NO_SUBGROUP_OPS", &flag))) o->no_subgroup_ops |= flag;
    flag = 0;
    if (!st && !(st = env_flag(ctx, "VKL_VK_NO_F64", &flag))) o->no_f64 |= flag;
    /* ranges are the backend's to check; these only parse */
    if (!st) st = env_uint(ctx, "VKL_VK_QMV_WG", 1, 1u << 16, &o->matvec_workgroup);
    if (!st) st = env_uint(ctx, "VKL_VK_QMV_ROWS", 1, 1u << 16, &o->matvec_rows);
    if (!st) st = env_flag(ctx, "VKL_VK_QMV_STAGE", &o->matvec_stage);
    if (!st) st = env_uint(ctx, "VKL_VK_QMV_UNROLL", 1, 1u << 16, &o->matvec_unroll);
    if (!st) st = env_flag(ctx, "VKL_VK_E0M4_F32", &o->matvec_e0m4_f32);
    if (!st) st = env_flag(ctx, "VKL_VK_F16_CENTER", &o->matvec_f16_center);
    if (!st) st = env_uint(ctx, "VKL_VK_ATTN_SPLITS", 0, 1u << 16, &o->attention_splits);
    if (!st) st = env_uint(ctx, "VKL_VK_ATTN_TARGET", 1, 1u << 16, &o->attention_target);
    return st;
}
#endif

vkl_status vkl_env_options_read(vkl_context *ctx, vkl_env_options *e) {
    memset(e, 0, sizeof(*e));
#ifdef VKL_HAVE_VULKAN
    vkl_vulkan_options_init(&e->vulkan);
    e->backend.vulkan = &e->vulkan;
    vkl_status st = env_vulkan(ctx, &e->vulkan);
    return st ? st : env_disable(ctx, e);
#else
    return env_disable(ctx, e);
#endif
}

static vkl_status env_model_load(vkl_context *ctx, const char *path, vkl_model_options *mo, bool profile,
                                 vkl_model **out) {
    *out = NULL;
    vkl_env_options e;
    vkl_status st = vkl_env_options_read(ctx, &e);
    if (st) return st;
    mo->disable_features |= e.backend.disable_features;
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
