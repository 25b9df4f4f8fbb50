/* Import-time quantization (engine/passes/quantize.c): on the llama and
 * gpt2 fixtures the pass turns every projection into QuantMatMul, the
 * graph validates and runs on ref, and its logits are (a) exactly those of
 * the f32 graph with the dequantized weights put back and (b) within the
 * measured bound of the f32 logits per format; int8 lm_head, bf16
 * embedding, the cases left alone, the recipe text, a .vkm round trip. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <unistd.h>

#include "fusion_util.h"
#include "passes/quantize.h"
#include "quant/quant.h"
#include "runner.h"
#include "vkm.h"

#define LLAMA VKL_TEST_DATA_DIR "/models/llama"
#define GPT2 VKL_TEST_DATA_DIR "/models/gpt2"
#define CLIP VKL_TEST_DATA_DIR "/models/clip-vision"
#define STEPS 3

/* Bounds on max|logits - f32 logits| / max|f32 logits| over the three
 * fixture steps: the defaults of `vkllm check` (tools/cmd_check.c), about
 * twice the worst measured on the five fixtures (docs/quant.md). */
#define BOUND_F16 3e-3
#define BOUND_BF16_EMBED 2e-2
#define BOUND_INT8_LM 2e-2
#define BOUND_INT8 7e-2
#define BOUND_4BIT 0.75

/* ---- helpers --------------------------------------------------------------------------------- */

static vkl_onnx_model *import_recipe(vkl_context *ctx, const char *dir, const char *recipe_text, uint32_t passes,
                                     vkl_pipeline_report *rep) {
    char path[4096];
    vkl_quant_recipe recipe;
    vkl_onnx_model *m = NULL;
    snprintf(path, sizeof(path), "%s/model.onnx", dir);
    vkl_status st = vkl_quant_recipe_parse(ctx, recipe_text, &recipe);
    if (!st) st = vkl_onnx_open(ctx, path, &m);
    if (!st) st = vkl_pipeline_run_recipe(vkl_onnx_graph(m), passes, &recipe, rep);
    if (st) {
        fprintf(stderr, "%s [%s]: %s\n", path, recipe_text, vkl_context_error(ctx));
        failures++;
        vkl_onnx_close(m);
        return NULL;
    }
    return m;
}

/* The fixture's three steps through a runner (KV cache kept): logits of each. */
static bool run_steps(vkl_context *ctx, const vkl_graph *g, const char *dir, vkl_host_tensor logits[STEPS]) {
    vkl_runner *r = NULL;
    bool ok = g->n_inputs <= 8 && g->n_outputs == 1 &&
              vkl_runner_create(ctx, vkl_backend_find("ref"), NULL, g, 64, &r) == VKL_OK;
    for (int step = 0; ok && step < STEPS; step++) {
        vkl_host_tensor in[8] = {{0}}, past;
        for (uint32_t i = 0; i < g->n_inputs && ok; i++)
            ok = fu_load_ref(ctx, dir, step, "in", g->tensors[g->inputs[i]].name, &in[i]);
        ok = ok && fu_load_ref(ctx, dir, step, "in", "past_key_0", &past);
        if (ok) {
            vkl_sym_value extra = {"past", past.dims[2]};
            vkl_free(ctx, past.data);
            vkl_status st = vkl_runner_step(r, in, &extra, 1, &logits[step]);
            if (st) fprintf(stderr, "step %d: %s\n", step, vkl_context_error(ctx));
            ok = st == VKL_OK;
        }
        fu_free_all(ctx, in, 8);
    }
    vkl_runner_destroy(r);
    CHECK(ok);
    return ok;
}

static void free_steps(vkl_context *ctx, vkl_host_tensor logits[STEPS]) { fu_free_all(ctx, logits, STEPS); }

/* max over steps of max|a - b| / max|b|; and whether every row's argmax agrees. */
static double rel_err(const vkl_host_tensor *a, const vkl_host_tensor *b, bool *same_argmax) {
    double worst = 0;
    *same_argmax = true;
    for (int s = 0; s < STEPS; s++) {
        double err = 0, ref = 0;
        if (!a[s].data || !b[s].data || fu_count(&a[s]) != fu_count(&b[s])) return INFINITY;
        for (int64_t i = 0; i < fu_count(&b[s]); i++) {
            double x = fu_get(&a[s], i), y = fu_get(&b[s], i);
            if (isnan(x)) return INFINITY;
            err = fmax(err, fabs(x - y));
            ref = fmax(ref, fabs(y));
        }
        worst = fmax(worst, ref > 0 ? err / ref : err);
        *same_argmax &= fu_same_argmax(&a[s], &b[s]);
    }
    return worst;
}

/* The live node producing tensor "logits". */
static uint32_t logits_producer(const vkl_graph *g) {
    uint32_t t;
    return vkl_graph_find_tensor(g, "logits", &t) ? VKL_NONE : g->tensors[t].producer;
}

/* Live MatMul/Gemm nodes whose B is a weight. */
static uint32_t count_weight_matmuls(const vkl_graph *g) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const vkl_node *nd = &g->nodes[i];
        if (nd->dead || (nd->op != VKL_OP_MAT_MUL && nd->op != VKL_OP_GEMM)) continue;
        n += g->tensors[nd->inputs[1]].kind == VKL_TENSOR_WEIGHT;
    }
    return n;
}

