/* Attention's block kernels (cpu_dot.h's dots_rows and wsum_rows) for 4
 * query rows in 512-bit registers, for the tables whose CPUs have AVX-512
 * (x86/cpu_dot_avx2.c's AVX-512 VNNI table, which AMX machines run too):
 * on the 1B model's 512-token prefill the 256-bit pair was 14% of the CPU
 * time, FMA-bound, and these do the same FMAs 16 lanes at a time.
 *
 * The same bits as AVX2's dots and wsum a row at a time (test_cpu_dot):
 *  - dots_rows: a zmm holds two rows' 8-lane sums for one key (the key's 8
 *    floats broadcast to both halves, the two queries side by side), each
 *    lane the FMA chain of the 8-lane sum AVX2 keeps, and each 8-lane half
 *    is reduced by AVX2's store4 tree ((l0 + l1) + (l2 + l3)) + ((l4 + l5)
 *    + (l6 + l7)), so every score has dots' bits;
 *  - wsum_rows: each lane of y is the chain of FMAs over the keys in order,
 *    as in wsum, 16 lanes a register where wsum has 8.
 * Other row counts and head sizes off the multiples of 8 go to AVX2's
 * kernels (the same table's), as do K's last floats below 16.
 *
 * Compiled with -mavx512f (and AVX2's flags); called only from a table
 * chosen after the probe saw AVX-512 F/BW/VL and the zmm state saved. */
#include <immintrin.h>

#include "../cpu_backend.h"

/* A query pair's floats i..i+7 side by side: per 8 floats of K, rows (0, 1)
 * then (2, 3). Head sizes up to this many floats take the packed path. */
#define MAX_HEAD 512

/* The key's floats i..i+7 in both 256-bit halves: one load, no shuffle. */
static inline __m512 key8_twice(const float *k) {
    return _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(_mm256_loadu_ps(k))));
}

/* Pairwise sums of neighbouring lanes of a and b, as AVX2's hadd orders
 * them: per 128-bit lane [a0 + a1, a2 + a3, b0 + b1, b2 + b3]. */
static inline __m512 hadd(__m512 a, __m512 b) {
    return _mm512_add_ps(_mm512_shuffle_ps(a, b, 0x88), _mm512_shuffle_ps(a, b, 0xDD));
}

/* s[t]: key t's sums for a query pair (rows 2p, 2p + 1 in the low and high
 * 256 bits). Returns, per row, the 4 keys' scores: row 2p's in the low 128
 * bits, row 2p + 1's in bits 256..383 -- each by store4's tree. */
static inline __m512 reduce4(__m512 s0, __m512 s1, __m512 s2, __m512 s3) {
    const __m512 h = hadd(hadd(s0, s1), hadd(s2, s3)); /* per 128-bit lane j: the 4 keys' sums of lanes 4j..4j+3 */
    return _mm512_add_ps(h, _mm512_shuffle_f32x4(h, h, 0xB1)); /* lane 0 + lane 1, lane 2 + lane 3 */
}

/* Scores of `keys` (4 or 8) keys at kt for the 4 rows: 2 accumulators a
 * key (row pairs), each key's 8 floats loaded once; m of them stored at
 * out[r] + t. */
static inline __attribute__((always_inline)) void score_round(const float *const *kt, int keys, const __m512 (*qp)[2],
                                                              size_t K, float *const *out, size_t t, size_t m) {
    __m512 s[8][2];
    for (int r = 0; r < keys; r++) s[r][0] = s[r][1] = _mm512_setzero_ps();
    for (size_t i = 0; i < K; i += 8) {
        const __m512 y0 = qp[i / 8][0], y1 = qp[i / 8][1];
        _Pragma("GCC unroll 8")
        for (int r = 0; r < keys; r++) {
            const __m512 x = key8_twice(kt[r] + i);
            s[r][0] = _mm512_fmadd_ps(x, y0, s[r][0]);
            s[r][1] = _mm512_fmadd_ps(x, y1, s[r][1]);
        }
    }
    for (int c = 0; c < keys; c += 4) {
        const __m512 h01 = reduce4(s[c][0], s[c + 1][0], s[c + 2][0], s[c + 3][0]),
                     h23 = reduce4(s[c][1], s[c + 1][1], s[c + 2][1], s[c + 3][1]);
        const __m128 o[4] = {_mm512_castps512_ps128(h01), _mm512_extractf32x4_ps(h01, 2),
                             _mm512_castps512_ps128(h23), _mm512_extractf32x4_ps(h23, 2)};
        if ((size_t)c + 4 <= m) {
            for (int r = 0; r < 4; r++) _mm_storeu_ps(out[r] + t + c, o[r]);
            continue;
        }
        for (int r = 0; r < 4; r++) {
            float v[4];
            _mm_storeu_ps(v, o[r]);
            for (size_t i = 0; c + i < m; i++) out[r][t + c + i] = v[i];
        }
    }
}

