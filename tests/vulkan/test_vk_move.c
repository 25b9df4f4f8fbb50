/* The Vulkan movement and indexing kernels against the ref backend, byte
 * for byte, where tests/ops/cases (small, numpy-computed) does not reach:
 * tensors large enough to need a 2D grid (more than 65535 workgroups of
 * 256), a 70000-row gather; Concat and Split of more pieces
 * than one dispatch binds, with pieces sharing words; reversed (negative
 * step) slices of 1-, 2- and 8-byte elements; Slice bounds that are
 * shape values under the binding; run-time Trilu k of several integer
 * types and sizes; 8-byte and sub-word gathers; ScatterND with repeated
 * indices in every reduction, on slices that are whole words and on ones
 * that are not, 64-bit integer arithmetic included. Random data, each op
 * one graph, outputs poisoned by the runner; every output must equal ref's
 * bytes (these ops move bytes; ScatterND's arithmetic rounds as ref's).
 * Validation on unless VKL_VK_VALIDATION=0; any message fails. No Vulkan:
 * exit 77 (ctest: skipped). */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_rng.h"
#include "context.h"
#include "graph.h"
#include "ops.h"
#include "ops/shape_util.h"
#include "run_once.h"
#include "vulkan_start.h"

#define MAX_IN 20
#define MAX_OUT 12

/* One case under construction: a one-node graph and its graph inputs' bytes. */
typedef struct builder {
    vkl_context *ctx;
    vkl_graph *g;
    rng *r;
    uint32_t ins[MAX_IN], n_in;
    vkl_host_tensor host[MAX_IN];
    uint32_t n_host;
    vkl_status st;
} builder;

static void begin(builder *b, vkl_context *ctx, rng *r) {
    memset(b, 0, sizeof(*b));
    b->ctx = ctx;
    b->r = r;
    b->st = vkl_graph_create(ctx, &b->g);
}

/* dims as a shape; sym[d] non-NULL: that dim is the named symbol */
static uint32_t tensor(builder *b, vkl_dtype dt, vkl_tensor_kind kind, uint32_t rank, const int64_t *dims,
                       const char *const *sym) {
    char name[16];
    vkl_shape s;
    uint32_t id = VKL_NONE;
    snprintf(name, sizeof(name), "in%u", b->n_in);
    if (!b->st) b->st = vkl_shape_from_ints(b->g, dims, rank, &s);
    for (uint32_t d = 0; !b->st && sym && d < rank; d++)
        if (sym[d]) b->st = vkl_expr_parse(b->g->syms, sym[d], &s.dims[d]);
    if (!b->st) b->st = vkl_graph_add_tensor(b->g, name, dt, kind, &s, &id);
    b->ins[b->n_in++] = id;
    return id;
}

static size_t count_of(uint32_t rank, const int64_t *dims) {
    size_t n = 1;
    for (uint32_t d = 0; d < rank; d++) n *= (size_t)dims[d];
    return n;
}

/* A graph input of random values: floats finite, bools 0/1, integers any bits. */
static void data(builder *b, vkl_dtype dt, uint32_t rank, const int64_t *dims, const char *const *sym) {
    uint32_t id = tensor(b, dt, VKL_TENSOR_INPUT, rank, dims, sym);
    if (!b->st) b->st = vkl_graph_add_input(b->g, id);
    const size_t n = count_of(rank, dims), es = vkl_dtype_size(dt);
    vkl_host_tensor *h = &b->host[b->n_host++];
    h->dtype = dt;
    h->rank = rank;
    memcpy(h->dims, dims, rank * sizeof(int64_t));
    h->nbytes = n * es;
    h->data = malloc(h->nbytes + 1);
    unsigned char *p = h->data;
    for (size_t i = 0; i < n; i++) {
        const float f = rnd_gauss(b->r) * 4;
        uint64_t bits = ((uint64_t)rnd_u32(b->r) << 32) | rnd_u32(b->r);
        switch (dt) {
        case VKL_DTYPE_F32: memcpy(p + 4 * i, &f, 4); break;
        case VKL_DTYPE_F64: { double x = f; memcpy(p + 8 * i, &x, 8); break; }
        case VKL_DTYPE_F16: { uint16_t x = vkl_f32_to_f16(f); memcpy(p + 2 * i, &x, 2); break; }
        case VKL_DTYPE_BF16: { uint16_t x = vkl_f32_to_bf16(f); memcpy(p + 2 * i, &x, 2); break; }
        case VKL_DTYPE_BOOL: p[i] = bits & 1; break;
        default: memcpy(p + es * i, &bits, es); break;
        }
    }
}