/* The source weight's name: the converted weight is named "<source>.<dtype>". */
static bool source_name(const vkl_tensor *w, char *buf, size_t cap) {
    const char *suffix = vkl_dtype_name(w->dtype);
    size_t n = strlen(w->name), s = strlen(suffix);
    if (n <= s + 1 || n - s >= cap || strcmp(w->name + n - s, suffix) || w->name[n - s - 1] != '.') return false;
    memcpy(buf, w->name, n - s - 1);
    buf[n - s - 1] = 0;
    return true;
}

/* W [N, K] of a QuantMatMul as exact f32 values. */
static float *w_values(vkl_context *ctx, const vkl_tensor *w, int64_t N, int64_t K) {
    float *v = vkl_malloc(ctx, (size_t)(N * K) * sizeof(float));
    if (!v) return NULL;
    if (w->dtype == VKL_DTYPE_F16) vkl_quant_f16_to_f32(w->data, (size_t)(N * K), v);
    else if (w->dtype == VKL_DTYPE_F32) memcpy(v, w->data, (size_t)(N * K) * sizeof(float));
    else CHECK_OK(ctx, vkl_quant_dequantize(ctx, w->dtype, w->group, w->data, w->nbytes, N, K, v));
    return v;
}

static void dims_nk(const vkl_graph *g, const vkl_tensor *w, int64_t *N, int64_t *K) {
    CHECK(w->shape.rank == 2 && vkl_expr_is_const(g->syms, w->shape.dims[0], N) &&
          vkl_expr_is_const(g->syms, w->shape.dims[1], K));
}

/* A Gather's table that `q` converted: its values put back as f32. */
static uint32_t put_back_table(vkl_context *ctx, const vkl_graph *q, const vkl_node *n, vkl_graph *plain) {
    const vkl_tensor *w = &q->tensors[n->inputs[0]];
    char src[512];
    uint32_t id;
    if (w->kind != VKL_TENSOR_WEIGHT || (w->dtype != VKL_DTYPE_BF16 && w->dtype != VKL_DTYPE_F16) ||
        !source_name(w, src, sizeof(src)) || vkl_graph_find_tensor(plain, src, &id))
        return 0;
    size_t count = w->nbytes / 2;
    float *v = vkl_malloc(ctx, count * sizeof(float));
    if (!v) return 0;
    if (w->dtype == VKL_DTYPE_BF16) vkl_quant_bf16_to_f32(w->data, count, v);
    else vkl_quant_f16_to_f32(w->data, count, v);
    CHECK(plain->tensors[id].nbytes == count * sizeof(float));
    CHECK_OK(ctx, vkl_graph_set_data(plain, id, v, count * sizeof(float), true));
    vkl_free(ctx, v);
    return 1;
}

/* In f32 graph `plain` (imported without the recipe), overwrite every weight
 * that `q` converted with its dequantized values (a QuantMatMul's W^T back
 * to [K, N], an embedding table widened to f32): `plain` then computes what
 * `q` should, up to f32 summation order. Returns the QuantMatMul weights
 * put back; *tables counts the tables. */
static uint32_t put_back_dequantized(vkl_context *ctx, const vkl_graph *q, vkl_graph *plain, uint32_t *tables) {
    uint32_t replaced = 0;
    *tables = 0;
    for (uint32_t i = 0; i < q->n_nodes; i++) {
        const vkl_node *n = &q->nodes[i];
        if (!n->dead && n->op == VKL_OP_GATHER) *tables += put_back_table(ctx, q, n, plain);
        if (n->dead || n->op != VKL_OP_QUANT_MAT_MUL) continue;
        const vkl_tensor *w = &q->tensors[n->inputs[1]];
        char src[512];
        uint32_t id;
        int64_t N = 0, K = 0, r, c;
        dims_nk(q, w, &N, &K);
        CHECK(source_name(w, src, sizeof(src)) && vkl_graph_find_tensor(plain, src, &id) == VKL_OK);
        if (vkl_graph_find_tensor(plain, src, &id)) continue;
        const vkl_tensor *pt = &plain->tensors[id];
        /* the fixtures store every projection as [K, N] (MatMul, Gemm transB = 0) */
        CHECK(vkl_expr_is_const(plain->syms, pt->shape.dims[0], &r) && r == K &&
              vkl_expr_is_const(plain->syms, pt->shape.dims[1], &c) && c == N);
        float *v = w_values(ctx, w, N, K), *t = vkl_malloc(ctx, (size_t)(N * K) * sizeof(float));
        if (v && t) {
            for (int64_t nn = 0; nn < N; nn++)
                for (int64_t k = 0; k < K; k++) t[k * N + nn] = v[nn * K + k];
            CHECK_OK(ctx, vkl_graph_set_data(plain, id, t, (size_t)(N * K) * sizeof(float), true));
            replaced++;
        }
        vkl_free(ctx, v);
        vkl_free(ctx, t);
    }
    return replaced;
}

/* ---- the recipe ------------------------------------------------------------------------------ */

