/* RoPE and attention fusion: on the fixture exports (counts, and step
 * outputs against ONNX Runtime's with and without the passes), and on small
 * graphs built here — every form the passes match fires and computes what
 * the plain ops compute; near misses stay plain ops. */
#include "fusion_util.h"

#define FUSED (VKL_PASS_ALL & ~VKL_PASS_KV_INPLACE)
#define PLAIN (FUSED & ~(VKL_PASS_FUSE_ROPE | VKL_PASS_FUSE_ATTENTION))

/* ---- fixtures -------------------------------------------------------------------------------- */

/* Run reference step `step` of a fixture on g; compare every output. */
static void check_step(vkl_graph *g, const char *dir, int step, const char *what) {
    vkl_context *ctx = g->ctx;
    vkl_host_tensor in[16] = {0}, out[16] = {0};
    bool ok = g->n_inputs <= 16 && g->n_outputs <= 16;
    for (uint32_t i = 0; ok && i < g->n_inputs; i++)
        ok = fu_load_ref(ctx, dir, step, "in", g->tensors[g->inputs[i]].name, &in[i]);
    CHECK(ok);
    if (ok && fu_run(g, in, out)) {
        for (uint32_t i = 0; i < g->n_outputs; i++) {
            const char *name = g->tensors[g->outputs[i]].name;
            vkl_host_tensor want;
            char label[160];
            snprintf(label, sizeof(label), "%s step%d %s", what, step, name);
            if (!fu_load_ref(ctx, dir, step, "out", name, &want)) {
                failures++;
                continue;
            }
            CHECK(fu_close(label, &out[i], &want, 1e-4));
            if (!strcmp(name, "logits")) CHECK(fu_same_argmax(&out[i], &want));
            vkl_free(ctx, want.data);
        }
    } else {
        failures++;
    }
    fu_free_all(ctx, in, 16);
    fu_free_all(ctx, out, 16);
}

static void test_fixture(const char *name, uint32_t want_rope, uint32_t want_attention, int steps) {
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s/models/%s", VKL_TEST_DATA_DIR, name);
    printf("%s\n", name);
    vkl_context *ctx;
    if (vkl_context_create(NULL, &ctx)) {
        failures++;
        return;
    }
    vkl_pipeline_report rp, rf;
    vkl_onnx_model *plain = fu_import(ctx, dir, PLAIN, &rp), *fused = fu_import(ctx, dir, FUSED, &rf);
    if (plain && fused) {
        vkl_graph *gp = vkl_onnx_graph(plain), *gf = vkl_onnx_graph(fused);
        printf("  fuse_rope %u, fuse_attention %u\n", fu_fired(&rf, "fuse_rope"), fu_fired(&rf, "fuse_attention"));
        CHECK(fu_fired(&rf, "fuse_rope") == want_rope && fu_count_ops(gf, VKL_OP_ROPE) == want_rope);
        CHECK(fu_fired(&rf, "fuse_attention") == want_attention &&
              fu_count_ops(gf, VKL_OP_ATTENTION) == want_attention);
        CHECK(fu_count_ops(gp, VKL_OP_ROPE) == 0 && fu_count_ops(gp, VKL_OP_ATTENTION) == 0);
        /* every Softmax was attention's; each fusion took two MatMuls */
        CHECK(fu_count_ops(gf, VKL_OP_SOFTMAX) == 0);
        CHECK(fu_count_ops(gp, VKL_OP_MAT_MUL) == fu_count_ops(gf, VKL_OP_MAT_MUL) + 2 * want_attention);
        if (want_rope) CHECK(fu_count_ops(gf, VKL_OP_NEG) == 0);
        for (int s = 0; s < steps; s++) {
            check_step(gp, dir, s, "plain");
            check_step(gf, dir, s, "fused");
        }
    }
    vkl_onnx_close(plain);
    vkl_onnx_close(fused);
    vkl_context_destroy(ctx);
}

/* ---- RoPE on small graphs -------------------------------------------------------------------- */

enum { ROT_HALF, ROT_PAIRS_STRIDED, ROT_PAIRS_GATHER, ROT_PAIRS_SLICE };
enum { TAB_UNSQUEEZE, TAB_SR, TAB_B1SR, TAB_BHSR };
enum { NO_DEFECT, DEF_HALVES_SWAPPED, DEF_NEG_OTHER_HALF, DEF_NEG_IS_OUTPUT, DEF_OTHER_X, NEG_START };

