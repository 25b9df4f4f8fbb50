/* The Vulkan backend against engine/quant and the ref backend:
 *  (a) dequantization on the GPU (quant_dequant_* shaders, through the GPU
 *      packed layout and the decode the matvecs use) equals engine/quant's
 *      reference dequantization BIT FOR BIT (memcmp of f32): E0M4 n = 1 and
 *      n = 2, int4, int8; groups 32, 64, 128; random weights with exact
 *      zeros, all-zero groups, tiny groups (subnormal fp16 scales), large
 *      groups and single-spike groups;
 *  (b) QuantMatMul through the vtable against the ref backend on the same
 *      one-node graph, activations N(0, 1) with one spike of +-50 per 512:
 *      relative L2 error ||y_vk - y_ref||_2 / ||y_ref||_2 <= 1e-5 in f32
 *      math (the kernels accumulate in f32; ref in double), <= 5e-3 in fp16
 *      math (VKL_VK_MATH=f16, centered codes) and <= 1e-2 in its fold form
 *      (VKL_VK_F16_CENTER=0), 10x that for the cases of <= 10 outputs
 *      (F32_BOUND below says why); fp16 cases run where the device has
 *      shaderFloat16 and otherwise print why they are skipped; the output
 *      filled with NaN before executing so every element must be written,
 *      several (M, K, N) including K = 11008, with and without bias, ranks 1
 *      to 3; replaying the executable gives identical bits; node_times
 *      answers (without timestamps: refuses, saying so); the device's
 *      default matvec and five other variants
 *      (activations staged in shared memory or not, subgroup or shared-memory
 *      reduction, unrolled K steps, E0M4 codes built as f32, workgroup sizes
 *      and rows) in f32 math, five in fp16 math (both forms); the math asked
 *      for is the math the device runs (vkl_vk_f16_math); VKL_VK_MATH=f16
 *      with VKL_FEATURE_FP16 disabled, and VKL_VK_MATH=f64, fail open;
 *      the integer-dot matvecs (VKL_VK_MATVEC=dot: int8 activations per
 *      16-byte step, quantized by a pass of their own, packed dot products)
 *      where the device has shaderIntegerDotProduct, in eight variants that
 *      reach each of the kernel's reductions (teams of one subgroup,
 *      subgroupAdd + shared memory, shared-memory trees; what each runs is
 *      printed), rows 1..16 a team, unroll 1..4, each output within the
 *      rounding of its activations (DOT_BOUND below: what int8 activations
 *      alone may cost, computed from the data) and the relative L2 error
 *      <= DOT_L2_BOUND; without the feature (or with VKL_FEATURE_INT8_DOT
 *      masked) VKL_VK_MATVEC=dot fails open, saying why, and so do team
 *      knobs it cannot run (a team beyond the workgroup or not a power of
 *      two, more rows than a team's invocations);
 *  (b') the GEMM (prefill; quant_gemm_* shaders) against ref the same way,
 *      forced from M = 2 (VKL_VK_GEMM_MIN_ROWS=1), M = 2, 17, 64, 300, N
 *      leaving partial tiles, every format, in f32 math (<= 1e-5), fp16
 *      math (the cooperative-matrix build where the device has one; fp16
 *      operands: <= 5e-3) and the default math (f32), other tile shapes, and the
 *      threshold above M (the matvec); the compute peaks (f32, fp16 with
 *      fp16 math, cooperative matrix where the GEMM uses it; else a reason);
 *  (c) a node the Vulkan kernels refuse (f64 Relu without f64 arithmetic,
 *      VKL_VK_NO_F64=1) is refused at prepare, naming it.
 * Validation (VKL_VK_VALIDATION=1 unless the environment says 0) is on:
 * any validation message fails the test. No Vulkan at all: prints why and
 * exits 77 (ctest: skipped). */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../backends/vulkan/vulkan_backend.h"
#include "check.h"
#include "graph_finish.h"
#include "test_rng.h"
#include "context.h"
#include "graph.h"
#include "ops.h"
#include "quant/quant.h"
#include "run_once.h"
#include "vulkan_start.h"

/* ---- random data --------------------------------------------------------------------------------- */

/* rows x cols weights, group by group of one of several kinds: Gaussian
 * with 1 in 8 exact zeros (most groups), all zero, tiny (range ~1e-6: a
 * subnormal fp16 scale), large (~1e3), one spike among zeros, positive only. */
static void fill_weights(rng *r, float *w, int64_t rows, int64_t cols, uint32_t group) {
    for (int64_t i = 0; i < rows; i++)
        for (int64_t g = 0; g < cols / group; g++) {
            float *x = w + i * cols + g * group;
            uint32_t kind = rnd_u32(r) % 12;
            for (uint32_t k = 0; k < group; k++) {
                float v = rnd_gauss(r);
                switch (kind) {
                case 0: v = 0; break;
                case 1: v *= 1e-6f; break;
                case 2: v *= 1e3f; break;
                case 3: v = k == group / 3 ? 0.75f : 0.0f; break;
                case 4: v = fabsf(v) + 0.5f; break;
                default: v = rnd_u32(r) % 8 == 0 ? 0.0f : 0.02f * v; break;
                }
                x[k] = v;
            }
        }
}

typedef struct fmt {
    vkl_dtype dtype;
    uint32_t n; /* E0M4's n */
    const char *name;
} fmt;

static const fmt formats[] = {
    {VKL_DTYPE_Q_E0M4, 1, "e0m4 n=1"},
    {VKL_DTYPE_Q_E0M4, 2, "e0m4 n=2"},
    {VKL_DTYPE_Q_INT4, 0, "int4"},
    {VKL_DTYPE_Q_INT8, 0, "int8"},
};

static uint8_t *quantize(vkl_context *ctx, const fmt *f, uint32_t group, const float *w, int64_t rows, int64_t cols,
                         size_t *bytes) {
    vkl_quant_spec spec;
    vkl_quant_spec_init(&spec, f->dtype);
    spec.group = group;
    if (f->n) spec.e0m4_n = f->n;
    uint8_t *q = NULL;
    vkl_status st = vkl_quant_canonical_bytes(ctx, f->dtype, group, rows, cols, bytes);
    if (!st && !(q = malloc(*bytes))) st = VKL_ERR_OUT_OF_MEMORY;
    if (!st) st = vkl_quant_quantize(ctx, &spec, w, rows, cols, q, *bytes);
    CHECK_OK(ctx, st);
    if (st) {
        free(q);
        return NULL;
    }
    return q;
}

/* ---- (a) dequantization, bit for bit ------------------------------------------------------------- */

