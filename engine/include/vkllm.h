/* vkllm public C API. Every fallible function returns vkl_status; the detail
 * of a failure (what, where) is in vkl_context_error(ctx). Nothing aborts. */
#ifndef VKLLM_H
#define VKLLM_H

#include <stddef.h>
#include <stdint.h>

/* The version of this header. CMake's project() reads these three lines, so
 * they are the one place the version is written; vkl_version() is the
 * version of the library actually linked (they differ when an app is built
 * against one header and run with another shared library). Before 1.0 a
 * new minor version may change the API. */
#define VKLLM_VERSION_MAJOR 0
#define VKLLM_VERSION_MINOR 1
#define VKLLM_VERSION_PATCH 0
#define VKLLM_VERSION_STRING "0.1.0"
/* Packed for comparisons: VKLLM_MAKE_VERSION(0, 1, 0) <= vkl_version(). */
#define VKLLM_MAKE_VERSION(major, minor, patch) (((uint32_t)(major) << 20) | ((uint32_t)(minor) << 10) | (uint32_t)(patch))
#define VKLLM_VERSION VKLLM_MAKE_VERSION(VKLLM_VERSION_MAJOR, VKLLM_VERSION_MINOR, VKLLM_VERSION_PATCH)

/* Marks the library's public functions. The library is compiled with
 * -fvisibility=hidden, so a shared libvkllm exports these and nothing else
 * (an app cannot come to depend on internals, nor clash with them). */
#if defined(__GNUC__) || defined(__clang__)
#define VKLLM_API __attribute__((visibility("default")))
#else
#define VKLLM_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The linked library's version: VKLLM_VERSION and VKLLM_VERSION_STRING as it
 * was built. */
VKLLM_API uint32_t vkl_version(void);
VKLLM_API const char *vkl_version_string(void);

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
VKLLM_API const char *vkl_status_name(vkl_status s);

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

VKLLM_API void vkl_context_options_init(vkl_context_options *options);
/* options may be NULL (defaults). */
VKLLM_API vkl_status vkl_context_create(const vkl_context_options *options, vkl_context **out);
VKLLM_API void vkl_context_destroy(vkl_context *ctx);
/* Message of the most recent failure on this context ("" if none). Valid until
 * the next call on the context. A context is not thread-safe: use one per thread
 * or serialize calls. */
VKLLM_API const char *vkl_context_error(const vkl_context *ctx);

/* --- Threads ------------------------------------------------------------
 * vkllm keeps no global state. What may run at the same time:
 *  - Sessions of one model on different threads: yes, if each session has a
 *    context of its own (vkl_session_options.context): its failures, host
 *    allocations and log lines go there. Sessions that share a context (the
 *    model's, by default) are called one at a time, like anything else that
 *    shares a context: a context holds one error message.
 *  - One session from two threads at once: no. A session may move between
 *    threads if the caller orders its calls (a mutex, a join).
 *  - vkl_session_create and vkl_session_free: as the session's other calls
 *    (creating sessions of one model on several threads at once: yes).
 *  - vkl_model_vocab_size, _metadata, _backend_name, _weight_bytes: any
 *    thread, any time while the model is loaded.
 *  - vkl_model_load and vkl_model_free: one at a time in the process (the
 *    Vulkan loader's entry points are process-wide), and vkl_model_free only
 *    once every session of that model is freed; other models' sessions may
 *    keep running meanwhile.
 *  - Hooks: a context's allocator and log callback run on whichever thread
 *    makes a call with that context, and the model's context's also on
 *    session threads (device-wide state a backend makes on first use, such as
 *    Vulkan pipelines; Vulkan validation messages). With sessions on several
 *    threads, those hooks must be safe to call from any thread (libc's and
 *    the default stderr logger are).
 * The ref backend then runs sessions fully in parallel; Vulkan takes a lock
 * on the device (one queue) for each backend call (prepare, submit, upload,
 * download), but not while a session waits for its own GPU work.
 * docs/runtime.md, "Threads". */

