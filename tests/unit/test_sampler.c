/* Unit tests for engine/sampler.c: greedy, determinism, each filter against a
 * sort-based reference, chi-square of the drawn distribution, repetition
 * penalty, -inf/+inf/NaN, option validation, no allocation in sample().
 * `test_sampler --bench [FILTER]` times sample() for a 128k vocabulary
 * instead (FILTER: a substring of the case names). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "context.h"
#include "sampler.h"

#define CHECK_FIXTURE /* the checks count in each test's fx: fails, checks */
#include "check.h"

typedef struct fx {
    vkl_context *ctx;
    int fails;
    int checks;
} fx;

/* ---- helpers ---- */

/* Test-local generator (splitmix64), independent of the sampler's. */
static uint64_t tr_next(uint64_t *x) {
    uint64_t z = (*x += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}
static double tr_unit(uint64_t *x) {
    return (double)(tr_next(x) >> 11) * 0x1.0p-53;
}
static double tr_gauss(uint64_t *x) {
    double u1 = tr_unit(x), u2 = tr_unit(x);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
static void fill_gauss(float *l, size_t n, double sigma, uint64_t seed) {
    uint64_t x = seed;
    for (size_t i = 0; i < n; i++) l[i] = (float)(sigma * tr_gauss(&x));
}

static vkl_sampler *make(fx *f, const vkl_sampling *o, size_t vocab) {
    vkl_sampler *s = NULL;
    vkl_status st = vkl_sampler_create(f->ctx, o, vocab, &s);
    f->checks++;
    if (st) {
        fprintf(stderr, "sampler_create failed: %s: %s\n", vkl_status_name(st), vkl_context_error(f->ctx));
        f->fails++;
    }
    return s;
}

static int32_t draw(fx *f, vkl_sampler *s, const float *logits, const int32_t *hist, size_t nh) {
    int32_t t = -1;
    vkl_status st = vkl_sampler_sample(s, logits, hist, nh, &t);
    if (st) {
        f->fails++;
        fprintf(stderr, "sample failed: %s: %s\n", vkl_status_name(st), vkl_context_error(f->ctx));
    }
    return t;
}

static int32_t argmax_ref(const float *l, size_t n) {
    int32_t b = -1;
    for (size_t i = 0; i < n; i++)
        if (!isnan(l[i]) && l[i] != -INFINITY && (b < 0 || l[i] > l[b])) b = (int32_t)i;
    return b;
}

/* Reference distribution by the documented chain, with a full sort; no
 * repetition penalty (callers pass penalized logits). Writes prob[vocab]. */
typedef struct ref_item {
    float logit;
    int32_t id;
} ref_item;
static int ref_cmp(const void *a, const void *b) {
    const ref_item *x = a, *y = b;
    if (x->logit != y->logit) return x->logit > y->logit ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}
static void ref_dist(const float *l, size_t n, const vkl_sampling *o, double *prob) {
    ref_item *it = malloc(n * sizeof(*it));
    double *p = malloc(n * sizeof(*p));
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (l[i] != -INFINITY) it[m++] = (ref_item){l[i], (int32_t)i};
    qsort(it, m, sizeof(*it), ref_cmp);
    if (o->top_k > 0 && (size_t)o->top_k < m) m = (size_t)o->top_k;
    double total = 0;
    for (size_t j = 0; j < m; j++) {
        p[j] = exp(((double)it[j].logit - (double)it[0].logit) / (double)o->temperature);
        total += p[j];
    }
    if (o->top_p < 1.0f) {
        double cum = 0;
        for (size_t j = 0; j < m; j++) {
            cum += p[j];
            if (cum >= (double)o->top_p * total) {
                m = j + 1;
                break;
            }
        }
    }
    memset(prob, 0, n * sizeof(*prob));
    double sum = 0;
    for (size_t j = 0; j < m; j++) {
        if (o->min_p > 0 && p[j] < (double)o->min_p * p[0]) continue;
        prob[it[j].id] = p[j];
        sum += p[j];
    }
    for (size_t i = 0; i < n; i++) prob[i] /= sum;
    free(it);
    free(p);
}

/* ---- tests ---- */

static void test_defaults(fx *f) {
    vkl_sampling o;
    memset(&o, 0xAB, sizeof(o));
    vkl_sampling_defaults(&o);
    CHECK(f, o.temperature == 0.0f);
    CHECK(f, o.top_k == 0);
    CHECK(f, o.top_p == 1.0f);
    CHECK(f, o.min_p == 0.0f);
    CHECK(f, o.repetition_penalty == 1.0f);
    CHECK(f, o.repetition_window == 64);
    CHECK(f, o.seed == 0);
}

static void test_greedy(fx *f) {
    vkl_sampling o;
    vkl_sampling_defaults(&o);
    const float a[] = {0.5f, 3.0f, -2.0f, 3.0f, 2.9f};
    vkl_sampler *s = make(f, &o, 5);
    if (!s) return;
    CHECK(f, draw(f, s, a, NULL, 0) == 1); /* tie 1/3: lowest index */
    const float b[] = {-INFINITY, -5.0f, -4.0f, -INFINITY, -4.0f};
    CHECK(f, draw(f, s, b, NULL, 0) == 2);
    const float c[] = {7.0f, 7.0f, 7.0f, 7.0f, 7.0f};
    CHECK(f, draw(f, s, c, NULL, 0) == 0);
    const float d[] = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f};
    CHECK(f, draw(f, s, d, NULL, 0) == 4);
    vkl_sampler_destroy(s);

    /* random, large */
    enum { V = 50000 };
    float *l = malloc(V * sizeof(float));
    fill_gauss(l, V, 3.0, 7);
    l[31337] = 40.0f;
    l[40000] = 40.0f;
    o.temperature = -1.0f; /* any value <= 0 */
    s = make(f, &o, V);
    if (s) CHECK(f, draw(f, s, l, NULL, 0) == 31337);
    vkl_sampler_destroy(s);
    free(l);
}

static void test_determinism(fx *f) {
    enum { V = 1000, N = 2000 };
    float *l = malloc(V * sizeof(float));
    int32_t *a = malloc(N * sizeof(int32_t)), *b = malloc(N * sizeof(int32_t));
    int32_t *c = malloc(N * sizeof(int32_t));
    fill_gauss(l, V, 1.0, 11);
    vkl_sampling o;
    vkl_sampling_defaults(&o);
    o.temperature = 1.0f;
    o.seed = 42;
    vkl_sampler *s1 = make(f, &o, V), *s2 = make(f, &o, V);
    o.seed = 43;
    vkl_sampler *s3 = make(f, &o, V);
    if (s1 && s2 && s3) {
        for (int i = 0; i < N; i++) {
            a[i] = draw(f, s1, l, NULL, 0);
            b[i] = draw(f, s2, l, NULL, 0);
            c[i] = draw(f, s3, l, NULL, 0);
        }
        CHECK(f, memcmp(a, b, N * sizeof(int32_t)) == 0);
        int differ = 0;
        for (int i = 0; i < N; i++) differ += a[i] != c[i];
        CHECK(f, differ > N / 2); /* near-uniform over 1000: almost all differ */
        /* reseed replays the stream */
        vkl_sampler_reseed(s1, 42);
        int same = 1;
        for (int i = 0; i < N; i++) same &= draw(f, s1, l, NULL, 0) == a[i];
        CHECK(f, same);
        /* a failed call does not advance the stream */
        vkl_sampler_reseed(s1, 42);
        float bad[V];
        memcpy(bad, l, sizeof(bad));
        bad[5] = NAN;
        int32_t t;
        CHECK(f, vkl_sampler_sample(s1, bad, NULL, 0, &t) == VKL_ERR_INVALID_ARGUMENT);
        CHECK(f, draw(f, s1, l, NULL, 0) == a[0]);
    }
    vkl_sampler_destroy(s1);
    vkl_sampler_destroy(s2);
    vkl_sampler_destroy(s3);

    /* The stream is fixed across platforms: with equal logits every p is
     * exactly 1, so the token is floor(u * V) for the documented u: the top
     * 53 bits of xoshiro256** seeded by splitmix64. */
    uint64_t x = 0;
    CHECK(f, tr_next(&x) == UINT64_C(0xE220A8397B1DCDAF)); /* splitmix64(0), published */
    for (int i = 0; i < V; i++) l[i] = 0.25f;
    o.seed = 2024;
    vkl_sampler *s = make(f, &o, V);
    if (s) {
        uint64_t st[4], sx = 2024;
        for (int i = 0; i < 4; i++) st[i] = tr_next(&sx);
        int ok = 1;
        for (int i = 0; i < 100; i++) {
            uint64_t r = ((st[1] * 5) << 7 | (st[1] * 5) >> 57) * 9;
            uint64_t t = st[1] << 17;
            st[2] ^= st[0];
            st[3] ^= st[1];
            st[1] ^= st[2];
            st[0] ^= st[3];
            st[2] ^= t;
            st[3] = (st[3] << 45) | (st[3] >> 19);
            int32_t want = (int32_t)((double)(r >> 11) * 0x1.0p-53 * V);
            ok &= draw(f, s, l, NULL, 0) == want;
        }
        CHECK(f, ok);
    }
    vkl_sampler_destroy(s);
    free(l);
    free(a);
    free(b);
    free(c);
}

/* Tokens pinned for fixed logits and seeds. The sampler uses no libm (its
 * exp is plain IEEE arithmetic) and sums in a fixed order, so these are the
 * same on every platform; a mismatch means the stream changed. The logits
 * come from integer arithmetic for the same reason. */
static void test_golden_stream(fx *f) {
    enum { V = 1000, N = 16 };
    float *l = malloc(V * sizeof(float));
    for (int i = 0; i < V; i++) l[i] = (float)((i * 7919) % 1000) / 125.0f - 4.0f;
    const struct {
        float t, p, mp;
        int32_t k;
        uint64_t seed;
        int32_t want[N];
    } cases[] = {
        {0.7f, 1.0f, 0.0f, 0, 7, {704, 284, 852, 976, 988, 878, 63, 112, 408, 162, 545, 732, 939, 889, 457, 568}},
        {0.7f, 0.9f, 0.0f, 0, 8, {828, 605, 605, 951, 396, 235, 471, 605, 926, 852, 889, 519, 199, 742, 902, 953}},
        {1.3f, 0.95f, 0.05f, 40, 9, {321, 889, 605, 667, 235, 988, 25, 99, 926, 457, 988, 198, 926, 309, 556, 556}},
        {0.5f, 0.8f, 0.0f, 500, 10, {963, 420, 149, 87, 445, 260, 853, 186, 815, 655, 754, 161, 272, 568, 877, 531}},
    };
    for (size_t c = 0; c < VKL_ARRAY_LEN(cases); c++) {
        vkl_sampling o;
        vkl_sampling_defaults(&o);
        o.temperature = cases[c].t;
        o.top_p = cases[c].p;
        o.min_p = cases[c].mp;
        o.top_k = cases[c].k;
        o.seed = cases[c].seed;
        vkl_sampler *s = make(f, &o, V);
        if (!s) continue;
        int32_t got[N];
        for (int i = 0; i < N; i++) got[i] = draw(f, s, l, NULL, 0);
        f->checks++;
        if (memcmp(got, cases[c].want, sizeof(got)) != 0 || getenv("VKL_TEST_VERBOSE")) {
            if (memcmp(got, cases[c].want, sizeof(got)) != 0) f->fails++;
            fprintf(stderr, "golden case %zu:", c);
            for (int i = 0; i < N; i++) fprintf(stderr, " %" PRId32 ",", got[i]);
            fprintf(stderr, "\n");
        }
        vkl_sampler_destroy(s);
    }
    free(l);
}

static void test_top_k1_is_greedy(fx *f) {
    enum { V = 4096 };
    float *l = malloc(V * sizeof(float));
    const float temps[] = {0.01f, 0.5f, 1.0f, 10.0f, 1e6f};
    for (int rep = 0; rep < 20; rep++) {
        fill_gauss(l, V, 2.0, 100 + (uint64_t)rep);
        if (rep % 2) l[rep * 7] = l[V - 1 - rep] = 9.0f; /* tie at the top */
        int32_t want = argmax_ref(l, V);
        for (size_t t = 0; t < VKL_ARRAY_LEN(temps); t++) {
            vkl_sampling o;
            vkl_sampling_defaults(&o);
            o.temperature = temps[t];
            o.top_k = 1;
            o.seed = (uint64_t)rep;
            vkl_sampler *s = make(f, &o, V);
            if (!s) continue;
            for (int i = 0; i < 5; i++) CHECK(f, draw(f, s, l, NULL, 0) == want);
            vkl_sampler_destroy(s);
        }
    }
    free(l);
}

static void test_top_p_tiny(fx *f) {
    enum { V = 30000 };
    float *l = malloc(V * sizeof(float));
    fill_gauss(l, V, 1.0, 5);
    l[12345] = 6.0f; /* p tiny keeps only the top token */
    l[20000] = 6.0f; /* tie: the lower index is first in order */
    vkl_sampling o;
    vkl_sampling_defaults(&o);
    o.temperature = 5.0f; /* flat, yet the top token's mass alone exceeds 1e-9 */
    o.top_p = 1e-9f;
    vkl_sampler *s = make(f, &o, V);
    if (s)
        for (int i = 0; i < 200; i++) CHECK(f, draw(f, s, l, NULL, 0) == 12345);
    vkl_sampler_destroy(s);
    o.top_k = 50; /* heap path, then sorted top-p */
    s = make(f, &o, V);
    if (s)
        for (int i = 0; i < 50; i++) CHECK(f, draw(f, s, l, NULL, 0) == 12345);
    vkl_sampler_destroy(s);
    free(l);
}

static void test_min_p(fx *f) {
    /* p = .5 .3 .15 .05 at T = 1 */
    const float l[] = {logf(0.15f), logf(0.5f), logf(0.05f), logf(0.3f)};
    vkl_sampling o;
    vkl_sampling_defaults(&o);
    o.temperature = 1.0f;
    o.min_p = 0.2f; /* floor 0.1: token 2 (0.05) goes */
    o.seed = 9;
    vkl_sampler *s = make(f, &o, 4);
    if (s) {
        int hits[4] = {0};
        for (int i = 0; i < 40000; i++) {
            int32_t t = draw(f, s, l, NULL, 0);
            if (t >= 0 && t < 4) hits[t]++;
        }
        CHECK(f, hits[2] == 0);
        /* renormalized: .15/.95, .5/.95, .3/.95 */
        CHECK(f, fabs(hits[0] / 40000.0 - 0.15 / 0.95) < 0.01);
        CHECK(f, fabs(hits[1] / 40000.0 - 0.5 / 0.95) < 0.01);
        CHECK(f, fabs(hits[3] / 40000.0 - 0.3 / 0.95) < 0.01);
    }
    vkl_sampler_destroy(s);
    o.min_p = 1.0f; /* only the top token */
    s = make(f, &o, 4);
    if (s)
        for (int i = 0; i < 100; i++) CHECK(f, draw(f, s, l, NULL, 0) == 1);
    vkl_sampler_destroy(s);
    o.min_p = 0.5f; /* floor 0.25: tokens 1 and 3 */
    s = make(f, &o, 4);
    if (s) {
        int hits[4] = {0};
        for (int i = 0; i < 1000; i++) {
            int32_t t = draw(f, s, l, NULL, 0);
            if (t >= 0 && t < 4) hits[t]++;
        }
        CHECK(f, hits[0] == 0 && hits[2] == 0 && hits[1] > 0 && hits[3] > 0);
    }
    vkl_sampler_destroy(s);
}

static void test_repetition_penalty(fx *f) {
    vkl_sampling o;
    vkl_sampling_defaults(&o);
    o.repetition_penalty = 2.0f;
    vkl_sampler *s = make(f, &o, 4);
    if (!s) return;
    const int32_t h0[] = {0};
    /* positive: 2.0 / 2 = 1.0 < 1.5 */
    const float pos[] = {2.0f, 1.5f, -1.0f, -1.2f};
    CHECK(f, draw(f, s, pos, NULL, 0) == 0);
    CHECK(f, draw(f, s, pos, h0, 1) == 1);
    /* negative: -1.0 * 2 = -2.0 < -1.5 (dividing would wrongly raise it) */
    const float neg[] = {-1.0f, -1.5f, -3.0f, -4.0f};
    CHECK(f, draw(f, s, neg, h0, 1) == 1);
    /* marks are cleared after the call */
    CHECK(f, draw(f, s, pos, NULL, 0) == 0);
    /* a token repeated in the window is penalized once: 4/2 = 2 > 1.5 */
    const float once[] = {4.0f, 1.5f, 0.0f, 0.0f};
    const int32_t h00[] = {0, 0, 0};
    CHECK(f, draw(f, s, once, h00, 3) == 0);
    vkl_sampler_destroy(s);

    /* window: only the last N tokens count */
    o.repetition_window = 2;
    s = make(f, &o, 4);
    if (s) {
        const int32_t h[] = {0, 3, 3};
        CHECK(f, draw(f, s, pos, h, 3) == 0); /* token 0 is outside the window */
        const int32_t h2[] = {3, 0, 3};
        CHECK(f, draw(f, s, pos, h2, 3) == 1);
        /* ids outside the window are not read, so not validated */
        const int32_t h3[] = {99, 0, 3};
        CHECK(f, draw(f, s, pos, h3, 3) == 1);
        const int32_t h4[] = {0, 99, 3};
        int32_t t = -7;
        CHECK_ERR(f, vkl_sampler_sample(s, pos, h4, 3, &t), VKL_ERR_INVALID_ARGUMENT, "history[1] = 99");
        CHECK(f, t == -7);
        const int32_t h5[] = {0, -1};
        CHECK_ERR(f, vkl_sampler_sample(s, pos, h5, 2, &t), VKL_ERR_INVALID_ARGUMENT, "history[1] = -1");
        CHECK_ERR(f, vkl_sampler_sample(s, pos, NULL, 2, &t), VKL_ERR_INVALID_ARGUMENT, "history is NULL");
        CHECK(f, draw(f, s, pos, NULL, 0) == 0);
    }
    vkl_sampler_destroy(s);
    o.repetition_window = 0; /* whole history */
    s = make(f, &o, 4);
    if (s) {
        const int32_t h[] = {0, 3, 3, 3, 3, 3};
        CHECK(f, draw(f, s, pos, h, 6) == 1);
    }
    vkl_sampler_destroy(s);

    /* penalty < 1 boosts: 1.0 / 0.5 = 2 > 1.5 */
    o.repetition_penalty = 0.5f;
    s = make(f, &o, 4);
    if (s) {
        const float boost[] = {1.0f, 1.5f, -1.0f, -1.2f};
        CHECK(f, draw(f, s, boost, h0, 1) == 0);
    }
    vkl_sampler_destroy(s);

    /* penalty off: history ignored entirely */
    o.repetition_penalty = 1.0f;
    s = make(f, &o, 4);
    if (s) {
        const int32_t bad[] = {1000};
        CHECK(f, draw(f, s, pos, bad, 1) == 0);
    }
    vkl_sampler_destroy(s);

    /* the sampled path applies it too (top_k=1 at T=1) */
    o.repetition_penalty = 2.0f;
    o.temperature = 1.0f;
    o.top_k = 1;
    s = make(f, &o, 4);
    if (s) CHECK(f, draw(f, s, pos, h0, 1) == 1);
    vkl_sampler_destroy(s);

    /* a large vocab, sampled, against the reference on penalized logits */
    enum { V = 5000 };
    float *l = malloc(V * sizeof(float)), *lp = malloc(V * sizeof(float));
    double *prob = malloc(V * sizeof(double));
    fill_gauss(l, V, 1.0, 77);
    int32_t hist[300];
    uint64_t x = 5;
    for (int i = 0; i < 300; i++) hist[i] = (int32_t)(tr_next(&x) % 40); /* ids 0..39 */
    o.temperature = 1.0f;
    o.repetition_window = 0;
    memcpy(lp, l, V * sizeof(float));
    for (int i = 0; i < 40; i++) lp[i] = lp[i] > 0 ? lp[i] / 2.0f : lp[i] * 2.0f;
    o.top_k = 10; /* the top 10 of the penalized logits */
    ref_dist(lp, V, &o, prob);
    s = make(f, &o, V);
    if (s) {
        int outside = 0;
        for (int i = 0; i < 5000; i++) {
            int32_t t = draw(f, s, l, hist, 300);
            outside += t < 0 || prob[t] == 0.0;
        }
        CHECK(f, outside == 0);
    }
    vkl_sampler_destroy(s);
    free(l);
    free(lp);
    free(prob);
}

/* Chi-square of n draws against the reference distribution. Cells with
 * expected count < 5 are pooled. The critical values are for p = 0.001, and
 * the seed is fixed, so the test is deterministic. */
static double chi2_crit_001(int dof) {
    static const double t[] = {0, 10.83, 13.82, 16.27, 18.47, 20.52, 22.46, 24.32, 26.12, 27.88, 29.59,
                               31.26, 32.91, 34.53, 36.12, 37.70, 39.25};
    return dof < (int)VKL_ARRAY_LEN(t) ? t[dof] : dof + 4.0 * sqrt(2.0 * dof);
}

static void chi2_case(fx *f, const char *name, const float *l, size_t V, const vkl_sampling *o,
                      int n) {
    double *prob = malloc(V * sizeof(double));
    long *hits = calloc(V, sizeof(long));
    ref_dist(l, V, o, prob);
    vkl_sampler *s = make(f, o, V);
    if (s) {
        int outside = 0;
        for (int i = 0; i < n; i++) {
            int32_t t = draw(f, s, l, NULL, 0);
            if (t < 0 || (size_t)t >= V || prob[t] == 0.0)
                outside++;
            else
                hits[t]++;
        }
        CHECK(f, outside == 0);
        double chi2 = 0, pool_e = 0;
        long pool_o = 0;
        int cells = 0;
        for (size_t i = 0; i < V; i++) {
            if (prob[i] == 0.0) continue;
            double e = prob[i] * n;
            if (e < 5) {
                pool_e += e;
                pool_o += hits[i];
                continue;
            }
            chi2 += (hits[i] - e) * (hits[i] - e) / e;
            cells++;
        }
        if (pool_e > 0) {
            chi2 += (pool_o - pool_e) * (pool_o - pool_e) / pool_e;
            cells++;
        }
        double crit = chi2_crit_001(cells - 1);
        f->checks++;
        if (cells < 2 || !(chi2 < crit)) {
            fprintf(stderr, "chi-square %s: %.2f with %d dof, bound %.2f\n", name, chi2, cells - 1, crit);
            f->fails++;
        }
    }
    vkl_sampler_destroy(s);
    free(prob);
    free(hits);
}

static void test_distribution(fx *f) {
    const float l8[] = {1.0f, 0.5f, -0.3f, 2.0f, 0.0f, -1.0f, 1.5f, 0.2f};
    vkl_sampling o;
    vkl_sampling_defaults(&o);
    o.seed = 1;
    o.temperature = 0.7f;
    chi2_case(f, "T=0.7", l8, 8, &o, 200000);
    o.temperature = 1.0f;
    chi2_case(f, "T=1", l8, 8, &o, 200000);
    o.temperature = 1.6f;
    o.top_k = 5;
    chi2_case(f, "T=1.6 k=5", l8, 8, &o, 200000);
    o.top_k = 0;
    o.temperature = 0.9f;
    o.top_p = 0.8f;
    chi2_case(f, "T=0.9 p=0.8", l8, 8, &o, 200000);
    o.top_p = 1.0f;
    o.min_p = 0.15f;
    chi2_case(f, "T=0.9 min_p=0.15", l8, 8, &o, 200000);
    o.top_k = 6;
    o.top_p = 0.95f;
    o.min_p = 0.05f;
    o.temperature = 1.2f;
    chi2_case(f, "T=1.2 k=6 p=0.95 min_p=0.05", l8, 8, &o, 200000);

    /* Larger vocabularies exercise the selection paths: the histogram by
     * count (k > 256) and by mass (top-p without k), the heap (k <= 256),
     * with ties on quantized logits across bucket edges. Cells with fewer
     * than 5 expected draws are pooled. */
    enum { V = 3000, N = 20000 };
    float *l = malloc(V * sizeof(float));
    fill_gauss(l, V, 1.0, 3);
    for (int i = 0; i < V; i++) l[i] = roundf(l[i] * 16.0f) / 16.0f;
    vkl_sampling_defaults(&o);
    o.seed = 2;
    o.temperature = 0.25f;
    o.top_k = 400;
    chi2_case(f, "V=3000 T=0.25 k=400", l, V, &o, N);
    o.top_k = 0;
    o.top_p = 0.9f;
    o.temperature = 0.3f;
    chi2_case(f, "V=3000 T=0.3 p=0.9", l, V, &o, N);
    o.top_k = 1000;
    o.top_p = 0.5f;
    o.temperature = 0.5f;
    chi2_case(f, "V=3000 T=0.5 k=1000 p=0.5", l, V, &o, N);
    o.top_k = 100;
    o.top_p = 0.7f;
    o.min_p = 0.2f;
    o.temperature = 1.0f;
    chi2_case(f, "V=3000 T=1 k=100 p=0.7 min_p=0.2", l, V, &o, N);
    o.top_k = 0;
    o.top_p = 0.8f;
    o.min_p = 0.3f;
    o.temperature = 0.7f;
    chi2_case(f, "V=3000 T=0.7 p=0.8 min_p=0.3", l, V, &o, N);
    o.top_p = 1.0f;
    o.min_p = 0.0f;
    o.temperature = 2.0f;
    chi2_case(f, "V=3000 T=2", l, V, &o, N);
    free(l);
}

/* Top-k and top-p select exactly the reference set, ties included. */
static void test_selection_sets(fx *f) {
    enum { V = 2000 };
    float *l = malloc(V * sizeof(float));
    double *prob = malloc(V * sizeof(double));
    vkl_sampling o;
    vkl_sampling_defaults(&o);
    o.temperature = 1.0f;
    /* all equal: top-k keeps the lowest ids, top-p the first half by id */
    for (int i = 0; i < V; i++) l[i] = 0.5f;
    const int32_t ks[] = {1, 7, 256, 257, 1000, 1999, 2000, 5000};
    for (size_t q = 0; q < VKL_ARRAY_LEN(ks); q++) {
        o.top_k = ks[q];
        vkl_sampler *s = make(f, &o, V);
        if (!s) continue;
        int32_t lim = ks[q] < V ? ks[q] : V, mx = -1, bad = 0;
        for (int i = 0; i < 5000; i++) {
            int32_t t = draw(f, s, l, NULL, 0);
            bad += t < 0 || t >= lim;
            if (t > mx) mx = t;
        }
        CHECK(f, bad == 0);
        if (lim <= 300) CHECK(f, mx == lim - 1); /* the last member is reachable */
        vkl_sampler_destroy(s);
    }
    o.top_k = 0;
    o.top_p = 0.5f;
    vkl_sampler *s = make(f, &o, V);
    if (s) {
        int32_t mx = -1, bad = 0;
        for (int i = 0; i < 30000; i++) {
            int32_t t = draw(f, s, l, NULL, 0);
            bad += t < 0 || t >= V / 2;
            if (t > mx) mx = t;
        }
        CHECK(f, bad == 0 && mx == V / 2 - 1);
    }
    vkl_sampler_destroy(s);

    /* random logits with heavy ties: every draw lies in the reference set and
     * (for sets small enough to cover) every member shows up */
    for (int rep = 0; rep < 8; rep++) {
        fill_gauss(l, V, 2.0, 500 + (uint64_t)rep);
        for (int i = 0; i < V; i++) l[i] = roundf(l[i] * 4.0f) / 4.0f;
        vkl_sampling_defaults(&o);
        o.seed = (uint64_t)rep;
        o.temperature = 4.0f;
        o.top_k = rep < 3 ? 300 + rep * 41 : 0;
        o.top_p = rep < 3 ? 1.0f : rep < 6 ? 0.02f * (float)rep : rep == 6 ? 0.5f : 0.9f;
        ref_dist(l, V, &o, prob);
        int members = 0;
        for (int i = 0; i < V; i++) members += prob[i] > 0;
        s = make(f, &o, V);
        if (!s) continue;
        char *seen = calloc(V, 1);
        int bad = 0, nseen = 0;
        for (int i = 0; i < 10000; i++) {
            int32_t t = draw(f, s, l, NULL, 0);
            if (t < 0 || prob[t] == 0.0) {
                bad++;
                continue;
            }
            if (!seen[t]) nseen++;
            seen[t] = 1;
        }
        CHECK(f, bad == 0);
        if (members <= 400) CHECK(f, nseen == members); /* large nuclei: membership only */
        if (getenv("VKL_TEST_VERBOSE") || bad || (members <= 400 && nseen != members))
            fprintf(stderr, "  rep %d: k=%d p=%g members %d seen %d bad %d\n", rep, o.top_k,
                    (double)o.top_p, members, nseen, bad);
        free(seen);
        vkl_sampler_destroy(s);
    }
    free(l);
    free(prob);
}

static void test_nonfinite(fx *f) {
    vkl_sampling o;
    vkl_sampling_defaults(&o);
    vkl_sampler *g = make(f, &o, 6);
    o.temperature = 1.0f;
    vkl_sampler *d = make(f, &o, 6);
    o.top_k = 300;
    vkl_sampler *d300 = make(f, &o, 6);
    o.top_k = 2;
    vkl_sampler *d2 = make(f, &o, 6);
    if (!g || !d || !d300 || !d2) goto out;

    /* -inf is impossible */
    const float a[] = {-INFINITY, 0.0f, -INFINITY, 0.0f, -INFINITY, 0.0f};
    CHECK(f, draw(f, g, a, NULL, 0) == 1);
    int bad = 0, hits[6] = {0};
    for (int i = 0; i < 3000; i++) {
        int32_t t = draw(f, d, a, NULL, 0);
        bad += t < 0 || a[t] == -INFINITY;
        if (t >= 0) hits[t]++;
    }
    CHECK(f, bad == 0 && hits[1] > 900 && hits[3] > 900 && hits[5] > 900);

    /* a single possible token */
    const float one[] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -7.0f, -INFINITY};
    CHECK(f, draw(f, g, one, NULL, 0) == 4);
    CHECK(f, draw(f, d, one, NULL, 0) == 4);
    CHECK(f, draw(f, d2, one, NULL, 0) == 4);

    /* all -inf, NaN */
    const float none[] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    int32_t t = 77;
    CHECK_ERR(f, vkl_sampler_sample(g, none, NULL, 0, &t), VKL_ERR_INVALID_ARGUMENT, "-inf");
    CHECK_ERR(f, vkl_sampler_sample(d, none, NULL, 0, &t), VKL_ERR_INVALID_ARGUMENT, "-inf");
    CHECK_ERR(f, vkl_sampler_sample(d2, none, NULL, 0, &t), VKL_ERR_INVALID_ARGUMENT, "-inf");
    const float nan3[] = {0.0f, 1.0f, 2.0f, NAN, 1.0f, 0.0f};
    CHECK_ERR(f, vkl_sampler_sample(g, nan3, NULL, 0, &t), VKL_ERR_INVALID_ARGUMENT, "token 3 is NaN");
    CHECK_ERR(f, vkl_sampler_sample(d, nan3, NULL, 0, &t), VKL_ERR_INVALID_ARGUMENT, "token 3 is NaN");
    CHECK_ERR(f, vkl_sampler_sample(d2, nan3, NULL, 0, &t), VKL_ERR_INVALID_ARGUMENT, "token 3 is NaN");
    CHECK(f, t == 77);

    /* +inf tokens share everything */
    const float pinf[] = {5.0f, INFINITY, 1e30f, INFINITY, -INFINITY, INFINITY};
    CHECK(f, draw(f, g, pinf, NULL, 0) == 1);
    int h[6] = {0};
    bad = 0;
    for (int i = 0; i < 3000; i++) {
        int32_t u = draw(f, d, pinf, NULL, 0);
        bad += u < 0 || pinf[u] != INFINITY;
        if (u >= 0) h[u]++;
    }
    CHECK(f, bad == 0 && h[1] > 900 && h[3] > 900 && h[5] > 900);
    for (int i = 0; i < 300; i++) {
        int32_t u = draw(f, d2, pinf, NULL, 0); /* k=2: the first two +inf by id */
        CHECK(f, u == 1 || u == 3);
        u = draw(f, d300, pinf, NULL, 0);
        CHECK(f, u == 1 || u == 3 || u == 5);
    }
    /* huge finite logits at a tiny temperature do not overflow */
    const float big[] = {3e38f, -3e38f, 2.9e38f, 0.0f, 3e38f, 1.0f};
    for (int i = 0; i < 100; i++) {
        int32_t u = draw(f, d, big, NULL, 0);
        CHECK(f, u == 0 || u == 4);
    }
out:
    vkl_sampler_destroy(g);
    vkl_sampler_destroy(d);
    vkl_sampler_destroy(d300);
    vkl_sampler_destroy(d2);
}