static void test_dequant(vkl_context *ctx, vkl_backend_device *dev, rng *r) {
    static const uint32_t groups[] = {32, 64, 128};
    static const int64_t shapes[][2] = {{7, 384}, {3, 11008}};
    for (size_t fi = 0; fi < VKL_ARRAY_LEN(formats); fi++)
        for (size_t gi = 0; gi < VKL_ARRAY_LEN(groups); gi++)
            for (size_t si = 0; si < VKL_ARRAY_LEN(shapes); si++) {
                const fmt *f = &formats[fi];
                const int64_t rows = shapes[si][0], cols = shapes[si][1];
                const size_t n = (size_t)(rows * cols);
                float *w = malloc(n * sizeof(float)), *ref = malloc(n * sizeof(float));
                float *got = malloc(n * sizeof(float));
                size_t bytes = 0;
                fill_weights(r, w, rows, cols, groups[gi]);
                uint8_t *q = quantize(ctx, f, groups[gi], w, rows, cols, &bytes);
                if (q) {
                    CHECK_OK(ctx, vkl_quant_dequantize(ctx, f->dtype, groups[gi], q, bytes, rows, cols, ref));
                    memset(got, 0, n * sizeof(float));
                    CHECK_OK(ctx, vkl_vk_dequantize(dev, ctx, f->dtype, groups[gi], rows, cols, q, bytes, got));
                    size_t bad = 0, first = 0;
                    for (size_t i = 0; i < n; i++)
                        if (memcmp(&got[i], &ref[i], sizeof(float)) && !bad++) first = i;
                    uint32_t gb, rb;
                    memcpy(&gb, &got[first], 4);
                    memcpy(&rb, &ref[first], 4);
                    CHECKF(bad == 0,
                           "%s group %u [%lld, %lld]: %zu of %zu values differ; first [%zu]: gpu %a (0x%08x), "
                           "ref %a (0x%08x)",
                           f->name, groups[gi], (long long)rows, (long long)cols, bad, n, first, (double)got[first], gb,
                           (double)ref[first], rb);
                }
                free(q);
                free(w);
                free(ref);
                free(got);
            }
}

/* ---- (b) QuantMatMul through the vtable ------------------------------------------------------------- */

/* Relative L2 error bounds of QuantMatMul against ref (double); the run
 * prints the worst case of each setting. Worst measured over the cases of
 * more than FEW outputs, lavapipe (16 seeds of this test's data, see
 * VKL_TEST_SEED) / H100 (4 seeds):
 *   f32 math                                              1.5e-6 / 1.0e-6
 *   fp16 math, products and sums within each 32-code step in fp16:
 *     centered (the default: w1 - b, q - z formed exactly in fp16 before
 *       the products; rounding relative to each product)   2.2e-3 / 5.6e-4
 *       (lavapipe's worst is int8 per channel; its 4-bit worst 6.0e-4)
 *     fold (VKL_VK_F16_CENTER=0: sum w1 a, sum q a in fp16, minus b sum a
 *       in f32; the fp16 lanes carry b a with b ~ 3 (E0M4; int4: z ~ 7.5)
 *       around the weight's own part, so the rounding is relative to
 *       |b a|, several times the (w1 - b) a that survives)  3.8e-3 / 3.3e-3
 * Cases with at most FEW outputs test small shapes and partial workgroups;
 * their relative error is data-dependent (one output that cancels to far
 * below its terms decides it; measured up to 1.9e-5, 1.2e-2 and 2.0e-2 on
 * lavapipe), so they are held to FEW_FACTOR times the bound. */
#define F32_BOUND 1e-5
#define F16_CENTER_BOUND 5e-3
#define F16_FOLD_BOUND 1e-2
#define FEW 10
#define FEW_FACTOR 10 /* the "bound x10" printed */
/* The integer-dot matvecs round each activation x_k to x'_k = sa (ia_k +
 * ib_k / 254) (sa = max |x| / 127 over its 16-byte step: 32 activations
 * for the 4-bit formats, 16 for int8; ib the residual term, on by default)
 * or, with VKL_VK_DOT_RESIDUAL=0, to sa ia_k, and compute sum_k x'_k w0_k
 * exactly up to f32 rounding, so each output differs from the exact one by
 * at most
 *   sum over steps of  sa h * sum_k |w0_k|        (the rounding of x;
 *                      h = 1/508 with the residual, 1/2 without)
 *   + DOT_F32_SLACK * (sum_k |x_k w0_k| + |y|)   (f32 products and sums),
 * which the test computes from the data and checks element by element
 * (with 1% on the first term for the f32 rounding of x / sa itself; worst
 * output measured on lavapipe at 0.73 of it one-term, 0.78 with the residual).
 * The relative L2 error over the outputs, N(0, 1) activations with a spike
 * of +-50 per 512, worst measured on lavapipe (default seed): one term
 * 1.5e-2 (int4 and E0M4 ~1.5e-2, int8 1.3e-2): a step holding a spike has
 * sa = 50 / 127, so its 31 other activations round to steps of 0.39; with
 * the residual 7.9e-5, 190x smaller. The bounds are about twice those. */
#define DOT_F32_SLACK 1e-5
#define DOT_L2_BOUND 2e-4
#define DOT1_L2_BOUND 3e-2

static vkl_expr cexpr(vkl_graph *g, int64_t v) {
    vkl_expr e;
    memset(&e, 0, sizeof(e));
    CHECK_OK(g->ctx, vkl_expr_const(g->syms, v, &e));
    return e;
}

/* Y = QuantMatMul(A, W[, bias]): A an input of shape a_dims, W [N, K]
 * (canonical bytes copied into the graph), bias [N] f32 weight. */
static vkl_graph *qmm_graph(vkl_context *ctx, const int64_t *a_dims, uint32_t a_rank, int64_t N, const fmt *f,
                            uint32_t group, const uint8_t *wq, size_t wq_bytes, const float *bias) {
    vkl_graph *g = NULL;
    CHECK_OK(ctx, vkl_graph_create(ctx, &g));
    if (!g) return NULL;
    const int64_t K = a_dims[a_rank - 1];
    vkl_shape sa = {.rank = a_rank}, sw = {.rank = 2}, sb = {.rank = 1};
    for (uint32_t d = 0; d < a_rank; d++) sa.dims[d] = cexpr(g, a_dims[d]);
    sw.dims[0] = sb.dims[0] = cexpr(g, N);
    sw.dims[1] = cexpr(g, K);
    uint32_t a = VKL_NONE, w = VKL_NONE, b = VKL_NONE, y = VKL_NONE;
    vkl_status st = vkl_graph_add_tensor(g, "A", VKL_DTYPE_F32, VKL_TENSOR_INPUT, &sa, &a);
    if (!st) st = vkl_graph_add_input(g, a);
    if (!st) st = vkl_graph_add_tensor(g, "W", f->dtype, VKL_TENSOR_WEIGHT, &sw, &w);
    if (!st) {
        g->tensors[w].group = group;
        st = vkl_graph_set_data(g, w, wq, wq_bytes, true);
    }
    if (!st && bias) st = vkl_graph_add_tensor(g, "bias", VKL_DTYPE_F32, VKL_TENSOR_WEIGHT, &sb, &b);
    if (!st && bias) st = vkl_graph_set_data(g, b, bias, (size_t)N * sizeof(float), true);
    if (!st) st = vkl_graph_add_tensor(g, "Y", VKL_DTYPE_F32, VKL_TENSOR_ACTIVATION, NULL, &y);
    const uint32_t ins[3] = {a, w, b};
    if (!st) st = vkl_graph_add_node(g, VKL_OP_QUANT_MAT_MUL, "qmm", ins, bias ? 3 : 2, &y, 1, NULL, 0, NULL);
    if (!st) st = vkl_graph_add_output(g, y);
    return test_graph_finish(ctx, g, st);
}

