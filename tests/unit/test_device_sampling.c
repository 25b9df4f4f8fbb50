/* Greedy sampling on the device (docs/runtime.md, "Greedy sampling on the
 * device"), the bundled model on one backend, each session beside a twin
 * with host_sampling = 1 (today's path) fed the same tokens:
 *  (a) the generated tokens are the twin's; every decode step's token came
 *      from the backend (device_picks), and the steps read back exactly the
 *      prompt's logits row plus 12 bytes a decode step: the rows stayed on
 *      the device (the twin reads a row every step); on Vulkan the
 *      backend's own count of bytes downloaded says the same;
 *  (b) vkl_session_logits after a decode step reads the row then (once: a
 *      second call reads nothing), bit for bit the twin's row, and the next
 *      vkl_session_sample still gives the pick;
 *  (c) a NaN in the final norm's weight (a corrupt file loaded unverified):
 *      a decode step's pick sees it, the session reads the row, and
 *      vkl_session_sample fails with the twin's status and message, naming
 *      the token; on ref the failure is required (so the path is taken);
 *  (d) a sampler that is not plain greedy (temperature 0.8; a repetition
 *      penalty), and check_finite on ref, keep the host path: no picks.
 * Usage: test_device_sampling [ref|cpu|vulkan] (default ref); exit 77: the
 * backend is not in this build or cannot open here. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, setenv */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend_env.h"
#include "check.h"
#include "model.h"
#include "ops.h"
#include "vkllm.h"
#include "vkm.h"
#ifdef VKL_HAVE_VULKAN
#include "../../backends/vulkan/vulkan_backend.h"
#endif

#define MODEL VKL_TEST_DATA_DIR "/../model/vkllm-kjv.vkm"
#define CONTEXT 128
#define N_NEW 40

/* "In the beginning" in the bundled tokenizer, with its BOS. */
static const int32_t prompt[] = {1, 1163, 262, 2050};
#define N_PROMPT (sizeof(prompt) / sizeof(prompt[0]))

typedef struct env {
    vkl_context *ctx;
    const char *backend;
} env;

static vkl_status load(env *e, const char *path, int no_verify, vkl_model **m) {
    vkl_model_options mo;
    vkl_model_options_init(&mo);
    mo.backend = e->backend;
    mo.no_verify = no_verify;
    return vkl_env_model_load(e->ctx, path, &mo, m);
}

static vkl_status open_session(vkl_model *m, int host, float temperature, float penalty, int check_finite,
                               vkl_session **s) {
    vkl_session_options so;
    vkl_session_options_init(&so);
    so.max_context = CONTEXT;
    so.host_sampling = host;
    so.sampling.temperature = temperature;
    so.sampling.repetition_penalty = penalty;
    so.check_finite = check_finite;
    return vkl_session_create(m, &so, s);
}

typedef struct collected {
    int32_t tokens[N_NEW];
    size_t n;
} collected;

static int collect(void *user, int32_t token) {
    collected *c = user;
    c->tokens[c->n++] = token;
    return 0;
}

/* Bytes the backend itself counts as downloaded (Vulkan), else 0. */
static uint64_t backend_downloaded(const env *e, const vkl_model *m) {
#ifdef VKL_HAVE_VULKAN
    if (!strcmp(e->backend, "vulkan")) {
        vkl_vk_host_work w;
        vkl_vk_get_host_work(m->dev, &w);
        return w.downloaded;
    }
#endif
    (void)e;
    (void)m;
    return 0;
}

