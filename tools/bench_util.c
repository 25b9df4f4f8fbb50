/* vkbench's clock, host copy bandwidth and output files (bench_util.h). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atomic_file.h"
#include "bench_util.h"

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