static void test_recipe(vkl_context *ctx) {
    printf("recipe text\n");
    vkl_quant_recipe r;
    char buf[128];
    vkl_quant_recipe_init(&r);
    CHECK(!vkl_quant_recipe_active(&r));
    CHECK(!strcmp(vkl_quant_recipe_str(&r, buf, sizeof(buf)),
                  "weights=f32 group=128 lm_head=same embed=same kv=f32"));
    CHECK_OK(ctx, vkl_quant_recipe_parse(ctx, "weights=int4 group=64 lm_head=int8 embed=bf16 kv=int8-fp8", &r));
    CHECK(r.weights == VKL_DTYPE_Q_INT4 && r.group == 64 && r.lm_head_int8 && r.embed_bf16 &&
          r.kv == VKL_KV_INT8_FP8 && vkl_quant_recipe_active(&r));
    CHECK(!strcmp(vkl_quant_recipe_str(&r, buf, sizeof(buf)),
                  "weights=int4 group=64 lm_head=int8 embed=bf16 kv=int8-fp8"));
    /* a file from before the kv setting: kv=f32 */
    CHECK_OK(ctx, vkl_quant_recipe_parse(ctx, "  embed=same\tweights=e0m4 ", &r));
    CHECK(r.weights == VKL_DTYPE_Q_E0M4 && r.group == 128 && !r.lm_head_int8 && !r.embed_bf16 && r.kv == VKL_KV_F32);
    CHECK_OK(ctx, vkl_quant_recipe_set(ctx, &r, "lm-head", "int8"));
    CHECK(r.lm_head_int8);
    /* the KV cache alone makes a recipe active */
    static const struct {
        const char *text;
        vkl_kv_format kv;
        vkl_dtype keys, values;
    } kvs[] = {{"kv=f32", VKL_KV_F32, VKL_DTYPE_F32, VKL_DTYPE_F32},
               {"kv=f16", VKL_KV_F16, VKL_DTYPE_F16, VKL_DTYPE_F16},
               {"kv=int8-fp8", VKL_KV_INT8_FP8, VKL_DTYPE_Q_INT8, VKL_DTYPE_FP8_E4M3},
               {"kv=int8-e5m2", VKL_KV_INT8_E5M2, VKL_DTYPE_Q_INT8, VKL_DTYPE_FP8_E5M2}};
    for (size_t i = 0; i < sizeof(kvs) / sizeof(kvs[0]); i++) {
        vkl_dtype k, v;
        CHECK_OK(ctx, vkl_quant_recipe_parse(ctx, kvs[i].text, &r));
        vkl_kv_format_dtypes(r.kv, &k, &v);
        CHECK(r.kv == kvs[i].kv && k == kvs[i].keys && v == kvs[i].values &&
              vkl_quant_recipe_active(&r) == (kvs[i].kv != VKL_KV_F32));
        CHECK(!strcmp(vkl_kv_format_name(r.kv), kvs[i].text + 3));
    }
    static const char *const bad[] = {"weights=fp4", "weights=bf16", "group=48", "group=0", "group=-32", "group=1e9",
                                      "lm_head=f16", "embed=f16", "foo=1", "weights", "=e0m4", "kv=int8",
                                      "kv=fp8", "kv=bf16", "kv="};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK(vkl_quant_recipe_parse(ctx, bad[i], &r) == VKL_ERR_INVALID_ARGUMENT ||
              (fprintf(stderr, "accepted '%s'\n", bad[i]), 0));
}

/* ---- every format on llama ------------------------------------------------------------------- */

