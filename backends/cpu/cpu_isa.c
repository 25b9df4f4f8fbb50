/* Which instruction sets this CPU and OS run: cpuid for the features, and
 * xgetbv for the OS's promise to save the ymm registers (without it the
 * first AVX instruction faults even where cpuid lists AVX2). */
#include "cpu_dot.h"

#ifdef VKL_CPU_HAVE_AVX2
#include <cpuid.h>

int vkl_cpu_has_avx2(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    const int fma = (c >> 12) & 1, osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, f16c = (c >> 29) & 1;
    if (!fma || !osxsave || !avx || !f16c) return 0;
    unsigned lo, hi;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & 6) != 6) return 0; /* xmm and ymm state */
    if (__get_cpuid_max(0, NULL) < 7) return 0;
    __cpuid_count(7, 0, a, b, c, d);
    return (b >> 5) & 1;
}
#else
int vkl_cpu_has_avx2(void) { return 0; }
#endif
