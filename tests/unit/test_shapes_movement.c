/* Symbolic shape rules and value propagation of the data-movement,
 * indexing and generator ops: small graphs with symbolic dims, checked as
 * printed shapes and values (Transformer-Lite §2.1 chains included). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "context.h"
#include "graph.h"
#include "ops.h"
#include "ops/movement_util.h"
#include "run_once.h"

#define CHECK_FIXTURE /* the checks count in each test's fx: fails, checks */
#include "check.h"

typedef struct fx {
    vkl_context *ctx;
    vkl_graph *g;
    int fails, checks;
} fx;

static void begin(fx *f) {
    if (vkl_graph_create(f->ctx, &f->g)) {
        fprintf(stderr, "graph_create: %s\n", vkl_context_error(f->ctx));
        f->fails++;
    }
}

static void end(fx *f) {
    vkl_graph_destroy(f->g);
    f->g = NULL;
}

static vkl_shape shape_of(fx *f, const char *dims) { return check_shape(&f->fails, f->g, dims, ','); }

static uint32_t input(fx *f, const char *name, vkl_dtype dt, const char *dims) {
    vkl_shape s = shape_of(f, dims);
    uint32_t id = 0;
    if (vkl_graph_add_tensor(f->g, name, dt, VKL_TENSOR_INPUT, &s, &id) || vkl_graph_add_input(f->g, id)) f->fails++;
    return id;
}

/* An i64 weight: rank 0 when scalar, else [n]. */
static uint32_t weight_i64(fx *f, const char *name, const int64_t *v, uint32_t n, bool scalar) {
    int64_t dim = n;
    vkl_shape s;
    uint32_t id = 0;
    if (vkl_shape_from_ints(f->g, &dim, scalar ? 0 : 1, &s) || vkl_graph_add_tensor(f->g, name, VKL_DTYPE_I64, VKL_TENSOR_WEIGHT, &s, &id) ||
        vkl_graph_set_data(f->g, id, v, n * sizeof(int64_t), true))
        f->fails++;
    return id;
}

static uint32_t tensor_id(fx *f, const char *name) {
    uint32_t id = VKL_NONE;
    if (vkl_graph_find_tensor(f->g, name, &id) == VKL_OK) return id;
    if (vkl_graph_add_tensor(f->g, name, VKL_DTYPE_INVALID, VKL_TENSOR_ACTIVATION, NULL, &id)) f->fails++;
    return id;
}

/* A node reading/writing comma-separated tensor names ("-": absent);
 * outputs are created as activations. */
static void node(fx *f, vkl_op op, const char *ins, const char *outs, const vkl_attr *attrs, uint32_t n_attrs) {
    char in_names[16][128], out_names[16][128];
    uint32_t in_ids[16], out_ids[16], ni = check_split(ins, ',', in_names, sizeof(in_names[0]), 16),
                                      no = check_split(outs, ',', out_names, sizeof(out_names[0]), 16);
    for (uint32_t k = 0; k < ni; k++) in_ids[k] = strcmp(in_names[k], "-") ? tensor_id(f, in_names[k]) : VKL_NONE;
    for (uint32_t k = 0; k < no; k++) out_ids[k] = strcmp(out_names[k], "-") ? tensor_id(f, out_names[k]) : VKL_NONE;
    if (vkl_graph_add_node(f->g, op, "n", in_ids, ni, out_ids, no, attrs, n_attrs, NULL)) {
        fprintf(stderr, "add_node: %s\n", vkl_context_error(f->ctx));
        f->fails++;
    }
}

static vkl_attr attr_int(const char *name, int64_t v) {
    return (vkl_attr){.name = name, .kind = VKL_ATTR_INT, .i = v};
}

static vkl_attr attr_ints(const char *name, const int64_t *v, uint32_t n) {
    return (vkl_attr){.name = name, .kind = VKL_ATTR_INTS, .ints = v, .count = n};
}

/* Inference first: validation wants every tensor's dtype set. */
static vkl_status infer(fx *f) {
    vkl_status st = vkl_graph_infer_shapes(f->g);
    return st ? st : vkl_graph_validate(f->g);
}

#define INFER_OK(f) CHECK_OK(f, infer(f))

static void expect_shape_at(fx *f, int line, const char *name, const char *want) {
    f->checks++;
    check_shape_is(&f->fails, __FILE__, line, f->g, name, VKL_DTYPE_INVALID, want);
}

/* Value as "[a, b]", or "none" when unknown. */
static void expect_value_at(fx *f, int line, const char *name, const char *want) {
    f->checks++;
    check_value_is(&f->fails, __FILE__, line, f->g, name, want);
}

/* `line`: the source line, or the index of a table entry. */
static void expect_error_at(fx *f, int line, vkl_status want, const char *needle) {
    vkl_status st = infer(f);
    f->checks++;
    if (check_status_is(__FILE__, line, "inference", f->ctx, st, want, needle))
        printf("  ok (expected error): %s\n", vkl_context_error(f->ctx));
    else
        f->fails++;
}

#define EXPECT_SHAPE(f, name, want) expect_shape_at(f, __LINE__, name, want)
#define EXPECT_VALUE(f, name, want) expect_value_at(f, __LINE__, name, want)

