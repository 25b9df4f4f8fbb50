/* Each thread's speed, measured once when the device opens: every pool
 * worker runs the same decode kernel (the chosen table's 4-bit dot, one
 * activation row, on a weight block in L1) for about a millisecond, all at
 * once, timed by the monotonic clock, the best of a few rounds kept
 * (vkl_pool_calibrate; the first round also warms the caches and wakes the
 * cores). The pool sizes its shares from these, and keeps them current from
 * the matrix products' own timings (engine/pool.h).
 *
 * Wall time, not CPU time (cpu_peak.c's choice): the peak is the hardware's
 * roof, while a share must follow what a thread actually gets done, so a
 * core that is shared or throttled counts as slower. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <string.h>
#include <time.h>

#include "../../engine/clock.h"
#include "cpu_backend.h"

#define CAL_K 1024          /* a block of 4 weight rows: 2 KiB of codes, in L1 */
#define CAL_GROUP 128
#define CAL_SECONDS 1e-3    /* a worker's run */
#define CAL_ROUNDS 5
#define ACC_STRIDE 16       /* floats between workers' sums: 64 bytes, no shared cache line */

typedef struct cal_job {
    const vkl_cpu_dot *dot;
    uint8_t w[VKL_CPU_HP * CAL_K / 2];
    float rec[CAL_K / CAL_GROUP * 8];
    int8_t q[CAL_K];
    float d[CAL_K / CAL_GROUP];
    int32_t s[CAL_K / CAL_GROUP];
    uint64_t reps;
    float *acc; /* ACC_STRIDE per worker */
} cal_job;

static void cal_task(void *user, size_t task, unsigned worker) {
    (void)task;
    const cal_job *j = user;
    const vkl_cpu_act act = {j->q, j->d, j->s};
    float *acc = j->acc + (size_t)worker * ACC_STRIDE;
    for (uint64_t r = 0; r < j->reps; r++)
        j->dot->q4(j->w, j->rec, &act, 1, CAL_GROUP / VKL_CPU_LP, CAL_K / CAL_GROUP, acc);
}

vkl_status vkl_cpu_calibrate(vkl_backend_device *dev) {
    const unsigned threads = vkl_pool_threads(dev->pool);
    cal_job *j = vkl_calloc(dev->ctx, 1, sizeof(*j));
    double *best = vkl_calloc(dev->ctx, threads, sizeof(double));
    if (j) j->acc = vkl_calloc(dev->ctx, (size_t)threads * ACC_STRIDE, sizeof(float));
    if (!j || !best || !j->acc) {
        if (j) vkl_free(dev->ctx, j->acc);
        vkl_free(dev->ctx, j);
        vkl_free(dev->ctx, best);
        return vkl_fail(dev->ctx, VKL_ERR_OUT_OF_MEMORY, "cpu backend: calibrating %u threads", threads);
    }
    j->dot = dev->dot;
    /* varied codes and small scales: the sums stay finite however many reps add up */
    for (size_t i = 0; i < sizeof(j->w); i++) j->w[i] = (uint8_t)(i * 151 + 7);
    for (size_t i = 0; i < CAL_K; i++) j->q[i] = (int8_t)((int)(i * 37 % 255) - 127);
    for (size_t g = 0; g < CAL_K / CAL_GROUP; g++) {
        for (int i = 0; i < VKL_CPU_HP; i++) {
            j->rec[g * 8 + (size_t)i] = 1e-9f;
            j->rec[g * 8 + 4 + (size_t)i] = 8.0f;
        }
        j->d[g] = 1e-3f;
        j->s[g] = 1;
    }
    /* size a run on this thread: reps doubled until one takes a tenth of a
     * run, then scaled to a run */
    for (j->reps = 16;; j->reps *= 2) {
        const double t0 = vkl_clock_seconds(CLOCK_MONOTONIC);
        cal_task(j, 0, 0);
        const double t = vkl_clock_seconds(CLOCK_MONOTONIC) - t0;
        if (t >= CAL_SECONDS / 10) {
            j->reps = (uint64_t)((double)j->reps * CAL_SECONDS / t) + 1;
            break;
        }
    }
    vkl_pool_calibrate(dev->pool, CAL_ROUNDS, cal_task, j, best);
    const double ops = 2.0 * VKL_CPU_HP * CAL_K * (double)j->reps;
    for (unsigned w = 0; w < threads; w++) dev->worker_rate[w] = best[w] > 0 ? ops / best[w] : 0;
    vkl_free(dev->ctx, j->acc);
    vkl_free(dev->ctx, j);
    vkl_free(dev->ctx, best);
    return VKL_OK;
}

void vkl_cpu_worker_speeds(vkl_backend_device *dev, double *ops_per_second, double *share, size_t cap,
                           size_t *count) {
    const unsigned threads = vkl_pool_threads(dev->pool);
    double now[VKL_POOL_MAX_THREADS];
    vkl_pool_shares(dev->pool, now);
    *count = threads;
    for (size_t w = 0; w < threads && w < cap; w++) {
        ops_per_second[w] = dev->worker_rate[w];
        share[w] = now[w];
    }
}