static void test_formats(vkl_context *ctx) {
    static const struct {
        const char *recipe;
        vkl_dtype dtype;
        double bound;
    } fmts[] = {
        {"weights=f16", VKL_DTYPE_F16, BOUND_F16},
        {"weights=int8", VKL_DTYPE_Q_INT8, BOUND_INT8},
        {"weights=e0m4", VKL_DTYPE_Q_E0M4, BOUND_4BIT},
        {"weights=int4", VKL_DTYPE_Q_INT4, BOUND_4BIT},
        {"weights=e0m4 group=32", VKL_DTYPE_Q_E0M4, BOUND_4BIT},
        {"weights=int4 group=64", VKL_DTYPE_Q_INT4, BOUND_4BIT},
    };
    vkl_pipeline_report rep;
    vkl_host_tensor base[STEPS] = {{0}};
    vkl_onnx_model *f32 = fu_import(ctx, LLAMA, VKL_PASS_ALL, &rep);
    if (!f32 || !run_steps(ctx, vkl_onnx_graph(f32), LLAMA, base)) {
        vkl_onnx_close(f32);
        return;
    }
    CHECK(!rep.quantized && fu_fired(&rep, "quantize") == 0);
    /* two layers x (q, k, v, o, gate, up, down) + lm_head */
    const uint32_t projections = count_weight_matmuls(vkl_onnx_graph(f32));
    CHECK(projections == 15);
    for (size_t f = 0; f < sizeof(fmts) / sizeof(fmts[0]); f++) {
        printf("llama %s\n", fmts[f].recipe);
        vkl_onnx_model *m = import_recipe(ctx, LLAMA, fmts[f].recipe, VKL_PASS_ALL, &rep);
        if (!m) continue;
        vkl_graph *g = vkl_onnx_graph(m);
        const vkl_quantize_report *q = &rep.quant;
        uint32_t group = vkl_dtype_is_quantized(fmts[f].dtype) ? (strstr(fmts[f].recipe, "group=") ?
                         (uint32_t)atoi(strstr(fmts[f].recipe, "group=") + 6) : 128) : 0;
        printf("  quantize fired %u: %u QuantMatMul (lm_head %u), skipped %u, %llu -> %llu bytes\n",
               fu_fired(&rep, "quantize"), q->matmuls, q->lm_head, q->skipped, (unsigned long long)q->bytes_before,
               (unsigned long long)q->bytes_after);
        /* f16 weights also make the embedding table f16 (embed=same) */
        const uint32_t tables = fmts[f].dtype == VKL_DTYPE_F16;
        CHECK(rep.quantized && q->matmuls == projections && q->lm_head == 1 && q->skipped == 0);
        CHECK(fu_fired(&rep, "quantize") == projections + tables && q->embeddings == tables);
        CHECK(q->tensors[fmts[f].dtype] == projections + tables);
        CHECK(fu_count_ops(g, VKL_OP_QUANT_MAT_MUL) == projections && count_weight_matmuls(g) == 0);
        /* 458752 projection weights (quant-report), + the 512 x 128 table */
        CHECK(q->bytes_before == (uint64_t)(458752 + tables * 65536) * 4 && q->bytes_after < q->bytes_before);
        CHECK_OK(ctx, vkl_graph_validate(g));
        for (uint32_t i = 0; i < g->n_nodes; i++) {
            const vkl_node *n = &g->nodes[i];
            if (n->dead || n->op != VKL_OP_QUANT_MAT_MUL) continue;
            const vkl_tensor *w = &g->tensors[n->inputs[1]];
            CHECK(w->kind == VKL_TENSOR_WEIGHT && w->dtype == fmts[f].dtype && w->group == group);
        }
        /* (a) exactly the f32 graph with the dequantized weights */
        vkl_host_tensor got[STEPS] = {{0}}, deq[STEPS] = {{0}};
        vkl_onnx_model *p = fu_import(ctx, LLAMA, VKL_PASS_ALL, &rep);
        bool same_argmax;
        uint32_t put_tables;
        if (p && run_steps(ctx, g, LLAMA, got)) {
            CHECK(put_back_dequantized(ctx, g, vkl_onnx_graph(p), &put_tables) == projections && put_tables == tables);
            if (run_steps(ctx, vkl_onnx_graph(p), LLAMA, deq)) {
                double e = rel_err(got, deq, &same_argmax);
                printf("  vs the f32 graph with dequantized weights: rel %.3e\n", e);
                CHECK(e <= 1e-5 && same_argmax);
            }
            /* (b) within the measured bound of the f32 logits */
            double e = rel_err(got, base, &same_argmax);
            printf("  vs f32: rel %.3e (bound %.0e), argmax %s\n", e, fmts[f].bound, same_argmax ? "same" : "differs");
            CHECK(e <= fmts[f].bound);
            if (fmts[f].dtype == VKL_DTYPE_F16 || fmts[f].dtype == VKL_DTYPE_Q_INT8) CHECK(same_argmax);
        }
        free_steps(ctx, got);
        free_steps(ctx, deq);
        vkl_onnx_close(p);
        vkl_onnx_close(m);
    }
    free_steps(ctx, base);
    vkl_onnx_close(f32);
}

/* ---- lm_head int8, bf16 embedding ------------------------------------------------------------ */

static void test_lm_head(vkl_context *ctx) {
    printf("llama lm_head int8\n");
    vkl_pipeline_report rep;
    vkl_host_tensor base[STEPS] = {{0}}, got[STEPS] = {{0}};
    vkl_onnx_model *f32 = fu_import(ctx, LLAMA, VKL_PASS_ALL, &rep);
    vkl_onnx_model *m = import_recipe(ctx, LLAMA, "lm_head=int8", VKL_PASS_ALL, &rep);
    if (!f32 || !m) goto done;
    vkl_graph *g = vkl_onnx_graph(m);
    CHECK(rep.quant.matmuls == 1 && rep.quant.lm_head == 1 && rep.quant.tensors[VKL_DTYPE_Q_INT8] == 1);
    uint32_t p = logits_producer(g);
    CHECK(p != VKL_NONE && g->nodes[p].op == VKL_OP_QUANT_MAT_MUL);
    if (p != VKL_NONE && g->nodes[p].op == VKL_OP_QUANT_MAT_MUL) {
        const vkl_tensor *w = &g->tensors[g->nodes[p].inputs[1]];
        int64_t N = 0, K = 0;
        dims_nk(g, w, &N, &K);
        /* per output channel: one block of K = 128 per row of the [512, 128] W^T */
        CHECK(w->dtype == VKL_DTYPE_Q_INT8 && N == 512 && K == 128 && w->group == K);
        CHECK(w->nbytes == (size_t)N * (4 + (size_t)K));
    }
    bool same_argmax;
    if (run_steps(ctx, vkl_onnx_graph(f32), LLAMA, base) && run_steps(ctx, g, LLAMA, got)) {
        double e = rel_err(got, base, &same_argmax);
        printf("  vs f32: rel %.3e (bound %.0e), argmax %s\n", e, BOUND_INT8_LM, same_argmax ? "same" : "differs");
        CHECK(e <= BOUND_INT8_LM && same_argmax);
    }
    vkl_onnx_close(m);
    /* With 4-bit weights the lm_head alone is int8. */
    m = import_recipe(ctx, LLAMA, "weights=e0m4 lm_head=int8", VKL_PASS_ALL, &rep);
    if (m) {
        g = vkl_onnx_graph(m);
        p = logits_producer(g);
        CHECK(rep.quant.tensors[VKL_DTYPE_Q_E0M4] == 14 && rep.quant.tensors[VKL_DTYPE_Q_INT8] == 1);
        CHECK(p != VKL_NONE && g->tensors[g->nodes[p].inputs[1]].dtype == VKL_DTYPE_Q_INT8);
    }
done:
    free_steps(ctx, base);
    free_steps(ctx, got);
    vkl_onnx_close(m);
    vkl_onnx_close(f32);
}

