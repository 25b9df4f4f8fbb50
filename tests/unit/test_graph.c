/* Graph IR: construction, topological order, validation errors, context
 * error messages and the allocator hook. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "context.h"
#include "graph.h"
#include "ops.h"

static uint32_t add_tensor(vkl_graph *g, const char *name, vkl_tensor_kind kind, const char *dims) {
    vkl_shape s = check_shape(&failures, g, dims, ',');
    uint32_t id = VKL_NONE;
    CHECK(vkl_graph_add_tensor(g, name, VKL_DTYPE_F32, kind, &s, &id) == VKL_OK);
    return id;
}

/* x -> Relu -> a -> Sqrt -> b, nodes added out of order. */
static void test_topo_order_unsorted(vkl_context *ctx) {
    vkl_graph *g;
    CHECK(vkl_graph_create(ctx, &g) == VKL_OK);
    uint32_t x = add_tensor(g, "x", VKL_TENSOR_INPUT, "N,4");
    uint32_t a = add_tensor(g, "a", VKL_TENSOR_ACTIVATION, "N,4");
    uint32_t b = add_tensor(g, "b", VKL_TENSOR_ACTIVATION, "N,4");
    CHECK(vkl_graph_add_input(g, x) == VKL_OK);
    CHECK(vkl_graph_add_output(g, b) == VKL_OK);
    uint32_t n0, n1;
    CHECK(vkl_graph_add_node(g, VKL_OP_SQRT, "second", &a, 1, &b, 1, NULL, 0, &n0) == VKL_OK);
    CHECK(vkl_graph_add_node(g, VKL_OP_RELU, "first", &x, 1, &a, 1, NULL, 0, &n1) == VKL_OK);
    uint32_t order[2], count = 0;
    CHECK(vkl_graph_topo_order(g->ctx, g, order, &count) == VKL_OK);
    CHECK(count == 2 && order[0] == n1 && order[1] == n0);
    if (vkl_op_info_get(VKL_OP_SQRT) && vkl_op_info_get(VKL_OP_RELU)) {
        CHECK(vkl_graph_validate(g) == VKL_OK);
        CHECK(vkl_graph_infer_shapes(g) == VKL_OK);
        char buf[64];
        CHECK(!strcmp(vkl_shape_str(g, &g->tensors[b].shape, buf, sizeof(buf)), "[N, 4]"));
    }
    /* a dead node leaves the graph: its output has no producer left */
    g->nodes[n1].dead = true;
    CHECK(vkl_graph_topo_order(g->ctx, g, order, &count) == VKL_OK && count == 1);
    vkl_graph_destroy(g);
}

static void test_cycle_is_reported(vkl_context *ctx) {
    vkl_graph *g;
    CHECK(vkl_graph_create(ctx, &g) == VKL_OK);
    uint32_t a = add_tensor(g, "a", VKL_TENSOR_ACTIVATION, "2");
    uint32_t b = add_tensor(g, "b", VKL_TENSOR_ACTIVATION, "2");
    CHECK(vkl_graph_add_node(g, VKL_OP_RELU, "r1", &a, 1, &b, 1, NULL, 0, NULL) == VKL_OK);
    CHECK(vkl_graph_add_node(g, VKL_OP_RELU, "r2", &b, 1, &a, 1, NULL, 0, NULL) == VKL_OK);
    uint32_t order[2], count;
    CHECK(vkl_graph_topo_order(g->ctx, g, order, &count) == VKL_ERR_FORMAT);
    CHECK(strstr(vkl_context_error(ctx), "cycle") != NULL);
    CHECK(strstr(vkl_context_error(ctx), "'r1'") != NULL);
    vkl_graph_destroy(g);
}

