/* Y = X W^T (+ bias) for a repacked weight, split over the thread pool by
 * blocks of output rows, each worker's share sized by its speed. Quantized
 * W runs as W4A8 / W8A8: each row of X is
 * quantized per weight group to int8 (symmetric, scale max|x| / 127, codes
 * -127..127) on the fly, the inner products are exact int32 sums (cpu_dot.h)
 * and the group scales apply per block in f32:
 *   y[m, n] = sum_g  scale(n, g) * da(m, g) * (isum(m, n, g) - zero(n, g) * asum(m, g))
 * with asum the sum of row m's codes in group g (E0M4 and int4 share this
 * integer view: docs/cpu.md). Float W runs as f32 dot products.
 * A K that is not a multiple of the group: the weight's layout holds whole
 * groups (Kq = lay.cols, the short last group's tail as zero-weight codes),
 * and the quantized rows of X are Kq codes long, the tail's codes 0 — the
 * last group's activation scale comes from its K % group real values only,
 * and X is never read past K. The dot kernels see whole groups only.
 * Where the CPU has AMX, a 4-bit W against 32 rows of X or more goes to
 * x86/cpu_gemm_amx.c once X is quantized (the same bits). */
#include <string.h>

#include "cpu_backend.h"

/* A GEMM's tail chunks, and the steps a worker takes through its share:
 * at most 1 / (this x threads) of the blocks */
#define TASKS_PER_THREAD 16
/* GEMM (4-bit W, M >= the table's gemm_mr): a task's weight blocks are read
 * once per panel of X, so a task holds at most this many bytes of them
 * (they stay in the 512 KiB L2 of the cores seen here, beside X's panel) */
#define TASK_WEIGHT_BYTES (128u << 10)
/* ... and K is cut into slices (whole groups) of at most this many bytes of
 * a panel, so the slice every block of a task reads stays in the 32 KiB L1
 * beside the weights streaming through it. A 6-row panel of the 1B model's
 * FFN down projection (K 8192) is 48 KiB; there the one-core tile ran at 85
 * GMAC/s against 93 at K 2048. On the whole model under load 8-10 the
 * slices' effect stayed within the noise (docs/perf.md, 2026-11-25). */
#define PANEL_SLICE_BYTES (16u << 10)

#define PANEL_PARAM_BYTES (2 * VKL_CPU_HP * sizeof(float))

typedef struct gemm_job {
    const vkl_cpu_weight *w;
    const vkl_cpu_dot *dot;
    int64_t M, blocks, per_task;
    const float *X, *bias;
    float *Y;
    /* quantized X (scratch, written first): M rows of Kq codes, then per
     * (row, group) scale and code sum; tail: per row one group of floats, the
     * short last group zero-filled (NULL when K is whole groups) */
    int8_t *xq;
    float *xd;
    int32_t *xs;
    float *tail;
    /* the first `panels` * mr rows again, as panels (cpu_dot.h; mr: the
     * table's gemm_mr): per panel Kq * mr codes, then per group and row
     * VKL_CPU_HP copies of the scale, then of the sum (PANEL_PARAM_BYTES a
     * group and row) */
    int64_t panels, mr;
    uint8_t *px;
} gemm_job;

static void quantize_task(void *user, size_t m, unsigned worker) {
    (void)worker;
    const gemm_job *j = user;
    const size_t K = (size_t)j->w->K, Kq = (size_t)j->w->lay.cols, G = j->w->lay.group, ng = Kq / G, full = K / G;
    const float *x = j->X + m * K;
    int8_t *q = j->xq + m * Kq;
    float *d = j->xd + m * ng;
    int32_t *s = j->xs + m * ng;
    if (full) j->dot->quantize(x, full * G, G, q, d, s);
    if (full == ng) return;
    float *tail = j->tail + m * G; /* the short last group, zero past K */
    memcpy(tail, x + full * G, (K - full * G) * sizeof(float));
    memset(tail + (K - full * G), 0, (Kq - K) * sizeof(float));
    j->dot->quantize(tail, G, G, q + full * G, d + full, s + full);
}

/* Panel p of the quantized rows (cpu_dot.h's layout), from the row-major
 * codes, scales and sums. */
