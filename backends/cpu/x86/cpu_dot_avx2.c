/* The inner products with AVX2 (vpmaddubsw / vpmaddwd; this machine class
 * has no VNNI), FMA and F16C. Compiled with -mavx2 -mfma -mf16c and called
 * only after vkl_cpu_has_avx2(). vpmaddubsw multiplies unsigned by signed
 * bytes and adds each pair into an int16 with saturation, so each use below
 * keeps a pair's sum inside int16 and the results are exact:
 *   4-bit: codes 0..15 are the unsigned side, |pair| <= 2 * 15 * 128 = 3840;
 *          a chunk adds two pairs into each int16 lane, and up to 4 chunks
 *          add there (30720) before widening;
 *   int8:  |w| (0..128) is the unsigned side and a takes w's sign; with
 *          |a| <= 127, |pair| <= 2 * 128 * 127 = 32512. */
#include <float.h>
#include <immintrin.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "../cpu_dot.h"
#include "cpu_exp_avx2.h"

/* The group's f32 step (cpu_dot.h) on the four rows' int32 sums, as
 * separate multiplies and subtractions: -std=c11 keeps the compiler from
 * fusing them, so the bits equal the portable code's. */
static inline __m128 apply(__m128i isum, const float *scale, const float *zero, float d, int32_t s, __m128 acc) {
    __m128 t = _mm_cvtepi32_ps(isum);
    if (zero) t = _mm_sub_ps(t, _mm_mul_ps(_mm_loadu_ps(zero), _mm_set1_ps((float)s)));
    return _mm_add_ps(acc, _mm_mul_ps(_mm_mul_ps(_mm_loadu_ps(scale), _mm_set1_ps(d)), t));
}

/* Row sums of two lanes' accumulators: [r0 x4 | r1 x4], [r2 x4 | r3 x4]
 * -> r0 r1 r2 r3. */
static inline __m128i rows4(__m256i s01, __m256i s23) {
    const __m256i h = _mm256_hadd_epi32(s01, s23); /* r0 r0 r2 r2 | r1 r1 r3 r3 */
    const __m256i q = _mm256_hadd_epi32(h, h);     /* r0 r2 r0 r2 | r1 r3 r1 r3 */
    return _mm_unpacklo_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
}

/* `na` activation rows (a constant after inlining; the loops over rows are
 * unrolled so the accumulators stay in registers) against one block: the
 * weights of a chunk are unpacked once for all of them. Two weight rows a
 * 32-byte load: the AND gives rows i and i+1's elements 0..15, the shift and
 * AND their 16..31; each activation's halves are broadcast to both lanes. */
static inline __attribute__((always_inline)) void q4_rows(const uint8_t *w, const float *rec, const vkl_cpu_act *act,
                                                          const int na, uint32_t chunks, uint32_t groups, float *out) {
    const __m256i m4 = _mm256_set1_epi8(15), ones = _mm256_set1_epi16(1);
    __m128 acc[VKL_CPU_MR];
    _Pragma("GCC unroll 4")
    for (int r = 0; r < na; r++) acc[r] = _mm_loadu_ps(out + VKL_CPU_HP * r);
    for (uint32_t g = 0; g < groups; g++, rec += 2 * VKL_CPU_HP) {
        __m256i s01[VKL_CPU_MR], s23[VKL_CPU_MR];
        _Pragma("GCC unroll 4")
        for (int r = 0; r < na; r++) s01[r] = s23[r] = _mm256_setzero_si256();
        for (uint32_t c0 = 0; c0 < chunks; c0 += 4) {
            const uint32_t c1 = chunks - c0 < 4 ? chunks : c0 + 4;
            __m256i p01[VKL_CPU_MR], p23[VKL_CPU_MR];
            _Pragma("GCC unroll 4")
            for (int r = 0; r < na; r++) p01[r] = p23[r] = _mm256_setzero_si256();
            for (uint32_t c = c0; c < c1; c++, w += VKL_CPU_HP * 16) {
                const __m256i x01 = _mm256_loadu_si256((const __m256i *)w);
                const __m256i x23 = _mm256_loadu_si256((const __m256i *)(w + 32));
                const __m256i l01 = _mm256_and_si256(x01, m4), h01 = _mm256_and_si256(_mm256_srli_epi16(x01, 4), m4);
                const __m256i l23 = _mm256_and_si256(x23, m4), h23 = _mm256_and_si256(_mm256_srli_epi16(x23, 4), m4);
                _Pragma("GCC unroll 4")
                for (int r = 0; r < na; r++) {
                    const int8_t *a = act[r].q + ((size_t)g * chunks + c) * VKL_CPU_LP;
                    const __m256i lo = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)a));
                    const __m256i hi = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(a + 16)));
                    p01[r] = _mm256_add_epi16(p01[r], _mm256_maddubs_epi16(l01, lo));
                    p23[r] = _mm256_add_epi16(p23[r], _mm256_maddubs_epi16(l23, lo));
                    p01[r] = _mm256_add_epi16(p01[r], _mm256_maddubs_epi16(h01, hi));
                    p23[r] = _mm256_add_epi16(p23[r], _mm256_maddubs_epi16(h23, hi));
                }
            }
            _Pragma("GCC unroll 4")
            for (int r = 0; r < na; r++) {
                s01[r] = _mm256_add_epi32(s01[r], _mm256_madd_epi16(p01[r], ones));
                s23[r] = _mm256_add_epi32(s23[r], _mm256_madd_epi16(p23[r], ones));
            }
        }
        _Pragma("GCC unroll 4")
        for (int r = 0; r < na; r++)
            acc[r] = apply(rows4(s01[r], s23[r]), rec, rec + VKL_CPU_HP, act[r].d[g], act[r].s[g], acc[r]);
    }
    _Pragma("GCC unroll 4")
    for (int r = 0; r < na; r++) _mm_storeu_ps(out + VKL_CPU_HP * r, acc[r]);
}

