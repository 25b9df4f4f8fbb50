/* The inner products with NEON and the dot-product instructions
 * (FEAT_DotProd: sdot, vdotq_s32). Compiled with -march=armv8.2-a+dotprod
 * and called only where AT_HWCAP lists ASIMDDP (cpu_isa.c). sdot adds four
 * int8 x int8 products into each int32 lane, so a weight row's 32 elements
 * of a chunk take two sdot into one accumulator, whose four lanes are added
 * at the end of the group: the exact int32 sums of the portable code. */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "../../../engine/dtype.h"
#include "cpu_dot_neon.h"

/* `na` activation rows (a constant after inlining, so the loops over rows
 * unroll and the 4 x na accumulators stay in registers: 16 + 8 for the
 * tile + 2 for an activation chunk of the 32 vector registers) against one
 * block, 4-bit (four) or int8 weights; each tile is read and unpacked once
 * for all the rows. */
static inline __attribute__((always_inline)) void dot_rows(const uint8_t *w, const float *rec, const vkl_cpu_act *act,
                                                           const int na, const int four, uint32_t chunks,
                                                           uint32_t groups, float *out) {
    float32x4_t acc[VKL_CPU_MR];
    _Pragma("GCC unroll 4")
    for (int r = 0; r < na; r++) acc[r] = vld1q_f32(out + VKL_CPU_HP * r);
    for (uint32_t g = 0; g < groups; g++, rec += VKL_NEON_REC_FLOATS(four)) {
        int32x4_t s[VKL_CPU_MR][VKL_CPU_HP];
        _Pragma("GCC unroll 4")
        for (int r = 0; r < na; r++)
            _Pragma("GCC unroll 4")
            for (int i = 0; i < VKL_CPU_HP; i++) s[r][i] = vdupq_n_s32(0);
        for (uint32_t c = 0; c < chunks; c++, w += VKL_NEON_TILE_BYTES(four)) {
            int8x16_t lo[VKL_CPU_HP], hi[VKL_CPU_HP];
            vkl_neon_tile(w, four, lo, hi);
            _Pragma("GCC unroll 4")
            for (int r = 0; r < na; r++) {
                const int8_t *a = act[r].q + ((size_t)g * chunks + c) * VKL_CPU_LP;
                const int8x16_t alo = vld1q_s8(a), ahi = vld1q_s8(a + 16);
                _Pragma("GCC unroll 4")
                for (int i = 0; i < VKL_CPU_HP; i++) s[r][i] = vdotq_s32(vdotq_s32(s[r][i], lo[i], alo), hi[i], ahi);
            }
        }
        _Pragma("GCC unroll 4")
        for (int r = 0; r < na; r++) {
            /* each row's four lanes -> r0 r1 r2 r3 */
            const int32x4_t isum = vpaddq_s32(vpaddq_s32(s[r][0], s[r][1]), vpaddq_s32(s[r][2], s[r][3]));
            acc[r] = vkl_neon_apply(isum, rec, four ? rec + VKL_CPU_HP : NULL, act[r].d[g], four ? act[r].s[g] : 0,
                                    acc[r]);
        }
    }
    _Pragma("GCC unroll 4")
    for (int r = 0; r < na; r++) vst1q_f32(out + VKL_CPU_HP * r, acc[r]);
}

/* One specialization per row count, so each keeps its accumulators in registers. */
#define BY_ROWS(name, wtype, four)                                                                                \
    void name(const wtype *w, const float *rec, const vkl_cpu_act *act, uint32_t rows, uint32_t chunks,           \
              uint32_t groups, float *acc) {                                                                      \
        const uint8_t *b = (const uint8_t *)w;                                                                    \
        switch (rows) {                                                                                           \
        case 1: dot_rows(b, rec, act, 1, four, chunks, groups, acc); break;                                      \
        case 2: dot_rows(b, rec, act, 2, four, chunks, groups, acc); break;                                      \
        case 3: dot_rows(b, rec, act, 3, four, chunks, groups, acc); break;                                      \
        default: dot_rows(b, rec, act, 4, four, chunks, groups, acc); break;                                     \
        }                                                                                                         \
    }