static void panel_task(void *user, size_t p, unsigned worker) {
    (void)worker;
    const gemm_job *j = user;
    const size_t K = (size_t)j->w->lay.cols, ng = K / j->w->lay.group, mr = (size_t)j->mr; /* Kq */
    int8_t *q = (int8_t *)(j->px + p * (K + ng * PANEL_PARAM_BYTES) * mr);
    float *d = (float *)(void *)(q + K * mr), *s = d + ng * mr * VKL_CPU_HP;
    for (size_t r = 0; r < mr; r++) {
        const size_t m = p * mr + r;
        const int8_t *x = j->xq + m * K;
        for (size_t t = 0; t < K / VKL_CPU_LP; t++)
            for (size_t half = 0; half < 2; half++)
                memcpy(q + t * VKL_CPU_LP * mr + 16 * (mr * half + r), x + t * VKL_CPU_LP + 16 * half, 16);
        for (size_t g = 0; g < ng; g++)
            for (size_t i = 0; i < VKL_CPU_HP; i++) {
                d[vkl_cpu_panel_param(mr, g, r, i)] = j->xd[m * ng + g];
                s[vkl_cpu_panel_param(mr, g, r, i)] = (float)j->xs[m * ng + g];
            }
    }
}

static vkl_cpu_panel panel_at(const gemm_job *j, int64_t p) {
    const size_t K = (size_t)j->w->lay.cols, ng = K / j->w->lay.group, mr = (size_t)j->mr; /* Kq */
    const int8_t *q = (const int8_t *)(j->px + (size_t)p * (K + ng * PANEL_PARAM_BYTES) * mr);
    const float *d = (const float *)(const void *)(q + K * mr);
    return (vkl_cpu_panel){q, d, d + ng * mr * VKL_CPU_HP, (uint32_t)mr};
}

static inline void store(const gemm_job *j, int64_t m, int64_t n0, const float *acc) {
    const int64_t N = j->w->N;
    for (int64_t i = 0; i < VKL_CPU_HP && n0 + i < N; i++)
        j->Y[m * N + n0 + i] = acc[i] + (j->bias ? j->bias[n0 + i] : 0.0f);
}

/* One block of 4 weight rows against every row of X, VKL_CPU_MR rows of X a
 * call: the block's tiles stay in cache while the rows of X stream past,
 * and each tile is unpacked once for MR rows (the GEMM's blocking). */
static void quant_block(const gemm_job *j, int64_t b, int64_t m_first) {
    const vkl_cpu_weight *w = j->w;
    const vkl_quant_cpu_layout *lay = &w->lay;
    const int64_t K = lay->cols, ng = K / lay->group; /* Kq */
    const uint32_t chunks = lay->group / VKL_CPU_LP;
    const bool q4 = lay->dtype != VKL_DTYPE_Q_INT8;
    const size_t tile = q4 ? VKL_CPU_HP * VKL_CPU_LP / 2 : VKL_CPU_HP * VKL_CPU_LP, rec = q4 ? 8 : 4;
    const uint8_t *qs = w->data + (size_t)b * (size_t)(K / VKL_CPU_LP) * tile;
    const float *params = (const float *)(const void *)(w->data + lay->params_offset) + (size_t)b * (size_t)ng * rec;
    for (int64_t m0 = m_first; m0 < j->M; m0 += VKL_CPU_MR) {
        const uint32_t rows = (uint32_t)(j->M - m0 < VKL_CPU_MR ? j->M - m0 : VKL_CPU_MR);
        vkl_cpu_act act[VKL_CPU_MR];
        for (uint32_t r = 0; r < rows; r++) {
            const size_t m = (size_t)m0 + r;
            act[r] = (vkl_cpu_act){j->xq + m * (size_t)K, j->xd + m * (size_t)ng, j->xs + m * (size_t)ng};
        }
        float acc[VKL_CPU_MR * VKL_CPU_HP] = {0};
        if (q4) j->dot->q4(qs, params, act, rows, chunks, (uint32_t)ng, acc);
        else j->dot->q8((const int8_t *)qs, params, act, rows, chunks, (uint32_t)ng, acc);
        for (uint32_t r = 0; r < rows; r++) store(j, m0 + r, b * VKL_CPU_HP, acc + VKL_CPU_HP * r);
    }
}

static void float_block(const gemm_job *j, int64_t b) {
    const vkl_cpu_weight *w = j->w;
    const int64_t K = w->K;
    const size_t es = vkl_dtype_size(w->dtype);
    for (int64_t m = 0; m < j->M; m++) {
        const float *x = j->X + (size_t)m * (size_t)K;
        float acc[VKL_CPU_HP] = {0};
        for (int64_t i = 0; i < VKL_CPU_HP && b * VKL_CPU_HP + i < w->N; i++) {
            const void *row = w->data + (size_t)(b * VKL_CPU_HP + i) * (size_t)K * es;
            acc[i] = w->dtype == VKL_DTYPE_F32   ? j->dot->f32(row, x, (size_t)K)
                     : w->dtype == VKL_DTYPE_F16 ? j->dot->f16(row, x, (size_t)K)
                                                 : j->dot->bf16(row, x, (size_t)K);
        }
        store(j, m, b * VKL_CPU_HP, acc);
    }
}

