/* Attention over the thread pool, each worker its own slice of scratch:
 *  - f32 Q, K, V and output (mask none, f32 or bool): blocks of up to
 *    VKL_CPU_ATTN_ROWS query rows of one KV head a task, in f32 (MNN-LLM
 *    keeps softmax in fp32 too): one pass over their keys for the Q.K
 *    products and one over V for the weighted sums, each key row loaded
 *    once for the whole block, on the chosen instruction set;
 *  - other plain float dtypes: ref's own row code (backends/ref/attention.h),
 *    a row a task, ref's bits;
 *  - an int8 / fp8 cache: ref's kernel on one thread, since a row that fails
 *    to decode reports on the context, which is one thread's.
 * Which keys a row sees, and where their rows are, come from attention.h. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "../ref/attention.h"
#include "../ref/ref_ops.h"
#include "cpu_backend.h"

/* Positions of a prompt from which its KV heads are packed (below): a
 * prompt of S positions reads a key row in up to S * R / 4 blocks (R query
 * heads a KV head), where one step of decode reads it once. */
#define PACK_MIN_POSITIONS 16

typedef struct attn_job {
    const vkl_ref_args *a;
    const vkl_ref_attn *s;
    const vkl_cpu_dot *dot;
    const vkl_ref_tensor *mask;
    size_t blocks;          /* f32: blocks of query rows per (b, KV head) */
    float *kpack, *vpack;   /* K and V of each (b, KV head) as T contiguous rows, or NULL: read in place */
    size_t scratch_bytes;   /* per worker */
    unsigned char *scratch; /* per worker: scratch_bytes */
} attn_job;

/* The softmax weights where the instruction set has no vector exp: libm's
 * expf, skipped below VKL_CPU_EXP_ZERO_BELOW (glibc takes a slow path there,
 * and a long prompt's distant keys land there often). */
static float softmax_exp(float *x, size_t n, float max) {
    float sum = 0;
    for (size_t t = 0; t < n; t++) {
        const float d = x[t] - max;
        x[t] = d < VKL_CPU_EXP_ZERO_BELOW ? 0.0f : expf(d);
        sum += x[t];
    }
    return sum;
}

/* The additive mask's value at element mt: a bool mask's is 0 or -inf. */
static inline float mask_at(const vkl_ref_tensor *mask, int64_t mt) {
    if (mask->dtype == VKL_DTYPE_BOOL) return ((const uint8_t *)mask->data)[mt] ? 0.0f : -INFINITY;
    return ((const float *)mask->data)[mt];
}

/* Task t's output row, ordered (b, KV head g, position i, query head of the
 * group): the R query heads that share a KV head are neighbours at each
 * position, so they read one mask row (a [1, 1, S, T] f32 mask is 1 MiB at
 * 512 tokens: in the row order it streamed from L3 once per head, and the
 * load of it was a quarter of this file's time), while K and V of head g
 * stay in L2 across the positions. Every row is written by one task, so the
 * order changes no bits. */
static int64_t task_row(const vkl_ref_attn *s, size_t task) {
    const int64_t t = (int64_t)task, R = s->Hq / s->Hkv;
    const int64_t r = t % R, i = t / R % s->S, bg = t / R / s->S;
    const int64_t b = bg / s->Hkv, g = bg % s->Hkv;
    return (b * s->Hq + g * R + r) * s->S + i;
}

/* One query row of a block: where it is, its mask row (the additive values
 * of keys 0..T-1, or NULL without a mask) and the keys [lo, hi) it reads. */
typedef struct block_row {
    vkl_ref_attn_pos at;
    const float *mask;
} block_row;

/* Row `row`'s mask row: the f32 mask's own row where it is one, else its
 * values (a bool mask's 0 / -inf, a mask broadcast along the keys)
 * written into `copy`'s T floats. */
static const float *mask_row(const attn_job *j, const vkl_ref_attn_pos *at, float *copy) {
    const vkl_ref_tensor *mask = j->mask;
    if (!mask) return NULL;
    const int64_t idx[4] = {at->b, at->h, at->i, 0};
    const int64_t m0 = vkl_ref_broadcast_offset(mask, idx, 4), step = mask->dims[mask->rank - 1] == 1 ? 0 : 1;
    if (mask->dtype == VKL_DTYPE_F32 && step) return (const float *)mask->data + m0;
    for (int64_t t = 0; t < j->s->T; t++) copy[t] = mask_at(mask, m0 + t * step);
    return copy;
}

