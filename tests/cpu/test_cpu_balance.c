/* The cpu backend's threads balanced over unequal cores (docs/cpu.md,
 * "Threads"), on 2 threads with worker 1 made 3 times slower
 * (vkl_backend_options.slow_factor, what VKL_CPU_SLOW_WORKER=1:3 sets):
 *  (a) the calibration at open sees it: worker 0's int8 dot rate about 3
 *      times worker 1's (2.4 to 3.6), over the ratio a device with no slow
 *      worker calibrates just before (the two cores need not be equal: a
 *      shared runner's second core has measured 1.6x slower);
 *  (b) the split gives worker 1 well under half the rows, near a quarter:
 *      its share of the products, after a run of decode-sized products
 *      that kept it current, 0.15 to 0.40 (a decode product is memory-bound
 *      and its speeds follow the machine: 0.16-0.26 here, 0.348 on a
 *      shared 2-core CI runner whose (d) was 0.61 the same run);
 *  (c) the outputs equal, bit for bit, those of a device with no slow
 *      worker (equal cores, equal shares): a decode product (1 row of X),
 *      3 rows (still one range a worker) and a prefill GEMM (37 rows: six
 *      panels of the tile and a row left over, a dynamic tail);
 *  (d) a decode product takes well less time than with the shares held
 *      equal (VKL_CPU_DISABLE=balance) on the same slow worker: ideally
 *      max(3/4, 3/4) / max(1/2, 3/2) = 0.5 of it; checked below 0.8, each
 *      the best of 15 runs, interleaved. The prefill GEMM's ratio (best of
 *      3) is printed.
 * The products: two QuantMatMul nodes in a chain on one int4 weight (group
 * 128) of 4096 x 4096, 8 MiB, so a run is long beside the clock and the
 * hand-out. The timings are taken a few times before failing: the machine
 * is shared. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "check.h"
#include "ops.h"
#include "ops/shape_util.h"
#include "quant/quant.h"
#include "runner.h"

#define DIM 4096
#define GROUP 128
#define RUNS 15
#define GEMM_RUNS 3 /* printed only; 40 ms a run here, 4-5 s under qemu */
#define ATTEMPTS 5 /* failed once in 3 at load 8 beside the full ctest */
#define SLOW_FACTOR 3.0

static double seconds_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static float frand(uint64_t *s) {
    *s = *s * 6364136223846793005u + 1442695040888963407u;
    return (float)((*s >> 40) & 0xFFFF) / 32768.0f - 1.0f;
}

/* y = W (W x) for M rows x of DIM: two QuantMatMul nodes sharing W. */
static vkl_graph *chain_graph(vkl_context *ctx, int64_t M, const void *w, size_t w_bytes) {
    vkl_graph *g;
    CHECK_OK(ctx, vkl_graph_create(ctx, &g));
    uint32_t a = 0, wt = 0, mid = 0, y = 0;
    vkl_shape sa, sw;
    const int64_t da[2] = {M, DIM}, dw[2] = {DIM, DIM};
    vkl_status st = vkl_shape_from_ints(g, da, 2, &sa);
    if (!st) st = vkl_shape_from_ints(g, dw, 2, &sw);
    if (!st) st = vkl_graph_add_tensor(g, "a", VKL_DTYPE_F32, VKL_TENSOR_INPUT, &sa, &a);
    if (!st) st = vkl_graph_add_tensor(g, "w", VKL_DTYPE_Q_INT4, VKL_TENSOR_WEIGHT, &sw, &wt);
    if (!st) g->tensors[wt].group = GROUP;
    if (!st) st = vkl_graph_set_data(g, wt, w, w_bytes, true);
    if (!st) st = vkl_graph_add_input(g, a);
    if (!st) st = vkl_graph_add_tensor(g, "mid", VKL_DTYPE_INVALID, VKL_TENSOR_ACTIVATION, NULL, &mid);
    if (!st) st = vkl_graph_add_tensor(g, "y", VKL_DTYPE_INVALID, VKL_TENSOR_ACTIVATION, NULL, &y);
    if (!st) st = vkl_graph_add_output(g, y);
    const uint32_t in1[2] = {a, wt}, in2[2] = {mid, wt};
    if (!st) st = vkl_graph_add_node(g, VKL_OP_QUANT_MAT_MUL, "mm1", in1, 2, &mid, 1, NULL, 0, NULL);
    if (!st) st = vkl_graph_add_node(g, VKL_OP_QUANT_MAT_MUL, "mm2", in2, 2, &y, 1, NULL, 0, NULL);
    if (!st) st = vkl_graph_validate(g);
    if (!st) st = vkl_graph_infer_shapes(g);
    CHECK_OK(ctx, st);
    return g;
}

