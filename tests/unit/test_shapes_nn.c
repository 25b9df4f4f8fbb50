/* Symbolic shape rules of the nn family (norms, reductions, MatMul/Gemm/Conv,
 * fused LLM ops): small graphs with symbolic dims, outputs checked as
 * printed shapes, plus the integer value propagation of ReduceSum/ReduceMax
 * feeding TopK's K, and the errors the rules must report. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "context.h"
#include "graph.h"
#include "ops.h"
#include "ops/op_defs.h"

/* "B;seq;64" -> handles; returns the count. */
static uint32_t exprs(vkl_graph *g, const char *text, vkl_expr *out, uint32_t cap) {
    return check_exprs(&failures, g, text, ';', out, cap);
}

/* A graph input (or, with `weight`, constant i64 data `ints`). */
static uint32_t tensor(vkl_graph *g, const char *name, vkl_dtype dt, const char *dims) {
    vkl_shape s = {0};
    uint32_t id = VKL_NONE;
    s.rank = exprs(g, dims, s.dims, VKL_MAX_RANK);
    CHECK(vkl_graph_add_tensor(g, name, dt, VKL_TENSOR_INPUT, &s, &id) == VKL_OK);
    CHECK(vkl_graph_add_input(g, id) == VKL_OK);
    return id;
}

static uint32_t ints(vkl_graph *g, const char *name, const int64_t *v, uint32_t n) {
    vkl_shape s = {1, {0}};
    uint32_t id = VKL_NONE;
    CHECK(vkl_expr_const(g->syms, n, &s.dims[0]) == VKL_OK);
    CHECK(vkl_graph_add_tensor(g, name, VKL_DTYPE_I64, VKL_TENSOR_WEIGHT, &s, &id) == VKL_OK);
    CHECK(vkl_graph_set_data(g, id, v, n * sizeof(int64_t), true) == VKL_OK);
    return id;
}

/* An i64 tensor of shape `dims` whose value is known symbolically, as the
 * shape subgraph (Shape -> Gather -> ...) leaves it. */
static uint32_t known(vkl_graph *g, const char *name, const char *dims, const char *value) {
    vkl_shape s = {0};
    vkl_expr v[VKL_MAX_VALUE_ELEMS];
    uint32_t id = VKL_NONE, n = exprs(g, value, v, VKL_MAX_VALUE_ELEMS);
    s.rank = exprs(g, dims, s.dims, VKL_MAX_RANK);
    CHECK(vkl_graph_add_tensor(g, name, VKL_DTYPE_I64, VKL_TENSOR_ACTIVATION, &s, &id) == VKL_OK);
    CHECK(vkl_graph_set_value(g, id, v, n) == VKL_OK);
    return id;
}

/* op(ins) -> outs (comma-free names; NULL for an unused optional output). */
static void node(vkl_graph *g, vkl_op op, const uint32_t *ins, uint32_t ni, const char *const *outs, uint32_t no,
                 const vkl_attr *attrs, uint32_t na) {
    uint32_t ids[4];
    for (uint32_t k = 0; k < no; k++) {
        ids[k] = VKL_NONE;
        if (outs[k])
            CHECK(vkl_graph_add_tensor(g, outs[k], VKL_DTYPE_F32, VKL_TENSOR_ACTIVATION, NULL, &ids[k]) == VKL_OK);
    }
    CHECK(vkl_graph_add_node(g, op, outs[0] ? outs[0] : "node", ins, ni, ids, no, attrs, na, NULL) == VKL_OK);
}

#define IN(...) (const uint32_t[]){__VA_ARGS__}, (uint32_t)(sizeof((const uint32_t[]){__VA_ARGS__}) / sizeof(uint32_t))
#define OUT(...) (const char *const[]){__VA_ARGS__}, (uint32_t)(sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *))
#define ATTRS(...) (const vkl_attr[]){__VA_ARGS__}, (uint32_t)(sizeof((const vkl_attr[]){__VA_ARGS__}) / sizeof(vkl_attr))
#define NOATTRS NULL, 0

static vkl_attr attr_i(const char *name, int64_t v) {
    return (vkl_attr){.name = name, .kind = VKL_ATTR_INT, .i = v};
}

static vkl_attr attr_ints(const char *name, const int64_t *v, uint32_t n) {
    return (vkl_attr){.name = name, .kind = VKL_ATTR_INTS, .ints = v, .count = n};
}

