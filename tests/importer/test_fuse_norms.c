/* The norm and activation fusions (RMSNorm, LayerNorm, GELU, SiLU*mul) and
 * constant folding: small graphs built here, where each pattern must fire
 * exactly where it should (every operand order the exporters write) and
 * nowhere else (wrong constant, wrong axis, an intermediate read elsewhere),
 * each fused graph computing what the unfused one does on the ref backend;
 * then every fixture in tests/models, fused, against ONNX Runtime's step0.
 * Usage: test_fuse_norms [MODELS_DIR] */
#include "context.h"
#include "fusion_util.h"

/* Leaks are LeakSanitizer's to find (the ASan build runs this test). */
static vkl_context *new_ctx(void) {
    vkl_context_options o;
    vkl_context_options_init(&o);
    o.log_level = VKL_LOG_ERROR;
    vkl_context *ctx = NULL;
    CHECK(vkl_context_create(&o, &ctx) == VKL_OK);
    return ctx;
}

/* ---- building graphs: tensors by name, shapes as text ("batch, seq, 16") */

typedef struct tg {
    vkl_context *ctx;
    vkl_graph *g;
    uint32_t seed;
} tg;

static float rnd(tg *t) {
    t->seed = t->seed * 1664525u + 1013904223u;
    float v = (float)((t->seed >> 8) & 0xFFFF) / 65536.0f * 2.0f - 1.0f;
    return v == 0 ? 0.5f : v;
}

static uint32_t tid(tg *t, const char *name) {
    uint32_t id = VKL_NONE;
    if (vkl_graph_find_tensor(t->g, name, &id) == VKL_OK) return id;
    CHECK(vkl_graph_add_tensor(t->g, name, VKL_DTYPE_INVALID, VKL_TENSOR_ACTIVATION, NULL, &id) == VKL_OK);
    return id;
}

static void input(tg *t, const char *name, const char *dims) {
    fu_input(t->g, name, VKL_DTYPE_F32, dims);
}

static void output(tg *t, const char *name) {
    fu_output(t->g, tid(t, name));
}

/* An f32 weight: `values` or, when NULL, random non-zero data. */
static void weight(tg *t, const char *name, const char *dims, const float *values) {
    vkl_shape s = fu_shape(t->g, dims);
    int64_t n = 1;
    CHECK(vkl_shape_const_numel(t->g, &s, &n));
    float *buf = malloc((size_t)n * sizeof(float) + 1);
    for (int64_t i = 0; i < n; i++) buf[i] = values ? values[i] : rnd(t);
    fu_weight(t->g, name, VKL_DTYPE_F32, dims, buf, (size_t)n * sizeof(float));
    free(buf);
}

static void scalar(tg *t, const char *name, float v) {
    weight(t, name, "", &v);
}

static void node(tg *t, vkl_op op, const char *ins, const char *outs, const vkl_attr *attrs, uint32_t n_attrs) {
    char in_names[8][64], out_names[8][64]; /* "a, b, -" ("-": absent) */
    uint32_t in_ids[8], out_ids[8], ni = check_split(ins, ',', in_names, sizeof(in_names[0]), 8),
                                    no = check_split(outs, ',', out_names, sizeof(out_names[0]), 8);
    for (uint32_t k = 0; k < ni; k++) in_ids[k] = strcmp(in_names[k], "-") ? tid(t, in_names[k]) : VKL_NONE;
    for (uint32_t k = 0; k < no; k++) out_ids[k] = tid(t, out_names[k]);
    if (vkl_graph_add_node(t->g, op, out_names[0], in_ids, ni, out_ids, no, attrs, n_attrs, NULL)) {
        fprintf(stderr, "add_node: %s\n", vkl_context_error(t->ctx));
        failures++;
    }
}

static void op1(tg *t, vkl_op op, const char *ins, const char *out) {
    node(t, op, ins, out, NULL, 0);
}

/* ReduceMean(in, axes = [axis]) keepdims 1. */
static void mean(tg *t, const char *in, int64_t axis, const char *out) {
    char axes[96], ins[160];
    snprintf(axes, sizeof(axes), "%s.axes", out);
    fu_i64(t->g, axes, &axis, 1);
    snprintf(ins, sizeof(ins), "%s, %s", in, axes);
    op1(t, VKL_OP_REDUCE_MEAN, ins, out);
}

/* ---- running: symbols batch = 2, seq = 3, hid = 16; every input random */

typedef struct outs {
    vkl_host_tensor t[8];
    uint32_t n;
} outs;