/* int8: |w| is computed once a chunk for all activation rows; each row
 * takes w's sign. */
static inline __attribute__((always_inline)) void q8_rows(const int8_t *w, const float *rec, const vkl_cpu_act *act,
                                                          const int na, uint32_t chunks, uint32_t groups, float *out) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m128 acc[VKL_CPU_MR];
    _Pragma("GCC unroll 4")
    for (int r = 0; r < na; r++) acc[r] = _mm_loadu_ps(out + VKL_CPU_HP * r);
    for (uint32_t g = 0; g < groups; g++, rec += VKL_CPU_HP) {
        __m256i s[VKL_CPU_MR][VKL_CPU_HP];
        _Pragma("GCC unroll 4")
        for (int r = 0; r < na; r++)
            _Pragma("GCC unroll 4")
            for (int i = 0; i < VKL_CPU_HP; i++) s[r][i] = _mm256_setzero_si256();
        for (uint32_t c = 0; c < chunks; c++, w += VKL_CPU_HP * VKL_CPU_LP)
            _Pragma("GCC unroll 4")
            for (int i = 0; i < VKL_CPU_HP; i++) {
                const __m256i v = _mm256_loadu_si256((const __m256i *)(w + VKL_CPU_LP * i)), u = _mm256_abs_epi8(v);
                _Pragma("GCC unroll 4")
                for (int r = 0; r < na; r++) {
                    const __m256i x = _mm256_loadu_si256(
                        (const __m256i *)(act[r].q + ((size_t)g * chunks + c) * VKL_CPU_LP));
                    const __m256i p = _mm256_maddubs_epi16(u, _mm256_sign_epi8(x, v));
                    s[r][i] = _mm256_add_epi32(s[r][i], _mm256_madd_epi16(p, ones));
                }
            }
        _Pragma("GCC unroll 4")
        for (int r = 0; r < na; r++) {
            /* four rows' 8-lane sums -> r0 r1 r2 r3 */
            const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(s[r][0], s[r][1]), _mm256_hadd_epi32(s[r][2], s[r][3]));
            const __m128i v = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
            acc[r] = apply(v, rec, NULL, act[r].d[g], 0, acc[r]);
        }
    }
    _Pragma("GCC unroll 4")
    for (int r = 0; r < na; r++) _mm_storeu_ps(out + VKL_CPU_HP * r, acc[r]);
}