/* A graph input of integers in [lo, hi) (indices, a run-time k). */
static void ints_in(builder *b, vkl_dtype dt, uint32_t rank, const int64_t *dims, int64_t lo, int64_t hi) {
    uint32_t id = tensor(b, dt, VKL_TENSOR_INPUT, rank, dims, NULL);
    if (!b->st) b->st = vkl_graph_add_input(b->g, id);
    const size_t n = count_of(rank, dims), es = vkl_dtype_size(dt);
    vkl_host_tensor *h = &b->host[b->n_host++];
    h->dtype = dt;
    h->rank = rank;
    memcpy(h->dims, dims, rank * sizeof(int64_t));
    h->nbytes = n * es;
    h->data = malloc(h->nbytes + 1);
    for (size_t i = 0; i < n; i++) {
        const int64_t v = lo + (int64_t)(((uint64_t)rnd_u32(b->r) << 32 | rnd_u32(b->r)) % (uint64_t)(hi - lo));
        if (es == 8) memcpy((char *)h->data + 8 * i, &v, 8);
        else { int32_t w = (int32_t)v; memcpy((char *)h->data + es * i, &w, es); }
    }
}

/* A constant i64 list (a weight). */
static void consts(builder *b, uint32_t n, const int64_t *v) {
    const int64_t dims[1] = {n};
    uint32_t id = tensor(b, VKL_DTYPE_I64, VKL_TENSOR_WEIGHT, 1, dims, NULL);
    if (!b->st) b->st = vkl_graph_set_data(b->g, id, v, n * sizeof(int64_t), true);
}

/* A shape-value tensor: one i64 whose value is an expression of symbols. */
static void shape_value(builder *b, const char *expr) {
    const int64_t dims[1] = {1};
    uint32_t id = tensor(b, VKL_DTYPE_I64, VKL_TENSOR_ACTIVATION, 1, dims, NULL);
    vkl_expr e;
    if (!b->st) b->st = vkl_expr_parse(b->g->syms, expr, &e);
    if (!b->st) b->st = vkl_graph_set_value(b->g, id, &e, 1);
}

static void absent(builder *b) { b->ins[b->n_in++] = VKL_NONE; }

static vkl_attr attr_int(const char *name, int64_t v) { return (vkl_attr){.name = name, .kind = VKL_ATTR_INT, .i = v}; }
static vkl_attr attr_ints(const char *name, const int64_t *v, uint32_t n) {
    return (vkl_attr){.name = name, .kind = VKL_ATTR_INTS, .ints = v, .count = n};
}
static vkl_attr attr_str(const char *name, const char *s) { return (vkl_attr){.name = name, .kind = VKL_ATTR_STRING, .s = s}; }