static bool run_graph(tg *t, outs *o) {
    vkl_graph *g = t->g;
    size_t nsym = vkl_symtab_symbol_count(g->syms), idx;
    int64_t values[16];
    vkl_host_tensor in[8] = {{0}};
    bool ok = nsym <= 16 && g->n_inputs <= 8 && g->n_outputs <= 8;
    for (size_t i = 0; i < 16; i++) values[i] = VKL_SYM_UNBOUND;
    if (vkl_symtab_find_symbol(g->syms, "batch", &idx) == VKL_OK && idx < 16) values[idx] = 2;
    if (vkl_symtab_find_symbol(g->syms, "seq", &idx) == VKL_OK && idx < 16) values[idx] = 3;
    if (vkl_symtab_find_symbol(g->syms, "hid", &idx) == VKL_OK && idx < 16) values[idx] = 16;
    for (uint32_t k = 0; ok && k < g->n_inputs; k++) {
        const vkl_tensor *x = &g->tensors[g->inputs[k]];
        int64_t dims[VKL_MAX_RANK], n;
        ok = vkl_shape_eval(g->ctx, g, &x->shape, values, nsym, dims, &n) == VKL_OK;
        if (ok) in[k] = fu_host(t->ctx, VKL_DTYPE_F32, dims, x->shape.rank, k + 1, NULL);
    }
    o->n = 0;
    if (ok && (ok = fu_run(g, in, o->t))) o->n = g->n_outputs;
    fu_free_all(t->ctx, in, g->n_inputs < 8 ? g->n_inputs : 8);
    return ok;
}

/* ---- one case: build twice, optimize one copy, compare */

typedef void (*builder)(tg *t, int variant);

typedef struct expect {
    const char *pass;  /* report step */
    uint32_t bits;     /* passes run on the optimized copy */
    uint32_t fires;    /* what the step reports */
    vkl_op op;         /* an op to count afterwards ... */
    uint32_t op_count; /* ... and how many of it */
} expect;

static void check_case(const char *what, builder build, int variant, expect e) {
    vkl_context *ctx = new_ctx();
    tg plain = {ctx, NULL, 7}, opt = {ctx, NULL, 7};
    vkl_pipeline_report r;
    outs a = {0}, b = {0};
    int before = failures;
    CHECK(vkl_graph_create(ctx, &plain.g) == VKL_OK && vkl_graph_create(ctx, &opt.g) == VKL_OK);
    build(&plain, variant);
    build(&opt, variant);
    CHECK(vkl_graph_infer_shapes(plain.g) == VKL_OK && vkl_graph_infer_shapes(opt.g) == VKL_OK);
    CHECK(vkl_pipeline_run(plain.g, 0, &r) == VKL_OK);
    vkl_status st = vkl_pipeline_run(opt.g, e.bits, &r);
    if (st) fprintf(stderr, "pipeline: %s\n", vkl_context_error(ctx));
    CHECK(st == VKL_OK);
    uint32_t got = fu_fired(&r, e.pass), ops = fu_count_ops(opt.g, e.op);
    if (got != e.fires || ops != e.op_count) {
        fprintf(stderr, "%s (variant %d): %s fired %u (want %u), %s x%u (want %u)\n", what, variant, e.pass, got,
                e.fires, vkl_op_info_get(e.op)->name, ops, e.op_count);
        failures++;
    }
    bool ran = !st && run_graph(&plain, &a);
    ran = ran && run_graph(&opt, &b) && a.n == b.n;
    for (uint32_t k = 0; ran && k < a.n; k++) {
        if (fu_close(NULL, &b.t[k], &a.t[k], 1e-4)) continue;
        fprintf(stderr, "%s (variant %d): output %u differs\n", what, variant, k);
        failures++;
    }
    CHECK(ran);
    fu_free_all(ctx, a.t, a.n);
    fu_free_all(ctx, b.t, b.n);
    vkl_graph_destroy(plain.g);
    vkl_graph_destroy(opt.g);
    vkl_context_destroy(ctx);
    if (failures == before) printf("  ok  %s (variant %d): %s fired %u\n", what, variant, e.pass, got);
}

/* ---- RMSNorm */

enum {
    RMS_LLAMA,        /* Pow, Div(1, Sqrt), Mul(x, .), Mul(w, .): the TorchScript export */
    RMS_DYNAMO,       /* Mul(x, x), axes = [rank-1], Add(eps, .), Reciprocal, Mul(r, x), Mul(., w) */
    RMS_DIV_NO_W,     /* Div(x, Sqrt): no weight, ones are made */
    RMS_POW_HALF,     /* Pow(var + eps, -0.5) */
    RMS_W_FIRST,      /* Mul(Mul(w, x), r) */
    RMS_AXIS1,        /* near miss: mean over axis 1 */
    RMS_CUBE,         /* near miss: Pow(x, 3) */
    RMS_SQRT_OUT,     /* near miss: Sqrt also a graph output */
    RMS_EPS_INPUT,    /* near miss: eps is not a constant */
    RMS_TWO,          /* near miss: Div(2, Sqrt) */
    RMS_SYM_NO_W,     /* near miss: no weight and a symbolic last dim */
    RMS_CENTERED,     /* LayerNorm's shape: left to fuse_layernorm */
    RMS_INNER_OUT,    /* x * rsqrt is also a graph output: fused without w */
    RMS_W_RANK2       /* a [1, 16] weight broadcasts: fused without w */
};