/* One specialization per row count, so each keeps its accumulators in registers. */
#define BY_ROWS(name, wtype)                                                                                   \
    static void name(const wtype *w, const float *rec, const vkl_cpu_act *act, uint32_t rows, uint32_t chunks, \
                     uint32_t groups, float *acc) {                                                            \
        switch (rows) {                                                                                        \
        case 1: name##_rows(w, rec, act, 1, chunks, groups, acc); break;                                       \
        case 2: name##_rows(w, rec, act, 2, chunks, groups, acc); break;                                       \
        case 3: name##_rows(w, rec, act, 3, chunks, groups, acc); break;                                       \
        default: name##_rows(w, rec, act, 4, chunks, groups, acc); break;                                      \
        }                                                                                                      \
    }
BY_ROWS(q4, uint8_t)
BY_ROWS(q8, int8_t)

static inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline __m256 load_f32(const float *w) { return _mm256_loadu_ps(w); }
static inline __m256 load_f16(const uint16_t *w) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w)); }
static inline __m256 load_bf16(const uint16_t *w) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)w)), 16));
}
static inline float tail_f32(float w) { return w; }
static inline float tail_f16(uint16_t w) { return _cvtsh_ss(w); }
static inline float tail_bf16(uint16_t w) {
    const uint32_t u = (uint32_t)w << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Two 8-lane sums hide the FMA latency; the tail is scalar. */
#define FLOAT_DOT(name, type)                                                             \
    static float name(const type *w, const float *x, size_t K) {                         \
        __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();                        \
        size_t k = 0;                                                                     \
        for (; k + 16 <= K; k += 16) {                                                    \
            s0 = _mm256_fmadd_ps(load_##name(w + k), _mm256_loadu_ps(x + k), s0);         \
            s1 = _mm256_fmadd_ps(load_##name(w + k + 8), _mm256_loadu_ps(x + k + 8), s1); \
        }                                                                                 \
        float t = hsum(_mm256_add_ps(s0, s1));                                            \
        for (; k < K; k++) t += tail_##name(w[k]) * x[k];                                 \
        return t;                                                                         \
    }

FLOAT_DOT(f32, float)
FLOAT_DOT(f16, uint16_t)
FLOAT_DOT(bf16, uint16_t)

static void axpy(float *y, float a, const float *x, size_t n) {
    const __m256 va = _mm256_set1_ps(a);
    size_t k = 0;
    for (; k + 8 <= n; k += 8) _mm256_storeu_ps(y + k, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + k), _mm256_loadu_ps(y + k)));
    for (; k < n; k++) y[k] += a * x[k];
}

/* Four 8-lane sums [s0 s1 s2 s3] reduced into out[0..3]: two hadds, then
 * the halves added. Every lane of every sum takes the same tree,
 * ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)), whichever slot it is
 * in: a key's score has the same bits in every round that reduces this way. */
static inline void store4(__m256 s0, __m256 s1, __m256 s2, __m256 s3, float *out) {
    const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(s0, s1), _mm256_hadd_ps(s2, s3));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
}

/* One key's 8-lane sum against q over K (a multiple of 8). */
static inline __m256 key_sum(const float *k, const float *q, size_t K) {
    __m256 s = _mm256_setzero_ps();
    for (size_t i = 0; i < K; i += 8) s = _mm256_fmadd_ps(_mm256_loadu_ps(k + i), _mm256_loadu_ps(q + i), s);
    return s;
}

/* K a multiple of 8: 8 keys a round while 8 are left (8 independent FMA
 * chains, where 4 left the loop waiting on the FMA's latency; dots was 7% of
 * a 512-token prefill's CPU time), then 4, then the last 1..3 as one round
 * padded with copies. Every key's score is its 8-lane sum reduced by
 * store4's tree, so it has the same bits wherever it falls among the n keys
 * (dots_rows relies on that). Otherwise one key at a time by f32. */
