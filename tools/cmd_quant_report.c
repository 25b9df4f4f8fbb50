/* `vkllm quant-report MODEL.onnx [--group N] [--n 1|2]`: the paper's Table 2
 * for our models. Every 2-D f32 weight feeding a MatMul or Gemm as B
 * (directly or through a 2-D Transpose) is quantized the way the importer
 * will — to W^T [N, K], groups along K — as E0M4 and as int4 at the same
 * group size; prints MAE and max error of each, their ratios, and totals. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd_quant_report.h"
#include "onnx_import.h"
#include "ops.h"
#include "quant/quant.h"

typedef struct matrix {
    uint32_t tensor;
    bool transposed; /* the stored [r, c] is already [N, K] */
    int64_t K, N;
} matrix;

typedef struct err_stats {
    double sum, max;
} err_stats;

#define PROG "vkllm quant-report"
#define GROUP_MAX (1 << 20)

static int usage(FILE *f) {
    fprintf(f, "usage: vkllm quant-report MODEL.onnx [--group N] [--n 1|2]\n"
               "  --group N  elements per group along K, a multiple of 32 from 32 to %d (default 128)\n"
               "  --n 1|2    E0M4 exponent: w1 in [2^n, 2^(n+1)) (default 1)\n",
            GROUP_MAX);
    return f == stdout ? 0 : VKL_EXIT_USAGE;
}

/* A 2-D f32 weight with constant dims, or false. */
static bool weight_2d(const vkl_graph *g, uint32_t t, int64_t *rows, int64_t *cols) {
    if (t == VKL_NONE || t >= g->n_tensors) return false;
    const vkl_tensor *w = &g->tensors[t];
    if (w->kind != VKL_TENSOR_WEIGHT || w->dtype != VKL_DTYPE_F32 || w->shape.rank != 2 || !w->data) return false;
    return vkl_expr_is_const(g->syms, w->shape.dims[0], rows) && vkl_expr_is_const(g->syms, w->shape.dims[1], cols) &&
           *rows > 0 && *cols > 0 && w->nbytes == (size_t)*rows * (size_t)*cols * sizeof(float);
}

/* B of node i as a matrix entry: MatMul's W [K, N]; Gemm's, after transB;
 * either through Transpose(perm = [1, 0]) of a weight. */
static bool b_operand(const vkl_graph *g, uint32_t i, matrix *m) {
    const vkl_node *n = &g->nodes[i];
    if (n->n_inputs < 2) return false;
    int64_t trans_b = 0;
    if (n->op == VKL_OP_GEMM && vkl_op_attr_int(g, i, "transB", &trans_b)) return false;
    bool flip = trans_b != 0;
    uint32_t b = n->inputs[1];
    const vkl_tensor *bt = b < g->n_tensors ? &g->tensors[b] : NULL;
    if (bt && bt->kind == VKL_TENSOR_ACTIVATION && bt->producer != VKL_NONE) {
        uint32_t p = bt->producer;
        const vkl_node *pn = &g->nodes[p];
        if (pn->dead || pn->op != VKL_OP_TRANSPOSE || pn->n_inputs < 1) return false;
        const int64_t *perm = NULL;
        uint32_t count = 0;
        if (vkl_op_attr_ints(g, p, "perm", &perm, &count) || (count && (count != 2 || perm[0] != 1 || perm[1] != 0)))
            return false;
        b = pn->inputs[0];
        flip = !flip;
    }
    int64_t r, c;
    if (!weight_2d(g, b, &r, &c)) return false;
    m->tensor = b;
    m->transposed = flip;
    m->K = flip ? c : r;
    m->N = flip ? r : c;
    return true;
}

/* W^T [N, K] from the stored weight. */
static void canonical(const vkl_graph *g, const matrix *m, float *wt) {
    const float *src = g->tensors[m->tensor].data;
    if (m->transposed) {
        memcpy(wt, src, (size_t)(m->N * m->K) * sizeof(float));
        return;
    }
    for (int64_t k = 0; k < m->K; k++)
        for (int64_t n = 0; n < m->N; n++) wt[n * m->K + k] = src[k * m->N + n];
}

static vkl_status measure(vkl_context *ctx, const vkl_quant_spec *spec, const float *w, int64_t rows, int64_t cols,
                          uint8_t *q, size_t qbytes, float *deq, err_stats *e) {
    vkl_status st = vkl_quant_quantize(ctx, spec, w, rows, cols, q, qbytes);
    if (!st) st = vkl_quant_dequantize(ctx, spec->dtype, spec->group, q, qbytes, rows, cols, deq);
    if (st) return st;
    e->sum = e->max = 0;
    for (int64_t i = 0; i < rows * cols; i++) {
        double d = fabs((double)w[i] - (double)deq[i]);
        e->sum += d;
        if (d > e->max) e->max = d;
    }
    return VKL_OK;
}

static double ratio(double a, double b) { return b > 0 ? a / b : (a > 0 ? INFINITY : 1.0); }