/* Runs g's one node on the Vulkan device by hand (so the executable can be
 * replayed and timed): A at arena offset 0, Y after it, the arena filled
 * with NaN bits first. y gets M*N floats. False if a call failed. */
static bool run_vulkan(vkl_context *ctx, const vkl_backend_vtable *be, const vkl_graph *g, const float *a,
                       size_t a_count, float *y, size_t y_count, bool f16, bool dot) {
    vkl_backend_device *dev = NULL;
    vkl_backend_weights *w = NULL;
    vkl_backend_buffer *arena = NULL;
    vkl_backend_exec *e = NULL;
    size_t *offsets = calloc(g->n_tensors, sizeof(size_t));
    const size_t a_bytes = a_count * sizeof(float), y_off = (a_bytes + 255) / 256 * 256;
    const size_t total = y_off + y_count * sizeof(float);
    unsigned char *poison = malloc(total);
    float *again = malloc(y_count * sizeof(float) + 1);
    for (uint32_t t = 0; t < g->n_tensors; t++) offsets[t] = VKL_NO_OFFSET;
    offsets[g->inputs[0]] = 0;
    offsets[g->outputs[0]] = y_off;
    memset(poison, 0xFF, total);
    vkl_memory_map mem = {NULL, offsets, g->n_tensors};
    vkl_binding b = {NULL, 0};
    vkl_status st = test_open_env(ctx, be, 0, true, &dev); /* profiled: node_times below */
    if (!st && vkl_vk_f16_math(dev) != f16)
        st = vkl_fail(ctx, VKL_ERR_INTERNAL, "asked for %s math, the device runs %s", f16 ? "f16" : "f32",
                      f16 ? "f32" : "f16");
    if (!st && vkl_vk_matvec_dot(dev) != dot)
        st = vkl_fail(ctx, VKL_ERR_INTERNAL, "asked for the %s matvecs, the device runs the %s ones",
                      dot ? "integer-dot" : "float", dot ? "float" : "integer-dot");
    if (!st) st = be->weights_load(dev, g, &w);
    if (!st) st = be->buffer_create(dev, ctx, VKL_BUFFER_DEVICE, total, &arena);
    if (!st) st = be->buffer_write(dev, ctx, arena, 0, poison, total);
    if (!st) st = be->buffer_write(dev, ctx, arena, 0, a, a_bytes);
    mem.arena = arena;
    if (!st) st = be->prepare(dev, ctx, g, w, &mem, &b, &e);
    if (!st) st = be->execute(dev, ctx, e, &b);
    if (!st) st = be->wait(dev, ctx, e);
    if (!st) st = be->buffer_read(dev, ctx, arena, y_off, y, y_count * sizeof(float));
    CHECK_OK(ctx, st);
    if (!st) {
        /* Replay: poison again, run the same command buffer, same bits. */
        st = be->buffer_write(dev, ctx, arena, y_off, poison, y_count * sizeof(float));
        if (!st) st = be->execute(dev, ctx, e, &b);
        if (!st) st = be->wait(dev, ctx, e);
        if (!st) st = be->buffer_read(dev, ctx, arena, y_off, again, y_count * sizeof(float));
        CHECK_OK(ctx, st);
        CHECKF(st || !memcmp(y, again, y_count * sizeof(float)), "a replay gave different bits");
        double ms[4];
        size_t n = 0;
        vkl_backend_caps dc;
        be->caps(dev, &dc);
        if (dc.features & VKL_FEATURE_TIMESTAMPS) {
            CHECK_OK(ctx, be->node_times(dev, ctx, e, ms, 4, &n));
            CHECKF(n == 1 && ms[0] >= 0 && ms[0] < 60e3, "node_times: %zu entries, first %g ms", n, n ? ms[0] : 0.0);
        } else { /* VKL_VK_DISABLE=timestamps, or a device without: refused, saying why */
            CHECK_ERR(ctx, be->node_times(dev, ctx, e, ms, 4, &n), VKL_ERR_UNSUPPORTED, "no per-node timestamps");
        }
    }
    if (e) be->exec_release(dev, ctx, e);
    if (arena) be->buffer_destroy(dev, ctx, arena);
    if (w) be->weights_release(dev, w);
    if (dev) be->close(dev);
    free(offsets);
    free(poison);
    free(again);
    return st == VKL_OK;
}

typedef struct mm_case {
    int64_t a_dims[3];
    uint32_t a_rank;
    int64_t N;
    size_t fmt;      /* index in formats */
    uint32_t group;  /* 0: K (int8 per output channel, the lm_head) */
    bool bias;
} mm_case;

/* The matvec's cases (decode: M = 1, and small M). */
static const mm_case matvec_cases[] = {
        {{1, 32}, 2, 5, 0, 32, false},        /* N below the rows per workgroup */
        {{1, 128}, 2, 7, 2, 128, false},
        {{1, 4096}, 2, 130, 0, 128, true},    /* N not a multiple of the rows per workgroup */
        {{1, 4096}, 2, 130, 2, 128, true},
        {{1, 11008}, 2, 96, 0, 128, false},   /* the paper's down_proj K */
        {{1, 11008}, 2, 96, 2, 128, false},
        {{1, 11008}, 2, 40, 3, 128, false},
        {{11008}, 1, 33, 1, 64, true},        /* rank-1 A, E0M4 n = 2 */
        {{3, 256}, 2, 33, 0, 32, false},      /* M > 1 */
        {{2, 2, 640}, 3, 17, 2, 64, true},    /* rank 3, M = 4 */
        {{1, 2048}, 2, 77, 3, 0, false},      /* int8 per channel (lm_head) */
        {{2, 512}, 2, 5, 3, 32, true},
};

/* The GEMM's (prefill): M from one partial tile (2) to several (300), N
 * leaving partial tiles, K a multiple of the group, every format. */
static const mm_case gemm_cases[] = {
    {{2, 256}, 2, 67, 0, 128, true},
    {{17, 512}, 2, 45, 1, 64, false},
    {{64, 256}, 2, 70, 2, 32, true},
    {{300, 128}, 2, 37, 3, 32, false},
    {{3, 100, 384}, 3, 131, 0, 128, true}, /* rank 3, M = 300 */
    {{64, 1024}, 2, 64, 2, 128, false},    /* whole tiles */
    {{17, 256}, 2, 19, 3, 0, true},        /* int8 per channel (group = K) */
};

