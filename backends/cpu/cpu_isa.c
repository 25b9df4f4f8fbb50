/* Which instruction sets this CPU and OS run. x86: cpuid for the features,
 * and xgetbv for the OS's promise to save the ymm registers (without it the
 * first AVX instruction faults even where cpuid lists AVX2). Arm (Linux):
 * the kernel's hardware capability words, which list only what it lets
 * user space run (reading the ID registers would trap on older kernels). */
#define _DEFAULT_SOURCE /* syscall() */
#include "cpu_dot.h"

#ifdef VKL_CPU_HAVE_AVX2
#include <cpuid.h>

/* XCR0: the register states the OS saves on a context switch. */
static unsigned xcr0(void) {
    unsigned lo, hi;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return lo;
}

int vkl_cpu_has_avx2(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    const int fma = (c >> 12) & 1, osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, f16c = (c >> 29) & 1;
    if (!fma || !osxsave || !avx || !f16c) return 0;
    if ((xcr0() & 6) != 6) return 0; /* xmm and ymm state */
    if (__get_cpuid_max(0, NULL) < 7) return 0;
    __cpuid_count(7, 0, a, b, c, d);
    return (b >> 5) & 1;
}

/* AVX2 and AVX-512 F, BW (byte shifts and masks), VL, with the OS saving
 * the opmask and zmm state (xgetbv bits 5..7): what the AVX-512 VNNI tile
 * and AMX's f32 steps run on. cpuid leaf 7's ECX and EDX into *c, *d. */
static int avx512_fbwvl(unsigned *c, unsigned *d) {
    unsigned a, b;
    if (!vkl_cpu_has_avx2() || __get_cpuid_max(0, NULL) < 7) return 0;
    __cpuid_count(7, 0, a, b, *c, *d);
    return (b >> 16 & 1) && (b >> 30 & 1) && (b >> 31 & 1) && (xcr0() & 0xE6) == 0xE6;
}

int vkl_cpu_has_avx512vnni(void) {
    unsigned c, d;
    return avx512_fbwvl(&c, &d) && (c >> 11 & 1);
}

/* AVX-VNNI: cpuid leaf 7 subleaf 1, EAX bit 4; ymm registers only. */
int vkl_cpu_has_avxvnni(void) {
    unsigned a, b, c, d;
    if (!vkl_cpu_has_avx2() || __get_cpuid_max(0, NULL) < 7) return 0;
    __cpuid_count(7, 1, a, b, c, d);
    return a >> 4 & 1;
}

/* AMX-INT8 needs three promises besides cpuid's: the OS saves the zmm and
 * opmask state (xgetbv bits 5..7) and the tile state (bits 17, 18), and
 * Linux lets this process use the 8 KiB of tile data -- a permission asked
 * of the process (arch_prctl ARCH_REQ_XCOMP_PERM), without which the
 * first tile instruction kills it with SIGILL. The prefill kernel's f32
 * steps are AVX-512 (F, BW, VL). */
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18
#endif

int vkl_cpu_has_amx(void) {
    unsigned c, d;
    if (!avx512_fbwvl(&c, &d) || !(d >> 24 & 1) || !(d >> 25 & 1)) return 0; /* AMX-TILE, AMX-INT8 */
    if ((xcr0() & 0x60000) != 0x60000) return 0;
#if defined(__linux__)
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0; /* granted again: a no-op */
#else
    return 0;
#endif
}
#else
int vkl_cpu_has_avx2(void) { return 0; }
int vkl_cpu_has_avx512vnni(void) { return 0; }
int vkl_cpu_has_avxvnni(void) { return 0; }
int vkl_cpu_has_amx(void) { return 0; }
#endif

#if defined(VKL_CPU_HAVE_NEON) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>

int vkl_cpu_has_dotprod(void) { return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0; }
int vkl_cpu_has_i8mm(void) { return vkl_cpu_has_dotprod() && (getauxval(AT_HWCAP2) & HWCAP2_I8MM) != 0; }
#else
/* elsewhere (another OS on Arm: no probe written yet) the portable code */
int vkl_cpu_has_dotprod(void) { return 0; }
int vkl_cpu_has_i8mm(void) { return 0; }
#endif
