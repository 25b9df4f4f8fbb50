/* engine/pool's shares (pool.h), with exact checks where the result is
 * exact and loose ones where it is a timing:
 *  - vkl_pool_run_shares covers every unit exactly once, at 1, 2, 3 and 5
 *    threads, for unit counts of 1 to 1000 and grains 0, 1, 3 and 16 (on 1
 *    thread in one call): with
 *    grain 0 one range a worker, in worker order, each the size its share
 *    says (equal shares at creation: sizes within 1); with a grain, the
 *    heads first in worker order and then the tail, at least max(grain x
 *    threads, n / 8) units (all of them when that is more), in chunks of at
 *    most grain units in increasing order;
 *  - a call from inside a batch (the pool busy) runs all of its units on
 *    the calling thread as worker 0;
 *  - an emulated slow worker (1 three times slower, 2 threads): calibration
 *    sees it (best time ratio about 3) and sets the shares to about 3 : 1,
 *    and the next batch's heads follow them (worker 1's within 1 unit of
 *    its share);
 *    from equal shares, batches alone move worker 1's share to about a
 *    quarter; with equal_shares nothing moves them;
 *  - bad options (a slow worker past the threads, a factor below 1 or NaN)
 *    fail with a message naming them.
 * The timings retry a few times before failing: the machine is shared. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "pool.h"

#define MAX_UNITS 1000
#define MAX_CALLS 400
#define ATTEMPTS 4

typedef struct call {
    size_t begin, end;
} call;

/* What each worker was given, in its own log (no two threads write one). */
typedef struct cover {
    unsigned char count[MAX_UNITS];
    call calls[8][MAX_CALLS];
    size_t n_calls[8];
    vkl_pool *nested; /* when set, worker 0's first call runs a batch of its own there */
    size_t nested_units;
    call nested_call;
    unsigned nested_worker;
} cover;

static void nested_range(void *user, size_t begin, size_t end, unsigned worker) {
    cover *c = user;
    c->nested_call = (call){begin, end};
    c->nested_worker = worker;
}

static void record(void *user, size_t begin, size_t end, unsigned worker) {
    cover *c = user;
    if (worker >= 8 || c->n_calls[worker] >= MAX_CALLS) return;
    c->calls[worker][c->n_calls[worker]++] = (call){begin, end};
    for (size_t u = begin; u < end; u++) c->count[u]++;
    if (c->nested && worker == 0 && c->n_calls[0] == 1) vkl_pool_run_shares(c->nested, c->nested_units, 0, nested_range, c);
}

static void test_cover(vkl_context *ctx, unsigned threads, size_t n, size_t grain) {
    vkl_pool *p;
    CHECK_OK(ctx, vkl_pool_create(ctx, threads, &p));
    const unsigned t = vkl_pool_threads(p);
    static cover c;
    memset(&c, 0, sizeof(c));
    vkl_pool_run_shares(p, n, grain, record, &c);
    size_t bad = 0;
    for (size_t u = 0; u < n; u++) bad += c.count[u] != 1;
    CHECKF(!bad, "%u threads, %zu units, grain %zu: %zu units not run exactly once", t, n, grain, bad);
    if (t == 1) { /* no worker threads: all of it at once on the caller */
        CHECKF(c.n_calls[0] == 1 && c.calls[0][0].begin == 0 && c.calls[0][0].end == n,
               "1 thread, %zu units, grain %zu: %zu calls, the first %zu..%zu", n, grain, c.n_calls[0],
               c.calls[0][0].begin, c.calls[0][0].end);
        vkl_pool_destroy(p);
        return;
    }
    /* the tail the pool must leave (pool.h) */
    size_t tail = 0;
    if (grain) {
        tail = grain * t > n / 8 ? grain * t : n / 8;
        tail = tail < n ? tail : n;
    }
    const size_t head = n - tail;
    /* heads: each worker's first call below `head`, in worker order, sizes
     * within 1 of head / t (equal shares) */
    size_t at = 0;
    for (unsigned w = 0; w < t; w++) {
        size_t size = 0;
        if (c.n_calls[w] && c.calls[w][0].begin < head) {
            CHECKF(c.calls[w][0].begin == at && c.calls[w][0].end <= head,
                   "%u threads, %zu units, grain %zu: worker %u's head %zu..%zu, expected from %zu", t, n, grain, w,
                   c.calls[w][0].begin, c.calls[w][0].end, at);
            size = c.calls[w][0].end - c.calls[w][0].begin;
            at = c.calls[w][0].end;
        }
        CHECKF(fabs((double)size - (double)head / t) <= 1.0, "%u threads, %zu units: worker %u's head has %zu units",
               t, n, w, size);
        for (size_t k = size ? 1 : 0; k < c.n_calls[w]; k++) {
            const call *x = &c.calls[w][k];
            CHECKF(grain && x->begin >= head && x->end - x->begin <= grain && (k == 0 || x->begin > c.calls[w][k - 1].begin),
                   "%u threads, %zu units, grain %zu: worker %u's call %zu (%zu..%zu) is not a tail chunk", t, n,
                   grain, w, k, x->begin, x->end);
        }
    }
    CHECKF(at == head, "%u threads, %zu units, grain %zu: the heads end at %zu, not %zu", t, n, grain, at, head);
    vkl_pool_destroy(p);
}

