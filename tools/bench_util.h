/* What vkbench's measurements share: a monotonic clock, the host's copy
 * and read bandwidths (the limits for a backend that runs on the host) and
 * atomic output files. */
#ifndef VKL_TOOLS_BENCH_UTIL_H
#define VKL_TOOLS_BENCH_UTIL_H

#include <stddef.h>

#include "backend.h"
#include "context.h"

/* The peak of the arithmetic a GPU's prefill GEMM runs on: the matrix
 * units where measured (the GEMM uses them exactly when the backend
 * measures them), else fp16 FMA where measured (fp16 math), else f32 FMA;
 * *kind: "coopmat", "fp16 FMA" or "f32 FMA". 0 when none was measured. */
double vkl_bench_gemm_peak(const vkl_compute_peaks *p, const char **kind);

/* Seconds on a monotonic clock. */
double vkl_bench_now(void);

/* Bytes read + written per second, best of 5 memcpy passes over 256 MiB;
 * 0 if the buffers cannot be allocated. */
double vkl_bench_host_copy_bandwidth(void);

/* data (n bytes) as the whole of `path`, replaced atomically
 * (engine/atomic_file.h). */
vkl_status vkl_bench_write_file(vkl_context *ctx, const char *path, const void *data, size_t n);

/* Bytes read per second by `threads` threads (0: one per online CPU)
 * together streaming through 512 MiB, far beyond any cache, each its own
 * slice: best of 5 passes; 0 if the buffer or threads cannot be had. What
 * a memory-bound decode step on the host can at best read. */
double vkl_bench_host_read_bandwidth(unsigned threads);

#endif