/* Adds the node, runs ref and Vulkan, compares every output's bytes. */
static void finish(builder *b, const vkl_backend_vtable *vk, vkl_backend_device *dev, const char *name, vkl_op op,
                   uint32_t n_out, const vkl_attr *attrs, uint32_t n_attrs) {
    uint32_t outs[MAX_OUT];
    vkl_host_tensor want[MAX_OUT] = {0}, got[MAX_OUT] = {0};
    vkl_status st = b->st;
    for (uint32_t k = 0; !st && k < n_out; k++) {
        char oname[16];
        snprintf(oname, sizeof(oname), "out%u", k);
        st = vkl_graph_add_tensor(b->g, oname, VKL_DTYPE_INVALID, VKL_TENSOR_ACTIVATION, NULL, &outs[k]);
        if (!st) st = vkl_graph_add_output(b->g, outs[k]);
    }
    if (!st) st = vkl_graph_add_node(b->g, op, name, b->ins, b->n_in, outs, n_out, attrs, n_attrs, NULL);
    if (!st) st = vkl_graph_validate(b->g);
    if (!st) st = vkl_graph_infer_shapes(b->g);
    if (!st) st = vkl_run_once(b->ctx, vkl_backend_find("ref"), b->g, b->host, want);
    CHECK_OK(b->ctx, st);
    if (!st) {
        const int before = validation_messages;
        st = vkl_run_once_on(b->ctx, vk, dev, b->g, b->host, got);
        CHECKF(st == VKL_OK, "%s: vulkan: %s: %s", name, vkl_status_name(st), vkl_context_error(b->ctx));
        CHECKF(validation_messages == before, "%s: validation messages", name);
        for (uint32_t k = 0; !st && k < n_out; k++) {
            bool same = got[k].nbytes == want[k].nbytes;
            size_t at = 0;
            while (same && at < want[k].nbytes && ((unsigned char *)got[k].data)[at] == ((unsigned char *)want[k].data)[at])
                at++;
            CHECKF(same && at == want[k].nbytes, "%s: output %u (%zu bytes) differs from ref at byte %zu", name, k,
                   want[k].nbytes, at);
        }
    }
    for (uint32_t k = 0; k < n_out; k++) {
        vkl_free(b->ctx, want[k].data);
        vkl_free(b->ctx, got[k].data);
    }
    for (uint32_t i = 0; i < b->n_host; i++) free(b->host[i].data);
    vkl_graph_destroy(b->g);
}

#define DIMS(...) ((const int64_t[]){__VA_ARGS__}), (uint32_t)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
/* data(b, dt, rank, dims, NULL) with DIMS listing the dims */
#define DATA(b, dt, ...) data_dims(b, dt, DIMS(__VA_ARGS__))
static void data_dims(builder *b, vkl_dtype dt, const int64_t *dims, uint32_t rank) { data(b, dt, rank, dims, NULL); }
#define IDX(b, dt, lo, hi, ...) idx_dims(b, dt, lo, hi, DIMS(__VA_ARGS__))
static void idx_dims(builder *b, vkl_dtype dt, int64_t lo, int64_t hi, const int64_t *dims, uint32_t rank) {
    ints_in(b, dt, rank, dims, lo, hi);
}
#define CONSTS(b, ...) consts_list(b, DIMS(__VA_ARGS__))
static void consts_list(builder *b, const int64_t *v, uint32_t n) { consts(b, n, v); }

