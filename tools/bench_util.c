/* vkbench's clock, host copy bandwidth and output files (bench_util.h). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atomic_file.h"
#include "bench_util.h"
#include "context.h"
#include "pool.h"

double vkl_bench_gemm_peak(const vkl_compute_peaks *p, const char **kind) {
    *kind = p->coopmat > 0 ? "coopmat" : p->f16 > 0 ? "fp16 FMA" : "f32 FMA";
    return p->coopmat > 0 ? p->coopmat : p->f16 > 0 ? p->f16 : p->f32;
}

double vkl_bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Host copy bandwidth, bytes read + written per second, best of 5 passes
 * over 256 MiB: the limit for a backend that runs on the host. */
double vkl_bench_host_copy_bandwidth(void) {
    size_t n = 256u << 20;
    char *a = malloc(n), *b = malloc(n);
    double best = 0;
    if (!a || !b) {
        free(a);
        free(b);
        return 0;
    }
    memset(a, 1, n);
    memset(b, 2, n);
    for (int i = 0; i < 5; i++) {
        double t0 = vkl_bench_now();
        memcpy(i & 1 ? a : b, i & 1 ? b : a, n);
        double bw = 2.0 * (double)n / (vkl_bench_now() - t0);
        if (bw > best) best = bw;
    }
    free(a);
    free(b);
    return best;
}


vkl_status vkl_bench_write_file(vkl_context *ctx, const char *path, const void *data, size_t n) {
    vkl_atomic_file f;
    vkl_status st = vkl_atomic_file_open(ctx, path, &f);
    if (st) return st;
    st = vkl_atomic_file_write(&f, data, n);
    if (!st) st = vkl_atomic_file_commit(&f);
    vkl_atomic_file_abort(&f); /* nothing left to remove after a commit */
    return st;
}

#define READ_BYTES ((size_t)512 << 20)
#define READ_MAX_TASKS 256

typedef struct read_job {
    const uint64_t *p;
    size_t words, per_task;
    uint64_t sums[READ_MAX_TASKS]; /* kept, so the reads are not optimized away */
} read_job;

static void read_task(void *user, size_t task, unsigned worker) {
    (void)worker;
    read_job *j = user;
    const size_t w1 = (task + 1) * j->per_task < j->words ? (task + 1) * j->per_task : j->words;
    uint64_t s[8] = {0};
    for (size_t w = task * j->per_task; w + 8 <= w1; w += 8)
        for (int k = 0; k < 8; k++) s[k] += j->p[w + k];
    j->sums[task] = s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

double vkl_bench_host_read_bandwidth(unsigned threads) {
    vkl_context *ctx = NULL;
    vkl_pool *pool = NULL;
    read_job *j = calloc(1, sizeof(*j));
    uint64_t *buf = malloc(READ_BYTES);
    double best = 0;
    if (j && buf && !vkl_context_create(NULL, &ctx) && !vkl_pool_create(ctx, threads, &pool)) {
        memset(buf, 1, READ_BYTES);
        const size_t tasks = vkl_pool_threads(pool) < READ_MAX_TASKS ? vkl_pool_threads(pool) : READ_MAX_TASKS;
        j->p = buf;
        j->words = READ_BYTES / 8;
        j->per_task = (j->words / tasks + 7) / 8 * 8;
        for (int i = 0; i < 5; i++) {
            double t0 = vkl_bench_now();
            vkl_pool_run(pool, tasks, read_task, j);
            double bw = (double)READ_BYTES / (vkl_bench_now() - t0);
            if (bw > best) best = bw;
        }
    }
    vkl_pool_destroy(pool);
    vkl_context_destroy(ctx);
    free(buf);
    free(j);
    return best;
}