/* Evaluate an expression with the given symbol bindings ("seq=7,..."). */
static int64_t eval_dim(fx *f, const char *name, uint32_t d, const char *sym, int64_t v) {
    int64_t vals[16];
    size_t idx, n = vkl_symtab_symbol_count(f->g->syms);
    for (size_t i = 0; i < 16; i++) vals[i] = VKL_SYM_UNBOUND;
    if (vkl_symtab_find_symbol(f->g->syms, sym, &idx) == VKL_OK && idx < 16) vals[idx] = v;
    int64_t out = -999;
    if (vkl_expr_eval(f->g->ctx, f->g->syms, f->g->tensors[tensor_id(f, name)].shape.dims[d], vals, n < 16 ? n : 16, &out))
        return -999;
    return out;
}

static const int64_t I0[] = {0}, I1[] = {1}, I2[] = {2}, IM1[] = {-1};

/* ---- the paper's examples ------------------------------------------------ */

static void test_paper_examples(fx *f) {
    begin(f);
    static const int64_t target[] = {1, -1, 32, 128};
    input(f, "x", VKL_DTYPE_F32, "1, N, 4096");
    weight_i64(f, "shape", target, 4, false);
    node(f, VKL_OP_RESHAPE, "x, shape", "y", NULL, 0);
    input(f, "a", VKL_DTYPE_F32, "sumN - N, 1, 2, 128");
    input(f, "b", VKL_DTYPE_F32, "N, 1, 2, 128");
    vkl_attr ax0 = attr_int("axis", 0);
    node(f, VKL_OP_CONCAT, "a, b", "c", &ax0, 1);
    INFER_OK(f);
    EXPECT_SHAPE(f, "y", "[1, N, 32, 128]");
    EXPECT_SHAPE(f, "c", "[sumN, 1, 2, 128]");
    end(f);
}

/* x [batch, seq, 128] -> Shape -> Gather(0/1) -> Unsqueeze -> Concat with
 * [4, 32] -> Reshape: the legacy exporter's way to write a view. */
static void test_legacy_chain(fx *f) {
    begin(f);
    static const int64_t tail[] = {4, 32};
    input(f, "x", VKL_DTYPE_F32, "batch, seq, 128");
    weight_i64(f, "i0", I0, 1, true);
    weight_i64(f, "i1", I1, 1, true);
    weight_i64(f, "ax0", I0, 1, false);
    weight_i64(f, "tail", tail, 2, false);
    vkl_attr ax = attr_int("axis", 0);
    node(f, VKL_OP_SHAPE, "x", "s", NULL, 0);
    node(f, VKL_OP_GATHER, "s, i0", "b", &ax, 1);
    node(f, VKL_OP_UNSQUEEZE, "b, ax0", "b1", NULL, 0);
    node(f, VKL_OP_SHAPE, "x", "s_again", NULL, 0);
    node(f, VKL_OP_GATHER, "s_again, i1", "q", &ax, 1);
    node(f, VKL_OP_UNSQUEEZE, "q, ax0", "q1", NULL, 0);
    node(f, VKL_OP_CONCAT, "b1, q1, tail", "target", &ax, 1);
    node(f, VKL_OP_RESHAPE, "x, target", "y", NULL, 0);
    INFER_OK(f);
    EXPECT_SHAPE(f, "s", "[3]");
    EXPECT_VALUE(f, "s", "[batch, seq, 128]");
    EXPECT_SHAPE(f, "b", "[]");
    EXPECT_VALUE(f, "b", "[batch]");
    EXPECT_SHAPE(f, "b1", "[1]");
    EXPECT_VALUE(f, "b1", "[batch]");
    EXPECT_VALUE(f, "q1", "[seq]");
    EXPECT_SHAPE(f, "target", "[4]");
    EXPECT_VALUE(f, "target", "[batch, seq, 4, 32]");
    EXPECT_SHAPE(f, "y", "[batch, seq, 4, 32]");
    /* and it runs on the ref backend: batch 2, seq 3, the bytes unchanged */
    static float x[2 * 3 * 128];
    for (size_t i = 0; i < VKL_ARRAY_LEN(x); i++) x[i] = (float)i;
    vkl_host_tensor in = {VKL_DTYPE_F32, 3, {2, 3, 128}, x, sizeof(x)}, out = {0};
    if (vkl_graph_add_output(f->g, tensor_id(f, "y"))) f->fails++;
    vkl_status st = vkl_run_once(f->ctx, vkl_backend_find("ref"), f->g, &in, &out);
    f->checks++;
    if (st || out.rank != 4 || out.dims[0] != 2 || out.dims[1] != 3 || out.dims[2] != 4 || out.dims[3] != 32 ||
        out.nbytes != sizeof(x) || memcmp(out.data, x, sizeof(x))) {
        fprintf(stderr, "%s:%d: legacy chain run: %s %s\n", __FILE__, __LINE__, vkl_status_name(st),
                vkl_context_error(f->ctx));
        f->fails++;
    }
    vkl_free(f->ctx, out.data);
    end(f);
}