/* One device and its runner for a graph (forgotten before the graph is
 * destroyed: the runner's plan points into it). */
typedef struct rig {
    vkl_backend_device *dev;
    vkl_runner *runner;
} rig;

static const vkl_backend_vtable *cpu;

static void rig_open(vkl_context *ctx, const vkl_backend_options *o, rig *r) {
    memset(r, 0, sizeof(*r));
    CHECK_OK(ctx, cpu->open(ctx, o, &r->dev));
}

/* One run of g on r (its runner made on first use), the output into *out
 * (allocated); returns its seconds. */
static double step(vkl_context *ctx, rig *r, const vkl_graph *g, const vkl_host_tensor *in, vkl_host_tensor *out) {
    if (!r->runner) CHECK_OK(ctx, vkl_runner_create_on(ctx, cpu, r->dev, g, 0, &r->runner));
    const double t0 = seconds_now();
    CHECK_OK(ctx, vkl_runner_step(r->runner, in, NULL, 0, out));
    return seconds_now() - t0;
}

static void rig_forget(rig *r) {
    vkl_runner_destroy(r->runner);
    r->runner = NULL;
}

static void rig_close(rig *r) {
    rig_forget(r);
    cpu->close(r->dev);
}

static void speeds(rig *r, double rate[2], double share[2]) {
    size_t n = 0;
    cpu->worker_speeds(r->dev, rate, share, 2, &n);
    CHECK(n == 2);
}

/* (a): calibration at open sees worker 1 about 3x slower than a device
 * with no slow worker opened just before sees it; both reopened a few times
 * before failing. The devices stay open in *slow and *even. */
static void open_slow(vkl_context *ctx, rig *slow, rig *even) {
    const vkl_backend_options o = {.threads = 2, .slow_worker = 1, .slow_factor = SLOW_FACTOR};
    const vkl_backend_options even_o = {.threads = 2};
    bool ok = false;
    for (int attempt = 0; attempt < ATTEMPTS && !ok; attempt++) {
        if (attempt) {
            rig_close(even);
            rig_close(slow);
        }
        rig_open(ctx, &even_o, even);
        rig_open(ctx, &o, slow);
        double rate[2], share[2], even_rate[2], even_share[2];
        speeds(even, even_rate, even_share);
        speeds(slow, rate, share);
        const double even_ratio = even_rate[0] / even_rate[1], ratio = rate[0] / rate[1] / even_ratio;
        printf("    no slow worker: int8 dot at open %.1f / %.1f GOP/s (ratio %.2f), shares %.3f %.3f\n",
               even_rate[0] / 1e9, even_rate[1] / 1e9, even_ratio, even_share[0], even_share[1]);
        printf("(a) worker 1 made %.0fx slower: int8 dot at open %.1f / %.1f GOP/s (%.2f over the ratio above), "
               "shares %.3f %.3f\n",
               SLOW_FACTOR, rate[0] / 1e9, rate[1] / 1e9, ratio, share[0], share[1]);
        /* "About 3x": within a factor 1.8 of it, the drift seen between two
         * calibrations of the same 2-vCPU VM (the even device's ratio ranged
         * 0.77-1.38 within one run, 2026-11-27, and a Debug build then saw
         * 2.14-5.12 in five attempts); far from 1 either way. */
        ok = ratio > SLOW_FACTOR / 1.8 && ratio < SLOW_FACTOR * 1.8;
    }
    CHECKF(ok, "(a) the calibration did not see worker 1 about %.0fx slower in %d attempts", SLOW_FACTOR, ATTEMPTS);
}

/* (c): the output of g on `slow` equals the balanced device's, bit for bit. */
static void same_bits(vkl_context *ctx, rig *slow, rig *even, const vkl_graph *g, const vkl_host_tensor *in,
                      int64_t M) {
    vkl_host_tensor want = {0}, got = {0};
    step(ctx, even, g, in, &want);
    step(ctx, slow, g, in, &got);
    CHECKF(want.data && got.data && !memcmp(want.data, got.data, (size_t)(M * DIM) * sizeof(float)),
           "(c) %lld rows: the slow worker's split changed the bits", (long long)M);
    printf("(c) M %lld: the outputs equal the balanced run's, bit for bit\n", (long long)M);
    vkl_free(ctx, want.data);
    vkl_free(ctx, got.data);
    rig_forget(even);
    rig_forget(slow);
}

/* Best of `runs` runs of g on a and on b, interleaved. */
static void race(vkl_context *ctx, rig *a, rig *b, const vkl_graph *g, const vkl_host_tensor *in, int runs,
                 double best[2]) {
    best[0] = best[1] = 1e30;
    for (int i = 0; i < runs; i++) {
        vkl_host_tensor out = {0};
        double t = step(ctx, a, g, in, &out);
        best[0] = t < best[0] ? t : best[0];
        vkl_free(ctx, out.data);
        t = step(ctx, b, g, in, &out);
        best[1] = t < best[1] ? t : best[1];
        vkl_free(ctx, out.data);
    }
}