/* A call made from inside a batch runs alone, as worker 0 of its caller. */
static void test_nested(vkl_context *ctx) {
    vkl_pool *p;
    CHECK_OK(ctx, vkl_pool_create(ctx, 2, &p));
    static cover c;
    memset(&c, 0, sizeof(c));
    c.nested = p;
    c.nested_units = 77;
    c.nested_worker = 99;
    vkl_pool_run_shares(p, 100, 0, record, &c);
    CHECKF(c.nested_call.begin == 0 && c.nested_call.end == 77 && c.nested_worker == 0,
           "a nested batch ran %zu..%zu on worker %u, not 0..77 on 0", c.nested_call.begin, c.nested_call.end,
           c.nested_worker);
    vkl_pool_destroy(p);
}

static double seconds_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Work that takes the same time on every core: a busy loop of a fixed
 * length (a sink per worker keeps it from being dropped). */
static volatile unsigned sink[8];

static void spin_for(double seconds, unsigned worker) {
    const double until = seconds_now() + seconds;
    unsigned x = 1;
    while (seconds_now() < until) x = x * 1664525u + 1013904223u;
    sink[worker % 8] = x;
}

static void cal_task(void *user, size_t task, unsigned worker) {
    (void)user, (void)task;
    spin_for(1e-3, worker);
}

static void unit_range(void *user, size_t begin, size_t end, unsigned worker) {
    (void)user;
    spin_for(2e-6 * (double)(end - begin), worker);
}

static vkl_pool *slow_pool(vkl_context *ctx, bool equal) {
    const vkl_pool_options o = {.threads = 2, .equal_shares = equal, .slow_worker = 1, .slow_factor = 3};
    vkl_pool *p;
    CHECK_OK(ctx, vkl_pool_create_with(ctx, &o, &p));
    CHECK(p && vkl_pool_threads(p) == 2);
    return p;
}

/* Calibration sees worker 1 three times slower and the shares follow. */
static void test_calibrate(vkl_context *ctx) {
    bool ok = false;
    for (int attempt = 0; attempt < ATTEMPTS && !ok; attempt++) {
        vkl_pool *p = slow_pool(ctx, false);
        double best[2], share[2];
        vkl_pool_calibrate(p, 5, cal_task, NULL, best);
        vkl_pool_shares(p, share);
        const double ratio = best[1] / best[0];
        printf("calibration, worker 1 made 3x slower: best %.3f / %.3f ms (ratio %.2f), shares %.3f %.3f\n",
               best[0] * 1e3, best[1] * 1e3, ratio, share[0], share[1]);
        ok = ratio > 2.4 && ratio < 3.6 && share[1] > 0.2 && share[1] < 0.3;
        /* the heads follow the shares (a batch this short moves none) */
        static cover c;
        memset(&c, 0, sizeof(c));
        vkl_pool_run_shares(p, MAX_UNITS, 0, record, &c);
        const size_t mine = c.n_calls[1] ? c.calls[1][0].end - c.calls[1][0].begin : 0;
        CHECKF(c.n_calls[0] == 1 && c.n_calls[1] == 1 && fabs((double)mine - share[1] * MAX_UNITS) <= 1.0,
               "shares %.3f %.3f: worker 1 got %zu of %d units", share[0], share[1], mine, MAX_UNITS);
        vkl_pool_destroy(p);
    }
    CHECKF(ok, "calibration did not see worker 1 about 3x slower in %d attempts", ATTEMPTS);
    vkl_pool *p = slow_pool(ctx, true);
    double best[2], share[2];
    vkl_pool_calibrate(p, 2, cal_task, NULL, best);
    vkl_pool_shares(p, share);
    CHECKF(best[0] > 0 && best[1] > 0 && share[0] == 0.5 && share[1] == 0.5,
           "equal_shares: calibration measured %g / %g s and left shares %g %g (want 0.5 0.5)", best[0], best[1],
           share[0], share[1]);
    vkl_pool_destroy(p);
}