/* The same target through opset-15 Shape(start, end), Slice and Size. */
static void test_shape_slice_chain(fx *f) {
    begin(f);
    static const int64_t m1[] = {-1}, big[] = {INT64_MAX}, heads[] = {32, -1};
    input(f, "x", VKL_DTYPE_F32, "batch, seq, 4096");
    weight_i64(f, "zero", I0, 1, false);
    weight_i64(f, "two", I2, 1, false);
    weight_i64(f, "m1", m1, 1, false);
    weight_i64(f, "big", big, 1, false);
    weight_i64(f, "heads", heads, 2, false);
    vkl_attr se[] = {attr_int("start", 1), attr_int("end", -1)}, ax = attr_int("axis", 0);
    node(f, VKL_OP_SHAPE, "x", "s", NULL, 0);
    node(f, VKL_OP_SHAPE, "x", "mid", se, 2);
    node(f, VKL_OP_SLICE, "s, zero, two", "bs", NULL, 0);
    node(f, VKL_OP_SLICE, "s, m1, big", "last", NULL, 0);
    node(f, VKL_OP_CONCAT, "bs, heads", "target", &ax, 1);
    node(f, VKL_OP_RESHAPE, "x, target", "y", NULL, 0);
    node(f, VKL_OP_SIZE, "x", "n", NULL, 0);
    INFER_OK(f);
    EXPECT_VALUE(f, "mid", "[seq]");
    EXPECT_VALUE(f, "bs", "[batch, seq]");
    EXPECT_VALUE(f, "last", "[4096]");
    EXPECT_VALUE(f, "target", "[batch, seq, 32, -1]");
    EXPECT_SHAPE(f, "y", "[batch, seq, 32, 128]");
    EXPECT_SHAPE(f, "n", "[]");
    EXPECT_VALUE(f, "n", "[4096*batch*seq]");
    end(f);
}

/* A constant [256, 32] cos cache sliced [0 : seq]: seq <= 256 is not
 * provable, so the rows are min(seq, 256). */
static void test_cos_cache_slice(fx *f) {
    begin(f);
    static float cache[256 * 32];
    int64_t dims[] = {256, 32};
    vkl_shape cs;
    uint32_t id = 0;
    if (vkl_shape_from_ints(f->g, dims, 2, &cs) || vkl_graph_add_tensor(f->g, "cache", VKL_DTYPE_F32, VKL_TENSOR_WEIGHT, &cs, &id) ||
        vkl_graph_set_data(f->g, id, cache, sizeof(cache), false))
        f->fails++;
    input(f, "x", VKL_DTYPE_F32, "1, seq, 64");
    weight_i64(f, "i1", I1, 1, true);
    weight_i64(f, "zero", I0, 1, false);
    vkl_attr ax = attr_int("axis", 0);
    node(f, VKL_OP_SHAPE, "x", "s", NULL, 0);
    node(f, VKL_OP_GATHER, "s, i1", "len", &ax, 1);
    node(f, VKL_OP_UNSQUEEZE, "len, zero", "end", NULL, 0);
    node(f, VKL_OP_SLICE, "cache, zero, end, zero", "cos", NULL, 0);
    INFER_OK(f);
    EXPECT_SHAPE(f, "cos", "[min(seq, 256), 32]");
    f->checks += 2;
    if (eval_dim(f, "cos", 0, "seq", 7) != 7 || eval_dim(f, "cos", 0, "seq", 300) != 256) {
        fprintf(stderr, "%s:%d: min(seq, 256) evaluates wrongly\n", __FILE__, __LINE__);
        f->fails++;
    }
    end(f);
}

/* Slices of symbolic axes: [-1 :], [:: -1], [1 : -1], [past :] and steps. */
static void test_symbolic_slices(fx *f) {
    begin(f);
    static const int64_t big[] = {INT64_MAX}, small[] = {INT64_MIN}, m1[] = {-1}, two[] = {2}, m2[] = {-2};
    input(f, "x", VKL_DTYPE_F32, "batch, seq, 64");
    input(f, "k", VKL_DTYPE_F32, "past + seq, 8");
    weight_i64(f, "big", big, 1, false);
    weight_i64(f, "small", small, 1, false);
    weight_i64(f, "m1", m1, 1, false);
    weight_i64(f, "m2", m2, 1, false);
    weight_i64(f, "one", I1, 1, false);
    weight_i64(f, "two", two, 1, false);
    weight_i64(f, "zero", I0, 1, false);
    node(f, VKL_OP_SLICE, "x, m1, big, one", "last", NULL, 0);          /* x[:, -1:] */
    node(f, VKL_OP_SLICE, "x, m1, small, one, m1", "rev", NULL, 0);     /* x[:, ::-1] */
    node(f, VKL_OP_SLICE, "x, one, m1, one", "inner", NULL, 0);         /* x[:, 1:-1] */
    node(f, VKL_OP_SLICE, "x, zero, big, one, two", "even", NULL, 0);   /* x[:, ::2] */
    node(f, VKL_OP_SLICE, "x, m2, m1, one", "second_last", NULL, 0);    /* x[:, -2:-1] */
    node(f, VKL_OP_SLICE, "x, two, big, one", "from2", NULL, 0);        /* x[:, 2:] */
    /* k[past:] where past comes from another tensor's shape */
    input(f, "p", VKL_DTYPE_F32, "1, past");
    weight_i64(f, "i1", I1, 1, false);
    vkl_attr ax = attr_int("axis", 0);
    node(f, VKL_OP_SHAPE, "p", "ps", NULL, 0);
    node(f, VKL_OP_GATHER, "ps, i1", "pastv", &ax, 1);
    node(f, VKL_OP_SLICE, "k, pastv, big, zero", "newk", NULL, 0);
    /* rows [past : past + seq] of a 256-row table */
    input(f, "table", VKL_DTYPE_F32, "256, 8");
    weight_i64(f, "i0", I0, 1, false);
    node(f, VKL_OP_SHAPE, "k", "ks", NULL, 0);
    node(f, VKL_OP_GATHER, "ks, i0", "totalv", &ax, 1);
    node(f, VKL_OP_SLICE, "table, pastv, totalv, zero", "window", NULL, 0);
    INFER_OK(f);
    EXPECT_VALUE(f, "totalv", "[past + seq]");
    EXPECT_SHAPE(f, "window", "[min(seq, max(0, -past + 256)), 8]");
    EXPECT_SHAPE(f, "last", "[batch, min(seq, 1), 64]");
    EXPECT_SHAPE(f, "rev", "[batch, seq, 64]");
    EXPECT_SHAPE(f, "inner", "[batch, max(0, seq - 2), 64]");
    EXPECT_SHAPE(f, "even", "[batch, (seq + 1) // 2, 64]");
    EXPECT_SHAPE(f, "second_last", "[batch, min(max(0, seq - 1), 1), 64]");
    EXPECT_SHAPE(f, "from2", "[batch, max(0, seq - 2), 64]");
    EXPECT_SHAPE(f, "newk", "[seq, 8]");
    end(f);
}