/* A mask's trailing fully masked keys (a causal mask's future: half of a
 * prompt's keys) are dropped before the products, when a key with a real
 * mask value (>= -1e30) precedes them. Masked means -inf or the lowest
 * float (exporters mask with torch.finfo(float32).min): the key's score is
 * then at most -3.4e38 + scale * q.k against a max of at least -1e30 +
 * scale * q.k', so its weight is 0 either way unless the products
 * themselves reach ~1e38 (or a masked key's row holds NaN, which ref would
 * carry into the output). The softmax pads its last round with -inf, so the
 * kept keys' sums are what they were. Eight keys a step while all eight
 * are masked (no branch among them): this scan reads half of every mask
 * row and was a third of the block's own time key by key. */
static int64_t kept_end(const float *m, int64_t lo, int64_t hi) {
    if (!m) return hi;
    int64_t kept = hi;
    while (kept - lo >= 8) {
        int all = 1;
        for (int64_t t = kept - 8; t < kept; t++) all &= m[t] <= -FLT_MAX;
        if (!all) break;
        kept -= 8;
    }
    while (kept > lo && m[kept - 1] <= -FLT_MAX) kept--;
    return kept > lo && m[kept - 1] >= -1e30f ? kept : hi;
}

/* Whether rows at a and b (one position, one batch) read the same mask row:
 * the mask broadcasts over the heads, or there is none. */
static bool same_mask_row(const attn_job *j, const vkl_ref_attn_pos *a, const vkl_ref_attn_pos *b) {
    const vkl_ref_tensor *mask = j->mask;
    if (!mask) return true;
    const int64_t ia[4] = {a->b, a->h, a->i, 0}, ib[4] = {b->b, b->h, b->i, 0};
    return vkl_ref_broadcast_offset(mask, ia, 4) == vkl_ref_broadcast_offset(mask, ib, 4);
}

/* Turns a row's n dot products (scores, its keys [lo, lo + n)) into softmax
 * weights in place: scaled, the mask added (-inf skips a key), the max
 * subtracted, e^; returns their sum, or 0 when the row sees no key. */
static float row_weights(const attn_job *j, const block_row *br, float *scores, size_t n) {
    bool seen;
    const float *m = br->mask ? br->mask + br->at.lo : NULL;
    const float max = j->dot->mask_scores(scores, m, n, (float)j->s->sc, &seen);
    if (!seen) return 0.0f;
    return j->dot->softmax_exp ? j->dot->softmax_exp(scores, n, max) : softmax_exp(scores, n, max);
}

/* Block c of (b, KV head g) in f32: up to VKL_CPU_ATTN_ROWS consecutive
 * tasks' rows (the query heads of g at one position when there are 4, else
 * consecutive positions), all reading keys of head g. One pass of dots_rows
 * over the union of their key spans, each key row loaded once for them all;
 * each row's softmax over its own span (the same call, so the same bits, as
 * when a row ran alone), its weights 0 outside; one pass of wsum_rows over
 * V. A row that sees no key writes zeros. scratch: VKL_CPU_ATTN_ROWS rows
 * of T scores, of Dv sums, then of T mask values. */
