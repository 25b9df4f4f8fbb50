/* One Vulkan device shared by two threads, each with a context of its own,
 * as sessions of one model share it (vkllm.h, "Threads"). The Vulkan backend
 * runs QuantMatMul only so far, so this works at the vtable: one graph
 * (Y = QuantMatMul(A, W), int8 W) and its weights loaded once, then on both
 * threads at once, ROUNDS times: write this round's A to the thread's own
 * arena, execute its own executable (prepared at the same time as the other
 * thread's: the device's pipeline list grows under its lock), wait, read Y;
 * dequantize a weight through the device's one-shot command buffer; and fail
 * an out-of-range write with an offset only this thread uses. Every Y and
 * dequantized weight must equal, bit for bit, what a device used by one
 * thread alone computed; every message must be the thread's own; the
 * validation layer (on unless VKL_VK_VALIDATION=0) must stay silent. All
 * three contexts share one allocator hook, called from both threads (so it
 * locks), which counts live host allocations: none may be left at the end
 * (LeakSanitizer is off for the Vulkan tests, scripts/test says why).
 * scripts/test also runs it under ThreadSanitizer. No Vulkan: exit 77. */
#define _POSIX_C_SOURCE 200809L /* setenv, pthread_barrier_t */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../backends/vulkan/vulkan_backend.h"
#include "check.h"
#include "context.h"
#include "graph.h"
#include "ops.h"
#include "quant/quant.h"
#include "test_rng.h"
#include "backend_env_open.h"

#define M 3
#define K 512
#define N 96
#define GROUP 32
#define ROUNDS 12
#define Y_OFFSET 8192 /* A at 0 (M*K floats), Y here; both aligned for any device */

/* What both threads share, as a model's sessions share it. */
typedef struct shared {
    const vkl_backend_vtable *be;
    vkl_backend_device *dev;
    const vkl_graph *g;
    vkl_backend_weights *w;
    const uint8_t *wq;      /* W's canonical int8 blocks */
    size_t wq_bytes;
    const float *a;         /* per thread, per round: M*K activations */
} shared;

typedef struct job {
    int id;
    const shared *sh;
    vkl_context *ctx;
    pthread_barrier_t *start;
    float *y;               /* ROUNDS * M * N outputs */
    float *dq;              /* N * K */
    char error[512];
} job;

/* The contexts' allocator: libc's, counting live blocks under a lock. */
typedef struct counter {
    pthread_mutex_t lock;
    long live;
} counter;

static void count(counter *c, long d) {
    pthread_mutex_lock(&c->lock);
    c->live += d;
    pthread_mutex_unlock(&c->lock);
}
static void *c_malloc(void *user, size_t n) {
    void *p = malloc(n);
    if (p) count(user, 1);
    return p;
}
static void *c_realloc(void *user, void *old, size_t n) {
    void *p = realloc(old, n);
    if (p && !old) count(user, 1);
    return p;
}
static void c_free(void *user, void *p) {
    if (p) count(user, -1);
    free(p);
}

static void on_log(void *user, vkl_log_level level, const char *message) {
    (void)user;
    if (level <= VKL_LOG_WARN) fprintf(stderr, "log: %s\n", message); /* any thread: stdio locks */
}

static const float *a_of(const shared *sh, int id, int round) { return sh->a + ((size_t)id * ROUNDS + round) * M * K; }

static void fail(job *j, vkl_status st, const char *what) {
    if (!j->error[0])
        snprintf(j->error, sizeof(j->error), "thread %d: %s: %s: %s", j->id, what, vkl_status_name(st),
                 vkl_context_error(j->ctx));
}

