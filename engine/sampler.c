/* Token sampler (sampler.h states the order of operations). Nothing sorts
 * the vocabulary: top-k uses a heap (small k) or a histogram of the logits
 * by count; top-p a histogram by probability mass. Either way only the
 * tokens of the one bucket that straddles the cut are sorted. */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "context.h"
#include "sampler.h"

/* top-k up to this keeps a heap during the pass over the logits: one compare
 * per token, a sift only when a token enters the current top k. */
#define HEAP_MAX_K 256
/* Most histogram buckets: with 1024 over the range of the possible logits,
 * the one bucket that needs sorting is a small slice of the vocabulary. */
#define NBUCKETS 1024u
#define KEY_NONE UINT16_MAX /* -inf: in no bucket */
/* The full-vocabulary draw sums p in blocks of this many tokens. */
#define DRAW_BLOCK 64u
/* Below this many elements, introsort hands over to insertion sort. */
#define SMALL_SORT 16

typedef struct cand {
    double p;    /* unnormalized probability, relative to the top token's 1 */
    float logit; /* after the repetition penalty, before temperature */
    int32_t id;
} cand;

struct vkl_sampler {
    vkl_context *ctx;
    vkl_sampling opt;
    size_t vocab;
    uint64_t rng[4]; /* xoshiro256** state */
    /* scratch, vocab entries each */
    float *pen;     /* the logits with the repetition penalty applied */
    double *p;      /* per-token probability on the full-vocabulary path */
    uint16_t *key;  /* per-token histogram bucket */
    cand *cand;     /* candidate list once top-k or a cut has narrowed it */
    double *bsum;   /* per DRAW_BLOCK tokens: the sum of their p */
    uint32_t bcount[NBUCKETS];
    double bmass[NBUCKETS];
};

/* ---- PRNG: xoshiro256** seeded through splitmix64 (Blackman & Vigna) ---- */

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static inline uint64_t rotl64(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

static uint64_t xoshiro_next(uint64_t st[4]) {
    const uint64_t result = rotl64(st[1] * 5, 7) * 9;
    const uint64_t t = st[1] << 17;
    st[2] ^= st[0];
    st[3] ^= st[1];
    st[1] ^= st[2];
    st[0] ^= st[3];
    st[2] ^= t;
    st[3] = rotl64(st[3], 45);
    return result;
}

void vkl_sampler_reseed(vkl_sampler *s, uint64_t seed) {
    if (!s) return;
    /* splitmix64 is a bijection of its counter, so the four words are
     * distinct and never all zero (xoshiro's one forbidden state). */
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) s->rng[i] = splitmix64(&x);
}

/* ---- ordering: logit descending, then id ascending (a total order) ---- */

static inline bool before(const cand *a, const cand *b) {
    return a->logit > b->logit || (a->logit == b->logit && a->id < b->id);
}

static inline void swap_cand(cand *a, cand *b) {
    cand t = *a;
    *a = *b;
    *b = t;
}

/* Heap whose root is the element that sorts last: the top-k heap's weakest
 * member, and heapsort's next element for the back. */
static void sift_down(cand *c, size_t n, size_t i) {
    for (;;) {
        size_t l = 2 * i + 1;
        if (l >= n) return;
        size_t w = l;
        if (l + 1 < n && before(&c[l], &c[l + 1])) w = l + 1;
        if (!before(&c[i], &c[w])) return;
        swap_cand(&c[i], &c[w]);
        i = w;
    }
}

static void sift_up(cand *c, size_t i) {
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!before(&c[parent], &c[i])) return;
        swap_cand(&c[parent], &c[i]);
        i = parent;
    }
}

static void heapsort_cands(cand *c, size_t n) {
    for (size_t i = n / 2; i-- > 0;) sift_down(c, n, i);
    for (size_t end = n; end > 1; end--) {
        swap_cand(&c[0], &c[end - 1]);
        sift_down(c, end - 1, 0);
    }
}

static void insertion_sort(cand *c, size_t n) {
    for (size_t i = 1; i < n; i++) {
        cand t = c[i];
        size_t j = i;
        while (j > 0 && before(&t, &c[j - 1])) {
            c[j] = c[j - 1];
            j--;
        }
        c[j] = t;
    }
}