/* Range(0, seq, 1) from a propagated seq; constant ranges carry values. */
static void test_range(fx *f) {
    begin(f);
    static const int64_t five[] = {5}, eleven[] = {11}, three[] = {3};
    input(f, "x", VKL_DTYPE_F32, "1, seq");
    input(f, "kv", VKL_DTYPE_F32, "1, past + seq");
    input(f, "pk", VKL_DTYPE_F32, "1, past");
    weight_i64(f, "s0", I0, 1, true);
    weight_i64(f, "d1", I1, 1, true);
    weight_i64(f, "i1", I1, 1, true);
    weight_i64(f, "l5", five, 1, true);
    weight_i64(f, "s2", I2, 1, true);
    weight_i64(f, "l11", eleven, 1, true);
    weight_i64(f, "d3", three, 1, true);
    vkl_attr ax = attr_int("axis", 0);
    node(f, VKL_OP_SHAPE, "x", "s", NULL, 0);
    node(f, VKL_OP_GATHER, "s, i1", "seqv", &ax, 1);
    node(f, VKL_OP_RANGE, "s0, seqv, d1", "pos", NULL, 0);
    node(f, VKL_OP_SHAPE, "kv", "ks", NULL, 0);
    node(f, VKL_OP_GATHER, "ks, i1", "total", &ax, 1);
    node(f, VKL_OP_SHAPE, "pk", "pks", NULL, 0);
    node(f, VKL_OP_GATHER, "pks, i1", "pastv", &ax, 1);
    node(f, VKL_OP_RANGE, "pastv, total, d1", "newpos", NULL, 0);
    node(f, VKL_OP_RANGE, "s0, seqv, d3", "strided", NULL, 0);
    node(f, VKL_OP_RANGE, "s0, l5, d1", "r5", NULL, 0);
    node(f, VKL_OP_RANGE, "s2, l11, d3", "r3", NULL, 0);
    node(f, VKL_OP_RANGE, "pastv, s0, d1", "empty_or_neg", NULL, 0);
    INFER_OK(f);
    EXPECT_VALUE(f, "seqv", "[seq]");
    EXPECT_SHAPE(f, "pos", "[seq]");
    EXPECT_VALUE(f, "pos", "none");
    EXPECT_SHAPE(f, "newpos", "[seq]");
    EXPECT_SHAPE(f, "strided", "[(seq + 2) // 3]");
    EXPECT_SHAPE(f, "r5", "[5]");
    EXPECT_VALUE(f, "r5", "[0, 1, 2, 3, 4]");
    EXPECT_SHAPE(f, "r3", "[3]");
    EXPECT_VALUE(f, "r3", "[2, 5, 8]");
    EXPECT_SHAPE(f, "empty_or_neg", "[0]"); /* max(-past, 0) is provably 0 */
    end(f);
}

/* Expand and ConstantOfShape with shapes built from Shape values. */
static void test_expand_from_shape(fx *f) {
    begin(f);
    static const int64_t two[] = {2};
    input(f, "x", VKL_DTYPE_F32, "batch, seq, 128");
    input(f, "m", VKL_DTYPE_F32, "1, seq");
    input(f, "c", VKL_DTYPE_F32, "1");
    weight_i64(f, "zero", I0, 1, false);
    weight_i64(f, "two", two, 1, false);
    node(f, VKL_OP_SHAPE, "x", "s", NULL, 0);
    node(f, VKL_OP_SLICE, "s, zero, two", "bs", NULL, 0);
    node(f, VKL_OP_EXPAND, "m, bs", "mb", NULL, 0);
    node(f, VKL_OP_EXPAND, "c, s", "cb", NULL, 0);
    node(f, VKL_OP_CONSTANT_OF_SHAPE, "bs", "zeros", NULL, 0);
    node(f, VKL_OP_EXPAND, "bs, two", "bs2", NULL, 0); /* a value through Expand */
    INFER_OK(f);
    EXPECT_SHAPE(f, "mb", "[batch, seq]");
    EXPECT_SHAPE(f, "cb", "[batch, seq, 128]");
    EXPECT_SHAPE(f, "zeros", "[batch, seq]");
    EXPECT_VALUE(f, "bs2", "[batch, seq]");
    end(f);
}

