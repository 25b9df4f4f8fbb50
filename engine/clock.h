/* Seconds on a POSIX clock, as a double: CLOCK_MONOTONIC for wall time
 * (the pool's piece timings, the cpu backend's speed calibration),
 * CLOCK_THREAD_CPUTIME_ID for the calling thread's CPU time (the emulated
 * slow worker, the int8 peak). */
#ifndef VKL_CLOCK_H
#define VKL_CLOCK_H

#include <time.h>

static inline double vkl_clock_seconds(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
