/* The int8 peak of the chosen instruction set's GEMM sequence on all the
 * pool's threads (cpu_dot.h's register-only loop): the compute roof vkbench
 * sets prefill against, as the read bandwidth is decode's. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <time.h>

#include "cpu_backend.h"

#define PASS_SECONDS 0.05 /* long enough for the clock, short beside a benchmark */
#define PASSES 5

typedef struct peak_job {
    const vkl_cpu_int8_loop *loop;
    uint64_t rounds;
    int8_t seed[128];
    uint32_t sink[256]; /* one per task, so the loops' results are used */
} peak_job;

static double seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void peak_task(void *user, size_t task, unsigned worker) {
    (void)worker;
    peak_job *j = user;
    j->sink[task % 256] = j->loop->run(j->rounds, j->seed);
}

vkl_status vkl_cpu_int8_peak(vkl_backend_device *dev, vkl_context *ctx, double *ops_per_second,
                             const char **sequence) {
    *ops_per_second = 0;
    *sequence = NULL;
    if (!dev->int8_loop)
        return vkl_fail(ctx, VKL_ERR_UNSUPPORTED, "cpu: no int8 peak loop for the %s kernels", dev->dot->name);
    peak_job j = {.loop = dev->int8_loop, .rounds = 1000};
    for (int i = 0; i < 128; i++) j.seed[i] = (int8_t)(i * 37 + 11);
    /* size a pass on one thread: rounds doubled until a run takes a tenth of a pass */
    for (;;) {
        const double t0 = seconds();
        j.sink[0] = j.loop->run(j.rounds, j.seed);
        const double dt = seconds() - t0;
        if (dt >= PASS_SECONDS / 10) {
            j.rounds = (uint64_t)((double)j.rounds * PASS_SECONDS / dt) + 1;
            break;
        }
        j.rounds *= 2;
    }
    const unsigned threads = vkl_pool_threads(dev->pool);
    double best = 0;
    for (int pass = 0; pass < PASSES; pass++) {
        const double t0 = seconds();
        vkl_pool_run(dev->pool, threads, peak_task, &j);
        const double rate = (double)threads * (double)j.rounds * j.loop->ops_per_round / (seconds() - t0);
        best = rate > best ? rate : best;
    }
    *ops_per_second = best;
    *sequence = j.loop->sequence;
    return VKL_OK;
}
