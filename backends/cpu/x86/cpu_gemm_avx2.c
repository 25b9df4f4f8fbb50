/* Prefill's GEMM tile with AVX2: one block of 4 weight rows (4-bit codes)
 * against a panel of VKL_CPU_GEMM_MR activation rows (cpu_dot.h), the
 * register tile of VKL_CPU_GEMM_MR's count. Same int32 sums and f32 steps as
 * the portable code (tests/unit/test_cpu_dot.c). Compiled with -mavx2
 * -mfma -mf16c and called only after vkl_cpu_has_avx2(). */
#include <immintrin.h>

#include "../cpu_dot.h"

#define MR VKL_CPU_GEMM_MR
_Static_assert(MR % 2 == 0, "apply2 takes the panel rows in pairs");

/* The int16 sums of `n` (1..4) tiles into p01 / p23, then widened and added
 * into the int32 sums s01 / s23. A lane adds 2 pair sums a
 * tile, at most 2 * 15 * 128 each, so 8 of them (30720) fit int16. Each
 * half of a tile (codes 0..15 by AND, 16..31 by shift and AND) meets every
 * row before the next half is unpacked, so 2 weight registers are live. */
static inline __attribute__((always_inline)) void sums(const uint8_t *w, const int8_t *a, const uint32_t n,
                                                       __m256i *s01, __m256i *s23) {
    const __m256i m4 = _mm256_set1_epi8(15), ones = _mm256_set1_epi16(1);
    __m256i p01[MR], p23[MR];
    _Pragma("GCC unroll 8")
    for (int r = 0; r < MR; r++) p01[r] = p23[r] = _mm256_setzero_si256();
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
                p01[r] = _mm256_add_epi16(p01[r], _mm256_maddubs_epi16(w01, v));
                p23[r] = _mm256_add_epi16(p23[r], _mm256_maddubs_epi16(w23, v));
                /* an empty asm: the compiler keeps these adds in this order
                 * instead of computing every product first (which spills) */
                __asm__("" : "+x"(p01[r]), "+x"(p23[r]));
            }
        }
    }
    _Pragma("GCC unroll 8")
    for (int r = 0; r < MR; r++) {
        s01[r] = _mm256_add_epi32(s01[r], _mm256_madd_epi16(p01[r], ones));
        s23[r] = _mm256_add_epi32(s23[r], _mm256_madd_epi16(p23[r], ones));
    }
}

/* The group's f32 step (cpu_dot.h) for two panel rows at once, row r in
 * the low lane and r + 1 in the high one: the same multiplies and
 * subtractions per element as the portable code, none fused. d8 / s8: the
 * two rows' scales and code sums, 4 copies each (the panel's layout). */
static inline __attribute__((always_inline)) __m256 apply2(__m256i s01a, __m256i s23a, __m256i s01b, __m256i s23b,
                                                           const float *rec, const float *d8, const float *s8,
                                                           __m256 acc) {
    /* [a0 a0 a2 a2 | a1 a1 a3 a3], the same for b, then [a0 a2 b0 b2 | a1 a3 b1 b3]: put in row order */
    const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(s01a, s23a), _mm256_hadd_epi32(s01b, s23b));
    const __m256i isum = _mm256_permutevar8x32_epi32(h, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    const __m256 zero = _mm256_broadcast_ps((const __m128 *)(const void *)(rec + VKL_CPU_HP));
    const __m256 scale = _mm256_broadcast_ps((const __m128 *)(const void *)rec);
    const __m256 t = _mm256_sub_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(zero, _mm256_loadu_ps(s8)));
    const __m256 u = _mm256_mul_ps(scale, _mm256_loadu_ps(d8));
    return _mm256_add_ps(acc, _mm256_mul_ps(u, t));
}

static inline __attribute__((always_inline)) void tile(const uint8_t *w, const float *rec, const vkl_cpu_panel *p,
                                                       const uint32_t chunks, uint32_t groups, bool first, float *y,
                                                       size_t ldy) {
    const int8_t *a = p->q;
    /* rows 2k and 2k + 1 of y in the low and high lanes; from +0 when first
     * (0 + u * t, as the portable code adds to 0: a -0 product gives +0) */
    __m256 acc[MR / 2];
    _Pragma("GCC unroll 4")
    for (int k = 0; k < MR / 2; k++)
        acc[k] = first ? _mm256_setzero_ps() : _mm256_loadu2_m128(y + (2 * k + 1) * ldy, y + 2 * k * ldy);
    for (uint32_t g = 0; g < groups; g++, rec += 2 * VKL_CPU_HP) {
        __m256i s01[MR], s23[MR];
        _Pragma("GCC unroll 8")
        for (int r = 0; r < MR; r++) s01[r] = s23[r] = _mm256_setzero_si256();
        for (uint32_t c0 = 0; c0 < chunks; c0 += 4) {
            const uint32_t n = chunks - c0 < 4 ? chunks - c0 : 4;
            if (n == 4) sums(w, a, 4, s01, s23);
            else sums(w, a, n, s01, s23);
            w += (size_t)n * VKL_CPU_HP * 16;
            a += (size_t)n * VKL_CPU_LP * MR;
        }
        const float *d = p->d + (size_t)g * MR * VKL_CPU_HP, *s = p->s + (size_t)g * MR * VKL_CPU_HP;
        _Pragma("GCC unroll 4")
        for (int r = 0; r < MR; r += 2)
            acc[r / 2] = apply2(s01[r], s23[r], s01[r + 1], s23[r + 1], rec, d + VKL_CPU_HP * r, s + VKL_CPU_HP * r,
                                acc[r / 2]);
    }
    _Pragma("GCC unroll 4")
    for (int k = 0; k < MR / 2; k++) _mm256_storeu2_m128(y + (2 * k + 1) * ldy, y + 2 * k * ldy, acc[k]);
}

/* Group 128 (4 tiles) is the models' case: its own copy, fully unrolled. */
void vkl_cpu_q4_tile_avx2(const uint8_t *w, const float *rec, const vkl_cpu_panel *p, uint32_t chunks,
                          uint32_t groups, bool first, float *y, size_t ldy) {
    if (chunks == 4) tile(w, rec, p, 4, groups, first, y, ldy);
    else tile(w, rec, p, chunks, groups, first, y, ldy);
}