static void dots(const float *k, size_t stride, const float *q, size_t K, size_t n, float *out) {
    if (K % 8) {
        for (size_t t = 0; t < n; t++) out[t] = f32(k + t * stride, q, K);
        return;
    }
    size_t t = 0;
    for (; t + 8 <= n; t += 8) {
        const float *k0 = k + t * stride;
        __m256 s[8];
        _Pragma("GCC unroll 8")
        for (int r = 0; r < 8; r++) s[r] = _mm256_setzero_ps();
        for (size_t i = 0; i < K; i += 8) {
            const __m256 x = _mm256_loadu_ps(q + i);
            _Pragma("GCC unroll 8")
            for (int r = 0; r < 8; r++) s[r] = _mm256_fmadd_ps(_mm256_loadu_ps(k0 + (size_t)r * stride + i), x, s[r]);
        }
        store4(s[0], s[1], s[2], s[3], out + t);
        store4(s[4], s[5], s[6], s[7], out + t + 4);
    }
    for (; t + 4 <= n; t += 4) {
        const float *k0 = k + t * stride;
        __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
        for (size_t i = 0; i < K; i += 8) {
            const __m256 x = _mm256_loadu_ps(q + i);
            s0 = _mm256_fmadd_ps(_mm256_loadu_ps(k0 + i), x, s0);
            s1 = _mm256_fmadd_ps(_mm256_loadu_ps(k0 + stride + i), x, s1);
            s2 = _mm256_fmadd_ps(_mm256_loadu_ps(k0 + 2 * stride + i), x, s2);
            s3 = _mm256_fmadd_ps(_mm256_loadu_ps(k0 + 3 * stride + i), x, s3);
        }
        store4(s0, s1, s2, s3, out + t);
    }
    if (t < n) {
        __m256 s[3];
        for (size_t r = 0; r < 3; r++) s[r] = key_sum(k + (t + (t + r < n ? r : 0)) * stride, q, K);
        float h[4];
        store4(s[0], s[1], s[2], s[2], h);
        for (size_t r = 0; t + r < n; r++) out[t + r] = h[r];
    }
}

/* dots for 4 query rows: 2 keys a round, each key's 8 floats loaded once for
 * the 4 rows (8 accumulators, 2 key and 1 query register). Until
 * 2026-11-26 every query row streamed its keys alone, from L2 (a KV head's
 * 512 keys are 128 KiB): one key load per FMA. The same 8-lane sums and
 * tree as dots, so the same bits; other row counts and K not a multiple of
 * 8 go row by row through dots. */
static void dots_rows(const float *k, size_t stride, const float *const *q, uint32_t rows, size_t K, size_t n,
                      float *const *out) {
    if (rows != VKL_CPU_ATTN_ROWS || K % 8) {
        for (uint32_t r = 0; r < rows; r++) dots(k, stride, q[r], K, n, out[r]);
        return;
    }
    const float *q0 = q[0], *q1 = q[1], *q2 = q[2], *q3 = q[3];
    float *o0 = out[0], *o1 = out[1], *o2 = out[2], *o3 = out[3];
    size_t t = 0;
    for (; t + 2 <= n; t += 2) {
        const float *k0 = k + t * stride, *k1 = k0 + stride;
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, b0 = a0, b1 = a0, c0 = a0, c1 = a0, d0 = a0, d1 = a0;
        for (size_t i = 0; i < K; i += 8) {
            const __m256 x0 = _mm256_loadu_ps(k0 + i), x1 = _mm256_loadu_ps(k1 + i);
            __m256 y = _mm256_loadu_ps(q0 + i);
            a0 = _mm256_fmadd_ps(x0, y, a0), a1 = _mm256_fmadd_ps(x1, y, a1);
            y = _mm256_loadu_ps(q1 + i);
            b0 = _mm256_fmadd_ps(x0, y, b0), b1 = _mm256_fmadd_ps(x1, y, b1);
            y = _mm256_loadu_ps(q2 + i);
            c0 = _mm256_fmadd_ps(x0, y, c0), c1 = _mm256_fmadd_ps(x1, y, c1);
            y = _mm256_loadu_ps(q3 + i);
            d0 = _mm256_fmadd_ps(x0, y, d0), d1 = _mm256_fmadd_ps(x1, y, d1);
        }
        float h[8]; /* rows 0, 1, then 2, 3: each row's two keys side by side */
        store4(a0, a1, b0, b1, h);
        store4(c0, c1, d0, d1, h + 4);
        o0[t] = h[0], o0[t + 1] = h[1], o1[t] = h[2], o1[t + 1] = h[3];
        o2[t] = h[4], o2[t + 1] = h[5], o3[t] = h[6], o3[t + 1] = h[7];
    }
    if (t < n) {
        const float *k0 = k + t * stride;
        float h[4];
        store4(key_sum(k0, q0, K), key_sum(k0, q1, K), key_sum(k0, q2, K), key_sum(k0, q3, K), h);
        o0[t] = h[0], o1[t] = h[1], o2[t] = h[2], o3[t] = h[3];
    }
}

