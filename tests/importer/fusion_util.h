/* Helpers for the fusion-pass tests: build small graphs in C, run graphs on
 * the ref backend, read fixture references, compare. Header-only (static
 * inline) so each test program takes what it uses; the failure counter and
 * CHECK come from tests/common/check.h. */
#ifndef VKL_TEST_FUSION_UTIL_H
#define VKL_TEST_FUSION_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "check.h"
#include "onnx_import.h"
#include "ops.h"
#include "ops/shape_util.h"
#include "passes/pipeline.h"
#include "run_once.h"
#include "npy.h" /* the .npy reader of `vkllm check` */

/* ---- building graphs ------------------------------------------------------------------------- */

/* Shape from "batch, 4, seq, 32" (expressions allowed). */
static inline vkl_shape fu_shape(vkl_graph *g, const char *dims) { return check_shape(&failures, g, dims, ','); }

static inline uint32_t fu_tensor(vkl_graph *g, const char *name, vkl_dtype dt, vkl_tensor_kind kind, const char *dims) {
    vkl_shape s = fu_shape(g, dims);
    uint32_t id = VKL_NONE;
    CHECK_OK(g->ctx, vkl_graph_add_tensor(g, name, dt, kind, dims ? &s : NULL, &id));
    return id;
}

static inline uint32_t fu_input(vkl_graph *g, const char *name, vkl_dtype dt, const char *dims) {
    uint32_t id = fu_tensor(g, name, dt, VKL_TENSOR_INPUT, dims);
    CHECK_OK(g->ctx, vkl_graph_add_input(g, id));
    return id;
}

static inline uint32_t fu_output(vkl_graph *g, uint32_t t) {
    CHECK_OK(g->ctx, vkl_graph_add_output(g, t));
    return t;
}

/* Weights: every element equal to v (count elements), or the given data. */
static inline uint32_t fu_weight(vkl_graph *g, const char *name, vkl_dtype dt, const char *dims, const void *data,
                                 size_t nbytes) {
    uint32_t id = fu_tensor(g, name, dt, VKL_TENSOR_WEIGHT, dims);
    CHECK_OK(g->ctx, vkl_graph_set_data(g, id, data, nbytes, true));
    return id;
}

static inline uint32_t fu_f32(vkl_graph *g, const char *name, const char *dims, float v) {
    float data[64];
    vkl_shape s = fu_shape(g, dims);
    int64_t n = 1;
    CHECK(vkl_shape_const_numel(g, &s, &n) && n <= 64);
    for (int64_t i = 0; i < n && i < 64; i++) data[i] = v;
    return fu_weight(g, name, VKL_DTYPE_F32, dims, data, (size_t)n * sizeof(float));
}

static inline uint32_t fu_i64(vkl_graph *g, const char *name, const int64_t *v, int64_t count) {
    char dims[32];
    snprintf(dims, sizeof(dims), "%lld", (long long)count);
    return fu_weight(g, name, VKL_DTYPE_I64, dims, v, (size_t)count * sizeof(int64_t));
}

/* One-element i64 constant as a 1-D tensor [1]. */
static inline uint32_t fu_int1(vkl_graph *g, int64_t v) {
    char name[64];
    snprintf(name, sizeof(name), "c%u", g->n_tensors);
    return fu_i64(g, name, &v, 1);
}

static inline vkl_attr fu_attr_int(const char *name, int64_t v) {
    return (vkl_attr){.name = name, .kind = VKL_ATTR_INT, .i = v};
}

static inline vkl_attr fu_attr_ints(const char *name, const int64_t *v, uint32_t count) {
    return (vkl_attr){.name = name, .kind = VKL_ATTR_INTS, .ints = v, .count = count};
}

/* A node with one fresh output "t<n>"; returns the output. */
static inline uint32_t fu_node(vkl_graph *g, vkl_op op, const uint32_t *ins, uint32_t n_ins, const vkl_attr *attrs,
                               uint32_t n_attrs) {
    char name[64];
    uint32_t out = VKL_NONE;
    snprintf(name, sizeof(name), "t%u", g->n_tensors);
    CHECK_OK(g->ctx, vkl_graph_add_tensor(g, name, VKL_DTYPE_INVALID, VKL_TENSOR_ACTIVATION, NULL, &out));
    CHECK_OK(g->ctx, vkl_graph_add_node(g, op, name, ins, n_ins, &out, 1, attrs, n_attrs, NULL));
    return out;
}

static inline uint32_t fu_op1(vkl_graph *g, vkl_op op, uint32_t a) { return fu_node(g, op, &a, 1, NULL, 0); }
static inline uint32_t fu_op2(vkl_graph *g, vkl_op op, uint32_t a, uint32_t b) {
    const uint32_t in[2] = {a, b};
    return fu_node(g, op, in, 2, NULL, 0);
}