static void test_layout(vkl_context *ctx, const vkl_backend_vtable *vk, vkl_backend_device *dev, rng *r) {
    builder b;
    /* more than 65535 workgroups of 256: the grid's second dim */
    begin(&b, ctx, r);
    DATA(&b, VKL_DTYPE_F32, 4100, 4100);
    finish(&b, vk, dev, "transpose_large", VKL_OP_TRANSPOSE, 1, NULL, 0);
    const int64_t p4[] = {3, 1, 0, 2}, p4b[] = {0, 2, 1, 3}, p6[] = {5, 4, 3, 2, 1, 0};
    vkl_attr a = attr_ints("perm", p4, 4);
    begin(&b, ctx, r);
    DATA(&b, VKL_DTYPE_U8, 3, 4, 5, 6);
    finish(&b, vk, dev, "transpose_u8", VKL_OP_TRANSPOSE, 1, &a, 1);
    a = attr_ints("perm", p4b, 4); /* contiguous rows of 8 bf16: moved as words */
    begin(&b, ctx, r);
    DATA(&b, VKL_DTYPE_BF16, 2, 3, 4, 8);
    finish(&b, vk, dev, "transpose_heads_bf16", VKL_OP_TRANSPOSE, 1, &a, 1);
    a = attr_ints("perm", p6, 6);
    begin(&b, ctx, r);
    DATA(&b, VKL_DTYPE_I64, 2, 3, 2, 2, 3, 2);
    finish(&b, vk, dev, "transpose_rank6_i64", VKL_OP_TRANSPOSE, 1, &a, 1);

    /* reversed and strided slices of 1-, 2- and 8-byte elements */
    begin(&b, ctx, r);
    DATA(&b, VKL_DTYPE_U8, 7, 9);
    CONSTS(&b, -1, 8);
    CONSTS(&b, -8, INT64_MIN);
    CONSTS(&b, 0, 1);
    CONSTS(&b, -1, -2);
    finish(&b, vk, dev, "slice_reverse_u8", VKL_OP_SLICE, 1, NULL, 0);
    begin(&b, ctx, r);
    DATA(&b, VKL_DTYPE_F16, 6, 8);
    CONSTS(&b, 1, 6);
    CONSTS(&b, 6, 0);
    absent(&b); /* axes 0, 1 */
    CONSTS(&b, 2, -1);
    finish(&b, vk, dev, "slice_steps_f16", VKL_OP_SLICE, 1, NULL, 0);
    begin(&b, ctx, r);
    DATA(&b, VKL_DTYPE_I64, 5, 4, 3);
    CONSTS(&b, 3);
    CONSTS(&b, -5);
    CONSTS(&b, 1);
    CONSTS(&b, -2);
    finish(&b, vk, dev, "slice_reverse_i64", VKL_OP_SLICE, 1, NULL, 0);
    /* the last `past` rows: a start that is a shape value, read at prepare */
    begin(&b, ctx, r);
    data(&b, VKL_DTYPE_F32, 2, (const int64_t[]){9, 6}, (const char *const[]){"N", NULL});
    shape_value(&b, "N - 4");
    CONSTS(&b, INT64_MAX);
    CONSTS(&b, 0);
    finish(&b, vk, dev, "slice_shape_value_start", VKL_OP_SLICE, 1, NULL, 0);

    begin(&b, ctx, r);
    DATA(&b, VKL_DTYPE_U8, 3, 5);
    CONSTS(&b, 2, 3);
    finish(&b, vk, dev, "tile_u8", VKL_OP_TILE, 1, NULL, 0);
    begin(&b, ctx, r);
    DATA(&b, VKL_DTYPE_F16, 2, 3, 2);
    CONSTS(&b, 2, 1, 3);
    finish(&b, vk, dev, "tile_f16", VKL_OP_TILE, 1, NULL, 0);
    begin(&b, ctx, r);
    DATA(&b, VKL_DTYPE_I64, 2, 2);
    CONSTS(&b, 3, 2);
    finish(&b, vk, dev, "tile_i64", VKL_OP_TILE, 1, NULL, 0);
    begin(&b, ctx, r);
    DATA(&b, VKL_DTYPE_F16, 3, 1, 5);
    CONSTS(&b, 2, 3, 4, 5);
    finish(&b, vk, dev, "expand_f16", VKL_OP_EXPAND, 1, NULL, 0);
    begin(&b, ctx, r);
    DATA(&b, VKL_DTYPE_U8, 1, 7);
    CONSTS(&b, 3, 7);
    finish(&b, vk, dev, "expand_u8", VKL_OP_EXPAND, 1, NULL, 0);
    begin(&b, ctx, r);
    DATA(&b, VKL_DTYPE_U8, 3, 5);
    CONSTS(&b, 15);
    finish(&b, vk, dev, "reshape_u8_words", VKL_OP_RESHAPE, 1, NULL, 0);
    begin(&b, ctx, r);
    DATA(&b, VKL_DTYPE_F32, 8, 4);
    CONSTS(&b, 32);
    finish(&b, vk, dev, "reshape_f32_vec4", VKL_OP_RESHAPE, 1, NULL, 0);

    /* Trilu with k at run time: several integer types, beyond +-(M + N) too */
    a = attr_int("upper", 1);
    begin(&b, ctx, r);
    DATA(&b, VKL_DTYPE_U8, 3, 5, 7);
    IDX(&b, VKL_DTYPE_I32, -3, -2, 1);
    finish(&b, vk, dev, "trilu_u8_k_i32", VKL_OP_TRILU, 1, &a, 1);
    a = attr_int("upper", 0);
    begin(&b, ctx, r);
    DATA(&b, VKL_DTYPE_F16, 6, 5);
    IDX(&b, VKL_DTYPE_I64, 5000000000ll, 5000000001ll, 1);
    finish(&b, vk, dev, "trilu_f16_k_huge", VKL_OP_TRILU, 1, &a, 1);
    begin(&b, ctx, r);
    DATA(&b, VKL_DTYPE_BF16, 2, 9, 3);
    IDX(&b, VKL_DTYPE_I64, -5000000000ll, -4999999999ll, 1);
    finish(&b, vk, dev, "trilu_bf16_k_minus_huge", VKL_OP_TRILU, 1, &a, 1);
    begin(&b, ctx, r);
    DATA(&b, VKL_DTYPE_I64, 4, 4);
    finish(&b, vk, dev, "trilu_i64_lower", VKL_OP_TRILU, 1, &a, 1);
}