static void test_validation(fx *f) {
    vkl_sampling o;
    vkl_sampler *s = (vkl_sampler *)&o; /* must be reset to NULL on failure */
#define BAD(field, value, needle)                                                          \
    do {                                                                                   \
        vkl_sampling_defaults(&o);                                                         \
        o.field = (value);                                                                 \
        s = (vkl_sampler *)&o;                                                             \
        CHECK_ERR(f, vkl_sampler_create(f->ctx, &o, 10, &s), VKL_ERR_INVALID_ARGUMENT, needle); \
        CHECK(f, s == NULL);                                                               \
    } while (0)
    BAD(temperature, NAN, "temperature is nan");
    BAD(temperature, INFINITY, "temperature is inf");
    BAD(top_p, 0.0f, "top_p is 0");
    BAD(top_p, -0.5f, "top_p is -0.5");
    BAD(top_p, 1.5f, "top_p is 1.5");
    BAD(top_p, NAN, "top_p is nan");
    BAD(min_p, NAN, "min_p is nan");
    BAD(min_p, 1.5f, "min_p is 1.5");
    BAD(repetition_penalty, -1.0f, "repetition_penalty is -1");
    BAD(repetition_penalty, 0.0f, "repetition_penalty is 0");
    BAD(repetition_penalty, NAN, "repetition_penalty is nan");
    BAD(repetition_penalty, INFINITY, "repetition_penalty is inf");
    BAD(repetition_window, -1, "repetition_window is -1");
#undef BAD
    vkl_sampling_defaults(&o);
    CHECK_ERR(f, vkl_sampler_create(f->ctx, &o, 0, &s), VKL_ERR_INVALID_ARGUMENT, "vocabulary size is 0");
    CHECK_ERR(f, vkl_sampler_create(f->ctx, &o, (size_t)INT32_MAX + 1, &s), VKL_ERR_INVALID_ARGUMENT,
              "vocabulary size");
    CHECK_ERR(f, vkl_sampler_create(f->ctx, NULL, 10, &s), VKL_ERR_INVALID_ARGUMENT, "options are NULL");
    CHECK_ERR(f, vkl_sampler_create(f->ctx, &o, 10, NULL), VKL_ERR_INVALID_ARGUMENT, "out is NULL");
    CHECK(f, vkl_sampler_create(NULL, &o, 10, &s) == VKL_ERR_INVALID_ARGUMENT);

    /* accepted edge values */
    o.top_p = 1.0f;
    o.min_p = -3.0f; /* off */
    o.top_k = -5;    /* off */
    o.temperature = -2.0f;
    o.repetition_window = 0;
    o.repetition_penalty = 1e-3f;
    s = make(f, &o, 1);
    if (s) {
        const float l[] = {-1.0f};
        CHECK(f, draw(f, s, l, NULL, 0) == 0);
        int32_t t;
        CHECK_ERR(f, vkl_sampler_sample(s, NULL, NULL, 0, &t), VKL_ERR_INVALID_ARGUMENT, "logits are NULL");
        CHECK_ERR(f, vkl_sampler_sample(s, l, NULL, 0, NULL), VKL_ERR_INVALID_ARGUMENT, "token is NULL");
    }
    vkl_sampler_destroy(s);
    int32_t t;
    const float l1[] = {0.0f};
    CHECK(f, vkl_sampler_sample(NULL, l1, NULL, 0, &t) == VKL_ERR_INVALID_ARGUMENT);
    vkl_sampler_destroy(NULL);
    vkl_sampler_reseed(NULL, 1);
    vkl_sampling_defaults(NULL);
}

