/* vkl_pool: workers wait on a condition variable for a new batch (a
 * generation number). A batch is a range per worker (its "head", which only
 * that worker runs) and a tail of units handed out from a shared counter
 * under the mutex in chunks (vkl_pool_run: all tail, a task a chunk); the
 * last piece to finish wakes the caller. The shares, and the head timings
 * that move them, live under the same mutex. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "pool.h"

/* A shares batch moves the shares only when its longest head took at least
 * this long: a shorter one is timed mostly by the clock's own cost and the
 * caches it starts cold in */
#define LEARN_MIN_SECONDS 100e-6
/* The weight of one batch's rates in the shares (an exponential average):
 * about 8 long batches, a fraction of a 1B model's decode step, follow a
 * change, while one batch a worker spent descheduled moves its share by an
 * eighth of the difference */
#define LEARN_RATE 0.125
/* No share falls below this fraction of the largest, so every worker keeps
 * some units and so keeps being timed (one with none could never show that
 * it got faster again) */
#define MIN_SHARE_OF_LARGEST 0.0625
/* vkl_pool_run_shares with a grain: at least 1 / TAIL_DIV of the units go
 * to the tail, which absorbs what the shares got wrong */
#define TAIL_DIV 8
#define SLOW_FACTOR_MAX 1000.0

typedef struct job {
    vkl_pool_fn task; /* vkl_pool_run's, or */
    vkl_pool_range_fn range;
    void *user;
} job;

typedef struct worker {
    vkl_pool *pool;
    unsigned index;
    pthread_t thread; /* not for worker 0, the caller */
    double share;
    /* this batch's head: units begin..end-1, pending until its worker takes
     * it, and the seconds it took */
    size_t begin, end;
    bool pending;
    double seconds;
} worker;

struct vkl_pool {
    vkl_context *ctx;
    unsigned threads;   /* the caller + n_workers */
    unsigned n_workers; /* started */
    worker *w;          /* threads entries, w[0] the caller's */
    bool equal_shares;
    unsigned slow_worker;
    double slow_factor; /* > 1: emulation on (pool.h) */
    pthread_mutex_t mu;
    pthread_cond_t wake; /* a batch began, or stop */
    pthread_cond_t done; /* the batch's last piece finished */
    unsigned long generation;
    bool stop, busy;
    job job;
    size_t next, tail_end, grain; /* the tail still to hand out: next..tail_end-1, in chunks of grain */
    size_t parts, finished;       /* heads and tail chunks in the batch, and those done */
};

unsigned vkl_cpu_count(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1u : n > VKL_POOL_MAX_THREADS ? VKL_POOL_MAX_THREADS : (unsigned)n;
}

/* Units begin..end-1 of job j on worker w; returns their wall seconds when
 * `timed` (else 0: no clock read where none is needed). On the emulated
 * slow worker the piece is followed by a busy wait until the thread has
 * spent slow_factor times the piece's CPU time: CPU time, not wall time, so
 * that a wait the OS interrupts lasts longer, as the work of a slower core
 * would (on a wall clock, a descheduled wait would cost nothing, and on a
 * loaded machine the emulated core looked faster than it was). */
static double run_piece(const vkl_pool *p, const job *j, size_t begin, size_t end, unsigned w, bool timed) {
    const bool slow = p && p->slow_factor > 1 && w == p->slow_worker;
    const double t0 = timed || slow ? vkl_clock_seconds(CLOCK_MONOTONIC) : 0;
    const double c0 = slow ? vkl_clock_seconds(CLOCK_THREAD_CPUTIME_ID) : 0;
    if (j->range) j->range(j->user, begin, end, w);
    else
        for (size_t t = begin; t < end; t++) j->task(j->user, t, w);
    if (slow) {
        double c = vkl_clock_seconds(CLOCK_THREAD_CPUTIME_ID);
        for (const double until = c0 + p->slow_factor * (c - c0); c < until;)
            c = vkl_clock_seconds(CLOCK_THREAD_CPUTIME_ID);
    }
    return timed ? vkl_clock_seconds(CLOCK_MONOTONIC) - t0 : 0;
}

static void piece_done(vkl_pool *p) {
    if (++p->finished == p->parts) pthread_cond_signal(&p->done);
}

/* Runs worker w's head if it is pending, then tail chunks until none is
 * left. Called with the mutex held; returns with it held. */