static void build_rms(tg *t, int v) {
    const char *dims = v == RMS_SYM_NO_W ? "batch, seq, hid" : "batch, seq, 16";
    input(t, "x0", dims);
    weight(t, "w", v == RMS_W_RANK2 ? "1, 16" : "16", NULL);
    scalar(t, "two", v == RMS_CUBE ? 3.0f : 2.0f);
    scalar(t, "one", v == RMS_TWO ? 2.0f : 1.0f);
    scalar(t, "eps", 1e-6f);
    scalar(t, "mhalf", -0.5f);
    op1(t, VKL_OP_EXP, "x0", "x"); /* x is an activation, as in a model */
    if (v == RMS_CENTERED) {
        mean(t, "x", -1, "mu");
        op1(t, VKL_OP_SUB, "x, mu", "xc");
    }
    const char *x = v == RMS_CENTERED ? "xc" : "x";
    char buf[64];
    if (v == RMS_DYNAMO) snprintf(buf, sizeof(buf), "%s, %s", x, x);
    else snprintf(buf, sizeof(buf), "%s, two", x);
    op1(t, v == RMS_DYNAMO ? VKL_OP_MUL : VKL_OP_POW, buf, "sq");
    mean(t, "sq", v == RMS_AXIS1 ? 1 : v == RMS_DYNAMO ? 2 : -1, "ms");
    if (v == RMS_EPS_INPUT) {
        input(t, "eps_in0", "1");
        op1(t, VKL_OP_EXP, "eps_in0", "eps_in");
    }
    op1(t, VKL_OP_ADD, v == RMS_DYNAMO ? "eps, ms" : v == RMS_EPS_INPUT ? "ms, eps_in" : "ms, eps", "var");
    if (v == RMS_POW_HALF) {
        op1(t, VKL_OP_POW, "var, mhalf", "r");
        snprintf(buf, sizeof(buf), "%s, r", x);
        op1(t, VKL_OP_MUL, buf, "n");
        op1(t, VKL_OP_MUL, "w, n", "y");
    } else {
        op1(t, VKL_OP_SQRT, "var", "s");
        if (v == RMS_DIV_NO_W || v == RMS_SYM_NO_W) {
            snprintf(buf, sizeof(buf), "%s, s", x);
            op1(t, VKL_OP_DIV, buf, "y");
        } else if (v == RMS_DYNAMO) {
            op1(t, VKL_OP_RECIPROCAL, "s", "r");
            op1(t, VKL_OP_MUL, "r, x", "n");
            op1(t, VKL_OP_MUL, "n, w", "y");
        } else if (v == RMS_W_FIRST) {
            op1(t, VKL_OP_RECIPROCAL, "s", "r");
            op1(t, VKL_OP_MUL, "w, x", "wx");
            op1(t, VKL_OP_MUL, "wx, r", "y");
        } else {
            op1(t, VKL_OP_DIV, "one, s", "r");
            snprintf(buf, sizeof(buf), "%s, r", x);
            op1(t, VKL_OP_MUL, buf, "n");
            op1(t, VKL_OP_MUL, "w, n", "y");
        }
    }
    op1(t, VKL_OP_TANH, "y", "out"); /* a consumer after the norm */
    output(t, "out");
    if (v == RMS_SQRT_OUT) output(t, "s");
    if (v == RMS_INNER_OUT) output(t, "n");
}

static void test_rmsnorm(void) {
    const uint32_t bits = VKL_PASS_FUSE_RMSNORM;
    const expect yes = {"fuse_rmsnorm", bits, 1, VKL_OP_RMS_NORM, 1}, no = {"fuse_rmsnorm", bits, 0, VKL_OP_RMS_NORM, 0};
    const int fire[] = {RMS_LLAMA, RMS_DYNAMO, RMS_DIV_NO_W, RMS_POW_HALF, RMS_W_FIRST};
    const int miss[] = {RMS_AXIS1, RMS_CUBE, RMS_SQRT_OUT, RMS_EPS_INPUT, RMS_TWO, RMS_SYM_NO_W, RMS_CENTERED};
    for (size_t i = 0; i < sizeof(fire) / sizeof(fire[0]); i++) {
        check_case("rmsnorm", build_rms, fire[i], yes);
        check_case("rmsnorm: no Mul left", build_rms, fire[i], (expect){"fuse_rmsnorm", bits, 1, VKL_OP_MUL, 0});
    }
    for (size_t i = 0; i < sizeof(miss) / sizeof(miss[0]); i++) check_case("rmsnorm near miss", build_rms, miss[i], no);
    /* the weight Mul stays when the normalized value is read elsewhere or the weight broadcasts */
    check_case("rmsnorm inner output", build_rms, RMS_INNER_OUT, (expect){"fuse_rmsnorm", bits, 1, VKL_OP_MUL, 1});
    check_case("rmsnorm rank-2 weight", build_rms, RMS_W_RANK2, (expect){"fuse_rmsnorm", bits, 1, VKL_OP_MUL, 1});
    /* the centred form is LayerNorm's, once its pass runs */
    check_case("rmsnorm centred -> layernorm", build_rms, RMS_CENTERED,
               (expect){"fuse_layernorm", bits | VKL_PASS_FUSE_LAYERNORM, 1, VKL_OP_LAYER_NORMALIZATION, 1});
}

/* ---- LayerNorm */