/* y in registers, 64 floats (8 ymm) a pass over the keys; the rest of a K
 * that is not a multiple of 8 by axpy. */
static void wsum(const float *v, size_t stride, const float *w, size_t K, size_t n, float *y) {
    size_t k0 = 0;
    while (K - k0 >= 8) {
        const size_t m = (K - k0) / 8 < 8 ? (K - k0) / 8 : 8; /* ymm registers this pass */
        __m256 acc[8];
        _Pragma("GCC unroll 8")
        for (int i = 0; i < 8; i++) acc[i] = _mm256_setzero_ps();
        for (size_t t = 0; t < n; t++) {
            if (w[t] == 0.0f) continue;
            const __m256 a = _mm256_set1_ps(w[t]);
            const float *x = v + t * stride + k0;
            if (m == 8) {
                _Pragma("GCC unroll 8")
                for (int i = 0; i < 8; i++) acc[i] = _mm256_fmadd_ps(a, _mm256_loadu_ps(x + 8 * i), acc[i]);
            } else {
                for (size_t i = 0; i < m; i++) acc[i] = _mm256_fmadd_ps(a, _mm256_loadu_ps(x + 8 * i), acc[i]);
            }
        }
        for (size_t i = 0; i < m; i++) _mm256_storeu_ps(y + k0 + 8 * i, acc[i]);
        k0 += 8 * m;
    }
    for (size_t k = k0; k < K; k++) y[k] = 0;
    for (size_t t = 0; k0 < K && t < n; t++)
        if (w[t] != 0.0f) axpy(y + k0, w[t], v + t * stride + k0, K - k0);
}

/* `c` (1 or 2) ymm of y for each of 4 rows from floats k0.. of every V row:
 * a V row's floats are loaded once for the rows whose weight is not 0; per
 * lane the FMAs of wsum in key order, so its bits. */
