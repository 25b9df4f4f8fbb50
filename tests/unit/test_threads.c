/* What vkllm.h ("Threads") promises, on the bundled model and a host
 * backend (ref, or the one named by argv[1]: ctest runs cpu too, whose
 * sessions share one thread pool): two sessions of one model, each with a
 * context of its own, on two threads at the same time.
 *  (a) Greedy generation (64 tokens after different prompts): each thread's
 *      tokens and last logits equal, bit for bit, those of the same session
 *      run alone; then each thread creates, runs (16 tokens: the same first
 *      16) and frees a session of its own, both at once.
 * pad_multiple 16 keeps the padded first prompt short: the ref backend's
 * cost is its FLOPs, and the test runs under ASan and TSan too.
 *  (b) Errors at the same time: each thread provokes failures that name a
 *      number of its own (an out-of-vocab token, a rewind past the end, and
 *      through the backend vtable an out-of-range write to its own buffer on
 *      one shared device) and must read exactly its own message.
 * scripts/test also runs it under ThreadSanitizer, where any data race
 * fails it. Worker threads only record what they saw: check.h's counters are
 * plain ints, so the main thread does all the checking. */
#define _POSIX_C_SOURCE 200809L /* pthread_barrier_t */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "check.h"
#include "vkllm.h"

#define MODEL VKL_TEST_DATA_DIR "/../model/vkllm-kjv.vkm"
#define N_NEW 64
#define N_SHORT 16 /* tokens of the sessions made on the threads */
#define ERROR_ROUNDS 200

typedef struct job {
    /* in */
    int id;
    vkl_model *model;
    vkl_context *ctx;          /* the thread's own */
    vkl_session *session;      /* NULL: the job creates and frees its own */
    const int32_t *prompt;
    size_t n_prompt;
    size_t n_new;              /* tokens to generate, at most N_NEW */
    pthread_barrier_t *start;  /* NULL: run alone, at once */
    const vkl_backend_vtable *be;
    vkl_backend_device *dev;   /* for (b): a device shared by both jobs */
    /* out */
    vkl_status st;
    char error[512];           /* the first failure, for the main thread to print */
    int32_t tokens[N_NEW];
    size_t n_tokens;
    float *logits;             /* vocab floats, the last step's */
} job;

static vkl_session_options options(vkl_context *ctx) {
    vkl_session_options o;
    vkl_session_options_init(&o);
    o.max_context = 128;
    o.pad_multiple = 16;
    o.sampling.temperature = 0; /* greedy */
    o.context = ctx;
    return o;
}

static int keep_token(void *user, int32_t token) {
    job *j = user;
    if (j->n_tokens < N_NEW) j->tokens[j->n_tokens++] = token;
    return 0;
}

static void fail(job *j, vkl_status st, const char *what) {
    if (j->error[0]) return;
    j->st = st ? st : VKL_ERR_INTERNAL;
    snprintf(j->error, sizeof(j->error), "thread %d: %s: %s: %s", j->id, what, vkl_status_name(st),
             vkl_context_error(j->ctx));
}

static void wait_start(job *j) {
    if (j->start) pthread_barrier_wait(j->start);
}

/* (a): greedy generation in the job's session (made here when it has none). */
static void *generate(void *arg) {
    job *j = arg;
    vkl_session *s = j->session;
    vkl_session_options o = options(j->ctx);
    wait_start(j);
    vkl_status st = s ? VKL_OK : vkl_session_create(j->model, &o, &s);
    if (st) fail(j, st, "vkl_session_create");
    j->n_tokens = 0;
    if (!st && (st = vkl_session_generate(s, j->prompt, j->n_prompt, j->n_new, -1, keep_token, j)))
        fail(j, st, "vkl_session_generate");
    if (!st) memcpy(j->logits, vkl_session_logits(s), vkl_model_vocab_size(j->model) * sizeof(float));
    if (j->session) vkl_session_reset(j->session);
    else vkl_session_free(s);
    return NULL;
}

/* The message must hold `want`; else the job fails, quoting both. */
static bool message_has(job *j, const char *want) {
    if (strstr(vkl_context_error(j->ctx), want)) return true;
    if (!j->error[0])
        snprintf(j->error, sizeof(j->error), "thread %d: message \"%s\" lacks \"%s\"", j->id,
                 vkl_context_error(j->ctx), want);
    return false;
}

/* (b): failures whose messages carry numbers only this job uses. */
static void *provoke_errors(void *arg) {
    job *j = arg;
    const size_t vocab = vkl_model_vocab_size(j->model), len = vkl_session_length(j->session);
    vkl_backend_buffer *buf = NULL;
    vkl_status st = j->be->buffer_create(j->dev, j->ctx, VKL_BUFFER_DEVICE, 4096, &buf);
    if (st) fail(j, st, "buffer_create");
    char want[128];
    const uint64_t eight = 0;
    wait_start(j);
    for (int i = 0; !st && i < ERROR_ROUNDS && !j->error[0]; i++) {
        size_t mine = (size_t)j->id * 100000 + (size_t)i;
        int32_t bad = (int32_t)(vocab + mine);
        if (vkl_session_append(j->session, &bad, 1) != VKL_ERR_INVALID_ARGUMENT) fail(j, VKL_OK, "bad token accepted");
        snprintf(want, sizeof(want), "token 0 is %d,", bad);
        message_has(j, want);
        if (vkl_session_rewind(j->session, len + 1 + mine) != VKL_ERR_INVALID_ARGUMENT) fail(j, VKL_OK, "rewind");
        snprintf(want, sizeof(want), "cannot rewind to %zu tokens", len + 1 + mine);
        message_has(j, want);
        if (j->be->buffer_write(j->dev, j->ctx, buf, 4096 + mine, &eight, 8) != VKL_ERR_INVALID_ARGUMENT)
            fail(j, VKL_OK, "write out of range accepted");
        snprintf(want, sizeof(want), "[%zu, +8)", 4096 + mine);
        message_has(j, want);
    }
    if (buf) j->be->buffer_destroy(j->dev, j->ctx, buf);
    return NULL;
}