static vkl_attr attr_s(const char *name, const char *v) {
    return (vkl_attr){.name = name, .kind = VKL_ATTR_STRING, .s = v};
}

static vkl_status infer(vkl_graph *g) {
    vkl_status st = vkl_graph_validate(g);
    if (!st) st = vkl_graph_infer_shapes(g);
    if (st) fprintf(stderr, "infer: %s: %s\n", vkl_status_name(st), vkl_context_error(g->ctx));
    return st;
}

static uint32_t id_of(vkl_graph *g, const char *name) {
    uint32_t id = VKL_NONE;
    CHECK(vkl_graph_find_tensor(g, name, &id) == VKL_OK);
    return id;
}

#define SHAPE(g, name, dt, dims) check_shape_exprs(&failures, __FILE__, __LINE__, g, name, dt, dims, ';')
#define VALUE(g, name, value) check_value_exprs(&failures, __FILE__, __LINE__, g, name, value, ';')

/* Each op's table entry is this family's, under its ONNX / vkllm name. The
 * direct references also make the linker keep the family's objects. */
static void test_table(void) {
    static const struct {
        vkl_op op;
        const vkl_op_info *info;
        const char *domain, *name;
    } entries[] = {
        {VKL_OP_SOFTMAX, &vkl_op_info_softmax, "", "Softmax"},
        {VKL_OP_LOG_SOFTMAX, &vkl_op_info_log_softmax, "", "LogSoftmax"},
        {VKL_OP_LAYER_NORMALIZATION, &vkl_op_info_layer_normalization, "", "LayerNormalization"},
        {VKL_OP_REDUCE_MEAN, &vkl_op_info_reduce_mean, "", "ReduceMean"},
        {VKL_OP_REDUCE_SUM, &vkl_op_info_reduce_sum, "", "ReduceSum"},
        {VKL_OP_REDUCE_MAX, &vkl_op_info_reduce_max, "", "ReduceMax"},
        {VKL_OP_ARG_MAX, &vkl_op_info_arg_max, "", "ArgMax"},
        {VKL_OP_CUM_SUM, &vkl_op_info_cum_sum, "", "CumSum"},
        {VKL_OP_TOP_K, &vkl_op_info_top_k, "", "TopK"},
        {VKL_OP_MAT_MUL, &vkl_op_info_mat_mul, "", "MatMul"},
        {VKL_OP_GEMM, &vkl_op_info_gemm, "", "Gemm"},
        {VKL_OP_CONV, &vkl_op_info_conv, "", "Conv"},
        {VKL_OP_RMS_NORM, &vkl_op_info_rms_norm, "vkllm", "RMSNorm"},
        {VKL_OP_ROPE, &vkl_op_info_rope, "vkllm", "RoPE"},
        {VKL_OP_ATTENTION, &vkl_op_info_attention, "vkllm", "Attention"},
        {VKL_OP_KV_APPEND, &vkl_op_info_kv_append, "vkllm", "KvAppend"},
    };
    for (size_t i = 0; i < VKL_ARRAY_LEN(entries); i++) {
        vkl_op found = VKL_OP_COUNT_;
        CHECK(vkl_op_info_get(entries[i].op) == entries[i].info);
        CHECK(!strcmp(entries[i].info->name, entries[i].name) && !strcmp(entries[i].info->domain, entries[i].domain));
        CHECK(vkl_op_find(entries[i].domain, entries[i].name, &found) && found == entries[i].op);
        CHECK(entries[i].info->inplace_input == (entries[i].op == VKL_OP_KV_APPEND ? 0 : -1));
    }
}

