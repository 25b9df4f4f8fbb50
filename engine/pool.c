/* vkl_pool: workers wait on a condition variable for a new batch (a
 * generation number), take task indexes from a shared counter under the
 * mutex (tasks are coarse: a stripe of a weight matrix), and the last one to
 * finish wakes the caller. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <unistd.h>

#include "pool.h"

#define POOL_MAX_THREADS 256

typedef struct worker {
    vkl_pool *pool;
    unsigned index;
    pthread_t thread;
} worker;

struct vkl_pool {
    vkl_context *ctx;
    unsigned threads;      /* the caller + n_workers */
    unsigned n_workers;    /* started */
    worker *workers;
    pthread_mutex_t mu;
    pthread_cond_t wake;   /* a batch began, or stop */
    pthread_cond_t done;   /* the batch's last task finished */
    unsigned long generation;
    bool stop;
    vkl_pool_fn fn;
    void *user;
    size_t next, n_tasks, finished;
};

unsigned vkl_cpu_count(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1u : n > POOL_MAX_THREADS ? POOL_MAX_THREADS : (unsigned)n;
}

/* Takes and runs tasks of the current batch until none is left. Called with
 * the mutex held; returns with it held. */
static void drain(vkl_pool *p, unsigned index) {
    while (p->next < p->n_tasks) {
        size_t task = p->next++;
        pthread_mutex_unlock(&p->mu);
        p->fn(p->user, task, index);
        pthread_mutex_lock(&p->mu);
        if (++p->finished == p->n_tasks) pthread_cond_signal(&p->done);
    }
}

static void *worker_main(void *arg) {
    worker *w = arg;
    vkl_pool *p = w->pool;
    unsigned long seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->generation == seen) pthread_cond_wait(&p->wake, &p->mu);
        if (p->stop) break;
        seen = p->generation;
        drain(p, w->index);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

vkl_status vkl_pool_create(vkl_context *ctx, unsigned threads, vkl_pool **out) {
    *out = NULL;
    if (!threads) threads = vkl_cpu_count();
    if (threads > POOL_MAX_THREADS) threads = POOL_MAX_THREADS;
    vkl_pool *p = vkl_calloc(ctx, 1, sizeof(*p));
    if (!p) return VKL_ERR_OUT_OF_MEMORY;
    p->ctx = ctx;
    p->threads = 1;
    if (pthread_mutex_init(&p->mu, NULL)) {
        vkl_free(ctx, p);
        return vkl_fail(ctx, VKL_ERR_INTERNAL, "thread pool: cannot create a mutex");
    }
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    *out = p;
    if (threads == 1) return VKL_OK;
    p->workers = vkl_calloc(ctx, threads - 1, sizeof(worker));
    if (!p->workers) {
        vkl_pool_destroy(p);
        *out = NULL;
        return VKL_ERR_OUT_OF_MEMORY;
    }
    /* Workers inherit the creating thread's signal mask: block everything
     * while creating them, so signals keep going to the caller. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (unsigned i = 0; i + 1 < threads; i++) {
        p->workers[i] = (worker){p, i + 1, 0};
        if (pthread_create(&p->workers[i].thread, NULL, worker_main, &p->workers[i])) break;
        p->n_workers++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    /* Fewer threads than asked (a limit) still computes the same result. */
    p->threads = 1 + p->n_workers;
    if (p->n_workers + 1 < threads)
        vkl_log(ctx, VKL_LOG_WARN, "thread pool: started %u of %u threads", p->threads, threads);
    return VKL_OK;
}

unsigned vkl_pool_threads(const vkl_pool *p) { return p ? p->threads : 1; }

void vkl_pool_run(vkl_pool *p, size_t n_tasks, vkl_pool_fn fn, void *user) {
    if (!n_tasks) return;
    if (!p || !p->n_workers) {
        for (size_t t = 0; t < n_tasks; t++) fn(user, t, 0);
        return;
    }
    pthread_mutex_lock(&p->mu);
    if (p->n_tasks) {
        /* Another thread's batch is running (sessions of one model on two
         * threads): do this one alone rather than wait or mix batches. */
        pthread_mutex_unlock(&p->mu);
        for (size_t t = 0; t < n_tasks; t++) fn(user, t, 0);
        return;
    }
    p->fn = fn;
    p->user = user;
    p->next = p->finished = 0;
    p->n_tasks = n_tasks;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    drain(p, 0);
    while (p->finished < p->n_tasks) pthread_cond_wait(&p->done, &p->mu);
    p->n_tasks = 0;
    pthread_mutex_unlock(&p->mu);
}

void vkl_pool_destroy(vkl_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < p->n_workers; i++) pthread_join(p->workers[i].thread, NULL);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->mu);
    vkl_free(p->ctx, p->workers);
    vkl_free(p->ctx, p);
}