static void f32_block(const attn_job *j, size_t task, float *scratch) {
    const vkl_ref_attn *s = j->s;
    const vkl_ref_args *a = j->a;
    const size_t R = (size_t)(s->Hq / s->Hkv), seg = (size_t)s->S * R;
    const size_t first = task / j->blocks * seg + task % j->blocks * VKL_CPU_ATTN_ROWS;
    const size_t end = task / j->blocks * seg + seg;
    const uint32_t rows = (uint32_t)(end - first < VKL_CPU_ATTN_ROWS ? end - first : VKL_CPU_ATTN_ROWS);
    block_row br[VKL_CPU_ATTN_ROWS];
    const float *q[VKL_CPU_ATTN_ROWS];
    float *scores[VKL_CPU_ATTN_ROWS], *out[VKL_CPU_ATTN_ROWS];
    int64_t lo = s->T, hi = 0; /* the union of the rows' spans */
    float *copies = scratch + (size_t)VKL_CPU_ATTN_ROWS * (size_t)(s->T + s->Dv); /* mask rows made by mask_row */
    for (uint32_t r = 0; r < rows; r++) {
        const int64_t row = task_row(s, first + r);
        const vkl_ref_attn_pos at = vkl_ref_attn_row_pos(s, row);
        /* the query heads of a KV head at one position mostly read one mask
         * row: its trailing scan (half the row under a causal mask) once */
        if (r && at.i == br[r - 1].at.i && same_mask_row(j, &at, &br[r - 1].at)) {
            br[r] = br[r - 1], br[r].at.h = at.h;
        } else {
            br[r].at = at;
            br[r].mask = mask_row(j, &at, copies + (size_t)r * (size_t)s->T);
            br[r].at.hi = kept_end(br[r].mask, at.lo, at.hi);
            if (br[r].at.hi < br[r].at.lo) br[r].at.hi = br[r].at.lo;
        }
        q[r] = (const float *)a->in[0].data + row * s->D;
        out[r] = (float *)a->out[0].data + row * s->Dv;
        scores[r] = scratch + (size_t)r * (size_t)s->T;
        if (br[r].at.hi > br[r].at.lo) {
            lo = br[r].at.lo < lo ? br[r].at.lo : lo;
            hi = br[r].at.hi > hi ? br[r].at.hi : hi;
        }
    }
    if (hi <= lo) lo = hi = 0; /* no row sees a key: no pointer past the cache either */
    const int64_t b = (int64_t)(task / j->blocks) / s->Hkv, g = (int64_t)(task / j->blocks) % s->Hkv;
    const size_t n = hi > lo ? (size_t)(hi - lo) : 0;
    const float *k = (const float *)a->in[1].data + vkl_ref_attn_kv_offset(s, b, g, lo, s->D);
    const float *v = (const float *)a->in[2].data + vkl_ref_attn_kv_offset(s, b, g, lo, s->Dv);
    size_t kstride = (size_t)(vkl_ref_attn_kv_offset(s, b, g, 1, s->D) - vkl_ref_attn_kv_offset(s, b, g, 0, s->D));
    size_t vstride = (size_t)(vkl_ref_attn_kv_offset(s, b, g, 1, s->Dv) - vkl_ref_attn_kv_offset(s, b, g, 0, s->Dv));
    if (j->kpack) {
        const size_t head = (size_t)(b * s->Hkv + g) * (size_t)s->T + (size_t)lo;
        k = j->kpack + head * (size_t)s->D, kstride = (size_t)s->D;
        v = j->vpack + head * (size_t)s->Dv, vstride = (size_t)s->Dv;
    }
    if (n && j->dot->dots_rows)
        j->dot->dots_rows(k, kstride, q, rows, (size_t)s->D, n, scores);
    else
        for (uint32_t r = 0; n && r < rows; r++) j->dot->dots(k, kstride, q[r], (size_t)s->D, n, scores[r]);
    /* the rows that see a key, compacted for the weighted sum */
    const float *w[VKL_CPU_ATTN_ROWS];
    float *acc[VKL_CPU_ATTN_ROWS], sum[VKL_CPU_ATTN_ROWS];
    uint32_t live = 0, of[VKL_CPU_ATTN_ROWS];
    for (uint32_t r = 0; r < rows; r++) {
        const size_t off = (size_t)(br[r].at.lo - lo), nr = (size_t)(br[r].at.hi - br[r].at.lo);
        const float total = nr ? row_weights(j, &br[r], scores[r] + off, nr) : 0.0f;
        if (total == 0.0f) { /* no key seen (a seen key's weight e^0 = 1 is in the sum) */
            for (int64_t d = 0; d < s->Dv; d++) out[r][d] = 0.0f;
            continue;
        }
        for (size_t t = 0; t < off; t++) scores[r][t] = 0.0f;
        for (size_t t = off + nr; t < n; t++) scores[r][t] = 0.0f;
        w[live] = scores[r];
        acc[live] = scratch + (size_t)VKL_CPU_ATTN_ROWS * (size_t)s->T + (size_t)live * (size_t)s->Dv;
        sum[live] = total;
        of[live++] = r;
    }
    if (!live) return;
    if (j->dot->wsum_rows)
        j->dot->wsum_rows(v, vstride, w, live, (size_t)s->Dv, n, acc);
    else
        for (uint32_t r = 0; r < live; r++) j->dot->wsum(v, vstride, w[r], (size_t)s->Dv, n, acc[r]);
    for (uint32_t r = 0; r < live; r++)
        for (int64_t d = 0; d < s->Dv; d++) out[of[r]][d] = acc[r][d] / sum[r];
}

static void block_task(void *user, size_t task, unsigned worker) {
    const attn_job *j = user;
    f32_block(j, task, (float *)(void *)(j->scratch + (size_t)worker * j->scratch_bytes));
}

/* Task 2u copies K of (b, KV head) u into its contiguous rows, 2u + 1 V. */
static void pack_task(void *user, size_t task, unsigned worker) {
    (void)worker;
    const attn_job *j = user;
    const vkl_ref_attn *s = j->s;
    const bool is_v = task % 2;
    const int64_t bg = (int64_t)(task / 2), b = bg / s->Hkv, g = bg % s->Hkv, width = is_v ? s->Dv : s->D;
    const float *src = j->a->in[is_v ? 2 : 1].data;
    float *dst = (is_v ? j->vpack : j->kpack) + (size_t)(bg * s->T * width);
    for (int64_t t = 0; t < s->T; t++)
        memcpy(dst + t * width, src + vkl_ref_attn_kv_offset(s, b, g, t, width), (size_t)width * sizeof(float));
}