/* The GEMM's register tile over a task's blocks b0..b1-1, panel after panel
 * (the blocks stay in L2 while the panels pass), one K slice at a time
 * (PANEL_SLICE_BYTES; each group's f32 step still runs in group order), its
 * sums written into Y's rows (between K slices they wait there: an f32
 * round trip, exact), then the bias added, and the rows after the last full
 * panel with the row kernel. Where the table has a two-block tile, whole
 * blocks go to it in pairs. A block past N's end (N % 4 rows) runs into a
 * 4-column buffer and copies its rows out. */
static void tile_blocks(const gemm_job *j, int64_t b0, int64_t b1) {
    const vkl_cpu_weight *w = j->w;
    const int64_t K = w->lay.cols, ng = K / w->lay.group, mr = j->mr; /* Kq: whole groups */
    const uint32_t chunks = w->lay.group / VKL_CPU_LP;
    const size_t tile = VKL_CPU_HP * VKL_CPU_LP / 2;
    const float *params = (const float *)(const void *)(w->data + w->lay.params_offset);
    const int64_t slices = (K * mr + PANEL_SLICE_BYTES - 1) / PANEL_SLICE_BYTES;
    const int64_t per = (ng + slices - 1) / slices;
    for (int64_t g0 = 0; g0 < ng; g0 += per) {
        const int64_t gn = ng - g0 < per ? ng - g0 : per;
        const size_t skip = (size_t)g0 * chunks; /* tiles before the slice */
        for (int64_t p = 0; p < j->panels; p++) {
            vkl_cpu_panel x = panel_at(j, p);
            x.q += skip * VKL_CPU_LP * (size_t)mr;
            x.d += g0 * mr * VKL_CPU_HP;
            x.s += g0 * mr * VKL_CPU_HP;
            for (int64_t b = b0; b < b1; b++) {
                const uint8_t *wb = w->data + ((size_t)b * (size_t)(K / VKL_CPU_LP) + skip) * tile;
                const float *rec = params + (size_t)(b * ng + g0) * 8;
                float *y = j->Y + (size_t)(p * mr * w->N + b * VKL_CPU_HP);
                if (j->dot->q4_tile2 && b + 1 < b1 && (b + 2) * VKL_CPU_HP <= w->N) {
                    j->dot->q4_tile2(wb, (size_t)(K / VKL_CPU_LP) * tile, rec, (size_t)ng * 8, &x, chunks, (uint32_t)gn,
                                     g0 == 0, y, (size_t)w->N);
                    b++;
                    continue;
                }
                if ((b + 1) * VKL_CPU_HP <= w->N) {
                    j->dot->q4_tile(wb, rec, &x, chunks, (uint32_t)gn, g0 == 0, y, (size_t)w->N);
                    continue;
                }
                const int64_t cols = w->N - b * VKL_CPU_HP;
                float part[VKL_CPU_GEMM_MR_MAX * VKL_CPU_HP] = {0};
                for (int64_t r = 0; r < mr; r++)
                    for (int64_t i = 0; i < cols; i++) part[r * VKL_CPU_HP + i] = y[r * w->N + i];
                j->dot->q4_tile(wb, rec, &x, chunks, (uint32_t)gn, g0 == 0, part, VKL_CPU_HP);
                for (int64_t r = 0; r < mr; r++)
                    for (int64_t i = 0; i < cols; i++) y[r * w->N + i] = part[r * VKL_CPU_HP + i];
            }
        }
    }
    if (j->bias)
        for (int64_t m = 0; m < j->panels * mr; m++)
            for (int64_t n = b0 * VKL_CPU_HP; n < b1 * VKL_CPU_HP && n < w->N; n++) j->Y[m * w->N + n] += j->bias[n];
    for (int64_t b = b0; b < b1; b++) quant_block(j, b, j->panels * mr);
}

/* Blocks begin..end-1: a worker's share, or a chunk of the tail. The GEMM
 * takes a share per_task blocks at a time, so each pass of the panels over
 * its blocks stays within TASK_WEIGHT_BYTES (L2). */
static void gemm_range(void *user, size_t begin, size_t end, unsigned worker) {
    (void)worker;
    const gemm_job *j = user;
    for (int64_t b0 = (int64_t)begin; b0 < (int64_t)end && j->panels; b0 += j->per_task)
        tile_blocks(j, b0, b0 + j->per_task < (int64_t)end ? b0 + j->per_task : (int64_t)end);
    for (int64_t b = (int64_t)begin; b < (int64_t)end && !j->panels; b++) {
        if (j->xq) quant_block(j, b, 0);
        else float_block(j, b);
    }
}

