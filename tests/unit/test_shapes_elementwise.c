/* Symbolic shape rules and value propagation of the elementwise ops: small
 * graphs with symbolic dims, checked as printed shapes and values, including
 * the integer shape-arithmetic chains (Transformer-Lite §2.1). */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "context.h"
#include "graph.h"
#include "ops.h"
#include "ops/op_defs.h"
#include "ops/shape_util.h"

/* Expressions separated by ';' ("seq;4;max(M, N)") as handles. */
static uint32_t parse_list(vkl_graph *g, const char *text, vkl_expr *out, uint32_t cap) {
    return check_exprs(&failures, g, text, ';', out, cap);
}

static uint32_t tensor(vkl_graph *g, const char *name, vkl_dtype dt, vkl_tensor_kind kind, const char *dims) {
    vkl_shape s = {0};
    uint32_t id = VKL_NONE;
    s.rank = parse_list(g, dims, s.dims, VKL_MAX_RANK);
    CHECK(vkl_graph_add_tensor(g, name, dt, kind, &s, &id) == VKL_OK);
    if (kind == VKL_TENSOR_INPUT) CHECK(vkl_graph_add_input(g, id) == VKL_OK);
    return id;
}

/* A constant weight of `n` int64 values converted to dtype (i64, i32, bool). */
static uint32_t weight(vkl_graph *g, const char *name, vkl_dtype dt, const char *dims, const int64_t *v, uint32_t n) {
    uint32_t id = tensor(g, name, dt, VKL_TENSOR_WEIGHT, dims);
    unsigned char bytes[64 * 8];
    size_t es = vkl_dtype_size(dt);
    for (uint32_t i = 0; i < n; i++) {
        int32_t v32 = (int32_t)v[i];
        uint8_t v8 = (uint8_t)v[i];
        memcpy(bytes + i * es, es == 8 ? (const void *)&v[i] : es == 4 ? (const void *)&v32 : &v8, es);
    }
    CHECK(vkl_graph_set_data(g, id, bytes, n * es, true) == VKL_OK);
    return id;
}

/* An i64 activation of shape [n] with a known symbolic value, as a Shape
 * node would leave it. */
static uint32_t shape_value(vkl_graph *g, const char *name, const char *value) {
    vkl_expr v[VKL_MAX_VALUE_ELEMS];
    uint32_t n = parse_list(g, value, v, VKL_MAX_VALUE_ELEMS);
    char dims[16];
    snprintf(dims, sizeof(dims), "%u", n);
    uint32_t id = tensor(g, name, VKL_DTYPE_I64, VKL_TENSOR_ACTIVATION, dims);
    CHECK(vkl_graph_set_value(g, id, v, n) == VKL_OK);
    return id;
}

/* Adds node op(ins) -> outs; new output tensors are named by the caller. */
static void node(vkl_graph *g, vkl_op op, const uint32_t *ins, uint32_t ni, const char *const *outs, uint32_t no,
                 const vkl_attr *attrs, uint32_t na) {
    uint32_t out_ids[4];
    for (uint32_t k = 0; k < no; k++) {
        out_ids[k] = VKL_NONE;
        if (outs[k]) CHECK(vkl_graph_add_tensor(g, outs[k], VKL_DTYPE_F32, VKL_TENSOR_ACTIVATION, NULL, &out_ids[k]) == VKL_OK);
    }
    CHECK(vkl_graph_add_node(g, op, outs[0], ins, ni, out_ids, no, attrs, na, NULL) == VKL_OK);
}

#define NODE1(g, op, out, ...)                                                                          \
    do {                                                                                                \
        const uint32_t ins_[] = {__VA_ARGS__};                                                          \
        const char *outs_[] = {out};                                                                    \
        node(g, op, ins_, (uint32_t)(sizeof(ins_) / sizeof(ins_[0])), outs_, 1, NULL, 0);               \
    } while (0)

static uint32_t id_of(vkl_graph *g, const char *name) {
    uint32_t id = VKL_NONE;
    CHECK(vkl_graph_find_tensor(g, name, &id) == VKL_OK);
    return id;
}