static void check_embedding(vkl_context *ctx, const char *dir, const char *recipe, vkl_dtype dt, uint32_t tables) {
    printf("%s %s: embedding tables %s\n", strrchr(dir, '/') + 1, recipe, vkl_dtype_name(dt));
    vkl_pipeline_report rep;
    vkl_host_tensor base[STEPS] = {{0}}, got[STEPS] = {{0}};
    vkl_onnx_model *f32 = fu_import(ctx, dir, VKL_PASS_ALL, &rep);
    vkl_onnx_model *m = import_recipe(ctx, dir, recipe, VKL_PASS_ALL, &rep);
    if (!f32 || !m) goto done;
    vkl_graph *g = vkl_onnx_graph(m), *pg = vkl_onnx_graph(f32);
    CHECK(rep.quant.embeddings == tables && rep.quant.tensors[dt] >= tables);
    uint32_t found = 0;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const vkl_node *n = &g->nodes[i];
        if (n->dead || n->op != VKL_OP_GATHER || g->tensors[n->inputs[0]].dtype != dt) continue;
        found++;
        const vkl_tensor *table = &g->tensors[n->inputs[0]], *out = &g->tensors[n->outputs[0]];
        /* the rows move as `dt`; one Cast back to f32 reads them */
        CHECK(table->kind == VKL_TENSOR_WEIGHT && out->dtype == dt);
        uint32_t cast = VKL_NONE;
        for (uint32_t k = 0; k < g->n_nodes; k++)
            if (!g->nodes[k].dead && g->nodes[k].op == VKL_OP_CAST && g->nodes[k].inputs[0] == n->outputs[0]) cast = k;
        CHECK(cast != VKL_NONE && vkl_graph_use_count(g, n->outputs[0]) == 1);
        if (cast != VKL_NONE) CHECK(g->tensors[g->nodes[cast].outputs[0]].dtype == VKL_DTYPE_F32);
        /* bit-exact: every element is the round-to-nearest-even of the f32 original */
        char src[512];
        uint32_t id;
        CHECK(source_name(table, src, sizeof(src)) && vkl_graph_find_tensor(pg, src, &id) == VKL_OK);
        if (!source_name(table, src, sizeof(src)) || vkl_graph_find_tensor(pg, src, &id)) continue;
        const float *orig = pg->tensors[id].data;
        const uint16_t *conv = table->data;
        size_t count = pg->tensors[id].nbytes / sizeof(float), bad = 0;
        CHECK(table->nbytes == count * 2 && vkl_shape_equal(&table->shape, &pg->tensors[id].shape));
        for (size_t e = 0; e < count && table->nbytes == count * 2; e++)
            bad += conv[e] != (dt == VKL_DTYPE_BF16 ? vkl_f32_to_bf16(orig[e]) : vkl_f32_to_f16(orig[e]));
        printf("  %s: %zu elements, %zu differ from the rounding of the f32 table\n", table->name, count, bad);
        CHECK(bad == 0);
    }
    CHECK(found == tables);
    bool same_argmax;
    if (dt == VKL_DTYPE_BF16 && run_steps(ctx, pg, dir, base) && run_steps(ctx, g, dir, got)) {
        double e = rel_err(got, base, &same_argmax);
        printf("  vs f32: rel %.3e (bound %.0e), argmax %s\n", e, BOUND_BF16_EMBED, same_argmax ? "same" : "differs");
        CHECK(e <= BOUND_BF16_EMBED && same_argmax);
    }
done:
    free_steps(ctx, base);
    free_steps(ctx, got);
    vkl_onnx_close(m);
    vkl_onnx_close(f32);
}

/* ---- gpt2: Gemm with bias, two embedding tables ---------------------------------------------- */

static void test_gpt2(vkl_context *ctx) {
    printf("gpt2 weights=int4 lm_head=int8 embed=bf16\n");
    vkl_pipeline_report rep;
    vkl_host_tensor got[STEPS] = {{0}}, deq[STEPS] = {{0}};
    vkl_onnx_model *m = import_recipe(ctx, GPT2, "weights=int4 lm_head=int8 embed=bf16", VKL_PASS_ALL, &rep);
    const vkl_quantize_report q = rep.quant;
    vkl_onnx_model *p = fu_import(ctx, GPT2, VKL_PASS_ALL, &rep);
    if (!m || !p) goto done;
    vkl_graph *g = vkl_onnx_graph(m);
    uint32_t gemms = fu_count_ops(vkl_onnx_graph(p), VKL_OP_GEMM), biased = 0;
    for (uint32_t i = 0; i < g->n_nodes; i++)
        biased += !g->nodes[i].dead && g->nodes[i].op == VKL_OP_QUANT_MAT_MUL && g->nodes[i].n_inputs == 3;
    printf("  %u Gemm in the f32 graph; %u QuantMatMul, %u with a bias\n", gemms, fu_count_ops(g, VKL_OP_QUANT_MAT_MUL),
           biased);
    CHECK(gemms == 8 && biased == 8 && fu_count_ops(g, VKL_OP_QUANT_MAT_MUL) == 9 && fu_count_ops(g, VKL_OP_GEMM) == 0);
    CHECK(q.embeddings == 2 && q.lm_head == 1 && q.skipped == 0 && q.tensors[VKL_DTYPE_Q_INT4] == 8);
    /* the dequantized weights put back into the f32 graph give the same logits
     * (its embedding tables made bf16 values too) */
    bool same_argmax;
    if (run_steps(ctx, g, GPT2, got)) {
        vkl_graph *pg = vkl_onnx_graph(p);
        uint32_t tables;
        CHECK(put_back_dequantized(ctx, g, pg, &tables) == 9 && tables == 2);
        if (run_steps(ctx, pg, GPT2, deq)) {
            double e = rel_err(got, deq, &same_argmax);
            printf("  vs the f32 graph with dequantized weights: rel %.3e\n", e);
            CHECK(e <= 1e-5 && same_argmax);
        }
    }
done:
    free_steps(ctx, got);
    free_steps(ctx, deq);
    vkl_onnx_close(m);
    vkl_onnx_close(p);
}