static void test_duplicate_and_double_producer(vkl_context *ctx) {
    vkl_graph *g;
    CHECK(vkl_graph_create(ctx, &g) == VKL_OK);
    uint32_t x = add_tensor(g, "x", VKL_TENSOR_INPUT, "2");
    uint32_t y = add_tensor(g, "y", VKL_TENSOR_ACTIVATION, "2");
    uint32_t dup;
    CHECK(vkl_graph_add_tensor(g, "x", VKL_DTYPE_F32, VKL_TENSOR_INPUT, NULL, &dup) == VKL_ERR_FORMAT);
    CHECK(strstr(vkl_context_error(ctx), "'x' defined twice") != NULL);
    CHECK(vkl_graph_add_tensor(g, "", VKL_DTYPE_F32, VKL_TENSOR_INPUT, NULL, &dup) == VKL_ERR_INVALID_ARGUMENT);
    CHECK(vkl_graph_add_node(g, VKL_OP_RELU, "r1", &x, 1, &y, 1, NULL, 0, NULL) == VKL_OK);
    CHECK(vkl_graph_add_node(g, VKL_OP_RELU, "r2", &x, 1, &y, 1, NULL, 0, NULL) == VKL_ERR_FORMAT);
    CHECK(strstr(vkl_context_error(ctx), "produced by two nodes") != NULL);
    CHECK(vkl_graph_add_node(g, VKL_OP_COUNT_ + 3, "bad", &x, 1, &y, 1, NULL, 0, NULL) == VKL_ERR_INVALID_ARGUMENT);
    vkl_graph_destroy(g);
}

static void test_validate_errors(vkl_context *ctx) {
    if (!vkl_op_info_get(VKL_OP_RELU) || !vkl_op_info_get(VKL_OP_SOFTMAX)) return;
    vkl_graph *g;
    CHECK(vkl_graph_create(ctx, &g) == VKL_OK);
    uint32_t x = add_tensor(g, "x", VKL_TENSOR_INPUT, "2");
    uint32_t y = add_tensor(g, "y", VKL_TENSOR_ACTIVATION, "2");
    uint32_t z = add_tensor(g, "z", VKL_TENSOR_ACTIVATION, "2");
    uint32_t w = add_tensor(g, "w", VKL_TENSOR_WEIGHT, "2");
    /* a weight with no bytes */
    CHECK(vkl_graph_validate(g) == VKL_ERR_FORMAT);
    CHECK(strstr(vkl_context_error(ctx), "weight 'w'") != NULL);
    float data[2] = {1, 2};
    CHECK(vkl_graph_set_data(g, w, data, sizeof(data), true) == VKL_OK);
    CHECK(vkl_graph_validate(g) == VKL_OK);
    /* wrong arity */
    uint32_t two[2] = {x, w};
    CHECK(vkl_graph_add_node(g, VKL_OP_RELU, "relu2", two, 2, &y, 1, NULL, 0, NULL) == VKL_OK);
    CHECK(vkl_graph_validate(g) == VKL_ERR_FORMAT);
    CHECK(strstr(vkl_context_error(ctx), "'relu2' (Relu) has 2 inputs") != NULL);
    g->nodes[g->n_nodes - 1].dead = true;
    g->tensors[y].producer = VKL_NONE;
    /* unknown attribute, and wrong kind */
    vkl_attr bogus = {.name = "bogus", .kind = VKL_ATTR_INT, .i = 1};
    CHECK(vkl_graph_add_node(g, VKL_OP_SOFTMAX, "sm", &x, 1, &z, 1, &bogus, 1, NULL) == VKL_OK);
    CHECK(vkl_graph_validate(g) == VKL_ERR_UNSUPPORTED);
    CHECK(strstr(vkl_context_error(ctx), "unknown attribute 'bogus'") != NULL);
    g->nodes[g->n_nodes - 1].dead = true;
    g->tensors[z].producer = VKL_NONE;
    vkl_attr axis_f = {.name = "axis", .kind = VKL_ATTR_FLOAT, .f = 1};
    uint32_t z2 = add_tensor(g, "z2", VKL_TENSOR_ACTIVATION, "2");
    CHECK(vkl_graph_add_node(g, VKL_OP_SOFTMAX, "sm2", &x, 1, &z2, 1, &axis_f, 1, NULL) == VKL_OK);
    CHECK(vkl_graph_validate(g) == VKL_ERR_FORMAT);
    CHECK(strstr(vkl_context_error(ctx), "attribute 'axis'") != NULL);
    /* attribute default from the schema */
    g->nodes[g->n_nodes - 1].n_attrs = 0;
    int64_t axis = 0;
    CHECK(vkl_op_attr_int(g, g->n_nodes - 1, "axis", &axis) == VKL_OK && axis == -1);
    CHECK(vkl_op_attr_int(g, g->n_nodes - 1, "nope", &axis) == VKL_ERR_NOT_FOUND);
    /* reading a tensor nothing produces */
    uint32_t ghost = add_tensor(g, "ghost", VKL_TENSOR_ACTIVATION, "2");
    uint32_t out = add_tensor(g, "out", VKL_TENSOR_ACTIVATION, "2");
    CHECK(vkl_graph_add_node(g, VKL_OP_RELU, "reads_ghost", &ghost, 1, &out, 1, NULL, 0, NULL) == VKL_OK);
    CHECK(vkl_graph_validate(g) == VKL_ERR_FORMAT);
    CHECK(strstr(vkl_context_error(ctx), "reads 'ghost'") != NULL);
    vkl_graph_destroy(g);
}