static int report(vkl_context *ctx, vkl_graph *g, const char *path, uint32_t group, uint32_t n_exp) {
    matrix *mats = vkl_calloc(ctx, g->n_nodes ? g->n_nodes : 1, sizeof(matrix));
    if (!mats) return 1;
    uint32_t count = 0;
    int width = 6;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const vkl_node *n = &g->nodes[i];
        matrix m;
        if (n->dead || (n->op != VKL_OP_MAT_MUL && n->op != VKL_OP_GEMM) || !b_operand(g, i, &m)) continue;
        bool seen = false;
        for (uint32_t k = 0; k < count && !seen; k++) seen = mats[k].tensor == m.tensor;
        if (seen) continue;
        mats[count++] = m;
        int len = (int)strlen(g->tensors[m.tensor].name);
        if (len > width) width = len;
    }
    if (width > 60) width = 60;
    printf("quant-report %s: %u weight matrices, group %u along K, E0M4 n = %u\n", path, count, group, n_exp);
    printf("%-*s %15s %11s %11s %6s %11s %11s %6s\n", width, "weight", "K x N", "MAE e0m4", "MAE int4", "ratio",
           "max e0m4", "max int4", "ratio");
    err_stats tot_e = {0, 0}, tot_i = {0, 0};
    int64_t tot_n = 0;
    uint32_t done = 0;
    int rc = 0;
    for (uint32_t k = 0; k < count && !rc; k++) {
        const matrix *m = &mats[k];
        const char *name = g->tensors[m->tensor].name;
        vkl_quant_spec se, si;
        vkl_quant_spec_init(&se, VKL_DTYPE_Q_E0M4);
        vkl_quant_spec_init(&si, VKL_DTYPE_Q_INT4);
        se.group = si.group = group;
        se.e0m4_n = n_exp;
        size_t qbytes = 0, elems = (size_t)(m->N * m->K);
        vkl_status st = vkl_quant_canonical_bytes(ctx, se.dtype, group, m->N, m->K, &qbytes);
        float *wt = st ? NULL : vkl_malloc(ctx, elems * sizeof(float));
        float *deq = wt ? vkl_malloc(ctx, elems * sizeof(float)) : NULL;
        uint8_t *q = deq ? vkl_malloc(ctx, qbytes ? qbytes : 1) : NULL;
        err_stats e = {0, 0}, in = {0, 0};
        if (!st && !q) st = VKL_ERR_OUT_OF_MEMORY;
        if (!st) {
            canonical(g, m, wt);
            st = measure(ctx, &se, wt, m->N, m->K, q, qbytes, deq, &e);
        }
        if (!st) st = measure(ctx, &si, wt, m->N, m->K, q, qbytes, deq, &in);
        vkl_free(ctx, wt);
        vkl_free(ctx, deq);
        vkl_free(ctx, q);
        if (st) {
            fprintf(stderr, "vkllm quant-report: weight '%s': %s\n", name, vkl_context_error(ctx));
            rc = 1;
            break;
        }
        double ne = (double)elems;
        printf("%-*s %6lld x %-6lld %11.6g %11.6g %6.3f %11.6g %11.6g %6.3f\n", width, name, (long long)m->K,
               (long long)m->N, e.sum / ne, in.sum / ne, ratio(e.sum, in.sum), e.max, in.max, ratio(e.max, in.max));
        tot_e.sum += e.sum, tot_i.sum += in.sum;
        tot_e.max = fmax(tot_e.max, e.max), tot_i.max = fmax(tot_i.max, in.max);
        tot_n += m->N * m->K;
        done++;
    }
    if (!rc) {
        double ne = tot_n ? (double)tot_n : 1.0;
        char label[64];
        snprintf(label, sizeof(label), "total (%u, %lld weights)", done, (long long)tot_n);
        printf("%-*s %15s %11.6g %11.6g %6.3f %11.6g %11.6g %6.3f\n", width, label, "", tot_e.sum / ne,
               tot_i.sum / ne, ratio(tot_e.sum, tot_i.sum), tot_e.max, tot_i.max, ratio(tot_e.max, tot_i.max));
    }
    vkl_free(ctx, mats);
    return rc;
}

int vkl_cmd_quant_report(vkl_context *ctx, int argc, char **argv) {
    const char *path = NULL;
    uint64_t group = VKL_QUANT_GROUP_DEFAULT, n_exp = 1;
    for (int i = 1; i < argc; i++) {
        if (vkl_cli_is_help(argv[i])) return usage(stdout);
        if (!strcmp(argv[i], "--group") || !strcmp(argv[i], "--n")) {
            const char *opt = argv[i], *v = vkl_cli_value(PROG, argc, argv, &i);
            if (!v) return VKL_EXIT_USAGE;
            if (!strcmp(opt, "--n")) {
                if (vkl_cli_u64(PROG, opt, v, 1, 2, &n_exp)) return VKL_EXIT_USAGE;
            } else if (vkl_cli_u64(PROG, opt, v, 32, GROUP_MAX, &group)) {
                return VKL_EXIT_USAGE;
            } else if (group % 32) {
                fprintf(stderr, PROG ": --group '%s' is not a multiple of 32; expected 32, 64, 128, ...\n", v);
                return VKL_EXIT_USAGE;
            }
        } else if (argv[i][0] != '-' && !path) {
            path = argv[i];
        } else {
            return vkl_cli_usage_error(PROG, "unexpected argument '%s'", argv[i]);
        }
    }
    if (!path) return vkl_cli_usage_error(PROG, "MODEL.onnx is required");
    vkl_onnx_model *m;
    vkl_status st = vkl_onnx_open(ctx, path, &m);
    if (st) return vkl_cli_fail(PROG, ctx, st);
    int rc = report(ctx, vkl_onnx_graph(m), path, (uint32_t)group, (uint32_t)n_exp);
    vkl_onnx_close(m);
    return rc;
}
