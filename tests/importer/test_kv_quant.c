/* The quantized KV cache end to end on the llama fixture (docs/quant.md
 * "KV cache in the runtime"): imported with --kv f16 / int8-fp8 /
 * int8-e5m2, written as a .vkm and reopened, the states carry the recipe's
 * dtypes (int8 keys with group = head_dim) and the recipe text says so; a
 * session's logits over a prefill and 120 decode steps stay within a
 * measured bound of the f32-cache session's; the session's kv_bytes is
 * what vkl_tensor_bytes gives for the states at max_context; graph
 * validation wants a valid group on an int8 state. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "onnx_import.h"
#include "passes/pipeline.h"
#include "vkllm.h"
#include "vkm.h"

#define MAX_CONTEXT 256
#define PREFILL 7
#define DECODE 120
#define VOCAB 512

typedef struct kv_case {
    vkl_kv_format kv;
    /* max |logits - f32-cache logits| / max |f32-cache logits| over all
     * steps must stay below this: about twice the error measured (header
     * of main), rounded up */
    double bound;
} kv_case;

/* Import with every pass and the recipe's kv setting; write the .vkm with
 * the recipe text as `vkllm import` does. */
static int make_vkm(vkl_context *ctx, vkl_kv_format kv, const char *out, uint32_t *states) {
    char onnx[512], text[128];
    snprintf(onnx, sizeof(onnx), "%s/models/llama/model.onnx", VKL_TEST_DATA_DIR);
    vkl_onnx_model *m;
    vkl_pipeline_report r;
    vkl_quant_recipe recipe;
    vkl_quant_recipe_init(&recipe);
    recipe.kv = kv;
    if (vkl_onnx_open(ctx, onnx, &m)) return -1;
    vkl_status st = vkl_pipeline_run_recipe(vkl_onnx_graph(m), VKL_PASS_ALL, &recipe, &r);
    vkl_quant_recipe_str(&recipe, text, sizeof(text));
    const vkl_vkm_meta meta = {VKL_QUANT_RECIPE_META_KEY, text, strlen(text)};
    if (!st) st = vkl_vkm_write(ctx, vkl_onnx_graph(m), &meta, 1, out);
    *states = r.quantized ? r.quant.kv_states : 0;
    vkl_onnx_close(m);
    return st ? -1 : 0;
}

/* The reopened file: recipe text, state dtypes and groups; *kv_bytes = the
 * states' bytes at MAX_CONTEXT rows, batch 1. */
static void check_file(vkl_context *ctx, const char *path, vkl_kv_format kv, size_t *kv_bytes) {
    vkl_vkm *v = NULL;
    *kv_bytes = 0;
    CHECK_OK(ctx, vkl_vkm_open(ctx, path, &v));
    if (!v) return;
    const void *data;
    size_t size;
    char text[128] = "";
    vkl_quant_recipe r;
    CHECK(vkl_vkm_meta_get(v, VKL_QUANT_RECIPE_META_KEY, &data, &size) && size < sizeof(text));
    if (size < sizeof(text)) memcpy(text, data, size), text[size] = 0;
    CHECK_OK(ctx, vkl_quant_recipe_parse(ctx, text, &r));
    CHECKF(r.kv == kv, "recipe '%s' reads back as kv=%s", text, vkl_kv_format_name(r.kv));
    vkl_dtype want_k, want_v;
    vkl_kv_format_dtypes(kv, &want_k, &want_v);
    const vkl_graph *g = vkl_vkm_graph(v);
    uint32_t keys = 0, values = 0;
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        const vkl_tensor *s = &g->tensors[t];
        if (s->kind != VKL_TENSOR_STATE) continue;
        int64_t h = 0, d = 0;
        CHECK(s->shape.rank == 4 && vkl_expr_is_const(g->syms, s->shape.dims[2], &h) &&
              vkl_expr_is_const(g->syms, s->shape.dims[3], &d));
        const bool is_key = strstr(s->name, "key") != NULL;
        keys += is_key, values += !is_key;
        CHECKF(s->dtype == (is_key ? want_k : want_v), "state %s is %s", s->name, vkl_dtype_name(s->dtype));
        CHECKF(s->group == (s->dtype == VKL_DTYPE_Q_INT8 ? (uint32_t)d : 0), "state %s has group %u", s->name,
               s->group);
        size_t row = 0;
        CHECK(vkl_tensor_bytes(s->dtype, s->group, h * d, &row));
        *kv_bytes += row * MAX_CONTEXT;
    }
    CHECK(keys == 2 && values == 2);
    vkl_vkm_close(v);
}

/* Logits of the fixture's prompt (step 0's ids), then DECODE greedy-free
 * steps on fixed pseudo-random tokens; all_logits: (PREFILL + DECODE) rows. */
static void run_session(vkl_context *ctx, const char *path, float *all_logits, size_t *kv_bytes) {
    static const int32_t prompt[PREFILL] = {1, 72, 301, 14, 499, 7, 256};
    vkl_model *m = NULL;
    vkl_session *s = NULL;
    vkl_session_options so;
    vkl_session_options_init(&so);
    so.max_context = MAX_CONTEXT;
    CHECK_OK(ctx, vkl_model_load(ctx, path, NULL, &m));
    if (m) CHECK_OK(ctx, vkl_session_create(m, &so, &s));
    if (!s) {
        vkl_model_free(m);
        return;
    }
    CHECK(vkl_model_vocab_size(m) == VOCAB);
    CHECK_OK(ctx, vkl_session_append_scored(s, prompt, PREFILL, all_logits));
    uint32_t x = 12345;
    for (int i = 0; i < DECODE; i++) {
        x = x * 1103515245u + 12345u;
        const int32_t tok = (int32_t)((x >> 16) % VOCAB);
        vkl_status st = vkl_session_append(s, &tok, 1);
        CHECK_OK(ctx, st);
        if (st) break;
        const float *l = vkl_session_logits(s);
        if (l) memcpy(all_logits + (size_t)(PREFILL + i) * VOCAB, l, VOCAB * sizeof(float));
    }
    vkl_session_stats st;
    vkl_session_get_stats(s, &st);
    *kv_bytes = st.kv_bytes;
    vkl_session_free(s);
    vkl_model_free(m);
}