/* Introsort: libc qsort may allocate (glibc's is a merge sort with a
 * malloc'd buffer), and sample() must not. Recursion goes to the smaller
 * side, so depth is O(log n); heapsort bounds the worst case. */
static void introsort(cand *c, size_t n, unsigned depth) {
    while (n > SMALL_SORT) {
        if (depth == 0) {
            heapsort_cands(c, n);
            return;
        }
        depth--;
        size_t mid = n / 2;
        if (before(&c[mid], &c[0])) swap_cand(&c[mid], &c[0]);
        if (before(&c[n - 1], &c[0])) swap_cand(&c[n - 1], &c[0]);
        if (before(&c[n - 1], &c[mid])) swap_cand(&c[n - 1], &c[mid]);
        const cand pivot = c[mid];
        /* Hoare partition; the pivot (not the last element) stops both scans. */
        size_t i = 0, j = n - 1;
        for (;;) {
            while (before(&c[i], &pivot)) i++;
            while (before(&pivot, &c[j])) j--;
            if (i >= j) break;
            swap_cand(&c[i], &c[j]);
            i++;
            j--;
        }
        size_t left = j + 1, right = n - left;
        if (left < right) {
            introsort(c, left, depth);
            c += left;
            n = right;
        } else {
            introsort(c + left, right, depth);
            n = left;
        }
    }
    insertion_sort(c, n);
}

static void sort_cands(cand *c, size_t n) {
    unsigned depth = 0;
    for (size_t m = n; m > 1; m >>= 1) depth += 2;
    introsort(c, n, depth);
}


/* ---- exp ---- */

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF /* gcc: off already in ISO C mode (-std=c11) */
#endif

/* 2^(j/32), correctly rounded. */
static const double exp2_32[32] = {
    0x1.0000000000000p+0, 0x1.059b0d3158574p+0, 0x1.0b5586cf9890fp+0, 0x1.11301d0125b51p+0,
    0x1.172b83c7d517bp+0, 0x1.1d4873168b9aap+0, 0x1.2387a6e756238p+0, 0x1.29e9df51fdee1p+0,
    0x1.306fe0a31b715p+0, 0x1.371a7373aa9cbp+0, 0x1.3dea64c123422p+0, 0x1.44e086061892dp+0,
    0x1.4bfdad5362a27p+0, 0x1.5342b569d4f82p+0, 0x1.5ab07dd485429p+0, 0x1.6247eb03a5585p+0,
    0x1.6a09e667f3bcdp+0, 0x1.71f75e8ec5f74p+0, 0x1.7a11473eb0187p+0, 0x1.82589994cce13p+0,
    0x1.8ace5422aa0dbp+0, 0x1.93737b0cdc5e5p+0, 0x1.9c49182a3f090p+0, 0x1.a5503b23e255dp+0,
    0x1.ae89f995ad3adp+0, 0x1.b7f76f2fb5e47p+0, 0x1.c199bdd85529cp+0, 0x1.cb720dcef9069p+0,
    0x1.d5818dcfba487p+0, 0x1.dfc97337b9b5fp+0, 0x1.ea4afa2a490dap+0, 0x1.f50765b6e4540p+0,
};
/* exp(y) for y <= 0 in plain IEEE double arithmetic, no libm: the same bits
 * on every platform (libm's exp differs in the last place between C
 * libraries), so a seed replays the same tokens everywhere; as fast as
 * glibc's here. y = (32k' + j) ln2/32 + r, |r| <= ln2/64, then a degree-5
 * polynomial: relative error below 3e-15 (measured against glibc over
 * [-708, 0]). Below -708 it returns 0, dropping only tokens 1e-307 times
 * less likely than the top one. */