/* --- Models -------------------------------------------------------------
 * A model is a .vkm file mapped read-only plus the backend that runs it,
 * with its weights resident in the backend's layout and its memory plan.
 * Several sessions share one model; once loaded it is read-only, and its
 * sessions may run on different threads (Threads, above). */
typedef struct vkl_model vkl_model;

/* Optional backend features, reported by a backend and masked off by
 * vkl_model_options.disable_features: the kill switches for a driver bug in
 * an optional path (docs/vulkan.md, "Driver quirks and kill switches"). */
enum {
    VKL_FEATURE_FP16 = 1u << 0,         /* fp16 arithmetic */
    VKL_FEATURE_INT8_DOT = 1u << 1,     /* int8 dot products (sdot, VNNI, integer dot) */
    VKL_FEATURE_COOPMAT = 1u << 2,      /* cooperative matrix / tensor cores / i8mm */
    VKL_FEATURE_FUSION = 1u << 3,       /* fused kernels (attention, norms) */
    VKL_FEATURE_PRIORITY = 1u << 4,     /* a global queue priority (Vulkan: LOW by default) */
    VKL_FEATURE_TIMESTAMPS = 1u << 5    /* per-op timing */
};

/* CPU instruction sets a host backend (cpu) may use, masked off by
 * vkl_model_options.disable_isa; each has a portable fallback computing the
 * same integer sums. */
enum {
    VKL_ISA_AVX2 = 1u << 0,    /* x86 AVX2 with FMA and F16C */
    VKL_ISA_DOTPROD = 1u << 1, /* Arm sdot (FEAT_DotProd); off turns VKL_ISA_I8MM off too */
    VKL_ISA_I8MM = 1u << 2,    /* Arm smmla (FEAT_I8MM), for prefill; also off with VKL_FEATURE_COOPMAT */
    VKL_ISA_AMX = 1u << 3,     /* x86 AMX-INT8 tiles (with AVX-512), for prefill; also off with VKL_FEATURE_COOPMAT */
    VKL_ISA_AVX512VNNI = 1u << 4, /* x86 512-bit vpdpbusd (AVX-512 VNNI), prefill's GEMM tile where AMX is not used */
    VKL_ISA_AVXVNNI = 1u << 5     /* x86 256-bit VEX vpdpbusd (AVX-VNNI), the same where AVX-512 VNNI is absent or off */
};

struct vkl_vulkan_options; /* vkllm_vulkan.h */

typedef struct vkl_model_options {
    /* "ref", "vulkan", ...; NULL: automatic (vkl_model_backend_reason says
     * what was chosen and why): a hardware GPU first, never a CPU-type
     * Vulkan device such as lavapipe, else the fastest CPU backend. */
    const char *backend;
    uint32_t disable_features;  /* VKL_FEATURE_* to turn off */
    /* The Vulkan backend's options (vkllm_vulkan.h), among them the app's
     * own VkDevice; NULL: defaults. Read during vkl_model_load only. */
    const struct vkl_vulkan_options *vulkan;
    int no_verify;              /* 0 (default): loading hashes the weights and fails with VKL_ERR_FORMAT,
                                   naming the data section, when they do not match the checksum written
                                   with them (a corrupt file); costs one read of the file (docs/perf.md).
                                   1: skip that check */
    unsigned threads;           /* host backends (cpu): threads, the caller included; 0: one per online CPU */
    uint32_t disable_isa;       /* host backends: CPU instruction sets to turn off (VKL_ISA_*) */
    /* Host backends: each thread's share of a matrix product is sized by its
     * speed (measured at load, then kept current from the products), for
     * unequal cores (big.LITTLE); nonzero keeps the shares equal. */
    int equal_shares;
    /* Host backends, to emulate an unequal core on any machine: thread
     * slow_worker (0: the calling thread) runs slow_factor times slower
     * (each piece of its work followed by a busy wait until the thread has
     * spent slow_factor times that piece's CPU time); 0: off, else 1 to
     * 1000. */
    unsigned slow_worker;
    double slow_factor;
} vkl_model_options;

