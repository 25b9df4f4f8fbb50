/* vkbench --decode MODEL / --prefill N MODEL: one model loaded once, its
 * limits measured, then a prefill, a decode, the per-op profile and the
 * --json / --svg outputs, as asked. */
#ifndef VKL_TOOLS_BENCH_MODEL_H
#define VKL_TOOLS_BENCH_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "context.h"

typedef struct vkl_bench_model_options {
    const char *path, *backend;  /* backend NULL: the first that works */
    bool decode;
    size_t tokens, window;       /* decode: tokens, a line per window */
    size_t prefill;              /* prompt tokens; 0: no prefill */
    int no_verify;
    bool profile;                /* per-op tables (needs timestamps) */
    const char *json, *svg;      /* NULL: not written */
    unsigned threads;            /* host backends (cpu); 0: one per online CPU */
} vkl_bench_model_options;

/* Returns the process exit status. */
int vkl_bench_model(vkl_context *ctx, const vkl_bench_model_options *o);

#endif