static inline double exp_nonpos(double y) {
    if (!(y > -708.0)) return 0.0; /* also -inf */
    const double shifter = 0x1.8p52; /* adding it rounds to an integer */
    const double kd = (y * (32.0 * 1.44269504088896338700e+00) + shifter) - shifter;
    /* ln2/32 split in two (fdlibm's ln2_hi has 32 bits: kd * hi is exact) */
    const double r = (y - kd * (6.93147180369123816490e-01 / 32.0)) - kd * (1.90821492927058770002e-10 / 32.0);
    const int64_t k = (int64_t)kd; /* in [-32687, 0] */
    const uint64_t j = (uint64_t)k & 31u;
    const int64_t e = (k - (int64_t)j) / 32; /* exact: floor(k / 32) */
    double q = 1.0 / 120.0;
    q = q * r + 1.0 / 24.0;
    q = q * r + 1.0 / 6.0;
    q = q * r + 0.5;
    q = q * r * r + r; /* exp(r) - 1 */
    const uint64_t bits = (uint64_t)(e + 1023) << 52; /* 2^e, e in [-1022, 0]: normal */
    double scale;
    memcpy(&scale, &bits, sizeof(scale));
    return (exp2_32[j] + exp2_32[j] * q) * scale;
}

/* ---- scanning ---- */

static vkl_status fail_nan(vkl_sampler *s, size_t i) {
    return vkl_fail(s->ctx, VKL_ERR_INVALID_ARGUMENT, "sampler: logit of token %zu is NaN", i);
}

static vkl_status fail_all_impossible(vkl_sampler *s, bool penalized) {
    return vkl_fail(s->ctx, VKL_ERR_INVALID_ARGUMENT,
                    "sampler: all %zu logits are -inf%s: no token is possible", s->vocab,
                    penalized ? " after the repetition penalty" : "");
}

typedef struct range {
    float hi; /* largest logit; -inf when no token is possible */
    float lo; /* smallest logit above -inf (only where asked for) */
} range;

/* One read of the logits: their range, or the first NaN as an error. Plain
 * scalar code with independent accumulators (the compiler keeps them in
 * registers and the compare chains short); a NaN fails every compare, so it
 * is looked for only when the cheap unordered test says one is there. */
static vkl_status scan(vkl_sampler *s, const float *x, bool want_lo, range *out) {
    const size_t n = s->vocab;
    float h0 = -INFINITY, h1 = -INFINITY, h2 = -INFINITY, h3 = -INFINITY;
    int bad = 0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const float a = x[i], b = x[i + 1], c = x[i + 2], d = x[i + 3];
        bad |= isunordered(a, b) | isunordered(c, d);
        h0 = a > h0 ? a : h0;
        h1 = b > h1 ? b : h1;
        h2 = c > h2 ? c : h2;
        h3 = d > h3 ? d : h3;
    }
    for (; i < n; i++) {
        bad |= isnan(x[i]);
        h0 = x[i] > h0 ? x[i] : h0;
    }
    if (bad) {
        for (i = 0; i < n; i++)
            if (isnan(x[i])) return fail_nan(s, i);
    }
    h0 = h1 > h0 ? h1 : h0;
    h2 = h3 > h2 ? h3 : h2;
    out->hi = h2 > h0 ? h2 : h0;
    out->lo = out->hi;
    if (want_lo && out->hi != -INFINITY) {
        /* -inf reads as +inf here, so it never wins the min */
        float l0 = INFINITY, l1 = INFINITY, l2 = INFINITY, l3 = INFINITY;
        for (i = 0; i + 4 <= n; i += 4) {
            const float a = x[i] == -INFINITY ? INFINITY : x[i];
            const float b = x[i + 1] == -INFINITY ? INFINITY : x[i + 1];
            const float c = x[i + 2] == -INFINITY ? INFINITY : x[i + 2];
            const float d = x[i + 3] == -INFINITY ? INFINITY : x[i + 3];
            l0 = a < l0 ? a : l0;
            l1 = b < l1 ? b : l1;
            l2 = c < l2 ? c : l2;
            l3 = d < l3 ? d : l3;
        }
        for (; i < n; i++)
            if (x[i] != -INFINITY && x[i] < l0) l0 = x[i];
        l0 = l1 < l0 ? l1 : l0;
        l2 = l3 < l2 ? l3 : l2;
        out->lo = l2 < l0 ? l2 : l0;
    }
    return VKL_OK;
}