typedef struct rope_case {
    const char *name;
    int form, table;
    bool swap;
    int64_t rot; /* rotary width R; < 16 (the head dim) is partial rotary */
    int defect;
    uint32_t want;
} rope_case;

#define HEAD 16

static uint32_t scalar_i64(vkl_graph *g, int64_t v) {
    char name[32];
    snprintf(name, sizeof(name), "idx%u", g->n_tensors);
    return fu_weight(g, name, VKL_DTYPE_I64, "", &v, sizeof(v));
}

/* GPT-J's rotate_every_two in one of its exported forms. */
static uint32_t rotate_pairs(vkl_graph *g, uint32_t x, const rope_case *c) {
    const int64_t pairs[5] = {0, 2, 0, c->rot / 2, 2}, back[4] = {0, 2, 0, c->rot};
    uint32_t ev, od;
    if (c->form == ROT_PAIRS_STRIDED) {
        ev = fu_unsqueeze(g, fu_slice(g, x, 0, INT64_MAX, 3, 2), -1);
        od = fu_unsqueeze(g, fu_op1(g, VKL_OP_NEG, fu_slice(g, x, 1, INT64_MAX, -1, 2)), 4);
    } else {
        uint32_t xp = fu_reshape(g, x, pairs, 5);
        if (c->form == ROT_PAIRS_GATHER) {
            vkl_attr a = fu_attr_int("axis", -1);
            uint32_t e_in[2] = {xp, scalar_i64(g, 0)}, o_in[2] = {xp, scalar_i64(g, 1)};
            ev = fu_unsqueeze(g, fu_node(g, VKL_OP_GATHER, e_in, 2, &a, 1), 4);
            od = fu_op1(g, VKL_OP_NEG, fu_unsqueeze(g, fu_node(g, VKL_OP_GATHER, o_in, 2, &a, 1), 4));
        } else {
            ev = fu_slice(g, xp, 0, 1, 4, 1);
            od = fu_op1(g, VKL_OP_NEG, fu_slice(g, xp, 1, 2, -1, 1));
        }
    }
    const uint32_t parts[2] = {od, ev};
    return fu_reshape(g, fu_concat(g, parts, 2, -1), back, 4);
}

static vkl_graph *build_rope(vkl_context *ctx, const rope_case *c) {
    vkl_graph *g;
    if (vkl_graph_create(ctx, &g)) return NULL;
    char tab[64];
    int64_t r = c->rot, h = r / 2;
    uint32_t x = fu_input(g, "x", VKL_DTYPE_F32, "batch, 2, seq, 16");
    uint32_t xr = r < HEAD ? fu_slice(g, x, 0, r, 3, 1) : x;
    static const char *const tab_dims[] = {"batch, seq, %lld", "seq, %lld", "batch, 1, seq, %lld",
                                           "batch, 2, seq, %lld"};
    snprintf(tab, sizeof(tab), tab_dims[c->table], (long long)r);
    uint32_t cos_b = fu_input(g, "cos", VKL_DTYPE_F32, tab), sin_b = fu_input(g, "sin", VKL_DTYPE_F32, tab);
    if (c->table == TAB_UNSQUEEZE) {
        cos_b = fu_unsqueeze(g, cos_b, 1);
        sin_b = fu_unsqueeze(g, sin_b, 1);
    }
    uint32_t rot, neg = VKL_NONE;
    if (c->form == ROT_HALF) {
        uint32_t lo = fu_slice(g, xr, 0, h, 3, 1), hi = fu_slice(g, xr, h, INT64_MAX, -1, 1);
        if (c->defect == DEF_HALVES_SWAPPED) {
            uint32_t t = lo;
            lo = hi;
            hi = t;
        }
        if (c->defect == NEG_START) lo = fu_slice(g, xr, 0, h, 3, 1), hi = fu_slice(g, xr, -h, INT64_MAX, 3, 1);
        neg = fu_op1(g, VKL_OP_NEG, c->defect == DEF_NEG_OTHER_HALF ? lo : hi);
        const uint32_t parts[2] = {neg, lo}, other[2] = {hi, neg};
        rot = fu_concat(g, c->defect == DEF_NEG_OTHER_HALF ? other : parts, 2, -1);
    } else {
        rot = rotate_pairs(g, xr, c);
    }
    uint32_t xc = c->defect == DEF_OTHER_X ? fu_input(g, "x2", VKL_DTYPE_F32, "batch, 2, seq, 16") : xr;
    uint32_t mc = c->swap ? fu_op2(g, VKL_OP_MUL, cos_b, xc) : fu_op2(g, VKL_OP_MUL, xc, cos_b);
    uint32_t ms = c->swap ? fu_op2(g, VKL_OP_MUL, sin_b, rot) : fu_op2(g, VKL_OP_MUL, rot, sin_b);
    uint32_t y = c->swap ? fu_op2(g, VKL_OP_ADD, ms, mc) : fu_op2(g, VKL_OP_ADD, mc, ms);
    if (r < HEAD) {
        const uint32_t parts[2] = {y, fu_slice(g, x, r, INT64_MAX, 3, 1)};
        y = fu_concat(g, parts, 2, 3);
    }
    fu_output(g, y);
    if (c->defect == DEF_NEG_IS_OUTPUT) fu_output(g, neg);
    CHECK_OK(ctx, vkl_graph_infer_shapes(g));
    return g;
}