/* Runs the jobs on their own threads at once (start barrier), or, with
 * together false, one after the other on this thread. */
static void run(job *jobs, int n, void *(*fn)(void *), bool together) {
    pthread_barrier_t start;
    pthread_t threads[2];
    if (together) CHECK(pthread_barrier_init(&start, NULL, (unsigned)n) == 0);
    for (int k = 0; k < n; k++) {
        jobs[k].start = together ? &start : NULL;
        jobs[k].st = VKL_OK;
        jobs[k].error[0] = 0;
        if (!together) fn(&jobs[k]);
        else CHECK(pthread_create(&threads[k], NULL, fn, &jobs[k]) == 0);
    }
    for (int k = 0; together && k < n; k++) CHECK(pthread_join(threads[k], NULL) == 0);
    if (together) pthread_barrier_destroy(&start);
    for (int k = 0; k < n; k++) CHECKF(!jobs[k].error[0], "%s", jobs[k].error);
}

/* Each job's tokens equal the first of `alone`'s, and after as many tokens
 * its last logits too. */
static void same_as(const job *got, const job *alone, size_t vocab, const char *how) {
    for (int k = 0; k < 2; k++) {
        CHECKF(got[k].n_tokens == got[k].n_new &&
                   !memcmp(got[k].tokens, alone[k].tokens, got[k].n_new * sizeof(int32_t)),
               "%s: thread %d's tokens differ from its session's alone", how, k);
        CHECKF(got[k].n_new != alone[k].n_new || !memcmp(got[k].logits, alone[k].logits, vocab * sizeof(float)),
               "%s: thread %d's last logits differ from its session's alone", how, k);
    }
}

int main(int argc, char **argv) {
    const char *backend = argc > 1 ? argv[1] : "ref";
    static const int32_t prompts[2][6] = {{1, 1163, 262, 2050}, {1, 400, 31, 77, 9, 500}};
    static const size_t prompt_len[2] = {4, 6};
    vkl_context *main_ctx = NULL, *ctx[2] = {NULL, NULL};
    CHECK(vkl_context_create(NULL, &main_ctx) == VKL_OK);
    for (int k = 0; k < 2; k++) CHECK(vkl_context_create(NULL, &ctx[k]) == VKL_OK);
    vkl_model_options mo;
    vkl_model_options_init(&mo);
    mo.backend = backend;
    vkl_model *m = NULL;
    CHECK_OK(main_ctx, vkl_model_load(main_ctx, MODEL, &mo, &m));
    if (!m || !ctx[0] || !ctx[1]) return check_finish("test_threads");
    const size_t vocab = vkl_model_vocab_size(m);

    job alone[2], both[2];
    memset(alone, 0, sizeof(alone));
    for (int k = 0; k < 2; k++) {
        alone[k] = (job){.id = k, .model = m, .ctx = ctx[k], .prompt = prompts[k], .n_prompt = prompt_len[k],
                         .n_new = N_NEW};
        vkl_session_options o = options(ctx[k]);
        CHECK_OK(ctx[k], vkl_session_create(m, &o, &alone[k].session));
        alone[k].logits = calloc(vocab, sizeof(float));
        both[k] = alone[k];
        both[k].logits = calloc(vocab, sizeof(float));
        CHECK(alone[k].logits && both[k].logits);
    }
    if (failures) return check_finish("test_threads");

    /* (a) the same sessions alone, then both at once; then sessions made on the threads */
    run(alone, 2, generate, false);
    CHECK(memcmp(alone[0].tokens, alone[1].tokens, sizeof(alone[0].tokens)) != 0); /* different work */
    run(both, 2, generate, true);
    same_as(both, alone, vocab, "sessions made on the main thread");
    for (int k = 0; k < 2; k++) {
        both[k].session = NULL;
        both[k].n_new = N_SHORT;
    }
    run(both, 2, generate, true);
    same_as(both, alone, vocab, "sessions made on their threads");

    /* (b) errors at once, each read back by its own thread */
    const vkl_backend_vtable *be = vkl_backend_find(backend);
    vkl_backend_device *dev = NULL;
    CHECK_OK(main_ctx, be->open(main_ctx, NULL, &dev));
    for (int k = 0; k < 2 && dev; k++) {
        alone[k].be = be;
        alone[k].dev = dev;
        CHECK_OK(ctx[k], vkl_session_append(alone[k].session, alone[k].prompt, alone[k].n_prompt));
    }
    if (dev) run(alone, 2, provoke_errors, true);
    if (dev) be->close(dev);

    for (int k = 0; k < 2; k++) {
        vkl_session_free(alone[k].session);
        free(alone[k].logits);
        free(both[k].logits);
        vkl_context_destroy(ctx[k]);
    }
    vkl_model_free(m);
    vkl_context_destroy(main_ctx);
    return check_finish("test_threads");
}
