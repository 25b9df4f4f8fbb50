/* KV cache in place: the fixture exports lose their past inputs, present
 * outputs and KV Concats, and run step after step with the cache kept
 * between steps (engine/runner) against ONNX Runtime's logits and presents;
 * small graphs built here ([B, H, S, D] and [B, S, H, D] exports) against the
 * plain graph fed its own presents back; near misses are left alone. */
#include "fusion_util.h"
#include "runner.h"

#define KV (VKL_PASS_ALL)

/* Cache rows [T, B, H, D] read from the runner as [B, H, T, D]. */
static bool read_cache(vkl_runner *r, const vkl_graph *g, uint32_t state, const vkl_host_tensor *like,
                       vkl_host_tensor *out) {
    int64_t B = like->dims[0], H = like->dims[1], T = like->dims[2], D = like->dims[3];
    size_t bytes = (size_t)(B * H * T * D) * sizeof(float), row;
    float *rows = vkl_malloc(g->ctx, bytes ? bytes : 1);
    *out = *like;
    out->data = vkl_malloc(g->ctx, bytes ? bytes : 1);
    bool ok = rows && out->data && !vkl_runner_read_state(r, state, T, rows, bytes, &row) &&
              row == (size_t)(B * H * D) * sizeof(float);
    for (int64_t b = 0; ok && b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t t = 0; t < T; t++)
                memcpy((float *)out->data + ((b * H + h) * T + t) * D, rows + ((t * B + b) * H + h) * D,
                       (size_t)D * sizeof(float));
    if (!ok) fprintf(stderr, "read_cache: %s\n", vkl_context_error(g->ctx));
    vkl_free(g->ctx, rows);
    return ok;
}

/* The state standing for present `name` ("<name>.cache"). */
static uint32_t state_of(const vkl_graph *g, const char *name) {
    char buf[256];
    uint32_t id;
    snprintf(buf, sizeof(buf), "%s.cache", name);
    return vkl_graph_find_tensor(g, buf, &id) == VKL_OK && g->tensors[id].kind == VKL_TENSOR_STATE ? id : VKL_NONE;
}

/* No Concat left that an Attention reads (directly or through a Transpose). */
static bool no_kv_concat(const vkl_graph *g) {
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const vkl_node *n = &g->nodes[i];
        if (n->dead || n->op != VKL_OP_ATTENTION) continue;
        for (uint32_t k = 1; k < 3; k++) {
            uint32_t p = g->tensors[n->inputs[k]].producer;
            if (p != VKL_NONE && g->nodes[p].op == VKL_OP_TRANSPOSE) p = g->tensors[g->nodes[p].inputs[0]].producer;
            if (p == VKL_NONE || g->nodes[p].op != VKL_OP_KV_APPEND) return false;
        }
        const vkl_attr *a = vkl_node_attr(n, "kv_layout");
        if (!a || a->i != 1) return false;
    }
    return true;
}

/* ---- fixtures -------------------------------------------------------------------------------- */