/* Slice(x, [start], [end], [axis], [step]). */
static inline uint32_t fu_slice(vkl_graph *g, uint32_t x, int64_t start, int64_t end, int64_t axis, int64_t step) {
    const uint32_t in[5] = {x, fu_int1(g, start), fu_int1(g, end), fu_int1(g, axis), fu_int1(g, step)};
    return fu_node(g, VKL_OP_SLICE, in, 5, NULL, 0);
}

static inline uint32_t fu_concat(vkl_graph *g, const uint32_t *ins, uint32_t n, int64_t axis) {
    vkl_attr a = fu_attr_int("axis", axis);
    return fu_node(g, VKL_OP_CONCAT, ins, n, &a, 1);
}

static inline uint32_t fu_unsqueeze(vkl_graph *g, uint32_t x, int64_t axis) {
    return fu_op2(g, VKL_OP_UNSQUEEZE, x, fu_int1(g, axis));
}

static inline uint32_t fu_transpose(vkl_graph *g, uint32_t x, const int64_t *perm, uint32_t rank) {
    vkl_attr a = fu_attr_ints("perm", perm, rank);
    return fu_node(g, VKL_OP_TRANSPOSE, &x, 1, &a, 1);
}

/* Reshape(x, shape) with a constant shape. */
static inline uint32_t fu_reshape(vkl_graph *g, uint32_t x, const int64_t *shape, int64_t rank) {
    char name[64];
    snprintf(name, sizeof(name), "shape%u", g->n_tensors);
    return fu_op2(g, VKL_OP_RESHAPE, x, fu_i64(g, name, shape, rank));
}

static inline uint32_t fu_count_ops(const vkl_graph *g, vkl_op op) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < g->n_nodes; i++) n += !g->nodes[i].dead && g->nodes[i].op == (uint32_t)op;
    return n;
}

/* The first live node of op `op`, or VKL_NONE. */
static inline uint32_t fu_find_op(const vkl_graph *g, vkl_op op) {
    for (uint32_t i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i].dead && g->nodes[i].op == (uint32_t)op) return i;
    return VKL_NONE;
}

/* ---- running and comparing ------------------------------------------------------------------- */

static inline int64_t fu_count(const vkl_host_tensor *t) {
    int64_t n = 1;
    for (uint32_t d = 0; d < t->rank; d++) n *= t->dims[d];
    return n;
}

static inline double fu_get(const vkl_host_tensor *t, int64_t i) {
    switch (t->dtype) {
    case VKL_DTYPE_F32: return ((const float *)t->data)[i];
    case VKL_DTYPE_I64: return (double)((const int64_t *)t->data)[i];
    case VKL_DTYPE_I32: return ((const int32_t *)t->data)[i];
    default: return NAN;
    }
}

/* A host tensor of the given dims; f32 filled from a fixed pseudo-random
 * sequence in [-1, 1) (seeded by `seed`), i64 with `ints` (or zeros). */
static inline vkl_host_tensor fu_host(vkl_context *ctx, vkl_dtype dt, const int64_t *dims, uint32_t rank,
                                      uint32_t seed, const int64_t *ints) {
    vkl_host_tensor t = {dt, rank, {0}, NULL, 0};
    int64_t n = 1;
    for (uint32_t d = 0; d < rank; d++) n *= t.dims[d] = dims[d];
    t.nbytes = (size_t)n * vkl_dtype_size(dt);
    t.data = vkl_malloc(ctx, t.nbytes ? t.nbytes : 1);
    uint32_t s = seed * 2654435761u + 12345u;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        if (dt == VKL_DTYPE_F32) ((float *)t.data)[i] = (float)((s >> 8) / 8388608.0 - 1.0);
        else if (dt == VKL_DTYPE_I64) ((int64_t *)t.data)[i] = ints ? ints[i] : 0;
    }
    return t;
}

static inline void fu_free_all(vkl_context *ctx, vkl_host_tensor *t, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        vkl_free(ctx, t[i].data);
        t[i].data = NULL;
    }
}

/* max|a - b| <= rtol * max|b| + 1e-5 (the fixtures' fp32 bound), same
 * dims, no NaN; prints the numbers when `label` is set or on failure. */
static inline bool fu_close(const char *label, const vkl_host_tensor *a, const vkl_host_tensor *b, double rtol) {
    if (a->rank != b->rank || memcmp(a->dims, b->dims, a->rank * sizeof(int64_t))) {
        fprintf(stderr, "%s: dims differ\n", label ? label : "?");
        return false;
    }
    double err = 0, ref = 0;
    bool nan = false;
    for (int64_t i = 0; i < fu_count(b); i++) {
        double x = fu_get(a, i), y = fu_get(b, i);
        nan |= isnan(x) || isnan(y);
        err = fmax(err, fabs(x - y));
        ref = fmax(ref, fabs(y));
    }
    bool ok = !nan && err <= rtol * ref + 1e-5;
    if (label || !ok)
        printf("  %-40s max_abs %.3e max_ref %.3e%s\n", label ? label : "(unnamed)", err, ref, ok ? "" : "  FAIL");
    return ok;
}