static vkl_status infer(vkl_graph *g) {
    vkl_status st = vkl_graph_validate(g);
    if (!st) st = vkl_graph_infer_shapes(g);
    return st;
}

#define SHAPE(g, name, dt, dims) check_shape_exprs(&failures, __FILE__, __LINE__, g, name, dt, dims, ';')
#define VALUE(g, name, values) check_value_exprs(&failures, __FILE__, __LINE__, g, name, values, ';')

static void test_broadcast_shapes(vkl_context *ctx) {
    vkl_graph *g;
    CHECK(vkl_graph_create(ctx, &g) == VKL_OK);
    uint32_t x = tensor(g, "x", VKL_DTYPE_F32, VKL_TENSOR_INPUT, "seq;1;64");
    uint32_t y = tensor(g, "y", VKL_DTYPE_F32, VKL_TENSOR_INPUT, "4;1");
    uint32_t h = tensor(g, "h", VKL_DTYPE_F32, VKL_TENSOR_INPUT, "B;seq;H");
    uint32_t bias = tensor(g, "bias", VKL_DTYPE_F32, VKL_TENSOR_INPUT, "H");
    uint32_t n = tensor(g, "n", VKL_DTYPE_F32, VKL_TENSOR_INPUT, "N");
    uint32_t m = tensor(g, "m", VKL_DTYPE_F32, VKL_TENSOR_INPUT, "M");
    uint32_t cond = tensor(g, "cond", VKL_DTYPE_BOOL, VKL_TENSOR_INPUT, "1;seq");
    uint32_t xb = tensor(g, "xb", VKL_DTYPE_F32, VKL_TENSOR_INPUT, "B;1;1");
    uint32_t ys = tensor(g, "ys", VKL_DTYPE_F32, VKL_TENSOR_INPUT, "seq");
    uint32_t half = tensor(g, "half", VKL_DTYPE_F16, VKL_TENSOR_INPUT, "B;seq;H");
    uint32_t e = tensor(g, "e", VKL_DTYPE_I64, VKL_TENSOR_INPUT, "");
    uint32_t c1 = tensor(g, "c1", VKL_DTYPE_F32, VKL_TENSOR_INPUT, "seq;1");
    uint32_t c2 = tensor(g, "c2", VKL_DTYPE_F32, VKL_TENSOR_INPUT, "1;H");
    uint32_t c3 = tensor(g, "c3", VKL_DTYPE_F32, VKL_TENSOR_INPUT, "2;1;1");
    uint32_t empty = tensor(g, "empty", VKL_DTYPE_F32, VKL_TENSOR_INPUT, "0;H");
    NODE1(g, VKL_OP_ADD, "add", x, y);
    NODE1(g, VKL_OP_MUL, "bias_mul", h, bias);
    NODE1(g, VKL_OP_SUB, "nm", n, m);
    NODE1(g, VKL_OP_GREATER, "gt", h, bias);
    NODE1(g, VKL_OP_WHERE, "where", cond, xb, ys);
    NODE1(g, VKL_OP_MAX, "max3", c1, c2, c3);
    NODE1(g, VKL_OP_MIN, "min1", c1);
    NODE1(g, VKL_OP_POW, "pow", half, e);
    NODE1(g, VKL_OP_SILU_MUL, "silu", half, half);
    NODE1(g, VKL_OP_DIV, "empty_div", empty, bias);
    CHECK(infer(g) == VKL_OK);
    SHAPE(g, "add", VKL_DTYPE_F32, "seq;4;64");
    SHAPE(g, "bias_mul", VKL_DTYPE_F32, "B;seq;H");
    SHAPE(g, "nm", VKL_DTYPE_F32, "max(N, M)"); /* checked again by the kernel at run time */
    SHAPE(g, "gt", VKL_DTYPE_BOOL, "B;seq;H");
    SHAPE(g, "where", VKL_DTYPE_F32, "B;1;seq");
    SHAPE(g, "max3", VKL_DTYPE_F32, "2;seq;H");
    SHAPE(g, "min1", VKL_DTYPE_F32, "seq;1");
    SHAPE(g, "pow", VKL_DTYPE_F16, "B;seq;H");
    SHAPE(g, "silu", VKL_DTYPE_F16, "B;seq;H");
    SHAPE(g, "empty_div", VKL_DTYPE_F32, "0;H");
    vkl_graph_destroy(g);
}

