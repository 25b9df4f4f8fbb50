/* vkbench --quant: the Transformer-Lite paper's Table 1 (E0M4 vs int4
 * matrix-vector speed) on this machine, for every backend and Vulkan device.
 *
 * For (K, N) = (4096, 4096), (4096, 11008), (11008, 4096), group 128, A [1, K]
 * f32 (one decode step), and each format, one graph of C QuantMatMul nodes
 * Y_i = A W_i^T, every W_i different random weights: one execute streams C
 * matrices through the device, and with C * bytes(W) >= the rotation size
 * (default 256 MB, five times an H100's 50 MB L2) they come from device
 * memory, not cache. Each node is timed by the device (node_times, GPU
 * timestamps); the table gives the median over reps x C samples after
 * 0.3 s of warm-up executes (clocks ramp up from idle). Backends without node_times (ref) are timed by the host
 * clock around execute + wait, divided by C, on 4 copies and at most 3 reps:
 * the oracle's speed, for scale only. The output region is poisoned with
 * NaN first and checked: a kernel that skips outputs does not get a time.
 *
 * Both arithmetic settings of the Vulkan matvecs are timed, one device open
 * each (the setting is chosen at open, by the math option): "f32" (f32
 * products and sums) and, where the device has shaderFloat16, "f16" (fp16
 * products and sums within each 32-code step: the paper's setting, where
 * E0M4's bitcast decode should beat int4's int -> half conversion), and,
 * where the device has shaderIntegerDotProduct, "dot" (the activations
 * quantized once, by a dispatch of their own that every matrix of the chain
 * shares, to two int8 terms, code and residual; packed 4 x 8-bit integer
 * dot products: VKL_VK_MATVEC=dot, the default there) and
 * "dot1" (one int8 term: VKL_VK_DOT_RESIDUAL=0, half the dot products, not
 * accurate enough for the bundled model's greedy text); the f32 and f16
 * rows force the float matvecs. Other backends run their one setting,
 * labelled f32.
 *
 * Columns: arithmetic, latency (ms per matrix), weight GB/s (packed weight
 * bytes over latency), the device's copy bandwidth (bytes read + written per
 * second of a large device-to-device copy, timed the same way), the weight
 * bandwidth as a share of it, int4 latency / this latency in the same
 * arithmetic (the paper's "Acceleration" on the E0M4 row), and the same
 * format's f32 latency / this latency; then the chain figures: one execute
 * of all C >= 32 matrices timed by the host clock from submit to the fence
 * (launch gaps and the submit included) over C, on a second device opened
 * without profiling, so that the matvecs, independent of each other, run
 * with no barrier between them as in a decode step; and the bytes the chain
 * must move (packed weights and scales, A, Y) as a share of copy bandwidth.
 *
 * Then, per device and arithmetic setting, the device's compute peaks
 * (register-only FMA kernels in f32 and fp16, and the matrix units'
 * fp16 -> f32 products where the GEMM uses them: backend compute_peaks)
 * and the prefill table (not for "dot", "dot1": the GEMM is f32's): A [gemm_rows, K] (default 512) through the same
 * graph, each GEMM's TFLOP/s beside the peak of the arithmetic it runs on
 * (bench_gemm says which). */

#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_env.h"
#include "backend.h"
#include "bench_quant.h"
#include "bench_util.h"
#include "executor.h"
#include "ops.h"
#include "quant/quant.h"

#define GROUP 128
#define N_FMT 3
#define HOST_COPIES 4
#define HOST_REPS 3
#define WARMUP 2            /* executes before timing, at least */
#define WARM_SECONDS 0.3    /* and for at least this long on timed backends */
#define MIN_CHAIN 32        /* matrices in a timed backend's chain, at least */

static const struct {
    vkl_dtype dtype;
    const char *name;
} formats[N_FMT] = {{VKL_DTYPE_Q_INT4, "int4"}, {VKL_DTYPE_Q_E0M4, "e0m4"}, {VKL_DTYPE_Q_INT8, "int8"}};

static const int64_t shapes[][2] = {{4096, 4096}, {4096, 11008}, {11008, 4096}}; /* (K, N) */
#define N_SHAPES (sizeof(shapes) / sizeof(shapes[0]))