/* ---- what is left alone ---------------------------------------------------------------------- */

/* The same small graph twice; see test_left_alone. */
static void build_small(vkl_graph *g, const float *w688, const float *w256, const float *wt) {
    uint32_t x = fu_input(g, "x", VKL_DTYPE_F32, "batch, 688"), y = fu_input(g, "y", VKL_DTYPE_F32, "batch, 256");
    uint32_t a = fu_weight(g, "w_k688", VKL_DTYPE_F32, "688, 16", w688, 688 * 16 * 4);
    uint32_t b = fu_weight(g, "w_k256", VKL_DTYPE_F32, "256, 8", w256, 256 * 8 * 4);
    uint32_t bt = fu_weight(g, "w_nk", VKL_DTYPE_F32, "8, 256", wt, 256 * 8 * 4);
    float cv[8];
    for (int i = 0; i < 8; i++) cv[i] = 0.25f * (float)(i - 4);
    uint32_t c = fu_weight(g, "bias8", VKL_DTYPE_F32, "8", cv, sizeof(cv));
    uint32_t c2 = fu_weight(g, "bias1x8", VKL_DTYPE_F32, "1, 8", cv, sizeof(cv));
    /* out0: K = 688 like the bundled model's down projections, a multiple of
     * no group: converted, with a short last group (16, 48 or 48 values) */
    fu_output(g, fu_op2(g, VKL_OP_MAT_MUL, x, a));
    fu_output(g, fu_op2(g, VKL_OP_MAT_MUL, y, b));  /* out1: converted */
    const vkl_attr tb = fu_attr_int("transB", 1), ta = fu_attr_int("transA", 1);
    const vkl_attr half = {.name = "alpha", .kind = VKL_ATTR_FLOAT, .f = 0.5f};
    const uint32_t g1[3] = {y, bt, c}, g2[3] = {y, b, c}, g3[3] = {y, b, c2};
    fu_output(g, fu_node(g, VKL_OP_GEMM, g1, 3, &tb, 1));   /* out2: transB, bias [8]: converted */
    fu_output(g, fu_node(g, VKL_OP_GEMM, g2, 3, &half, 1)); /* out3: alpha 0.5: left */
    fu_output(g, fu_node(g, VKL_OP_GEMM, g3, 3, NULL, 0));  /* out4: C [1, 8]: left */
    const int64_t perm[2] = {1, 0};
    fu_output(g, fu_op2(g, VKL_OP_MAT_MUL, y, fu_transpose(g, bt, perm, 2))); /* out5: through Transpose */
    uint32_t yt = fu_transpose(g, y, perm, 2);
    fu_output(g, fu_node(g, VKL_OP_GEMM, (const uint32_t[2]){yt, b}, 2, &ta, 1)); /* out6: transA: left */
}