static void test_concat_split(vkl_context *ctx, const vkl_backend_vtable *vk, vkl_backend_device *dev, rng *r) {
    builder b;
    vkl_attr a = attr_int("axis", 1);
    /* 9 inputs: two dispatches, rows of odd lengths share words between them */
    begin(&b, ctx, r);
    for (int64_t k = 0; k < 9; k++) data(&b, VKL_DTYPE_F16, 2, (const int64_t[]){3, 1 + k % 3}, NULL);
    finish(&b, vk, dev, "concat_9_f16", VKL_OP_CONCAT, 1, &a, 1);
    a = attr_int("axis", 0);
    begin(&b, ctx, r);
    for (int64_t k = 0; k < 17; k++) data(&b, VKL_DTYPE_U8, 2, (const int64_t[]){k % 4, 3}, NULL);
    finish(&b, vk, dev, "concat_17_u8_some_empty", VKL_OP_CONCAT, 1, &a, 1);
    a = attr_int("axis", -1);
    begin(&b, ctx, r);
    DATA(&b, VKL_DTYPE_I64, 2, 2, 3);
    DATA(&b, VKL_DTYPE_I64, 2, 2, 1);
    DATA(&b, VKL_DTYPE_I64, 2, 2, 2);
    finish(&b, vk, dev, "concat_i64", VKL_OP_CONCAT, 1, &a, 1);
    /* the KV cache pattern: past rows then new ones, along the sequence */
    a = attr_int("axis", 2);
    begin(&b, ctx, r);
    DATA(&b, VKL_DTYPE_BF16, 1, 4, 37, 64);
    DATA(&b, VKL_DTYPE_BF16, 1, 4, 1, 64);
    finish(&b, vk, dev, "concat_kv_bf16", VKL_OP_CONCAT, 1, &a, 1);

    a = attr_int("axis", 1);
    begin(&b, ctx, r);
    DATA(&b, VKL_DTYPE_U8, 5, 23);
    CONSTS(&b, 1, 2, 3, 4, 0, 5, 1, 6, 1);
    finish(&b, vk, dev, "split_9_u8", VKL_OP_SPLIT, 9, &a, 1);
    vkl_attr as[2] = {attr_int("axis", 1), attr_int("num_outputs", 4)};
    begin(&b, ctx, r);
    DATA(&b, VKL_DTYPE_F16, 4, 9);
    finish(&b, vk, dev, "split_4_f16", VKL_OP_SPLIT, 4, as, 2);
    a = attr_int("axis", 0);
    begin(&b, ctx, r);
    DATA(&b, VKL_DTYPE_F64, 6, 2);
    CONSTS(&b, 1, 3, 2);
    finish(&b, vk, dev, "split_f64", VKL_OP_SPLIT, 3, &a, 1);
}

