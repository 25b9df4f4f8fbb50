/* Prefill's GEMM tile with 256-bit vpdpbusd (AVX-VNNI, the VEX form of
 * Intel's hybrid cores without AVX-512, and AMD Zen 5): the AVX2 tile's
 * registers and f32 steps (cpu_gemm_ymm.h), its products by vpdpbusd, which
 * multiplies the unsigned codes by the signed activations and adds 4
 * products into each int32 lane, where AVX2 takes vpmaddubsw, an int16 add
 * and (a tile's end) vpmaddwd. The same int32 sums, so the same bits
 * (tests/unit/test_cpu_dot.c). Compiled with -mavx2 -mfma -mf16c -mavxvnni;
 * called only after vkl_cpu_has_avxvnni(). */
#include <immintrin.h>

#include "../cpu_dot.h"

#define MR VKL_CPU_YMM_TILE_MR

/* The int32 sums of `n` (1..4) tiles added into s01 / s23. Each half of a
 * tile (codes 0..15 by AND, 16..31 by shift and AND) meets every row before
 * the next half is unpacked. */
static inline __attribute__((always_inline)) void sums(const uint8_t *w, const int8_t *a, const uint32_t n,
                                                       __m256i *s01, __m256i *s23) {
    const __m256i m4 = _mm256_set1_epi8(15);
    _Pragma("GCC unroll 4")
    for (uint32_t c = 0; c < n; c++, w += VKL_CPU_HP * 16, a += VKL_CPU_LP * MR) {
        const __m256i x01 = _mm256_loadu_si256((const __m256i *)w);
        const __m256i x23 = _mm256_loadu_si256((const __m256i *)(w + 32));
        _Pragma("GCC unroll 2")
        for (int half = 0; half < 2; half++) {
            const __m256i w01 = _mm256_and_si256(half ? _mm256_srli_epi16(x01, 4) : x01, m4);
            const __m256i w23 = _mm256_and_si256(half ? _mm256_srli_epi16(x23, 4) : x23, m4);
            _Pragma("GCC unroll 8")
            for (int r = 0; r < MR; r++) {
                const __m256i v =
                    _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(a + 16 * (MR * half + r))));
                s01[r] = _mm256_dpbusd_avx_epi32(s01[r], w01, v);
                s23[r] = _mm256_dpbusd_avx_epi32(s23[r], w23, v);
            }
        }
    }
}

#include "cpu_gemm_ymm.h"

/* Group 128 (4 tiles) is the models' case: its own copy, fully unrolled. */
void vkl_cpu_q4_tile_avxvnni(const uint8_t *w, const float *rec, const vkl_cpu_panel *p, uint32_t chunks,
                             uint32_t groups, bool first, float *y, size_t ldy) {
    if (chunks == 4) tile(w, rec, p, 4, groups, first, y, ldy);
    else tile(w, rec, p, chunks, groups, first, y, ldy);
}

/* The int8 peak of this tile's instruction, in registers only (cpu_peak.c):
 * the VEX vpdpbusd (`%{vex%}`: braces are asm dialect marks in a template) into 12 accumulators, 48 a round, each 8 lanes x 4
 * multiply-adds. Assembly, as cpu_peak_avx2.c says why. The register roles
 * (tests/unit/test_cpu_peak.c redoes the sums): weights ymm12 =
 * seed[0..31], ymm13 = seed[32..63]; activations ymm14 = seed[64..95],
 * ymm15 = seed[96..127]; accumulator i takes weight i & 1 and activation
 * (i >> 1) & 1; at the end the 12 are added into one. */
#define DP(acc, w, a) "%{vex%} vpdpbusd %%ymm" #a ", %%ymm" #w ", %%ymm" #acc "\n\t"
#define ROUND12                                                                                                 \
    DP(0, 12, 14) DP(1, 13, 14) DP(2, 12, 15) DP(3, 13, 15) DP(4, 12, 14) DP(5, 13, 14) DP(6, 12, 15)           \
        DP(7, 13, 15) DP(8, 12, 14) DP(9, 13, 14) DP(10, 12, 15) DP(11, 13, 15)
#define ZERO(r) "vpxor %%ymm" #r ", %%ymm" #r ", %%ymm" #r "\n\t"
#define ADD(r) "vpaddd %%ymm" #r ", %%ymm0, %%ymm0\n\t"

static uint32_t int8_loop(uint64_t rounds, const int8_t seed[128]) {
    uint32_t out[8];
    if (!rounds) return 0;
    __asm__ volatile("vmovdqu (%[s]), %%ymm12\n\tvmovdqu 32(%[s]), %%ymm13\n\t"
                     "vmovdqu 64(%[s]), %%ymm14\n\tvmovdqu 96(%[s]), %%ymm15\n\t" ZERO(0) ZERO(1) ZERO(2) ZERO(3)
                         ZERO(4) ZERO(5) ZERO(6) ZERO(7) ZERO(8) ZERO(9) ZERO(10) ZERO(11)
                     "1:\n\t" ROUND12 ROUND12 ROUND12 ROUND12 "dec %[n]\n\tjnz 1b\n\t" ADD(1) ADD(2) ADD(3) ADD(4)
                         ADD(5) ADD(6) ADD(7) ADD(8) ADD(9) ADD(10) ADD(11)
                     "vmovdqu %%ymm0, (%[o])\n\tvzeroupper\n\t"
                     : [n] "+r"(rounds)
                     : [s] "r"(seed), [o] "r"(out)
                     : "memory", "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
                       "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
    return out[0] ^ out[7];
}

const vkl_cpu_int8_loop vkl_cpu_int8_loop_avxvnni = {"vpdpbusd ymm (VEX), 12 accumulators", 48 * 8 * 4 * 2, int8_loop};
