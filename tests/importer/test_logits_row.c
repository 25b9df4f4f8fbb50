/* The one-row graph (engine/logits_row.h): prompts that keep only their last
 * row's logits run the lm_head on that row alone.
 *  (a) the bundled model and the causal-LM fixtures (llama, llama-dynamo,
 *      qwen2, gpt2) each get a one-row graph whose lm_head (the matrix
 *      product the logits come from) has one row at a 64-row prompt, where
 *      the full graph's has 64; its logits input is the Gather of the row
 *      input;
 *  (b) vkl_session_append's logits equal the last row of
 *      vkl_session_append_scored's, on ref bit for bit, over first prompts
 *      inside a padded bucket and at its edges (1, 2, 37, 63, 64, 65, 127,
 *      128 tokens), later chunks after earlier tokens, a decode step, a
 *      rewind, and a prompt longer than a chunk;
 *  (c) a first prompt replays a padded executable: no prepare, no host
 *      allocation.
 * Usage: test_logits_row [BACKEND]: with cpu or vulkan, (b) and (c) run the
 * append side on that backend, within 1e-4 of max |logit| of ref's scored
 * rows (cpu: with its int8 dot products off, since rounding activations to
 * int8 alone moves logits by about 1%; and with them on, of the cpu's own
 * scored rows. Vulkan on lavapipe runs ref's comparison only: a scored
 * session there doubles a test of minutes). Exit 77: the backend cannot
 * open here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_counter.h"
#include "backend_env.h"
#include "check.h"
#include "logits_row.h"
#include "model.h"
#include "onnx_import.h"
#include "ops.h"
#include "passes/pipeline.h"
#include "vkm.h"

#define BUNDLED VKL_TEST_DATA_DIR "/../model/vkllm-kjv.vkm"
#define CONTEXT 256
#define CHUNK 128
#define PAD 64

static vkl_status make_vkm(vkl_context *ctx, const char *onnx, const char *out) {
    vkl_onnx_model *m;
    vkl_pipeline_report r;
    vkl_status st = vkl_onnx_open(ctx, onnx, &m);
    if (st) return st;
    st = vkl_pipeline_run(vkl_onnx_graph(m), VKL_PASS_ALL, &r);
    if (!st) st = vkl_vkm_write(ctx, vkl_onnx_graph(m), NULL, 0, out);
    vkl_onnx_close(m);
    return st;
}

/* The node the logits come from through the ops that map rows to rows: the
 * first matrix product met walking back along each node's non-weight input. */
static uint32_t lm_head(const vkl_graph *g, uint32_t logits) {
    for (uint32_t t = logits; t != VKL_NONE && g->tensors[t].producer != VKL_NONE;) {
        uint32_t p = g->tensors[t].producer;
        const vkl_node *n = &g->nodes[p];
        if (n->op == VKL_OP_MAT_MUL || n->op == VKL_OP_QUANT_MAT_MUL) return p;
        t = VKL_NONE;
        for (uint32_t k = 0; k < n->n_inputs && t == VKL_NONE; k++)
            if (n->inputs[k] != VKL_NONE && g->tensors[n->inputs[k]].kind != VKL_TENSOR_WEIGHT) t = n->inputs[k];
    }
    return VKL_NONE;
}

/* Rows of tensor t along axis 1 at a 64-token first prompt. */
static int64_t rows_at_64(vkl_context *ctx, const vkl_model *m, const vkl_graph *g, uint32_t t) {
    int64_t values[64], dims[VKL_MAX_RANK], n;
    size_t count = vkl_symtab_symbol_count(g->syms), bytes;
    if (count > 64) return -1;
    for (size_t i = 0; i < count; i++) values[i] = 1;
    values[m->sym_seq] = 64;
    values[m->sym_past] = 0;
    if (m->sym_total != VKL_NO_SYMBOL) values[m->sym_total] = 64;
    if (vkl_tensor_eval(ctx, g, t, values, count, dims, &n, &bytes) || g->tensors[t].shape.rank < 2) return -1;
    return dims[1];
}