static void test_gathers(vkl_context *ctx, const vkl_backend_vtable *vk, vkl_backend_device *dev, rng *r) {
    builder b;
    vkl_attr a = attr_int("axis", 0);
    /* 70000 short rows, 16 bytes each way */
    begin(&b, ctx, r);
    DATA(&b, VKL_DTYPE_F32, 11, 8);
    IDX(&b, VKL_DTYPE_I64, -11, 11, 70000);
    finish(&b, vk, dev, "gather_rows_many", VKL_OP_GATHER, 1, &a, 1);
    begin(&b, ctx, r); /* a bf16 embedding table: 16-byte row copies */
    DATA(&b, VKL_DTYPE_BF16, 50, 64);
    IDX(&b, VKL_DTYPE_I64, 0, 50, 3, 5);
    finish(&b, vk, dev, "gather_embedding_bf16", VKL_OP_GATHER, 1, &a, 1);
    begin(&b, ctx, r);
    DATA(&b, VKL_DTYPE_U8, 6, 3);
    IDX(&b, VKL_DTYPE_I32, -6, 6, 2, 2);
    finish(&b, vk, dev, "gather_u8", VKL_OP_GATHER, 1, &a, 1);
    a = attr_int("axis", 1);
    begin(&b, ctx, r);
    DATA(&b, VKL_DTYPE_F16, 7, 5);
    IDX(&b, VKL_DTYPE_I32, -5, 5, 4);
    finish(&b, vk, dev, "gather_f16_axis1", VKL_OP_GATHER, 1, &a, 1);
    begin(&b, ctx, r);
    DATA(&b, VKL_DTYPE_I64, 5, 3, 2);
    IDX(&b, VKL_DTYPE_I64, -3, 3, 4);
    finish(&b, vk, dev, "gather_i64_axis1", VKL_OP_GATHER, 1, &a, 1);

    begin(&b, ctx, r);
    DATA(&b, VKL_DTYPE_U8, 4, 5, 6);
    IDX(&b, VKL_DTYPE_I64, -5, 5, 4, 3, 6);
    finish(&b, vk, dev, "gather_elements_u8", VKL_OP_GATHER_ELEMENTS, 1, &a, 1);
    a = attr_int("axis", 0);
    begin(&b, ctx, r);
    DATA(&b, VKL_DTYPE_I64, 3, 4);
    IDX(&b, VKL_DTYPE_I32, -3, 3, 5, 4);
    finish(&b, vk, dev, "gather_elements_i64", VKL_OP_GATHER_ELEMENTS, 1, &a, 1);
    a = attr_int("axis", -1);
    begin(&b, ctx, r);
    DATA(&b, VKL_DTYPE_F16, 3, 7);
    IDX(&b, VKL_DTYPE_I64, -7, 7, 2, 9);
    finish(&b, vk, dev, "gather_elements_f16", VKL_OP_GATHER_ELEMENTS, 1, &a, 1);

    a = attr_int("batch_dims", 1);
    begin(&b, ctx, r);
    DATA(&b, VKL_DTYPE_U8, 3, 4, 5);
    IDX(&b, VKL_DTYPE_I64, -4, 4, 3, 2, 1);
    finish(&b, vk, dev, "gather_nd_batch_u8", VKL_OP_GATHER_ND, 1, &a, 1);
    a = attr_int("batch_dims", 0);
    begin(&b, ctx, r);
    DATA(&b, VKL_DTYPE_F64, 4, 3, 2);
    IDX(&b, VKL_DTYPE_I64, -3, 3, 5, 2);
    finish(&b, vk, dev, "gather_nd_f64", VKL_OP_GATHER_ND, 1, &a, 1);
    begin(&b, ctx, r);
    DATA(&b, VKL_DTYPE_BF16, 6, 7);
    IDX(&b, VKL_DTYPE_I64, -6, 6, 4, 1);
    finish(&b, vk, dev, "gather_nd_bf16_odd", VKL_OP_GATHER_ND, 1, &a, 1);
}

/* data [rows, cols] of dt, `tuples` row indices in [-rows, rows) (repeats
 * likely), updates [tuples, cols]; or element tuples when cols == 0. */