static void test_unary_shapes(vkl_context *ctx) {
    vkl_graph *g;
    CHECK(vkl_graph_create(ctx, &g) == VKL_OK);
    uint32_t x = tensor(g, "x", VKL_DTYPE_F16, VKL_TENSOR_INPUT, "N;4*K");
    uint32_t like = tensor(g, "like", VKL_DTYPE_BF16, VKL_TENSOR_INPUT, "1");
    uint32_t lo = tensor(g, "lo", VKL_DTYPE_F16, VKL_TENSOR_INPUT, "");
    uint32_t b = tensor(g, "b", VKL_DTYPE_BOOL, VKL_TENSOR_INPUT, "N");
    vkl_attr to_i32 = {.name = "to", .kind = VKL_ATTR_INT, .i = VKL_DTYPE_I32};
    vkl_attr tanh_attr = {.name = "approximate", .kind = VKL_ATTR_STRING, .s = "tanh"};
    vkl_attr seed = {.name = "seed", .kind = VKL_ATTR_INT, .i = 3};
    const char *cast_out[] = {"cast"}, *gelu_out[] = {"gelu"}, *drop_out[] = {"drop", "mask"};
    node(g, VKL_OP_CAST, &x, 1, cast_out, 1, &to_i32, 1);
    node(g, VKL_OP_GELU, &x, 1, gelu_out, 1, &tanh_attr, 1);
    node(g, VKL_OP_DROPOUT, &x, 1, drop_out, 2, &seed, 1);
    NODE1(g, VKL_OP_SQRT, "sqrt", x);
    NODE1(g, VKL_OP_CAST_LIKE, "cast_like", x, like);
    NODE1(g, VKL_OP_CLIP, "clip", x, lo, VKL_NONE);
    NODE1(g, VKL_OP_NOT, "not", b);
    NODE1(g, VKL_OP_IDENTITY, "ident", b);
    CHECK(infer(g) == VKL_OK);
    SHAPE(g, "cast", VKL_DTYPE_I32, "N;4*K");
    SHAPE(g, "gelu", VKL_DTYPE_F16, "N;4*K");
    SHAPE(g, "drop", VKL_DTYPE_F16, "N;4*K");
    SHAPE(g, "mask", VKL_DTYPE_BOOL, "N;4*K");
    SHAPE(g, "sqrt", VKL_DTYPE_F16, "N;4*K");
    SHAPE(g, "cast_like", VKL_DTYPE_BF16, "N;4*K");
    SHAPE(g, "clip", VKL_DTYPE_F16, "N;4*K");
    SHAPE(g, "not", VKL_DTYPE_BOOL, "N");
    SHAPE(g, "ident", VKL_DTYPE_BOOL, "N");
    vkl_graph_destroy(g);
}

/* One node that must fail inference with `want`, the message naming `needle`. */
static void expect_error(vkl_context *ctx, vkl_op op, vkl_dtype dt0, const char *dims0, vkl_dtype dt1,
                         const char *dims1, const vkl_attr *attr, vkl_status want, const char *needle, int line) {
    vkl_graph *g;
    CHECK(vkl_graph_create(ctx, &g) == VKL_OK);
    uint32_t ins[2] = {tensor(g, "a", dt0, VKL_TENSOR_INPUT, dims0), VKL_NONE};
    if (dt1 != VKL_DTYPE_INVALID) ins[1] = tensor(g, "b", dt1, VKL_TENSOR_INPUT, dims1);
    const char *outs[] = {"out"};
    node(g, op, ins, dt1 != VKL_DTYPE_INVALID ? 2 : 1, outs, 1, attr, attr ? 1 : 0);
    if (!check_status_is(__FILE__, line, "infer", ctx, infer(g), want, needle)) failures++;
    vkl_graph_destroy(g);
}

