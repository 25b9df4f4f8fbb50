/* The quantize pass on several threads makes the same bytes as on one: a
 * graph with a [K, N] MatMul weight large enough for two rounds of
 * conversion, an odd N, a Gemm with transB ([N, K], read in place), an int8
 * lm_head whose K is not a multiple of the transposing copy's block, and a
 * bf16 embedding table, quantized on 1, 2, 3 and 5 threads, with no read
 * hook, one that copies, and one that declines. The release hook sees only
 * source bytes and each source read in place whole; progress ends at done ==
 * total. A matrix with a NaN fails at the same stripe, with the
 * same message, on any thread count; a progress hook can stop the pass. */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fusion_util.h"
#include "passes/quantize_convert.h"
#include "quant/quant.h"
#include "test_rng.h"

#define N_BIG 70000 /* x K_BIG x 4 bytes = 71.7 MB: two rounds of 64 MB */
#define K_BIG 256

typedef struct source {
    const char *name, *dims;
    int64_t count;
    float *data;
} source;

typedef struct hooks {
    const source *src;
    int n_src;
    uint64_t released_outside, releases, last_done, last_total, reports;
    bool whole[8];   /* a release covered source i entirely */
    bool monotone;
    int read_mode;   /* 0: no read hook; 1: copy (as pread would); 2: decline every read */
    atomic_ulong reads; /* called from the pass's threads */
} hooks;

static bool on_read(void *user, const void *data, size_t bytes, void *dst) {
    hooks *h = user;
    atomic_fetch_add(&h->reads, 1);
    if (h->read_mode == 2) return false;
    memcpy(dst, data, bytes);
    return true;
}

static void on_release(void *user, const void *data, size_t bytes) {
    hooks *h = user;
    h->releases++;
    const char *p = data;
    for (int i = 0; i < h->n_src; i++) {
        const char *s = (const char *)h->src[i].data, *e = s + h->src[i].count * (int64_t)sizeof(float);
        if (p >= s && p + bytes <= e) {
            if (p == s && p + bytes == e) h->whole[i] = true;
            return;
        }
    }
    h->released_outside++;
}

static int on_progress(void *user, uint64_t done, uint64_t total) {
    hooks *h = user;
    if (done < h->last_done || done > total) h->monotone = false;
    h->last_done = done;
    h->last_total = total;
    h->reports++;
    return 0;
}

/* x [batch, 256] -> MatMul(W_big [256, 70000]); y [batch, 256] -> Gemm(y,
 * W_nk [1000, 256], transB) -> ...; z [batch, 203] -> MatMul(W_lm [203,
 * 1001]) = "logits"; Gather(table [777, 256], ids). */
static vkl_graph *build(vkl_context *ctx, const source *src) {
    vkl_graph *g = NULL;
    if (vkl_graph_create(ctx, &g)) return NULL;
    uint32_t x = fu_input(g, "x", VKL_DTYPE_F32, "batch, 256"), z = fu_input(g, "z", VKL_DTYPE_F32, "batch, 203");
    uint32_t ids = fu_input(g, "ids", VKL_DTYPE_I64, "batch");
    uint32_t w[4];
    for (int i = 0; i < 4; i++) { /* borrowed, as an importer's mapped weights are: releases point into them */
        w[i] = fu_tensor(g, src[i].name, VKL_DTYPE_F32, VKL_TENSOR_WEIGHT, src[i].dims);
        CHECK_OK(ctx, vkl_graph_set_data(g, w[i], src[i].data, (size_t)src[i].count * sizeof(float), false));
    }
    fu_output(g, fu_op2(g, VKL_OP_MAT_MUL, x, w[0]));
    const vkl_attr tb = fu_attr_int("transB", 1);
    fu_output(g, fu_node(g, VKL_OP_GEMM, (const uint32_t[2]){x, w[1]}, 2, &tb, 1));
    uint32_t logits = fu_tensor(g, "logits", VKL_DTYPE_INVALID, VKL_TENSOR_ACTIVATION, NULL);
    CHECK_OK(ctx, vkl_graph_add_node(g, VKL_OP_MAT_MUL, "lm_head", (const uint32_t[2]){z, w[2]}, 2, &logits, 1, NULL,
                                     0, NULL));
    fu_output(g, logits);
    const vkl_attr axis = fu_attr_int("axis", 0);
    fu_output(g, fu_node(g, VKL_OP_GATHER, (const uint32_t[2]){w[3], ids}, 2, &axis, 1));
    CHECK_OK(ctx, vkl_graph_infer_shapes(g)); /* the rewrites check their replacements' shapes */
    return g;
}