/* Run a plain and a passed copy of a small graph on the same random inputs
 * (dims from `dims_of`); the outputs must agree. */
typedef void (*dims_fn)(const vkl_graph *g, uint32_t input, int64_t *dims, uint32_t *rank);

static void compare_runs(vkl_graph *plain, vkl_graph *fused, dims_fn dims_of, const char *name) {
    vkl_context *ctx = plain->ctx;
    vkl_host_tensor in[8] = {0}, a[4] = {0}, b[4] = {0};
    CHECK(plain->n_inputs <= 8 && plain->n_outputs <= 4 && fused->n_outputs == plain->n_outputs);
    for (uint32_t i = 0; i < plain->n_inputs && i < 8; i++) {
        int64_t dims[VKL_MAX_RANK];
        uint32_t rank;
        dims_of(plain, plain->inputs[i], dims, &rank);
        in[i] = fu_host(ctx, plain->tensors[plain->inputs[i]].dtype, dims, rank, i + 1, NULL);
    }
    if (fu_run(plain, in, a) && fu_run(fused, in, b)) {
        for (uint32_t k = 0; k < plain->n_outputs && k < 4; k++) {
            char label[160];
            snprintf(label, sizeof(label), "%s output %u", name, k);
            CHECK(fu_close(label, &b[k], &a[k], 1e-5));
        }
    } else {
        failures++;
    }
    fu_free_all(ctx, in, 8);
    fu_free_all(ctx, a, 4);
    fu_free_all(ctx, b, 4);
}

/* batch 2, seq 3, kv 5; other dims as declared. */
static void small_dims(const vkl_graph *g, uint32_t t, int64_t *dims, uint32_t *rank) {
    static const char *const names[3] = {"batch", "seq", "kv"};
    static const int64_t values[3] = {2, 3, 5};
    fu_eval_dims(g, t, names, values, 3, dims, rank);
}

static void test_rope_case(vkl_context *ctx, const rope_case *c) {
    vkl_graph *plain = build_rope(ctx, c), *fused = build_rope(ctx, c);
    if (!plain || !fused) {
        failures++;
        return;
    }
    uint32_t fired = fu_run_pair(plain, fused, VKL_PASS_FUSE_ROPE, "fuse_rope", c->name, c->want);
    uint32_t node = fu_find_op(fused, VKL_OP_ROPE);
    CHECK(fired == c->want && fu_count_ops(fused, VKL_OP_ROPE) == c->want);
    if (c->want && node != VKL_NONE) {
        const vkl_node *n = &fused->nodes[node];
        const vkl_attr *a = vkl_node_attr(n, "interleaved");
        CHECK(a && a->i == (c->form != ROT_HALF));
        /* the whole head goes in (partial rotary included), cos is [.., S, R] */
        CHECK(n->inputs[0] == fused->inputs[0]);
        CHECK(fu_count_ops(fused, VKL_OP_NEG) == 0 && fu_count_ops(fused, VKL_OP_CONCAT) == 0);
        CHECK(fu_count_ops(fused, VKL_OP_SQUEEZE) == (c->table == TAB_B1SR ? 2u : 0u));
        const vkl_shape *cs = &fused->tensors[n->inputs[1]].shape;
        int64_t rr;
        CHECK(cs->rank >= 2 && vkl_expr_is_const(fused->syms, cs->dims[cs->rank - 1], &rr) && rr == c->rot);
    }
    compare_runs(plain, fused, small_dims, c->name);
    vkl_graph_destroy(plain);
    vkl_graph_destroy(fused);
}

