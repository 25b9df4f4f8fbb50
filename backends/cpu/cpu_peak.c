/* The int8 peak of the chosen instruction set's GEMM sequence on all the
 * pool's threads (cpu_dot.h's register-only loop): the compute roof vkbench
 * sets prefill against, as the read bandwidth is decode's.
 *
 * It is the denominator of every prefill's share, so it must not move with
 * the machine's load: every thread runs the loop at once and times its run
 * by its own CPU time, so a thread the OS took off its core (a neighbour's
 * build, a late wake-up of the pool) is not charged for the time it did not
 * run; a pass's rate is the threads' rates summed, and the best of many
 * short passes is kept. Two threads that share one core's units while
 * running (SMT siblings) each run at about half rate, and are counted so. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <time.h>

#include "../../engine/clock.h"
#include "../../engine/context.h"
#include "cpu_backend.h"

#define PASS_SECONDS 0.02 /* short, so a pass often runs undisturbed; long beside the clock's step */
#define PASSES 12

typedef struct peak_run {
    double seconds; /* the run's CPU time on its thread */
    uint32_t sink;  /* the loop's result, so its work cannot be dropped */
} peak_run;

typedef struct peak_job {
    const vkl_cpu_int8_loop *loop;
    uint64_t rounds;
    int8_t seed[128];
    peak_run *run; /* one per task */
} peak_job;

static void peak_task(void *user, size_t task, unsigned worker) {
    (void)worker;
    peak_job *j = user;
    const double t0 = vkl_clock_seconds(CLOCK_THREAD_CPUTIME_ID);
    j->run[task].sink = j->loop->run(j->rounds, j->seed);
    j->run[task].seconds = vkl_clock_seconds(CLOCK_THREAD_CPUTIME_ID) - t0;
}

vkl_status vkl_cpu_int8_peak(vkl_backend_device *dev, vkl_context *ctx, double *ops_per_second,
                             const char **sequence) {
    *ops_per_second = 0;
    *sequence = NULL;
    if (!dev->int8_loop)
        return vkl_fail(ctx, VKL_ERR_UNSUPPORTED, "cpu: no int8 peak loop for the %s kernels", dev->dot->name);
    const unsigned threads = vkl_pool_threads(dev->pool);
    peak_job j = {.loop = dev->int8_loop, .rounds = 1000, .run = vkl_calloc(ctx, threads, sizeof(peak_run))};
    if (!j.run) return vkl_fail(ctx, VKL_ERR_OUT_OF_MEMORY, "cpu: int8 peak: %u threads' timings", threads);
    for (int i = 0; i < 128; i++) j.seed[i] = (int8_t)(i * 37 + 11);
    /* size a pass on one thread: rounds doubled until a run takes a tenth of a pass */
    for (;;) {
        peak_task(&j, 0, 0);
        if (j.run[0].seconds >= PASS_SECONDS / 10) {
            j.rounds = (uint64_t)((double)j.rounds * PASS_SECONDS / j.run[0].seconds) + 1;
            break;
        }
        j.rounds *= 2;
    }
    double best = 0;
    for (int pass = 0; pass < PASSES; pass++) {
        vkl_pool_run(dev->pool, threads, peak_task, &j);
        double rate = 0;
        for (unsigned i = 0; i < threads; i++)
            rate += j.run[i].seconds > 0 ? (double)j.rounds * j.loop->ops_per_round / j.run[i].seconds : 0;
        best = rate > best ? rate : best;
    }
    vkl_free(ctx, j.run);
    *ops_per_second = best;
    *sequence = j.loop->sequence;
    return VKL_OK;
}