static void *work(void *arg) {
    job *j = arg;
    const shared *sh = j->sh;
    const vkl_backend_vtable *be = sh->be;
    const vkl_graph *g = sh->g;
    vkl_backend_buffer *arena = NULL;
    vkl_backend_exec *e = NULL;
    size_t offsets[3] = {VKL_NO_OFFSET, VKL_NO_OFFSET, VKL_NO_OFFSET}; /* A, W, Y (qmm_graph) */
    offsets[g->inputs[0]] = 0;
    offsets[g->outputs[0]] = Y_OFFSET;
    vkl_binding b = {NULL, 0};
    if (j->start) pthread_barrier_wait(j->start);
    vkl_status st = be->buffer_create(sh->dev, j->ctx, VKL_BUFFER_DEVICE, Y_OFFSET + M * N * sizeof(float), &arena);
    vkl_memory_map mem = {arena, offsets, g->n_tensors};
    if (!st) st = be->prepare(sh->dev, j->ctx, g, sh->w, &mem, &b, &e);
    if (st) fail(j, st, "buffer_create / prepare");
    for (int r = 0; !st && r < ROUNDS; r++) {
        st = be->buffer_write(sh->dev, j->ctx, arena, 0, a_of(sh, j->id, r), M * K * sizeof(float));
        if (!st) st = be->execute(sh->dev, j->ctx, e, &b);
        if (!st) st = be->wait(sh->dev, j->ctx, e);
        if (!st) st = be->buffer_read(sh->dev, j->ctx, arena, Y_OFFSET, j->y + (size_t)r * M * N, M * N * sizeof(float));
        if (st) {
            fail(j, st, "write / execute / wait / read");
            break;
        }
        st = vkl_vk_dequantize(sh->dev, j->ctx, VKL_DTYPE_Q_INT8, GROUP, N, K, sh->wq, sh->wq_bytes, j->dq);
        if (st) {
            fail(j, st, "vkl_vk_dequantize");
            break;
        }
        size_t mine = 100000 * (size_t)(j->id + 1) + (size_t)r;
        const float zero = 0;
        if (be->buffer_write(sh->dev, j->ctx, arena, mine, &zero, 4) != VKL_ERR_INVALID_ARGUMENT) {
            fail(j, VKL_OK, "an out-of-range write was accepted");
            break;
        }
        char want[64];
        snprintf(want, sizeof(want), "[%zu, +4)", mine);
        if (!strstr(vkl_context_error(j->ctx), want) && !j->error[0])
            snprintf(j->error, sizeof(j->error), "thread %d: message \"%s\" lacks \"%s\"", j->id,
                     vkl_context_error(j->ctx), want);
    }
    if (e) be->exec_release(sh->dev, j->ctx, e);
    if (arena) be->buffer_destroy(sh->dev, j->ctx, arena);
    return NULL;
}

/* Y = QuantMatMul(A [M, K], W [N, K] int8, groups of GROUP), Y [M, N]. */
static vkl_graph *qmm_graph(vkl_context *ctx, const uint8_t *wq, size_t wq_bytes) {
    vkl_graph *g = NULL;
    vkl_status st = vkl_graph_create(ctx, &g);
    vkl_shape sa = {.rank = 2}, sw = {.rank = 2};
    if (!st) st = vkl_expr_const(g->syms, M, &sa.dims[0]);
    if (!st) st = vkl_expr_const(g->syms, K, &sa.dims[1]);
    if (!st) st = vkl_expr_const(g->syms, N, &sw.dims[0]);
    sw.dims[1] = sa.dims[1];
    uint32_t a = VKL_NONE, w = VKL_NONE, y = VKL_NONE;
    if (!st) st = vkl_graph_add_tensor(g, "A", VKL_DTYPE_F32, VKL_TENSOR_INPUT, &sa, &a);
    if (!st) st = vkl_graph_add_input(g, a);
    if (!st) st = vkl_graph_add_tensor(g, "W", VKL_DTYPE_Q_INT8, VKL_TENSOR_WEIGHT, &sw, &w);
    if (!st) {
        g->tensors[w].group = GROUP;
        st = vkl_graph_set_data(g, w, wq, wq_bytes, false);
    }
    if (!st) st = vkl_graph_add_tensor(g, "Y", VKL_DTYPE_F32, VKL_TENSOR_ACTIVATION, NULL, &y);
    const uint32_t ins[2] = {a, w};
    if (!st) st = vkl_graph_add_node(g, VKL_OP_QUANT_MAT_MUL, "qmm", ins, 2, &y, 1, NULL, 0, NULL);
    if (!st) st = vkl_graph_add_output(g, y);
    if (!st) st = vkl_graph_validate(g);
    if (!st) st = vkl_graph_infer_shapes(g);
    CHECK_OK(ctx, st);
    if (st && g) vkl_graph_destroy(g);
    return st ? NULL : g;
}

/* Runs the jobs on one device opened for them: one after the other on this
 * thread, or at once on threads of their own. */
static void run(vkl_context *ctx, shared *sh, job *jobs, bool together) {
    pthread_barrier_t start;
    pthread_t threads[2];
    sh->dev = NULL;
    sh->w = NULL;
    vkl_status st = test_open_env(ctx, sh->be, 0, false, &sh->dev);
    if (!st) st = sh->be->weights_load(sh->dev, sh->g, &sh->w);
    CHECK_OK(ctx, st);
    if (!st && together) CHECK(pthread_barrier_init(&start, NULL, 2) == 0);
    for (int k = 0; !st && k < 2; k++) {
        jobs[k].start = together ? &start : NULL;
        if (!together) work(&jobs[k]);
        else CHECK(pthread_create(&threads[k], NULL, work, &jobs[k]) == 0);
    }
    for (int k = 0; !st && together && k < 2; k++) CHECK(pthread_join(threads[k], NULL) == 0);
    if (!st && together) pthread_barrier_destroy(&start);
    for (int k = 0; k < 2; k++) CHECKF(!jobs[k].error[0], "%s", jobs[k].error);
    CHECK(vkl_vk_validation_messages(sh->dev) == 0);
    if (sh->w) sh->be->weights_release(sh->dev, sh->w);
    if (sh->dev) sh->be->close(sh->dev);
}