enum {
    LN_FULL,       /* Pow(d, 2), Div(d, Sqrt), Mul(., gamma), Add(., beta) */
    LN_RECIP_BETA, /* Mul(d, d), Mul(d, Reciprocal), Add(beta, .): no gamma */
    LN_BARE,       /* no gamma, no beta */
    LN_GAMMA,      /* Mul(gamma, Div(d, Sqrt)) */
    LN_MEAN_AXIS1, /* near miss: mean over axis 1 */
    LN_REVERSED,   /* near miss: Sub(mean, x) */
    LN_D_OUT,      /* near miss: d is also a graph output */
    LN_VAR_OF_X,   /* near miss: variance of x, not of d */
    LN_NATIVE      /* a native LayerNormalization: not counted */
};

static void build_ln(tg *t, int v) {
    input(t, "x0", "batch, seq, 16");
    weight(t, "gamma", "16", NULL);
    weight(t, "beta", "16", NULL);
    scalar(t, "two", 2.0f);
    scalar(t, "eps", 1e-5f);
    op1(t, VKL_OP_EXP, "x0", "x");
    if (v == LN_NATIVE) {
        const vkl_attr eps = {.name = "epsilon", .kind = VKL_ATTR_FLOAT, .f = 1e-5f};
        node(t, VKL_OP_LAYER_NORMALIZATION, "x, gamma, beta", "y", &eps, 1);
    } else {
        mean(t, "x", v == LN_MEAN_AXIS1 ? 1 : -1, "mu");
        op1(t, VKL_OP_SUB, v == LN_REVERSED ? "mu, x" : "x, mu", "d");
        if (v == LN_RECIP_BETA) op1(t, VKL_OP_MUL, "d, d", "sq");
        else op1(t, VKL_OP_POW, v == LN_VAR_OF_X ? "x, two" : "d, two", "sq");
        mean(t, "sq", -1, "var");
        op1(t, VKL_OP_ADD, "var, eps", "ve");
        op1(t, VKL_OP_SQRT, "ve", "s");
        if (v == LN_RECIP_BETA) {
            op1(t, VKL_OP_RECIPROCAL, "s", "r");
            op1(t, VKL_OP_MUL, "d, r", "n");
            op1(t, VKL_OP_ADD, "beta, n", "y");
        } else if (v == LN_BARE) {
            op1(t, VKL_OP_DIV, "d, s", "y");
        } else if (v == LN_GAMMA) {
            op1(t, VKL_OP_DIV, "d, s", "n");
            op1(t, VKL_OP_MUL, "gamma, n", "y");
        } else {
            op1(t, VKL_OP_DIV, "d, s", "n");
            op1(t, VKL_OP_MUL, "n, gamma", "ng");
            op1(t, VKL_OP_ADD, "ng, beta", "y");
        }
    }
    op1(t, VKL_OP_TANH, "y", "out");
    output(t, "out");
    if (v == LN_D_OUT) output(t, "d");
}

static void test_layernorm(void) {
    const uint32_t bits = VKL_PASS_FUSE_LAYERNORM;
    const int fire[] = {LN_FULL, LN_RECIP_BETA, LN_BARE, LN_GAMMA};
    for (size_t i = 0; i < sizeof(fire) / sizeof(fire[0]); i++) {
        check_case("layernorm", build_ln, fire[i], (expect){"fuse_layernorm", bits, 1, VKL_OP_LAYER_NORMALIZATION, 1});
        check_case("layernorm: no ReduceMean left", build_ln, fire[i],
                   (expect){"fuse_layernorm", bits, 1, VKL_OP_REDUCE_MEAN, 0});
    }
    const int miss[] = {LN_MEAN_AXIS1, LN_REVERSED, LN_D_OUT, LN_VAR_OF_X};
    for (size_t i = 0; i < sizeof(miss) / sizeof(miss[0]); i++)
        check_case("layernorm near miss", build_ln, miss[i],
                   (expect){"fuse_layernorm", bits | VKL_PASS_FUSE_RMSNORM, 0, VKL_OP_LAYER_NORMALIZATION, 0});
    check_case("layernorm native", build_ln, LN_NATIVE,
               (expect){"fuse_layernorm", bits, 0, VKL_OP_LAYER_NORMALIZATION, 1});
}

/* ---- GELU */

enum {
    GELU_ERF_TS,      /* Div(x, 1.4142135), Erf, Add(., 1), Mul(x, .), Mul(., 0.5) */
    GELU_ERF_HALF,    /* Mul(x, 0.5) first; Mul(x, 0.70710678); Add(1, .) */
    GELU_ERF_MIXED,   /* Mul(Mul(a, 0.5), x) */
    GELU_TANH_GPT2,   /* NewGELU as GPT-2 exports it */
    GELU_TANH_CUBE,   /* x^3 as Mul(Mul(x, x), x), constants on the left */
    GELU_TANH_FAST,   /* x * 0.7978845608 * (1 + 0.044715 * x * x) */
    GELU_GEGLU,       /* gelu(x) * up: fused, the Mul with up stays */
    GELU_HALF_WRONG,  /* near miss: 0.6 */
    GELU_SQRT2_WRONG, /* near miss: Div(x, 1.5) */
    GELU_ERF_OUT,     /* near miss: Erf also a graph output */
    GELU_CUBIC_WRONG, /* near miss: 0.05 x^3 */
    GELU_QUICK        /* near miss: CLIP's quick_gelu x * sigmoid(1.702 x) */
};