/* Zero-length and symbolic KV concatenation. */
static void test_concat_kv(fx *f) {
    begin(f);
    input(f, "past0", VKL_DTYPE_F32, "1, 2, 0, 32");
    input(f, "new0", VKL_DTYPE_F32, "1, 2, 7, 32");
    input(f, "past", VKL_DTYPE_F32, "1, 2, past, 32");
    input(f, "new", VKL_DTYPE_F32, "1, 2, seq, 32");
    input(f, "rows", VKL_DTYPE_F32, "n, 32");
    input(f, "rows4", VKL_DTYPE_F32, "4, 32");
    vkl_attr ax2 = attr_int("axis", 2), axm2 = attr_int("axis", -2);
    node(f, VKL_OP_CONCAT, "past0, new0", "kv0", &ax2, 1);
    node(f, VKL_OP_CONCAT, "past, new", "kv", &axm2, 1);
    node(f, VKL_OP_CONCAT, "rows, rows4", "allrows", &(vkl_attr){.name = "axis", .kind = VKL_ATTR_INT, .i = 0}, 1);
    INFER_OK(f);
    EXPECT_SHAPE(f, "kv0", "[1, 2, 7, 32]");
    EXPECT_SHAPE(f, "kv", "[1, 2, past + seq, 32]");
    EXPECT_SHAPE(f, "allrows", "[n + 4, 32]");
    end(f);
}

/* Squeeze drops provable 1s only; listed axes are trusted. */
static void test_squeeze(fx *f) {
    begin(f);
    input(f, "x", VKL_DTYPE_F32, "1, seq, 1, 32");
    input(f, "b", VKL_DTYPE_F32, "batch, 1");
    weight_i64(f, "a0", I0, 1, false);
    static const int64_t both[] = {0, -2};
    weight_i64(f, "both", both, 2, false);
    node(f, VKL_OP_SQUEEZE, "x", "x2", NULL, 0);
    node(f, VKL_OP_SQUEEZE, "b", "b1", NULL, 0);
    node(f, VKL_OP_SQUEEZE, "b, a0", "b0", NULL, 0);
    node(f, VKL_OP_SQUEEZE, "x, both", "x3", NULL, 0);
    INFER_OK(f);
    EXPECT_SHAPE(f, "x2", "[seq, 32]");
    EXPECT_SHAPE(f, "b1", "[batch]");
    EXPECT_SHAPE(f, "b0", "[1]");
    EXPECT_SHAPE(f, "x3", "[seq, 32]");
    end(f);
}

/* Values through Transpose, Tile, Flatten, Split, GatherElements, GatherND,
 * Constant, ConstantOfShape and negative Gather indices. */