static void drain(vkl_pool *p, unsigned w) {
    worker *me = &p->w[w];
    const job j = p->job;
    if (me->pending) {
        me->pending = false;
        const size_t begin = me->begin, end = me->end;
        pthread_mutex_unlock(&p->mu);
        const double seconds = run_piece(p, &j, begin, end, w, true);
        pthread_mutex_lock(&p->mu);
        me->seconds = seconds;
        piece_done(p);
    }
    while (p->next < p->tail_end) {
        const size_t begin = p->next, end = p->tail_end - begin < p->grain ? p->tail_end : begin + p->grain;
        p->next = end;
        pthread_mutex_unlock(&p->mu);
        run_piece(p, &j, begin, end, w, false);
        pthread_mutex_lock(&p->mu);
        piece_done(p);
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
    const vkl_pool_options o = {.threads = threads};
    return vkl_pool_create_with(ctx, &o, out);
}

vkl_status vkl_pool_create_with(vkl_context *ctx, const vkl_pool_options *o, vkl_pool **out) {
    *out = NULL;
    if (o->slow_factor != 0 && !(o->slow_factor >= 1 && o->slow_factor <= SLOW_FACTOR_MAX))
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "thread pool: slow worker factor %g: want 1 to %g (0: off)",
                        o->slow_factor, SLOW_FACTOR_MAX);
    unsigned threads = o->threads ? o->threads : vkl_cpu_count();
    if (threads > VKL_POOL_MAX_THREADS) threads = VKL_POOL_MAX_THREADS;
    vkl_pool *p = vkl_calloc(ctx, 1, sizeof(*p));
    if (!p) return VKL_ERR_OUT_OF_MEMORY;
    p->ctx = ctx;
    p->threads = 1;
    p->equal_shares = o->equal_shares;
    p->slow_worker = o->slow_worker;
    p->slow_factor = o->slow_factor;
    p->w = vkl_calloc(ctx, threads, sizeof(worker));
    if (!p->w) {
        vkl_free(ctx, p);
        return VKL_ERR_OUT_OF_MEMORY;
    }
    if (pthread_mutex_init(&p->mu, NULL)) {
        vkl_free(ctx, p->w);
        vkl_free(ctx, p);
        return vkl_fail(ctx, VKL_ERR_INTERNAL, "thread pool: cannot create a mutex");
    }
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    p->w[0] = (worker){.pool = p, .index = 0};
    /* Workers inherit the creating thread's signal mask: block everything
     * while creating them, so signals keep going to the caller. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (unsigned i = 1; i < threads; i++) {
        p->w[i] = (worker){.pool = p, .index = i};
        if (pthread_create(&p->w[i].thread, NULL, worker_main, &p->w[i])) break;
        p->n_workers++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    /* Fewer threads than asked (a limit) still computes the same result. */
    p->threads = 1 + p->n_workers;
    for (unsigned i = 0; i < p->threads; i++) p->w[i].share = 1.0 / p->threads;
    if (p->threads < threads)
        vkl_log(ctx, VKL_LOG_WARN, "thread pool: started %u of %u threads", p->threads, threads);
    if (p->slow_factor > 1 && p->slow_worker >= p->threads) {
        const unsigned n = p->threads;
        vkl_pool_destroy(p);
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "thread pool: slow worker %u: the pool has %u threads (workers 0..%u)",
                        o->slow_worker, n, n - 1);
    }
    *out = p;
    return VKL_OK;
}

unsigned vkl_pool_threads(const vkl_pool *p) { return p ? p->threads : 1; }

/* Takes the workers for a batch: true with the mutex held, false (not held)
 * when there are none or another caller's batch holds them. */
static bool batch_begin(vkl_pool *p) {
    if (!p || !p->n_workers) return false;
    pthread_mutex_lock(&p->mu);
    if (p->busy) {
        pthread_mutex_unlock(&p->mu);
        return false;
    }
    p->busy = true;
    return true;
}

/* With the workers taken and every head set (w[].begin, end, pending): runs
 * the heads and the tail tail_begin..n-1 in chunks of grain; returns when
 * all is done, the mutex still held. */
static void batch_run(vkl_pool *p, const job *j, size_t tail_begin, size_t n, size_t grain) {
    p->job = *j;
    p->next = tail_begin;
    p->tail_end = n;
    p->grain = grain;
    p->parts = (n - tail_begin + grain - 1) / grain;
    for (unsigned w = 0; w < p->threads; w++) p->parts += p->w[w].pending;
    p->finished = 0;
    if (!p->parts) return;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    drain(p, 0);
    while (p->finished < p->parts) pthread_cond_wait(&p->done, &p->mu);
}

static void batch_end(vkl_pool *p) {
    p->busy = false;
    pthread_mutex_unlock(&p->mu);
}

void vkl_pool_run(vkl_pool *p, size_t n_tasks, vkl_pool_fn fn, void *user) {
    const job j = {fn, NULL, user};
    if (!n_tasks) return;
    if (!batch_begin(p)) {
        /* no workers, or another thread's batch is running (sessions of one
         * model on two threads): do this one alone rather than wait or mix */
        run_piece(p, &j, 0, n_tasks, 0, false);
        return;
    }
    for (unsigned w = 0; w < p->threads; w++) p->w[w].pending = false;
    batch_run(p, &j, 0, n_tasks, 1);
    batch_end(p);
}