static inline void wsum4_pass(const float *v, size_t stride, const float *const *w, size_t n, size_t k0, int c,
                              float *const *y) {
    __m256 acc[4][2];
    _Pragma("GCC unroll 4")
    for (int r = 0; r < 4; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (size_t t = 0; t < n; t++) {
        const float a[4] = {w[0][t], w[1][t], w[2][t], w[3][t]};
        const bool all = a[0] != 0.0f && a[1] != 0.0f && a[2] != 0.0f && a[3] != 0.0f;
        if (!all && a[0] == 0.0f && a[1] == 0.0f && a[2] == 0.0f && a[3] == 0.0f) continue;
        const float *x = v + t * stride + k0;
        const __m256 x0 = _mm256_loadu_ps(x), x1 = c == 2 ? _mm256_loadu_ps(x + 8) : x0;
        _Pragma("GCC unroll 4")
        for (int r = 0; r < 4; r++) {
            if (!all && a[r] == 0.0f) continue;
            const __m256 ar = _mm256_set1_ps(a[r]);
            acc[r][0] = _mm256_fmadd_ps(ar, x0, acc[r][0]);
            if (c == 2) acc[r][1] = _mm256_fmadd_ps(ar, x1, acc[r][1]);
        }
    }
    for (int r = 0; r < 4; r++) {
        _mm256_storeu_ps(y[r] + k0, acc[r][0]);
        if (c == 2) _mm256_storeu_ps(y[r] + k0 + 8, acc[r][1]);
    }
}

/* wsum for 4 rows: 16 floats of y a row a pass (8 accumulators, 2 V and 1
 * weight register), so each V row is read from L2 once for the 4 rows where
 * wsum read it once a row; then 8; a K off the multiples of 8 ends as
 * wsum's does (axpy's scalar tail, a multiply and an add). Other row counts:
 * wsum row by row. */
static void wsum_rows(const float *v, size_t stride, const float *const *w, uint32_t rows, size_t K, size_t n,
                      float *const *y) {
    if (rows != VKL_CPU_ATTN_ROWS) {
        for (uint32_t r = 0; r < rows; r++) wsum(v, stride, w[r], K, n, y[r]);
        return;
    }
    size_t k0 = 0;
    for (; k0 + 16 <= K; k0 += 16) wsum4_pass(v, stride, w, n, k0, 2, y);
    if (k0 + 8 <= K) wsum4_pass(v, stride, w, n, k0, 1, y), k0 += 8;
    for (uint32_t r = 0; r < 4; r++) {
        for (size_t k = k0; k < K; k++) y[r][k] = 0;
        for (size_t t = 0; k0 < K && t < n; t++)
            if (w[r][t] != 0.0f) axpy(y[r] + k0, w[r][t], v + t * stride + k0, K - k0);
    }
}

/* e^d for d <= 0 in 8 lanes, within 2 ulp (cpu_exp_avx2.h). Below
 * VKL_CPU_EXP_ZERO_BELOW (-inf included): +0; NaN stays NaN. */
static inline __m256 exp_nonpositive(__m256 d) {
    const __m256 x = _mm256_max_ps(d, _mm256_set1_ps(VKL_CPU_EXP_ZERO_BELOW)); /* NaN: becomes the bound, fixed below */
    const __m256 e = vkl_exp_avx2(x);
    const __m256 zero = _mm256_cmp_ps(d, _mm256_set1_ps(VKL_CPU_EXP_ZERO_BELOW), _CMP_LT_OQ);
    const __m256 nan = _mm256_cmp_ps(d, d, _CMP_UNORD_Q);
    return _mm256_blendv_ps(_mm256_andnot_ps(zero, e), d, nan);
}

/* cpu_dot.h's mask_scores, 8 keys a round: a multiply and an add, then -inf
 * blended in where the mask is -inf; vmaxps returns its second operand when
 * the first is NaN, so a NaN score is ignored as the portable compare
 * ignores it. The last 1..7 keys as the portable code does them. */
static float mask_scores(float *x, const float *m, size_t n, float scale, bool *seen) {
    const __m256 vs = _mm256_set1_ps(scale), ninf = _mm256_set1_ps(-INFINITY);
    __m256 vmax = ninf, vseen = _mm256_setzero_ps();
    size_t t = 0;
    for (; t + 8 <= n; t += 8) {
        __m256 sc = _mm256_mul_ps(vs, _mm256_loadu_ps(x + t));
        if (m) {
            const __m256 mv = _mm256_loadu_ps(m + t);
            sc = _mm256_blendv_ps(_mm256_add_ps(sc, mv), ninf, _mm256_cmp_ps(mv, ninf, _CMP_EQ_OQ));
        }
        _mm256_storeu_ps(x + t, sc);
        vseen = _mm256_or_ps(vseen, _mm256_cmp_ps(sc, ninf, _CMP_NEQ_UQ));
        vmax = _mm256_max_ps(sc, vmax);
    }
    float lanes[8];
    _mm256_storeu_ps(lanes, vmax);
    bool tail_seen;
    float max = vkl_cpu_mask_scores_portable(x + t, m ? m + t : NULL, n - t, scale, &tail_seen);
    for (int i = 0; i < 8; i++)
        if (lanes[i] > max) max = lanes[i];
    *seen = tail_seen || _mm256_movemask_ps(vseen) != 0;
    return max;
}

/* cpu_dot.h's softmax_exp: 8 weights a round, 8 running sums. */
static float softmax_exp(float *x, size_t n, float max) {
    const __m256 m = _mm256_set1_ps(max);
    __m256 acc = _mm256_setzero_ps();
    size_t t = 0;
    for (; t + 8 <= n; t += 8) {
        const __m256 e = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(x + t), m));
        _mm256_storeu_ps(x + t, e);
        acc = _mm256_add_ps(acc, e);
    }
    float lanes[8], sum = 0;
    if (t < n) { /* the last 1..7 through a padded copy (pad: -inf, weight 0) */
        float tail[8];
        for (size_t i = 0; i < 8; i++) tail[i] = t + i < n ? x[t + i] : -INFINITY;
        const __m256 e = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(tail), m));
        _mm256_storeu_ps(tail, e);
        for (size_t i = 0; t + i < n; i++) x[t + i] = tail[i];
        acc = _mm256_add_ps(acc, e);
    }
    _mm256_storeu_ps(lanes, acc);
    for (int i = 0; i < 8; i++) sum += lanes[i];
    return sum;
}