static void build_gelu(tg *t, int v) {
    input(t, "x0", "batch, seq, 16");
    input(t, "up", "batch, seq, 16");
    scalar(t, "half", v == GELU_HALF_WRONG ? 0.6f : 0.5f);
    scalar(t, "one", 1.0f);
    scalar(t, "sqrt2", v == GELU_SQRT2_WRONG ? 1.5f : 1.4142135f);
    scalar(t, "isqrt2", 0.70710678f);
    scalar(t, "three", 3.0f);
    scalar(t, "cubic", v == GELU_CUBIC_WRONG ? 0.05f : 0.044715f);
    scalar(t, "c", 0.7978845608f);
    scalar(t, "quick", 1.702f);
    op1(t, VKL_OP_EXP, "x0", "e0");
    op1(t, VKL_OP_SUB, "e0, one", "x"); /* signed values, as in an MLP */
    switch (v) {
    case GELU_ERF_TS: case GELU_HALF_WRONG: case GELU_SQRT2_WRONG: case GELU_ERF_OUT: case GELU_GEGLU:
        op1(t, VKL_OP_DIV, "x, sqrt2", "z");
        op1(t, VKL_OP_ERF, "z", "e");
        op1(t, VKL_OP_ADD, "e, one", "a");
        op1(t, VKL_OP_MUL, "x, a", "xa");
        op1(t, VKL_OP_MUL, "xa, half", v == GELU_GEGLU ? "gl" : "y");
        if (v == GELU_GEGLU) op1(t, VKL_OP_MUL, "gl, up", "y");
        break;
    case GELU_ERF_HALF:
        op1(t, VKL_OP_MUL, "x, half", "h");
        op1(t, VKL_OP_MUL, "x, isqrt2", "z");
        op1(t, VKL_OP_ERF, "z", "e");
        op1(t, VKL_OP_ADD, "one, e", "a");
        op1(t, VKL_OP_MUL, "h, a", "y");
        break;
    case GELU_ERF_MIXED:
        op1(t, VKL_OP_MUL, "isqrt2, x", "z");
        op1(t, VKL_OP_ERF, "z", "e");
        op1(t, VKL_OP_ADD, "e, one", "a");
        op1(t, VKL_OP_MUL, "a, half", "ah");
        op1(t, VKL_OP_MUL, "ah, x", "y");
        break;
    case GELU_TANH_GPT2: case GELU_CUBIC_WRONG:
        op1(t, VKL_OP_MUL, "x, half", "h");
        op1(t, VKL_OP_POW, "x, three", "x3");
        op1(t, VKL_OP_MUL, "x3, cubic", "k");
        op1(t, VKL_OP_ADD, "x, k", "s");
        op1(t, VKL_OP_MUL, "s, c", "z");
        op1(t, VKL_OP_TANH, "z", "e");
        op1(t, VKL_OP_ADD, "e, one", "a");
        op1(t, VKL_OP_MUL, "h, a", "y");
        break;
    case GELU_TANH_CUBE:
        op1(t, VKL_OP_MUL, "x, x", "x2");
        op1(t, VKL_OP_MUL, "x2, x", "x3");
        op1(t, VKL_OP_MUL, "cubic, x3", "k");
        op1(t, VKL_OP_ADD, "k, x", "s");
        op1(t, VKL_OP_MUL, "c, s", "z");
        op1(t, VKL_OP_TANH, "z", "e");
        op1(t, VKL_OP_ADD, "one, e", "a");
        op1(t, VKL_OP_MUL, "half, x", "h");
        op1(t, VKL_OP_MUL, "a, h", "y");
        break;
    case GELU_TANH_FAST:
        op1(t, VKL_OP_MUL, "x, c", "xc");
        op1(t, VKL_OP_MUL, "x, x", "x2");
        op1(t, VKL_OP_MUL, "x2, cubic", "k");
        op1(t, VKL_OP_ADD, "one, k", "s");
        op1(t, VKL_OP_MUL, "xc, s", "z");
        op1(t, VKL_OP_TANH, "z", "e");
        op1(t, VKL_OP_ADD, "e, one", "a");
        op1(t, VKL_OP_MUL, "x, half", "h");
        op1(t, VKL_OP_MUL, "h, a", "y");
        break;
    default: /* GELU_QUICK */
        op1(t, VKL_OP_MUL, "x, quick", "z");
        op1(t, VKL_OP_SIGMOID, "z", "e");
        op1(t, VKL_OP_MUL, "x, e", "y");
        break;
    }
    op1(t, VKL_OP_TANH, "y", "out");
    output(t, "out");
    if (v == GELU_ERF_OUT) output(t, "e");
}