static void test_fixture(const char *name, uint32_t layers, uint32_t kv_heads) {
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s/models/%s", VKL_TEST_DATA_DIR, name);
    printf("%s\n", name);
    vkl_context *ctx;
    if (vkl_context_create(NULL, &ctx)) {
        failures++;
        return;
    }
    vkl_pipeline_report rep;
    vkl_onnx_model *m = fu_import(ctx, dir, KV, &rep);
    vkl_runner *r = NULL;
    if (!m) {
        vkl_context_destroy(ctx);
        return;
    }
    vkl_graph *g = vkl_onnx_graph(m);
    printf("  kv_inplace %u\n", fu_fired(&rep, "kv_inplace"));
    CHECK(fu_fired(&rep, "kv_inplace") == 2 * layers && fu_count_ops(g, VKL_OP_KV_APPEND) == 2 * layers);
    CHECK(fu_count_ops(g, VKL_OP_ATTENTION) == layers && no_kv_concat(g));
    /* inputs: input_ids, attention_mask, position_ids; outputs: logits */
    CHECK(g->n_inputs == 3 && g->n_outputs == 1 && !strcmp(g->tensors[g->outputs[0]].name, "logits"));
    for (uint32_t l = 0; l < layers; l++) {
        char pk[64];
        snprintf(pk, sizeof(pk), "present_key_%u", l);
        uint32_t s = state_of(g, pk);
        char dims[128];
        CHECK(s != VKL_NONE);
        if (s == VKL_NONE) continue;
        vkl_shape_str(g, &g->tensors[s].shape, dims, sizeof(dims));
        char want[128];
        snprintf(want, sizeof(want), "[past + seq, batch, %u, 32]", kv_heads);
        CHECK(!strcmp(dims, want) || (fprintf(stderr, "state %s is %s\n", pk, dims), 0));
    }
    CHECK_OK(ctx, vkl_runner_create(ctx, vkl_backend_find("ref"), NULL, g, 64, &r));
    for (int step = 0; r && step < 3; step++) {
        vkl_host_tensor in[3] = {0}, out[1] = {0}, past, want;
        bool ok = true;
        for (uint32_t i = 0; i < 3 && ok; i++)
            ok = fu_load_ref(ctx, dir, step, "in", g->tensors[g->inputs[i]].name, &in[i]);
        ok = ok && fu_load_ref(ctx, dir, step, "in", "past_key_0", &past);
        CHECK(ok);
        if (!ok) break;
        vkl_sym_value extra = {"past", past.dims[2]};
        vkl_free(ctx, past.data);
        CHECK_OK(ctx, vkl_runner_step(r, in, &extra, 1, out));
        char label[160];
        if (out[0].data && fu_load_ref(ctx, dir, step, "out", "logits", &want)) {
            snprintf(label, sizeof(label), "step%d logits", step);
            CHECK(fu_close(label, &out[0], &want, 1e-4) && fu_same_argmax(&out[0], &want));
            vkl_free(ctx, want.data);
        }
        for (uint32_t l = 0; out[0].data && l < 2 * layers; l++) {
            char pn[64];
            vkl_host_tensor got;
            snprintf(pn, sizeof(pn), "present_%s_%u", l % 2 ? "value" : "key", l / 2);
            uint32_t s = state_of(g, pn);
            if (s == VKL_NONE || !fu_load_ref(ctx, dir, step, "out", pn, &want)) {
                failures++;
                continue;
            }
            snprintf(label, sizeof(label), "step%d %s (cache)", step, pn);
            CHECK(read_cache(r, g, s, &want, &got) && fu_close(label, &got, &want, 1e-4));
            vkl_free(ctx, got.data);
            vkl_free(ctx, want.data);
        }
        fu_free_all(ctx, in, 3);
        fu_free_all(ctx, out, 1);
    }
    vkl_runner_destroy(r);
    vkl_onnx_close(m);
    vkl_context_destroy(ctx);
}

/* clip-vision has no cache: nothing to rewrite, outputs untouched. */
static void test_no_cache(void) {
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s/models/clip-vision", VKL_TEST_DATA_DIR);
    vkl_context *ctx;
    vkl_pipeline_report rep;
    if (vkl_context_create(NULL, &ctx)) {
        failures++;
        return;
    }
    vkl_onnx_model *m = fu_import(ctx, dir, KV, &rep);
    if (m) {
        vkl_graph *g = vkl_onnx_graph(m);
        CHECK(fu_fired(&rep, "kv_inplace") == 0 && fu_count_ops(g, VKL_OP_KV_APPEND) == 0);
        CHECK(g->n_inputs == 1 && g->n_outputs == 2);
    }
    vkl_onnx_close(m);
    vkl_context_destroy(ctx);
}

/* ---- small graphs ---------------------------------------------------------------------------- */

enum { KV_BHSD, KV_BSHD };
enum { OK_CASE, MISS_NO_POSITIONS, MISS_PRESENT_READ, MISS_PAST_READ };

typedef struct kv_case {
    const char *name;
    int layout;
    bool gqa;
    int defect;
    uint32_t want;
} kv_case;

/* q [B, 4, S, 8]; K/V new rows and past in the export's layout; eager
 * attention over Concat(past, new), no mask (every query sees every key). */