/* Counting allocator: sample() allocates nothing; create's failures free
 * what they took. */
typedef struct counter {
    long mallocs, frees, fail_after;
} counter;
static void *cnt_malloc(void *u, size_t n) {
    counter *c = u;
    if (c->fail_after >= 0 && c->mallocs >= c->fail_after) return NULL;
    c->mallocs++;
    return malloc(n);
}
static void *cnt_realloc(void *u, void *p, size_t n) {
    counter *c = u;
    if (c->fail_after >= 0 && c->mallocs >= c->fail_after) return NULL;
    c->mallocs++;
    return realloc(p, n);
}
static void cnt_free(void *u, void *p) {
    counter *c = u;
    if (p) c->frees++;
    free(p);
}

static void test_allocation(fx *f) {
    counter cn = {0, 0, -1};
    vkl_context_options co;
    vkl_context_options_init(&co);
    co.allocator = (vkl_allocator){&cn, cnt_malloc, cnt_realloc, cnt_free};
    vkl_context *ctx = NULL;
    if (vkl_context_create(&co, &ctx)) {
        f->fails++;
        return;
    }
    enum { V = 70000 };
    float *l = malloc(V * sizeof(float));
    fill_gauss(l, V, 2.0, 1);
    int32_t hist[100];
    for (int i = 0; i < 100; i++) hist[i] = i * 7;
    vkl_sampling o;
    vkl_sampling_defaults(&o);
    o.repetition_penalty = 1.3f;
    const struct {
        float t, p, mp;
        int32_t k;
    } cases[] = {{0, 1, 0, 0}, {0.8f, 0.9f, 0, 0}, {0.8f, 0.95f, 0.05f, 40}, {1, 0.9f, 0, 2000}, {1, 1, 0.1f, 0}};
    for (size_t q = 0; q < VKL_ARRAY_LEN(cases); q++) {
        o.temperature = cases[q].t;
        o.top_p = cases[q].p;
        o.min_p = cases[q].mp;
        o.top_k = cases[q].k;
        vkl_sampler *s = NULL;
        long before_create = cn.mallocs;
        if (vkl_sampler_create(ctx, &o, V, &s)) {
            f->fails++;
            continue;
        }
        CHECK(f, cn.mallocs > before_create);
        long before = cn.mallocs;
        int32_t t;
        for (int i = 0; i < 20; i++) CHECK(f, vkl_sampler_sample(s, l, hist, 100, &t) == VKL_OK);
        CHECK(f, cn.mallocs == before);
        vkl_sampler_destroy(s);
    }
    /* out of memory at each allocation of create: clean failure, no leak */
    for (long fa = 0; fa < 3; fa++) {
        long m0 = cn.mallocs, f0 = cn.frees;
        cn.fail_after = cn.mallocs + fa;
        vkl_sampler *s = NULL;
        vkl_status st = vkl_sampler_create(ctx, &o, V, &s);
        cn.fail_after = -1;
        CHECK(f, st == VKL_ERR_OUT_OF_MEMORY && s == NULL);
        CHECK(f, cn.mallocs - m0 == cn.frees - f0);
    }
    free(l);
    vkl_context_destroy(ctx);
    CHECK(f, cn.mallocs == cn.frees);
}