/* A histogram splits [lo, hi] into nb even buckets, highest logits in bucket
 * 0: key order is sort order, and tokens of one logit share a bucket. About
 * 8 tokens a bucket, at most NBUCKETS, so small lists pay little for it. */
typedef struct hist {
    double hi, scale;
    uint32_t nb;
} hist;

static hist hist_make(double hi, double lo, size_t n) {
    hist h;
    h.nb = n / 8 < 16 ? 16u : n / 8 > NBUCKETS ? NBUCKETS : (uint32_t)(n / 8);
    h.hi = hi;
    h.scale = hi > lo ? (double)(h.nb - 1) / (hi - lo) : 0.0;
    return h;
}

static inline uint16_t bucket_of(float v, const hist *h) {
    const double d = (h->hi - (double)v) * h->scale;
    return d < (double)(h->nb - 1) ? (uint16_t)d : (uint16_t)(h->nb - 1);
}

static inline double next_unit(vkl_sampler *s) {
    return (double)(xoshiro_next(s->rng) >> 11) * 0x1.0p-53; /* exact, in [0, 1) */
}

/* ---- candidate-list path: after top-k, or among +inf tokens ---- */

/* cand[0..n) holds all candidates with their p. Keeps the smallest prefix in
 * sort order whose mass reaches need (moved to the front, in no particular
 * order except that the edge bucket's share is sorted) and returns its size. */
static size_t list_top_p(vkl_sampler *s, size_t n, double need) {
    cand *c = s->cand;
    float hi = -INFINITY, lo = INFINITY;
    for (size_t j = 0; j < n; j++) {
        if (c[j].logit > hi) hi = c[j].logit;
        if (c[j].logit < lo) lo = c[j].logit;
    }
    const hist h = hist_make(hi, lo, n);
    memset(s->bmass, 0, h.nb * sizeof(s->bmass[0]));
    memset(s->bcount, 0, h.nb * sizeof(s->bcount[0]));
    for (size_t j = 0; j < n; j++) {
        /* Stored, not recomputed, so both passes agree on the bucket even
         * where a compiler keeps excess precision. */
        const uint16_t b = bucket_of(c[j].logit, &h);
        s->key[c[j].id] = b;
        s->bmass[b] += c[j].p;
        s->bcount[b]++;
    }
    double before = 0.0;
    uint32_t edge = 0;
    for (; edge < h.nb; edge++) {
        if (before + s->bmass[edge] >= need) break;
        before += s->bmass[edge];
    }
    if (edge == h.nb) return n; /* short of need by rounding only: keep all */

    size_t front = 0;
    for (size_t j = 0; j < n; j++)
        if (s->key[c[j].id] < edge) swap_cand(&c[front++], &c[j]);
    const size_t edge_end = front + s->bcount[edge];
    for (size_t j = front, e = front; j < n && e < edge_end; j++)
        if (s->key[c[j].id] == edge) swap_cand(&c[e++], &c[j]);
    sort_cands(c + front, edge_end - front);
    double cum = before;
    for (size_t j = front; j < edge_end; j++) {
        cum += c[j].p;
        if (cum >= need) return j + 1;
    }
    return edge_end;
}

static vkl_status sample_list(vkl_sampler *s, size_t n, bool sorted, float hi, bool p_set,
                              int32_t *token) {
    const vkl_sampling *o = &s->opt;
    cand *c = s->cand;
    if (!p_set) {
        const double inv_t = 1.0 / (double)o->temperature; /* a multiply per token, not a divide */
        for (size_t j = 0; j < n; j++) c[j].p = exp_nonpos(((double)c[j].logit - (double)hi) * inv_t);
    }

    if (o->top_p < 1.0f && n > 1) {
        double total = 0.0;
        for (size_t j = 0; j < n; j++) total += c[j].p;
        const double need = (double)o->top_p * total;
        if (sorted) {
            double cum = 0.0;
            for (size_t j = 0; j < n; j++) {
                cum += c[j].p;
                if (cum >= need) {
                    n = j + 1;
                    break;
                }
            }
        } else {
            n = list_top_p(s, n, need);
        }
    }

    if (o->min_p > 0.0f && n > 1) {
        /* The top token (p = 1) always survives: min_p <= 1. */
        const double floor_p = (double)o->min_p;
        size_t m = 0;
        for (size_t j = 0; j < n; j++)
            if (c[j].p >= floor_p) c[m++] = c[j];
        n = m;
    }

    double sum = 0.0;
    for (size_t j = 0; j < n; j++) sum += c[j].p;
    const double target = next_unit(s) * sum;
    double cum = 0.0;
    size_t last = 0;
    for (size_t j = 0; j < n; j++) {
        if (!(c[j].p > 0.0)) continue; /* underflowed: never drawn */
        cum += c[j].p;
        last = j;
        if (cum > target) break;
    }
    *token = c[last].id; /* the loop ran out only if rounding left cum <= target */
    return VKL_OK;
}

