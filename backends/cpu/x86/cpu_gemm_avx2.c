/* Prefill's GEMM tile with AVX2: one block of 4 weight rows (4-bit codes)
 * against a panel of VKL_CPU_YMM_TILE_MR activation rows (cpu_dot.h), the
 * register tile of x86/cpu_gemm_ymm.h's count. Same int32 sums and f32 steps as
 * the portable code (tests/unit/test_cpu_dot.c). Compiled with -mavx2
 * -mfma -mf16c and called only after vkl_cpu_has_avx2(). */
#include <immintrin.h>

#include "../cpu_dot.h"

#define MR VKL_CPU_YMM_TILE_MR

/* vpmaddubsw adds each pair of products into an int16 lane */
#define PRODUCT(acc, w, v) _mm256_add_epi16(acc, _mm256_maddubs_epi16(w, v))

#include "cpu_gemm_ymm.h"

/* The int16 sums of `n` (1..4) tiles into p01 / p23, then widened and added
 * into the int32 sums s01 / s23. A lane adds 2 pair sums a tile, at most
 * 2 * 15 * 128 each, so 8 of them (30720) fit int16. */
static inline __attribute__((always_inline)) void sums(const uint8_t *w, const int8_t *a, const uint32_t n,
                                                       __m256i *s01, __m256i *s23) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i p01[MR], p23[MR];
    _Pragma("GCC unroll 8")
    for (int r = 0; r < MR; r++) p01[r] = p23[r] = _mm256_setzero_si256();
    products(w, a, n, p01, p23);
    _Pragma("GCC unroll 8")
    for (int r = 0; r < MR; r++) {
        s01[r] = _mm256_add_epi32(s01[r], _mm256_madd_epi16(p01[r], ones));
        s23[r] = _mm256_add_epi32(s23[r], _mm256_madd_epi16(p23[r], ones));
    }
}

/* Group 128 (4 tiles) is the models' case: its own copy, fully unrolled. */
void vkl_cpu_q4_tile_avx2(const uint8_t *w, const float *rec, const vkl_cpu_panel *p, uint32_t chunks,
                          uint32_t groups, bool first, float *y, size_t ldy) {
    if (chunks == 4) tile(w, rec, p, 4, groups, first, y, ldy);
    else tile(w, rec, p, chunks, groups, first, y, ldy);
}
