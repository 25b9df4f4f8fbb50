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

/* vpdpbusd adds each 4 products into an int32 lane */
#define PRODUCT(acc, w, v) _mm256_dpbusd_avx_epi32(acc, w, v)

#include "cpu_gemm_ymm.h"

/* The int32 sums of `n` (1..4) tiles added into s01 / s23: the products
 * themselves. */
static inline __attribute__((always_inline)) void sums(const uint8_t *w, const int8_t *a, const uint32_t n,
                                                       __m256i *s01, __m256i *s23) {
    products(w, a, n, s01, s23);
}

/* Group 128 (4 tiles) is the models' case: its own copy, fully unrolled. */
void vkl_cpu_q4_tile_avxvnni(const uint8_t *w, const float *rec, const vkl_cpu_panel *p, uint32_t chunks,
                             uint32_t groups, bool first, float *y, size_t ldy) {
    if (chunks == 4) tile(w, rec, p, 4, groups, first, y, ldy);
    else tile(w, rec, p, chunks, groups, first, y, ldy);
}