static void test_norms(vkl_context *ctx) {
    vkl_graph *g;
    CHECK(vkl_graph_create(ctx, &g) == VKL_OK);
    uint32_t x = tensor(g, "x", VKL_DTYPE_F16, "B;seq;64");
    uint32_t scale = tensor(g, "scale", VKL_DTYPE_F16, "64");
    uint32_t scale2 = tensor(g, "scale2", VKL_DTYPE_F16, "seq;64");
    node(g, VKL_OP_SOFTMAX, IN(x), OUT("sm"), NOATTRS);
    node(g, VKL_OP_LOG_SOFTMAX, IN(x), OUT("lsm"), ATTRS(attr_i("axis", 0)));
    node(g, VKL_OP_LAYER_NORMALIZATION, IN(x, scale, scale), OUT("ln", "ln_mean", "ln_inv"), NOATTRS);
    node(g, VKL_OP_LAYER_NORMALIZATION, IN(x, scale2), OUT("ln1", NULL, "ln1_inv"),
         ATTRS(attr_i("axis", 1), attr_i("stash_type", 11)));
    node(g, VKL_OP_RMS_NORM, IN(x, scale), OUT("rms"), NOATTRS);
    node(g, VKL_OP_RMS_NORM, IN(x, scale2), OUT("rms1"), ATTRS(attr_i("axis", -2)));
    CHECK(infer(g) == VKL_OK);
    SHAPE(g, "sm", VKL_DTYPE_F16, "B;seq;64");
    SHAPE(g, "lsm", VKL_DTYPE_F16, "B;seq;64");
    SHAPE(g, "ln", VKL_DTYPE_F16, "B;seq;64");
    SHAPE(g, "ln_mean", VKL_DTYPE_F32, "B;seq;1");
    SHAPE(g, "ln_inv", VKL_DTYPE_F32, "B;seq;1");
    SHAPE(g, "ln1_inv", VKL_DTYPE_F64, "B;1;1");
    SHAPE(g, "rms", VKL_DTYPE_F16, "B;seq;64");
    SHAPE(g, "rms1", VKL_DTYPE_F16, "B;seq;64");
    vkl_graph_destroy(g);
}

static void test_reductions(vkl_context *ctx) {
    vkl_graph *g;
    CHECK(vkl_graph_create(ctx, &g) == VKL_OK);
    uint32_t x = tensor(g, "x", VKL_DTYPE_F32, "B;seq;V");
    const int64_t last[] = {-1}, first_two[] = {0, 1}, five[] = {5};
    uint32_t ax_last = ints(g, "ax_last", last, 1), ax_01 = ints(g, "ax_01", first_two, 2);
    uint32_t ax_none = ints(g, "ax_none", last, 0), k5 = ints(g, "k5", five, 1);
    uint32_t axis_in = tensor(g, "axis_in", VKL_DTYPE_I64, "");
    node(g, VKL_OP_REDUCE_MEAN, IN(x, ax_last), OUT("mean_keep"), NOATTRS);
    node(g, VKL_OP_REDUCE_SUM, IN(x, ax_01), OUT("sum_01"), ATTRS(attr_i("keepdims", 0)));
    node(g, VKL_OP_REDUCE_MAX, IN(x), OUT("max_all"), NOATTRS);
    node(g, VKL_OP_REDUCE_MAX, IN(x, ax_none), OUT("max_all_flat"), ATTRS(attr_i("keepdims", 0)));
    node(g, VKL_OP_REDUCE_SUM, IN(x, ax_none), OUT("noop"), ATTRS(attr_i("noop_with_empty_axes", 1)));
    node(g, VKL_OP_ARG_MAX, IN(x), OUT("argmax"), ATTRS(attr_i("axis", -1), attr_i("keepdims", 0)));
    node(g, VKL_OP_ARG_MAX, IN(x), OUT("argmax0"), NOATTRS);
    node(g, VKL_OP_CUM_SUM, IN(x, axis_in), OUT("cumsum"), NOATTRS);
    node(g, VKL_OP_TOP_K, IN(x, k5), OUT("topv", "topi"), NOATTRS);
    CHECK(infer(g) == VKL_OK);
    SHAPE(g, "mean_keep", VKL_DTYPE_F32, "B;seq;1");
    SHAPE(g, "sum_01", VKL_DTYPE_F32, "V");
    SHAPE(g, "max_all", VKL_DTYPE_F32, "1;1;1");
    SHAPE(g, "max_all_flat", VKL_DTYPE_F32, "");
    SHAPE(g, "noop", VKL_DTYPE_F32, "B;seq;V");
    SHAPE(g, "argmax", VKL_DTYPE_I64, "B;seq");
    SHAPE(g, "argmax0", VKL_DTYPE_I64, "1;seq;V");
    SHAPE(g, "cumsum", VKL_DTYPE_F32, "B;seq;V");
    SHAPE(g, "topv", VKL_DTYPE_F32, "B;seq;5");
    SHAPE(g, "topi", VKL_DTYPE_I64, "B;seq;5");
    vkl_graph_destroy(g);
}