static void test_value_ops(fx *f) {
    begin(f);
    static const int64_t sh23[] = {2, 3}, reps[] = {1, 2}, split[] = {1, 2}, ge_idx[] = {2, 0}, nd_idx[] = {1, 0},
                         cval[] = {2, 3};
    input(f, "x", VKL_DTYPE_F32, "a, b, c");
    weight_i64(f, "sh23", sh23, 2, false);
    weight_i64(f, "reps", reps, 2, false);
    weight_i64(f, "split", split, 2, false);
    weight_i64(f, "ge_idx", ge_idx, 2, false);
    weight_i64(f, "im1", IM1, 1, true);
    weight_i64(f, "zero", I0, 1, false);
    /* nd_idx as [2, 1] */
    int64_t nd_dims[] = {2, 1};
    vkl_shape nds;
    uint32_t id = 0;
    if (vkl_shape_from_ints(f->g, nd_dims, 2, &nds) || vkl_graph_add_tensor(f->g, "nd_idx", VKL_DTYPE_I64, VKL_TENSOR_WEIGHT, &nds, &id) ||
        vkl_graph_set_data(f->g, id, nd_idx, sizeof(nd_idx), true))
        f->fails++;
    int64_t cdims[] = {2};
    vkl_shape c2;
    uint32_t cid = 0, fid = 0;
    if (vkl_shape_from_ints(f->g, cdims, 1, &c2) || vkl_graph_add_tensor(f->g, "cval", VKL_DTYPE_I64, VKL_TENSOR_WEIGHT, &c2, &cid) ||
        vkl_graph_set_data(f->g, cid, cval, sizeof(cval), true) ||
        vkl_graph_add_tensor(f->g, "fill", VKL_DTYPE_I64, VKL_TENSOR_WEIGHT, &(vkl_shape){.rank = 0}, &fid) ||
        vkl_graph_set_data(f->g, fid, cval, sizeof(int64_t), true))
        f->fails++;
    vkl_attr ax = attr_int("axis", 0), ax1 = attr_int("axis", 1), nout = attr_int("num_outputs", 3);
    vkl_attr cattr = {.name = "value", .kind = VKL_ATTR_TENSOR, .i = cid}, fattr = {.name = "value", .kind = VKL_ATTR_TENSOR, .i = fid};
    node(f, VKL_OP_SHAPE, "x", "s", NULL, 0);
    node(f, VKL_OP_CONCAT, "s, s", "s6", &ax, 1);
    node(f, VKL_OP_RESHAPE, "s6, sh23", "m", NULL, 0);          /* [[a,b,c],[a,b,c]] */
    node(f, VKL_OP_TRANSPOSE, "m", "mt", NULL, 0);              /* [[a,a],[b,b],[c,c]] */
    node(f, VKL_OP_TILE, "m, reps", "mtile", NULL, 0);          /* [2, 6] */
    node(f, VKL_OP_FLATTEN, "mt", "mflat", &ax1, 1);
    node(f, VKL_OP_SPLIT, "s, split", "s_a, s_bc", &ax, 1);
    node(f, VKL_OP_SPLIT, "s", "p0, -, p2", &nout, 1);
    node(f, VKL_OP_GATHER_ELEMENTS, "s, ge_idx", "ge", &ax, 1);
    node(f, VKL_OP_GATHER_ND, "s, nd_idx", "nd", NULL, 0);
    node(f, VKL_OP_GATHER, "s, im1", "lastdim", &ax, 1);
    node(f, VKL_OP_GATHER, "m, im1", "lastrow", &ax, 1);
    node(f, VKL_OP_CONSTANT, "", "k", &cattr, 1);
    node(f, VKL_OP_CONSTANT_OF_SHAPE, "k", "filled", &fattr, 1);
    node(f, VKL_OP_UNSQUEEZE, "lastdim, zero", "lastdim1", NULL, 0);
    node(f, VKL_OP_CONSTANT_OF_SHAPE, "lastdim1", "symfill", &fattr, 1);
    INFER_OK(f);
    EXPECT_SHAPE(f, "m", "[2, 3]");
    EXPECT_VALUE(f, "m", "[a, b, c, a, b, c]");
    EXPECT_SHAPE(f, "mt", "[3, 2]");
    EXPECT_VALUE(f, "mt", "[a, a, b, b, c, c]");
    EXPECT_SHAPE(f, "mtile", "[2, 6]");
    EXPECT_VALUE(f, "mtile", "[a, b, c, a, b, c, a, b, c, a, b, c]");
    EXPECT_VALUE(f, "mflat", "[a, a, b, b, c, c]");
    EXPECT_VALUE(f, "s_a", "[a]");
    EXPECT_VALUE(f, "s_bc", "[b, c]");
    EXPECT_VALUE(f, "p2", "[c]");
    EXPECT_VALUE(f, "ge", "[c, a]");
    EXPECT_SHAPE(f, "nd", "[2]");
    EXPECT_VALUE(f, "nd", "[b, a]");
    EXPECT_VALUE(f, "lastdim", "[c]");
    EXPECT_VALUE(f, "lastrow", "[a, b, c]");
    EXPECT_VALUE(f, "k", "[2, 3]");
    EXPECT_SHAPE(f, "filled", "[2, 3]");
    EXPECT_VALUE(f, "filled", "[2, 2, 2, 2, 2, 2]");
    EXPECT_SHAPE(f, "symfill", "[c]");
    end(f);
}

/* Split of symbolic axes: exact halves and ceil chunks. */
static void test_split_symbolic(fx *f) {
    begin(f);
    input(f, "qkv", VKL_DTYPE_F32, "seq, 3*h");
    input(f, "odd", VKL_DTYPE_F32, "n");
    input(f, "ten", VKL_DTYPE_F32, "10");
    vkl_attr a1[] = {attr_int("axis", -1)};
    node(f, VKL_OP_SPLIT, "qkv", "q, k, v", a1, 1);
    node(f, VKL_OP_SPLIT, "odd", "o1, o2", NULL, 0);
    vkl_attr n3 = attr_int("num_outputs", 3);
    node(f, VKL_OP_SPLIT, "ten", "t1, t2, t3", &n3, 1);
    INFER_OK(f);
    EXPECT_SHAPE(f, "q", "[seq, h]");
    EXPECT_SHAPE(f, "v", "[seq, h]");
    EXPECT_SHAPE(f, "o1", "[(n + 1) // 2]");
    EXPECT_SHAPE(f, "o2", "[n - (n + 1) // 2]");
    EXPECT_SHAPE(f, "t1", "[4]");
    EXPECT_SHAPE(f, "t3", "[2]");
    end(f);
}

/* Reshape's 0 entries and allowzero; Flatten and Transpose shapes. */
static void test_reshape_forms(fx *f) {
    begin(f);
    static const int64_t t1[] = {0, 0, 32, -1}, t2[] = {-1}, perm[] = {0, 2, 1, 3};
    input(f, "x", VKL_DTYPE_F32, "batch, seq, 4096");
    weight_i64(f, "t1", t1, 4, false);
    weight_i64(f, "t2", t2, 1, false);
    node(f, VKL_OP_RESHAPE, "x, t1", "y", NULL, 0);
    node(f, VKL_OP_RESHAPE, "x, t2", "flat", NULL, 0);
    vkl_attr p = attr_ints("perm", perm, 4), fa = attr_int("axis", -1);
    node(f, VKL_OP_TRANSPOSE, "y", "yt", &p, 1);
    node(f, VKL_OP_TRANSPOSE, "x", "xr", NULL, 0);
    node(f, VKL_OP_FLATTEN, "y", "f2", &fa, 1);
    INFER_OK(f);
    EXPECT_SHAPE(f, "y", "[batch, seq, 32, 128]");
    EXPECT_SHAPE(f, "flat", "[4096*batch*seq]");
    EXPECT_SHAPE(f, "yt", "[batch, 32, seq, 128]");
    EXPECT_SHAPE(f, "xr", "[4096, seq, batch]");
    EXPECT_SHAPE(f, "f2", "[32*batch*seq, 128]");
    end(f);
}