/* (a) for a loaded model. */
static void check_graph(vkl_context *ctx, const vkl_model *m, const char *name) {
    REQUIRE(m->g_row && m->plan_row, "%s: no one-row graph", name);
    const vkl_graph *g = m->g, *r = m->g_row;
    const uint32_t logits = g->outputs[m->out_logits], row_logits = r->outputs[m->out_logits];
    const uint32_t head = lm_head(g, logits), row_head = lm_head(r, row_logits);
    REQUIRE(head != VKL_NONE && head == row_head, "%s: lm_head node %u in the full graph, %u in the one-row graph",
            name, head, row_head);
    const uint32_t out = g->nodes[head].outputs[0];
    const int64_t full_rows = rows_at_64(ctx, m, g, out), one_rows = rows_at_64(ctx, m, r, out);
    CHECKF(full_rows == 64, "%s: the full graph's lm_head has %lld rows", name, (long long)full_rows);
    CHECKF(one_rows == 1, "%s: the one-row graph's lm_head has %lld rows", name, (long long)one_rows);
    CHECKF(rows_at_64(ctx, m, r, row_logits) == 1, "%s: one-row logits are not one row", name);
    /* the walked ops start from the Gather of the row input */
    const uint32_t row_in = r->inputs[m->in_row];
    CHECK(!strcmp(r->tensors[row_in].name, VKL_LOGITS_ROW_INPUT));
    bool gathered = false;
    for (uint32_t i = 0; i < r->n_nodes; i++)
        gathered |= r->nodes[i].op == VKL_OP_GATHER && r->nodes[i].inputs[1] == row_in;
    CHECKF(gathered, "%s: nothing gathers the row input", name);
}

typedef struct pair {
    vkl_context *ctx, *ref_ctx;
    vkl_session *a, *b; /* a: append (the backend under test); b: append_scored (ref) */
    float *all;
    size_t vocab;
    bool exact;
    const int32_t *tokens;
    size_t at; /* tokens used so far by both */
    const char *name;
} pair;

/* Both sessions take n more tokens; a's logits against b's last row. */
static void both(pair *p, size_t n, const char *what) {
    CHECK_OK(p->ctx, vkl_session_append(p->a, p->tokens + p->at, n));
    CHECK_OK(p->ref_ctx, vkl_session_append_scored(p->b, p->tokens + p->at, n, p->all));
    p->at += n;
    const float *got = vkl_session_logits(p->a), *want = p->all + (n - 1) * p->vocab;
    REQUIRE(got, "%s %s: no logits", p->name, what);
    if (p->exact) {
        CHECKF(!memcmp(got, want, p->vocab * sizeof(float)), "%s %s (%zu tokens, length %zu): not bit-equal",
               p->name, what, n, vkl_session_length(p->a));
        return;
    }
    double err = 0, top = 0;
    for (size_t i = 0; i < p->vocab; i++) {
        err = fmax(err, fabs((double)got[i] - want[i]));
        top = fmax(top, fabs((double)want[i]));
    }
    CHECKF(err <= 1e-4 * top, "%s %s (%zu tokens, length %zu): error %g of max |logit| %g", p->name, what, n,
           vkl_session_length(p->a), err, top);
}

static void rewind_both(pair *p, size_t length) {
    CHECK_OK(p->ctx, vkl_session_rewind(p->a, length));
    CHECK_OK(p->ref_ctx, vkl_session_rewind(p->b, length));
    p->at = length;
}

/* (b) and (c): a on `m`, b on `ref`. */
static void check_sessions(vkl_context *ctx, alloc_counter *allocs, vkl_model *m, vkl_context *ref_ctx,
                           vkl_model *ref, const char *name) {
    vkl_session_options so;
    vkl_session_options_init(&so);
    so.max_context = CONTEXT;
    so.prefill_chunk = CHUNK;
    so.pad_multiple = PAD;
    const bool exact = m == ref && !strcmp(vkl_model_backend_name(m), "ref");
    pair p = {ctx, ref_ctx, NULL, NULL, NULL, vkl_model_vocab_size(m), exact, NULL, 0, name};
    int32_t *tokens = malloc(CONTEXT * sizeof(int32_t));
    p.all = malloc((size_t)CONTEXT * p.vocab * sizeof(float));
    REQUIRE(tokens && p.all, "out of memory");
    uint64_t x = 0x2545F4914F6CDD1Dull;
    for (size_t i = 0; i < CONTEXT; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        tokens[i] = (int32_t)(4 + x % (p.vocab - 4));
    }
    p.tokens = tokens;
    CHECK_OK(ctx, vkl_session_create(m, &so, &p.a));
    so.context = ref_ctx;
    CHECK_OK(ref_ctx, vkl_session_create(ref, &so, &p.b));
    if (p.a && p.b) {
        static const size_t firsts[] = {1, 2, 37, 63, 64, 65, 127, 128};
        for (size_t i = 0; i < sizeof(firsts) / sizeof(firsts[0]); i++) {
            rewind_both(&p, 0);
            both(&p, firsts[i], "first prompt");
        }
        both(&p, 5, "chunk after a prompt");
        both(&p, 1, "decode step");
        both(&p, 40, "second chunk");
        rewind_both(&p, 20);
        both(&p, 30, "chunk after a rewind");
        rewind_both(&p, 0);
        both(&p, CHUNK + 22, "prompt of two chunks");
        /* (c) a first prompt in a bucket the session prepared at creation */
        rewind_both(&p, 0);
        vkl_session_stats before, after;
        vkl_session_get_stats(p.a, &before);
        size_t allocs_before = allocs->allocs;
        CHECK_OK(ctx, vkl_session_append(p.a, tokens, 37));
        vkl_session_get_stats(p.a, &after);
        CHECKF(after.prepares == before.prepares, "%s: a first prompt prepared %llu executables", name,
               (unsigned long long)(after.prepares - before.prepares));
        CHECKF(allocs->allocs == allocs_before, "%s: a first prompt made %zu host allocations", name,
               allocs->allocs - allocs_before);
    }
    vkl_session_free(p.a);
    vkl_session_free(p.b);
    free(tokens);
    free(p.all);
}