/* Shares summing to 1, none below MIN_SHARE_OF_LARGEST of the largest. */
static void normalize_shares(vkl_pool *p) {
    double largest = 0, sum = 0;
    for (unsigned w = 0; w < p->threads; w++) largest = p->w[w].share > largest ? p->w[w].share : largest;
    for (unsigned w = 0; w < p->threads; w++) {
        if (p->w[w].share < MIN_SHARE_OF_LARGEST * largest) p->w[w].share = MIN_SHARE_OF_LARGEST * largest;
        sum += p->w[w].share;
    }
    for (unsigned w = 0; w < p->threads; w++) p->w[w].share /= sum;
}

/* After a shares batch: each timed head's rate (units a second) pulls its
 * worker's share towards that rate's part of the timed workers' rates,
 * within the timed workers' total (the others keep theirs). */
static void learn(vkl_pool *p) {
    double longest = 0, rates = 0, shares = 0;
    for (unsigned w = 0; w < p->threads; w++) {
        const worker *x = &p->w[w];
        if (x->end <= x->begin || x->seconds <= 0) continue;
        longest = x->seconds > longest ? x->seconds : longest;
        rates += (double)(x->end - x->begin) / x->seconds;
        shares += x->share;
    }
    if (p->equal_shares || longest < LEARN_MIN_SECONDS || rates <= 0) return;
    for (unsigned w = 0; w < p->threads; w++) {
        worker *x = &p->w[w];
        if (x->end <= x->begin || x->seconds <= 0) continue;
        const double target = shares * ((double)(x->end - x->begin) / x->seconds) / rates;
        x->share += LEARN_RATE * (target - x->share);
    }
    normalize_shares(p);
}

void vkl_pool_run_shares(vkl_pool *p, size_t n, size_t grain, vkl_pool_range_fn fn, void *user) {
    const job j = {NULL, fn, user};
    if (!n) return;
    if (!batch_begin(p)) {
        run_piece(p, &j, 0, n, 0, false);
        return;
    }
    size_t tail = 0;
    if (grain) {
        tail = grain * p->threads > n / TAIL_DIV ? grain * p->threads : n / TAIL_DIV;
        tail = tail < n ? tail : n;
    }
    /* the heads: worker w from the rounded sum of the shares before it to
     * the rounded sum including its own, the last one to the end */
    const size_t head = n - tail;
    double below = 0;
    size_t begin = 0;
    for (unsigned w = 0; w < p->threads; w++) {
        worker *x = &p->w[w];
        below += x->share;
        size_t end = w + 1 == p->threads ? head : (size_t)(below * (double)head + 0.5);
        end = end < begin ? begin : end > head ? head : end;
        x->begin = begin;
        x->end = end;
        x->pending = end > begin;
        x->seconds = 0;
        begin = end;
    }
    batch_run(p, &j, head, n, grain ? grain : 1);
    learn(p);
    batch_end(p);
}

void vkl_pool_calibrate(vkl_pool *p, unsigned rounds, vkl_pool_fn fn, void *user, double *best) {
    const job j = {fn, NULL, user};
    for (unsigned w = 0; w < vkl_pool_threads(p); w++) best[w] = 0;
    if (!p) return;
    if (!p->n_workers) {
        for (unsigned r = 0; r < rounds; r++) {
            const double s = run_piece(p, &j, 0, 1, 0, true);
            best[0] = !r || s < best[0] ? s : best[0];
        }
        return;
    }
    if (!batch_begin(p)) return;
    for (unsigned r = 0; r < rounds; r++) {
        for (unsigned w = 0; w < p->threads; w++) {
            p->w[w].begin = w;
            p->w[w].end = w + 1;
            p->w[w].pending = true;
        }
        batch_run(p, &j, 0, 0, 1);
        for (unsigned w = 0; w < p->threads; w++)
            best[w] = !r || p->w[w].seconds < best[w] ? p->w[w].seconds : best[w];
    }
    bool measured = rounds > 0;
    for (unsigned w = 0; w < p->threads; w++) measured = measured && best[w] > 0;
    if (measured && !p->equal_shares) {
        for (unsigned w = 0; w < p->threads; w++) p->w[w].share = 1.0 / best[w];
        normalize_shares(p);
    }
    /* no head of a later batch may look pending or timed from these */
    for (unsigned w = 0; w < p->threads; w++) p->w[w].begin = p->w[w].end = 0;
    batch_end(p);
}

void vkl_pool_shares(vkl_pool *p, double *out) {
    if (!p) {
        out[0] = 1;
        return;
    }
    pthread_mutex_lock(&p->mu);
    for (unsigned w = 0; w < p->threads; w++) out[w] = p->w[w].share;
    pthread_mutex_unlock(&p->mu);
}

void vkl_pool_destroy(vkl_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 1; i <= p->n_workers; i++) pthread_join(p->w[i].thread, NULL);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->mu);
    vkl_free(p->ctx, p->w);
    vkl_free(p->ctx, p);
}