static void test_left_alone(vkl_context *ctx) {
    printf("small graph: what is converted and what is left\n");
    float *w688 = vkl_malloc(ctx, 688 * 16 * 4), *w256 = vkl_malloc(ctx, 256 * 8 * 4), *wt = vkl_malloc(ctx, 256 * 8 * 4);
    if (!w688 || !w256 || !wt) {
        failures++;
        goto out;
    }
    for (int i = 0; i < 688 * 16; i++) w688[i] = (float)((i * 37) % 101 - 50) / 200.0f;
    for (int i = 0; i < 256 * 8; i++) {
        w256[i] = (float)((i * 53) % 97 - 48) / 150.0f;
        wt[i] = (float)((i * 29) % 89 - 44) / 120.0f;
    }
    static const struct {
        const char *recipe;
        uint32_t converted, skipped;
        double near; /* converted outputs vs the f32 graph (orientation of W^T, bias) */
    } runs[] = {
        {"weights=e0m4 group=128", 4, 3, 0.25}, /* left: alpha, C [1, 8], transA */
        {"weights=int8 group=32", 4, 3, 0.02},
        {"weights=int4 group=64", 4, 3, 0.25},
        {"weights=f16", 4, 3, 2e-3},            /* no group */
    };
    for (size_t r = 0; r < sizeof(runs) / sizeof(runs[0]); r++) {
        vkl_graph *plain, *g;
        vkl_quant_recipe recipe;
        vkl_pipeline_report rep;
        CHECK_OK(ctx, vkl_quant_recipe_parse(ctx, runs[r].recipe, &recipe));
        if (vkl_graph_create(ctx, &plain) || vkl_graph_create(ctx, &g)) {
            failures++;
            break;
        }
        build_small(plain, w688, w256, wt);
        build_small(g, w688, w256, wt);
        /* the importer hands the pipeline an inferred graph */
        CHECK_OK(ctx, vkl_graph_infer_shapes(plain));
        CHECK_OK(ctx, vkl_graph_infer_shapes(g));
        CHECK_OK(ctx, vkl_pipeline_run(plain, 0, &rep));
        /* the quantize pass alone, so the Transpose in front of w_nk is not folded */
        CHECK_OK(ctx, vkl_pipeline_run_recipe(g, VKL_PASS_QUANTIZE, &recipe, &rep));
        printf("  %-24s converted %u, skipped %u\n", runs[r].recipe, rep.quant.matmuls, rep.quant.skipped);
        CHECK(rep.quant.matmuls == runs[r].converted && rep.quant.skipped == runs[r].skipped);
        CHECK(fu_count_ops(g, VKL_OP_QUANT_MAT_MUL) == runs[r].converted);
        /* w_k256 is read by a converted MatMul and by two Gemms left f32: it stays */
        uint32_t id;
        CHECK(vkl_graph_find_tensor(g, "w_k256", &id) == VKL_OK && g->tensors[id].dtype == VKL_DTYPE_F32);
        const int64_t xd[2] = {2, 688}, yd[2] = {2, 256};
        vkl_host_tensor in[2] = {fu_host(ctx, VKL_DTYPE_F32, xd, 2, 1, NULL),
                                 fu_host(ctx, VKL_DTYPE_F32, yd, 2, 2, NULL)};
        vkl_host_tensor po[7] = {{0}}, qo[7] = {{0}};
        if (fu_run(plain, in, po) && fu_run(g, in, qo)) {
            for (uint32_t o = 0; o < 7; o++) {
                const uint32_t p = g->tensors[g->outputs[o]].producer;
                if (g->nodes[p].op != VKL_OP_QUANT_MAT_MUL) {
                    /* left alone: bit-identical to the plain graph */
                    CHECK(po[o].nbytes == qo[o].nbytes && !memcmp(po[o].data, qo[o].data, po[o].nbytes));
                    continue;
                }
                /* converted: y . W^T (+ bias) with W the dequantized weight, in double */
                const vkl_node *n = &g->nodes[p];
                const vkl_tensor *w = &g->tensors[n->inputs[1]], *a = &g->tensors[n->inputs[0]];
                int64_t N = 0, K = 0;
                dims_nk(g, w, &N, &K);
                const vkl_host_tensor *x = !strcmp(a->name, "x") ? &in[0] : &in[1];
                /* the K = 688 weight is quantized with its short last group */
                if (x == &in[0]) CHECK(K == 688 && (w->group == 0 || K % w->group != 0));
                const float *bias = n->n_inputs > 2 ? g->tensors[n->inputs[2]].data : NULL;
                float *v = w_values(ctx, w, N, K);
                double err = 0, ref = 0;
                for (int64_t m = 0; v && m < 2; m++)
                    for (int64_t j = 0; j < N; j++) {
                        double s = bias ? bias[j] : 0;
                        for (int64_t k = 0; k < K; k++) s += (double)((const float *)x->data)[m * K + k] * v[j * K + k];
                        err = fmax(err, fabs(s - ((const float *)qo[o].data)[m * N + j]));
                        ref = fmax(ref, fabs(s));
                    }
                CHECK(v && err <= 1e-6 * ref + 1e-7);
                /* and near the f32 result */
                CHECK(fu_close(NULL, &qo[o], &po[o], runs[r].near));
                vkl_free(ctx, v);
            }
        }
        fu_free_all(ctx, in, 2);
        fu_free_all(ctx, po, 7);
        fu_free_all(ctx, qo, 7);
        vkl_graph_destroy(plain);
        vkl_graph_destroy(g);
    }
out:
    vkl_free(ctx, w688);
    vkl_free(ctx, w256);
    vkl_free(ctx, wt);
}

/* ---- .vkm round trip ------------------------------------------------------------------------- */