static void test_errors(vkl_context *ctx) {
    const vkl_dtype F32 = VKL_DTYPE_F32, NONE = VKL_DTYPE_INVALID;
    vkl_attr bad_gelu = {.name = "approximate", .kind = VKL_ATTR_STRING, .s = "fast"};
    vkl_attr to_q = {.name = "to", .kind = VKL_ATTR_INT, .i = VKL_DTYPE_Q_INT4};
    vkl_attr to_bad = {.name = "to", .kind = VKL_ATTR_INT, .i = 77};
    expect_error(ctx, VKL_OP_ADD, F32, "seq;3", F32, "4", NULL, VKL_ERR_SHAPE, "cannot broadcast", __LINE__);
    expect_error(ctx, VKL_OP_MUL, F32, "3", VKL_DTYPE_F16, "3", NULL, VKL_ERR_SHAPE, "must match", __LINE__);
    expect_error(ctx, VKL_OP_SQRT, VKL_DTYPE_I64, "3", NONE, "", NULL, VKL_ERR_UNSUPPORTED, "dtype i64", __LINE__);
    expect_error(ctx, VKL_OP_AND, F32, "3", F32, "3", NULL, VKL_ERR_UNSUPPORTED, "And", __LINE__);
    expect_error(ctx, VKL_OP_GELU, F32, "3", NONE, "", &bad_gelu, VKL_ERR_FORMAT, "fast", __LINE__);
    expect_error(ctx, VKL_OP_CAST, F32, "3", NONE, "", &to_q, VKL_ERR_UNSUPPORTED, "int4", __LINE__);
    expect_error(ctx, VKL_OP_CAST, F32, "3", NONE, "", &to_bad, VKL_ERR_FORMAT, "77", __LINE__);
    expect_error(ctx, VKL_OP_CLIP, F32, "3", F32, "2", NULL, VKL_ERR_SHAPE, "scalar", __LINE__);
    expect_error(ctx, VKL_OP_SILU_MUL, VKL_DTYPE_I32, "3", VKL_DTYPE_I32, "3", NULL, VKL_ERR_UNSUPPORTED, "SiluMul",
                 __LINE__);
    expect_error(ctx, VKL_OP_WHERE, F32, "3", F32, "3", NULL, VKL_ERR_FORMAT, "inputs", __LINE__); /* arity */
}

/* Integer shape arithmetic on a Shape-like value [B, seq, 4096]. */
static void test_value_arithmetic(vkl_context *ctx) {
    vkl_graph *g;
    CHECK(vkl_graph_create(ctx, &g) == VKL_OK);
    const int64_t one[] = {1}, k112[] = {1, 1, 2}, k32[] = {32}, k64[] = {64}, neg1[] = {-1}, k4096[] = {4096};
    uint32_t shp = shape_value(g, "shp", "B;seq;4096");
    uint32_t w1 = weight(g, "one", VKL_DTYPE_I64, "", one, 1);
    uint32_t w112 = weight(g, "k112", VKL_DTYPE_I64, "3", k112, 3);
    uint32_t w32 = weight(g, "k32", VKL_DTYPE_I64, "", k32, 1);
    uint32_t w64 = weight(g, "k64", VKL_DTYPE_I64, "1", k64, 1);
    uint32_t wneg = weight(g, "neg1", VKL_DTYPE_I64, "1", neg1, 1);
    uint32_t w4096 = weight(g, "k4096", VKL_DTYPE_I64, "", k4096, 1);
    NODE1(g, VKL_OP_ADD, "plus1", shp, w1); /* [3] + scalar */
    NODE1(g, VKL_OP_MUL, "times", shp, w112);
    NODE1(g, VKL_OP_DIV, "by32", shp, w32);
    NODE1(g, VKL_OP_DIV, "self_div", shp, shp);
    NODE1(g, VKL_OP_SUB, "self_sub", shp, shp);
    NODE1(g, VKL_OP_NEG, "neg", shp);
    NODE1(g, VKL_OP_ABS, "abs_neg", id_of(g, "neg")); /* Abs(Neg(shp)): -B <= 0 is provable */
    NODE1(g, VKL_OP_MAX, "max1", shp, w1);
    NODE1(g, VKL_OP_MIN, "min64", shp, w64);
    NODE1(g, VKL_OP_EQUAL, "eq_self", shp, shp);
    NODE1(g, VKL_OP_EQUAL, "eq_neg", shp, wneg);   /* B, seq >= 0 > -1: all false */
    NODE1(g, VKL_OP_EQUAL, "eq_4096", shp, w4096); /* B == 4096 unknown: no value */
    NODE1(g, VKL_OP_LESS, "lt_plus1", shp, id_of(g, "plus1"));
    NODE1(g, VKL_OP_IDENTITY, "ident", shp);
    CHECK(infer(g) == VKL_OK);
    VALUE(g, "plus1", "B+1;seq+1;4097");
    VALUE(g, "times", "B;seq;8192");
    VALUE(g, "by32", "B//32;seq//32;128");
    VALUE(g, "self_div", "1;1;1");
    VALUE(g, "self_sub", "0;0;0");
    VALUE(g, "neg", "-B;-seq;-4096");
    VALUE(g, "abs_neg", "B;seq;4096");
    VALUE(g, "max1", "max(B, 1);max(seq, 1);4096");
    VALUE(g, "min64", "min(B, 64);min(seq, 64);64");
    VALUE(g, "eq_self", "1;1;1");
    SHAPE(g, "eq_self", VKL_DTYPE_BOOL, "3");
    VALUE(g, "eq_neg", "0;0;0");
    VALUE(g, "eq_4096", NULL);
    VALUE(g, "lt_plus1", "1;1;1");
    VALUE(g, "ident", "B;seq;4096");
    vkl_graph_destroy(g);
}