/* ---- benchmark (not part of the ctest run) ---- */

static double now_s(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int bench(const char *only) {
    enum { V = 128 * 1024 };
    vkl_context *ctx = NULL;
    if (vkl_context_create(NULL, &ctx)) return 1;
    float *l = malloc(V * sizeof(float));
    int32_t hist[64];
    for (int i = 0; i < 64; i++) hist[i] = i * 1000;
    const struct {
        const char *name;
        double sigma;
    } dists[] = {{"N(0,1) (flat)", 1.0}, {"N(0,2.5)", 2.5}, {"N(0,4) (peaked)", 4.0}};
    const struct {
        const char *name;
        float t, p, mp, pen;
        int32_t k;
    } cfgs[] = {
        {"greedy", 0, 1, 0, 1, 0},
        {"greedy + penalty 1.1 (64)", 0, 1, 0, 1.1f, 0},
        {"T=0.8 top-p 0.9", 0.8f, 0.9f, 0, 1, 0},
        {"T=0.8 (plain softmax)", 0.8f, 1, 0, 1, 0},
        {"T=0.8 top-k 40 top-p 0.95 min-p 0.05", 0.8f, 0.95f, 0.05f, 1, 40},
        {"T=0.8 top-k 1000", 0.8f, 1, 0, 1, 1000},
    };
    printf("sample() time, vocab %d, 301 calls after warm-up: median and minimum\n", V);
    for (size_t d = 0; d < VKL_ARRAY_LEN(dists); d++) {
        fill_gauss(l, V, dists[d].sigma, 99);
        for (size_t c = 0; c < VKL_ARRAY_LEN(cfgs); c++) {
            if (only && !strstr(cfgs[c].name, only) && !strstr(dists[d].name, only)) continue;
            vkl_sampling o;
            vkl_sampling_defaults(&o);
            o.temperature = cfgs[c].t;
            o.top_p = cfgs[c].p;
            o.min_p = cfgs[c].mp;
            o.top_k = cfgs[c].k;
            o.repetition_penalty = cfgs[c].pen;
            vkl_sampler *s = NULL;
            if (vkl_sampler_create(ctx, &o, V, &s)) return 1;
            int32_t t;
            for (int i = 0; i < 5; i++) vkl_sampler_sample(s, l, hist, 64, &t);
            enum { RUNS = 301 };
            double dt[RUNS];
            for (int i = 0; i < RUNS; i++) {
                double t0 = now_s();
                if (vkl_sampler_sample(s, l, hist, 64, &t)) return 1;
                dt[i] = now_s() - t0;
            }
            qsort(dt, RUNS, sizeof(double), cmp_double);
            printf("  %-16s %-40s %8.1f %8.1f us\n", dists[d].name, cfgs[c].name, dt[RUNS / 2] * 1e6,
                   dt[0] * 1e6);
            vkl_sampler_destroy(s);
        }
    }
    free(l);
    vkl_context_destroy(ctx);
    return 0;
}

typedef struct test_case {
    const char *name;
    void (*fn)(fx *);
} test_case;
#define T(fn) {#fn, fn}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--bench")) return bench(argc > 2 ? argv[2] : NULL);
    static const test_case tests[] = {
        T(test_defaults),         T(test_greedy),        T(test_determinism),
        T(test_golden_stream),
        T(test_top_k1_is_greedy), T(test_top_p_tiny),    T(test_min_p),
        T(test_repetition_penalty), T(test_distribution), T(test_selection_sets),
        T(test_nonfinite),        T(test_validation),    T(test_allocation),
    };
    int failed_tests = 0, checks = 0;
    for (size_t i = 0; i < VKL_ARRAY_LEN(tests); i++) {
        fx f = {0};
        if (vkl_context_create(NULL, &f.ctx)) {
            fprintf(stderr, "%s: setup failed\n", tests[i].name);
            return 1;
        }
        double t0 = now_s();
        tests[i].fn(&f);
        if (getenv("VKL_TEST_TIMES")) fprintf(stderr, "%s: %.2f s\n", tests[i].name, now_s() - t0);
        if (f.fails) {
            fprintf(stderr, "FAIL %s (%d of %d checks)\n", tests[i].name, f.fails, f.checks);
            failed_tests++;
        }
        checks += f.checks;
        vkl_context_destroy(f.ctx);
    }
    if (failed_tests) {
        fprintf(stderr, "%d of %zu tests failed\n", failed_tests, VKL_ARRAY_LEN(tests));
        return 1;
    }
    printf("all %zu tests passed (%d checks)\n", VKL_ARRAY_LEN(tests), checks);
    return 0;
}
