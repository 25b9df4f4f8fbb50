/* Prefill's GEMM tile with AVX-512 VNNI: one block of 4 weight rows (4-bit
 * codes) against a panel of VKL_CPU_ZMM_TILE_MR activation rows (cpu_dot.h).
 * The same int32 sums and f32 steps as the portable code, so the same bits
 * (tests/unit/test_cpu_dot.c). Compiled with -mavx512f -mavx512bw
 * -mavx512vl -mavx512vnni; called only after vkl_cpu_has_avx512vnni().
 *
 * A 4-bit tile is 64 bytes, weight row i's codes in bytes 16i..16i+15
 * (cpu_dot.h): one zmm holds all 4 rows, each in its own 128-bit lane, and
 * AND / shift + AND give codes 0..15 / 16..31 of all four. The panel row's
 * 16 activation codes for that half, broadcast to the 4 lanes, meet them in
 * one vpdpbusd (unsigned codes x signed activations, 4 products added into
 * each int32 lane: exact, nothing to saturate), so a panel row's sums are
 * one register, [w0: 4 partial sums | w1 | w2 | w3]. AVX2 needs 2
 * vpmaddubsw, 2 adds and (a tile's end) 2 vpmaddwd for the same work. */
#include <immintrin.h>

#include "../cpu_dot.h"

#define MR VKL_CPU_ZMM_TILE_MR

_Static_assert(MR % 4 == 0, "the f32 steps below take panel rows 4 at a time");

/* The int32 sums of `n` (1..4) tiles of `nb` (1, 2) blocks `wstride` bytes
 * apart into s[b][r], block b and panel row r. Each broadcast activation
 * meets both blocks' codes: with 2, a load per two products (one block a
 * call, a load per product, ran 15-23% slower). 2 blocks: 24 sums, 2 codes,
 * the mask and the activation, 28 of the 32 zmm (the f32 sums spill). */
static inline __attribute__((always_inline)) void sums(const uint8_t *w, size_t wstride, const int8_t *a,
                                                       const uint32_t n, const int nb, __m512i s[2][MR]) {
    const __m512i m4 = _mm512_set1_epi8(15);
    _Pragma("GCC unroll 4")
    for (uint32_t c = 0; c < n; c++, w += VKL_CPU_HP * 16, a += VKL_CPU_LP * MR) {
        __m512i x[2];
        _Pragma("GCC unroll 2")
        for (int b = 0; b < nb; b++) x[b] = _mm512_loadu_si512(w + b * wstride);
        _Pragma("GCC unroll 2")
        for (int half = 0; half < 2; half++) {
            __m512i codes[2];
            _Pragma("GCC unroll 2")
            for (int b = 0; b < nb; b++) codes[b] = _mm512_and_si512(half ? _mm512_srli_epi16(x[b], 4) : x[b], m4);
            _Pragma("GCC unroll 16")
            for (int r = 0; r < MR; r++) {
                const __m512i v = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(a + 16 * (MR * half + r))));
                _Pragma("GCC unroll 2")
                for (int b = 0; b < nb; b++) {
                    s[b][r] = _mm512_dpbusd_epi32(s[b][r], codes[b], v);
                    /* an empty asm: the broadcast stays a load next to its
                     * use (hoisted, gcc made it a load and a vshufi32x4 on
                     * the shuffle port the products need) */
                    __asm__("" : "+v"(s[b][r]));
                }
            }
        }
    }
}

/* Four panel rows' sums (each [w0: 4 partials | w1 | w2 | w3]) reduced
 * in-lane to [w0: A B C D | w1: A B C D | ...]: weight row i's lane holds its
 * whole sums for panel rows A..D. Integer adds: any order gives the same. */
static inline __attribute__((always_inline)) __m512i reduce4(__m512i A, __m512i B, __m512i C, __m512i D) {
    const __m512i ab = _mm512_add_epi32(_mm512_unpacklo_epi32(A, B), _mm512_unpackhi_epi32(A, B));
    const __m512i cd = _mm512_add_epi32(_mm512_unpacklo_epi32(C, D), _mm512_unpackhi_epi32(C, D));
    return _mm512_add_epi32(_mm512_unpacklo_epi64(ab, cd), _mm512_unpackhi_epi64(ab, cd));
}

/* 16 floats [r0: w0..w3 | r1 | r2 | r3] <-> [w0: r0..r3 | w1 | ...]: a 4 x 4
 * transpose, its own inverse. */
static inline __attribute__((always_inline)) __m512 transpose4x4(__m512 v) {
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), v);
}

/* The 4 floats of 4 rows of y (weight rows 0..3 each) as one vector in the
 * f32 step's order. */
static inline __attribute__((always_inline)) __m512 load_rows(const float *y, size_t ldy) {
    __m512 v = _mm512_castps128_ps512(_mm_loadu_ps(y));
    v = _mm512_insertf32x4(v, _mm_loadu_ps(y + ldy), 1);
    v = _mm512_insertf32x4(v, _mm_loadu_ps(y + 2 * ldy), 2);
    v = _mm512_insertf32x4(v, _mm_loadu_ps(y + 3 * ldy), 3);
    return transpose4x4(v);
}

/* The group's f32 step (cpu_dot.h) for four panel rows whose sums are
 * `isum` (reduce4's order): the same multiplies and subtractions per element
 * as the portable code, none fused. `pick` takes the rows' d and s out of
 * the 16 panel parameters at `d16` / `s16`. */
