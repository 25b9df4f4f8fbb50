/* The int8 inner products with the matrix-multiply instruction (FEAT_I8MM:
 * smmla, vmmlaq_s32) for 2..4 activation rows a call (prefill); one row
 * (decode) and everything else run the sdot table's code, which smmla's
 * 2 x 2 output would only half fill. Compiled with
 * -march=armv8.2-a+dotprod+i8mm and called only where AT_HWCAP2 lists I8MM
 * (and AT_HWCAP ASIMDDP; cpu_isa.c).
 *
 * smmla multiplies a 2 x 8 block of int8 (two rows of 8) by the transpose
 * of another and adds the 2 x 2 int32 products into one register: 32
 * multiply-adds an instruction, twice sdot's. The tile layout (cpu_dot.h)
 * keeps each weight row's 32 elements together, so the operands are made
 * in registers: zip1 / zip2 on 64-bit lanes put rows i and i+1's elements
 * 8b..8b+7 side by side (weights, once a chunk for every activation row) and
 * do the same for two activation rows. The sums are exact int32, the same
 * as the portable code's. */
#include "cpu_dot_neon.h"

/* [a's 64-bit half h, b's 64-bit half h] */
static inline int8x16_t zip_lo(int8x16_t a, int8x16_t b) {
    return vreinterpretq_s8_s64(vzip1q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b)));
}
static inline int8x16_t zip_hi(int8x16_t a, int8x16_t b) {
    return vreinterpretq_s8_s64(vzip2q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b)));
}
static inline int32x4_t zip_lo32(int32x4_t a, int32x4_t b) {
    return vreinterpretq_s32_s64(vzip1q_s64(vreinterpretq_s64_s32(a), vreinterpretq_s64_s32(b)));
}
static inline int32x4_t zip_hi32(int32x4_t a, int32x4_t b) {
    return vreinterpretq_s32_s64(vzip2q_s64(vreinterpretq_s64_s32(a), vreinterpretq_s64_s32(b)));
}

/* The 8-element blocks b = 0..3 of a row's chunk: lo's halves, then hi's. */
static inline void blocks(int8x16_t lo0, int8x16_t hi0, int8x16_t lo1, int8x16_t hi1, int8x16_t out[4]) {
    out[0] = zip_lo(lo0, lo1);
    out[1] = zip_hi(lo0, lo1);
    out[2] = zip_lo(hi0, hi1);
    out[3] = zip_hi(hi0, hi1);
}

/* `na` (2..4) activation rows in pairs; an odd last row is paired with
 * itself and its copy dropped. s01[p] = [x·w0, x·w1, y·w0, y·w1] and
 * s23[p] the same for weight rows 2, 3, for pair p = rows (x, y). Registers:
 * 16 weight blocks + 4 activation blocks + 4 accumulators. */
static inline __attribute__((always_inline)) void mmla_rows(const uint8_t *w, const float *rec, const vkl_cpu_act *act,
                                                            const int na, const int four, uint32_t chunks,
                                                            uint32_t groups, float *out) {
    enum { PAIRS = VKL_CPU_MR / 2 };
    const int np = (na + 1) / 2;
    float32x4_t acc[VKL_CPU_MR];
    _Pragma("GCC unroll 4")
    for (int r = 0; r < na; r++) acc[r] = vld1q_f32(out + VKL_CPU_HP * r);
    for (uint32_t g = 0; g < groups; g++, rec += VKL_NEON_REC_FLOATS(four)) {
        int32x4_t s01[PAIRS], s23[PAIRS];
        _Pragma("GCC unroll 2")
        for (int p = 0; p < np; p++) s01[p] = s23[p] = vdupq_n_s32(0);
        for (uint32_t c = 0; c < chunks; c++, w += VKL_NEON_TILE_BYTES(four)) {
            int8x16_t lo[VKL_CPU_HP], hi[VKL_CPU_HP], w01[4], w23[4];
            vkl_neon_tile(w, four, lo, hi);
            blocks(lo[0], hi[0], lo[1], hi[1], w01);
            blocks(lo[2], hi[2], lo[3], hi[3], w23);
            _Pragma("GCC unroll 2")
            for (int p = 0; p < np; p++) {
                const size_t at = ((size_t)g * chunks + c) * VKL_CPU_LP;
                const int8_t *x = act[2 * p].q + at, *y = act[2 * p + 1 < na ? 2 * p + 1 : 2 * p].q + at;
                int8x16_t a[4];
                blocks(vld1q_s8(x), vld1q_s8(x + 16), vld1q_s8(y), vld1q_s8(y + 16), a);
                _Pragma("GCC unroll 4")
                for (int b = 0; b < 4; b++) {
                    s01[p] = vmmlaq_s32(s01[p], a[b], w01[b]);
                    s23[p] = vmmlaq_s32(s23[p], a[b], w23[b]);
                }
            }
        }
        _Pragma("GCC unroll 4")
        for (int r = 0; r < na; r++) {
            const int p = r / 2;
            const int32x4_t isum = r % 2 ? zip_hi32(s01[p], s23[p]) : zip_lo32(s01[p], s23[p]);
            acc[r] = vkl_neon_apply(isum, rec, four ? rec + VKL_CPU_HP : NULL, act[r].d[g], four ? act[r].s[g] : 0,
                                    acc[r]);
        }
    }
    _Pragma("GCC unroll 4")
    for (int r = 0; r < na; r++) vst1q_f32(out + VKL_CPU_HP * r, acc[r]);
}

/* One activation row: sdot; 2..4: one specialization each. */
#define BY_ROWS(name, wtype, four, one)                                                                          \
    static void name(const wtype *w, const float *rec, const vkl_cpu_act *act, uint32_t rows, uint32_t chunks,   \
                     uint32_t groups, float *acc) {                                                              \
        const uint8_t *b = (const uint8_t *)w;                                                                   \
        switch (rows) {                                                                                          \
        case 1: one(w, rec, act, rows, chunks, groups, acc); break;                                              \
        case 2: mmla_rows(b, rec, act, 2, four, chunks, groups, acc); break;                                    \
        case 3: mmla_rows(b, rec, act, 3, four, chunks, groups, acc); break;                                    \
        default: mmla_rows(b, rec, act, 4, four, chunks, groups, acc); break;                                   \
        }                                                                                                        \
    }
BY_ROWS(q4, uint8_t, 1, vkl_neon_q4_sdot)
BY_ROWS(q8, int8_t, 0, vkl_neon_q8_sdot)

/* No GEMM tile (q4_tile NULL): prefill runs q4, whose 2..4-row calls are smmla's. */
const vkl_cpu_dot vkl_cpu_dot_i8mm = {.name = "neon-i8mm",
                                      .q4 = q4,
                                      .q8 = q8,
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