/* Graph validation: a state of dtype int8 needs a valid group, an fp8 one
 * none (the .vkm reader holds files to the same). */
static void check_validation(vkl_context *ctx) {
    static const struct {
        vkl_dtype dtype;
        uint32_t group;
        bool ok;
    } cases[] = {{VKL_DTYPE_Q_INT8, 32, true},  {VKL_DTYPE_Q_INT8, 0, false}, {VKL_DTYPE_FP8_E4M3, 0, true},
                 {VKL_DTYPE_FP8_E5M2, 32, false}, {VKL_DTYPE_F16, 0, true},    {VKL_DTYPE_Q_E0M4, 48, false}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        vkl_graph *g;
        uint32_t t;
        vkl_shape s = {0};
        if (vkl_graph_create(ctx, &g)) return;
        s.rank = 4;
        for (int d = 0; d < 4; d++) CHECK_OK(ctx, vkl_expr_const(g->syms, d == 3 ? 32 : 2, &s.dims[d]));
        CHECK_OK(ctx, vkl_graph_add_tensor(g, "k.cache", cases[i].dtype, VKL_TENSOR_STATE, &s, &t));
        g->tensors[t].group = cases[i].group;
        vkl_status st = vkl_graph_validate(g);
        CHECKF(cases[i].ok ? st == VKL_OK : st == VKL_ERR_FORMAT, "state %s group %u: %s",
               vkl_dtype_name(cases[i].dtype), cases[i].group, vkl_status_name(st));
        vkl_graph_destroy(g);
    }
}

static size_t argmax(const float *row) {
    size_t best = 0;
    for (size_t i = 1; i < VOCAB; i++)
        if (row[i] > row[best]) best = i;
    return best;
}

int main(void) {
    /* Measured (ref backend, llama fixture with its random weights, 7-token
     * prompt + 120 decode steps, max over all 127 rows of logits): f16
     * 7.7e-4 (argmax 127/127), int8-fp8 6.1e-2 (115/127), int8-e5m2 0.127
     * (105/127). The bounds are about twice that; a cache read wrongly
     * (garbage rows, a wrong scale) measures ~1. */
    static const kv_case cases[] = {
        {VKL_KV_F16, 2e-3},
        {VKL_KV_INT8_FP8, 0.12},
        {VKL_KV_INT8_E5M2, 0.25},
    };
    vkl_context *ctx;
    if (vkl_context_create(NULL, &ctx)) return 2;
    const size_t rows = PREFILL + DECODE;
    float *ref = calloc(rows * VOCAB, sizeof(float)), *got = calloc(rows * VOCAB, sizeof(float));
    char dir[] = "/tmp/vkl_test_kv_quant_XXXXXX", path[128];
    if (!ref || !got || !mkdtemp(dir)) return 2;
    snprintf(path, sizeof(path), "%s/llama.vkm", dir);

    check_validation(ctx);
    uint32_t states;
    size_t file_bytes, f32_bytes = 0;
    CHECK(make_vkm(ctx, VKL_KV_F32, path, &states) == 0);
    CHECK(states == 0);
    check_file(ctx, path, VKL_KV_F32, &file_bytes);
    run_session(ctx, path, ref, &f32_bytes);
    CHECKF(f32_bytes == file_bytes, "f32 cache: session kv_bytes %zu, states %zu", f32_bytes, file_bytes);
    printf("kv=f32: kv_bytes %zu\n", f32_bytes);

    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const char *name = vkl_kv_format_name(cases[c].kv);
        size_t session_bytes = 0;
        CHECK(make_vkm(ctx, cases[c].kv, path, &states) == 0);
        CHECKF(states == 4, "kv=%s: %u states retyped", name, states);
        check_file(ctx, path, cases[c].kv, &file_bytes);
        memset(got, 0, rows * VOCAB * sizeof(float));
        run_session(ctx, path, got, &session_bytes);
        double err = 0, maxref = 0;
        size_t agree = 0;
        for (size_t r = 0; r < rows; r++) {
            const float *a = got + r * VOCAB, *b = ref + r * VOCAB;
            for (size_t i = 0; i < VOCAB; i++) {
                if (!(fabs(a[i] - b[i]) <= err)) err = fabs(a[i] - b[i]); /* NaN sticks */
                if (fabs(b[i]) > maxref) maxref = fabs(b[i]);
            }
            agree += argmax(a) == argmax(b);
        }
        const double rel = err / maxref;
        printf("kv=%s: logits max |diff| %.3g = %.3g of max |f32-cache logits| (bound %.3g), argmax %zu/%zu; "
               "kv_bytes %zu (%.4f of f32)\n",
               name, err, rel, cases[c].bound, agree, rows, session_bytes, (double)session_bytes / (double)f32_bytes);
        CHECKF(rel <= cases[c].bound, "kv=%s: relative logits error %g above %g", name, rel, cases[c].bound);
        CHECKF(session_bytes == file_bytes,
               "kv=%s: session kv_bytes %zu, the states' vkl_tensor_bytes %zu (engine/session.c must size a "
               "state with its group)", name, session_bytes, file_bytes);
    }
    unlink(path);
    rmdir(dir);
    free(ref);
    free(got);
    vkl_context_destroy(ctx);
    return check_finish("test_kv_quant");
}