/* Other float dtypes: ref's row code, a row a task. */
static void row_task(void *user, size_t task, unsigned worker) {
    const attn_job *j = user;
    /* plain float K and V: a row cannot fail (attention.h) */
    (void)vkl_ref_attention_row(j->a, j->s, task_row(j->s, task), j->scratch + (size_t)worker * j->scratch_bytes);
}

/* How a call runs and the scratch it takes. */
typedef struct attn_plan {
    const vkl_ref_tensor *mask; /* the additive or bool mask, or NULL */
    bool f32;            /* this file's blocks, else ref's rows */
    bool pack;           /* the KV heads packed first */
    size_t pack_bytes;   /* their copy, at the scratch's start */
    size_t worker_bytes; /* each thread's, after it */
    size_t blocks;       /* f32: blocks of query rows per (b, KV head) */
    size_t tasks;
} attn_plan;

static attn_plan plan_of(const vkl_ref_args *a, const vkl_ref_attn *s) {
    attn_plan p = {0};
    p.mask = a->n_in > 3 && a->in[3].data ? &a->in[3] : NULL;
    p.f32 = a->in[0].dtype == VKL_DTYPE_F32 && a->in[1].dtype == VKL_DTYPE_F32 && a->in[2].dtype == VKL_DTYPE_F32 &&
            a->out[0].dtype == VKL_DTYPE_F32 &&
            (!p.mask || p.mask->dtype == VKL_DTYPE_F32 || p.mask->dtype == VKL_DTYPE_BOOL);
    p.worker_bytes = s->scratch_bytes;
    p.tasks = (size_t)s->rows;
    if (!p.f32) return p;
    /* T scores, Dv sums and T mask values for each row of a block, in whole cache lines */
    const size_t floats = (size_t)VKL_CPU_ATTN_ROWS * (size_t)(2 * s->T + s->Dv);
    p.worker_bytes = (floats * sizeof(float) + 63) / 64 * 64;
    const size_t seg = (size_t)(s->S * (s->Hq / s->Hkv));
    p.blocks = (seg + VKL_CPU_ATTN_ROWS - 1) / VKL_CPU_ATTN_ROWS;
    p.tasks = (size_t)(s->B * s->Hkv) * p.blocks;
    /* The in-place cache (kv_layout 1, [T, B, Hkv, D]) puts a KV head's rows
     * B * Hkv rows apart: 2 KiB on Llama-3.2-1B, so a head's 512 keys fall
     * into a 32nd of L1's sets and thrash it (and crowd L2's), and every
     * block re-read them from further out. A prompt's heads are copied into
     * contiguous rows first (one read and one write of K and V) where the
     * blocks read each key many times; a decode step reads each once. */
    p.pack = s->layout == 1 && s->B * s->Hkv > 1 && s->S >= PACK_MIN_POSITIONS;
    const size_t pack_floats = p.pack ? (size_t)(s->B * s->Hkv * s->T * (s->D + s->Dv)) : 0;
    p.pack_bytes = (pack_floats * sizeof(float) + 63) / 64 * 64;
    return p;
}

size_t vkl_cpu_attention_scratch(const vkl_ref_args *a) {
    const vkl_backend_weights *w = a->backend;
    vkl_ref_attn s;
    /* bad operands fail when the kernel runs; ref's kernel (an int8 / fp8
     * cache) keeps to the executor's rule */
    if (vkl_ref_attention_setup(a, &s) || s.coded) return 0;
    const attn_plan p = plan_of(a, &s);
    return p.pack_bytes + (size_t)vkl_pool_threads(w->dev->pool) * p.worker_bytes;
}

vkl_status vkl_cpu_attention(const vkl_ref_args *a) {
    const vkl_backend_weights *w = a->backend;
    vkl_ref_attn s;
    vkl_status st = vkl_ref_attention_setup(a, &s);
    if (st || s.coded) return st ? st : vkl_ref_attention(a);
    const attn_plan p = plan_of(a, &s);
    attn_job j = {a, &s, w->dev->dot, p.mask, p.blocks, NULL, NULL, p.worker_bytes, NULL};
    const unsigned threads = vkl_pool_threads(w->dev->pool);
    unsigned char *scratch = vkl_ref_scratch_get(a, p.pack_bytes + (size_t)threads * p.worker_bytes);
    if (!scratch) return VKL_ERR_OUT_OF_MEMORY;
    j.scratch = scratch + p.pack_bytes;
    if (p.pack) {
        j.kpack = (float *)(void *)scratch;
        j.vpack = j.kpack + (size_t)(s.B * s.Hkv * s.T * s.D);
        vkl_pool_run(w->dev->pool, (size_t)(2 * s.B * s.Hkv), pack_task, &j);
    }
    vkl_pool_run(w->dev->pool, p.tasks, p.f32 ? block_task : row_task, &j);
    return VKL_OK;
}