static void test_tensor_bytes(void) {
    size_t b = 0;
    CHECK(vkl_tensor_bytes(VKL_DTYPE_F32, 0, 10, &b) && b == 40);
    CHECK(vkl_tensor_bytes(VKL_DTYPE_BOOL, 0, 3, &b) && b == 3);
    CHECK(!vkl_tensor_bytes(VKL_DTYPE_F32, 0, -1, &b));
    CHECK(!vkl_tensor_bytes(VKL_DTYPE_F64, 0, INT64_MAX / 2, &b));
    CHECK(!vkl_tensor_bytes(VKL_DTYPE_INVALID, 0, 1, &b));
    CHECK(vkl_tensor_bytes(VKL_DTYPE_Q_E0M4, 128, 256, &b) && b == 2 * (64 + 4));
    CHECK(!vkl_tensor_bytes(VKL_DTYPE_Q_E0M4, 128, 100, &b)); /* not a whole group */
}

/* Counting allocator: every allocation goes through the hook. */
typedef struct counter {
    size_t mallocs, frees;
} counter;
static void *count_malloc(void *u, size_t n) {
    ((counter *)u)->mallocs++;
    return malloc(n);
}
static void *count_realloc(void *u, void *p, size_t n) {
    if (!p) ((counter *)u)->mallocs++;
    return realloc(p, n);
}
static void count_free(void *u, void *p) {
    if (p) ((counter *)u)->frees++;
    free(p);
}

static void test_allocator_hook_and_status(void) {
    counter c = {0};
    vkl_context_options o;
    vkl_context_options_init(&o);
    o.allocator = (vkl_allocator){&c, count_malloc, count_realloc, count_free};
    vkl_context *ctx;
    CHECK(vkl_context_create(&o, &ctx) == VKL_OK);
    vkl_graph *g;
    CHECK(vkl_graph_create(ctx, &g) == VKL_OK);
    add_tensor(g, "x", VKL_TENSOR_INPUT, "batch,seq");
    vkl_graph_destroy(g);
    vkl_context_destroy(ctx);
    CHECK(c.mallocs > 0 && c.mallocs == c.frees);
    /* a partial allocator is refused */
    o.allocator.free = NULL;
    CHECK(vkl_context_create(&o, &ctx) == VKL_ERR_INVALID_ARGUMENT);
    CHECK(!strcmp(vkl_status_name(VKL_ERR_FORMAT), "VKL_ERR_FORMAT"));
    CHECK(!strcmp(vkl_context_error(NULL), "no context (NULL)"));
}

static void test_error_prefix(vkl_context *ctx) {
    vkl_fail(ctx, VKL_ERR_SHAPE, "inner %d", 7);
    CHECK(vkl_fail_prefix(ctx, VKL_ERR_SHAPE, "outer") == VKL_ERR_SHAPE);
    CHECK(!strcmp(vkl_context_error(ctx), "outer: inner 7"));
    char big[2000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = 0;
    vkl_fail(ctx, VKL_ERR_SHAPE, "%s", big);
    vkl_fail_prefix(ctx, VKL_ERR_SHAPE, "%s", big);
    CHECK(strlen(vkl_context_error(ctx)) < VKL_ERROR_CAP);
}

int main(void) {
    vkl_context *ctx;
    if (vkl_context_create(NULL, &ctx)) return 2;
    test_topo_order_unsorted(ctx);
    test_cycle_is_reported(ctx);
    test_duplicate_and_double_producer(ctx);
    test_validate_errors(ctx);
    test_tensor_bytes();
    test_allocator_hook_and_status();
    test_error_prefix(ctx);
    vkl_context_destroy(ctx);
    if (failures) fprintf(stderr, "test_graph: %d failures\n", failures);
    return failures ? 1 : 0;
}