static void test_gelu(void) {
    const uint32_t bits = VKL_PASS_FUSE_GELU | VKL_PASS_FUSE_SILU_MUL;
    const int fire[] = {GELU_ERF_TS, GELU_ERF_HALF, GELU_ERF_MIXED, GELU_TANH_GPT2, GELU_TANH_CUBE, GELU_TANH_FAST};
    for (size_t i = 0; i < sizeof(fire) / sizeof(fire[0]); i++) {
        check_case("gelu", build_gelu, fire[i], (expect){"fuse_gelu", bits, 1, VKL_OP_GELU, 1});
        check_case("gelu: no Mul left", build_gelu, fire[i], (expect){"fuse_gelu", bits, 1, VKL_OP_MUL, 0});
    }
    check_case("gelu in GeGLU", build_gelu, GELU_GEGLU, (expect){"fuse_gelu", bits, 1, VKL_OP_MUL, 1});
    const int miss[] = {GELU_HALF_WRONG, GELU_SQRT2_WRONG, GELU_ERF_OUT, GELU_CUBIC_WRONG, GELU_QUICK};
    for (size_t i = 0; i < sizeof(miss) / sizeof(miss[0]); i++)
        check_case("gelu near miss", build_gelu, miss[i], (expect){"fuse_gelu", bits, 0, VKL_OP_GELU, 0});
    check_case("quick_gelu is no SiLU", build_gelu, GELU_QUICK, (expect){"fuse_silu_mul", bits, 0, VKL_OP_SIGMOID, 1});
}

/* ---- SiLU * up */

enum {
    SILU_LLAMA,      /* Mul(Mul(g, Sigmoid(g)), up) */
    SILU_SWAPPED,    /* Mul(up, Mul(Sigmoid(g), g)) */
    SILU_BROADCAST,  /* up is a [16] weight */
    SILU_BARE,       /* near miss: no Mul with up */
    SILU_OTHER_SIG,  /* near miss: Mul(g, Sigmoid(h)) */
    SILU_SIG_OUT,    /* near miss: the Sigmoid is also a graph output */
    SILU_SILU_OUT    /* near miss: the SiLU is also a graph output */
};

static void build_silu(tg *t, int v) {
    input(t, "g", "batch, seq, 16");
    input(t, "h", "batch, seq, 16");
    input(t, "up", "batch, seq, 16");
    weight(t, "wup", "16", NULL);
    op1(t, VKL_OP_SIGMOID, v == SILU_OTHER_SIG ? "h" : "g", "sg");
    op1(t, VKL_OP_MUL, v == SILU_SWAPPED ? "sg, g" : "g, sg", "silu");
    if (v == SILU_BARE) op1(t, VKL_OP_TANH, "silu", "y");
    else if (v == SILU_SWAPPED) op1(t, VKL_OP_MUL, "up, silu", "y");
    else op1(t, VKL_OP_MUL, v == SILU_BROADCAST ? "silu, wup" : "silu, up", "y");
    output(t, "y");
    if (v == SILU_SIG_OUT) output(t, "sg");
    if (v == SILU_SILU_OUT) output(t, "silu");
}

static void test_silu_mul(void) {
    const uint32_t bits = VKL_PASS_FUSE_SILU_MUL | VKL_PASS_FUSE_GELU;
    const int fire[] = {SILU_LLAMA, SILU_SWAPPED, SILU_BROADCAST};
    for (size_t i = 0; i < sizeof(fire) / sizeof(fire[0]); i++) {
        check_case("silu_mul", build_silu, fire[i], (expect){"fuse_silu_mul", bits, 1, VKL_OP_SILU_MUL, 1});
        check_case("silu_mul: no Sigmoid left", build_silu, fire[i],
                   (expect){"fuse_silu_mul", bits, 1, VKL_OP_SIGMOID, 0});
    }
    const int miss[] = {SILU_BARE, SILU_OTHER_SIG, SILU_SIG_OUT, SILU_SILU_OUT};
    for (size_t i = 0; i < sizeof(miss) / sizeof(miss[0]); i++)
        check_case("silu_mul near miss", build_silu, miss[i], (expect){"fuse_silu_mul", bits, 0, VKL_OP_SILU_MUL, 0});
}

/* ---- constant folding */

enum {
    FOLD_CHAIN,     /* Transpose(W) -> Mul(., 3): both fold, the Add with x stays */
    FOLD_VALUE,     /* Reshape(W, a constant shape value with no producer) */
    FOLD_ATTR,      /* ConstantOfShape(W) with a tensor attribute */
    FOLD_SHAPE,     /* no: Shape is a shape source */
    FOLD_TOO_BIG,   /* no: Expand to 17 MiB */
    FOLD_OUTPUT,    /* no: a graph output stays produced by a node */
    FOLD_ACTIVATION /* no: an input is computed at run time */
};

