/* Memory planner on the fixture models: the plan never lets two live
 * tensors share bytes (brute force over random symbol values), reuse
 * actually happens, and the paper's size relations decide it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "onnx_import.h"
#include "ops.h"
#include "passes/pipeline.h"
#include "plan.h"

static void set(const vkl_graph *g, int64_t *values, const char *name, int64_t v) {
    size_t i;
    if (vkl_symtab_find_symbol(g->syms, name, &i) == VKL_OK) values[i] = v;
}

static void check_model(vkl_context *ctx, const char *name) {
    char path[1024];
    snprintf(path, sizeof(path), "%s/models/%s/model.onnx", VKL_TEST_DATA_DIR, name);
    vkl_onnx_model *m;
    if (vkl_onnx_open(ctx, path, &m)) {
        fprintf(stderr, "%s: %s\n", path, vkl_context_error(ctx));
        failures++;
        return;
    }
    vkl_graph *g = vkl_onnx_graph(m);
    vkl_pipeline_report r;
    CHECK(vkl_pipeline_run(g, VKL_PASS_ALL, &r) == VKL_OK);
    vkl_plan *p = NULL;
    CHECK(vkl_plan_create(g, VKL_PLAN_REUSE, 0, &p) == VKL_OK);
    if (!p) {
        vkl_onnx_close(m);
        return;
    }
    size_t n = vkl_symtab_symbol_count(g->syms);
    int64_t *values = calloc(n + 1, sizeof(int64_t));
    unsigned seed = 12345;
    for (int trial = 0; trial < 200; trial++) {
        seed = seed * 1103515245u + 12345u;
        int64_t seq = 1 + (seed >> 8) % 64, past = (seed >> 16) % 300;
        for (size_t i = 0; i < n; i++) values[i] = 1 + (int64_t)((seed >> (i % 16)) % 5);
        set(g, values, "batch", 1 + (seed >> 4) % 3);
        set(g, values, "seq", seq);
        set(g, values, "past", past);
        set(g, values, "total_seq", past + seq);
        vkl_status st = vkl_plan_verify(p, values, n);
        if (st) {
            fprintf(stderr, "%s trial %d: %s\n", name, trial, vkl_context_error(ctx));
            failures++;
            break;
        }
    }
    /* Max context 2048, one new token: what the planner saves. */
    for (size_t i = 0; i < n; i++) values[i] = 1;
    set(g, values, "batch", 1);
    set(g, values, "seq", 1);
    set(g, values, "past", 2047);
    set(g, values, "total_seq", 2048);
    size_t *off = calloc(g->n_tensors + 1, sizeof(size_t)), planned = 0, plain = 0;
    vkl_layout_binding lb = {values, n, NULL, 0};
    CHECK(vkl_plan_layout(g->ctx, p, &lb, off, &planned, NULL) == VKL_OK);
    CHECK(vkl_plan_no_reuse_bytes(p, values, n, &plain) == VKL_OK);
    printf("%-13s buffers %3u for %3u tensors; at ctx 2048: planned %zu bytes, no reuse %zu bytes\n", name, p->n_buffers,
           g->n_tensors, planned, plain);
    CHECK(planned < plain);
    /* The check runner's plan: every tensor its own buffer (in-place outputs
     * aside), so its arena is the no-reuse size; states keep the rows asked
     * for, and a step that needs more is refused. */
    vkl_plan *q = NULL;
    CHECK(vkl_plan_create(g, VKL_PLAN_NO_REUSE, 0, &q) == VKL_OK);
    if (q) {
        size_t separate = 0, states_end = 0, kept_end = 0;
        CHECK(vkl_plan_verify(q, values, n) == VKL_OK);
        CHECK(vkl_plan_layout(g->ctx, q, &lb, off, &separate, &states_end) == VKL_OK);
        CHECK(separate == plain);
        for (uint32_t a = 0; a < g->n_tensors; a++)
            for (uint32_t b = a + 1; b < g->n_tensors; b++)
                if (q->buffer_of[a] != VKL_NONE && q->buffer_of[a] == q->buffer_of[b])
                    CHECK(g->tensors[a].kind == VKL_TENSOR_STATE || g->tensors[b].kind == VKL_TENSOR_STATE);
        vkl_layout_binding kept = {values, n, NULL, 4096};
        CHECK(vkl_plan_layout(g->ctx, q, &kept, off, &separate, &kept_end) == VKL_OK);
        CHECK(states_end == 0 || kept_end == 2 * states_end); /* 4096 rows where the step had 2048 */
        kept.state_rows = 2047;
        if (states_end) CHECK(vkl_plan_layout(g->ctx, q, &kept, off, &separate, &kept_end) == VKL_ERR_INVALID_ARGUMENT);
        vkl_plan_destroy(q);
    }
    free(off);
    free(values);
    vkl_plan_destroy(p);
    vkl_onnx_close(m);
}

/* The paper's example: a buffer of N*4096 floats is reused for N*32*128
 * (provably equal) but not for sumN*256 (unknown relation). The planner
 * reads only shapes and the schedule, so Relu nodes stand in for any op. */
static uint32_t tensor(vkl_graph *g, const char *name, const char *dims, vkl_tensor_kind kind) {
    vkl_shape s = check_shape(&failures, g, dims, ',');
    uint32_t id = 0;
    CHECK(vkl_graph_add_tensor(g, name, VKL_DTYPE_F32, kind, &s, &id) == VKL_OK);
    return id;
}

static void check_paper_example(vkl_context *ctx) {
    vkl_graph *g;
    if (vkl_graph_create(ctx, &g)) return;
    uint32_t x = tensor(g, "x", "N,4096", VKL_TENSOR_INPUT), a = tensor(g, "a", "N,4096", VKL_TENSOR_ACTIVATION);
    uint32_t b = tensor(g, "b", "N,4096", VKL_TENSOR_ACTIVATION), c = tensor(g, "c", "N,32,128", VKL_TENSOR_ACTIVATION);
    uint32_t d = tensor(g, "d", "sumN,256", VKL_TENSOR_ACTIVATION), e = tensor(g, "e", "sumN,256", VKL_TENSOR_ACTIVATION);
    vkl_graph_add_input(g, x);
    vkl_graph_add_output(g, e);
    uint32_t chain[6] = {x, a, b, c, d, e};
    for (int i = 0; i < 5; i++) CHECK(vkl_graph_add_node(g, VKL_OP_RELU, "r", &chain[i], 1, &chain[i + 1], 1, NULL, 0, NULL) == VKL_OK);
    vkl_plan *p = NULL;
    CHECK(vkl_plan_create(g, VKL_PLAN_REUSE, 0, &p) == VKL_OK);
    if (p) {
        CHECK(p->buffer_of[c] == p->buffer_of[a]); /* N*32*128 == N*4096: reuse */
        CHECK(p->buffer_of[d] != p->buffer_of[b]); /* sumN*256 vs N*4096: unknown, no reuse */
        CHECK(p->buffer_of[d] != p->buffer_of[a]);
    }
    vkl_plan_destroy(p);
    vkl_graph_destroy(g);
}

int main(void) {
    vkl_context *ctx;
    if (vkl_context_create(NULL, &ctx)) return 2;
    const char *models[] = {"llama", "qwen2", "gpt2", "clip-vision", "llama-dynamo"};
    for (size_t i = 0; i < sizeof(models) / sizeof(models[0]); i++) check_model(ctx, models[i]);
    check_paper_example(ctx);
    vkl_context_destroy(ctx);
    if (failures) fprintf(stderr, "test_plan: %d failures\n", failures);
    return failures ? 1 : 0;
}