static void test_rope(vkl_context *ctx) {
    static const rope_case cases[] = {
        {"rotate_half", ROT_HALF, TAB_UNSQUEEZE, false, 16, NO_DEFECT, 1},
        {"rotate_half swapped operands", ROT_HALF, TAB_UNSQUEEZE, true, 16, NO_DEFECT, 1},
        {"rotate_half cos [S, R]", ROT_HALF, TAB_SR, false, 16, NO_DEFECT, 1},
        {"rotate_half cos [B, 1, S, R]", ROT_HALF, TAB_B1SR, true, 16, NO_DEFECT, 1},
        {"rotate_half partial rotary", ROT_HALF, TAB_UNSQUEEZE, false, 8, NO_DEFECT, 1},
        {"pairs strided", ROT_PAIRS_STRIDED, TAB_UNSQUEEZE, false, 16, NO_DEFECT, 1},
        {"pairs gather", ROT_PAIRS_GATHER, TAB_SR, true, 16, NO_DEFECT, 1},
        {"pairs slice", ROT_PAIRS_SLICE, TAB_UNSQUEEZE, false, 16, NO_DEFECT, 1},
        {"pairs strided partial", ROT_PAIRS_STRIDED, TAB_UNSQUEEZE, true, 8, NO_DEFECT, 1},
        {"rotate_half, upper half from -h", ROT_HALF, TAB_UNSQUEEZE, false, 16, NEG_START, 1},
        {"miss: cos [B, H, S, R]", ROT_HALF, TAB_BHSR, false, 16, NO_DEFECT, 0},
        {"miss: halves swapped", ROT_HALF, TAB_UNSQUEEZE, false, 16, DEF_HALVES_SWAPPED, 0},
        {"miss: Neg on the other half", ROT_HALF, TAB_UNSQUEEZE, false, 16, DEF_NEG_OTHER_HALF, 0},
        {"miss: Neg also an output", ROT_HALF, TAB_UNSQUEEZE, false, 16, DEF_NEG_IS_OUTPUT, 0},
        {"miss: x*cos of another x", ROT_HALF, TAB_UNSQUEEZE, false, 16, DEF_OTHER_X, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) test_rope_case(ctx, &cases[i]);
}

/* ---- attention on small graphs --------------------------------------------------------------- */

enum { K_BHTD, K_BTHD, K_TRANSPOSED_INPUT };
enum { SC_MUL, SC_DIV, SC_QK, SC_NONE };
enum { A_NO_DEFECT, A_SOFTMAX_AXIS, A_PROBS_OUTPUT, A_SCALE_TENSOR, A_SCORES_OUTPUT, A_GQA_AXIS1, A_MASK_BIGGER };

typedef struct attn_case {
    const char *name;
    int k_layout, scale;
    bool mask, gqa, cast, mask_first;
    int defect;
    uint32_t want;
    int64_t want_kv_heads;
    float want_scale;
} attn_case;

/* k or v [B, 2, kv, 8] expanded to 4 heads by repeat_kv (or, with
 * `axis1`, by an Unsqueeze on axis 1: another head order). */
static uint32_t repeat_kv(vkl_graph *g, uint32_t k, bool axis1) {
    static const int64_t rep2[5] = {1, 1, 2, 1, 1}, rep1[5] = {1, 2, 1, 1, 1}, back[4] = {0, 4, -1, 8};
    uint32_t e_in[2] = {fu_unsqueeze(g, k, axis1 ? 1 : 2), VKL_NONE};
    char name[32];
    snprintf(name, sizeof(name), "rep%u", g->n_tensors);
    e_in[1] = fu_i64(g, name, axis1 ? rep1 : rep2, 5);
    return fu_reshape(g, fu_node(g, VKL_OP_EXPAND, e_in, 2, NULL, 0), back, 4);
}

static vkl_graph *build_attention(vkl_context *ctx, const attn_case *c) {
    static const int64_t swap_last[4] = {0, 1, 3, 2}, bthd_to_bhdt[4] = {0, 2, 3, 1};
    vkl_graph *g;
    if (vkl_graph_create(ctx, &g)) return NULL;
    /* A_MASK_BIGGER: Q, K, V of batch 1, the mask of batch `batch` */
    const char *b = c->defect == A_MASK_BIGGER ? "1" : "batch";
    char kv_dims[64], q_dims[64];
    snprintf(kv_dims, sizeof(kv_dims), "%s, %d, kv, 8", b, c->gqa ? 2 : 4);
    snprintf(q_dims, sizeof(q_dims), "%s, 4, seq, 8", b);
    uint32_t q = fu_input(g, "q", VKL_DTYPE_F32, q_dims), kt;
    if (c->k_layout == K_BTHD) {
        kt = fu_transpose(g, fu_input(g, "k", VKL_DTYPE_F32, "batch, kv, 4, 8"), bthd_to_bhdt, 4);
    } else if (c->k_layout == K_TRANSPOSED_INPUT) {
        kt = fu_input(g, "kt", VKL_DTYPE_F32, "batch, 4, 8, kv");
    } else {
        uint32_t k = fu_input(g, "k", VKL_DTYPE_F32, kv_dims);
        if (c->gqa) k = repeat_kv(g, k, c->defect == A_GQA_AXIS1);
        kt = fu_transpose(g, k, swap_last, 4);
    }
    uint32_t v = fu_input(g, "v", VKL_DTYPE_F32, kv_dims);
    if (c->gqa) v = repeat_kv(g, v, c->defect == A_GQA_AXIS1);
    const char *mask_dims = c->defect == A_MASK_BIGGER ? "batch, 4, seq, kv" : "batch, 1, seq, kv";
    uint32_t mask = c->mask ? fu_input(g, "mask", VKL_DTYPE_F32, mask_dims) : VKL_NONE;
    if (c->scale == SC_QK) {
        q = fu_op2(g, VKL_OP_MUL, q, fu_f32(g, "sq", "", 0.5f));
        kt = fu_op2(g, VKL_OP_MUL, fu_f32(g, "sk", "", 0.25f), kt);
    }
    uint32_t s = fu_op2(g, VKL_OP_MAT_MUL, q, kt), scores = s;
    if (c->defect == A_SCALE_TENSOR) {
        const float ramp[5] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f};
        s = fu_op2(g, VKL_OP_MUL, s, fu_weight(g, "ramp", VKL_DTYPE_F32, "5", ramp, sizeof(ramp)));
    } else if (c->scale == SC_MUL) {
        s = fu_op2(g, VKL_OP_MUL, s, fu_f32(g, "scale", "", 0.35f));
    } else if (c->scale == SC_DIV) {
        s = fu_op2(g, VKL_OP_DIV, s, fu_f32(g, "scale", "1", 2.0f));
    }
    if (c->mask) s = c->mask_first ? fu_op2(g, VKL_OP_ADD, mask, s) : fu_op2(g, VKL_OP_ADD, s, mask);
    vkl_attr axis = fu_attr_int("axis", c->defect == A_SOFTMAX_AXIS ? 2 : c->cast ? 3 : -1);
    uint32_t p = fu_node(g, VKL_OP_SOFTMAX, &s, 1, &axis, 1), probs = p;
    if (c->cast) {
        vkl_attr to = fu_attr_int("to", 1);
        probs = fu_node(g, VKL_OP_CAST, &p, 1, &to, 1);
    }
    fu_output(g, fu_op2(g, VKL_OP_MAT_MUL, probs, v));
    if (c->defect == A_PROBS_OUTPUT) fu_output(g, p);
    if (c->defect == A_SCORES_OUTPUT) fu_output(g, scores);
    CHECK_OK(ctx, vkl_graph_infer_shapes(g));
    return g;
}