static void build_fold(tg *t, int v) {
    const vkl_attr perm = {.name = "perm", .kind = VKL_ATTR_INTS, .ints = (const int64_t[]){1, 0}, .count = 2};
    const int64_t shape34[] = {3, 4}, big[] = {1100, 4096};
    switch (v) {
    case FOLD_CHAIN:
        input(t, "x", "8, 4");
        weight(t, "w", "4, 8", NULL);
        scalar(t, "three", 3.0f);
        node(t, VKL_OP_TRANSPOSE, "w", "wt", &perm, 1);
        op1(t, VKL_OP_MUL, "wt, three", "w3");
        op1(t, VKL_OP_ADD, "w3, x", "y");
        break;
    case FOLD_VALUE: {
        vkl_expr val[2];
        uint32_t id;
        vkl_shape s = fu_shape(t->g, "2");
        input(t, "x", "3, 4");
        weight(t, "w", "2, 6", NULL);
        CHECK(vkl_expr_const(t->g->syms, 3, &val[0]) == VKL_OK && vkl_expr_const(t->g->syms, 4, &val[1]) == VKL_OK);
        CHECK(vkl_graph_add_tensor(t->g, "shape", VKL_DTYPE_I64, VKL_TENSOR_ACTIVATION, &s, &id) == VKL_OK);
        CHECK(vkl_graph_set_value(t->g, id, val, 2) == VKL_OK);
        op1(t, VKL_OP_RESHAPE, "w, shape", "w34");
        op1(t, VKL_OP_ADD, "x, w34", "y");
        break;
    }
    case FOLD_ATTR: {
        uint32_t fill;
        input(t, "x", "3, 4");
        fu_i64(t->g, "shape", shape34, 2);
        weight(t, "fill", "1", (const float[]){2.5f});
        CHECK(vkl_graph_find_tensor(t->g, "fill", &fill) == VKL_OK);
        const vkl_attr value = {.name = "value", .kind = VKL_ATTR_TENSOR, .i = fill};
        node(t, VKL_OP_CONSTANT_OF_SHAPE, "shape", "c", &value, 1);
        op1(t, VKL_OP_MUL, "x, c", "y");
        break;
    }
    case FOLD_SHAPE:
        input(t, "x", "2, 6");
        weight(t, "w", "3, 4", NULL);
        op1(t, VKL_OP_SHAPE, "w", "ws");
        op1(t, VKL_OP_RESHAPE, "x, ws", "y");
        break;
    case FOLD_TOO_BIG: {
        const vkl_attr keep = {.name = "keepdims", .kind = VKL_ATTR_INT, .i = 0};
        input(t, "x", "");
        scalar(t, "w", 0.25f);
        fu_i64(t->g, "shape", big, 2);
        op1(t, VKL_OP_EXPAND, "w, shape", "e");
        node(t, VKL_OP_REDUCE_SUM, "e", "s", &keep, 1);
        op1(t, VKL_OP_ADD, "s, x", "y");
        break;
    }
    case FOLD_OUTPUT:
        input(t, "x", "4, 8");
        weight(t, "w", "4, 8", NULL);
        node(t, VKL_OP_TRANSPOSE, "w", "wt", &perm, 1);
        op1(t, VKL_OP_ADD, "x, w", "y");
        output(t, "wt");
        break;
    default: /* FOLD_ACTIVATION */
        input(t, "x", "4, 8");
        weight(t, "w", "4, 8", NULL);
        op1(t, VKL_OP_ADD, "x, w", "y");
        break;
    }
    output(t, "y");
}

static void test_fold(void) {
    const uint32_t bits = VKL_PASS_FOLD;
    check_case("fold chain", build_fold, FOLD_CHAIN, (expect){"fold", bits, 2, VKL_OP_ADD, 1});
    check_case("fold chain: nothing else", build_fold, FOLD_CHAIN, (expect){"fold", bits, 2, VKL_OP_TRANSPOSE, 0});
    check_case("fold value input", build_fold, FOLD_VALUE, (expect){"fold", bits, 1, VKL_OP_RESHAPE, 0});
    check_case("fold tensor attribute", build_fold, FOLD_ATTR,
               (expect){"fold", bits, 1, VKL_OP_CONSTANT_OF_SHAPE, 0});
    check_case("fold: Shape stays", build_fold, FOLD_SHAPE, (expect){"fold", bits, 0, VKL_OP_SHAPE, 1});
    check_case("fold: too big", build_fold, FOLD_TOO_BIG, (expect){"fold", bits, 0, VKL_OP_EXPAND, 1});
    check_case("fold: graph output", build_fold, FOLD_OUTPUT, (expect){"fold", bits, 0, VKL_OP_TRANSPOSE, 1});
    check_case("fold: activation input", build_fold, FOLD_ACTIVATION, (expect){"fold", bits, 0, VKL_OP_ADD, 1});

    /* The folded values themselves: 3 * W^T. */
    vkl_context *ctx = new_ctx();
    tg t = {ctx, NULL, 7};
    vkl_pipeline_report r;
    uint32_t w, add = VKL_NONE;
    CHECK(vkl_graph_create(ctx, &t.g) == VKL_OK);
    build_fold(&t, FOLD_CHAIN);
    CHECK(vkl_graph_infer_shapes(t.g) == VKL_OK);
    CHECK(vkl_graph_find_tensor(t.g, "w", &w) == VKL_OK);
    float orig[32];
    memcpy(orig, t.g->tensors[w].data, sizeof(orig));
    CHECK(vkl_pipeline_run(t.g, bits, &r) == VKL_OK);
    for (uint32_t i = 0; i < t.g->n_nodes; i++)
        if (t.g->nodes[i].op == VKL_OP_ADD) add = i;
    CHECK(add != VKL_NONE);
    if (add != VKL_NONE) {
        const vkl_tensor *f = &t.g->tensors[t.g->nodes[add].inputs[0]];
        CHECK(f->kind == VKL_TENSOR_WEIGHT && f->dtype == VKL_DTYPE_F32 && f->nbytes == sizeof(orig));
        for (int i = 0; f->nbytes == sizeof(orig) && i < 8; i++)
            for (int j = 0; j < 4; j++) CHECK(((const float *)f->data)[i * 4 + j] == 3.0f * orig[j * 8 + i]);
    }
    vkl_graph_destroy(t.g);
    vkl_context_destroy(ctx);
}