/* The integer-dot matvecs' rounding bound (DOT_BOUND above) for output
 * (m, n): w0 the dequantized W [N, K], steps of `chunk` activations. Returns
 * the worst ratio |got - want| / bound over the outputs (<= 1 passes). */
static double dot_bound_ratio(const float *a, const float *w0, const float *got, const float *want, int64_t M,
                              int64_t N, int64_t K, int64_t chunk, double h) {
    double worst = 0;
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double rounding = 0, terms = 0;
            for (int64_t k0 = 0; k0 < K; k0 += chunk) {
                double amax = 0, wsum = 0;
                for (int64_t k = k0; k < k0 + chunk; k++) {
                    const double x = a[m * K + k], w = w0[n * K + k];
                    amax = fabs(x) > amax ? fabs(x) : amax;
                    wsum += fabs(w);
                    terms += fabs(x * w);
                }
                rounding += amax / 127.0 * h * wsum;
            }
            const double bound = 1.01 * rounding + DOT_F32_SLACK * (terms + fabs(want[m * N + n])) + 1e-30;
            const double ratio = fabs((double)got[m * N + n] - want[m * N + n]) / bound;
            if (!(ratio <= worst)) worst = ratio;
        }
    return worst;
}

/* Every case of the table under the current knobs, each held to bound_many
 * (FEW_FACTOR times it with at most FEW outputs), and with dot (the
 * integer-dot matvecs: 2 terms, or 1 without the residual) each output to
 * its rounding bound; returns the
 * largest relative L2 error of the cases with more than FEW outputs.
 * `math` names the setting in messages. */
static double test_matmul(vkl_context *ctx, rng *r, const mm_case *cases, size_t n_cases, bool f16, int dot,
                          double bound_many, const char *math) {
    double worst = 0;
    const vkl_backend_vtable *vk = vkl_backend_find("vulkan"), *ref = vkl_backend_find("ref");
    for (size_t ci = 0; ci < n_cases; ci++) {
        const mm_case *c = &cases[ci];
        const fmt *f = &formats[c->fmt];
        const int64_t K = c->a_dims[c->a_rank - 1], N = c->N;
        const uint32_t group = c->group ? c->group : (uint32_t)K;
        int64_t M = 1;
        for (uint32_t d = 0; d + 1 < c->a_rank; d++) M *= c->a_dims[d];
        float *wf = malloc((size_t)(N * K) * sizeof(float)), *a = malloc((size_t)(M * K) * sizeof(float));
        float *bias = malloc((size_t)N * sizeof(float)), *y = malloc((size_t)(M * N) * sizeof(float));
        fill_weights(r, wf, N, K, group);
        /* N(0, 1), and per row of A one spike of +-50 (an outlier feature)
         * per 512 activations */
        for (int64_t i = 0; i < M * K; i++) a[i] = rnd_gauss(r);
        for (int64_t m = 0; m < M; m++)
            for (int64_t s = 0; s < K / 512; s++) a[m * K + rnd_u32(r) % K] = rnd_u32(r) % 2 ? 50.0f : -50.0f;
        for (int64_t i = 0; i < N; i++) bias[i] = rnd_gauss(r);
        size_t wq_bytes = 0;
        uint8_t *wq = quantize(ctx, f, group, wf, N, K, &wq_bytes);
        vkl_graph *g =
            wq ? qmm_graph(ctx, c->a_dims, c->a_rank, N, f, group, wq, wq_bytes, c->bias ? bias : NULL) : NULL;
        vkl_host_tensor in = {.dtype = VKL_DTYPE_F32, .rank = c->a_rank, .data = a, .nbytes = (size_t)(M * K) * 4};
        memcpy(in.dims, c->a_dims, sizeof(c->a_dims));
        vkl_host_tensor want = {0};
        if (g) CHECK_OK(ctx, vkl_run_once(ctx, ref, g, &in, &want));
        if (g && want.data && run_vulkan(ctx, vk, g, a, (size_t)(M * K), y, (size_t)(M * N), f16, dot != 0)) {
            const float *yr = want.data;
            double err = 0, norm = 0;
            size_t nans = 0;
            for (int64_t i = 0; i < M * N; i++) {
                nans += !isfinite(y[i]);
                err += ((double)y[i] - yr[i]) * ((double)y[i] - yr[i]);
                norm += (double)yr[i] * yr[i];
            }
            const double rel = sqrt(err) / (sqrt(norm) > 0 ? sqrt(norm) : 1.0);
            const bool few = M * N <= FEW;
            const double bound = few ? FEW_FACTOR * bound_many : bound_many;
            CHECKF(nans == 0 && rel <= bound,
                   "%s math, %s group %u M=%lld K=%lld N=%lld%s: %zu unwritten/non-finite, relative L2 error %.3g "
                   "(bound %g)",
                   math, f->name, group, (long long)M, (long long)K,
                   (long long)N,
                   c->bias ? " +bias" : "", nans, rel, bound);
            if (!few && !(rel <= worst)) worst = rel;
            float *w0 = dot ? malloc((size_t)(N * K) * sizeof(float)) : NULL;
            if (w0) {
                CHECK_OK(ctx, vkl_quant_dequantize(ctx, f->dtype, group, wq, wq_bytes, N, K, w0));
                const double ratio = dot_bound_ratio(a, w0, y, yr, M, N, K, f->dtype == VKL_DTYPE_Q_INT8 ? 16 : 32,
                                                     dot == 2 ? 1.0 / 508 : 0.5);
                CHECKF(ratio <= 1.0, "%s math, %s group %u M=%lld K=%lld N=%lld: an output %.3g times its int8 "
                       "rounding bound", math, f->name, group, (long long)M, (long long)K, (long long)N, ratio);
                printf("  (worst output at %.2f of its int8 rounding bound)\n", ratio);
                free(w0);
            }
            printf("  matmul %-8s group %4u  M=%lld K=%5lld N=%4lld%-6s rel L2 error %.2e%s\n", f->name, group,
                   (long long)M, (long long)K, (long long)N, c->bias ? " +bias" : "", rel,
                   few ? " (few outputs: bound x10)" : "");
        }
        vkl_free(ctx, want.data);
        vkl_graph_destroy(g);
        free(wq);
        free(wf);
        free(a);
        free(bias);
        free(y);
    }
    return worst;
}

/* ---- (b') the GEMM (prefill) ------------------------------------------------------------------------ */