int main(void) {
    setenv("VKL_VK_VALIDATION", "1", 0); /* on unless the environment says otherwise */
    counter allocs = {.live = 0};
    if (pthread_mutex_init(&allocs.lock, NULL)) return 2;
    vkl_context_options o;
    vkl_context_options_init(&o);
    o.log = on_log;
    o.allocator = (vkl_allocator){&allocs, c_malloc, c_realloc, c_free};
    vkl_context *ctx = NULL, *own[2] = {NULL, NULL};
    if (vkl_context_create(&o, &ctx) || vkl_context_create(&o, &own[0]) || vkl_context_create(&o, &own[1])) return 2;
    shared sh = {.be = vkl_backend_find("vulkan")};
    vkl_backend_caps caps;
    vkl_status st = sh.be ? test_probe_env(ctx, sh.be, &caps) : VKL_ERR_NOT_FOUND;
    if (st == VKL_ERR_NOT_FOUND) {
        printf("test_vk_threads: skipped: %s\n", sh.be ? vkl_context_error(ctx) : "no vulkan backend in this build");
        for (int k = 0; k < 2; k++) vkl_context_destroy(own[k]);
        vkl_context_destroy(ctx);
        return 77;
    }
    CHECK_OK(ctx, st);
    if (st) return check_finish("test_vk_threads");
    printf("test_vk_threads: %s (%s)\n", caps.device_name, caps.driver);

    rng r = {0x5EED1234ABCDull};
    float *w = malloc((size_t)N * K * sizeof(float)), *a = malloc(2 * ROUNDS * (size_t)M * K * sizeof(float));
    for (size_t i = 0; i < (size_t)N * K; i++) w[i] = 0.05f * rnd_gauss(&r);
    for (size_t i = 0; i < 2 * ROUNDS * (size_t)M * K; i++) a[i] = rnd_gauss(&r);
    vkl_quant_spec spec;
    vkl_quant_spec_init(&spec, VKL_DTYPE_Q_INT8);
    spec.group = GROUP;
    size_t wq_bytes = 0;
    CHECK_OK(ctx, vkl_quant_canonical_bytes(ctx, VKL_DTYPE_Q_INT8, GROUP, N, K, &wq_bytes));
    uint8_t *wq = malloc(wq_bytes ? wq_bytes : 1);
    CHECK_OK(ctx, vkl_quant_quantize(ctx, &spec, w, N, K, wq, wq_bytes));
    vkl_graph *g = failures ? NULL : qmm_graph(ctx, wq, wq_bytes);
    sh.g = g;
    sh.wq = wq;
    sh.wq_bytes = wq_bytes;
    sh.a = a;

    job alone[2], both[2];
    for (int k = 0; k < 2; k++) {
        const size_t ys = ROUNDS * (size_t)M * N * sizeof(float), dqs = (size_t)N * K * sizeof(float);
        alone[k] = (job){.id = k, .sh = &sh, .ctx = own[k], .y = malloc(ys), .dq = malloc(dqs)};
        both[k] = (job){.id = k, .sh = &sh, .ctx = own[k], .y = malloc(ys), .dq = malloc(dqs)};
        CHECK(alone[k].y && alone[k].dq && both[k].y && both[k].dq);
    }
    if (g && !failures) {
        run(ctx, &sh, alone, false);
        run(ctx, &sh, both, true);
        for (int k = 0; k < 2; k++) {
            CHECKF(!memcmp(both[k].y, alone[k].y, ROUNDS * (size_t)M * N * sizeof(float)),
                   "thread %d: QuantMatMul outputs differ from the device used alone", k);
            CHECKF(!memcmp(both[k].dq, alone[k].dq, (size_t)N * K * sizeof(float)),
                   "thread %d: dequantized weights differ from the device used alone", k);
        }
    }
    for (int k = 0; k < 2; k++) {
        free(alone[k].y);
        free(alone[k].dq);
        free(both[k].y);
        free(both[k].dq);
        vkl_context_destroy(own[k]);
    }
    vkl_graph_destroy(g);
    free(wq);
    free(w);
    free(a);
    vkl_context_destroy(ctx);
    CHECKF(allocs.live == 0, "%ld host allocations through the contexts were not freed", allocs.live);
    pthread_mutex_destroy(&allocs.lock);
    return check_finish("test_vk_threads");
}