/* ---- Slice's symbolic lengths against the concrete rule ------------------ */

/* The inferred length of x[start:stop:step] on an axis of symbolic size N,
 * evaluated for N = 0..12 against the concrete rule; *refused when
 * inference failed. */
static bool slice_sym_matches(fx *f, int64_t start, int64_t stop, int64_t step, bool *refused) {
    begin(f);
    input(f, "x", VKL_DTYPE_F32, "N");
    weight_i64(f, "s", &start, 1, false);
    weight_i64(f, "e", &stop, 1, false);
    weight_i64(f, "a", I0, 1, false);
    weight_i64(f, "st", &step, 1, false);
    node(f, VKL_OP_SLICE, "x, s, e, a, st", "y", NULL, 0);
    vkl_status st = vkl_graph_infer_shapes(f->g);
    bool ok = true;
    *refused = st != VKL_OK;
    for (int64_t n = 0; !st && n <= 12; n++) {
        int64_t first, len;
        vkl_mv_slice_range(n, start, stop, step, &first, &len);
        if (eval_dim(f, "y", 0, "N", n) != len) {
            char buf[256];
            vkl_expr_print(f->g->syms, f->g->tensors[tensor_id(f, "y")].shape.dims[0], buf, sizeof(buf));
            fprintf(stderr, "slice [%lld:%lld:%lld] on N=%lld: %s gives %lld, want %lld\n", (long long)start,
                    (long long)stop, (long long)step, (long long)n, buf, (long long)eval_dim(f, "y", 0, "N", n),
                    (long long)len);
            ok = false;
            break;
        }
    }
    end(f);
    return ok;
}

/* Symbolic bounds (a Shape value P) on a constant axis of size d. */
static bool slice_sym_bound_matches(fx *f, int64_t d, int64_t c, int64_t step, int which) {
    begin(f);
    char dims[32];
    snprintf(dims, sizeof(dims), "%lld", (long long)d);
    input(f, "x", VKL_DTYPE_F32, dims);
    input(f, "p", VKL_DTYPE_F32, "P");
    weight_i64(f, "c", &c, 1, false);
    weight_i64(f, "a", I0, 1, false);
    weight_i64(f, "st", &step, 1, false);
    node(f, VKL_OP_SHAPE, "p", "pv", NULL, 0);
    node(f, VKL_OP_SLICE, which ? "x, c, pv, a, st" : "x, pv, c, a, st", "y", NULL, 0);
    vkl_status st = vkl_graph_infer_shapes(f->g);
    bool ok = st == VKL_OK;
    for (int64_t pval = 0; ok && pval <= 12; pval++) {
        int64_t first, len;
        vkl_mv_slice_range(d, which ? c : pval, which ? pval : c, step, &first, &len);
        if (eval_dim(f, "y", 0, "P", pval) != len) {
            fprintf(stderr, "slice on [%lld], %s = P = %lld, other %lld, step %lld: got %lld, want %lld\n", (long long)d,
                    which ? "end" : "start", (long long)pval, (long long)c, (long long)step,
                    (long long)eval_dim(f, "y", 0, "P", pval), (long long)len);
            ok = false;
        }
    }
    end(f);
    return ok;
}

static void test_slice_oracle(fx *f) {
    static const int64_t bounds[] = {INT64_MIN, -1000, -7, -5, -3, -2, -1, 0, 1, 2, 3, 5, 7, 1000, 2147483647, INT64_MAX};
    static const int64_t steps[] = {1, 2, 3, -1, -2, -3};
    int refused = 0, tried = 0, bad = 0;
    for (size_t i = 0; i < VKL_ARRAY_LEN(bounds); i++)
        for (size_t j = 0; j < VKL_ARRAY_LEN(bounds); j++)
            for (size_t k = 0; k < VKL_ARRAY_LEN(steps); k++) {
                bool no;
                tried++;
                if (!slice_sym_matches(f, bounds[i], bounds[j], steps[k], &no)) bad++;
                if (!no) continue;
                refused++;
                fprintf(stderr, "slice [%lld:%lld:%lld] on N refused: %s\n", (long long)bounds[i],
                        (long long)bounds[j], (long long)steps[k], vkl_context_error(f->ctx));
                bad++;
            }
    for (int64_t d = 0; d <= 6; d++)
        for (size_t j = 0; j < VKL_ARRAY_LEN(bounds); j++)
            for (size_t k = 0; k < VKL_ARRAY_LEN(steps); k++)
                for (int which = 0; which < 2; which++) {
                    tried++;
                    if (!slice_sym_bound_matches(f, d, bounds[j], steps[k], which)) bad++;
                }
    f->checks += tried;
    f->fails += bad;
    printf("  slice oracle: %d symbolic slices checked for sizes 0..12, %d refused\n", tried, refused);
}

/* ---- errors with clear messages ----------------------------------------- */