static void test_generate(env *e, vkl_model *m) {
    vkl_session *dev = NULL, *host = NULL;
    collected got = {{0}, 0}, want = {{0}, 0};
    CHECK_OK(e->ctx, open_session(m, 0, 0, 1, 0, &dev));
    CHECK_OK(e->ctx, open_session(m, 1, 0, 1, 0, &host));
    if (!dev || !host) goto done;
    const uint64_t d0 = backend_downloaded(e, m);
    CHECK_OK(e->ctx, vkl_session_generate(dev, prompt, N_PROMPT, N_NEW, -1, collect, &got));
    const uint64_t d1 = backend_downloaded(e, m);
    CHECK_OK(e->ctx, vkl_session_generate(host, prompt, N_PROMPT, N_NEW, -1, collect, &want));
    const uint64_t d2 = backend_downloaded(e, m);
    CHECKF(got.n == N_NEW && want.n == N_NEW && !memcmp(got.tokens, want.tokens, sizeof(got.tokens)),
           "%s: device-sampled tokens differ from host-sampled ones", e->backend);
    vkl_session_stats sd, sh;
    vkl_session_get_stats(dev, &sd);
    vkl_session_get_stats(host, &sh);
    const uint64_t row = vkl_model_vocab_size(m) * sizeof(float);
    printf("%s: %zu tokens the same; decode steps %llu: device picks %llu, read back %llu bytes (host: %llu)\n",
           e->backend, got.n, (unsigned long long)sd.decode_tokens, (unsigned long long)sd.device_picks,
           (unsigned long long)sd.readback_bytes, (unsigned long long)sh.readback_bytes);
    CHECK(sd.decode_tokens == N_NEW && sd.device_picks == sd.decode_tokens); /* generate appends its last token too */
    CHECK(sd.readback_bytes == row + 12 * sd.decode_tokens); /* the index (i64) and the logit (f32) */
    CHECK(sh.device_picks == 0 && sh.readback_bytes == row * (1 + sh.decode_tokens));
    if (!strcmp(e->backend, "vulkan")) {
        printf("vulkan: the backend downloaded %llu bytes for the device-sampled generation, %llu for the host's\n",
               (unsigned long long)(d1 - d0), (unsigned long long)(d2 - d1));
        CHECK(d1 - d0 == sd.readback_bytes && d2 - d1 == sh.readback_bytes);
    }

    /* (b) the row when asked, once, as the host path has it */
    const int32_t next = got.tokens[N_NEW - 1];
    CHECK_OK(e->ctx, vkl_session_append(dev, &next, 1));
    CHECK_OK(e->ctx, vkl_session_append(host, &next, 1));
    vkl_session_get_stats(dev, &sd);
    const float *a = vkl_session_logits(dev), *b = vkl_session_logits(host);
    CHECKF(a && b && !memcmp(a, b, row), "%s: the logits read after a pick differ from the host path's", e->backend);
    vkl_session_stats after;
    vkl_session_get_stats(dev, &after);
    CHECK(after.readback_bytes == sd.readback_bytes + row);
    CHECK(vkl_session_logits(dev) == a);
    vkl_session_get_stats(dev, &after);
    CHECK(after.readback_bytes == sd.readback_bytes + row);
    int32_t t_dev = -1, t_host = -2;
    CHECK_OK(e->ctx, vkl_session_sample(dev, &t_dev));
    CHECK_OK(e->ctx, vkl_session_sample(host, &t_host));
    CHECK(t_dev == t_host);
    /* a rewind forgets the pick and the row */
    CHECK_OK(e->ctx, vkl_session_rewind(dev, N_PROMPT));
    CHECK(vkl_session_logits(dev) == NULL);
    CHECK_ERR(e->ctx, vkl_session_sample(dev, &t_dev), VKL_ERR_STATE, "no logits yet");
done:
    vkl_session_free(dev);
    vkl_session_free(host);
}