static inline __attribute__((always_inline)) __m512 apply4(__m512i isum, __m512 scale, __m512 zero, __m512i pick,
                                                           const float *d16, const float *s16, __m512 acc) {
    const __m512 d = _mm512_permutexvar_ps(pick, _mm512_loadu_ps(d16));
    const __m512 s = _mm512_permutexvar_ps(pick, _mm512_loadu_ps(s16));
    const __m512 t = _mm512_sub_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(zero, s));
    const __m512 u = _mm512_mul_ps(scale, d);
    return _mm512_add_ps(acc, _mm512_mul_ps(u, t));
}

/* `nb` (1, 2) blocks, the second's codes `wstride` bytes and its records
 * `rstride` floats after the first's, its y 4 columns to the right. */
static inline __attribute__((always_inline)) void tile(const uint8_t *w, size_t wstride, const float *rec,
                                                       size_t rstride, const vkl_cpu_panel *p, const uint32_t chunks,
                                                       uint32_t groups, bool first, float *y, size_t ldy,
                                                       const int nb) {
    const int8_t *a = p->q;
    /* block b's f32 sums of rows 4k..4k+3, from +0 when first (0 + u * t,
     * as the portable code adds to 0) */
    __m512 acc[2][MR / 4];
    _Pragma("GCC unroll 2")
    for (int b = 0; b < nb; b++)
        _Pragma("GCC unroll 4")
        for (int k = 0; k < MR / 4; k++)
            acc[b][k] = first ? _mm512_setzero_ps() : load_rows(y + 4 * b + 4 * k * ldy, ldy);
    /* a weight row's record value in its lane's four places */
    const __m512i by_lane = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    /* 4 rows' panel parameters (cpu_dot.h: pairs [r r r+1 r+1 | ...]) at
     * 0 2 8 10 of the 16 from row 4k's */
    const __m512i pick = _mm512_setr_epi32(0, 2, 8, 10, 0, 2, 8, 10, 0, 2, 8, 10, 0, 2, 8, 10);
    for (uint32_t g = 0; g < groups; g++, rec += 2 * VKL_CPU_HP) {
        __m512i s[2][MR];
        _Pragma("GCC unroll 2")
        for (int b = 0; b < nb; b++)
            _Pragma("GCC unroll 16")
            for (int r = 0; r < MR; r++) s[b][r] = _mm512_setzero_si512();
        for (uint32_t c0 = 0; c0 < chunks; c0 += 4) {
            const uint32_t n = chunks - c0 < 4 ? chunks - c0 : 4;
            if (n == 4) sums(w, wstride, a, 4, nb, s);
            else sums(w, wstride, a, n, nb, s);
            w += (size_t)n * VKL_CPU_HP * 16;
            a += (size_t)n * VKL_CPU_LP * MR;
        }
        _Pragma("GCC unroll 2")
        for (int b = 0; b < nb; b++) {
            const float *rb = rec + b * rstride;
            const __m512 scale = _mm512_permutexvar_ps(by_lane, _mm512_castps128_ps512(_mm_loadu_ps(rb)));
            const __m512 zero = _mm512_permutexvar_ps(by_lane, _mm512_castps128_ps512(_mm_loadu_ps(rb + VKL_CPU_HP)));
            _Pragma("GCC unroll 4")
            for (int k = 0; k < MR / 4; k++) {
                const size_t at = vkl_cpu_panel_param(MR, g, 4 * (size_t)k, 0);
                const __m512i isum = reduce4(s[b][4 * k], s[b][4 * k + 1], s[b][4 * k + 2], s[b][4 * k + 3]);
                acc[b][k] = apply4(isum, scale, zero, pick, p->d + at, p->s + at, acc[b][k]);
            }
        }
    }
    _Pragma("GCC unroll 2")
    for (int b = 0; b < nb; b++)
        _Pragma("GCC unroll 4")
        for (int k = 0; k < MR / 4; k++) {
            const __m512 rows = transpose4x4(acc[b][k]);
            float *yk = y + 4 * b + 4 * k * ldy;
            _mm_storeu_ps(yk, _mm512_castps512_ps128(rows));
            _mm_storeu_ps(yk + ldy, _mm512_extractf32x4_ps(rows, 1));
            _mm_storeu_ps(yk + 2 * ldy, _mm512_extractf32x4_ps(rows, 2));
            _mm_storeu_ps(yk + 3 * ldy, _mm512_extractf32x4_ps(rows, 3));
        }
}

/* Group 128 (4 tiles) is the models' case: its own copy, fully unrolled. */
void vkl_cpu_q4_tile_avx512vnni(const uint8_t *w, const float *rec, const vkl_cpu_panel *p, uint32_t chunks,
                                uint32_t groups, bool first, float *y, size_t ldy) {
    if (chunks == 4) tile(w, 0, rec, 0, p, 4, groups, first, y, ldy, 1);
    else tile(w, 0, rec, 0, p, chunks, groups, first, y, ldy, 1);
}

void vkl_cpu_q4_tile2_avx512vnni(const uint8_t *w, size_t wstride, const float *rec, size_t rstride,
                                 const vkl_cpu_panel *p, uint32_t chunks, uint32_t groups, bool first, float *y,
                                 size_t ldy) {
    if (chunks == 4) tile(w, wstride, rec, rstride, p, 4, groups, first, y, ldy, 2);
    else tile(w, wstride, rec, rstride, p, chunks, groups, first, y, ldy, 2);
}