VKLLM_API void vkl_model_options_init(vkl_model_options *options);
/* options may be NULL (defaults). */
VKLLM_API vkl_status vkl_model_load(vkl_context *ctx, const char *path, const vkl_model_options *options, vkl_model **out);
VKLLM_API void vkl_model_free(vkl_model *model); /* accepts NULL; free every session first */
/* Entries in one row of logits. */
VKLLM_API size_t vkl_model_vocab_size(const vkl_model *model);
/* A metadata entry of the model file ("tokenizer.json", "import.recipe",
 * ...): its bytes, valid while the model is loaded. 0 if absent. */
VKLLM_API int vkl_model_metadata(const vkl_model *model, const char *key, const void **data, size_t *size);
VKLLM_API const char *vkl_model_backend_name(const vkl_model *model);
/* VKL_FEATURE_* the model's device runs with: what it has, less what the
 * options, kill switches and driver quirks turned off (0 for NULL). On
 * Vulkan, VKL_FEATURE_COOPMAT means prefill's products run on the matrix
 * units with fp16 operands unless the math is f32 (docs/vulkan.md). */
VKLLM_API uint32_t vkl_model_features(const vkl_model *model);
/* Why that backend runs the model, one line: "asked for by name", or the
 * automatic choice's reason ("NVIDIA H100 80GB HBM3: a discrete GPU";
 * "no GPU: lavapipe is a CPU-type Vulkan device"). */
VKLLM_API const char *vkl_model_backend_reason(const vkl_model *model);
/* Bytes of weights one forward pass reads (every weight once). */
VKLLM_API size_t vkl_model_weight_bytes(const vkl_model *model);

/* --- Sampling ----------------------------------------------------------- */
typedef struct vkl_sampling_options {
    float temperature;        /* <= 0: greedy */
    int32_t top_k;            /* <= 0: off */
    float top_p;              /* in (0, 1]; 1: off */
    float min_p;              /* <= 0: off */
    float repetition_penalty; /* 1: off */
    int32_t repetition_window;/* last N tokens the penalty sees */
    uint64_t seed;            /* same seed, same tokens */
} vkl_sampling_options;

/* --- Sessions -----------------------------------------------------------
 * A session holds one conversation: its KV cache (inside the backend, in
 * place, sized for max_context at creation) and its memory plan: its one
 * arena is allocated by vkl_session_create and never grows. The first prompt
 * and every decode step run executables prepared at creation and allocate
 * nothing; a prompt appended after earlier tokens prepares an executable on
 * first use of its (past, length) shape (docs/runtime.md says why). A
 * session is used by one thread at a time; different sessions may run on
 * different threads if each has its own context (Threads, above). */
typedef struct vkl_session vkl_session;

typedef struct vkl_session_options {
    size_t max_context;       /* tokens the cache holds; default 2048 */
    size_t prefill_chunk;     /* prompts are fed at most this many tokens per step; default 256 */
    uint32_t pad_multiple;    /* attention length is padded to a multiple of this (masked), so recorded
                                 work is replayed until a boundary is crossed; a prompt fed into an
                                 empty cache is padded the same way. Every decode length and every
                                 padded first-prompt length is prepared at session creation; default
                                 64, 1: off */
    vkl_sampling_options sampling;
    int check_finite;         /* debugging, default 0. 1: every step checks each node's outputs as it runs
                                 (slow), and when the logits hold a NaN or infinity the step fails with
                                 VKL_ERR_INVALID_ARGUMENT naming the first node, in execution order, whose
                                 output did, instead of the sampler failing later without a culprit. The
                                 backend must support it (ref does); VKL_ERR_UNSUPPORTED otherwise */
    int host_sampling;        /* default 0: where the sampler is plain greedy (temperature <= 0, no
                                 repetition penalty) and check_finite is off, a decode step has the
                                 backend pick the token in the same execute and reads back only that
                                 (vkl_session_logits still gives the row, read when asked). 1: every
                                 step reads its logits row and samples on the host (for comparison;
                                 the tokens are the same; the tools' VKL_DEVICE_SAMPLING=0) */
    /* Where the session reports failures (vkl_context_error), allocates host
     * memory and logs; borrowed: it must outlive the session. NULL: the
     * model's context. Give each session its own to run sessions of one
     * model on different threads at once. */
    vkl_context *context;
} vkl_session_options;