static uint64_t next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Valid canonical blocks with random codes and plausible parameters: a
 * format's speed must not depend on the values, but zeros could flatter it. */
static void random_blocks(uint64_t *s, vkl_dtype dt, size_t blocks, uint8_t *dst) {
    const size_t block = vkl_quant_block_bytes(dt, GROUP);
    for (size_t b = 0; b < blocks; b++) {
        uint8_t *p = dst + b * block;
        uint64_t r = next(s);
        float d = 0.002f + 0.008f * (float)(r & 0xFFFF) / 65536.0f;
        if (dt == VKL_DTYPE_Q_INT8) {
            uint32_t u;
            memcpy(&u, &d, 4);
            vkl_quant_wr32(p, u);
            for (size_t k = 0; k < GROUP; k++) p[4 + k] = (uint8_t)(int8_t)((int)((next(s) >> 16) % 255) - 127);
            continue;
        }
        vkl_quant_wr16(p, vkl_f32_to_f16(d));
        unsigned q0 = (unsigned)(r >> 20) % 16;
        uint16_t zero = dt == VKL_DTYPE_Q_E0M4 ? (uint16_t)(VKL_E0M4_EXP_N1 | q0 << 6) : vkl_f32_to_f16((float)q0);
        vkl_quant_wr16(p + 2, zero);
        for (size_t k = 0; k < GROUP / 2; k += 8) {
            uint64_t v = next(s);
            memcpy(p + 4 + k, &v, 8);
        }
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One graph: input A [M, K], copies x (W_i [N, K] weight, Y_i = QuantMatMul(A, W_i)). */
static vkl_status build_graph(vkl_context *ctx, vkl_dtype dt, int64_t M, int64_t K, int64_t N, size_t copies,
                              const uint8_t *wdata, size_t wbytes, vkl_graph **out) {
    vkl_graph *g = NULL;
    vkl_status st = vkl_graph_create(ctx, &g);
    if (st) return st;
    vkl_shape sa = {.rank = 2}, sw = {.rank = 2};
    st = vkl_expr_const(g->syms, M, &sa.dims[0]);
    if (!st) st = vkl_expr_const(g->syms, K, &sa.dims[1]);
    if (!st) st = vkl_expr_const(g->syms, N, &sw.dims[0]);
    if (!st) st = vkl_expr_const(g->syms, K, &sw.dims[1]);
    uint32_t a = VKL_NONE;
    if (!st) st = vkl_graph_add_tensor(g, "A", VKL_DTYPE_F32, VKL_TENSOR_INPUT, &sa, &a);
    if (!st) st = vkl_graph_add_input(g, a);
    for (size_t i = 0; !st && i < copies; i++) {
        char wn[32], yn[32];
        snprintf(wn, sizeof(wn), "W%zu", i);
        snprintf(yn, sizeof(yn), "Y%zu", i);
        uint32_t w = VKL_NONE, y = VKL_NONE;
        st = vkl_graph_add_tensor(g, wn, dt, VKL_TENSOR_WEIGHT, &sw, &w);
        if (!st) {
            g->tensors[w].group = GROUP;
            st = vkl_graph_set_data(g, w, wdata + i * wbytes, wbytes, false);
        }
        if (!st) st = vkl_graph_add_tensor(g, yn, VKL_DTYPE_F32, VKL_TENSOR_ACTIVATION, NULL, &y);
        const uint32_t ins[2] = {a, w};
        if (!st) st = vkl_graph_add_node(g, VKL_OP_QUANT_MAT_MUL, yn, ins, 2, &y, 1, NULL, 0, NULL);
        if (!st) st = vkl_graph_add_output(g, y);
    }
    if (!st) st = vkl_graph_validate(g);
    if (!st) st = vkl_graph_infer_shapes(g);
    if (st) vkl_graph_destroy(g);
    else *out = g;
    return st;
}

typedef struct case_result {
    double ms;            /* median latency per matrix */
    double chain_ms;      /* median host time of one execute + wait over the chain, per matrix */
    size_t unwritten;     /* non-finite outputs after the runs */
    vkl_status st;
    char error[160];
} case_result;

/* One graph made resident and prepared on a device, its arena poisoned,
 * then warmed up: for a while, not a count, since a GPU leaves its idle
 * clocks only after some milliseconds of work (and the first runs pay
 * first-use costs). */
typedef struct loaded_case {
    vkl_backend_weights *w;
    vkl_backend_buffer *arena;
    vkl_backend_exec *e;
} loaded_case;

static vkl_status load_case(vkl_context *ctx, const vkl_backend_vtable *be, vkl_backend_device *dev, vkl_graph *g,
                            size_t *offsets, const float *y0, size_t total, const vkl_binding *b, loaded_case *L) {
    vkl_status st = be->weights_load(dev, g, &L->w);
    if (!st) st = be->buffer_create(dev, ctx, VKL_BUFFER_DEVICE, total, &L->arena);
    if (!st) st = be->buffer_write(dev, ctx, L->arena, 0, y0, total);
    vkl_memory_map mem = {L->arena, offsets, g->n_tensors};
    if (!st) st = be->prepare(dev, ctx, g, L->w, &mem, b, &L->e);
    const double t0 = vkl_bench_now();
    for (int i = 0; !st && (i < WARMUP || (be->node_times && vkl_bench_now() - t0 < WARM_SECONDS)); i++) {
        st = vkl_exec_run(ctx, be, dev, L->e, b, NULL);
    }
    return st;
}

static void unload_case(vkl_context *ctx, const vkl_backend_vtable *be, vkl_backend_device *dev, loaded_case *L) {
    if (L->e) be->exec_release(dev, ctx, L->e);
    if (L->arena) be->buffer_destroy(dev, ctx, L->arena);
    if (L->w) be->weights_release(dev, L->w);
    memset(L, 0, sizeof(*L));
}

/* Outputs (n a copy) of the copies still non-finite (poisoned, never written). */
static size_t count_unwritten(const float *y, size_t a_bytes, size_t y_bytes, size_t copies, int64_t n) {
    size_t bad = 0;
    for (size_t i = 0; i < copies; i++)
        for (int64_t j = 0; j < n; j++) bad += !isfinite(y[(a_bytes + i * y_bytes) / 4 + (size_t)j]);
    return bad;
}

/* Times one (M, shape, format): each node by the device's timestamps on dev
 * (opened for profiling: a barrier after every dispatch, so each node's
 * time is its own), and the whole chain by the host clock on chain_dev,
 * opened without profiling, where the independent matvecs run with no
 * barrier between them, as a decode step's would (NULL: on dev). */
static void run_case(vkl_context *ctx, const vkl_backend_vtable *be, vkl_backend_device *dev,
                     vkl_backend_device *chain_dev, vkl_dtype dt, int64_t M, int64_t K, int64_t N, size_t copies,
                     int reps, case_result *res) {
    const bool timed = be->node_times != NULL;
    size_t wbytes = 0;
    vkl_graph *g = NULL;
    loaded_case L = {0}, C = {0};
    uint8_t *wdata = NULL;
    size_t *offsets = NULL;
    float *a = NULL, *y = NULL, *y0 = NULL;
    double *samples = NULL, *chain = NULL, t0;
    size_t n_samples = 0, n_chain = 0;
    const size_t a_bytes = ((size_t)(M * K) * 4 + 255) / 256 * 256, y_bytes = ((size_t)(M * N) * 4 + 255) / 256 * 256;
    const size_t total = a_bytes + copies * y_bytes;
    vkl_binding b = {NULL, 0};
    vkl_status st = vkl_quant_canonical_bytes(ctx, dt, GROUP, N, K, &wbytes);
    if (!st && (!(wdata = malloc(wbytes * copies)) || !(a = malloc((size_t)(M * K) * 4)) || !(y = malloc(total)) ||
                !(y0 = malloc(total)) || !(samples = calloc((size_t)reps * copies + 1, sizeof(double))) ||
                !(chain = calloc((size_t)reps + 1, sizeof(double)))))
        st = vkl_fail(ctx, VKL_ERR_OUT_OF_MEMORY, "bench: out of host memory");
    if (!st) {
        uint64_t s = 0x243F6A8885A308D3ull ^ (uint64_t)dt << 32 ^ (uint64_t)K ^ (uint64_t)N << 20;
        random_blocks(&s, dt, wbytes / vkl_quant_block_bytes(dt, GROUP) * copies, wdata);
        for (int64_t k = 0; k < M * K; k++) a[k] = (float)((double)(next(&s) >> 11) / 9007199254740992.0 * 2.0 - 1.0);
        st = build_graph(ctx, dt, M, K, N, copies, wdata, wbytes, &g);
    }
    if (!st && !(offsets = malloc(g->n_tensors * sizeof(size_t))))
        st = vkl_fail(ctx, VKL_ERR_OUT_OF_MEMORY, "bench: out of host memory");
    if (!st) {
        for (uint32_t t = 0; t < g->n_tensors; t++) offsets[t] = VKL_NO_OFFSET;
        offsets[g->inputs[0]] = 0;
        for (uint32_t i = 0; i < g->n_outputs; i++) offsets[g->outputs[i]] = a_bytes + i * y_bytes;
        memset(y0, 0xFF, total); /* NaN everywhere, then A over its part */
        memcpy(y0, a, (size_t)(M * K) * 4);
    }
    if (!st) st = load_case(ctx, be, dev, g, offsets, y0, total, &b, &L);
    for (int r = 0; !st && r < reps; r++) {
        t0 = vkl_bench_now();
        st = vkl_exec_run(ctx, be, dev, L.e, &b, NULL);
        if (!st && !chain_dev) chain[n_chain++] = (vkl_bench_now() - t0) * 1e3 / (double)copies;
        if (!st && timed) {
            size_t got = 0;
            st = be->node_times(dev, ctx, L.e, samples + n_samples, copies, &got);
            n_samples += got;
        } else if (!st) {
            samples[n_samples++] = (vkl_bench_now() - t0) * 1e3 / (double)copies;
        }
    }
    if (!st) st = be->buffer_read(dev, ctx, L.arena, 0, y, total);
    res->unwritten = st ? 0 : count_unwritten(y, a_bytes, y_bytes, copies, M * N);
    unload_case(ctx, be, dev, &L);
    if (!st && chain_dev) {
        st = load_case(ctx, be, chain_dev, g, offsets, y0, total, &b, &C);
        for (int r = 0; !st && r < reps; r++) {
            t0 = vkl_bench_now();
            st = vkl_exec_run(ctx, be, chain_dev, C.e, &b, NULL);
            if (!st) chain[n_chain++] = (vkl_bench_now() - t0) * 1e3 / (double)copies;
        }
        if (!st) st = be->buffer_read(chain_dev, ctx, C.arena, 0, y, total);
        if (!st) res->unwritten += count_unwritten(y, a_bytes, y_bytes, copies, M * N);
        unload_case(ctx, be, chain_dev, &C);
    }
    res->st = st;
    res->ms = 0;
    if (!st) {
        qsort(samples, n_samples, sizeof(double), cmp_double);
        res->ms = n_samples ? samples[n_samples / 2] : 0;
        qsort(chain, n_chain, sizeof(double), cmp_double);
        res->chain_ms = n_chain ? chain[n_chain / 2] : 0;
    } else {
        snprintf(res->error, sizeof(res->error), "%s", vkl_context_error(ctx));
    }
    vkl_graph_destroy(g);
    free(wdata);
    free(offsets);
    free(a);
    free(y);
    free(y0);
    free(samples);
    free(chain);
}

static void print_header(const vkl_bench_quant_options *o) {
    printf("QuantMatMul decode (Transformer-Lite Table 1 shapes): A [1, K] f32, W [N, K] group %d; per backend and "
           "device the median over %d runs x enough weight copies for >= %zu MB rotated (GPU timestamps); ref: "
           "host clock, %d copies, <= %d runs\n",
           GROUP, o->reps, o->rotate_bytes >> 20, HOST_COPIES, HOST_REPS);
    printf("%-8s %-28s %6s %6s %-6s %-4s %11s %12s %10s %8s %8s %7s %9s %8s\n", "backend", "device", "K", "N", "format",
           "math", "latency ms", "weight GB/s", "copy GB/s", "of copy", "vs int4", "vs f32", "chain ms", "of copy");
}

/* The device's compute peaks (FLOP/s; 0 when not measured), printed. */
static vkl_compute_peaks measure_peaks(vkl_context *ctx, const vkl_backend_vtable *be, vkl_backend_device *dev,
                                       const vkl_backend_caps *caps, const char *math) {
    vkl_compute_peaks p;
    memset(&p, 0, sizeof(p));
    if (!be->compute_peaks) return p;
    if (be->compute_peaks(dev, ctx, &p)) {
        fprintf(stderr, "vkbench: %s compute peaks: %s\n", be->name, vkl_context_error(ctx));
        memset(&p, 0, sizeof(p));
        return p;
    }
    printf("%-8s %-28.28s %-4s compute peaks: f32 FMA %.3f TFLOP/s; fp16 FMA ", be->name, caps->device_name, math,
           p.f32 / 1e12);
    if (p.f16 > 0) printf("%.3f TFLOP/s", p.f16 / 1e12);
    else printf("not measured (%s)", p.f16_why);
    if (p.coopmat > 0) printf("; cooperative matrix %s fp16 -> f32 %.3f TFLOP/s\n", p.coopmat_shape, p.coopmat / 1e12);
    else printf("; cooperative matrix not measured (%s)\n", p.coopmat_why);
    return p;
}

/* The prefill table: A [gemm_rows, K] on the same shapes and formats, the
 * GEMM's TFLOP/s beside the peak of the arithmetic it runs on (the
 * cooperative-matrix peak where one was measured: the GEMM runs on the
 * matrix units exactly when the backend measures them; else this setting's
 * fp16 or f32 FMA peak). 4 weight copies: at this M a GEMM is compute-bound
 * and rereads each weight from cache, so rotating them through memory
 * changes little. Device-timed backends, and host backends with an int8
 * peak (cpu: the host clock around each execute, beside that peak). */
static int bench_gemm(vkl_context *ctx, const vkl_backend_vtable *be, vkl_backend_device *dev,
                      const vkl_backend_caps *caps, const vkl_bench_quant_options *o, const char *math) {
    const char *kind = "int8", *sequence = NULL;
    double peak = 0;
    if (be->node_times) {
        const vkl_compute_peaks p = measure_peaks(ctx, be, dev, caps, math);
        peak = vkl_bench_gemm_peak(&p, &kind);
    } else if (be->int8_peak(dev, ctx, &peak, &sequence)) {
        fprintf(stderr, "vkbench: %s int8 peak: %s\n", be->name, vkl_context_error(ctx));
        peak = 0;
    } else {
        printf("%-8s %-28.28s %-4s compute peak: int8 %.3f TOP/s (%s)\n", be->name, caps->device_name, math,
               peak / 1e12, sequence);
    }
    const int64_t M = (int64_t)o->gemm_rows;
    printf("%-8s %-28s %6s %6s %6s %-6s %-4s %11s %9s %9s %-8s %8s %8s\n", "backend", "device", "M", "K", "N",
           "format", "math", "latency ms", "TFLOP/s", "peak", "(kind)", "of peak", "vs int4");
    int failed = 0;
    for (size_t si = 0; si < N_SHAPES; si++) {
        const int64_t K = shapes[si][0], N = shapes[si][1];
        case_result res[N_FMT];
        for (int f = 0; f < N_FMT; f++) {
            memset(&res[f], 0, sizeof(res[f]));
            run_case(ctx, be, dev, NULL, formats[f].dtype, M, K, N, 4, o->reps, &res[f]);
        }
        const double int4_ms = res[0].st || res[0].unwritten ? 0 : res[0].ms;
        for (int f = 0; f < N_FMT; f++) {
            printf("%-8s %-28.28s %6lld %6lld %6lld %-6s %-4s ", be->name, caps->device_name, (long long)M,
                   (long long)K, (long long)N, formats[f].name, math);
            if (res[f].st || res[f].unwritten || res[f].ms <= 0) {
                if (res[f].st) printf("failed: %s\n", res[f].error);
                else printf("failed: %zu outputs not written\n", res[f].unwritten);
                failed = 1;
                continue;
            }
            const double flops = 2.0 * (double)M * (double)N * (double)K / (res[f].ms * 1e-3);
            printf("%11.4f %9.3f ", res[f].ms, flops / 1e12);
            if (peak > 0) printf("%9.3f %-8s %7.1f%% ", peak / 1e12, kind, 100.0 * flops / peak);
            else printf("%9s %-8s %8s ", "-", "", "-");
            if (int4_ms > 0) printf("%8.2f\n", int4_ms / res[f].ms);
            else printf("%8s\n", "-");
            fflush(stdout);
        }
    }
    return failed;
}

/* Every shape and format on one open device, in one arithmetic setting
 * (math: "f32", "f16", "dot" or "dot1"). *copy_bw: measured here when 0 (then kept for the
 * device's next setting). f32_ms: the f32 setting's latencies, written by the
 * f32 pass and read by the others (0: none). */
static int bench_device(vkl_context *ctx, const vkl_backend_vtable *be, vkl_backend_device *dev,
                        vkl_backend_device *chain_dev, const vkl_backend_caps *caps, const vkl_bench_quant_options *o, const char *math,
                        double *copy_bw_io, double f32_ms[N_SHAPES][N_FMT]) {
    const bool timed = be->node_times != NULL, is_f32 = !strcmp(math, "f32");
    double copy_bw = *copy_bw_io;
    if (copy_bw <= 0 && be->copy_bandwidth) {
        size_t bytes = o->rotate_bytes > ((size_t)64 << 20) ? o->rotate_bytes : (size_t)64 << 20;
        if (be->copy_bandwidth(dev, ctx, bytes, &copy_bw))
            fprintf(stderr, "vkbench: %s copy bandwidth: %s\n", be->name, vkl_context_error(ctx));
    } else if (copy_bw <= 0) {
        copy_bw = vkl_bench_host_copy_bandwidth();
    }
    *copy_bw_io = copy_bw;
    int failed = 0;
    for (size_t si = 0; si < N_SHAPES; si++) {
        const int64_t K = shapes[si][0], N = shapes[si][1];
        case_result res[N_FMT];
        size_t wbytes[N_FMT];
        for (int f = 0; f < N_FMT; f++) {
            memset(&res[f], 0, sizeof(res[f]));
            wbytes[f] = 0;
            vkl_quant_canonical_bytes(ctx, formats[f].dtype, GROUP, N, K, &wbytes[f]);
            size_t copies = HOST_COPIES;
            int reps = o->reps < HOST_REPS ? o->reps : HOST_REPS;
            if (timed) {
                copies = wbytes[f] ? (o->rotate_bytes + wbytes[f] - 1) / wbytes[f] : 1;
                if (copies < MIN_CHAIN) copies = MIN_CHAIN;
                reps = o->reps;
            }
            run_case(ctx, be, dev, chain_dev, formats[f].dtype, 1, K, N, copies, reps, &res[f]);
        }
        const double int4_ms = res[0].st || res[0].unwritten ? 0 : res[0].ms;
        for (int f = 0; f < N_FMT; f++) {
            printf("%-8s %-28.28s %6lld %6lld %-6s %-4s ", be->name, caps->device_name, (long long)K, (long long)N,
                   formats[f].name, math);
            if (is_f32) f32_ms[si][f] = 0;
            if (res[f].st) {
                printf("failed: %s\n", res[f].error);
                failed = 1;
                continue;
            }
            if (res[f].unwritten) {
                printf("failed: %zu outputs not written\n", res[f].unwritten);
                failed = 1;
                continue;
            }
            if (is_f32) f32_ms[si][f] = res[f].ms;
            const double gbs = (double)wbytes[f] / (res[f].ms * 1e-3) / 1e9;
            printf("%11.4f %12.1f ", res[f].ms, gbs);
            if (copy_bw > 0) printf("%10.1f %7.1f%% ", copy_bw / 1e9, 100.0 * gbs * 1e9 / copy_bw);
            else printf("%10s %8s ", "-", "-");
            if (int4_ms > 0) printf("%8.2f ", int4_ms / res[f].ms);
            else printf("%8s ", "-");
            if (f32_ms[si][f] > 0) printf("%7.2f ", f32_ms[si][f] / res[f].ms);
            else printf("%7s ", "-");
            /* the chain: launch gaps and the submit count; bytes are the
             * packed weights with their scales, A read and Y written */
            const double chain_bytes = (double)wbytes[f] + 4.0 * (double)(K + N);
            printf("%9.4f ", res[f].chain_ms);
            if (copy_bw > 0 && res[f].chain_ms > 0)
                printf("%7.1f%%\n", 100.0 * chain_bytes / (res[f].chain_ms * 1e-3) / copy_bw);
            else printf("%8s\n", "-");
            fflush(stdout);
        }
    }
    /* host backends with int8 kernels too (cpu; ref would take minutes a GEMM) */
    if (o->gemm_rows && (timed || be->int8_peak) && strncmp(math, "dot", 3))
        failed |= bench_gemm(ctx, be, dev, caps, o, math);
    return failed;
}

/* The matvec maths timed per device, in order: --math's names. */
static const char *const maths[4] = {"f32", "f16", "dot", "dot1"};

int vkl_bench_quant_maths(const char *list, unsigned *mask) {
    *mask = 0;
    for (const char *p = list;;) {
        const size_t len = strcspn(p, ",");
        int m = 0;
        while (m < 4 && !(strlen(maths[m]) == len && !strncmp(p, maths[m], len))) m++;
        if (m == 4) return 1;
        *mask |= 1u << m;
        if (!p[len]) return 0;
        p += len + 1;
    }
}

int vkl_bench_quant(vkl_context *ctx, const vkl_bench_quant_options *o) {
    print_header(o);
    vkl_env_options env;
    if (vkl_env_options_read(ctx, &env)) {
        fprintf(stderr, "vkbench: %s\n", vkl_context_error(ctx));
        return 1;
    }
    int failed = 0, ran = 0;
    for (size_t i = 0; i < vkl_backend_count(); i++) {
        const vkl_backend_vtable *be = vkl_backend_at(i);
        if (o->backend && strcmp(o->backend, be->name)) continue;
        const bool vulkan = !strcmp(be->name, "vulkan");
        vkl_backend_options bo = env.backend; /* its vulkan options stay env's */
        bo.profile = true;
        /* Vulkan: every device in turn (an absurd index finds how many:
         * NOT_FOUND), each with f32 then f16 matvec math where it has fp16,
         * then the integer-dot matvecs where it has them. */
        vkl_env_set_device(&env, 1 << 20);
        vkl_backend_caps caps;
        const bool several = vulkan && be->probe(ctx, &bo, &caps) == VKL_ERR_NOT_FOUND;
        for (int d = several ? 0 : -1;; d++) {
            vkl_env_set_device(&env, d);
            vkl_status st = be->probe(ctx, &bo, &caps);
            if (st && several && d > 0 && st == VKL_ERR_NOT_FOUND) break; /* past the last device */
            const bool f16 = !st && vulkan && (caps.features & VKL_FEATURE_FP16);
            const bool dot = !st && vulkan && (caps.features & VKL_FEATURE_INT8_DOT);
            double copy_bw = 0, f32_ms[N_SHAPES][N_FMT];
            memset(f32_ms, 0, sizeof(f32_ms));
            for (int m = 0; !st && m < 4; m++) {
                if ((m == 1 && !f16) || (m >= 2 && !dot) || (m > 0 && !vulkan)) continue;
                if (o->maths && !(o->maths & (1u << m))) continue; /* --math */
                vkl_env_set_f16_math(&env, m == 1);
                vkl_env_set_matvec_dot(&env, m >= 2, m == 2);
                vkl_backend_device *dev = NULL, *chain_dev = NULL;
                vkl_backend_options plain = bo;
                plain.profile = false; /* the chain's device: no per-dispatch barriers, no timestamps */
                st = be->open(ctx, &bo, &dev);
                if (!st && be->node_times) st = be->open(ctx, &plain, &chain_dev);
                if (!st) {
                    failed |= bench_device(ctx, be, dev, chain_dev, &caps, o, maths[m], &copy_bw, f32_ms);
                    ran++;
                }
                if (chain_dev) be->close(chain_dev);
                if (dev) be->close(dev);
            }
            if (st) {
                printf("%-8s unavailable: %s\n", be->name, vkl_context_error(ctx));
                break;
            }
            if (vulkan && !f16)
                printf("%-8s %-28.28s f16 math not timed: the device has no shaderFloat16 (or is older than Vulkan "
                       "1.2)\n", be->name, caps.device_name);
            if (vulkan && !dot)
                printf("%-8s %-28.28s dot matvecs not timed: the device has no shaderIntegerDotProduct\n", be->name,
                       caps.device_name);
            if (!several) break;
        }
    }
    if (!ran)
        fprintf(stderr, "vkbench: no backend%s%s could run\n", o->backend ? " named " : "",
                o->backend ? o->backend : "");
    return failed || !ran;
}