/* cpu_dot.h's quantizer, 32 values a round: the same f32 operations as the
 * portable code in each lane (|x|, max, x * inv, + copysign(0.5), truncate),
 * so the same bytes; a NaN or inf fails the <= FLT_MAX compare. */
static void quantize(const float *x, size_t K, size_t G, int8_t *q, float *d, int32_t *sum) {
    const __m256 sign = _mm256_set1_ps(-0.0f), half = _mm256_set1_ps(0.5f), big = _mm256_set1_ps(FLT_MAX);
    const __m256i lim = _mm256_set1_epi32(127), nlim = _mm256_set1_epi32(-127);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (size_t g = 0; g < K / G; g++, x += G, q += G) {
        __m256 vmax = _mm256_setzero_ps(), ok = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
        for (size_t k = 0; k < G; k += 8) {
            const __m256 v = _mm256_andnot_ps(sign, _mm256_loadu_ps(x + k));
            ok = _mm256_and_ps(ok, _mm256_cmp_ps(v, big, _CMP_LE_OQ));
            vmax = _mm256_max_ps(vmax, v);
        }
        __m128 m = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
        m = _mm_max_ps(m, _mm_movehl_ps(m, m));
        m = _mm_max_ss(m, _mm_movehdup_ps(m));
        const float amax = _mm_cvtss_f32(m);
        const bool finite = _mm256_movemask_ps(ok) == 0xFF;
        const float inv = finite && amax > 1e-30f ? 127.0f / amax : 0.0f;
        const __m256 vinv = _mm256_set1_ps(inv);
        __m256i s = _mm256_setzero_si256();
        if (!finite) memset(q, 0, G); /* x * 0 would be NaN for a NaN or inf x */
        for (size_t k = 0; finite && k < G; k += 32) {
            __m256i c[4];
            for (int i = 0; i < 4; i++) {
                const __m256 r = _mm256_mul_ps(_mm256_loadu_ps(x + k + 8 * i), vinv);
                const __m256 t = _mm256_add_ps(r, _mm256_or_ps(_mm256_and_ps(r, sign), half));
                c[i] = _mm256_max_epi32(nlim, _mm256_min_epi32(lim, _mm256_cvttps_epi32(t)));
                s = _mm256_add_epi32(s, c[i]);
            }
            /* 4 x 8 int32 -> 32 int8 in order: the packs interleave 128-bit halves, the permute undoes it */
            const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(c[0], c[1]), _mm256_packs_epi32(c[2], c[3]));
            _mm256_storeu_si256((__m256i *)(q + k), _mm256_permutevar8x32_epi32(p, order));
        }
        __m128i t = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
        t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4E));
        t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xB1));
        d[g] = finite ? amax / 127.0f : NAN;
        sum[g] = _mm_cvtsi128_si32(t);
    }
}

/* The table, and the two that differ in prefill's GEMM tile (and the
 * AVX-512 one in prefill's attention blocks) alone */
#define AVX2_TABLE(table_name, tile, mr, tile2, drows, wrows)                                                 \
    {.name = table_name, .q4 = q4, .q4_tile = tile, .gemm_mr = mr, .q4_tile2 = tile2, .q8 = q8, .f32 = f32,      \
     .f16 = f16, .bf16 = bf16,                                                                                  \
     .axpy = axpy, .dots = dots, .wsum = wsum, .dots_rows = drows, .wsum_rows = wrows,                          \
     .quantize = quantize, .mask_scores = mask_scores, .softmax_exp = softmax_exp}
const vkl_cpu_dot vkl_cpu_dot_avx2 =
    AVX2_TABLE("avx2", vkl_cpu_q4_tile_avx2, VKL_CPU_YMM_TILE_MR, NULL, dots_rows, wsum_rows);
const vkl_cpu_dot vkl_cpu_dot_avx512vnni =
    AVX2_TABLE("avx2+avx512vnni", vkl_cpu_q4_tile_avx512vnni, VKL_CPU_ZMM_TILE_MR, vkl_cpu_q4_tile2_avx512vnni,
               vkl_cpu_dots_rows_avx512, vkl_cpu_wsum_rows_avx512);
const vkl_cpu_dot vkl_cpu_dot_avxvnni =
    AVX2_TABLE("avx2+avxvnni", vkl_cpu_q4_tile_avxvnni, VKL_CPU_YMM_TILE_MR, NULL, dots_rows, wsum_rows);