int main(void) {
    vkl_context *ctx;
    CHECK(vkl_context_create(NULL, &ctx) == VKL_OK);
    cpu = vkl_backend_find("cpu");
    CHECK(cpu && cpu->worker_speeds);
    if (!cpu) return check_finish("test_cpu_balance");

    uint64_t seed = 7;
    float *wf = malloc((size_t)DIM * DIM * sizeof(float)), *x = malloc((size_t)37 * DIM * sizeof(float));
    CHECK(wf && x);
    for (size_t i = 0; i < (size_t)DIM * DIM; i++) wf[i] = frand(&seed) * 0.02f;
    for (size_t i = 0; i < (size_t)37 * DIM; i++) x[i] = frand(&seed);
    vkl_quant_spec spec;
    vkl_quant_spec_init(&spec, VKL_DTYPE_Q_INT4);
    spec.group = GROUP;
    size_t w_bytes = 0;
    CHECK_OK(ctx, vkl_quant_canonical_bytes(ctx, VKL_DTYPE_Q_INT4, GROUP, DIM, DIM, &w_bytes));
    void *w = malloc(w_bytes);
    CHECK(w);
    CHECK_OK(ctx, vkl_quant_quantize(ctx, &spec, wf, DIM, DIM, w, w_bytes));
    free(wf);

    rig slow, even, equal;
    open_slow(ctx, &slow, &even);
    const vkl_backend_options equal_o = {
        .threads = 2, .slow_worker = 1, .slow_factor = SLOW_FACTOR, .equal_shares = true};
    rig_open(ctx, &equal_o, &equal);
    double rate[2], share[2];

    const int64_t rows[] = {1, 3, 37};
    for (size_t i = 0; i < 3; i++) {
        vkl_graph *g = chain_graph(ctx, rows[i], w, w_bytes);
        const vkl_host_tensor in = {VKL_DTYPE_F32, 2, {rows[i], DIM}, x, (size_t)(rows[i] * DIM) * sizeof(float)};
        same_bits(ctx, &slow, &even, g, &in, rows[i]);
        vkl_graph_destroy(g);
    }

    /* (d) and (b): decode products, balanced against equal shares */
    vkl_graph *g = chain_graph(ctx, 1, w, w_bytes);
    const vkl_host_tensor in = {VKL_DTYPE_F32, 2, {1, DIM}, x, DIM * sizeof(float)};
    bool fast = false;
    for (int attempt = 0; attempt < ATTEMPTS && !fast; attempt++) {
        double best[2];
        race(ctx, &slow, &equal, g, &in, RUNS, best);
        speeds(&slow, rate, share);
        printf("(d) decode, 2 x %d x %d int4, worker 1 %.0fx slower: %.3f ms with shares %.3f %.3f (worker 1: %.0f "
               "of %d rows), %.3f ms with equal shares: %.2f of it\n",
               DIM, DIM, SLOW_FACTOR, best[0] * 1e3, share[0], share[1], share[1] * DIM, DIM, best[1] * 1e3,
               best[0] / best[1]);
        fast = best[0] < 0.8 * best[1];
    }
    CHECKF(fast, "(d) the balanced split was not below 0.8 of the equal split's time in %d attempts", ATTEMPTS);
    CHECKF(share[1] > 0.15 && share[1] < 0.40,
           "(b) worker 1's share after the decode runs: %.3f, not near 0.25 (0.15 to 0.40)", share[1]);
    rig_forget(&slow);
    rig_forget(&equal);
    vkl_graph_destroy(g);

    g = chain_graph(ctx, 37, w, w_bytes);
    const vkl_host_tensor in37 = {VKL_DTYPE_F32, 2, {37, DIM}, x, (size_t)37 * DIM * sizeof(float)};
    double best[2];
    race(ctx, &slow, &equal, g, &in37, GEMM_RUNS, best);
    speeds(&slow, rate, share);
    printf("    prefill GEMM, 37 rows: %.3f ms with shares %.3f %.3f, %.3f ms with equal shares: %.2f of it\n",
           best[0] * 1e3, share[0], share[1], best[1] * 1e3, best[0] / best[1]);
    rig_forget(&slow);
    rig_forget(&equal);
    vkl_graph_destroy(g);

    rig_close(&slow);
    rig_close(&even);
    rig_close(&equal);
    free(w);
    free(x);
    vkl_context_destroy(ctx);
    return check_finish("test_cpu_balance");
}
