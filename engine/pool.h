/* A small fixed pool of worker threads for data-parallel loops, in two
 * forms:
 *  - run(n, fn): fn for tasks 0..n-1 spread over the workers and the calling
 *    thread, handed out in increasing order (when task j runs, every task
 *    below j has started): many small tasks balance themselves;
 *  - run_shares(n, grain, fn): units 0..n-1 cut into one contiguous range a
 *    worker, each range sized by the worker's share (its measured speed,
 *    below), so a worker streams its own rows with no hand-out per task;
 *    with a grain, a tail of the units is handed out in chunks as in run(),
 *    to whoever is free first.
 * Both return when all is done. Results must not depend on which thread ran
 * what (each task or unit writes its own output).
 *
 * Shares: equal at creation; vkl_pool_calibrate sets them from a kernel run
 * on every worker at once (the best of a few rounds), and every shares batch
 * long enough to time well moves them towards the rates its workers showed
 * (an exponential average), so a core that is slower from the start (a
 * big.LITTLE phone's LITTLE core) or becomes slower (throttled, shared) gets
 * less. Nothing is allocated and no thread is created after creation. */
#ifndef VKL_POOL_H
#define VKL_POOL_H

#include <stdbool.h>
#include <stddef.h>

#include "context.h"

typedef struct vkl_pool vkl_pool;

#define VKL_POOL_MAX_THREADS 256 /* more are not started */

/* worker: 0 .. vkl_pool_threads() - 1 (0 is the calling thread); index
 * per-thread scratch with it. */
typedef void (*vkl_pool_fn)(void *user, size_t task, unsigned worker);
/* Units begin..end-1 (a non-empty range) on `worker`. */
typedef void (*vkl_pool_range_fn)(void *user, size_t begin, size_t end, unsigned worker);

typedef struct vkl_pool_options {
    unsigned threads;   /* the calling thread included; 0: one per online CPU */
    bool equal_shares;  /* shares stay equal: calibration measures, but neither it nor the batches move them */
    /* Emulated unequal cores (a LITTLE core on any machine, for tests and
     * experiments): with slow_factor > 1, every piece of work worker
     * slow_worker runs (a task, a range, a calibration run) is followed by a
     * busy wait of (slow_factor - 1) times the CPU time that piece took, so
     * the worker spends as much CPU time as a core slow_factor times slower
     * would, and keeps its core busy meanwhile (a wait the OS interrupts
     * lasts longer, as the slower core's work would). What it does not
     * emulate: a LITTLE core also draws less memory bandwidth, so while it
     * waits the others read faster than beside a real one. slow_factor 0 or
     * 1: off. */
    unsigned slow_worker;
    double slow_factor;
} vkl_pool_options;

/* threads: the calling thread included; 0 = one per online CPU. Workers
 * block every asynchronous signal, so a handler (Ctrl-C) runs on the calling
 * thread. */
vkl_status vkl_pool_create(vkl_context *ctx, unsigned threads, vkl_pool **out);
/* The same with options; a slow_worker past the threads started, or a
 * slow_factor that is not a number in [1, 1000] (0: off), is
 * VKL_ERR_INVALID_ARGUMENT. */
vkl_status vkl_pool_create_with(vkl_context *ctx, const vkl_pool_options *o, vkl_pool **out);
unsigned vkl_pool_threads(const vkl_pool *p);
/* Callers on several threads at once: a call finding the workers busy with
 * another's batch runs its own work alone on the calling thread, as worker
 * 0 (so per-worker scratch belongs to each caller, not to the pool); such a
 * run moves no share. */
void vkl_pool_run(vkl_pool *p, size_t n_tasks, vkl_pool_fn fn, void *user);
/* grain 0: units 0..n-1 in one range a worker, sized by the shares (a
 * worker whose share rounds to no unit gets none). grain > 0: the same for
 * the first units, and the rest (at least grain units a thread, at least an
 * eighth of n; all of n when that is more than n) in chunks of grain units
 * handed out in increasing order. fn may be called several times on one
 * worker. */
void vkl_pool_run_shares(vkl_pool *p, size_t n, size_t grain, vkl_pool_range_fn fn, void *user);
/* Runs fn(user, w, w) once on every worker w at the same time, `rounds`
 * times; best[w] (vkl_pool_threads() entries) gets worker w's shortest run
 * in seconds on the monotonic clock, its emulated slowness included. Unless
 * equal_shares, the shares become proportional to 1 / best. A pool busy
 * with another caller's batch measures nothing (best all 0). */
void vkl_pool_calibrate(vkl_pool *p, unsigned rounds, vkl_pool_fn fn, void *user, double *best);
/* The workers' current shares (vkl_pool_threads() entries, summing to 1). */
void vkl_pool_shares(vkl_pool *p, double *out);
void vkl_pool_destroy(vkl_pool *p); /* accepts NULL */

/* Online CPUs, at least 1. */
unsigned vkl_cpu_count(void);

#endif
