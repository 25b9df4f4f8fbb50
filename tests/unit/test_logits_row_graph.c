/* vkl_logits_row_graph on small graphs: where it narrows (a Gemma-style
 * softcapped head: RMSNorm, MatMul, Div, Tanh, Mul; a norm read by another
 * output stays whole), the shapes it re-infers at one row, the base graph
 * left as it was, and the fallbacks (no graph, a debug log) when the logits
 * do not come from a matrix product by a weight through row-wise ops. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "graph.h"
#include "logits_row.h"
#include "ops.h"

#define CHECK_SHAPE(g, name, dt, want) (checks++, check_shape_is(&failures, __FILE__, __LINE__, g, name, dt, want))

static const float w_data[8 * 16] = {0};
static const float scale_data[8] = {1, 1, 1, 1, 1, 1, 1, 1};
static const float cap_data[1] = {30};

static uint32_t weight(vkl_graph *g, const char *name, const char *dims, const float *data, size_t bytes) {
    vkl_shape s = check_shape(&failures, g, dims, ',');
    uint32_t id = VKL_NONE;
    CHECK(vkl_graph_add_tensor(g, name, VKL_DTYPE_F32, VKL_TENSOR_WEIGHT, &s, &id) == VKL_OK);
    CHECK(vkl_graph_set_data(g, id, data, bytes, false) == VKL_OK);
    return id;
}

static uint32_t input(vkl_graph *g, const char *name, const char *dims) {
    vkl_shape s = check_shape(&failures, g, dims, ',');
    uint32_t id = VKL_NONE;
    CHECK(vkl_graph_add_tensor(g, name, VKL_DTYPE_F32, VKL_TENSOR_INPUT, &s, &id) == VKL_OK);
    CHECK(vkl_graph_add_input(g, id) == VKL_OK);
    return id;
}

/* op(a, b) -> a new activation `out`; its index. */
static uint32_t node(vkl_graph *g, vkl_op op, uint32_t a, uint32_t b, const char *out) {
    uint32_t id = VKL_NONE, in[2] = {a, b};
    CHECK(vkl_graph_add_tensor(g, out, VKL_DTYPE_F32, VKL_TENSOR_ACTIVATION, NULL, &id) == VKL_OK);
    CHECK(vkl_graph_add_node(g, op, out, in, b == VKL_NONE ? 1 : 2, &id, 1, NULL, 0, NULL) == VKL_OK);
    return id;
}

typedef enum head { SOFTCAP, NORM_SHARED, RESHAPED, TWO_ROW_INPUTS, NO_MATMUL } head;

/* hidden [1, seq, 8] -> RMSNorm -> MatMul [8, 16] -> (the head's ending) -> logits */
static vkl_graph *build(vkl_context *ctx, head kind) {
    vkl_graph *g;
    if (vkl_graph_create(ctx, &g)) return NULL;
    uint32_t h = input(g, "hidden", "1, seq, 8");
    uint32_t scale = weight(g, "scale", "8", scale_data, sizeof(scale_data));
    uint32_t w = weight(g, "w", "8, 16", w_data, sizeof(w_data));
    uint32_t cap = weight(g, "cap", "", cap_data, sizeof(cap_data));
    uint32_t n = node(g, VKL_OP_RMS_NORM, h, scale, "norm"), logits;
    if (kind == NO_MATMUL) {
        logits = node(g, VKL_OP_TANH, n, VKL_NONE, "logits");
    } else {
        uint32_t y = node(g, VKL_OP_MAT_MUL, n, w, "lm_head");
        if (kind == SOFTCAP) {
            uint32_t a = node(g, VKL_OP_DIV, y, cap, "capped");
            uint32_t b = node(g, VKL_OP_TANH, a, VKL_NONE, "tanh");
            logits = node(g, VKL_OP_MUL, b, cap, "logits");
        } else if (kind == RESHAPED) {
            uint32_t shape = VKL_NONE;
            vkl_shape s1 = check_shape(&failures, g, "3", ',');
            vkl_expr v[3];
            check_exprs(&failures, g, "1;seq;16", ';', v, 3);
            CHECK(vkl_graph_add_tensor(g, "shape", VKL_DTYPE_I64, VKL_TENSOR_ACTIVATION, &s1, &shape) == VKL_OK);
            CHECK(vkl_graph_set_value(g, shape, v, 3) == VKL_OK);
            logits = node(g, VKL_OP_RESHAPE, y, shape, "logits");
        } else if (kind == TWO_ROW_INPUTS) {
            logits = node(g, VKL_OP_ADD, y, input(g, "bias_rows", "1, seq, 16"), "logits");
        } else {
            logits = node(g, VKL_OP_MUL, y, cap, "logits");
        }
    }
    CHECK(vkl_graph_add_output(g, logits) == VKL_OK);
    if (kind == NORM_SHARED) CHECK(vkl_graph_add_output(g, n) == VKL_OK);
    CHECK_OK(ctx, vkl_graph_infer_shapes(g));
    return g;
}