/* The GEMM from 2 rows (VKL_VK_GEMM_MIN_ROWS=1; by default from 16) in the
 * device's build and arithmetic settings: f32 math (the tiled f32 build,
 * held to F32_BOUND: codes and scales exact, sums in f32 in another order),
 * fp16 math where the device has it, which is the cooperative-matrix build
 * where the device has one (fp16 operands: A rounded once, products of the
 * exact codes summed in f32 by the matrix units; the tiled fp16 build adds
 * runs of 4 fp16 products), and the default math (f32: the tiled f32
 * build). Both fp16 kinds are held to F16_CENTER_BOUND (worst measured on lavapipe, tiled
 * fp16: 4.4e-4). Then other tile shapes (VKL_VK_GEMM_TM / _TN: 64 x 48 and
 * 32 x 32 tiles) in f32 math, and once with the threshold above M, which
 * must give the matvec's results (same bound). Then, in the default math,
 * the cooperative-matrix build's other shapes (on a device without it, the
 * tiled build's, with those TM / TN): K steps of 32 and 128 (one step at K
 * = 128, an odd number at K = 384), 128 x 128 tiles (2 x 2 subgroups of 4 x
 * 4 fragments), 128 x 64 (4 x 2 subgroups of 2 x 2: the fallback where
 * shared memory is short), K split in 3 and in 2, one subgroup of one
 * fragment, the default
 * (128 x 128 of 2 x 4 subgroups of 4 x 2) named, and 16 x 48 tiles of 1 x 3 subgroups whose invocations do not
 * divide a step's loads (some load nothing). Last, where fp16 math runs,
 * the cooperative-matrix body with its fragments emulated in plain f32
 * (VKL_VK_GEMM_CM_EMULATE: the _cmemu shaders, which must be what runs),
 * so that lavapipe checks that kernel's loads, decode, double buffering
 * and epilogue: the default shape, steps of 32 and 128 (one step at K =
 * 128, three at 384), 2 x 2 subgroups of 2 x 2 fragments, one subgroup,
 * 1 x 3 subgroups whose invocations do not divide a step's A loads, and K
 * in 3 slices (VKL_VK_GEMM_SPLIT: planes of partial sums in scratch, added
 * by a second dispatch; 2 slices where K has 4 steps).
 * `emulated` runs those last rows only (ctest vulkan.quant.coopmat-emulated:
 * lavapipe takes ~2 minutes over them), else every other row. */
static void test_gemm(vkl_context *ctx, rng *r, bool f16_ok, bool emulated) {
    static const char *const settings[][9] = {
        /* VKL_VK_MATH, VKL_VK_GEMM_TM, _TN, _MIN_ROWS, _BK, _SGM, _SGN, _CM_EMULATE, _SPLIT */
        {"f32", "", "", "1", "", "", "", "", ""},       {"f16", "", "", "1", "", "", "", "", ""},
        {"", "", "", "1", "", "", "", "", ""},          {"f32", "4", "3", "1", "", "", "", "", ""},
        {"f32", "2", "2", "1", "", "", "", "", ""},     {"f32", "", "", "100000", "", "", "", "", ""},
        {"", "", "", "1", "32", "", "", "", ""},        {"", "", "", "1", "128", "", "", "", ""},
        {"", "4", "4", "1", "32", "2", "2", "", ""},    {"", "2", "2", "1", "32", "4", "2", "", ""},
        {"", "1", "1", "1", "64", "1", "1", "", ""},    {"", "1", "1", "1", "128", "1", "3", "", ""},
        {"", "4", "2", "1", "32", "2", "4", "", ""}, /* the default (2 x 4 subgroups of 4 x 2), named */
        /* K in 3 slices at the default tile (2 at K = 128), in 2 at one subgroup */
        {"", "", "", "1", "", "", "", "", "3"}, {"", "1", "1", "1", "128", "1", "1", "", "2"},
        /* emulated: the default 2 x 4 subgroups of 4 x 2 at BK 32 need 48 KiB of shared memory and its fallback,
         * 4 x 2 of 2 x 2, 38 KiB (lavapipe has 32), so the shapes are given whole: BK 64 on 2 x 2 subgroups of
         * 2 x 1, 2 x 4 of 2 x 1 at BK 32, the fallback's 2 x 2 fragments on 2 x 2 subgroups at BK 32 (below;
         * 4 x 2 fragments emulated outlast lavapipe's fence wait on 2 busy cores) */
        {"f16", "2", "1", "1", "64", "2", "2", "1", ""}, {"f16", "2", "1", "1", "32", "2", "4", "1", ""},
        {"f16", "1", "1", "1", "128", "1", "2", "1", ""}, {"f16", "2", "2", "1", "32", "2", "2", "1", ""},
        {"f16", "1", "1", "1", "64", "1", "1", "1", ""},  {"f16", "1", "1", "1", "32", "1", "3", "1", ""},
        {"f16", "2", "2", "1", "32", "2", "2", "1", "3"}, /* K in 3 slices (2 at K = 128) */
    };
    enum { KNOBS = 9 };
    static const char *const knobs[KNOBS] = {"VKL_VK_MATH",     "VKL_VK_GEMM_TM",  "VKL_VK_GEMM_TN",
                                             "VKL_VK_GEMM_MIN_ROWS", "VKL_VK_GEMM_BK", "VKL_VK_GEMM_SGM",
                                             "VKL_VK_GEMM_SGN", "VKL_VK_GEMM_CM_EMULATE", "VKL_VK_GEMM_SPLIT"};
    const vkl_backend_vtable *vk = vkl_backend_find("vulkan");
    for (size_t v = 0; v < VKL_ARRAY_LEN(settings); v++) {
        if (!*settings[v][7] != !emulated) continue;
        if (!strcmp(settings[v][0], "f16") && !f16_ok) {
            printf(" gemm f16 math: skipped (no fp16 math on this device)\n");
            continue;
        }
        for (size_t k = 0; k < KNOBS; k++) {
            if (*settings[v][k]) setenv(knobs[k], settings[v][k], 1);
            else unsetenv(knobs[k]);
        }
        vkl_backend_device *dev = NULL;
        char build[224] = "";
        CHECK_OK(ctx, test_open_env(ctx, vk, 0, false, &dev));
        if (!dev) continue;
        vkl_vk_gemm_describe(dev, build, sizeof(build));
        const bool f16 = vkl_vk_f16_math(dev), exact = !f16 && strstr(build, "tiled f32") != NULL;
        vk->close(dev);
        printf(" gemm: VKL_VK_MATH=%s TM=%s TN=%s MIN_ROWS=%s BK=%s SGM=%s SGN=%s CM_EMULATE=%s SPLIT=%s: %s\n",
               *settings[v][0] ? settings[v][0] : "(default)", settings[v][1], settings[v][2], settings[v][3],
               settings[v][4], settings[v][5], settings[v][6], settings[v][7], settings[v][8], build);
        CHECKF(!*settings[v][7] || strstr(build, "emulated"), "emulation asked, got %s", build);
        const double bound = exact ? F32_BOUND : F16_CENTER_BOUND;
        const double e = test_matmul(ctx, r, gemm_cases, VKL_ARRAY_LEN(gemm_cases), f16, false, bound, build);
        printf("  worst relative L2 error %.2e (bound %g)\n", e, bound);
    }
    for (size_t k = 0; k < KNOBS; k++) unsetenv(knobs[k]);
    if (emulated) return;
    /* Bad tiles fail open, naming the option: out of range, more shared
     * memory than the device has (16 x 16 outputs of 16 x 16 invocations:
     * 66 KB in f32), a K step the cooperative-matrix build lacks, too many
     * subgroups (checked on every device, as the tile options are). */
    static const char *const bad[][5] = {
        /* knob, value, knob, value, the message */
        {"VKL_VK_GEMM_TM", "17", "VKL_VK_GEMM_TN", "4", "gemm_tile_m = 17"},
        {"VKL_VK_GEMM_TM", "16", "VKL_VK_GEMM_TN", "16", "shared memory"},
        {"VKL_VK_GEMM_BK", "48", "VKL_VK_GEMM_SGM", "2", "gemm_step_k = 48"},
        {"VKL_VK_GEMM_BK", "64", "VKL_VK_GEMM_SGN", "9", "gemm_subgroups_n = 9"},
        {"VKL_VK_GEMM_SPLIT", "17", "VKL_VK_GEMM_SGN", "2", "gemm_split_k = 17"},
    };
    for (size_t i = 0; i < VKL_ARRAY_LEN(bad); i++) {
        setenv(bad[i][0], bad[i][1], 1);
        setenv(bad[i][2], bad[i][3], 1);
        setenv("VKL_VK_MATH", "f32", 1);
        vkl_backend_device *dev = NULL;
        CHECK_ERR(ctx, test_open_env(ctx, vk, 0, false, &dev), VKL_ERR_INVALID_ARGUMENT, bad[i][4]);
        if (dev) vk->close(dev);
        unsetenv(bad[i][0]);
        unsetenv(bad[i][2]);
    }
    unsetenv("VKL_VK_MATH");
}

