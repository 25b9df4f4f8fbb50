/* Sessions through the public API on the llama fixture: logits of prefill
 * and decode steps equal ONNX Runtime's, determinism by seed, rewind, the
 * misuse errors, and no host allocation in replayed decode steps (counted by
 * the allocator hook). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_counter.h"
#include "check.h"
#include "npy.h"
#include "onnx_import.h"
#include "passes/pipeline.h"
#include "vkllm.h"
#include "vkm.h"

/* Import the fixture with every pass and write it as a .vkm. */
static int make_vkm(vkl_context *ctx, const char *onnx, const char *out) {
    vkl_onnx_model *m;
    vkl_pipeline_report r;
    if (vkl_onnx_open(ctx, onnx, &m)) return -1;
    vkl_status st = vkl_pipeline_run(vkl_onnx_graph(m), VKL_PASS_ALL, &r);
    if (!st) st = vkl_vkm_write(ctx, vkl_onnx_graph(m), NULL, 0, out);
    vkl_onnx_close(m);
    return st ? -1 : 0;
}

/* max |a - last row of ref| over the row, and max |ref| */
static double row_error(const float *got, const vkl_host_tensor *ref, size_t vocab, double *maxref) {
    const float *r = (const float *)ref->data + ((size_t)(ref->nbytes / 4) - vocab);
    double e = 0;
    *maxref = 0;
    for (size_t i = 0; i < vocab; i++) {
        if (fabs(got[i] - r[i]) > e) e = fabs(got[i] - r[i]);
        if (fabs(r[i]) > *maxref) *maxref = fabs(r[i]);
    }
    return e;
}

static void read_ids(vkl_context *ctx, int step, int32_t *ids, size_t *n) {
    char path[512];
    vkl_host_tensor t;
    snprintf(path, sizeof(path), "%s/models/llama/step%d.in.input_ids.npy", VKL_TEST_DATA_DIR, step);
    CHECK(vkl_npy_read(ctx, path, &t) == VKL_OK);
    *n = t.nbytes / 8;
    for (size_t i = 0; i < *n; i++) ids[i] = (int32_t)((int64_t *)t.data)[i];
    vkl_free(ctx, t.data);
}

static void check_logits(vkl_context *ctx, vkl_session *s, int step, size_t vocab) {
    char path[512];
    vkl_host_tensor ref;
    snprintf(path, sizeof(path), "%s/models/llama/step%d.out.logits.npy", VKL_TEST_DATA_DIR, step);
    CHECK(vkl_npy_read(ctx, path, &ref) == VKL_OK);
    double maxref, err = row_error(vkl_session_logits(s), &ref, vocab, &maxref);
    if (!(err <= 1e-4 * maxref + 1e-5)) {
        fprintf(stderr, "step %d: logits error %g (max |ref| %g)\n", step, err, maxref);
        failures++;
    }
    vkl_free(ctx, ref.data);
}