static uint32_t tensor_id(const vkl_graph *g, const char *name) {
    uint32_t id = VKL_NONE;
    vkl_graph_find_tensor(g, name, &id);
    return id;
}

/* The tensor the (one) Gather narrows. */
static const char *gathered_from(const vkl_graph *d) {
    for (uint32_t i = 0; i < d->n_nodes; i++)
        if (d->nodes[i].op == VKL_OP_GATHER) return d->tensors[d->nodes[i].inputs[0]].name;
    return "(none)";
}

static void narrows(vkl_context *ctx, head kind, const char *from) {
    vkl_graph *g = build(ctx, kind), *d = NULL;
    REQUIRE(g, "build");
    uint32_t row = VKL_NONE;
    CHECK_OK(ctx, vkl_logits_row_graph(g, 0, &d, &row));
    CHECKF(d != NULL, "head %d: not narrowed", (int)kind);
    if (d) {
        CHECK(d->base == g && d->syms == g->syms);
        CHECK(row == d->n_inputs - 1 && !strcmp(d->tensors[d->inputs[row]].name, VKL_LOGITS_ROW_INPUT));
        CHECKF(!strcmp(gathered_from(d), from), "head %d: narrows '%s', not '%s'", (int)kind, gathered_from(d), from);
        CHECK_SHAPE(d, "logits", VKL_DTYPE_F32, "[1, 1, 16]");
        CHECK_SHAPE(d, "lm_head", VKL_DTYPE_F32, "[1, 1, 16]");
        /* what the Gather does not reach keeps its rows */
        CHECK_SHAPE(d, "hidden", VKL_DTYPE_F32, "[1, seq, 8]");
        if (kind == NORM_SHARED) CHECK_SHAPE(d, "norm", VKL_DTYPE_F32, "[1, seq, 8]");
        CHECK_OK(ctx, vkl_graph_validate(d));
    }
    /* the base is as it was */
    CHECK_SHAPE(g, "logits", VKL_DTYPE_F32, "[1, seq, 16]");
    CHECK_SHAPE(g, "lm_head", VKL_DTYPE_F32, "[1, seq, 16]");
    CHECK(g->n_inputs == 1 && g->nodes[g->tensors[tensor_id(g, "lm_head")].producer].inputs[0] == tensor_id(g, "norm"));
    vkl_graph_destroy(d);
    vkl_graph_destroy(g);
}

static void falls_back(vkl_context *ctx, head kind) {
    vkl_graph *g = build(ctx, kind), *d = (vkl_graph *)1;
    REQUIRE(g, "build");
    uint32_t row = 0;
    CHECK_OK(ctx, vkl_logits_row_graph(g, 0, &d, &row));
    CHECKF(d == NULL && row == VKL_NONE, "head %d: narrowed", (int)kind);
    vkl_graph_destroy(d);
    vkl_graph_destroy(g);
}

int main(void) {
    vkl_context *ctx;
    if (vkl_context_create(NULL, &ctx)) return 2;
    narrows(ctx, SOFTCAP, "hidden");
    narrows(ctx, NORM_SHARED, "norm");
    falls_back(ctx, RESHAPED);
    falls_back(ctx, TWO_ROW_INPUTS);
    falls_back(ctx, NO_MATMUL);
    vkl_context_destroy(ctx);
    return check_finish("test_logits_row_graph");
}
