/* The body of prefill's 256-bit GEMM tiles (cpu_gemm_avx2.c,
 * cpu_gemm_avxvnni.c): one block of 4 weight rows (4-bit codes) against a
 * panel of MR = VKL_CPU_YMM_TILE_MR activation rows (cpu_dot.h), the
 * group's f32 steps and the stores. MR from the 16 ymm registers: 2 sums a
 * row, 2 weight registers (two rows each), the nibble mask and 1 product
 * register: 2 * 6 + 4 = 16, the activation read as a broadcast load (at 4
 * rows the unpacking is a third more per product; 8 rows spill). The
 * includer defines MR as VKL_CPU_YMM_TILE_MR and PRODUCT(acc, w, v): acc
 * plus the products of weight codes w (unsigned) by activation codes v,
 * its instruction set's part, and after including,
 *   sums(w, a, n, s01, s23): the int32 sums of n (1..4) tiles added into
 *   s01[r] (weight rows 0, 1 of panel row r, a 128-bit lane each) and
 *   s23[r] (rows 2, 3), 4 partial sums a lane. */
#ifndef VKL_CPU_GEMM_YMM_H
#define VKL_CPU_GEMM_YMM_H

/* PRODUCT of every (tile c < n, half, panel row r) into acc01[r] (weight
 * rows 0, 1) and acc23[r] (rows 2, 3). Each half of a tile (codes 0..15 by
 * AND, 16..31 by shift and AND) meets every row before the next half is
 * unpacked, so 2 weight registers are live. */
static inline __attribute__((always_inline)) void products(const uint8_t *w, const int8_t *a, const uint32_t n,
                                                           __m256i *acc01, __m256i *acc23) {
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
                acc01[r] = PRODUCT(acc01[r], w01, v);
                acc23[r] = PRODUCT(acc23[r], w23, v);
                /* an empty asm: the compiler keeps these in this order
                 * instead of computing every product first (which spills) */
                __asm__("" : "+x"(acc01[r]), "+x"(acc23[r]));
            }
        }
    }
}

/* defined by the includer, after this header (it may call `products`) */
static inline __attribute__((always_inline)) void sums(const uint8_t *w, const int8_t *a, uint32_t n, __m256i *s01,
                                                       __m256i *s23);

/* The group's f32 step (cpu_dot.h) for two panel rows a = r, b = r + 1 at
 * once: the same multiplies and subtractions per element as the portable
 * code, none fused. The int32 sums are reduced in-lane only (unpack and add:
 * single-operation shuffles, where vphaddd is several and the vpermd after
 * it crossed lanes), which leaves them in the order [a0 a2 b0 b2 | a1 a3 b1
 * b3] (weight rows 0..3); the f32 step runs in that order, against the
 * weights' scale and zero put in it once a group (`scale`, `zero`) and the
 * panel's d8 / s8 laid out in it (cpu_dot.h), and the sums go back to row
 * order once a tile call (`to_rows`). */
static inline __attribute__((always_inline)) __m256 apply2(__m256i s01a, __m256i s23a, __m256i s01b, __m256i s23b,
                                                           __m256 scale, __m256 zero, const float *d8,
                                                           const float *s8, __m256 acc) {
    /* a: weight rows [0 2 0 2 | 1 3 1 3] of panel row a, each lane two of a
     * row's four partial sums (b the same); isum: all four, [a0 a2 b0 b2 | a1 a3 b1 b3] */
    const __m256i a = _mm256_add_epi32(_mm256_unpacklo_epi32(s01a, s23a), _mm256_unpackhi_epi32(s01a, s23a));
    const __m256i b = _mm256_add_epi32(_mm256_unpacklo_epi32(s01b, s23b), _mm256_unpackhi_epi32(s01b, s23b));
    const __m256i isum = _mm256_add_epi32(_mm256_unpacklo_epi64(a, b), _mm256_unpackhi_epi64(a, b));
    const __m256 t = _mm256_sub_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(zero, _mm256_loadu_ps(s8)));
    const __m256 u = _mm256_mul_ps(scale, _mm256_loadu_ps(d8));
    return _mm256_add_ps(acc, _mm256_mul_ps(u, t));
}

/* [a0 a1 a2 a3 | b0 b1 b2 b3] (two rows of y) into the f32 step's order, and back */
static inline __attribute__((always_inline)) __m256 to_step(__m256 v) {
    return _mm256_permutevar8x32_ps(v, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
}
static inline __attribute__((always_inline)) __m256 to_rows(__m256 v) {
    return _mm256_permutevar8x32_ps(v, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

static inline __attribute__((always_inline)) void tile(const uint8_t *w, const float *rec, const vkl_cpu_panel *p,
                                                       const uint32_t chunks, uint32_t groups, bool first, float *y,
                                                       size_t ldy) {
    const int8_t *a = p->q;
    /* rows 2k and 2k + 1 of y in the f32 step's order; from +0 when first
     * (0 + u * t, as the portable code adds to 0: a -0 product gives +0) */
    __m256 acc[MR / 2];
    _Pragma("GCC unroll 4")
    for (int k = 0; k < MR / 2; k++)
        acc[k] = first ? _mm256_setzero_ps() : to_step(_mm256_loadu2_m128(y + (2 * k + 1) * ldy, y + 2 * k * ldy));
    const __m256i step_order = _mm256_setr_epi32(0, 2, 0, 2, 1, 3, 1, 3);
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
        /* the 4 weight rows' scale and zero in the step's order, for every pair of panel rows */
        const __m256 scale = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(rec)), step_order);
        const __m256 zero = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(rec + VKL_CPU_HP)), step_order);
        _Pragma("GCC unroll 4")
        for (int r = 0; r < MR; r += 2) {
            const size_t at = vkl_cpu_panel_param(MR, g, (size_t)r, 0);
            acc[r / 2] = apply2(s01[r], s23[r], s01[r + 1], s23[r + 1], scale, zero, p->d + at, p->s + at, acc[r / 2]);
        }
    }
    _Pragma("GCC unroll 4")
    for (int k = 0; k < MR / 2; k++) _mm256_storeu2_m128(y + (2 * k + 1) * ldy, y + 2 * k * ldy, to_rows(acc[k]));
}

#endif