VKLLM_API void vkl_session_options_init(vkl_session_options *options);
VKLLM_API vkl_status vkl_session_create(vkl_model *model, const vkl_session_options *options, vkl_session **out);
VKLLM_API void vkl_session_free(vkl_session *session); /* accepts NULL */

/* Append tokens to the conversation (prefill) and compute the logits of the
 * last one. Fails with VKL_ERR_INVALID_ARGUMENT, and changes nothing, when
 * the tokens would not fit in max_context or an id is outside the vocab. */
VKLLM_API vkl_status vkl_session_append(vkl_session *session, const int32_t *tokens, size_t count);
/* The same, and the logits of every appended token: all_logits holds
 * count * vocab_size floats (perplexity, scoring). */
VKLLM_API vkl_status vkl_session_append_scored(vkl_session *session, const int32_t *tokens, size_t count, float *all_logits);
/* Logits of the last appended token: vocab_size floats, valid until the next
 * call on the session; NULL before the first append. */
VKLLM_API const float *vkl_session_logits(const vkl_session *session);
/* Draw the next token from the last logits with the session's sampler
 * (it does not append it). */
VKLLM_API vkl_status vkl_session_sample(vkl_session *session, int32_t *token);
/* Called with each generated token; return nonzero to stop. */
typedef int (*vkl_token_callback)(void *user, int32_t token);
/* Append the prompt, then sample and append up to max_new tokens, calling
 * `callback` (may be NULL) after each; stops early at `stop_token` (>= 0) or
 * when the context is full (then VKL_OK with fewer tokens). */
VKLLM_API vkl_status vkl_session_generate(vkl_session *session, const int32_t *prompt, size_t count, size_t max_new,
                                int32_t stop_token, vkl_token_callback callback, void *user);
/* Tokens in the conversation. */
VKLLM_API size_t vkl_session_length(const vkl_session *session);
/* Keep only the first `length` tokens (the KV cache is truncated in place;
 * the logits are those of the kept last token only after the next append).
 * VKL_ERR_INVALID_ARGUMENT if length exceeds the current length. */
VKLLM_API vkl_status vkl_session_rewind(vkl_session *session, size_t length);
VKLLM_API void vkl_session_reset(vkl_session *session); /* back to empty; reseeds the sampler */

typedef struct vkl_session_stats {
    /* prefill: vkl_session_generate's prompt (even of one token) and appends
     * of several tokens; decode: every other single-token append */
    uint64_t prefill_tokens, decode_tokens;
    double prefill_seconds, decode_seconds;
    uint64_t prepares;        /* executables built (one per new padded shape) */
    uint64_t replays;         /* steps that reused a prepared executable */
    size_t arena_bytes;       /* the planned arena */
    size_t kv_bytes;          /* the KV cache */
    /* KV cache traffic summed over steps, as the backend's kernels moved it
     * (all 0 when the backend does not count): rows appended in place, rows
     * read by attention, and bytes copied out of the cache by anything else
     * (0 for an in-place cache: no Concat, no copy between steps). */
    uint64_t kv_bytes_written, kv_bytes_read, kv_bytes_copied;
    /* Bytes read back from the backend after steps: logits rows, greedy
     * picks (12 bytes a decode step sampled on the device), and rows read
     * later by vkl_session_logits; and the decode steps whose token the
     * backend picked (host_sampling above). */
    uint64_t readback_bytes, device_picks;
} vkl_session_stats;
VKLLM_API void vkl_session_get_stats(const vkl_session *session, vkl_session_stats *out);

#ifdef __cplusplus
}
#endif
#endif