/* ---- fixtures: fused graph against ONNX Runtime's step0 */

typedef struct fixture_expect {
    const char *name;
    uint32_t rmsnorm, layernorm, gelu, silu_mul; /* fusions fired */
    uint32_t native_ln;                          /* LayerNormalization nodes after */
} fixture_expect;

/* Import, optimize with `bits`, run step0; every output within the fp32
 * bound of ORT's, argmax of each logits row equal. */
static void run_fixture(const char *models, const fixture_expect *e, uint32_t bits, bool fused) {
    vkl_context *ctx = new_ctx();
    char dir[512], label[256];
    vkl_pipeline_report r;
    snprintf(dir, sizeof(dir), "%s/%s", models, e->name);
    vkl_onnx_model *m = fu_import(ctx, dir, bits, &r);
    vkl_graph *g = m ? vkl_onnx_graph(m) : NULL;
    if (g && fused) {
        uint32_t got[4] = {fu_fired(&r, "fuse_rmsnorm"), fu_fired(&r, "fuse_layernorm"), fu_fired(&r, "fuse_gelu"),
                           fu_fired(&r, "fuse_silu_mul")};
        uint32_t want[4] = {e->rmsnorm, e->layernorm, e->gelu, e->silu_mul};
        printf("  %s: fold %u, rmsnorm %u, layernorm %u (LayerNormalization nodes %u), gelu %u, silu_mul %u; "
               "nodes %u -> %u\n",
               e->name, fu_fired(&r, "fold"), got[0], got[1], fu_count_ops(g, VKL_OP_LAYER_NORMALIZATION), got[2],
               got[3], r.nodes_before, r.nodes_after);
        CHECK(!memcmp(got, want, sizeof(got)));
        CHECK(fu_count_ops(g, VKL_OP_RMS_NORM) == e->rmsnorm && fu_count_ops(g, VKL_OP_SILU_MUL) == e->silu_mul &&
              fu_count_ops(g, VKL_OP_GELU) == e->gelu);
        CHECK(fu_count_ops(g, VKL_OP_LAYER_NORMALIZATION) == e->native_ln + e->layernorm);
    }
    vkl_host_tensor in[16] = {{0}}, out[16] = {{0}};
    uint32_t n_in = 0;
    bool ok = g && g->n_inputs <= 16 && g->n_outputs <= 16;
    for (; ok && n_in < g->n_inputs; n_in++) ok = fu_load_ref(ctx, dir, 0, "in", g->tensors[g->inputs[n_in]].name, &in[n_in]);
    ok = ok && fu_run(g, in, out);
    CHECK(ok);
    for (uint32_t k = 0; ok && k < g->n_outputs; k++) {
        const char *name = g->tensors[g->outputs[k]].name;
        vkl_host_tensor ref = {0};
        snprintf(label, sizeof(label), "%s %s step0 %s", e->name, fused ? "fused" : "unfused", name);
        bool same = fu_load_ref(ctx, dir, 0, "out", name, &ref) && fu_close(fused ? label : NULL, &out[k], &ref, 1e-4);
        if (same && !strcmp(name, "logits")) same = fu_same_argmax(&out[k], &ref);
        if (!same) fprintf(stderr, "%s: differs from ONNX Runtime\n", label);
        CHECK(same);
        fu_free_all(ctx, &ref, 1);
    }
    fu_free_all(ctx, out, g ? g->n_outputs : 0);
    fu_free_all(ctx, in, n_in);
    if (m) vkl_onnx_close(m);
    vkl_context_destroy(ctx);
}

static void test_fixtures(const char *dir) {
    static const fixture_expect fx[] = {
        {"llama", 5, 0, 0, 2, 0},        {"qwen2", 5, 0, 0, 2, 0},       {"llama-dynamo", 5, 0, 0, 2, 0},
        {"gpt2", 0, 0, 2, 0, 5},         {"clip-vision", 0, 0, 0, 0, 6},
    };
    const uint32_t base = VKL_PASS_IDENTITY | VKL_PASS_SHAPE_OPS | VKL_PASS_CSE;
    const uint32_t mine = VKL_PASS_FOLD | VKL_PASS_FUSE_RMSNORM | VKL_PASS_FUSE_LAYERNORM | VKL_PASS_FUSE_GELU |
                          VKL_PASS_FUSE_SILU_MUL;
    for (size_t i = 0; i < sizeof(fx) / sizeof(fx[0]); i++) {
        run_fixture(dir, &fx[i], base, false);
        run_fixture(dir, &fx[i], base | mine, true);
    }
}

int main(int argc, char **argv) {
    const char *models = argc > 1 ? argv[1] : VKL_TEST_DATA_DIR "/models";
    test_rmsnorm();
    test_layernorm();
    test_gelu();
    test_silu_mul();
    test_fold();
    test_fixtures(models);
    return check_finish("test_fuse_norms");
}
