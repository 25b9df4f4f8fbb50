/* vkllm public C API. Every fallible function returns vkl_status; the detail
 * of a failure (what, where) is in vkl_context_error(ctx). Nothing aborts. */
#ifndef VKLLM_H
#define VKLLM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum vkl_status {
    VKL_OK = 0,
    VKL_ERR_INVALID_ARGUMENT, /* caller passed something unusable (NULL, bad option) */
    VKL_ERR_OUT_OF_MEMORY,    /* host or device allocation failed */
    VKL_ERR_IO,               /* open/read/write/rename/mmap failed */
    VKL_ERR_FORMAT,           /* a file's bytes are malformed, truncated or corrupt */
    VKL_ERR_UNSUPPORTED,      /* valid input we do not handle (op, dtype, device feature) */
    VKL_ERR_SHAPE,            /* shapes do not agree, or a shape rule cannot be derived */
    VKL_ERR_OVERFLOW,         /* integer arithmetic on sizes or symbol values overflowed */
    VKL_ERR_NOT_FOUND,        /* a named thing (tensor, symbol, backend, file) is absent */
    VKL_ERR_DEVICE,           /* a backend/driver call failed */
    VKL_ERR_STATE,            /* call not valid in the object's current state */
    VKL_ERR_INTERNAL          /* a bug in vkllm: please report it with the message */
} vkl_status;

/* Stable English name of a status ("VKL_ERR_FORMAT"). Never NULL. */
const char *vkl_status_name(vkl_status s);

typedef enum vkl_log_level {
    VKL_LOG_ERROR = 0,
    VKL_LOG_WARN = 1,
    VKL_LOG_INFO = 2,
    VKL_LOG_DEBUG = 3
} vkl_log_level;

typedef void (*vkl_log_fn)(void *user, vkl_log_level level, const char *message);

/* Host allocator hook. All three must be set, or all NULL for libc. `free`
 * accepts NULL. `realloc` follows C's realloc contract. */
typedef struct vkl_allocator {
    void *user;
    void *(*malloc)(void *user, size_t size);
    void *(*realloc)(void *user, void *ptr, size_t size);
    void (*free)(void *user, void *ptr);
} vkl_allocator;

typedef struct vkl_context_options {
    vkl_allocator allocator;  /* zeroed: libc */
    vkl_log_fn log;           /* NULL: messages at or below log_level go to stderr */
    void *log_user;
    vkl_log_level log_level;  /* default VKL_LOG_WARN; env VKLLM_LOG=debug|info|warn|error */
} vkl_context_options;

typedef struct vkl_context vkl_context;

void vkl_context_options_init(vkl_context_options *options);
/* options may be NULL (defaults). */
vkl_status vkl_context_create(const vkl_context_options *options, vkl_context **out);
void vkl_context_destroy(vkl_context *ctx);
/* Message of the most recent failure on this context ("" if none). Valid until
 * the next call on the context. A context is not thread-safe: use one per thread
 * or serialize calls. */
const char *vkl_context_error(const vkl_context *ctx);

#ifdef __cplusplus
}
#endif
#endif