/* The k best of the finite logits into cand[0..k), through a heap whose root
 * is the weakest member. Returns how many (fewer than k if fewer possible). */
static size_t heap_top_k(vkl_sampler *s, const float *x, size_t k) {
    cand *c = s->cand;
    size_t n = 0, i = 0;
    for (; i < s->vocab && n < k; i++) {
        if (x[i] == -INFINITY) continue;
        c[n] = (cand){.logit = x[i], .id = (int32_t)i};
        sift_up(c, n);
        n++;
    }
    /* The weakest member's logit, in a local: stores into c would otherwise
     * force a reload per token. An equal logit has a later id: it ranks
     * lower, so only a strictly greater one enters (and -inf never does). */
    float weakest = n ? c[0].logit : INFINITY;
    for (; i < s->vocab; i++) {
        const float v = x[i];
        if (v > weakest) {
            c[0] = (cand){.logit = v, .id = (int32_t)i};
            sift_down(c, n, 0);
            weakest = c[0].logit;
        }
    }
    sort_cands(c, n);
    return n;
}

/* The k best into cand[0..k) through a histogram by count; only the edge
 * bucket is sorted. SIZE_MAX when k covers every possible token. */
static size_t hist_top_k(vkl_sampler *s, const float *x, range r, size_t k) {
    const hist h = hist_make(r.hi, r.lo, s->vocab);
    uint16_t *key = s->key;
    size_t possible = 0;
    memset(s->bcount, 0, h.nb * sizeof(s->bcount[0]));
    for (size_t i = 0; i < s->vocab; i++) {
        const float v = x[i];
        if (v == -INFINITY) {
            key[i] = KEY_NONE;
            continue;
        }
        const uint16_t b = bucket_of(v, &h);
        key[i] = b;
        s->bcount[b]++;
        possible++;
    }
    if (k >= possible) return SIZE_MAX;
    size_t before = 0;
    uint32_t edge = 0;
    for (; edge < h.nb; edge++) { /* stops: the counts add up to possible > k */
        if (before + s->bcount[edge] >= k) break;
        before += s->bcount[edge];
    }
    cand *c = s->cand;
    size_t front = 0, e = before;
    for (size_t i = 0; i < s->vocab; i++) {
        const uint16_t b = key[i];
        if (b < edge)
            c[front++] = (cand){.logit = x[i], .id = (int32_t)i};
        else if (b == edge)
            c[e++] = (cand){.logit = x[i], .id = (int32_t)i};
    }
    sort_cands(c + before, e - before);
    return k;
}

/* ---- full-vocabulary path: no top-k narrowing ---- */

/* Sums block by block, four accumulators each: short dependency chains, and
 * the draw can skip whole blocks. */
static double block_sum(const double *p, size_t n) {
    double a = 0.0, b = 0.0, c = 0.0, d = 0.0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        a += p[i];
        b += p[i + 1];
        c += p[i + 2];
        d += p[i + 3];
    }
    for (; i < n; i++) a += p[i];
    return (a + b) + (c + d);
}

/* Draws from the weights p[0..vocab) (zero: dropped) in token order: whole
 * blocks while their sums stay <= target, then token by token. Rounding can
 * leave the running sum short of target at the end of a block or of the
 * vocabulary: then the last token with weight there is the pick. */
