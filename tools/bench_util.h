/* What vkbench's measurements share: a monotonic clock and the host's copy
 * bandwidth (the limit for a backend that runs on the host). */
#ifndef VKL_TOOLS_BENCH_UTIL_H
#define VKL_TOOLS_BENCH_UTIL_H

/* Seconds on a monotonic clock. */
double vkl_bench_now(void);

/* Bytes read + written per second, best of 5 memcpy passes over 256 MiB;
 * 0 if the buffers cannot be allocated. */
double vkl_bench_host_copy_bandwidth(void);

#endif