/* ReduceSum/ReduceMax on known integer values, and a symbolic K for TopK:
 * K = sum([seq, 1]) = seq + 1, and K = min(seq, 50). */
static void test_reduce_values(vkl_context *ctx) {
    vkl_graph *g;
    CHECK(vkl_graph_create(ctx, &g) == VKL_OK);
    uint32_t dims = known(g, "dims", "3", "B;seq;4096");
    uint32_t grid = known(g, "grid", "2;3", "B;1;seq;2;3;4");
    uint32_t seq1 = known(g, "seq1", "2", "seq;1");
    uint32_t kmin = known(g, "kmin", "1", "min(seq, 50)");
    const int64_t zero[] = {0}, one[] = {1};
    uint32_t ax0 = ints(g, "ax0", zero, 1), ax1 = ints(g, "ax1", one, 1);
    uint32_t x = tensor(g, "x", VKL_DTYPE_F32, "B;seq + 1");
    uint32_t y = tensor(g, "y", VKL_DTYPE_F32, "B;V");
    node(g, VKL_OP_REDUCE_SUM, IN(dims), OUT("total"), ATTRS(attr_i("keepdims", 0)));
    node(g, VKL_OP_REDUCE_MAX, IN(dims), OUT("largest"), ATTRS(attr_i("keepdims", 0)));
    node(g, VKL_OP_REDUCE_SUM, IN(grid, ax1), OUT("row_sums"), NOATTRS);
    node(g, VKL_OP_REDUCE_SUM, IN(grid, ax0), OUT("col_sums"), ATTRS(attr_i("keepdims", 0)));
    node(g, VKL_OP_REDUCE_MEAN, IN(grid, ax1), OUT("row_means"), NOATTRS);
    node(g, VKL_OP_REDUCE_SUM, IN(seq1, ax0), OUT("k"), NOATTRS);
    node(g, VKL_OP_TOP_K, IN(x, id_of(g, "k")), OUT("top_all", NULL), NOATTRS);
    node(g, VKL_OP_TOP_K, IN(y, kmin), OUT("top_min", "top_min_i"), NOATTRS);
    CHECK(infer(g) == VKL_OK);
    SHAPE(g, "total", VKL_DTYPE_I64, "");
    VALUE(g, "total", "B + seq + 4096");
    VALUE(g, "largest", "max(max(B, seq), 4096)");
    SHAPE(g, "row_sums", VKL_DTYPE_I64, "2;1");
    VALUE(g, "row_sums", "B + 1 + seq;9");
    VALUE(g, "col_sums", "B + 2;4;seq + 4");
    VALUE(g, "row_means", NULL);
    VALUE(g, "k", "seq + 1");
    SHAPE(g, "top_all", VKL_DTYPE_F32, "B;seq + 1");
    SHAPE(g, "top_min", VKL_DTYPE_F32, "B;min(seq, 50)");
    SHAPE(g, "top_min_i", VKL_DTYPE_I64, "B;min(seq, 50)");
    vkl_graph_destroy(g);
}