/* ---- (b'') the compute peaks vkbench prints beside the GEMM ------------------------------------------ */

/* f32 always (> 0, finite); fp16 exactly when the device runs fp16 math or
 * the cooperative-matrix GEMM (shaderFloat16 enabled);
 * the cooperative-matrix peak exactly when the GEMM runs on the matrix
 * units, and a reason wherever one is not measured. */
static void test_peaks(vkl_context *ctx, bool f16) {
    const vkl_backend_vtable *vk = vkl_backend_find("vulkan");
    if (f16) setenv("VKL_VK_MATH", "f16", 1);
    vkl_backend_device *dev = NULL;
    CHECK_OK(ctx, test_open_env(ctx, vk, 0, true, &dev));
    vkl_backend_caps dc;
    if (dev) vk->caps(dev, &dc);
    if (dev && (dc.features & VKL_FEATURE_TIMESTAMPS)) {
        vkl_compute_peaks p;
        char build[160];
        vkl_vk_gemm_describe(dev, build, sizeof(build));
        CHECK_OK(ctx, vk->compute_peaks(dev, ctx, &p));
        CHECKF(p.f32 > 0 && isfinite(p.f32), "f32 peak %g", p.f32);
        const bool cm = strstr(build, "cooperative") != NULL;
        CHECKF(f16 || cm ? p.f16 > 0 && isfinite(p.f16) : p.f16 == 0 && p.f16_why[0], "fp16 peak %g (%s)", p.f16,
               p.f16_why);
        CHECKF(cm ? p.coopmat > 0 && p.coopmat_shape[0] : p.coopmat == 0 && p.coopmat_why[0],
               "coopmat peak %g (%s) with the GEMM %s", p.coopmat, p.coopmat_why, build);
        printf(" peaks (%s math): f32 %.3g, fp16 %.3g (%s), coopmat %.3g (%s) GFLOP/s\n", f16 ? "f16" : "f32",
               p.f32 / 1e9, p.f16 / 1e9, p.f16_why, p.coopmat / 1e9, p.coopmat_why);
    } else if (dev) {
        vkl_compute_peaks p;
        CHECK_ERR(ctx, vk->compute_peaks(dev, ctx, &p), VKL_ERR_UNSUPPORTED, "timestamps");
    }
    if (dev) vk->close(dev);
    unsetenv("VKL_VK_MATH");
}

/* ---- (c) a node the kernels refuse ------------------------------------------------------------------ */

/* Refused at prepare, naming the node and its op: an f64 Relu on a device
 * without f64 arithmetic (VKL_VK_NO_F64=1 makes this one such a device). */
static void test_unsupported(vkl_context *ctx) {
    vkl_graph *g = NULL;
    CHECK_OK(ctx, vkl_graph_create(ctx, &g));
    if (!g) return;
    vkl_shape s = {.rank = 1};
    s.dims[0] = cexpr(g, 8);
    uint32_t x = VKL_NONE, y = VKL_NONE;
    vkl_status st = vkl_graph_add_tensor(g, "x", VKL_DTYPE_F64, VKL_TENSOR_INPUT, &s, &x);
    if (!st) st = vkl_graph_add_input(g, x);
    if (!st) st = vkl_graph_add_tensor(g, "y", VKL_DTYPE_F64, VKL_TENSOR_ACTIVATION, NULL, &y);
    if (!st) st = vkl_graph_add_node(g, VKL_OP_RELU, "the_relu", &x, 1, &y, 1, NULL, 0, NULL);
    if (!st) st = vkl_graph_add_output(g, y);
    if (!st) st = vkl_graph_validate(g);
    if (!st) st = vkl_graph_infer_shapes(g);
    CHECK_OK(ctx, st);
    double data[8] = {1, -2, 3, -4, 5, -6, 7, -8};
    vkl_host_tensor in = {.dtype = VKL_DTYPE_F64, .rank = 1, .dims = {8}, .data = data, .nbytes = sizeof(data)};
    vkl_host_tensor out = {0};
    if (!st) {
        setenv("VKL_VK_NO_F64", "1", 1);
        const vkl_backend_vtable *vk = vkl_backend_find("vulkan");
        vkl_backend_device *dev = NULL;
        CHECK_OK(ctx, test_open_env(ctx, vk, 0, false, &dev));
        if (dev) {
            CHECK_ERR(ctx, vkl_run_once_on(ctx, vk, dev, g, &in, &out), VKL_ERR_UNSUPPORTED, "the_relu");
            CHECK_MSG(ctx, "Relu");
            vk->close(dev);
        }
        unsetenv("VKL_VK_NO_F64");
    }
    vkl_free(ctx, out.data);
    vkl_graph_destroy(g);
}

/* test_vk_quant [--coopmat-emulation]: everything, or the cooperative-
 * matrix GEMM's emulation alone (test_gemm). */