static void scatter(vkl_context *ctx, const vkl_backend_vtable *vk, vkl_backend_device *dev, rng *r, const char *name,
                    vkl_dtype dt, int64_t rows, int64_t cols, int64_t tuples, const char *red) {
    builder b;
    vkl_attr a = attr_str("reduction", red);
    begin(&b, ctx, r);
    if (cols) {
        DATA(&b, dt, rows, cols);
        IDX(&b, VKL_DTYPE_I64, -rows, rows, tuples, 1);
        DATA(&b, dt, tuples, cols);
    } else {
        DATA(&b, dt, rows, 3);
        IDX(&b, VKL_DTYPE_I64, -3, 3, tuples, 2); /* in range for both dims when rows >= 3 */
        DATA(&b, dt, tuples);
    }
    finish(&b, vk, dev, name, VKL_OP_SCATTER_ND, 1, &a, 1);
}

static void test_scatter(vkl_context *ctx, const vkl_backend_vtable *vk, vkl_backend_device *dev, rng *r) {
    static const char *const reds[] = {"none", "add", "mul", "max", "min"};
    char name[64];
    for (uint32_t i = 0; i < 5; i++) {
        snprintf(name, sizeof(name), "scatter_f32_%s", reds[i]);
        scatter(ctx, vk, dev, r, name, VKL_DTYPE_F32, 10, 3, 12, reds[i]);
        snprintf(name, sizeof(name), "scatter_f16_odd_%s", reds[i]); /* slices of 6 bytes */
        scatter(ctx, vk, dev, r, name, VKL_DTYPE_F16, 5, 3, 8, reds[i]);
        snprintf(name, sizeof(name), "scatter_u8_%s", reds[i]);
        scatter(ctx, vk, dev, r, name, VKL_DTYPE_U8, 6, 5, 7, reds[i]);
        snprintf(name, sizeof(name), "scatter_i8_elements_%s", reds[i]);
        scatter(ctx, vk, dev, r, name, VKL_DTYPE_I8, 4, 0, 6, reds[i]);
        snprintf(name, sizeof(name), "scatter_i64_%s", reds[i]); /* 64-bit arithmetic, random bits */
        scatter(ctx, vk, dev, r, name, VKL_DTYPE_I64, 5, 2, 6, reds[i]);
        snprintf(name, sizeof(name), "scatter_u32_%s", reds[i]);
        scatter(ctx, vk, dev, r, name, VKL_DTYPE_U32, 4, 2, 5, reds[i]);
        snprintf(name, sizeof(name), "scatter_bf16_%s", reds[i]);
        scatter(ctx, vk, dev, r, name, VKL_DTYPE_BF16, 6, 2, 5, reds[i]);
        snprintf(name, sizeof(name), "scatter_i16_elements_%s", reds[i]);
        scatter(ctx, vk, dev, r, name, VKL_DTYPE_I16, 3, 0, 9, reds[i]);
    }
    scatter(ctx, vk, dev, r, "scatter_f64_max", VKL_DTYPE_F64, 4, 3, 6, "max");
    scatter(ctx, vk, dev, r, "scatter_f64_min", VKL_DTYPE_F64, 4, 3, 6, "min");
    scatter(ctx, vk, dev, r, "scatter_bool_add", VKL_DTYPE_BOOL, 4, 3, 6, "add");
}

int main(void) {
    vkl_context *ctx;
    const vkl_backend_vtable *vk;
    vkl_backend_device *dev = NULL;
    vkl_status st;
    const int early = test_vulkan_main_start("test_vk_move", &ctx, &vk, &dev, NULL, &st);
    if (early >= 0) return early;
    CHECK_OK(ctx, st);
    if (!st) {
        rng r = {0x2545F4914F6CDD1Dull ^ (getenv("VKL_TEST_SEED") ? strtoull(getenv("VKL_TEST_SEED"), NULL, 10) : 0)};
        test_layout(ctx, vk, dev, &r);
        test_concat_split(ctx, vk, dev, &r);
        test_gathers(ctx, vk, dev, &r);
        test_scatter(ctx, vk, dev, &r);
        vk->close(dev);
    }
    CHECKF(validation_messages == 0, "%d validation messages", validation_messages);
    vkl_context_destroy(ctx);
    return check_finish("test_vk_move");
}