static int32_t dense_draw(vkl_sampler *s, double u) {
    const size_t n = s->vocab, nb = (n + DRAW_BLOCK - 1) / DRAW_BLOCK;
    double sum = 0.0;
    for (size_t b = 0; b < nb; b++) sum += s->bsum[b];
    const double target = u * sum;
    double cum = 0.0;
    for (size_t b = 0; b < nb; b++) {
        if (!(cum + s->bsum[b] > target)) {
            cum += s->bsum[b];
            continue;
        }
        const size_t end = (b + 1) * DRAW_BLOCK < n ? (b + 1) * DRAW_BLOCK : n;
        size_t last = SIZE_MAX;
        for (size_t i = b * DRAW_BLOCK; i < end; i++) {
            if (!(s->p[i] > 0.0)) continue;
            cum += s->p[i];
            last = i;
            if (cum > target) break;
        }
        if (last != SIZE_MAX) return (int32_t)last;
        break; /* a block of zeros cannot pass; rounding: fall back below */
    }
    for (size_t i = n; i-- > 0;)
        if (s->p[i] > 0.0) return (int32_t)i;
    return -1;
}

static vkl_status sample_dense(vkl_sampler *s, const float *x, range r, int32_t *token) {
    const vkl_sampling *o = &s->opt;
    const size_t n = s->vocab;
    const double hi = r.hi, inv_t = 1.0 / (double)o->temperature;
    double *p = s->p;
    uint16_t *key = s->key;
    /* min-p relative to the top token, whose p is exp(0) = 1 */
    const double floor_p = o->min_p > 0.0f ? (double)o->min_p : 0.0;

    if (o->top_p >= 1.0f) {
        for (size_t b0 = 0, blk = 0; b0 < n; b0 += DRAW_BLOCK, blk++) {
            const size_t end = b0 + DRAW_BLOCK < n ? b0 + DRAW_BLOCK : n;
            for (size_t i = b0; i < end; i++) {
                const double q = exp_nonpos(((double)x[i] - hi) * inv_t); /* -inf: 0 */
                p[i] = q >= floor_p ? q : 0.0;
            }
            s->bsum[blk] = block_sum(p + b0, end - b0);
        }
    } else {
        /* top-p: a histogram of mass by logit; buckets before the edge are
         * kept whole, the edge bucket is sorted and cut where the running
         * mass reaches top_p. */
        const hist h = hist_make(r.hi, r.lo, n);
        double tot[4] = {0.0, 0.0, 0.0, 0.0};
        memset(s->bmass, 0, h.nb * sizeof(s->bmass[0]));
        for (size_t i = 0; i < n; i++) {
            const float v = x[i];
            const double q = exp_nonpos(((double)v - hi) * inv_t);
            p[i] = q;
            tot[i & 3] += q;
            const uint16_t b = v == -INFINITY ? KEY_NONE : bucket_of(v, &h);
            key[i] = b;
            if (b != KEY_NONE) s->bmass[b] += q;
        }
        const double need = (double)o->top_p * ((tot[0] + tot[1]) + (tot[2] + tot[3]));
        double before = 0.0;
        uint32_t edge = 0;
        for (; edge < h.nb; edge++) {
            if (before + s->bmass[edge] >= need) break;
            before += s->bmass[edge];
        }
        /* edge == h.nb: short of need by rounding only; keep all */
        if (edge < h.nb) {
            cand *c = s->cand;
            size_t e = 0;
            for (size_t i = 0; i < n; i++)
                if (key[i] == edge) c[e++] = (cand){.p = p[i], .logit = x[i], .id = (int32_t)i};
            sort_cands(c, e);
            size_t m = e; /* short of need by rounding only: keep the bucket */
            double cum = before;
            for (size_t j = 0; j < e; j++) {
                cum += c[j].p;
                if (cum >= need) {
                    m = j + 1;
                    break;
                }
            }
            for (size_t j = m; j < e; j++) p[c[j].id] = 0.0;
        }
        for (size_t b0 = 0, blk = 0; b0 < n; b0 += DRAW_BLOCK, blk++) {
            const size_t end = b0 + DRAW_BLOCK < n ? b0 + DRAW_BLOCK : n;
            for (size_t i = b0; i < end; i++) {
                /* A multiply, not a branch: which tokens survive the cut is
                 * data-dependent noise to a branch predictor. KEY_NONE (-inf)
                 * lies past any edge. */
                const int keep = (key[i] <= edge) & (p[i] >= floor_p);
                p[i] *= (double)keep;
            }
            s->bsum[blk] = block_sum(p + b0, end - b0);
        }
    }

    const int32_t pick = dense_draw(s, next_unit(s));
    if (pick < 0) /* cannot happen: the top token has p = 1 and is kept */
        return vkl_fail(s->ctx, VKL_ERR_INTERNAL, "sampler: no token kept");
    *token = pick;
    return VKL_OK;
}