static void test_linalg(vkl_context *ctx) {
    vkl_graph *g;
    CHECK(vkl_graph_create(ctx, &g) == VKL_OK);
    uint32_t h = tensor(g, "h", VKL_DTYPE_F32, "B;seq;64"), w = tensor(g, "w", VKL_DTYPE_F32, "64;128");
    uint32_t q = tensor(g, "q", VKL_DTYPE_F32, "B;H;seq;64"), kt = tensor(g, "kt", VKL_DTYPE_F32, "B;H;64;T");
    uint32_t v64 = tensor(g, "v64", VKL_DTYPE_F32, "64"), b3 = tensor(g, "b3", VKL_DTYPE_F32, "B;64;8");
    uint32_t a4 = tensor(g, "a4", VKL_DTYPE_F32, "1;seq;4;8"), c4 = tensor(g, "c4", VKL_DTYPE_F32, "B;1;8;2");
    uint32_t p = tensor(g, "p", VKL_DTYPE_F32, "P;4;8"), qq = tensor(g, "qq", VKL_DTYPE_F32, "Q;8;2");
    uint32_t m = tensor(g, "m", VKL_DTYPE_F32, "M;64"), wt = tensor(g, "wt", VKL_DTYPE_F32, "128;64");
    uint32_t bias = tensor(g, "bias", VKL_DTYPE_F32, "128"), at = tensor(g, "at", VKL_DTYPE_F32, "64;M");
    node(g, VKL_OP_MAT_MUL, IN(h, w), OUT("linear"), NOATTRS);
    node(g, VKL_OP_MAT_MUL, IN(q, kt), OUT("scores"), NOATTRS);
    node(g, VKL_OP_MAT_MUL, IN(v64, b3), OUT("vec_mat"), NOATTRS);
    node(g, VKL_OP_MAT_MUL, IN(h, v64), OUT("mat_vec"), NOATTRS);
    node(g, VKL_OP_MAT_MUL, IN(v64, v64), OUT("dot"), NOATTRS);
    node(g, VKL_OP_MAT_MUL, IN(a4, c4), OUT("bcast"), NOATTRS);
    node(g, VKL_OP_MAT_MUL, IN(p, qq), OUT("sym_bcast"), NOATTRS);
    node(g, VKL_OP_GEMM, IN(m, wt, bias), OUT("gemm_tb"), ATTRS(attr_i("transB", 1)));
    node(g, VKL_OP_GEMM, IN(at, w), OUT("gemm_ta"), ATTRS(attr_i("transA", 1)));
    CHECK(infer(g) == VKL_OK);
    SHAPE(g, "linear", VKL_DTYPE_F32, "B;seq;128");
    SHAPE(g, "scores", VKL_DTYPE_F32, "B;H;seq;T");
    SHAPE(g, "vec_mat", VKL_DTYPE_F32, "B;8");
    SHAPE(g, "mat_vec", VKL_DTYPE_F32, "B;seq");
    SHAPE(g, "dot", VKL_DTYPE_F32, "");
    SHAPE(g, "bcast", VKL_DTYPE_F32, "B;seq;4;2");
    SHAPE(g, "sym_bcast", VKL_DTYPE_F32, "max(P, Q);4;2"); /* the kernel checks P, Q at run time */
    SHAPE(g, "gemm_tb", VKL_DTYPE_F32, "M;128");
    SHAPE(g, "gemm_ta", VKL_DTYPE_F32, "M;128");
    vkl_graph_destroy(g);
}

static void test_conv(vkl_context *ctx) {
    vkl_graph *g;
    CHECK(vkl_graph_create(ctx, &g) == VKL_OK);
    uint32_t img = tensor(g, "img", VKL_DTYPE_F32, "N;3;H;W"), patch = tensor(g, "patch", VKL_DTYPE_F32, "64;3;8;8");
    uint32_t seq = tensor(g, "seq", VKL_DTYPE_F32, "N;4;L"), k3 = tensor(g, "k3", VKL_DTYPE_F32, "8;4;3");
    uint32_t x = tensor(g, "x", VKL_DTYPE_F32, "1;2;H;W"), w = tensor(g, "w", VKL_DTYPE_F32, "4;1;3;3");
    uint32_t b = tensor(g, "b", VKL_DTYPE_F32, "4");
    const int64_t s8[] = {8, 8}, s2[] = {2}, pads[] = {1, 1, 2, 0}, dil[] = {2, 1}, str[] = {1, 2};
    node(g, VKL_OP_CONV, IN(img, patch), OUT("embed"), ATTRS(attr_ints("strides", s8, 2)));
    node(g, VKL_OP_CONV, IN(seq, k3), OUT("same"), ATTRS(attr_s("auto_pad", "SAME_UPPER"), attr_ints("strides", s2, 1)));
    node(g, VKL_OP_CONV, IN(seq, k3), OUT("valid"), ATTRS(attr_s("auto_pad", "VALID"), attr_ints("strides", s2, 1)));
    node(g, VKL_OP_CONV, IN(x, w, b), OUT("grouped"),
         ATTRS(attr_i("group", 2), attr_ints("pads", pads, 4), attr_ints("dilations", dil, 2), attr_ints("strides", str, 2)));
    CHECK(infer(g) == VKL_OK);
    SHAPE(g, "embed", VKL_DTYPE_F32, "N;64;(H - 8) // 8 + 1;(W - 8) // 8 + 1");
    SHAPE(g, "same", VKL_DTYPE_F32, "N;8;(L + 1) // 2");
    SHAPE(g, "valid", VKL_DTYPE_F32, "N;8;(L - 3) // 2 + 1");
    /* H: pads 1 + 2, span (3 - 1) * 2 + 1 = 5, stride 1; W: pads 1 + 0, span 3, stride 2 */
    SHAPE(g, "grouped", VKL_DTYPE_F32, "1;4;H - 1;(W - 2) // 2 + 1");
    vkl_graph_destroy(g);
}