/* Constants fold with C semantics; Where picks by a constant condition;
 * casts wrap constants and keep symbols. */
static void test_value_select_and_cast(vkl_context *ctx) {
    vkl_graph *g;
    CHECK(vkl_graph_create(ctx, &g) == VKL_OK);
    const int64_t a[] = {-7, 300}, b[] = {2, 7}, c[] = {1, 0, 1}, y[] = {7, 8, 9}, two[] = {2};
    uint32_t shp = shape_value(g, "shp", "B;seq;4096");
    uint32_t wa = weight(g, "a", VKL_DTYPE_I64, "2", a, 2);
    uint32_t wb = weight(g, "b", VKL_DTYPE_I64, "2", b, 2);
    uint32_t wc = weight(g, "c", VKL_DTYPE_BOOL, "3", c, 3);
    uint32_t wy = weight(g, "y", VKL_DTYPE_I64, "3", y, 3);
    uint32_t w2 = weight(g, "two", VKL_DTYPE_I32, "1", two, 1);
    vkl_attr to_u8 = {.name = "to", .kind = VKL_ATTR_INT, .i = VKL_DTYPE_U8};
    vkl_attr to_i32 = {.name = "to", .kind = VKL_ATTR_INT, .i = VKL_DTYPE_I32};
    vkl_attr to_i64 = {.name = "to", .kind = VKL_ATTR_INT, .i = VKL_DTYPE_I64};
    vkl_attr to_bool = {.name = "to", .kind = VKL_ATTR_INT, .i = VKL_DTYPE_BOOL};
    const char *o_u8[] = {"a_u8"}, *o_i32[] = {"shp_i32"}, *o_back[] = {"back"}, *o_bool[] = {"shp_bool"};
    NODE1(g, VKL_OP_DIV, "trunc_div", wa, wb); /* -7 / 2 = -3 (truncation), 300 / 7 = 42 */
    NODE1(g, VKL_OP_WHERE, "where", wc, shp, wy);
    node(g, VKL_OP_CAST, &wa, 1, o_u8, 1, &to_u8, 1);
    /* Cast -> Mul -> Cast -> Div chain through i32: (B*2)/2 is exactly B */
    node(g, VKL_OP_CAST, &shp, 1, o_i32, 1, &to_i32, 1);
    NODE1(g, VKL_OP_MUL, "doubled", id_of(g, "shp_i32"), w2);
    uint32_t doubled = id_of(g, "doubled");
    node(g, VKL_OP_CAST, &doubled, 1, o_back, 1, &to_i64, 1);
    uint32_t back = id_of(g, "back");
    uint32_t two64 = weight(g, "two64", VKL_DTYPE_I64, "", two, 1);
    NODE1(g, VKL_OP_DIV, "halved", back, two64);
    node(g, VKL_OP_CAST, &shp, 1, o_bool, 1, &to_bool, 1); /* B != 0 is not provable */
    NODE1(g, VKL_OP_CAST_LIKE, "like_i32", shp, w2);
    CHECK(infer(g) == VKL_OK);
    VALUE(g, "trunc_div", "-3;42");
    VALUE(g, "where", "B;8;4096");
    VALUE(g, "a_u8", "249;44");
    SHAPE(g, "a_u8", VKL_DTYPE_U8, "2");
    VALUE(g, "shp_i32", "B;seq;4096");
    VALUE(g, "doubled", "2*B;2*seq;8192");
    VALUE(g, "halved", "B;seq;4096");
    VALUE(g, "shp_bool", NULL);
    VALUE(g, "like_i32", "B;seq;4096");
    SHAPE(g, "like_i32", VKL_DTYPE_I32, "3");
    vkl_graph_destroy(g);
}

