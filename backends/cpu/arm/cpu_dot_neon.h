/* What the NEON kernels (cpu_dot_neon.c: sdot; cpu_dot_i8mm.c: smmla)
 * share: a weight tile read into registers and the group's f32 step. A
 * tile of either width comes out as the same thing, each of its 4 rows as
 * elements 0..15 (lo) and 16..31 (hi) in signed bytes, so one kernel body
 * serves 4-bit and int8 weights. Codes 0..15 and int8 values (-128 included)
 * are all valid signed bytes: sdot and smmla multiply signed by signed into
 * int32 lanes and nothing saturates, so no range rule applies here. */
#ifndef VKL_CPU_DOT_NEON_H
#define VKL_CPU_DOT_NEON_H

#include <arm_neon.h>

#include "../cpu_dot.h"

/* Bytes of one tile and floats of one group's record (cpu_dot.h). */
#define VKL_NEON_TILE_BYTES(four) ((four) ? VKL_CPU_HP * VKL_CPU_LP / 2 : VKL_CPU_HP * VKL_CPU_LP)
#define VKL_NEON_REC_FLOATS(four) ((four) ? 2 * VKL_CPU_HP : VKL_CPU_HP)

/* 4-bit: row i's 16 bytes hold codes j (low nibble) and 16 + j (high);
 * int8: row i's 32 bytes in order. */
static inline __attribute__((always_inline)) void vkl_neon_tile(const uint8_t *w, const int four,
                                                                int8x16_t lo[VKL_CPU_HP], int8x16_t hi[VKL_CPU_HP]) {
    if (four) {
        const uint8x16_t m4 = vdupq_n_u8(15);
        for (int i = 0; i < VKL_CPU_HP; i++) {
            const uint8x16_t b = vld1q_u8(w + 16 * i);
            lo[i] = vreinterpretq_s8_u8(vandq_u8(b, m4));
            hi[i] = vreinterpretq_s8_u8(vshrq_n_u8(b, 4));
        }
    } else {
        for (int i = 0; i < VKL_CPU_HP; i++) {
            lo[i] = vld1q_s8((const int8_t *)w + VKL_CPU_LP * i);
            hi[i] = vld1q_s8((const int8_t *)w + VKL_CPU_LP * i + 16);
        }
    }
}

/* The group's f32 step (cpu_dot.h) on the four rows' int32 sums: separate
 * multiplies, subtractions and adds (-std=c11 leaves -ffp-contract off, so
 * none becomes an fmla) and vcvtq rounds to nearest as C's conversion does:
 * the portable code's bits. zero is NULL for int8 weights. */
static inline float32x4_t vkl_neon_apply(int32x4_t isum, const float *scale, const float *zero, float d, int32_t s,
                                         float32x4_t acc) {
    float32x4_t t = vcvtq_f32_s32(isum);
    if (zero) t = vsubq_f32(t, vmulq_n_f32(vld1q_f32(zero), (float)s));
    return vaddq_f32(acc, vmulq_f32(vmulq_n_f32(vld1q_f32(scale), d), t));
}

/* The dotprod file's functions, which the i8mm table shares (decode's
 * single activation row and everything that is not an int8 product). */
void vkl_neon_q4_sdot(const uint8_t *w, const float *rec, const vkl_cpu_act *act, uint32_t rows, uint32_t chunks,
                      uint32_t groups, float *acc);
void vkl_neon_q8_sdot(const int8_t *w, const float *rec, const vkl_cpu_act *act, uint32_t rows, uint32_t chunks,
                      uint32_t groups, float *acc);
float vkl_neon_f32(const float *w, const float *x, size_t K);
float vkl_neon_f16(const uint16_t *w, const float *x, size_t K);
float vkl_neon_bf16(const uint16_t *w, const float *x, size_t K);
void vkl_neon_axpy(float *y, float a, const float *x, size_t n);
void vkl_neon_quantize(const float *x, size_t K, size_t G, int8_t *q, float *d, int32_t *s);
void vkl_neon_dots(const float *k, size_t stride, const float *q, size_t K, size_t n, float *out);
void vkl_neon_wsum(const float *v, size_t stride, const float *w, size_t K, size_t n, float *y);
void vkl_neon_dots_rows(const float *k, size_t stride, const float *const *q, uint32_t rows, size_t K, size_t n,
                        float *const *out);
void vkl_neon_wsum_rows(const float *v, size_t stride, const float *const *w, uint32_t rows, size_t K, size_t n,
                        float *const *y);

#endif