/* Every row of the last dim has the same argmax. */
static inline bool fu_same_argmax(const vkl_host_tensor *a, const vkl_host_tensor *b) {
    int64_t cols = b->dims[b->rank - 1], rows = cols ? fu_count(b) / cols : 0;
    for (int64_t r = 0; r < rows; r++) {
        int64_t ia = 0, ib = 0;
        for (int64_t c = 1; c < cols; c++) {
            if (fu_get(a, r * cols + c) > fu_get(a, r * cols + ia)) ia = c;
            if (fu_get(b, r * cols + c) > fu_get(b, r * cols + ib)) ib = c;
        }
        if (ia != ib) return false;
    }
    return true;
}

/* Run g on ref; outputs allocated (free with fu_free_all). */
static inline bool fu_run(vkl_graph *g, const vkl_host_tensor *in, vkl_host_tensor *out) {
    vkl_status st = vkl_run_once(g->ctx, vkl_backend_find("ref"), g, in, out);
    if (st) fprintf(stderr, "run_once: %s\n", vkl_context_error(g->ctx));
    return st == VKL_OK;
}

/* How often the pipeline step `name` fired (0 when it did not run). */
static inline uint32_t fu_fired(const vkl_pipeline_report *r, const char *name) {
    for (uint32_t i = 0; i < r->n_steps; i++)
        if (!strcmp(r->steps[i].name, name)) return r->steps[i].fired;
    return 0;
}

/* Concrete dims of tensor t with the named symbols bound (others unbound). */
static inline void fu_eval_dims(const vkl_graph *g, uint32_t t, const char *const *names, const int64_t *values,
                                uint32_t n_names, int64_t *dims, uint32_t *rank) {
    const vkl_shape *s = &g->tensors[t].shape;
    int64_t binding[16];
    size_t n = vkl_symtab_symbol_count(g->syms);
    for (size_t i = 0; i < 16; i++) binding[i] = VKL_SYM_UNBOUND;
    for (size_t i = 0; i < n && i < 16; i++)
        for (uint32_t k = 0; k < n_names; k++)
            if (!strcmp(vkl_symtab_symbol_name(g->syms, i), names[k])) binding[i] = values[k];
    *rank = s->rank;
    for (uint32_t d = 0; d < s->rank; d++) CHECK(vkl_expr_eval(g->ctx, g->syms, s->dims[d], binding, n, &dims[d]) == VKL_OK);
}

/* Two copies of one small graph: `plain` through the pipeline with no pass
 * (just the clean-up), `fused` with `passes`. Returns how often the
 * pipeline step `step` fired and prints it against `want`. */
static inline uint32_t fu_run_pair(vkl_graph *plain, vkl_graph *fused, uint32_t passes, const char *step,
                                   const char *name, uint32_t want) {
    vkl_pipeline_report r;
    CHECK_OK(plain->ctx, vkl_pipeline_run(plain, 0, &r));
    CHECK_OK(fused->ctx, vkl_pipeline_run(fused, passes, &r));
    uint32_t fired = fu_fired(&r, step);
    printf("  %s %-34s fired %u (want %u)\n", step, name, fired, want);
    return fired;
}

/* ---- fixtures -------------------------------------------------------------------------------- */

/* step<k>.in.<name>.npy or .out. of a fixture folder. */
static inline bool fu_load_ref(vkl_context *ctx, const char *dir, int step, const char *io, const char *name,
                               vkl_host_tensor *t) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/step%d.%s.%s.npy", dir, step, io, name);
    vkl_status st = vkl_npy_read(ctx, path, t);
    if (st) fprintf(stderr, "%s: %s\n", path, vkl_context_error(ctx));
    return st == VKL_OK;
}

/* Import a fixture and run the pipeline with `passes`. */
static inline vkl_onnx_model *fu_import(vkl_context *ctx, const char *dir, uint32_t passes,
                                        vkl_pipeline_report *report) {
    char path[4096];
    vkl_onnx_model *m = NULL;
    snprintf(path, sizeof(path), "%s/model.onnx", dir);
    vkl_status st = vkl_onnx_open(ctx, path, &m);
    if (!st) st = vkl_pipeline_run(vkl_onnx_graph(m), passes, report);
    if (st) {
        fprintf(stderr, "%s: %s\n", path, vkl_context_error(ctx));
        failures++;
        vkl_onnx_close(m);
        return NULL;
    }
    return m;
}

#endif