/* From equal shares, batches alone (units of 2 us, 1000 a batch: a batch
 * of ~1-3 ms) move worker 1's share to about a quarter; with equal_shares
 * they stay. */
static void test_learn(vkl_context *ctx) {
    bool ok = false;
    for (int attempt = 0; attempt < ATTEMPTS && !ok; attempt++) {
        vkl_pool *p = slow_pool(ctx, false);
        double share[2];
        for (int b = 0; b < 60; b++) vkl_pool_run_shares(p, 1000, 0, unit_range, NULL);
        vkl_pool_shares(p, share);
        printf("after 60 batches from equal shares, worker 1 3x slower: shares %.3f %.3f\n", share[0], share[1]);
        ok = share[1] > 0.17 && share[1] < 0.33;
        vkl_pool_destroy(p);
    }
    CHECKF(ok, "the batches did not bring worker 1's share near a quarter in %d attempts", ATTEMPTS);
    vkl_pool *p = slow_pool(ctx, true);
    double share[2];
    for (int b = 0; b < 10; b++) vkl_pool_run_shares(p, 1000, 0, unit_range, NULL);
    vkl_pool_shares(p, share);
    CHECKF(share[0] == 0.5 && share[1] == 0.5, "equal_shares: batches moved the shares to %g %g", share[0], share[1]);
    vkl_pool_destroy(p);
}

static void test_bad_options(vkl_context *ctx) {
    vkl_pool *p = (vkl_pool *)&p;
    vkl_pool_options o = {.threads = 2, .slow_worker = 2, .slow_factor = 3};
    CHECK_ERR(ctx, vkl_pool_create_with(ctx, &o, &p), VKL_ERR_INVALID_ARGUMENT, "slow worker 2: the pool has 2 threads");
    CHECK(p == NULL);
    o.slow_worker = 1;
    o.slow_factor = 0.5;
    CHECK_ERR(ctx, vkl_pool_create_with(ctx, &o, &p), VKL_ERR_INVALID_ARGUMENT, "slow worker factor 0.5");
    o.slow_factor = NAN;
    CHECK_ERR(ctx, vkl_pool_create_with(ctx, &o, &p), VKL_ERR_INVALID_ARGUMENT, "slow worker factor");
    o.slow_factor = 0; /* off: any worker index is fine */
    o.slow_worker = 7;
    CHECK_OK(ctx, vkl_pool_create_with(ctx, &o, &p));
    vkl_pool_destroy(p);
}

int main(void) {
    vkl_context *ctx;
    CHECK(vkl_context_create(NULL, &ctx) == VKL_OK);
    const unsigned threads[] = {1, 2, 3, 5};
    const size_t units[] = {1, 2, 7, 100, 1000}, grains[] = {0, 1, 3, 16};
    for (size_t t = 0; t < 4; t++)
        for (size_t n = 0; n < 5; n++)
            for (size_t g = 0; g < 4; g++) test_cover(ctx, threads[t], units[n], grains[g]);
    test_nested(ctx);
    test_bad_options(ctx);
    test_calibrate(ctx);
    test_learn(ctx);
    vkl_context_destroy(ctx);
    return check_finish("test_pool");
}