BY_ROWS(vkl_neon_q4_sdot, uint8_t, 1)
BY_ROWS(vkl_neon_q8_sdot, int8_t, 0)

static inline float32x4_t load_f32(const float *w) { return vld1q_f32(w); }
static inline float32x4_t load_f16(const uint16_t *w) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(w))); }
static inline float32x4_t load_bf16(const uint16_t *w) { return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(w), 16)); }
static inline float tail_f32(float w) { return w; }

/* Two 4-lane sums hide the fmla latency; the tail is scalar. */
#define FLOAT_DOT(name, type, tail)                                                  \
    float vkl_neon_##name(const type *w, const float *x, size_t K) {                \
        float32x4_t s0 = vdupq_n_f32(0), s1 = vdupq_n_f32(0);                        \
        size_t k = 0;                                                                \
        for (; k + 8 <= K; k += 8) {                                                 \
            s0 = vfmaq_f32(s0, load_##name(w + k), vld1q_f32(x + k));                \
            s1 = vfmaq_f32(s1, load_##name(w + k + 4), vld1q_f32(x + k + 4));        \
        }                                                                            \
        float t = vaddvq_f32(vaddq_f32(s0, s1));                                     \
        for (; k < K; k++) t += tail(w[k]) * x[k];                                   \
        return t;                                                                    \
    }

FLOAT_DOT(f32, float, tail_f32)
FLOAT_DOT(f16, uint16_t, vkl_f16_to_f32)
FLOAT_DOT(bf16, uint16_t, vkl_bf16_to_f32)

void vkl_neon_axpy(float *y, float a, const float *x, size_t n) {
    size_t k = 0;
    for (; k + 4 <= n; k += 4) vst1q_f32(y + k, vfmaq_n_f32(vld1q_f32(y + k), vld1q_f32(x + k), a));
    for (; k < n; k++) y[k] += a * x[k];
}

/* cpu_dot.h's quantizer, 16 values a round: the same f32 operations as the
 * portable code in each lane (|x|, max, x * inv, + copysign(0.5), truncate),
 * so the same bytes; a NaN or inf fails the <= FLT_MAX compare. (A -0.0
 * product gets -0.5 here and +0.5 there: both truncate to 0.) */
void vkl_neon_quantize(const float *x, size_t K, size_t G, int8_t *q, float *d, int32_t *sum) {
    const float32x4_t big = vdupq_n_f32(FLT_MAX), half = vdupq_n_f32(0.5f);
    const uint32x4_t sign = vdupq_n_u32(0x80000000u);
    const int32x4_t lim = vdupq_n_s32(127), nlim = vdupq_n_s32(-127);
    for (size_t g = 0; g < K / G; g++, x += G, q += G) {
        float32x4_t vmax = vdupq_n_f32(0);
        uint32x4_t ok = vdupq_n_u32(~0u);
        for (size_t k = 0; k < G; k += 4) {
            const float32x4_t v = vabsq_f32(vld1q_f32(x + k));
            ok = vandq_u32(ok, vcleq_f32(v, big));
            vmax = vmaxq_f32(vmax, v);
        }
        const float amax = vmaxvq_f32(vmax); /* used only when every lane is finite */
        const bool finite = vminvq_u32(ok) != 0;
        const float inv = finite && amax > 1e-30f ? 127.0f / amax : 0.0f;
        int32x4_t s = vdupq_n_s32(0);
        if (!finite) memset(q, 0, G); /* x * 0 would be NaN for a NaN or inf x */
        for (size_t k = 0; finite && k < G; k += 16) {
            int32x4_t c[4];
            for (int i = 0; i < 4; i++) {
                const float32x4_t r = vmulq_n_f32(vld1q_f32(x + k + 4 * i), inv);
                const float32x4_t t = vaddq_f32(r, vbslq_f32(sign, r, half));
                c[i] = vmaxq_s32(nlim, vminq_s32(lim, vcvtq_s32_f32(t)));
                s = vaddq_s32(s, c[i]);
            }
            const int16x8_t h0 = vcombine_s16(vmovn_s32(c[0]), vmovn_s32(c[1]));
            const int16x8_t h1 = vcombine_s16(vmovn_s32(c[2]), vmovn_s32(c[3]));
            vst1q_s8(q + k, vcombine_s8(vmovn_s16(h0), vmovn_s16(h1)));
        }
        d[g] = finite ? amax / 127.0f : NAN;
        sum[g] = vaddvq_s32(s);
    }
}

/* Attention's key loops: the float dot and axpy above, key by key. */
void vkl_neon_dots(const float *k, size_t stride, const float *q, size_t K, size_t n, float *out) {
    for (size_t t = 0; t < n; t++) out[t] = vkl_neon_f32(k + t * stride, q, K);
}

void vkl_neon_wsum(const float *v, size_t stride, const float *w, size_t K, size_t n, float *y) {
    for (size_t k = 0; k < K; k++) y[k] = 0;
    for (size_t t = 0; t < n; t++)
        if (w[t] != 0.0f) vkl_neon_axpy(y, w[t], v + t * stride, K);
}

/* The scalar end of vkl_neon_f32 for a K off the multiples of 8. */
static inline float f32_tail(float t, const float *w, const float *x, size_t k, size_t K) {
    for (; k < K; k++) t += w[k] * x[k];
    return t;
}

/* vkl_neon_dots for 4 query rows: 2 keys a round, each key's floats loaded
 * once for the 4 rows (16 accumulators: vkl_neon_f32's two sums for each
 * row and key, 4 key and 2 query registers of the 32), each sum ended as
 * vkl_neon_f32 ends it, so its bits. An odd last key and other row counts
 * go through vkl_neon_f32. */
void vkl_neon_dots_rows(const float *k, size_t stride, const float *const *q, uint32_t rows, size_t K, size_t n,
                        float *const *out) {
    size_t t = 0;
    if (rows == VKL_CPU_ATTN_ROWS) {
        for (; t + 2 <= n; t += 2) {
            const float *k0 = k + t * stride, *k1 = k0 + stride;
            float32x4_t s[4][2][2];
            for (int r = 0; r < 4; r++) s[r][0][0] = s[r][0][1] = s[r][1][0] = s[r][1][1] = vdupq_n_f32(0);
            size_t i = 0;
            for (; i + 8 <= K; i += 8) {
                const float32x4_t a0 = vld1q_f32(k0 + i), a1 = vld1q_f32(k0 + i + 4);
                const float32x4_t b0 = vld1q_f32(k1 + i), b1 = vld1q_f32(k1 + i + 4);
                _Pragma("GCC unroll 4")
                for (int r = 0; r < 4; r++) {
                    const float32x4_t x0 = vld1q_f32(q[r] + i), x1 = vld1q_f32(q[r] + i + 4);
                    s[r][0][0] = vfmaq_f32(s[r][0][0], a0, x0), s[r][0][1] = vfmaq_f32(s[r][0][1], a1, x1);
                    s[r][1][0] = vfmaq_f32(s[r][1][0], b0, x0), s[r][1][1] = vfmaq_f32(s[r][1][1], b1, x1);
                }
            }
            for (int r = 0; r < 4; r++) {
                out[r][t] = f32_tail(vaddvq_f32(vaddq_f32(s[r][0][0], s[r][0][1])), k0, q[r], i, K);
                out[r][t + 1] = f32_tail(vaddvq_f32(vaddq_f32(s[r][1][0], s[r][1][1])), k1, q[r], i, K);
            }
        }
    }
    for (uint32_t r = 0; r < rows; r++)
        for (size_t u = t; u < n; u++) out[r][u] = vkl_neon_f32(k + u * stride, q[r], K);
}

/* `c` (1..4) registers of y from float k0 on for each of 4 rows: a V row's
 * floats loaded once for the rows whose weight is not 0, per lane the fmla
 * of vkl_neon_axpy in key order, so vkl_neon_wsum's bits. */
static inline void wsum4_pass(const float *v, size_t stride, const float *const *w, size_t n, size_t k0, int c,
                              float *const *y) {
    float32x4_t acc[4][4];
    for (int r = 0; r < 4; r++)
        for (int i = 0; i < 4; i++) acc[r][i] = vdupq_n_f32(0);
    for (size_t t = 0; t < n; t++) {
        const float a[4] = {w[0][t], w[1][t], w[2][t], w[3][t]};
        if (a[0] == 0.0f && a[1] == 0.0f && a[2] == 0.0f && a[3] == 0.0f) continue;
        const float *x = v + t * stride + k0;
        float32x4_t xv[4];
        for (int i = 0; i < c; i++) xv[i] = vld1q_f32(x + 4 * i);
        _Pragma("GCC unroll 4")
        for (int r = 0; r < 4; r++) {
            if (a[r] == 0.0f) continue;
            for (int i = 0; i < c; i++) acc[r][i] = vfmaq_n_f32(acc[r][i], xv[i], a[r]);
        }
    }
    for (int r = 0; r < 4; r++)
        for (int i = 0; i < c; i++) vst1q_f32(y[r] + k0 + 4 * i, acc[r][i]);
}

/* vkl_neon_wsum for 4 rows: 16 floats of y a row a pass (16 accumulators,
 * 4 V registers), so each V row is read once for the 4 rows where
 * vkl_neon_wsum read it once a row; a K off the multiples of 4 ends as
 * vkl_neon_axpy does (a multiply and an add, key by key). Other row
 * counts: vkl_neon_wsum row by row. */
void vkl_neon_wsum_rows(const float *v, size_t stride, const float *const *w, uint32_t rows, size_t K, size_t n,
                        float *const *y) {
    if (rows != VKL_CPU_ATTN_ROWS) {
        for (uint32_t r = 0; r < rows; r++) vkl_neon_wsum(v, stride, w[r], K, n, y[r]);
        return;
    }
    size_t k0 = 0;
    for (; k0 + 16 <= K; k0 += 16) wsum4_pass(v, stride, w, n, k0, 4, y);
    if (k0 + 4 <= K) {
        const int c = (int)((K - k0) / 4);
        wsum4_pass(v, stride, w, n, k0, c, y);
        k0 += 4 * (size_t)c;
    }
    for (uint32_t r = 0; r < 4; r++) {
        for (size_t k = k0; k < K; k++) y[r][k] = 0;
        for (size_t t = 0; k0 < K && t < n; t++)
            if (w[r][t] != 0.0f) vkl_neon_axpy(y[r] + k0, w[r][t], v + t * stride + k0, K - k0);
    }
}

/* No GEMM tile (q4_tile NULL): prefill runs q4 four rows a call. */
const vkl_cpu_dot vkl_cpu_dot_neon = {.name = "neon-dotprod",
                                      .q4 = vkl_neon_q4_sdot,
                                      .q8 = vkl_neon_q8_sdot,
                                      .f32 = vkl_neon_f32,
                                      .f16 = vkl_neon_f16,
                                      .bf16 = vkl_neon_bf16,
                                      .axpy = vkl_neon_axpy,
                                      .dots = vkl_neon_dots,
                                      .wsum = vkl_neon_wsum,
                                      .dots_rows = vkl_neon_dots_rows,
                                      .wsum_rows = vkl_neon_wsum_rows,
                                      .quantize = vkl_neon_quantize,
                                      .mask_scores = vkl_cpu_mask_scores_portable};