static void test_fused(vkl_context *ctx) {
    vkl_graph *g;
    CHECK(vkl_graph_create(ctx, &g) == VKL_OK);
    uint32_t q = tensor(g, "q", VKL_DTYPE_F16, "B;32;seq;128"), cs = tensor(g, "cos", VKL_DTYPE_F32, "seq;64");
    uint32_t k = tensor(g, "k", VKL_DTYPE_F16, "B;8;T;128"), v = tensor(g, "v", VKL_DTYPE_F16, "B;8;T;96");
    uint32_t kc = tensor(g, "kc", VKL_DTYPE_F16, "T;B;8;128"), vc = tensor(g, "vc", VKL_DTYPE_F16, "T;B;8;96");
    uint32_t mask = tensor(g, "mask", VKL_DTYPE_BOOL, "B;1;seq;T");
    uint32_t qh = tensor(g, "qh", VKL_DTYPE_F32, "B;2*H;seq;64"), kh = tensor(g, "kh", VKL_DTYPE_F32, "B;H;T;64");
    uint32_t x = tensor(g, "x", VKL_DTYPE_F32, "B;8;seq;128"), pos = tensor(g, "pos", VKL_DTYPE_I64, "B;seq");
    node(g, VKL_OP_ROPE, IN(q, cs, cs), OUT("rot"), NOATTRS);
    node(g, VKL_OP_ATTENTION, IN(q, k, v, mask), OUT("attn"), ATTRS(attr_i("causal", 1)));
    node(g, VKL_OP_ATTENTION, IN(q, kc, vc), OUT("attn_cache"), ATTRS(attr_i("kv_layout", 1)));
    node(g, VKL_OP_ATTENTION, IN(qh, kh, kh), OUT("attn_sym_heads"), NOATTRS);
    node(g, VKL_OP_KV_APPEND, IN(kc, x, pos), OUT("kc_next"), NOATTRS);
    CHECK(infer(g) == VKL_OK);
    SHAPE(g, "rot", VKL_DTYPE_F16, "B;32;seq;128");
    SHAPE(g, "attn", VKL_DTYPE_F16, "B;32;seq;96");
    SHAPE(g, "attn_cache", VKL_DTYPE_F16, "B;32;seq;96");
    SHAPE(g, "attn_sym_heads", VKL_DTYPE_F32, "B;2*H;seq;64");
    SHAPE(g, "kc_next", VKL_DTYPE_F16, "T;B;8;128");
    vkl_graph_destroy(g);
}

/* One node whose shape rule must fail with `want` and a message containing `text`. */
typedef void (*build_fn)(vkl_graph *g);

static void expect_error(vkl_context *ctx, build_fn build, vkl_status want, const char *text, int line) {
    vkl_graph *g;
    CHECK(vkl_graph_create(ctx, &g) == VKL_OK);
    build(g);
    vkl_status st = vkl_graph_validate(g);
    if (!st) st = vkl_graph_infer_shapes(g);
    if (!check_status_is(__FILE__, line, "inference", ctx, st, want, text)) failures++;
    vkl_graph_destroy(g);
}

static void bad_matmul(vkl_graph *g) {
    node(g, VKL_OP_MAT_MUL, IN(tensor(g, "a", VKL_DTYPE_F32, "seq;64"), tensor(g, "b", VKL_DTYPE_F32, "32;8")),
         OUT("y"), NOATTRS);
}

static void runtime_axes(vkl_graph *g) {
    node(g, VKL_OP_REDUCE_SUM, IN(tensor(g, "x", VKL_DTYPE_F32, "B;4"), tensor(g, "axes", VKL_DTYPE_I64, "1")),
         OUT("y"), NOATTRS);
}

static void runtime_k(vkl_graph *g) {
    node(g, VKL_OP_TOP_K, IN(tensor(g, "x", VKL_DTYPE_F32, "B;V"), tensor(g, "k", VKL_DTYPE_I64, "1")),
         OUT("v", "i"), NOATTRS);
}

