/* The int8 peak of the AVX2 GEMM's instruction sequence, in registers only
 * (no loads), so vkbench can set the prefill GEMM against what the core can
 * do with it: vpmaddubsw into a fresh register, vpaddw into an int16
 * accumulator, and after 8 of those per accumulator vpmaddwd (by ones) and
 * vpaddd into int32, as the 4-bit kernel widens once per group of 128
 * (cpu_dot_avx2.c). Written in assembly because a compiler folds repeated
 * products of the same registers into one. Compiled with -mavx2. */
#include "../cpu_dot.h"

/* One step: 8 independent vpmaddubsw + vpaddw pairs (2 weight registers x 2
 * activation registers, each pair twice, into 8 accumulators). */
#define MA(w, a, acc, t)                                                  \
    "vpmaddubsw %%ymm" #a ", %%ymm" #w ", %%ymm" #t "\n\t"             \
    "vpaddw %%ymm" #t ", %%ymm" #acc ", %%ymm" #acc "\n\t"
#define STEP                                                                                                      \
    MA(8, 10, 0, 12) MA(9, 10, 1, 13) MA(8, 11, 2, 12) MA(9, 11, 3, 13) MA(8, 10, 4, 12) MA(9, 10, 5, 13) \
        MA(8, 11, 6, 12) MA(9, 11, 7, 13)
/* The widening of one int16 accumulator into the int32 sum, then its reset
 * (vpxor of a register with itself: a zeroing idiom, no execution). */
#define WIDEN(acc, t)                                                 \
    "vpmaddwd %%ymm14, %%ymm" #acc ", %%ymm" #t "\n\t"             \
    "vpaddd %%ymm" #t ", %%ymm15, %%ymm15\n\t"                       \
    "vpxor %%ymm" #acc ", %%ymm" #acc ", %%ymm" #acc "\n\t"

/* 64 vpmaddubsw a round (32 multiply-adds each): 4096 int8 ops. */
static uint32_t int8_loop(uint64_t rounds, const int8_t seed[128]) {
    uint32_t out[8];
    if (!rounds) return 0;
    __asm__ volatile(
        "vmovdqu (%[s]), %%ymm8\n\tvmovdqu 32(%[s]), %%ymm9\n\t"
        "vmovdqu 64(%[s]), %%ymm10\n\tvmovdqu 96(%[s]), %%ymm11\n\t"
        "vpcmpeqw %%ymm14, %%ymm14, %%ymm14\n\tvpsrlw $15, %%ymm14, %%ymm14\n\t" /* int16 ones */
        "vpxor %%ymm15, %%ymm15, %%ymm15\n\t"
        "vpxor %%ymm0, %%ymm0, %%ymm0\n\tvpxor %%ymm1, %%ymm1, %%ymm1\n\t"
        "vpxor %%ymm2, %%ymm2, %%ymm2\n\tvpxor %%ymm3, %%ymm3, %%ymm3\n\t"
        "vpxor %%ymm4, %%ymm4, %%ymm4\n\tvpxor %%ymm5, %%ymm5, %%ymm5\n\t"
        "vpxor %%ymm6, %%ymm6, %%ymm6\n\tvpxor %%ymm7, %%ymm7, %%ymm7\n\t"
        "1:\n\t" STEP STEP STEP STEP STEP STEP STEP STEP
        WIDEN(0, 12) WIDEN(1, 13) WIDEN(2, 12) WIDEN(3, 13) WIDEN(4, 12) WIDEN(5, 13) WIDEN(6, 12) WIDEN(7, 13)
        "dec %[n]\n\tjnz 1b\n\t"
        "vmovdqu %%ymm15, (%[o])\n\tvzeroupper\n\t"
        : [n] "+r"(rounds)
        : [s] "r"(seed), [o] "r"(out)
        : "memory", "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
          "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
    return out[0] ^ out[7];
}

const vkl_cpu_int8_loop vkl_cpu_int8_loop_avx2 = {"vpmaddubsw + vpaddw, vpmaddwd + vpaddd per 8", 4096, int8_loop};