int main(void) {
    alloc_counter c = {0};
    vkl_context_options co;
    vkl_context_options_init(&co);
    co.allocator = alloc_counter_hook(&c);
    vkl_context *ctx;
    if (vkl_context_create(&co, &ctx)) return 2;
    char onnx[512], vkm[] = "/tmp/vkllm_test_session.vkm";
    snprintf(onnx, sizeof(onnx), "%s/models/llama/model.onnx", VKL_TEST_DATA_DIR);
    if (make_vkm(ctx, onnx, vkm)) {
        fprintf(stderr, "import: %s\n", vkl_context_error(ctx));
        return 1;
    }
    vkl_model *m = NULL;
    CHECK(vkl_model_load(ctx, vkm, NULL, &m) == VKL_OK);
    if (!m) return 1;
    size_t vocab = vkl_model_vocab_size(m);
    CHECK(vocab == 512);
    vkl_session_options so;
    vkl_session_options_init(&so);
    so.max_context = 256;
    vkl_session *s = NULL;
    CHECK(vkl_session_create(m, &so, &s) == VKL_OK);
    if (!s) return 1;

    /* prefill 7 tokens, then two decode steps: the fixture's steps */
    int32_t ids[16];
    size_t n;
    CHECK(vkl_session_logits(s) == NULL);
    for (int step = 0; step < 3; step++) {
        read_ids(ctx, step, ids, &n);
        CHECK(vkl_session_append(s, ids, n) == VKL_OK);
        check_logits(ctx, s, step, vocab);
    }
    CHECK(vkl_session_length(s) == 9);

    /* rewind to the prefill and redo step 1: same logits */
    CHECK(vkl_session_rewind(s, 7) == VKL_OK);
    read_ids(ctx, 1, ids, &n);
    CHECK(vkl_session_append(s, ids, n) == VKL_OK);
    check_logits(ctx, s, 1, vocab);

    /* decoding allocates nothing on the host, across padding boundaries too:
     * every padded length was prepared at session creation */
    int32_t tok = 5;
    size_t before = c.allocs;
    for (int i = 0; i < 150; i++) {
        CHECK(vkl_session_sample(s, &tok) == VKL_OK);
        CHECK(vkl_session_append(s, &tok, 1) == VKL_OK);
    }
    CHECK(c.allocs == before);
    vkl_session_stats st;
    vkl_session_get_stats(s, &st);
    CHECK(st.replays >= 150);

    /* 2,000 tokens in one session of the fixture (2 layers): from creation on,
     * the padded first prompt and every decode step allocate nothing, and the
     * kernels' KV traffic is only new rows written in place and rows read by
     * attention; no byte of the cache is copied. */
    {
        vkl_session_options big = so;
        big.max_context = 2048 + 64;
        vkl_session *g = NULL;
        read_ids(ctx, 0, ids, &n);
        CHECK(vkl_session_create(m, &big, &g) == VKL_OK);
        size_t at_creation = c.allocs;
        int32_t t = 0;
        CHECK(g && vkl_session_generate(g, ids, n, 2000, -1, NULL, NULL) == VKL_OK);
        CHECK(c.allocs == at_creation);
        vkl_session_stats gs;
        vkl_session_get_stats(g, &gs);
        size_t row = gs.kv_bytes / big.max_context; /* one token's K and V, all layers */
        printf("generate 2000: length %zu, prepares %llu, replays %llu, KV written %llu, read %llu, copied %llu\n",
               vkl_session_length(g), (unsigned long long)gs.prepares, (unsigned long long)gs.replays,
               (unsigned long long)gs.kv_bytes_written, (unsigned long long)gs.kv_bytes_read,
               (unsigned long long)gs.kv_bytes_copied);
        CHECK(vkl_session_length(g) == n + 2000);
        CHECK(gs.kv_bytes_copied == 0);
        /* the prompt padded to 64 rows, then one row per decode step */
        CHECK(gs.kv_bytes_written == (64 + 2000) * row);
        CHECK(gs.kv_bytes_read > gs.kv_bytes_written);
        CHECK(vkl_session_sample(g, &t) == VKL_OK);
        vkl_session_free(g);
    }

    /* misuse: clear statuses, state unchanged */
    size_t len = vkl_session_length(s);
    CHECK(vkl_session_rewind(s, len + 1) == VKL_ERR_INVALID_ARGUMENT);
    CHECK(strstr(vkl_context_error(ctx), "cannot rewind") != NULL);
    int32_t big[300] = {0};
    CHECK(vkl_session_append(s, big, 300) == VKL_ERR_INVALID_ARGUMENT);
    CHECK(strstr(vkl_context_error(ctx), "do not fit") != NULL);
    int32_t bad = 512;
    CHECK(vkl_session_append(s, &bad, 1) == VKL_ERR_INVALID_ARGUMENT);
    CHECK(vkl_session_length(s) == len);
    CHECK(vkl_session_append(NULL, ids, 1) == VKL_ERR_INVALID_ARGUMENT);
    CHECK(vkl_session_create(NULL, &so, NULL) == VKL_ERR_INVALID_ARGUMENT);
    vkl_model *missing = (vkl_model *)&failures;
    CHECK(vkl_model_load(ctx, "/nonexistent.vkm", NULL, &missing) == VKL_ERR_IO && missing == NULL);
    CHECK(vkl_session_sample(s, NULL) == VKL_ERR_INVALID_ARGUMENT);
    vkl_session_reset(s);
    CHECK(vkl_session_length(s) == 0 && vkl_session_logits(s) == NULL);
    CHECK(vkl_session_sample(s, &tok) == VKL_ERR_STATE);

    /* Executables replayed after others ran (different layouts) still see
     * their own shape values: alternate prefill lengths after resets and
     * compare with a fresh session each time. */
    read_ids(ctx, 0, ids, &n);
    static const size_t lens[] = {5, 3, 7, 5, 3};
    for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
        vkl_session *fresh = NULL;
        float keep[512];
        vkl_session_reset(s);
        CHECK(vkl_session_append(s, ids, lens[k]) == VKL_OK);
        memcpy(keep, vkl_session_logits(s), sizeof(keep));
        CHECK(vkl_session_create(m, &so, &fresh) == VKL_OK);
        CHECK(vkl_session_append(fresh, ids, lens[k]) == VKL_OK);
        CHECK(!memcmp(keep, vkl_session_logits(fresh), sizeof(keep)));
        vkl_session_free(fresh);
    }

    /* the same seed gives the same tokens; sessions share the model */
    int32_t out[2][40];
    for (int k = 0; k < 2; k++) {
        vkl_session_options o2 = so;
        o2.sampling.temperature = 0.9f;
        o2.sampling.top_p = 0.95f;
        o2.sampling.seed = 7;
        vkl_session *s2 = NULL;
        CHECK(vkl_session_create(m, &o2, &s2) == VKL_OK);
        read_ids(ctx, 0, ids, &n);
        CHECK(vkl_session_append(s2, ids, n) == VKL_OK);
        for (int i = 0; i < 40 && s2; i++) {
            CHECK(vkl_session_sample(s2, &out[k][i]) == VKL_OK);
            CHECK(vkl_session_append(s2, &out[k][i], 1) == VKL_OK);
        }
        vkl_session_free(s2);
    }
    CHECK(!memcmp(out[0], out[1], sizeof(out[0])));

    vkl_session_free(s);
    vkl_model_free(m);
    vkl_context_destroy(ctx);
    remove(vkm);
    if (failures) fprintf(stderr, "test_session: %d failures\n", failures);
    return failures ? 1 : 0;
}