/* (d) */
static void test_host_kept(env *e, vkl_model *m) {
    const struct {
        float temperature, penalty;
        int check_finite;
        const char *what;
    } cases[] = {{0.8f, 1, 0, "temperature 0.8"}, {0, 1.1f, 0, "repetition penalty 1.1"}, {0, 1, 1, "check_finite"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (cases[i].check_finite && strcmp(e->backend, "ref")) continue; /* ref alone checks */
        vkl_session *s = NULL;
        collected c = {{0}, 0};
        CHECK_OK(e->ctx, open_session(m, 0, cases[i].temperature, cases[i].penalty, cases[i].check_finite, &s));
        if (s) CHECK_OK(e->ctx, vkl_session_generate(s, prompt, N_PROMPT, 8, -1, collect, &c));
        vkl_session_stats st;
        vkl_session_get_stats(s, &st);
        CHECKF(s && st.device_picks == 0 && st.decode_tokens == 8, "%s: %llu device picks", cases[i].what,
               (unsigned long long)st.device_picks);
        vkl_session_free(s);
    }
}

/* The final norm's weight: walking back from the logits along each node's
 * first input, the first RMSNorm met, if its scale is f32. */
static uint32_t final_norm_weight(const vkl_graph *g) {
    uint32_t t = g->outputs[vkl_model_logits_output(g)];
    while (t != VKL_NONE && g->tensors[t].producer != VKL_NONE) {
        const vkl_node *n = &g->nodes[g->tensors[t].producer];
        if (n->op == VKL_OP_RMS_NORM)
            return n->n_inputs > 1 && g->tensors[n->inputs[1]].kind == VKL_TENSOR_WEIGHT &&
                           g->tensors[n->inputs[1]].dtype == VKL_DTYPE_F32
                       ? n->inputs[1]
                       : VKL_NONE;
        t = n->n_inputs ? n->inputs[0] : VKL_NONE;
    }
    return VKL_NONE;
}

/* A step after the prompt, then a sample: the status and message. */
static vkl_status nan_step(env *e, vkl_model *m, int host, char *msg, size_t cap) {
    vkl_session *s = NULL;
    int32_t tok;
    const int32_t next = 5;
    vkl_status st = open_session(m, host, 0, 1, 0, &s);
    if (!st) st = vkl_session_append(s, prompt, N_PROMPT);
    if (!st) st = vkl_session_append(s, &next, 1);
    if (!st) st = vkl_session_sample(s, &tok);
    snprintf(msg, cap, "%s", st ? vkl_context_error(e->ctx) : "");
    if (!st) snprintf(msg, cap, "token %d", tok);
    vkl_session_stats stats;
    vkl_session_get_stats(s, &stats);
    if (st) CHECK(stats.device_picks == 0); /* nothing picked from a NaN row */
    vkl_session_free(s);
    return st;
}

/* (c) */
static void test_nan(env *e) {
    size_t size = 0;
    uint8_t *file = check_read_file(MODEL, &size);
    REQUIRE(file, "cannot read %s", MODEL);
    vkl_vkm *v = NULL;
    REQUIRE(vkl_vkm_open_memory(e->ctx, file, size, &v) == VKL_OK, "%s", vkl_context_error(e->ctx));
    const vkl_graph *g = vkl_vkm_graph(v);
    const uint32_t w = final_norm_weight(g);
    const size_t off = w == VKL_NONE ? 0 : (size_t)((const uint8_t *)g->tensors[w].data - file);
    vkl_vkm_close(v);
    REQUIRE(w != VKL_NONE, "the bundled model's logits come from no RMSNorm with an f32 weight");
    const float nan = NAN;
    memcpy(file + off, &nan, sizeof(nan));
    char dir[] = "/tmp/vkl_test_device_sampling_XXXXXX", path[64];
    REQUIRE(mkdtemp(dir), "mkdtemp");
    snprintf(path, sizeof(path), "%s/nan.vkm", dir);
    FILE *f = fopen(path, "wb");
    const bool written = f && fwrite(file, 1, size, f) == size;
    if (f) fclose(f);
    free(file);
    vkl_model *m = NULL;
    if (written) CHECK_OK(e->ctx, load(e, path, 1, &m));
    if (m) {
        char got[512], want[512];
        const vkl_status sd = nan_step(e, m, 0, got, sizeof(got)), sh = nan_step(e, m, 1, want, sizeof(want));
        printf("%s, NaN in the final norm: device path '%s', host path '%s'\n", e->backend, got, want);
        CHECKF(sd == sh && !strcmp(got, want), "%s: device path %d '%s', host path %d '%s'", e->backend, sd, got, sh,
               want);
        if (!strcmp(e->backend, "ref")) CHECKF(sh != VKL_OK && strstr(want, "NaN"), "ref: no NaN reported: '%s'", want);
    }
    vkl_model_free(m);
    unlink(path);
    rmdir(dir);
}

int main(int argc, char **argv) {
    env e = {NULL, argc > 1 ? argv[1] : "ref"};
    if (vkl_context_create(NULL, &e.ctx)) return 2;
    if (!vkl_backend_find(e.backend)) {
        printf("test_device_sampling %s: skipped: not in this build\n", e.backend);
        vkl_context_destroy(e.ctx);
        return 77;
    }
    vkl_model *m = NULL;
    vkl_status st = load(&e, MODEL, 0, &m);
    if (st == VKL_ERR_NOT_FOUND) {
        printf("test_device_sampling %s: skipped: %s\n", e.backend, vkl_context_error(e.ctx));
        vkl_context_destroy(e.ctx);
        return 77;
    }
    CHECK_OK(e.ctx, st);
    if (m) {
        test_generate(&e, m);
        test_host_kept(&e, m);
    }
    vkl_model_free(m);
    test_nan(&e);
    vkl_context_destroy(e.ctx);
    return check_finish("test_device_sampling");
}
