/* vkl_context: allocator hook, leveled logging and the per-context error
 * message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"

static void *libc_malloc(void *user, size_t size) {
    (void)user;
    return malloc(size);
}
static void *libc_realloc(void *user, void *ptr, size_t size) {
    (void)user;
    return realloc(ptr, size);
}
static void libc_free(void *user, void *ptr) {
    (void)user;
    free(ptr);
}

const char *vkl_status_name(vkl_status s) {
    switch (s) {
    case VKL_OK: return "VKL_OK";
    case VKL_ERR_INVALID_ARGUMENT: return "VKL_ERR_INVALID_ARGUMENT";
    case VKL_ERR_OUT_OF_MEMORY: return "VKL_ERR_OUT_OF_MEMORY";
    case VKL_ERR_IO: return "VKL_ERR_IO";
    case VKL_ERR_FORMAT: return "VKL_ERR_FORMAT";
    case VKL_ERR_UNSUPPORTED: return "VKL_ERR_UNSUPPORTED";
    case VKL_ERR_SHAPE: return "VKL_ERR_SHAPE";
    case VKL_ERR_OVERFLOW: return "VKL_ERR_OVERFLOW";
    case VKL_ERR_NOT_FOUND: return "VKL_ERR_NOT_FOUND";
    case VKL_ERR_DEVICE: return "VKL_ERR_DEVICE";
    case VKL_ERR_STATE: return "VKL_ERR_STATE";
    case VKL_ERR_INTERNAL: return "VKL_ERR_INTERNAL";
    }
    return "VKL_ERR_UNKNOWN";
}

static vkl_log_level level_from_env(vkl_log_level fallback) {
    const char *e = getenv("VKLLM_LOG");
    if (!e) return fallback;
    if (!strcmp(e, "debug")) return VKL_LOG_DEBUG;
    if (!strcmp(e, "info")) return VKL_LOG_INFO;
    if (!strcmp(e, "warn")) return VKL_LOG_WARN;
    if (!strcmp(e, "error")) return VKL_LOG_ERROR;
    return fallback;
}

void vkl_context_options_init(vkl_context_options *options) {
    if (!options) return;
    memset(options, 0, sizeof(*options));
    options->log_level = VKL_LOG_WARN;
}

vkl_status vkl_context_create(const vkl_context_options *options, vkl_context **out) {
    if (!out) return VKL_ERR_INVALID_ARGUMENT;
    *out = NULL;
    vkl_context_options defaults;
    if (!options) {
        vkl_context_options_init(&defaults);
        options = &defaults;
    }
    const vkl_allocator *a = &options->allocator;
    bool any = a->malloc || a->realloc || a->free;
    bool all = a->malloc && a->realloc && a->free;
    if (any && !all) return VKL_ERR_INVALID_ARGUMENT;
    vkl_allocator alloc = all ? *a : (vkl_allocator){NULL, libc_malloc, libc_realloc, libc_free};
    vkl_context *ctx = alloc.malloc(alloc.user, sizeof(*ctx));
    if (!ctx) return VKL_ERR_OUT_OF_MEMORY;
    memset(ctx, 0, sizeof(*ctx));
    ctx->alloc = alloc;
    ctx->log = options->log;
    ctx->log_user = options->log_user;
    ctx->log_level = level_from_env(options->log_level);
    *out = ctx;
    return VKL_OK;
}

void vkl_context_destroy(vkl_context *ctx) {
    if (!ctx) return;
    vkl_allocator a = ctx->alloc;
    a.free(a.user, ctx);
}

const char *vkl_context_error(const vkl_context *ctx) {
    return ctx ? ctx->error : "no context (NULL)";
}

static void emit(vkl_context *ctx, vkl_log_level level, const char *msg) {
    if (level > ctx->log_level) return;
    if (ctx->log) {
        ctx->log(ctx->log_user, level, msg);
        return;
    }
    static const char *const names[] = {"error", "warn", "info", "debug"};
    fprintf(stderr, "vkllm %s: %s\n", names[level], msg);
}

void vkl_log(vkl_context *ctx, vkl_log_level level, const char *fmt, ...) {
    if (!ctx || level > ctx->log_level) return;
    char buf[VKL_ERROR_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    emit(ctx, level, buf);
}

vkl_status vkl_fail(vkl_context *ctx, vkl_status status, const char *fmt, ...) {
    if (!ctx) return status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->error, sizeof(ctx->error), fmt, ap);
    va_end(ap);
    emit(ctx, VKL_LOG_DEBUG, ctx->error);
    return status;
}

vkl_status vkl_fail_prefix(vkl_context *ctx, vkl_status status, const char *fmt, ...) {
    if (!ctx) return status;
    char prefix[VKL_ERROR_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    /* Truncation is fine (the message is capped), so build it by hand
     * rather than through snprintf's truncation warning. */
    char joined[VKL_ERROR_CAP];
    size_t p = strlen(prefix), e = strlen(ctx->error);
    if (p > VKL_ERROR_CAP - 3) p = VKL_ERROR_CAP - 3;
    memcpy(joined, prefix, p);
    memcpy(joined + p, ": ", 2);
    if (e > VKL_ERROR_CAP - 3 - p) e = VKL_ERROR_CAP - 3 - p;
    memcpy(joined + p + 2, ctx->error, e);
    joined[p + 2 + e] = 0;
    memcpy(ctx->error, joined, sizeof(joined));
    return status;
}

void *vkl_malloc(vkl_context *ctx, size_t size) {
    void *p = ctx->alloc.malloc(ctx->alloc.user, size ? size : 1);
    if (!p) vkl_fail(ctx, VKL_ERR_OUT_OF_MEMORY, "out of host memory allocating %zu bytes", size);
    return p;
}

void *vkl_calloc(vkl_context *ctx, size_t count, size_t size) {
    size_t total;
    if (!vkl_mul_size(count, size, &total)) {
        vkl_fail(ctx, VKL_ERR_OUT_OF_MEMORY, "allocation of %zu x %zu bytes overflows", count, size);
        return NULL;
    }
    void *p = vkl_malloc(ctx, total);
    if (p) memset(p, 0, total);
    return p;
}

void *vkl_realloc(vkl_context *ctx, void *ptr, size_t size) {
    void *p = ctx->alloc.realloc(ctx->alloc.user, ptr, size ? size : 1);
    if (!p) vkl_fail(ctx, VKL_ERR_OUT_OF_MEMORY, "out of host memory growing to %zu bytes", size);
    return p;
}

void *vkl_realloc_array(vkl_context *ctx, void *ptr, size_t count, size_t size) {
    size_t total;
    if (!vkl_mul_size(count, size, &total)) {
        vkl_fail(ctx, VKL_ERR_OUT_OF_MEMORY, "allocation of %zu x %zu bytes overflows", count, size);
        return NULL;
    }
    return vkl_realloc(ctx, ptr, total);
}

void vkl_free(vkl_context *ctx, void *ptr) {
    if (ptr) ctx->alloc.free(ctx->alloc.user, ptr);
}

char *vkl_strdup(vkl_context *ctx, const char *s) {
    size_t n = strlen(s) + 1;
    char *p = vkl_malloc(ctx, n);
    if (p) memcpy(p, s, n);
    return p;
}