/* Runs the pass on `threads`; *out gets the converted weights' bytes, in
 * tensor order, concatenated (caller frees). */
static size_t quantize_on(vkl_context *ctx, const source *src, uint32_t threads, uint8_t **out, hooks *h) {
    *out = NULL;
    vkl_graph *g = build(ctx, src);
    if (!g) return 0;
    vkl_quant_recipe r;
    CHECK_OK(ctx, vkl_quant_recipe_parse(ctx, "weights=e0m4 lm_head=int8 embed=bf16", &r));
    vkl_quantize_options o;
    vkl_quantize_options_init(&o);
    o.threads = threads;
    o.release = on_release;
    o.progress = on_progress;
    if (h->read_mode) o.read = on_read;
    o.user = h;
    vkl_quantize_report rep;
    uint32_t fired = 0;
    CHECK_OK(ctx, vkl_pass_quantize_opts(g, &r, &o, &rep, &fired));
    CHECKF(fired == 4 && rep.matmuls == 3 && rep.lm_head == 1 && rep.embeddings == 1 && rep.skipped == 0,
           "threads %u: fired %u, matmuls %u, lm_head %u, embeddings %u, skipped %u", threads, fired, rep.matmuls,
           rep.lm_head, rep.embeddings, rep.skipped);
    size_t total = 0;
    for (uint32_t t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].kind == VKL_TENSOR_WEIGHT && g->tensors[t].dtype != VKL_DTYPE_F32 &&
            g->tensors[t].dtype != VKL_DTYPE_I64)
            total += g->tensors[t].nbytes;
    uint8_t *bytes = malloc(total ? total : 1);
    size_t at = 0;
    for (uint32_t t = 0; bytes && t < g->n_tensors; t++)
        if (g->tensors[t].kind == VKL_TENSOR_WEIGHT && g->tensors[t].dtype != VKL_DTYPE_F32 &&
            g->tensors[t].dtype != VKL_DTYPE_I64) {
            memcpy(bytes + at, g->tensors[t].data, g->tensors[t].nbytes);
            at += g->tensors[t].nbytes;
        }
    vkl_graph_destroy(g);
    *out = bytes;
    return total;
}

static void test_same_bytes(vkl_context *ctx) {
    rng rg = {2026};
    source src[4] = {{"w_big", "256, 70000", (int64_t)K_BIG * N_BIG, NULL},
                     {"w_nk", "1000, 256", 1000 * 256, NULL},
                     {"w_lm", "203, 1001", 203 * 1001, NULL},
                     {"table", "777, 256", 777 * 256, NULL}};
    for (int i = 0; i < 4; i++) {
        src[i].data = malloc((size_t)src[i].count * sizeof(float));
        REQUIRE(src[i].data, "malloc");
        for (int64_t k = 0; k < src[i].count; k++) src[i].data[k] = 0.05f * rnd_gauss(&rg);
    }
    uint8_t *one = NULL;
    hooks h1 = {src, 4, .monotone = true};
    size_t n1 = quantize_on(ctx, src, 1, &one, &h1);
    CHECK(one && n1 > 0);
    /* threads x read hook: none, copying (w_big, [K, N] and over a round, is
     * read in column bands through it), declining (the mapping after all) */
    const uint32_t counts[3] = {2, 3, 5};
    for (int c = 0; c < 9 && one; c++) {
        uint8_t *many = NULL;
        hooks h = {src, 4, .monotone = true, .read_mode = c / 3};
        size_t n = quantize_on(ctx, src, counts[c % 3], &many, &h);
        CHECKF(n == n1 && many && !memcmp(one, many, n1),
               "%u threads, read mode %d: the converted bytes differ from 1 thread's", counts[c % 3], h.read_mode);
        CHECKF(h.released_outside == 0, "%u threads: %llu releases outside the sources", counts[c % 3],
               (unsigned long long)h.released_outside);
        /* every source but w_big is read in place and released whole; w_big
         * through the mapping is released column band by band (a range per
         * source row per round), through a copying hook not at all */
        CHECKF(h.whole[1] && h.whole[2] && h.whole[3] && h.whole[0] == (h.read_mode != 1),
               "read mode %d: whole sources released: %d %d %d %d", h.read_mode, h.whole[0], h.whole[1], h.whole[2],
               h.whole[3]);
        CHECKF(h.read_mode == 1 ? h.releases == 3 : h.releases > K_BIG, "read mode %d: %llu releases", h.read_mode,
               (unsigned long long)h.releases);
        /* copying: a read per source row per band; declining: stops at the first */
        CHECKF(h.read_mode == 1 ? atomic_load(&h.reads) >= K_BIG
                                : h.read_mode == 2 ? atomic_load(&h.reads) >= 1 : atomic_load(&h.reads) == 0,
               "read mode %d: %lu reads",
               h.read_mode, (unsigned long)atomic_load(&h.reads));
        CHECKF(h.monotone && h.reports > 4 && h.last_done == h.last_total, "%u threads: progress ended at %llu of %llu",
               counts[c % 3], (unsigned long long)h.last_done, (unsigned long long)h.last_total);
        free(many);
    }
    free(one);
    for (int i = 0; i < 4; i++) free(src[i].data);
}

/* A NaN in row 700 of W^T: stripe 640..767 fails, with the same status and
 * message on every thread count. */
static void test_same_failure(vkl_context *ctx) {
    const int64_t K = 256, N = 1037;
    float *w = malloc((size_t)(K * N) * sizeof(float));
    size_t row_bytes = 0;
    CHECK_OK(ctx, vkl_quant_canonical_bytes(ctx, VKL_DTYPE_Q_E0M4, 128, 1, K, &row_bytes));
    uint8_t *dst = malloc(row_bytes * (size_t)N);
    REQUIRE(w && dst, "malloc");
    rng rg = {9};
    for (int64_t i = 0; i < K * N; i++) w[i] = rnd_gauss(&rg);
    w[17 * N + 700] = NAN; /* [K, N]: W^T row 700 */
    char first[VKL_ERROR_CAP] = "";
    for (uint32_t threads = 1; threads <= 4; threads++) {
        vkl_quantize_options o;
        vkl_quantize_options_init(&o);
        vkl_qconv c = {ctx, NULL, &o, 0, 0};
        CHECK_OK(ctx, vkl_pool_create(ctx, threads, &c.pool));
        const vkl_qconv_job job = {w, false, K, N, VKL_DTYPE_Q_E0M4, 128, row_bytes, dst};
        CHECK_ERR(ctx, vkl_qconv_run(&c, &job), VKL_ERR_INVALID_ARGUMENT, "rows 640..767");
        if (threads == 1) snprintf(first, sizeof(first), "%s", vkl_context_error(ctx));
        else CHECKF(!strcmp(first, vkl_context_error(ctx)), "%u threads: '%s', 1 thread: '%s'", threads,
                    vkl_context_error(ctx), first);
        vkl_pool_destroy(c.pool);
    }
    free(w);
    free(dst);
}

static int stop_now(void *user, uint64_t done, uint64_t total) {
    (void)user, (void)done, (void)total;
    return 1;
}

/* A progress hook that returns nonzero stops the pass (how a caller with a
 * Ctrl-C flag gets out of a long import). */
static void test_stop(vkl_context *ctx) {
    float w[256 * 8];
    for (int i = 0; i < 256 * 8; i++) w[i] = (float)(i % 7) - 3.0f;
    source src[4] = {{"w_big", "256, 8", 256 * 8, w}, {"w_nk", "8, 256", 256 * 8, w},
                     {"w_lm", "203, 8", 203 * 8, w}, {"table", "8, 256", 256 * 8, w}};
    vkl_graph *g = build(ctx, src);
    REQUIRE(g, "build");
    vkl_quant_recipe r;
    CHECK_OK(ctx, vkl_quant_recipe_parse(ctx, "weights=int4", &r));
    vkl_quantize_options o;
    vkl_quantize_options_init(&o);
    o.progress = stop_now;
    uint32_t fired;
    CHECK_ERR(ctx, vkl_pass_quantize_opts(g, &r, &o, NULL, &fired), VKL_ERR_STATE, "stopped by the caller");
    vkl_graph_destroy(g);
}

int main(void) {
    vkl_context *ctx;
    if (vkl_context_create(NULL, &ctx)) return 1;
    test_same_bytes(ctx);
    test_same_failure(ctx);
    test_stop(ctx);
    vkl_context_destroy(ctx);
    return check_finish("test_quantize_threads");
}