/* A fixture imported and loaded on ref: (a), then (b) on ref. */
static void check_fixture(vkl_context *ctx, alloc_counter *allocs, const char *fixture) {
    char onnx[512], vkm[256];
    snprintf(onnx, sizeof(onnx), "%s/models/%s/model.onnx", VKL_TEST_DATA_DIR, fixture);
    snprintf(vkm, sizeof(vkm), "/tmp/vkllm_test_logits_row_%s.vkm", fixture);
    vkl_model_options mo;
    vkl_model_options_init(&mo);
    mo.backend = "ref";
    vkl_model *m = NULL;
    vkl_status st = make_vkm(ctx, onnx, vkm);
    if (!st) st = vkl_model_load(ctx, vkm, &mo, &m);
    CHECKF(!st, "%s: %s", fixture, vkl_context_error(ctx));
    if (m) {
        check_graph(ctx, m, fixture);
        check_sessions(ctx, allocs, m, ctx, m, fixture);
    }
    vkl_model_free(m);
    remove(vkm);
}

int main(int argc, char **argv) {
    const char *backend = argc > 1 ? argv[1] : "ref";
    alloc_counter allocs = {0};
    vkl_context_options co;
    vkl_context_options_init(&co);
    co.allocator = alloc_counter_hook(&allocs);
    vkl_context *ctx, *ref_ctx;
    if (vkl_context_create(&co, &ctx) || vkl_context_create(NULL, &ref_ctx)) return 2;
    vkl_model_options mo;
    vkl_model_options_init(&mo);
    mo.backend = "ref";
    vkl_model *ref = NULL, *m = NULL;
    CHECK_OK(ref_ctx, vkl_model_load(ref_ctx, BUNDLED, &mo, &ref));
    if (!strcmp(backend, "ref")) {
        if (ref) check_graph(ref_ctx, ref, "bundled");
        vkl_model_free(ref);
        ref = NULL;
        CHECK_OK(ctx, vkl_model_load(ctx, BUNDLED, &mo, &m));
        if (m) check_sessions(ctx, &allocs, m, ctx, m, "bundled on ref");
        static const char *const fixtures[] = {"llama", "llama-dynamo", "qwen2", "gpt2"};
        for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) check_fixture(ctx, &allocs, fixtures[i]);
    } else {
        mo.backend = backend;
        vkl_model *exact = NULL; /* m, or on cpu m without int8 activations */
        vkl_status st = vkl_env_model_load(ctx, BUNDLED, &mo, &m);
        if (st == VKL_ERR_NOT_FOUND || st == VKL_ERR_UNSUPPORTED || st == VKL_ERR_DEVICE) {
            printf("skipped: %s\n", vkl_context_error(ctx));
            vkl_model_free(ref);
            vkl_context_destroy(ctx);
            vkl_context_destroy(ref_ctx);
            return 77;
        }
        CHECK_OK(ctx, st);
        char name[96];
        exact = m;
        if (!strcmp(backend, "cpu")) {
            snprintf(name, sizeof(name), "bundled on %s against its scored rows", backend);
            if (m) check_sessions(ctx, &allocs, m, ctx, m, name);
            mo.disable_features = VKL_FEATURE_INT8_DOT;
            CHECK_OK(ctx, vkl_env_model_load(ctx, BUNDLED, &mo, &exact));
        }
        snprintf(name, sizeof(name), "bundled on %s against ref", backend);
        if (exact && ref) check_sessions(ctx, &allocs, exact, ref_ctx, ref, name);
        if (exact != m) vkl_model_free(exact);
    }
    vkl_model_free(m);
    vkl_model_free(ref);
    vkl_context_destroy(ctx);
    vkl_context_destroy(ref_ctx);
    if (failures) fprintf(stderr, "test_logits_row %s: %d failures\n", backend, failures);
    return failures ? 1 : 0;
}