vkl_status vkl_cpu_gemm(const vkl_ref_args *a, const vkl_cpu_weight *w, const float *X, int64_t M, const float *bias,
                        float *Y) {
    const vkl_backend_weights *bw = a->backend;
    vkl_backend_device *dev = bw->dev;
    gemm_job j = {
        .w = w, .dot = dev->dot, .M = M, .blocks = (w->N + VKL_CPU_HP - 1) / VKL_CPU_HP, .X = X, .bias = bias, .Y = Y};
    if (M <= 0 || w->N <= 0) return VKL_OK;
    int64_t tasks = (int64_t)vkl_pool_threads(dev->pool) * TASKS_PER_THREAD;
    if (w->dtype == VKL_DTYPE_Q_E0M4 || w->dtype == VKL_DTYPE_Q_INT4 || w->dtype == VKL_DTYPE_Q_INT8) {
        /* codes, then scales and sums: Kq bytes + 8 bytes a group, per row (Kq is a multiple of 32); again
         * for the rows that also go into panels, with PANEL_PARAM_BYTES a group; then a group of floats per
         * row for a short last group */
        const size_t Kq = (size_t)w->lay.cols, ng = Kq / w->lay.group, row = Kq + 8 * ng;
        const size_t panel_row = Kq + PANEL_PARAM_BYTES * ng;
        const size_t tail_row = (size_t)w->K < Kq ? (size_t)w->lay.group * sizeof(float) : 0;
        const bool q4 = w->dtype != VKL_DTYPE_Q_INT8;
        /* AMX's scratch (its own panels) takes the place of the AVX2 tile's */
        const bool amx = (dev->isa & VKL_ISA_AMX) && vkl_cpu_amx_takes(w, M);
        j.mr = dev->dot->gemm_mr;
        j.panels = q4 && dev->dot->q4_tile && !amx ? M / j.mr : 0; /* no tile (NEON): row kernels */
        size_t bytes, panel_bytes, tail_bytes;
        if (!vkl_mul_size(row, (size_t)M, &bytes) ||
            !vkl_mul_size(panel_row, (size_t)(j.panels * j.mr), &panel_bytes) ||
            !vkl_mul_size(tail_row, (size_t)M, &tail_bytes) || !vkl_add_size(bytes, tail_bytes, &bytes))
            return vkl_fail(a->ctx, VKL_ERR_OVERFLOW, "cpu: QuantMatMul scratch");
        if (amx) panel_bytes = (vkl_cpu_amx_scratch(w, M, vkl_pool_threads(dev->pool)) + 63) / 64 * 64;
        bytes = (bytes + 63) / 64 * 64; /* the panels 64-byte aligned */
        if (!vkl_add_size(bytes, panel_bytes, &bytes)) return vkl_fail(a->ctx, VKL_ERR_OVERFLOW, "cpu: QuantMatMul scratch");
        uint8_t *s = vkl_ref_scratch_get(a, bytes);
        if (!s) return VKL_ERR_OUT_OF_MEMORY;
        j.xq = (int8_t *)s;
        j.xd = (float *)(void *)(s + (size_t)M * Kq);
        j.xs = (int32_t *)(void *)(j.xd + (size_t)M * ng);
        j.tail = tail_row ? (float *)(void *)(s + (size_t)M * row) : NULL;
        j.px = s + bytes - panel_bytes;
        vkl_pool_run(M > 1 ? dev->pool : NULL, (size_t)M, quantize_task, &j);
        if (amx) {
            vkl_cpu_gemm_amx(dev->pool, w, M, j.xq, j.xd, bias, Y, j.px);
            return VKL_OK;
        }
        if (j.panels) {
            vkl_pool_run(dev->pool, (size_t)j.panels, panel_task, &j);
            /* enough tasks to keep each one's blocks within TASK_WEIGHT_BYTES */
            const int64_t block_bytes = w->lay.cols / 2 * VKL_CPU_HP + (w->lay.cols / w->lay.group) * 32;
            const int64_t by_size = (j.blocks * block_bytes + TASK_WEIGHT_BYTES - 1) / TASK_WEIGHT_BYTES;
            tasks = by_size > tasks ? by_size : tasks;
        }
    }
    j.per_task = (j.blocks + tasks - 1) / tasks;
    /* Each worker's share of the blocks sized by its speed (engine/pool.h).
     * A GEMV's (decode, at most VKL_CPU_MR rows of X) is all there is: each
     * worker streams its own weight rows. A GEMM's tail goes out per_task
     * blocks at a time to whoever is free, absorbing what the shares missed
     * (a core taken away mid-call). Every output is computed the same way
     * whoever computes it: the split changes no bits. */
    const bool gemv = !j.panels && M <= VKL_CPU_MR;
    vkl_pool_run_shares(dev->pool, (size_t)j.blocks, gemv ? 0 : (size_t)j.per_task, gemm_range, &j);
    return VKL_OK;
}
