/* Internal view of vkl_context: the allocator, the logger and the error
 * message every engine module reports through. */
#ifndef VKL_CONTEXT_H
#define VKL_CONTEXT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vkllm.h"

#define VKL_ERROR_CAP 1024

/* Told the name of each temporary file the atomic writer creates
 * (engine/atomic_file.c) and, once it is renamed into place or removed,
 * NULL; called on the writing thread. A program can then remove the file
 * from a signal handler when it is interrupted mid-write (tools/cleanup.c). */
typedef void (*vkl_temp_file_fn)(void *user, const char *tmp_path);

struct vkl_context {
    vkl_allocator alloc;
    vkl_log_fn log;
    void *log_user;
    vkl_log_level log_level;
    vkl_temp_file_fn temp_file; /* NULL: nobody asked */
    void *temp_file_user;
    char error[VKL_ERROR_CAP];
};

static inline void vkl_context_set_temp_file_hook(vkl_context *ctx, vkl_temp_file_fn fn, void *user) {
    ctx->temp_file = fn;
    ctx->temp_file_user = user;
}

#if defined(__GNUC__)
#define VKL_PRINTF(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
#else
#define VKL_PRINTF(fmt_index, first_arg)
#endif

/* Record a failure: formats the message into ctx->error, logs it at debug
 * level, and returns `status` so callers can write `return vkl_fail(...)`. */
vkl_status vkl_fail(vkl_context *ctx, vkl_status status, const char *fmt, ...) VKL_PRINTF(3, 4);
/* Prefix the current error message with more context ("while reading X: ").
 * Returns `status` unchanged. */
vkl_status vkl_fail_prefix(vkl_context *ctx, vkl_status status, const char *fmt, ...) VKL_PRINTF(3, 4);
void vkl_log(vkl_context *ctx, vkl_log_level level, const char *fmt, ...) VKL_PRINTF(3, 4);

/* Allocation through the context's hook. On failure they return NULL and set
 * the error message; the caller returns VKL_ERR_OUT_OF_MEMORY. */
void *vkl_malloc(vkl_context *ctx, size_t size);
void *vkl_calloc(vkl_context *ctx, size_t count, size_t size); /* overflow-checked, zeroed */
void *vkl_realloc(vkl_context *ctx, void *ptr, size_t size);
void *vkl_realloc_array(vkl_context *ctx, void *ptr, size_t count, size_t size); /* overflow-checked */
void vkl_free(vkl_context *ctx, void *ptr);
char *vkl_strdup(vkl_context *ctx, const char *s);

/* Overflow-checked size/int arithmetic: return false on overflow. */
static inline bool vkl_mul_size(size_t a, size_t b, size_t *out) {
    return !__builtin_mul_overflow(a, b, out);
}
static inline bool vkl_add_size(size_t a, size_t b, size_t *out) {
    return !__builtin_add_overflow(a, b, out);
}
/* Where arenas place tensors: at multiples of this, or of a device's larger
 * caps.buffer_alignment (vkl_arena_alignment in backend.h). Sizes that reach
 * here are arena sizes, far below SIZE_MAX. */
#define VKL_ARENA_ALIGN 64
static inline size_t vkl_align_up(size_t n, size_t align) { return (n + align - 1) / align * align; }
static inline bool vkl_mul_i64(int64_t a, int64_t b, int64_t *out) {
    return !__builtin_mul_overflow(a, b, out);
}
static inline bool vkl_add_i64(int64_t a, int64_t b, int64_t *out) {
    return !__builtin_add_overflow(a, b, out);
}
static inline bool vkl_sub_i64(int64_t a, int64_t b, int64_t *out) {
    return !__builtin_sub_overflow(a, b, out);
}

#define VKL_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif
