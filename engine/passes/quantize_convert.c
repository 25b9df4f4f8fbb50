/* vkl_qconv_run: a matrix is converted in rounds of about ROUND_BYTES of
 * source; a round's stripes of output rows are tasks of the thread pool.
 * Sources are read in place (their mapping), and between rounds, on the
 * calling thread, the consumed source bytes are handed to the release hook
 * (an importer drops those pages). A [K, N] source larger than a round is
 * read in column bands, one short piece of every source row per band, and
 * through a mapping the kernel maps whole large folios around each read, so
 * that the first band maps every page of the matrix (a 1 GB lm_head, seen on
 * Linux 6.18); with a read hook (an importer's pread) such a band is copied
 * into a buffer instead. Either way the peak RSS of an import is about the
 * converted weights, not the f32 ones.
 * Progress is reported between rounds. Each output row depends only on its
 * source column (or row), so the bytes are the same for any thread count;
 * a failure is reported for the lowest failing stripe, which every thread
 * count reaches (stripes are handed out in order and earlier ones finish). */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "../quant/quant.h"
#include "quantize_convert.h"

#define STRIPE_ROWS 128                   /* output rows per task */
#define READ_ROWS 64                      /* source rows per task filling a column band */
#define ROUND_BYTES ((size_t)64 << 20)   /* source bytes between releases and progress reports */
#define TILE 8                            /* block side of the transposing copy */

typedef struct round_state {
    const vkl_qconv *c;
    const vkl_qconv_job *job;
    int64_t n0;          /* first output row of the round */
    int64_t rows;        /* in the round */
    float *scratch;      /* per worker: STRIPE_ROWS x K ([K, N] sources) */
    float *band;         /* [K, N] sources read through the hook: [K, rows] of this round */
    bool use_band;       /* the band holds this round's columns */
    atomic_bool read_failed; /* a read into the band declined */
    atomic_bool mapped;      /* some round read the mapping in place: release what it touched */
    vkl_context *wctx;   /* per worker: a copy of the context, for error messages */
    vkl_status *status;  /* per task */
    char (*msg)[VKL_ERROR_CAP];
    atomic_size_t first_failed; /* lowest failed task, or SIZE_MAX */
} round_state;

/* W^T rows [n0, n0 + rows) of a [K, N] source into stripe (rows x K), in
 * 8 x 8 blocks: eight contiguous reads from each of eight source rows, eight
 * contiguous writes to each of eight stripe rows (a column at a time reads
 * one float per cache line and page: twice as slow). Edges one by one. */
static void transpose_stripe(const float *src, int64_t K, int64_t N, int64_t n0, int64_t rows, float *stripe) {
    const int64_t K8 = K / TILE * TILE, R8 = rows / TILE * TILE;
    for (int64_t k0 = 0; k0 < K8; k0 += TILE) {
        for (int64_t r0 = 0; r0 < R8; r0 += TILE) {
            float b[TILE][TILE];
            for (int i = 0; i < TILE; i++) memcpy(b[i], src + (k0 + i) * N + n0 + r0, sizeof(b[i]));
            for (int j = 0; j < TILE; j++)
                for (int i = 0; i < TILE; i++) stripe[(r0 + j) * K + k0 + i] = b[i][j];
        }
        for (int64_t r = R8; r < rows; r++)
            for (int64_t k = k0; k < k0 + TILE; k++) stripe[r * K + k] = src[k * N + n0 + r];
    }
    for (int64_t k = K8; k < K; k++)
        for (int64_t r = 0; r < rows; r++) stripe[r * K + k] = src[k * N + n0 + r];
}

/* Output rows [n0, n0 + rows) as f32 W^T rows: transposed into scratch
 * (from the round's band or the source), or in place. */
static const float *stripe_rows(round_state *r, int64_t n0, int64_t rows, float *scratch) {
    const vkl_qconv_job *j = r->job;
    if (!j->nk) {
        if (r->use_band) transpose_stripe(r->band, j->K, r->rows, n0 - r->n0, rows, scratch);
        else transpose_stripe(j->src, j->K, j->N, n0, rows, scratch);
        return scratch;
    }
    return j->src + n0 * j->K; /* rows in place: read once, in order, released after the round */
}

static vkl_status convert_stripe(vkl_context *ctx, round_state *r, int64_t n0, int64_t rows, float *scratch) {
    const vkl_qconv_job *j = r->job;
    const float *rows_f32 = stripe_rows(r, n0, rows, scratch);
    uint8_t *out = j->dst + (size_t)n0 * j->row_bytes;
    size_t count = (size_t)(rows * j->K);
    vkl_status st;
    if (j->dt == VKL_DTYPE_F16) st = vkl_quant_f32_to_f16(ctx, rows_f32, count, (uint16_t *)(void *)out);
    else if (j->dt == VKL_DTYPE_BF16) st = vkl_quant_f32_to_bf16(ctx, rows_f32, count, (uint16_t *)(void *)out);
    else {
        vkl_quant_spec spec;
        vkl_quant_spec_init(&spec, j->dt);
        spec.group = j->group;
        st = vkl_quant_quantize(ctx, &spec, rows_f32, rows, j->K, out, (size_t)rows * j->row_bytes);
    }
    if (st) vkl_fail_prefix(ctx, st, "rows %lld..%lld", (long long)n0, (long long)(n0 + rows - 1));
    return st;
}

static void stripe_task(void *user, size_t task, unsigned worker) {
    round_state *r = user;
    r->status[task] = VKL_OK;
    if (atomic_load(&r->first_failed) < task) return; /* the result is decided by an earlier stripe */
    int64_t n0 = r->n0 + (int64_t)task * STRIPE_ROWS, left = r->n0 + r->rows - n0;
    int64_t rows = left < STRIPE_ROWS ? left : STRIPE_ROWS;
    float *scratch = r->scratch ? r->scratch + (size_t)worker * STRIPE_ROWS * (size_t)r->job->K : NULL;
    vkl_status st = convert_stripe(&r->wctx[worker], r, n0, rows, scratch);
    if (!st) return;
    r->status[task] = st;
    snprintf(r->msg[task], VKL_ERROR_CAP, "%s", vkl_context_error(&r->wctx[worker]));
    size_t seen = atomic_load(&r->first_failed);
    while (task < seen && !atomic_compare_exchange_weak(&r->first_failed, &seen, task)) {
    }
}

/* Source rows [k0, k0 + READ_ROWS) of this round's column band, through the
 * read hook. */
static void band_task(void *user, size_t task, unsigned worker) {
    (void)worker;
    round_state *r = user;
    const vkl_qconv_job *j = r->job;
    const vkl_quantize_options *o = r->c->opt;
    const int64_t k0 = (int64_t)task * READ_ROWS, k1 = k0 + READ_ROWS < j->K ? k0 + READ_ROWS : j->K;
    for (int64_t k = k0; k < k1 && !atomic_load(&r->read_failed); k++)
        if (!o->read(o->user, j->src + k * j->N + r->n0, (size_t)r->rows * sizeof(float), r->band + k * r->rows))
            atomic_store(&r->read_failed, true);
}

/* The source bytes of output rows [0, n1) go to the release hook: one range
 * for [N, K] sources; for [K, N], every source row's columns [0, n1) (its
 * pages straddling n1 go with the next round). */
static void release(const vkl_qconv *c, const vkl_qconv_job *j, int64_t n1) {
    if (!c->opt->release) return;
    if (j->nk || n1 == j->N) {
        c->opt->release(c->opt->user, j->src, (size_t)(n1 * j->K) * sizeof(float));
        return;
    }
    for (int64_t k = 0; k < j->K; k++) c->opt->release(c->opt->user, j->src + k * j->N, (size_t)n1 * sizeof(float));
}

vkl_status vkl_qconv_run(vkl_qconv *c, const vkl_qconv_job *j) {
    const unsigned threads = vkl_pool_threads(c->pool);
    const size_t src_row = (size_t)j->K * sizeof(float);
    int64_t round_rows = (int64_t)(ROUND_BYTES / src_row) / STRIPE_ROWS * STRIPE_ROWS;
    if (round_rows < STRIPE_ROWS) round_rows = STRIPE_ROWS;
    const size_t max_tasks = (size_t)(round_rows / STRIPE_ROWS);
    round_state r = {.c = c, .job = j, .first_failed = SIZE_MAX};
    /* Column bands through the hook only where the mapping would hold more
     * than a round: pread costs more system time than page faults (10 s vs
     * 6 s for the 1B import's 4.7 GB of [K, N] weights), and a source of at
     * most a round is mapped whole for one round anyway, then released. */
    bool band = !j->nk && c->opt->read && (size_t)j->N * src_row > ROUND_BYTES; /* until a read declines */
    r.wctx = vkl_calloc(c->ctx, threads, sizeof(vkl_context));
    r.status = vkl_calloc(c->ctx, max_tasks, sizeof(vkl_status));
    r.msg = vkl_calloc(c->ctx, max_tasks, VKL_ERROR_CAP);
    if (!j->nk) r.scratch = vkl_malloc(c->ctx, (size_t)threads * STRIPE_ROWS * src_row);
    if (band) r.band = vkl_malloc(c->ctx, (size_t)round_rows * src_row);
    vkl_status st = r.wctx && r.status && r.msg && (j->nk || r.scratch) && (!band || r.band) ? VKL_OK
                                                                                            : VKL_ERR_OUT_OF_MEMORY;
    /* Workers report into copies of the context: its message buffer is not
     * shared, and nothing is logged from a worker (vkl_fail logs at debug). */
    for (unsigned w = 0; !st && w < threads; w++) {
        r.wctx[w] = *c->ctx;
        r.wctx[w].log = NULL;
        r.wctx[w].log_level = VKL_LOG_ERROR;
    }
    for (int64_t n0 = 0; !st && n0 < j->N; n0 += round_rows) {
        r.n0 = n0;
        r.rows = j->N - n0 < round_rows ? j->N - n0 : round_rows;
        if (band) {
            vkl_pool_run(c->pool, (size_t)((j->K + READ_ROWS - 1) / READ_ROWS), band_task, &r);
            band = !atomic_load(&r.read_failed); /* declined: the mapping from here on */
        }
        r.use_band = band;
        if (!band) atomic_store(&r.mapped, true);
        size_t tasks = (size_t)((r.rows + STRIPE_ROWS - 1) / STRIPE_ROWS);
        vkl_pool_run(c->pool, tasks, stripe_task, &r);
        size_t failed = atomic_load(&r.first_failed);
        if (failed != SIZE_MAX) {
            st = vkl_fail(c->ctx, r.status[failed], "%s", r.msg[failed]);
            break;
        }
        if (atomic_load(&r.mapped)) release(c, j, n0 + r.rows);
        c->done += (uint64_t)r.rows * src_row;
        if (c->done > c->total) c->total = c->done;
        if (c->opt->progress && c->opt->progress(c->opt->user, c->done, c->total))
            st = vkl_fail(c->ctx, VKL_ERR_STATE, "quantize: stopped by the caller after %llu of %llu bytes",
                          (unsigned long long)c->done, (unsigned long long)c->total);
    }
    vkl_free(c->ctx, r.wctx);
    vkl_free(c->ctx, r.status);
    vkl_free(c->ctx, r.msg);
    vkl_free(c->ctx, r.scratch);
    vkl_free(c->ctx, r.band);
    return st;
}