static void test_attention_case(vkl_context *ctx, const attn_case *c) {
    vkl_graph *plain = build_attention(ctx, c), *fused = build_attention(ctx, c);
    if (!plain || !fused) {
        failures++;
        return;
    }
    uint32_t fired = fu_run_pair(plain, fused, VKL_PASS_FUSE_ATTENTION, "fuse_attention", c->name, c->want);
    uint32_t node = fu_find_op(fused, VKL_OP_ATTENTION);
    CHECK(fired == c->want && fu_count_ops(fused, VKL_OP_ATTENTION) == c->want);
    if (c->want && node != VKL_NONE) {
        const vkl_node *n = &fused->nodes[node];
        const vkl_attr *sc = vkl_node_attr(n, "scale");
        int64_t heads;
        CHECK(sc && fabsf(sc->f - c->want_scale) <= 1e-6f * c->want_scale);
        CHECK(vkl_expr_is_const(fused->syms, fused->tensors[n->inputs[1]].shape.dims[1], &heads) &&
              heads == c->want_kv_heads);
        CHECK((n->n_inputs == 4 && n->inputs[3] != VKL_NONE) == c->mask);
        CHECK(fu_count_ops(fused, VKL_OP_SOFTMAX) == 0 && fu_count_ops(fused, VKL_OP_MAT_MUL) == 0);
        if (c->gqa && c->want_kv_heads == 2) CHECK(fu_count_ops(fused, VKL_OP_EXPAND) == 0);
    }
    compare_runs(plain, fused, small_dims, c->name);
    vkl_graph_destroy(plain);
    vkl_graph_destroy(fused);
}

static void test_attention(vkl_context *ctx) {
    static const attn_case cases[] = {
        {"mul scale + mask", K_BHTD, SC_MUL, true, false, false, false, A_NO_DEFECT, 1, 4, 0.35f},
        {"mask + scores", K_BHTD, SC_MUL, true, false, false, true, A_NO_DEFECT, 1, 4, 0.35f},
        {"div scale, no mask", K_BHTD, SC_DIV, false, false, false, false, A_NO_DEFECT, 1, 4, 0.5f},
        {"q and k scaled", K_BHTD, SC_QK, true, false, false, false, A_NO_DEFECT, 1, 4, 0.125f},
        {"no scale, cast, axis 3", K_BHTD, SC_NONE, false, false, true, false, A_NO_DEFECT, 1, 4, 1.0f},
        {"k [B, T, H, D] (CLIP)", K_BTHD, SC_MUL, false, false, false, false, A_NO_DEFECT, 1, 4, 0.35f},
        {"k already transposed", K_TRANSPOSED_INPUT, SC_MUL, true, false, false, false, A_NO_DEFECT, 1, 4, 0.35f},
        {"GQA repeat_kv", K_BHTD, SC_MUL, true, true, false, false, A_NO_DEFECT, 1, 2, 0.35f},
        {"GQA other head order", K_BHTD, SC_MUL, true, true, false, false, A_GQA_AXIS1, 1, 4, 0.35f},
        {"miss: softmax axis 2", K_BHTD, SC_MUL, true, false, false, false, A_SOFTMAX_AXIS, 0, 0, 0},
        {"miss: probs an output", K_BHTD, SC_MUL, true, false, false, false, A_PROBS_OUTPUT, 0, 0, 0},
        {"miss: scores an output", K_BHTD, SC_MUL, true, false, false, false, A_SCORES_OUTPUT, 0, 0, 0},
        {"miss: scale not a scalar", K_BHTD, SC_MUL, true, false, false, false, A_SCALE_TENSOR, 0, 0, 0},
        {"miss: mask broadcasts up", K_BHTD, SC_MUL, true, false, false, false, A_MASK_BIGGER, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) test_attention_case(ctx, &cases[i]);
}

int main(void) {
    vkl_context *ctx;
    if (vkl_context_create(NULL, &ctx)) return 1;
    test_rope(ctx);
    test_attention(ctx);
    vkl_context_destroy(ctx);
    test_fixture("llama", 4, 2, 2);
    test_fixture("qwen2", 4, 2, 2);
    test_fixture("gpt2", 0, 2, 2);
    test_fixture("llama-dynamo", 4, 2, 2);
    test_fixture("clip-vision", 0, 2, 1);
    return check_finish("test_fuse_attention");
}