typedef struct err_case {
    vkl_op op;
    const char *x;       /* dims of input x (f32) */
    bool via_shape;      /* the op reads Shape(x) rather than x */
    const char *second;  /* "w": the constant below; "x": x again; "i64:<dims>": a run-time i64 input; NULL: none */
    int64_t w[2];
    uint32_t nw;         /* entries of w; 0 with second "w": a scalar w[0] */
    const char *attr;    /* an INT attribute (or "perm": INTS from w) */
    int64_t attr_v;
    vkl_status want;
    const char *needle;
} err_case;

static const err_case ERRORS[] = {
    {VKL_OP_RESHAPE, "2, 3", false, "w", {4}, 1, NULL, 0, VKL_ERR_SHAPE,
     "Reshape: cannot reshape [2, 3] (6 elements) to [4] (4 elements)"},
    {VKL_OP_RESHAPE, "n, 6", false, "w", {-1, 4}, 2, NULL, 0, VKL_ERR_SHAPE,
     "Reshape: cannot reshape [n, 6] to [-1, 4]: 6*n elements are not a multiple of 4"},
    {VKL_OP_RESHAPE, "2, 3", false, "w", {-1, -1}, 2, NULL, 0, VKL_ERR_SHAPE, "Reshape: shape has two -1 entries (0 and 1)"},
    {VKL_OP_TRANSPOSE, "2, 3", false, NULL, {0, 0}, 2, "perm", 0, VKL_ERR_SHAPE,
     "Transpose: perm is not a permutation of 0..1: Transpose: perm names axis 0 twice"},
    {VKL_OP_TRANSPOSE, "2, 3", false, NULL, {0, 5}, 2, "perm", 0, VKL_ERR_SHAPE, "perm[1] = 5 is out of range for rank 2"},
    {VKL_OP_GATHER, "batch, seq, 128", true, "w", {3}, 0, "axis", 0, VKL_ERR_INVALID_ARGUMENT,
     "Gather: index 3 is out of range for axis 0 of size 3"},
    {VKL_OP_RESHAPE, "2, 3", false, "i64:2", {0}, 0, NULL, 0, VKL_ERR_UNSUPPORTED,
     "Reshape: output shape depends on the run-time value of input 1 (shape 'second')"},
    {VKL_OP_CONCAT, "2, 3", false, "f32:2, 4", {0}, 0, "axis", 0, VKL_ERR_SHAPE,
     "Concat: input 1 [2, 4] does not match input 0 [2, 3] outside axis 0"},
    {VKL_OP_SQUEEZE, "2, 3", false, "w", {0}, 1, NULL, 0, VKL_ERR_SHAPE, "Squeeze: axis 0 of [2, 3] has size 2, not 1"},
    {VKL_OP_CONCAT, "2, 3", false, "x", {0}, 0, "axis", 5, VKL_ERR_SHAPE,
     "Concat: attribute axis: axis 5 out of range for rank 2"},
    {VKL_OP_RANGE, "3, 4", true, NULL, {0}, 0, NULL, 0, VKL_ERR_SHAPE, "Range: input 0 must be a scalar of dtype i64"},
    {VKL_OP_UNSQUEEZE, "2, 3", false, "w", {0, -4}, 2, NULL, 0, VKL_ERR_SHAPE, "Unsqueeze: axes names axis 0 twice"},
};

static void run_error_case(fx *f, const err_case *c) {
    begin(f);
    input(f, "x", VKL_DTYPE_F32, c->x);
    char ins[64] = "x";
    if (c->via_shape) {
        node(f, VKL_OP_SHAPE, "x", "s", NULL, 0);
        snprintf(ins, sizeof(ins), "s");
    }
    if (c->second && !strcmp(c->second, "w")) weight_i64(f, "second", c->w, c->nw ? c->nw : 1, c->nw == 0);
    if (c->second && !strncmp(c->second, "i64:", 4)) input(f, "second", VKL_DTYPE_I64, c->second + 4);
    if (c->second && !strncmp(c->second, "f32:", 4)) input(f, "second", VKL_DTYPE_F32, c->second + 4);
    if (c->second) strcat(ins, strcmp(c->second, "x") ? ", second" : ", x");
    if (c->op == VKL_OP_RANGE) strcat(ins, ", s, s"); /* three 1-D [2] inputs: not scalars */
    vkl_attr at = c->attr && !strcmp(c->attr, "perm") ? attr_ints("perm", c->w, c->nw) : attr_int(c->attr, c->attr_v);
    node(f, c->op, ins, "y", &at, c->attr ? 1 : 0);
    expect_error_at(f, (int)(c - ERRORS), c->want, c->needle);
    end(f);
}

static void test_errors(fx *f) {
    for (size_t i = 0; i < VKL_ARRAY_LEN(ERRORS); i++) run_error_case(f, &ERRORS[i]);
}

int main(void) {
    fx f = {0};
    if (vkl_context_create(NULL, &f.ctx)) return 2;
    test_paper_examples(&f);
    test_legacy_chain(&f);
    test_shape_slice_chain(&f);
    test_cos_cache_slice(&f);
    test_symbolic_slices(&f);
    test_range(&f);
    test_expand_from_shape(&f);
    test_concat_kv(&f);
    test_squeeze(&f);
    test_value_ops(&f);
    test_split_symbolic(&f);
    test_reshape_forms(&f);
    test_slice_oracle(&f);
    test_errors(&f);
    vkl_context_destroy(f.ctx);
    printf("test_shapes_movement: %d checks, %d failures\n", f.checks, f.fails);
    return f.fails ? 1 : 0;
}