/* ---- the chain ---- */

static vkl_status sample_greedy(vkl_sampler *s, const float *x, bool penalized, int32_t *token) {
    range r;
    vkl_status st = scan(s, x, false, &r);
    if (st) return st;
    if (r.hi == -INFINITY) return fail_all_impossible(s, penalized);
    size_t i = 0;
    while (x[i] != r.hi) i++; /* the first: lowest index on ties */
    *token = (int32_t)i;
    return VKL_OK;
}

static vkl_status sample_dist(vkl_sampler *s, const float *x, bool penalized, int32_t *token) {
    const size_t k = s->opt.top_k > 0 ? (size_t)s->opt.top_k : 0;
    /* lo scales the histograms: needed by top-k by count and by top-p. */
    const bool want_lo = k > HEAP_MAX_K || (k == 0 && s->opt.top_p < 1.0f);
    range r;
    vkl_status st = scan(s, x, want_lo, &r);
    if (st) return st;
    if (r.hi == -INFINITY) return fail_all_impossible(s, penalized);
    
    if (r.hi == INFINITY) {
        /* The limit of softmax: the +inf tokens share everything, equally;
         * among equal logits sort order is id order. */
        size_t n = 0;
        for (size_t i = 0; i < s->vocab; i++)
            if (x[i] == INFINITY) s->cand[n++] = (cand){.p = 1.0, .logit = x[i], .id = (int32_t)i};
        if (k > 0 && k < n) n = k;
        return sample_list(s, n, true, r.hi, true, token);
    }
    if (k > 0 && k <= HEAP_MAX_K)
        return sample_list(s, heap_top_k(s, x, k), true, r.hi, false, token);
    if (k > HEAP_MAX_K) {
        size_t n = hist_top_k(s, x, r, k);
        if (n != SIZE_MAX) return sample_list(s, n, false, r.hi, false, token);
    }
    return sample_dense(s, x, r, token);
}

static inline float penalize(float x, float penalty) {
    return x > 0.0f ? x / penalty : x * penalty;
}

/* ---- public API ---- */

void vkl_sampling_defaults(vkl_sampling *s) {
    if (!s) return;
    memset(s, 0, sizeof(*s));
    s->temperature = 0.0f;
    s->top_k = 0;
    s->top_p = 1.0f;
    s->min_p = 0.0f;
    s->repetition_penalty = 1.0f;
    s->repetition_window = 64;
    s->seed = 0;
}

static vkl_status validate(vkl_context *ctx, const vkl_sampling *o, size_t vocab) {
    if (vocab == 0) return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "sampler: vocabulary size is 0");
    if (vocab > (size_t)INT32_MAX)
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT,
                        "sampler: vocabulary size %zu exceeds the int32 token id range", vocab);
    if (!isfinite(o->temperature))
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT,
                        "sampler: temperature is %g; it must be finite (<= 0 means greedy)",
                        (double)o->temperature);
    if (isnan(o->top_p) || !(o->top_p > 0.0f && o->top_p <= 1.0f))
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT,
                        "sampler: top_p is %g; it must lie in (0, 1] (1 turns it off)",
                        (double)o->top_p);
    if (isnan(o->min_p) || o->min_p > 1.0f)
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT,
                        "sampler: min_p is %g; it must be at most 1 (<= 0 turns it off)",
                        (double)o->min_p);
    if (!isfinite(o->repetition_penalty) || !(o->repetition_penalty > 0.0f))
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT,
                        "sampler: repetition_penalty is %g; it must be finite and > 0 (1 turns it off)",
                        (double)o->repetition_penalty);
    if (o->repetition_window < 0)
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT,
                        "sampler: repetition_window is %" PRId32 "; it must be >= 0 (0: whole history)",
                        o->repetition_window);
    return VKL_OK;
}