/* 8 keys a round (16 accumulators), then 4; the last round's missing keys
 * repeat key n - 1 (computed, not stored). */
void vkl_cpu_dots_rows_avx512(const float *k, size_t stride, const float *const *q, uint32_t rows, size_t K, size_t n,
                              float *const *out) {
    if (rows != VKL_CPU_ATTN_ROWS || K % 8 || K > MAX_HEAD) {
        vkl_cpu_dot_avx2.dots_rows(k, stride, q, rows, K, n, out);
        return;
    }
    __m512 qp[MAX_HEAD / 8][2];
    for (size_t i = 0; i < K; i += 8)
        for (int p = 0; p < 2; p++)
            qp[i / 8][p] = _mm512_castpd_ps(_mm512_insertf64x4(
                _mm512_castpd256_pd512(_mm256_castps_pd(_mm256_loadu_ps(q[2 * p] + i))),
                _mm256_castps_pd(_mm256_loadu_ps(q[2 * p + 1] + i)), 1));
    size_t t = 0;
    for (; t + 8 <= n; t += 8) {
        const float *kt[8];
        for (int r = 0; r < 8; r++) kt[r] = k + (t + (size_t)r) * stride;
        score_round(kt, 8, (const __m512(*)[2])qp, K, out, t, 8);
    }
    for (; t < n; t += 4) {
        const float *kt[4];
        for (size_t r = 0; r < 4; r++) kt[r] = k + (t + r < n ? t + r : n - 1) * stride;
        score_round(kt, 4, (const __m512(*)[2])qp, K, out, t, n - t < 4 ? n - t : 4);
    }
}

/* `c` (1..4) zmm of y for each of the 4 rows from floats k0.. of every V
 * row: a V row loaded once for the rows whose weight is not 0, a key whose
 * weight is 0 in every row not read. */
static inline __attribute__((always_inline)) void wsum4_pass(const float *v, size_t stride,
                                                             const float *const *w, size_t n, size_t k0, int c,
                                                             float *const *y) {
    __m512 acc[4][4];
    for (int r = 0; r < 4; r++)
        for (int i = 0; i < 4; i++) acc[r][i] = _mm512_setzero_ps();
    for (size_t t = 0; t < n; t++) {
        const float a[4] = {w[0][t], w[1][t], w[2][t], w[3][t]};
        const bool all = a[0] != 0.0f && a[1] != 0.0f && a[2] != 0.0f && a[3] != 0.0f;
        if (!all && a[0] == 0.0f && a[1] == 0.0f && a[2] == 0.0f && a[3] == 0.0f) continue;
        const float *x = v + t * stride + k0;
        __m512 xv[4];
        _Pragma("GCC unroll 4")
        for (int i = 0; i < 4; i++) xv[i] = i < c ? _mm512_loadu_ps(x + 16 * i) : _mm512_setzero_ps();
        _Pragma("GCC unroll 4")
        for (int r = 0; r < 4; r++) {
            if (!all && a[r] == 0.0f) continue;
            const __m512 ar = _mm512_set1_ps(a[r]);
            _Pragma("GCC unroll 4")
            for (int i = 0; i < 4; i++)
                if (i < c) acc[r][i] = _mm512_fmadd_ps(ar, xv[i], acc[r][i]);
        }
    }
    for (int r = 0; r < 4; r++)
        for (int i = 0; i < c; i++) _mm512_storeu_ps(y[r] + k0 + 16 * i, acc[r][i]);
}

void vkl_cpu_wsum_rows_avx512(const float *v, size_t stride, const float *const *w, uint32_t rows, size_t K, size_t n,
                              float *const *y) {
    if (rows != VKL_CPU_ATTN_ROWS || K < 16) {
        vkl_cpu_dot_avx2.wsum_rows(v, stride, w, rows, K, n, y);
        return;
    }
    size_t k0 = 0;
    for (; K - k0 >= 64; k0 += 64) wsum4_pass(v, stride, w, n, k0, 4, y);
    if (K - k0 >= 48) wsum4_pass(v, stride, w, n, k0, 3, y), k0 += 48;
    else if (K - k0 >= 32) wsum4_pass(v, stride, w, n, k0, 2, y), k0 += 32;
    else if (K - k0 >= 16) wsum4_pass(v, stride, w, n, k0, 1, y), k0 += 16;
    if (k0 == K) return;
    /* the last 1..15 floats: AVX2's kernel on them alone (its lanes are
     * per float too, so the same bits) */
    const float *vt = v + k0;
    float *yt[VKL_CPU_ATTN_ROWS];
    for (int r = 0; r < VKL_CPU_ATTN_ROWS; r++) yt[r] = y[r] + k0;
    vkl_cpu_dot_avx2.wsum_rows(vt, stride, w, rows, K - k0, n, yt);
}