static void test_vkm_roundtrip(vkl_context *ctx) {
    printf("llama weights=e0m4 lm_head=int8 embed=bf16: .vkm round trip\n");
    const char *text = "weights=e0m4 group=128 lm_head=int8 embed=bf16";
    vkl_pipeline_report rep;
    vkl_host_tensor mem[STEPS] = {{0}}, file[STEPS] = {{0}};
    vkl_onnx_model *m = import_recipe(ctx, LLAMA, text, VKL_PASS_ALL, &rep);
    char dir[] = "/tmp/vkl_test_quantize_XXXXXX", path[128];
    vkl_vkm *v = NULL;
    if (!m || !mkdtemp(dir)) {
        failures++;
        vkl_onnx_close(m);
        return;
    }
    snprintf(path, sizeof(path), "%s/llama_q.vkm", dir);
    const vkl_graph *g = vkl_onnx_graph(m);
    const vkl_vkm_meta meta = {VKL_QUANT_RECIPE_META_KEY, text, strlen(text)};
    CHECK_OK(ctx, vkl_vkm_write(ctx, g, &meta, 1, path));
    CHECK_OK(ctx, vkl_vkm_open(ctx, path, &v));
    if (v) {
        CHECK_OK(ctx, vkl_vkm_verify_data(v));
        const vkl_graph *h = vkl_vkm_graph(v);
        uint32_t weights = 0, quantized = 0;
        for (uint32_t i = 0; i < g->n_tensors; i++) {
            const vkl_tensor *a = &g->tensors[i];
            uint32_t id;
            if (a->kind != VKL_TENSOR_WEIGHT) continue;
            CHECK(vkl_graph_find_tensor(h, a->name, &id) == VKL_OK);
            if (vkl_graph_find_tensor(h, a->name, &id)) continue;
            const vkl_tensor *b = &h->tensors[id];
            weights++;
            quantized += vkl_dtype_is_quantized(a->dtype);
            CHECK(b->kind == VKL_TENSOR_WEIGHT && b->dtype == a->dtype && b->group == a->group);
            char sa[128], sb[128];
            CHECK(!strcmp(vkl_shape_str(g, &a->shape, sa, sizeof(sa)), vkl_shape_str(h, &b->shape, sb, sizeof(sb))));
            CHECK(b->nbytes == a->nbytes && (!a->nbytes || !memcmp(a->data, b->data, a->nbytes)));
        }
        printf("  %u weights (%u quantized) identical after the round trip\n", weights, quantized);
        CHECK(quantized == 15);
        const void *data;
        size_t size;
        vkl_quant_recipe r;
        CHECK(vkl_vkm_meta_get(v, VKL_QUANT_RECIPE_META_KEY, &data, &size) && size == strlen(text) &&
              !memcmp(data, text, size));
        char copy[128];
        snprintf(copy, sizeof(copy), "%.*s", (int)size, (const char *)data);
        CHECK_OK(ctx, vkl_quant_recipe_parse(ctx, copy, &r));
        CHECK(r.weights == VKL_DTYPE_Q_E0M4 && r.group == 128 && r.lm_head_int8 && r.embed_bf16);
        /* the reopened graph computes the same bits */
        if (run_steps(ctx, g, LLAMA, mem) && run_steps(ctx, h, LLAMA, file))
            for (int s = 0; s < STEPS; s++)
                CHECK(mem[s].nbytes == file[s].nbytes && !memcmp(mem[s].data, file[s].data, mem[s].nbytes));
    }
    free_steps(ctx, mem);
    free_steps(ctx, file);
    vkl_vkm_close(v);
    vkl_onnx_close(m);
    unlink(path);
    rmdir(dir);
}

/* The clip-vision fixture's ten K = 64 projections, which group 128 once
 * left f32: now every one of its 12 MatMul/Gemm is quantized, those ten
 * with one short group per row, and they survive a .vkm round trip (the
 * file marks them: VKL_VKM_TENSOR_SHORT_GROUP, docs/vkm-format.md). */
static void test_clip_short_groups(vkl_context *ctx) {
    printf("clip-vision weights=e0m4 group=128: short last groups\n");
    vkl_pipeline_report rep;
    vkl_onnx_model *m = import_recipe(ctx, CLIP, "weights=e0m4 group=128", VKL_PASS_ALL, &rep);
    if (!m) return;
    const vkl_graph *g = vkl_onnx_graph(m);
    printf("  %u QuantMatMul, skipped %u\n", rep.quant.matmuls, rep.quant.skipped);
    CHECK(rep.quant.matmuls == 12 && rep.quant.skipped == 0 && count_weight_matmuls(g) == 0);
    CHECK_OK(ctx, vkl_graph_validate(g));
    uint32_t short_k = 0;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const vkl_node *n = &g->nodes[i];
        if (n->dead || n->op != VKL_OP_QUANT_MAT_MUL) continue;
        int64_t N = 0, K = 0;
        const vkl_tensor *w = &g->tensors[n->inputs[1]];
        dims_nk(g, w, &N, &K);
        if (K % w->group == 0) continue;
        short_k++;
        CHECK(K == 64 && w->dtype == VKL_DTYPE_Q_E0M4 && w->nbytes == (size_t)N * 68); /* one block a row */
    }
    CHECK(short_k == 10);
    char dir[] = "/tmp/vkl_test_quantize_XXXXXX", path[128];
    vkl_vkm *v = NULL;
    if (mkdtemp(dir)) {
        snprintf(path, sizeof(path), "%s/clip_q.vkm", dir);
        CHECK_OK(ctx, vkl_vkm_write(ctx, g, NULL, 0, path));
        CHECK_OK(ctx, vkl_vkm_open(ctx, path, &v));
        const vkl_graph *h = v ? vkl_vkm_graph(v) : NULL;
        for (uint32_t i = 0; h && i < g->n_tensors; i++) {
            const vkl_tensor *a = &g->tensors[i];
            uint32_t id;
            if (a->kind != VKL_TENSOR_WEIGHT || !vkl_dtype_is_quantized(a->dtype)) continue;
            CHECK(vkl_graph_find_tensor(h, a->name, &id) == VKL_OK && h->tensors[id].nbytes == a->nbytes &&
                  !memcmp(h->tensors[id].data, a->data, a->nbytes));
        }
        vkl_vkm_close(v);
        unlink(path);
        rmdir(dir);
    }
    vkl_onnx_close(m);
}

int main(void) {
    vkl_context *ctx;
    if (vkl_context_create(NULL, &ctx)) return 2;
    test_recipe(ctx);
    test_formats(ctx);
    test_lm_head(ctx);
    check_embedding(ctx, LLAMA, "embed=bf16", VKL_DTYPE_BF16, 1);
    check_embedding(ctx, GPT2, "embed=bf16", VKL_DTYPE_BF16, 2);
    check_embedding(ctx, LLAMA, "weights=f16", VKL_DTYPE_F16, 1);
    test_gpt2(ctx);
    test_left_alone(ctx);
    test_clip_short_groups(ctx);
    test_vkm_roundtrip(ctx);
    vkl_context_destroy(ctx);
    return check_finish("test_quantize");
}