/* The table wiring: each op's entry is the family's definition, with the
 * ONNX name, domain, arity and attribute defaults. */
static void test_table_entries(void) {
    static const struct {
        vkl_op op;
        const vkl_op_info *info;
        const char *name, *domain;
        int min_in, max_in, max_out;
    } want[] = {
        {VKL_OP_ADD, &vkl_op_info_add, "Add", "", 2, 2, 1},
        {VKL_OP_GREATER_OR_EQUAL, &vkl_op_info_greater_or_equal, "GreaterOrEqual", "", 2, 2, 1},
        {VKL_OP_MAX, &vkl_op_info_max, "Max", "", 1, VKL_VARIADIC, 1},
        {VKL_OP_WHERE, &vkl_op_info_where, "Where", "", 3, 3, 1},
        {VKL_OP_SILU_MUL, &vkl_op_info_silu_mul, "SiluMul", "vkllm", 2, 2, 1},
        {VKL_OP_CLIP, &vkl_op_info_clip, "Clip", "", 1, 3, 1},
        {VKL_OP_CAST_LIKE, &vkl_op_info_cast_like, "CastLike", "", 2, 2, 1},
        {VKL_OP_DROPOUT, &vkl_op_info_dropout, "Dropout", "", 1, 3, 2},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const vkl_op_info *info = vkl_op_info_get(want[i].op);
        vkl_op found;
        CHECK(info == want[i].info);
        if (info != want[i].info) continue;
        CHECK(!strcmp(info->name, want[i].name) && !strcmp(info->domain, want[i].domain));
        CHECK(info->min_inputs == want[i].min_in && info->max_inputs == want[i].max_in);
        CHECK(info->max_outputs == want[i].max_out && info->inplace_input == -1 && !info->shape_source);
        CHECK(vkl_op_find(want[i].domain, want[i].name, &found) && found == want[i].op);
    }
    CHECK(vkl_op_info_cast.n_attrs == 2 && !strcmp(vkl_op_info_cast.attrs[1].name, "to") &&
          vkl_op_info_cast.attrs[1].required && vkl_op_info_cast.attrs[0].def_i == 1);
    CHECK(vkl_op_info_gelu.n_attrs == 1 && !strcmp(vkl_op_info_gelu.attrs[0].def_s, "none"));
}

int main(void) {
    vkl_context *ctx;
    if (vkl_context_create(NULL, &ctx)) return 2;
    test_table_entries();
    test_broadcast_shapes(ctx);
    test_unary_shapes(ctx);
    test_errors(ctx);
    test_value_arithmetic(ctx);
    test_value_select_and_cast(ctx);
    vkl_context_destroy(ctx);
    if (failures) fprintf(stderr, "%d failure(s)\n", failures);
    else printf("test_shapes_elementwise: all passed\n");
    return failures ? 1 : 0;
}