static vkl_graph *build_kv(vkl_context *ctx, const kv_case *c) {
    static const int64_t swap_last[4] = {0, 1, 3, 2}, bthd_to_bhdt[4] = {0, 2, 3, 1}, bthd_to_bhtd[4] = {0, 2, 1, 3};
    static const int64_t rep[5] = {1, 1, 2, 1, 1}, merged[4] = {0, 4, -1, 8};
    vkl_graph *g;
    if (vkl_graph_create(ctx, &g)) return NULL;
    const char *heads = c->gqa ? "2" : "4";
    char new_dims[64], past_dims[64];
    if (c->layout == KV_BSHD) {
        snprintf(new_dims, sizeof(new_dims), "batch, seq, %s, 8", heads);
        snprintf(past_dims, sizeof(past_dims), "batch, past, %s, 8", heads);
    } else {
        snprintf(new_dims, sizeof(new_dims), "batch, %s, seq, 8", heads);
        snprintf(past_dims, sizeof(past_dims), "batch, %s, past, 8", heads);
    }
    uint32_t q = fu_input(g, "q", VKL_DTYPE_F32, "batch, 4, seq, 8");
    uint32_t kn = fu_input(g, "k_new", VKL_DTYPE_F32, new_dims), vn = fu_input(g, "v_new", VKL_DTYPE_F32, new_dims);
    fu_input(g, c->defect == MISS_NO_POSITIONS ? "positions" : "position_ids", VKL_DTYPE_I64, "batch, seq");
    uint32_t pk = fu_input(g, "past_k", VKL_DTYPE_F32, past_dims), pv = fu_input(g, "past_v", VKL_DTYPE_F32, past_dims);
    int64_t axis = c->layout == KV_BSHD ? 1 : -2;
    const uint32_t kin[2] = {pk, kn}, vin[2] = {pv, vn};
    uint32_t k = fu_concat(g, kin, 2, axis), v = fu_concat(g, vin, 2, axis), present_k = k, present_v = v, kt;
    if (c->layout == KV_BSHD) {
        kt = fu_transpose(g, k, bthd_to_bhdt, 4);
        v = fu_transpose(g, v, bthd_to_bhtd, 4);
    } else {
        if (c->gqa) {
            uint32_t ek[2] = {fu_unsqueeze(g, k, 2), fu_i64(g, "rep_k", rep, 5)};
            uint32_t ev[2] = {fu_unsqueeze(g, v, 2), fu_i64(g, "rep_v", rep, 5)};
            k = fu_reshape(g, fu_node(g, VKL_OP_EXPAND, ek, 2, NULL, 0), merged, 4);
            v = fu_reshape(g, fu_node(g, VKL_OP_EXPAND, ev, 2, NULL, 0), merged, 4);
        }
        kt = fu_transpose(g, k, swap_last, 4);
    }
    uint32_t s = fu_op2(g, VKL_OP_MUL, fu_op2(g, VKL_OP_MAT_MUL, q, kt), fu_f32(g, "scale", "", 0.3f));
    vkl_attr ax = fu_attr_int("axis", -1);
    uint32_t p = fu_node(g, VKL_OP_SOFTMAX, &s, 1, &ax, 1);
    fu_output(g, fu_op2(g, VKL_OP_MAT_MUL, p, v));
    fu_output(g, present_k);
    fu_output(g, present_v);
    if (c->defect == MISS_PRESENT_READ) fu_output(g, fu_op1(g, VKL_OP_NEG, present_k));
    if (c->defect == MISS_PAST_READ) fu_output(g, fu_op1(g, VKL_OP_NEG, pv));
    CHECK_OK(ctx, vkl_graph_infer_shapes(g));
    return g;
}

/* Input dims at batch 2, `seq` new rows after `past` cached ones. */
static void kv_dims(const vkl_graph *g, uint32_t t, int64_t seq, int64_t past, int64_t *dims, uint32_t *rank) {
    static const char *const names[3] = {"batch", "seq", "past"};
    const int64_t values[3] = {2, seq, past};
    fu_eval_dims(g, t, names, values, 3, dims, rank);
}

/* The plain graph fed its own presents back against the rewritten one
 * keeping its cache, for a prefill of 3 and a decode of 2. */