int main(int argc, char **argv) {
    const bool emulation = argc > 1 && !strcmp(argv[1], "--coopmat-emulation");
    vkl_context *ctx;
    const vkl_backend_vtable *vk;
    vkl_backend_caps caps;
    vkl_status st;
    const int early = test_vulkan_main_start("test_vk_quant", &ctx, &vk, NULL, &caps, &st);
    if (early >= 0) return early;
    CHECK_OK(ctx, st);
    if (st) {
        vkl_context_destroy(ctx);
        return check_finish("test_vk_quant");
    }
    const char *val = getenv("VKL_VK_VALIDATION");
    printf("test_vk_quant: %s (%s), validation %s\n", caps.device_name, caps.driver,
           val && strcmp(val, "0") ? "on" : "off");
    /* VKL_TEST_SEED=n: other random data (how the bounds above were measured) */
    rng r = {0x9E3779B97F4A7C15ull ^ (getenv("VKL_TEST_SEED") ? strtoull(getenv("VKL_TEST_SEED"), NULL, 10) : 0)};
    vkl_backend_device *dev = NULL;
    CHECK_OK(ctx, test_open_env(ctx, vk, 0, false, &dev));
    if (dev && emulation) {
        vk->close(dev);
        setenv("VKL_VK_MATH", "f16", 1);
        dev = NULL;
        const bool f16_ok = test_open_env(ctx, vk, 0, false, &dev) == VKL_OK && vkl_vk_f16_math(dev);
        if (dev) vk->close(dev);
        unsetenv("VKL_VK_MATH");
        test_gemm(ctx, &r, f16_ok, true);
        CHECKF(validation_messages == 0, "%d validation message(s)", validation_messages);
        vkl_context_destroy(ctx);
        return check_finish("test_vk_quant");
    }
    if (dev) {
        test_dequant(ctx, dev, &r);
        vk->close(dev);
    }
    /* The matvec's variants, whatever this device would choose: activations
     * staged through shared memory or read directly, subgroup or
     * shared-memory reductions (the knobs are read at open), in f32 math and,
     * where the device has shaderFloat16, in fp16 math. */
    /* stage, no-subgroup, unroll, e0m4-f32, workgroup, rows, math, f16-center, matvec, residual, team; "":
     * the device's default (the float matvecs always named: the default may be dot). The dot rows reach
     * each reduction of quant_matvec_dot.glsl: teams of one subgroup (the default where the subgroup size
     * is fixed, as on lavapipe), subgroupAdd then shared memory (team = workgroup), shared-memory trees
     * (no subgroup arithmetic; or a team of several subgroups), rows 1..16 a team, unroll 1..4. */
    static const char *const variants[][11] = {{"", "", "", "", "", "", "f32", "", "float", "", ""},
                                              {"1", "0", "1", "0", "128", "4", "f32", "", "float", "", ""},
                                              {"0", "0", "1", "0", "128", "8", "f32", "", "float", "", ""},
                                              {"1", "1", "2", "0", "64", "3", "f32", "", "float", "", ""},
                                              {"0", "1", "3", "1", "32", "1", "f32", "", "float", "", ""},
                                              {"1", "0", "2", "1", "64", "8", "f32", "", "float", "", ""},
                                              {"", "", "", "", "", "", "f16", "1", "float", "", ""},
                                              {"", "", "", "", "", "", "f16", "0", "float", "", ""},
                                              {"0", "0", "1", "0", "128", "8", "f16", "1", "float", "", ""},
                                              {"1", "1", "2", "1", "64", "3", "f16", "0", "float", "", ""},
                                              {"0", "1", "3", "0", "32", "1", "f16", "1", "float", "", ""},
                                              {"", "", "", "", "", "", "", "", "dot", "", ""},
                                              {"", "", "", "", "", "", "", "", "dot", "0", ""},
                                              {"", "0", "1", "", "128", "4", "", "", "dot", "", "128"},
                                              {"", "1", "2", "", "64", "3", "", "", "dot", "0", "16"},
                                              {"", "1", "3", "", "32", "16", "", "", "dot", "1", ""},
                                              {"", "0", "4", "", "64", "2", "", "", "dot", "", "32"},
                                              {"", "0", "1", "", "64", "1", "", "", "dot", "", "1"},
                                              {"", "", "", "", "64", "8", "f16", "", "dot", "", ""}};
    enum { KNOBS = 11 };
    static const char *const knobs[KNOBS] = {"VKL_VK_QMV_STAGE", "VKL_VK_NO_SUBGROUP_OPS", "VKL_VK_QMV_UNROLL",
                                             "VKL_VK_E0M4_F32",  "VKL_VK_QMV_WG",          "VKL_VK_QMV_ROWS",
                                             "VKL_VK_MATH",      "VKL_VK_F16_CENTER",      "VKL_VK_MATVEC",
                                             "VKL_VK_DOT_RESIDUAL", "VKL_VK_QMV_TEAM"};
    /* fp16 math needs shaderFloat16: without it (or with VKL_FEATURE_FP16
     * masked) open refuses VKL_VK_MATH=f16, and its message says why. */
    bool f16_ok = false;
    char f16_why[512] = "";
    {
        setenv("VKL_VK_MATH", "f16", 1);
        vkl_backend_device *d16 = NULL;
        vkl_status s16 = test_open_env(ctx, vk, 0, false, &d16);
        f16_ok = s16 == VKL_OK && vkl_vk_f16_math(d16);
        if (s16) snprintf(f16_why, sizeof(f16_why), "%s", vkl_context_error(ctx));
        CHECKF(s16 == VKL_OK || s16 == VKL_ERR_UNSUPPORTED, "open with VKL_VK_MATH=f16: %s", vkl_status_name(s16));
        CHECKF(s16 || (caps.features & VKL_FEATURE_FP16), "fp16 math opened without VKL_FEATURE_FP16 in caps");
        if (d16) vk->close(d16);
        /* masked by the options: refused, naming the mask */
        d16 = NULL;
        if (f16_ok) {
            CHECK_ERR(ctx, test_open_env(ctx, vk, VKL_FEATURE_FP16, false, &d16), VKL_ERR_UNSUPPORTED,
                      "VKL_FEATURE_FP16");
            if (d16) vk->close(d16);
        }
        setenv("VKL_VK_MATH", "f64", 1);
        d16 = NULL;
        CHECK_ERR(ctx, test_open_env(ctx, vk, 0, false, &d16), VKL_ERR_INVALID_ARGUMENT, "VKL_VK_MATH=f64");
        if (d16) vk->close(d16);
        unsetenv("VKL_VK_MATH");
    }
    /* The integer-dot matvecs need shaderIntegerDotProduct (VKL_FEATURE_INT8_DOT):
     * without it, or masked, open refuses VKL_VK_MATVEC=dot, saying why;
     * VKL_VK_MATVEC=float never runs them. */
    bool dot_ok = false;
    char dot_why[512] = "";
    {
        setenv("VKL_VK_MATVEC", "dot", 1);
        vkl_backend_device *dd = NULL;
        const vkl_status sd = test_open_env(ctx, vk, 0, false, &dd);
        dot_ok = sd == VKL_OK && vkl_vk_matvec_dot(dd);
        if (sd) snprintf(dot_why, sizeof(dot_why), "%s", vkl_context_error(ctx));
        CHECKF(sd == VKL_OK ? (caps.features & VKL_FEATURE_INT8_DOT) && dot_ok : sd == VKL_ERR_UNSUPPORTED,
               "open with VKL_VK_MATVEC=dot: %s, integer dot %s in caps", vkl_status_name(sd),
               (caps.features & VKL_FEATURE_INT8_DOT) ? "" : "not");
        if (dd) vk->close(dd);
        dd = NULL;
        if (dot_ok) {
            CHECK_ERR(ctx, test_open_env(ctx, vk, VKL_FEATURE_INT8_DOT, false, &dd), VKL_ERR_UNSUPPORTED,
                      "VKL_FEATURE_INT8_DOT");
            if (dd) vk->close(dd);
        }
        /* the dot matvec's shape knobs: a team within the workgroup, a power
         * of two, at least one invocation per row it stores; else open fails,
         * naming the option */
        static const char *const bad[][7] = {
            /* knob, value, knob, value, knob, value, the message */
            {"VKL_VK_QMV_TEAM", "128", "VKL_VK_QMV_WG", "64", "VKL_VK_QMV_ROWS", "4", "matvec_team = 128"},
            {"VKL_VK_QMV_TEAM", "3", "VKL_VK_QMV_WG", "64", "VKL_VK_QMV_ROWS", "1", "matvec_team = 3"},
            {"VKL_VK_QMV_TEAM", "4", "VKL_VK_QMV_WG", "64", "VKL_VK_QMV_ROWS", "8", "matvec_rows = 8"},
        };
        for (size_t i = 0; dot_ok && i < VKL_ARRAY_LEN(bad); i++) {
            setenv("VKL_VK_MATVEC", "dot", 1);
            for (int k = 0; k < 3; k++) setenv(bad[i][2 * k], bad[i][2 * k + 1], 1);
            dd = NULL;
            CHECK_ERR(ctx, test_open_env(ctx, vk, 0, false, &dd), VKL_ERR_INVALID_ARGUMENT, bad[i][6]);
            if (dd) vk->close(dd);
            for (int k = 0; k < 3; k++) unsetenv(bad[i][2 * k]);
        }
        setenv("VKL_VK_MATVEC", "float", 1);
        dd = NULL;
        CHECK_OK(ctx, test_open_env(ctx, vk, 0, false, &dd));
        CHECKF(!dd || !vkl_vk_matvec_dot(dd), "VKL_VK_MATVEC=float ran the integer-dot matvecs");
        if (dd) vk->close(dd);
        setenv("VKL_VK_MATVEC", "int4", 1);
        dd = NULL;
        CHECK_ERR(ctx, test_open_env(ctx, vk, 0, false, &dd), VKL_ERR_INVALID_ARGUMENT, "VKL_VK_MATVEC=int4");
        if (dd) vk->close(dd);
        unsetenv("VKL_VK_MATVEC");
    }
    double worst[5] = {0, 0, 0, 0, 0}; /* f32, f16 fold, f16 centered, dot one-term, dot */
    for (size_t v = 0; v < VKL_ARRAY_LEN(variants); v++) {
        const bool f16 = !strcmp(variants[v][6], "f16"), center = f16 && !strcmp(variants[v][7], "1");
        const int dot = strcmp(variants[v][8], "dot") ? 0 : strcmp(variants[v][9], "0") ? 2 : 1;
        if (dot && (!dot_ok || (f16 && !f16_ok))) {
            if (!strcmp(variants[v][4], "") && !strcmp(variants[v][9], ""))
                printf(" integer-dot matvecs: skipped: %s\n", dot_ok ? f16_why : dot_why);
            continue;
        }
        if (f16 && !f16_ok) {
            if (!strcmp(variants[v][4], "") && center) printf(" f16 math: skipped: %s\n", f16_why);
            continue;
        }
        printf(" matvec variant:%s", strcmp(variants[v][4], "") ? "" : " the device's defaults");
        for (size_t k = 0; k < KNOBS; k++) {
            if (*variants[v][k]) {
                setenv(knobs[k], variants[v][k], 1);
                printf(" %s=%s", knobs[k], variants[v][k]);
            } else {
                unsetenv(knobs[k]);
            }
        }
        vkl_backend_device *vd = NULL;
        char build[256] = "";
        if (!test_open_env(ctx, vk, 0, false, &vd)) vkl_vk_matvec_describe(vd, build, sizeof(build));
        if (vd) vk->close(vd);
        printf("\n   runs: %s\n", build);
        const double e = test_matmul(ctx, &r, matvec_cases, VKL_ARRAY_LEN(matvec_cases), f16, dot,
                                     dot == 2 ? DOT_L2_BOUND : dot ? DOT1_L2_BOUND : !f16 ? F32_BOUND
                                     : center ? F16_CENTER_BOUND : F16_FOLD_BOUND,
                                     dot == 2 ? "integer-dot" : dot ? "integer-dot one-term" : !f16 ? "f32"
                                     : center ? "f16 centered" : "f16 fold");
        const int i = dot ? 2 + dot : f16 ? 1 + center : 0;
        if (!(e <= worst[i])) worst[i] = e;
    }
    for (size_t k = 0; k < KNOBS; k++) unsetenv(knobs[k]);
    printf("worst relative L2 error (cases of > %d outputs): f32 math %.2e (bound %g)", FEW, worst[0], F32_BOUND);
    if (f16_ok)
        printf("; f16 math centered %.2e (bound %g), fold %.2e (bound %g)", worst[2], F16_CENTER_BOUND, worst[1],
               F16_FOLD_BOUND);
    else
        printf("; f16 math skipped");
    if (dot_ok)
        printf("; integer-dot %.2e (bound %g), one-term %.2e (bound %g)\n", worst[4], DOT_L2_BOUND, worst[3],
               DOT1_L2_BOUND);
    else printf("; integer-dot skipped\n");
    /* the GEMM's cases and its threshold check hold the float matvecs to f32's bound */
    setenv("VKL_VK_MATVEC", "float", 1);
    test_gemm(ctx, &r, f16_ok, false);
    test_peaks(ctx, false);
    if (f16_ok) test_peaks(ctx, true);
    unsetenv("VKL_VK_MATVEC");
    test_unsupported(ctx);
    CHECKF(validation_messages == 0, "%d validation message(s)", validation_messages);
    vkl_context_destroy(ctx);
    return check_finish("test_vk_quant");
}
