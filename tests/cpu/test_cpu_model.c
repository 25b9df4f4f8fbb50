/* The bundled model, whole, on the cpu backend through the public API, with
 * its projection weights expanded to f32 (so no int8 activation rounding
 * separates cpu from ref):
 *  (a) greedy generation of 64 tokens from "In the beginning"'s ids equals
 *      the ref backend's tokens exactly, and the first step's logits agree
 *      within 1e-4 of max |logit|;
 *  (b) 500 decode steps make 0 host allocations (the context's allocator
 *      hook) and create 0 threads (pthread_create is wrapped at link time,
 *      -Wl,--wrap=pthread_create, so every creation in the process counts).
 * Usage: test_cpu_model MODEL.vkm (the bundled, E0M4 + int8 lm_head one). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc_counter.h"
#include "check.h"
#include "greedy.h"
#include "quant/quant.h"
#include "vkm.h"
#include "vkllm.h"

static const int32_t prompt[] = {1, 1163, 262, 2050}; /* "In the beginning" with its BOS */
#define N_GEN 64
#define N_DECODE 500

static size_t threads_created;

int __real_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg);
int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg);
int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg) {
    __atomic_fetch_add(&threads_created, 1, __ATOMIC_SEQ_CST);
    return __real_pthread_create(t, a, fn, arg);
}

/* MODEL with every quantized weight replaced by its exact f32 values,
 * written to `out`. The graph belongs to the opened file; its tensors are
 * retyped in place before the file is closed. */
static vkl_status expand_to_f32(vkl_context *ctx, const char *model, const char *out) {
    vkl_vkm *m;
    vkl_status st = vkl_vkm_open(ctx, model, &m);
    if (st) return st;
    vkl_graph *g = (vkl_graph *)vkl_vkm_graph(m);
    for (uint32_t t = 0; !st && t < g->n_tensors; t++) {
        vkl_tensor *w = &g->tensors[t];
        int64_t rows, cols;
        if (w->kind != VKL_TENSOR_WEIGHT || !vkl_dtype_is_quantized(w->dtype)) continue;
        if (w->shape.rank != 2 || !vkl_expr_is_const(g->syms, w->shape.dims[0], &rows) ||
            !vkl_expr_is_const(g->syms, w->shape.dims[1], &cols)) {
            st = vkl_fail(ctx, VKL_ERR_UNSUPPORTED, "weight '%s' is not a constant matrix", w->name);
            break;
        }
        float *f = malloc((size_t)(rows * cols) * sizeof(float));
        st = f ? vkl_quant_dequantize(ctx, w->dtype, w->group, w->data, w->nbytes, rows, cols, f) : VKL_ERR_OUT_OF_MEMORY;
        if (!st) st = vkl_graph_set_data(g, t, f, (size_t)(rows * cols) * sizeof(float), true);
        w->dtype = VKL_DTYPE_F32;
        w->group = 0;
        free(f);
    }
    vkl_vkm_meta meta[16];
    size_t n_meta = 0;
    for (size_t i = 0; i < vkl_vkm_meta_count(m) && n_meta < 16; i++)
        if (vkl_vkm_meta_at(m, i, &meta[n_meta]) && strcmp(meta[n_meta].key, "import.recipe")) n_meta++;
    if (!st) st = vkl_vkm_write(ctx, g, meta, n_meta, out);
    vkl_vkm_close(m);
    return st;
}

/* N_DECODE steps after a short prompt, counting allocations and threads. */
static void count_decode_work(const char *path) {
    alloc_counter c = {0};
    vkl_context_options co;
    vkl_context_options_init(&co);
    co.allocator = alloc_counter_hook(&c);
    vkl_context *ctx;
    CHECK(vkl_context_create(&co, &ctx) == VKL_OK);
    vkl_model_options mo;
    vkl_model_options_init(&mo);
    mo.backend = "cpu";
    mo.threads = 2; /* a pool with a worker even on a one-CPU machine */
    vkl_model *m;
    vkl_session *s;
    REQUIRE(greedy_open(ctx, path, &mo, prompt, sizeof(prompt) / sizeof(prompt[0]), &m, &s) == VKL_OK, "load: %s",
            vkl_context_error(ctx));
    CHECK(greedy_steps(s, 1, NULL) == 1); /* the first decode step: anything lazy happens here */
    const size_t allocs = c.allocs, threads = threads_created;
    const int steps = greedy_steps(s, N_DECODE, NULL);
    printf("%d decode steps on cpu: %zu host allocations, %zu threads created (%zu before them, at model loads)\n", steps,
           c.allocs - allocs, threads_created - threads, threads);
    CHECK(steps == N_DECODE);
    CHECK(c.allocs == allocs);
    CHECK(threads_created == threads);
    CHECK(threads >= 1); /* the wrap sees the pool's worker: the count is real */
    vkl_session_free(s);
    vkl_model_free(m);
    vkl_context_destroy(ctx);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_cpu_model MODEL.vkm\n");
        return 2;
    }
    vkl_context *ctx;
    CHECK(vkl_context_create(NULL, &ctx) == VKL_OK);
    char path[64];
    snprintf(path, sizeof(path), "/tmp/cpu-model-%ld.vkm", (long)getpid());
    CHECK_OK(ctx, expand_to_f32(ctx, argv[1], path));
    if (!failures && !greedy_check_vs_ref(ctx, path, "cpu", prompt, sizeof(prompt) / sizeof(prompt[0]), N_GEN))
        count_decode_work(path);
    else
        failures++;
    unlink(path);
    vkl_context_destroy(ctx);
    return failures ? 1 : 0;
}