static void run_kv_steps(vkl_graph *plain, vkl_graph *fused, bool bshd, const char *name) {
    vkl_context *ctx = plain->ctx;
    vkl_runner *r = NULL;
    vkl_host_tensor presents[2] = {0};
    CHECK_OK(ctx, vkl_runner_create(ctx, vkl_backend_find("ref"), NULL, fused, 16, &r));
    const int64_t seqs[2] = {3, 2};
    int64_t past = 0;
    for (int step = 0; r && step < 2; step++) {
        int64_t seq = seqs[step], pos[2 * 3];
        for (int64_t b = 0; b < 2; b++)
            for (int64_t i = 0; i < seq; i++) pos[b * seq + i] = past + i;
        vkl_host_tensor pin[6] = {0}, fin[4] = {0}, pout[3] = {0}, fout[1] = {0};
        for (uint32_t i = 0; i < 4; i++) {
            int64_t dims[VKL_MAX_RANK];
            uint32_t rank;
            kv_dims(plain, plain->inputs[i], seq, past, dims, &rank);
            pin[i] = fu_host(ctx, plain->tensors[plain->inputs[i]].dtype, dims, rank, (uint32_t)(10 * step + i), pos);
            fin[i] = pin[i];
        }
        for (uint32_t k = 0; k < 2; k++) {
            if (step == 0) {
                int64_t dims[VKL_MAX_RANK];
                uint32_t rank;
                kv_dims(plain, plain->inputs[4 + k], seq, past, dims, &rank);
                presents[k] = fu_host(ctx, VKL_DTYPE_F32, dims, rank, 0, NULL);
            }
            pin[4 + k] = presents[k];
        }
        vkl_sym_value extra = {"past", past};
        bool ok = fu_run(plain, pin, pout);
        CHECK_OK(ctx, vkl_runner_step(r, fin, &extra, 1, fout));
        ok = ok && fout[0].data;
        char label[160];
        snprintf(label, sizeof(label), "%s step%d out", name, step);
        if (ok) CHECK(fu_close(label, &fout[0], &pout[0], 1e-5));
        for (uint32_t k = 0; ok && k < 2; k++) {
            vkl_host_tensor got = {0}; /* freed below even when read_cache is not reached */
            const vkl_host_tensor *want = &pout[1 + k];
            uint32_t st = state_of(fused, plain->tensors[plain->outputs[1 + k]].name);
            vkl_host_tensor bhtd = *want;
            snprintf(label, sizeof(label), "%s step%d cache %u", name, step, k);
            if (bshd) {
                /* [B, T, H, D] presents: compare as [B, H, T, D] */
                bhtd.dims[1] = want->dims[2];
                bhtd.dims[2] = want->dims[1];
                bhtd.data = vkl_malloc(ctx, want->nbytes ? want->nbytes : 1);
                int64_t B = bhtd.dims[0], H = bhtd.dims[1], T = bhtd.dims[2], D = bhtd.dims[3];
                for (int64_t b = 0; b < B; b++)
                    for (int64_t h = 0; h < H; h++)
                        for (int64_t t = 0; t < T; t++)
                            memcpy((float *)bhtd.data + ((b * H + h) * T + t) * D,
                                   (const float *)want->data + ((b * T + t) * H + h) * D, (size_t)D * sizeof(float));
            }
            CHECK(st != VKL_NONE && read_cache(r, fused, st, &bhtd, &got) && fu_close(label, &got, &bhtd, 1e-6));
            if (bhtd.data != want->data) vkl_free(ctx, bhtd.data);
            vkl_free(ctx, got.data);
        }
        CHECK(ok);
        /* next step's past: this step's presents */
        fu_free_all(ctx, presents, 2);
        presents[0] = pout[1];
        presents[1] = pout[2];
        pout[1].data = pout[2].data = NULL;
        fu_free_all(ctx, pin, 4);
        fu_free_all(ctx, pout, 3);
        fu_free_all(ctx, fout, 1);
        past += seq;
    }
    fu_free_all(ctx, presents, 2);
    vkl_runner_destroy(r);
}

static void test_kv_case(vkl_context *ctx, const kv_case *c) {
    vkl_graph *plain = build_kv(ctx, c), *fused = build_kv(ctx, c);
    if (!plain || !fused) {
        failures++;
        return;
    }
    uint32_t passes = VKL_PASS_FUSE_ATTENTION | VKL_PASS_KV_INPLACE;
    uint32_t fired = fu_run_pair(plain, fused, passes, "kv_inplace", c->name, c->want);
    CHECK(fu_count_ops(fused, VKL_OP_ATTENTION) == 1);
    CHECK(fired == c->want && fu_count_ops(fused, VKL_OP_KV_APPEND) == c->want);
    if (c->want) {
        CHECK(no_kv_concat(fused) && fu_count_ops(fused, VKL_OP_CONCAT) == 0);
        /* past_k/past_v left the inputs, the presents the outputs */
        CHECK(fused->n_inputs == 4 && fused->n_outputs == 1);
        run_kv_steps(plain, fused, c->layout == KV_BSHD, c->name);
    } else {
        CHECK(fused->n_inputs == plain->n_inputs && fused->n_outputs == plain->n_outputs);
    }
    vkl_graph_destroy(plain);
    vkl_graph_destroy(fused);
}

static void test_small(vkl_context *ctx) {
    static const kv_case cases[] = {
        {"[B, H, S, D]", KV_BHSD, false, OK_CASE, 2},
        {"[B, H, S, D] GQA", KV_BHSD, true, OK_CASE, 2},
        {"[B, S, H, D]", KV_BSHD, false, OK_CASE, 2},
        {"miss: no position_ids", KV_BHSD, false, MISS_NO_POSITIONS, 0},
        {"miss: present read elsewhere", KV_BHSD, false, MISS_PRESENT_READ, 0},
        {"miss: past read elsewhere", KV_BHSD, true, MISS_PAST_READ, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) test_kv_case(ctx, &cases[i]);
}

int main(void) {
    vkl_context *ctx;
    if (vkl_context_create(NULL, &ctx)) return 1;
    test_small(ctx);
    vkl_context_destroy(ctx);
    test_fixture("llama", 2, 2);
    test_fixture("qwen2", 2, 2);
    test_fixture("gpt2", 2, 4);
    test_fixture("llama-dynamo", 2, 2);
    test_no_cache();
    return check_finish("test_kv_inplace");
}