static void gqa_heads(vkl_graph *g) {
    uint32_t k = tensor(g, "k", VKL_DTYPE_F32, "B;6;T;64");
    node(g, VKL_OP_ATTENTION, IN(tensor(g, "q", VKL_DTYPE_F32, "B;32;S;64"), k, k), OUT("y"), NOATTRS);
}

static void head_dims(vkl_graph *g) {
    uint32_t k = tensor(g, "k", VKL_DTYPE_F32, "B;8;T;32");
    node(g, VKL_OP_ATTENTION, IN(tensor(g, "q", VKL_DTYPE_F32, "B;32;S;64"), k, k), OUT("y"), NOATTRS);
}

static void conv_channels(vkl_graph *g) {
    node(g, VKL_OP_CONV, IN(tensor(g, "x", VKL_DTYPE_F32, "N;3;H;W"), tensor(g, "w", VKL_DTYPE_F32, "8;4;3;3")),
         OUT("y"), NOATTRS);
}

static void rope_odd(vkl_graph *g) {
    uint32_t c = tensor(g, "c", VKL_DTYPE_F32, "S;63");
    node(g, VKL_OP_ROPE, IN(tensor(g, "x", VKL_DTYPE_F32, "B;4;S;64"), c, c), OUT("y"), NOATTRS);
}

static void layer_norm_scale(vkl_graph *g) {
    node(g, VKL_OP_LAYER_NORMALIZATION,
         IN(tensor(g, "x", VKL_DTYPE_F32, "B;seq;64"), tensor(g, "s", VKL_DTYPE_F32, "63")), OUT("y"), NOATTRS);
}

static void gemm_c(vkl_graph *g) {
    node(g, VKL_OP_GEMM,
         IN(tensor(g, "a", VKL_DTYPE_F32, "M;64"), tensor(g, "b", VKL_DTYPE_F32, "64;128"),
            tensor(g, "c", VKL_DTYPE_F32, "7")),
         OUT("y"), NOATTRS);
}

static void kv_heads(vkl_graph *g) {
    node(g, VKL_OP_KV_APPEND,
         IN(tensor(g, "s", VKL_DTYPE_F32, "T;B;8;64"), tensor(g, "x", VKL_DTYPE_F32, "B;4;S;64"),
            tensor(g, "p", VKL_DTYPE_I64, "B;S")),
         OUT("y"), NOATTRS);
}

static void test_errors(vkl_context *ctx) {
    expect_error(ctx, bad_matmul, VKL_ERR_SHAPE, "differ (64 vs 32)", __LINE__);
    expect_error(ctx, runtime_axes, VKL_ERR_UNSUPPORTED, "run-time value of input 1 (axes)", __LINE__);
    expect_error(ctx, runtime_k, VKL_ERR_UNSUPPORTED, "run-time value of input 1 (k)", __LINE__);
    expect_error(ctx, gqa_heads, VKL_ERR_SHAPE, "not a multiple", __LINE__);
    expect_error(ctx, head_dims, VKL_ERR_SHAPE, "head dims differ", __LINE__);
    expect_error(ctx, conv_channels, VKL_ERR_SHAPE, "channels", __LINE__);
    expect_error(ctx, rope_odd, VKL_ERR_SHAPE, "must be even", __LINE__);
    expect_error(ctx, layer_norm_scale, VKL_ERR_SHAPE, "does not broadcast", __LINE__);
    expect_error(ctx, gemm_c, VKL_ERR_SHAPE, "C of shape [7]", __LINE__);
    expect_error(ctx, kv_heads, VKL_ERR_SHAPE, "heads differ", __LINE__);
}

int main(void) {
    vkl_context *ctx;
    if (vkl_context_create(NULL, &ctx)) return 2;
    test_table();
    test_norms(ctx);
    test_reductions(ctx);
    test_reduce_values(ctx);
    test_linalg(ctx);
    test_conv(ctx);
    test_fused(ctx);
    test_errors(ctx);
    vkl_context_destroy(ctx);
    if (failures) fprintf(stderr, "test_shapes_nn: %d failure(s)\n", failures);
    else printf("test_shapes_nn: all passed\n");
    return failures ? 1 : 0;
}
