/* A small fixed pool of worker threads for data-parallel loops: run(n, fn)
 * calls fn for tasks 0..n-1 spread over the workers and the calling thread,
 * and returns when all are done. Tasks are handed out in increasing order,
 * so when task j runs every task below j has started. Results must not
 * depend on which thread ran a task (each task writes its own output). */
#ifndef VKL_POOL_H
#define VKL_POOL_H

#include <stddef.h>

#include "context.h"

typedef struct vkl_pool vkl_pool;

/* worker: 0 .. vkl_pool_threads() - 1 (0 is the calling thread); index
 * per-thread scratch with it. */
typedef void (*vkl_pool_fn)(void *user, size_t task, unsigned worker);

/* threads: the calling thread included; 0 = one per online CPU. Workers
 * block every asynchronous signal, so a handler (Ctrl-C) runs on the calling
 * thread. */
vkl_status vkl_pool_create(vkl_context *ctx, unsigned threads, vkl_pool **out);
unsigned vkl_pool_threads(const vkl_pool *p);
/* Callers on several threads at once: a call finding the workers busy with
 * another's batch runs its own tasks alone on the calling thread, as worker
 * 0 (so per-worker scratch belongs to each caller, not to the pool). */
void vkl_pool_run(vkl_pool *p, size_t n_tasks, vkl_pool_fn fn, void *user);
void vkl_pool_destroy(vkl_pool *p); /* accepts NULL */

/* Online CPUs, at least 1. */
unsigned vkl_cpu_count(void);

#endif