vkl_status vkl_sampler_create(vkl_context *ctx, const vkl_sampling *opt, size_t vocab,
                              vkl_sampler **out) {
    if (!ctx) return VKL_ERR_INVALID_ARGUMENT;
    if (!out) return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "sampler: out is NULL");
    *out = NULL;
    if (!opt) return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "sampler: options are NULL");
    vkl_status st = validate(ctx, opt, vocab);
    if (st) return st;

    vkl_sampler *s = vkl_calloc(ctx, 1, sizeof(*s));
    if (!s) return VKL_ERR_OUT_OF_MEMORY;
    s->ctx = ctx;
    s->opt = *opt;
    s->vocab = vocab;
    s->pen = vkl_calloc(ctx, vocab, sizeof(float));
    s->p = vkl_calloc(ctx, vocab, sizeof(double));
    s->key = vkl_calloc(ctx, vocab, sizeof(uint16_t));
    s->cand = vkl_calloc(ctx, vocab, sizeof(cand));
    s->bsum = vkl_calloc(ctx, vocab / DRAW_BLOCK + 1, sizeof(double));
    if (!s->pen || !s->p || !s->key || !s->cand || !s->bsum) {
        vkl_sampler_destroy(s);
        return vkl_fail_prefix(ctx, VKL_ERR_OUT_OF_MEMORY, "sampler scratch for %zu tokens: ", vocab);
    }
    vkl_sampler_reseed(s, opt->seed);
    *out = s;
    return VKL_OK;
}

void vkl_sampler_destroy(vkl_sampler *s) {
    if (!s) return;
    vkl_context *ctx = s->ctx;
    vkl_free(ctx, s->pen);
    vkl_free(ctx, s->p);
    vkl_free(ctx, s->key);
    vkl_free(ctx, s->cand);
    vkl_free(ctx, s->bsum);
    vkl_free(ctx, s);
}

vkl_status vkl_sampler_sample(vkl_sampler *s, const float *logits, const int32_t *history,
                              size_t n_history, int32_t *token) {
    if (!s) return VKL_ERR_INVALID_ARGUMENT;
    if (!logits) return vkl_fail(s->ctx, VKL_ERR_INVALID_ARGUMENT, "sampler: logits are NULL");
    if (!token) return vkl_fail(s->ctx, VKL_ERR_INVALID_ARGUMENT, "sampler: token is NULL");
    if (n_history > 0 && !history)
        return vkl_fail(s->ctx, VKL_ERR_INVALID_ARGUMENT,
                        "sampler: history is NULL but n_history is %zu", n_history);

    /* The penalty goes on a copy: the caller's logits stay untouched, and
     * writing penalize(logits[t]) is idempotent, so a token repeated in the
     * window is penalized once. */
    const bool penalized = s->opt.repetition_penalty != 1.0f && n_history > 0;
    const float *x = logits;
    if (penalized) {
        const size_t window = (size_t)s->opt.repetition_window;
        const size_t h0 = window > 0 && n_history > window ? n_history - window : 0;
        for (size_t i = h0; i < n_history; i++) {
            const int32_t t = history[i];
            if (t < 0 || (size_t)t >= s->vocab)
                return vkl_fail(s->ctx, VKL_ERR_INVALID_ARGUMENT,
                                "sampler: history[%zu] = %" PRId32 " is outside the vocabulary [0, %zu)",
                                i, t, s->vocab);
        }
        memcpy(s->pen, logits, s->vocab * sizeof(float));
        for (size_t i = h0; i < n_history; i++)
            s->pen[history[i]] = penalize(logits[history[i]], s->opt.repetition_penalty);
        x = s->pen;
    }
    return s->opt.temperature <= 0.0f ? sample_greedy(s, x, penalized, token)
                                      : sample_dist(s, x, penalized, token);
}
