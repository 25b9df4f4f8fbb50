/* Attention with its output rows (b, h, i) spread over the thread pool, a
 * row a task, each worker its own slice of scratch:
 *  - f32 Q, K, V and output (mask none, f32 or bool): this file's row, in
 *    f32 (MNN-LLM keeps softmax in fp32 too) with the Q.K products on the
 *    chosen instruction set;
 *  - other plain float dtypes: ref's own row code (backends/ref/attention.h),
 *    ref's bits;
 *  - an int8 / fp8 cache: ref's kernel on one thread, since a row that fails
 *    to decode reports on the context, which is one thread's.
 * Which keys a row sees, and where their rows are, come from attention.h. */
#include <float.h>
#include <math.h>

#include "../ref/attention.h"
#include "../ref/ref_ops.h"
#include "cpu_backend.h"

typedef struct attn_job {
    const vkl_ref_args *a;
    const vkl_ref_attn *s;
    const vkl_cpu_dot *dot;
    bool f32;               /* this file's row, else ref's */
    unsigned char *scratch; /* per worker: s->scratch_bytes */
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

/* The additive mask's value at element mt: 0 or -inf for a bool mask, 0
 * without one. */
static inline float mask_at(const vkl_ref_tensor *mask, int64_t mt) {
    if (!mask) return 0.0f;
    if (mask->dtype == VKL_DTYPE_BOOL) return ((const uint8_t *)mask->data)[mt] ? 0.0f : -INFINITY;
    return ((const float *)mask->data)[mt];
}

/* Row `row` in f32: scores of the visible keys (mask added; -inf skips a
 * key), softmax with the max subtracted, the weighted sum of V's rows, or
 * zeros when no key is visible. The keys' rows lie a fixed stride apart, so
 * the dot products and the weighted sum each run over all of them in one
 * call. scores: T floats, acc: Dv floats. */
static void f32_row(const attn_job *j, int64_t row, float *scores, float *acc) {
    const vkl_ref_args *a = j->a;
    const vkl_ref_attn *s = j->s;
    const vkl_ref_attn_pos at = vkl_ref_attn_row_pos(s, row);
    const vkl_ref_tensor *mask = a->n_in > 3 && a->in[3].data ? &a->in[3] : NULL;
    const float *q = (const float *)a->in[0].data + row * s->D, *k = a->in[1].data, *v = a->in[2].data;
    float *out = (float *)a->out[0].data + row * s->Dv;
    int64_t m0 = 0, mstep = 0; /* the mask broadcasts onto [B, Hq, S, T]: along j it moves by 1 or 0 */
    if (mask) {
        const int64_t idx[4] = {at.b, at.h, at.i, 0};
        m0 = vkl_ref_broadcast_offset(mask, idx, 4);
        mstep = mask->dims[mask->rank - 1] == 1 ? 0 : 1;
    }
    size_t n = at.hi > at.lo ? (size_t)(at.hi - at.lo) : 0;
    /* A mask's trailing fully masked keys (a causal mask's future: half of a
     * prompt's keys) are dropped before the products, when a key with a real
     * mask value (>= -1e30) precedes them. Masked means -inf or the lowest
     * float (exporters mask with torch.finfo(float32).min): the key's score
     * is then at most -3.4e38 + scale * q.k against a max of at least
     * -1e30 + scale * q.k', so its weight is 0 either way unless the products
     * themselves reach ~1e38 (or a masked key's row holds NaN, which ref would
     * carry into the output). The softmax pads its last round with -inf, so
     * the kept keys' sums are what they were. */
    size_t kept = n;
    while (kept && mask_at(mask, m0 + (at.lo + (int64_t)kept - 1) * mstep) <= -FLT_MAX) kept--;
    if (kept && mask_at(mask, m0 + (at.lo + (int64_t)kept - 1) * mstep) >= -1e30f) n = kept;
    const int64_t k0 = vkl_ref_attn_kv_offset(s, at.b, at.g, at.lo, s->D);
    const int64_t v0 = vkl_ref_attn_kv_offset(s, at.b, at.g, at.lo, s->Dv);
    const size_t kstride = (size_t)(vkl_ref_attn_kv_offset(s, at.b, at.g, at.lo + 1, s->D) - k0);
    const size_t vstride = (size_t)(vkl_ref_attn_kv_offset(s, at.b, at.g, at.lo + 1, s->Dv) - v0);
    if (n) j->dot->dots(k + k0, kstride, q, (size_t)s->D, n, scores);
    float max = -INFINITY;
    bool any = false;
    for (size_t t = 0; t < n; t++) {
        const float m = mask_at(mask, m0 + (at.lo + (int64_t)t) * mstep);
        const float sc = m != -INFINITY ? (float)s->sc * scores[t] + m : m;
        scores[t] = sc;
        any = any || sc != -INFINITY;
        if (sc > max) max = sc;
    }
    if (!any) {
        for (int64_t d = 0; d < s->Dv; d++) out[d] = 0.0f;
        return;
    }
    /* the weights in place of the scores; a skipped key (-inf) weighs 0, so
     * wsum leaves its row unread */
    const float sum = j->dot->softmax_exp ? j->dot->softmax_exp(scores, n, max) : softmax_exp(scores, n, max);
    j->dot->wsum(v + v0, vstride, scores, (size_t)s->Dv, n, acc);
    for (int64_t d = 0; d < s->Dv; d++) out[d] = acc[d] / sum;
}

/* Task t's output row, ordered (b, KV head g, position i, query head of the
 * group): the R query heads that share a KV head run one after another at
 * each position, so they read one mask row (a [1, 1, S, T] f32 mask is 1 MiB
 * at 512 tokens: in the row order it streamed from L3 once per head, and the
 * load of it was a quarter of this file's time), while K and V of head g
 * stay in L2 across the positions. Every row is written by its own task, so
 * the order changes no bits. */
static int64_t task_row(const vkl_ref_attn *s, size_t task) {
    const int64_t t = (int64_t)task, R = s->Hq / s->Hkv;
    const int64_t r = t % R, i = t / R % s->S, bg = t / R / s->S;
    const int64_t b = bg / s->Hkv, g = bg % s->Hkv;
    return (b * s->Hq + g * R + r) * s->S + i;
}

static void row_task(void *user, size_t task, unsigned worker) {
    const attn_job *j = user;
    const int64_t row = task_row(j->s, task);
    unsigned char *scratch = j->scratch + (size_t)worker * j->s->scratch_bytes;
    if (j->f32) {
        /* scratch_bytes holds T + D + Dv + 1 doubles: T + Dv floats fit */
        f32_row(j, row, (float *)(void *)scratch, (float *)(void *)scratch + j->s->T);
        return;
    }
    /* plain float K and V: a row cannot fail (attention.h) */
    (void)vkl_ref_attention_row(j->a, j->s, row, scratch);
}

vkl_status vkl_cpu_attention(const vkl_ref_args *a) {
    const vkl_backend_weights *w = a->backend;
    vkl_ref_attn s;
    vkl_status st = vkl_ref_attention_setup(a, &s);
    if (st || s.coded) return st ? st : vkl_ref_attention(a);
    const vkl_ref_tensor *mask = a->n_in > 3 && a->in[3].data ? &a->in[3] : NULL;
    const bool f32 = a->in[0].dtype == VKL_DTYPE_F32 && a->in[1].dtype == VKL_DTYPE_F32 &&
                     a->in[2].dtype == VKL_DTYPE_F32 && a->out[0].dtype == VKL_DTYPE_F32 &&
                     (!mask || mask->dtype == VKL_DTYPE_F32 || mask->dtype == VKL_DTYPE_BOOL);
    const unsigned threads = vkl_pool_threads(w->dev->pool);
    unsigned char *scratch = vkl_ref_scratch_get(a, (size_t)threads * s.scratch_bytes);
    if (!scratch) return VKL_ERR_OUT_OF_MEMORY;
    attn_job j = {a, &s, w->dev->dot, f32, scratch};
    vkl_pool_run(w->dev->pool, (size_t)s.rows, row_task, &j);
    return VKL_OK;
}
