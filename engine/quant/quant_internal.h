/* Inside engine/quant: the per-format kernels behind vkl_quant_quantize /
 * vkl_quant_dequantize (arguments already checked by quant.c: shapes valid,
 * buffers sized) and the helpers they share. */
#ifndef VKL_QUANT_INTERNAL_H
#define VKL_QUANT_INTERNAL_H

#include <math.h>

#include "quant.h"

/* Packing and unpacking take the canonical and the packed buffer: both
 * must have exactly the sizes the layout says (`what`: "cpu layout"...). */
vkl_status vkl_quant_check_pack_sizes(vkl_context *ctx, const char *what, vkl_dtype dtype, uint32_t group,
                                      int64_t rows, int64_t cols, size_t packed_expected, size_t canon_bytes,
                                      size_t packed_bytes);
/* VKL_ERR_INVALID_ARGUMENT naming the first NaN/inf element as [row, col]. */
vkl_status vkl_quant_check_finite(vkl_context *ctx, const char *format, const float *src, int64_t rows,
                                  int64_t cols);
/* Smallest fp16 >= x, for finite x >= 0; 0x7C00 (inf) when x > 65504. */
uint16_t vkl_quant_f16_ceil(double x);
/* A stored fp16 scale is usable: finite and not negative (+0 allowed). */
static inline bool vkl_quant_f16_scale_ok(uint16_t d) { return !(d & 0x8000) && (d & 0x7C00) != 0x7C00; }

/* min and max of w[0..n) and 0: both 4-bit formats need 0 inside the range
 * they cover, so that w = 0 lands on a code. Compares, not fminf/fmaxf:
 * without -ffast-math those are library calls, a sixth of an import's time.
 * Like them a NaN is passed over; unlike them a -0 never replaces the
 * starting +0, which no caller can tell apart (lo = 0 is tested with ==, and
 * 0·s + b = -0·s + b). */
static inline void vkl_quant_range0(const float *w, uint32_t n, float *lo, float *hi) {
    float a = 0.0f, b = 0.0f;
    for (uint32_t i = 0; i < n; i++) {
        a = w[i] < a ? w[i] : a;
        b = w[i] > b ? w[i] : b;
    }
    *lo = a;
    *hi = b;
}

/* Whether this CPU runs the AVX2 + FMA builds of the quantizers' inner loops
 * (x86-64 only; chosen at run time, the portable loops everywhere else). */
static inline bool vkl_quant_cpu_avx2_fma(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return false;
#endif
}

/* 4-bit code i of a canonical qs array (byte i/2, low nibble for even i). */
static inline unsigned vkl_quant_nibble(const uint8_t *qs, size_t i) {
    return (qs[i >> 1] >> ((i & 1) * 4)) & 15u;
}

vkl_status vkl_e0m4_quantize(vkl_context *ctx, const float *src, int64_t rows, int64_t cols, uint32_t group,
                             uint32_t n, uint8_t *dst);
/* The same on the portable path (fast = false) or the fastest this CPU has
 * (true: what vkl_e0m4_quantize runs); the bytes must be equal, which
 * tests/quant checks. */
vkl_status vkl_e0m4_quantize_path(vkl_context *ctx, const float *src, int64_t rows, int64_t cols, uint32_t group,
                                  uint32_t n, uint8_t *dst, bool fast);
/* Header check for one block (row r, group g named in the error). */
vkl_status vkl_e0m4_check_header(vkl_context *ctx, uint16_t d, uint16_t b, int64_t r, int64_t g);

vkl_status vkl_int4_quantize(vkl_context *ctx, const float *src, int64_t rows, int64_t cols, uint32_t group,
                             uint8_t *dst);
vkl_status vkl_int4_check_header(vkl_context *ctx, uint16_t d, uint16_t z, int64_t r, int64_t g);

/* The 16 values a 4-bit block's codes stand for, once its header (d and the
 * zero code) is checked: the one place each format's dequantization lives
 * (quant.c expands blocks through it). */
typedef vkl_status (*vkl_q4_table_fn)(vkl_context *ctx, uint16_t d, uint16_t z, int64_t r, int64_t g,
                                      float table[16]);
vkl_status vkl_e0m4_table(vkl_context *ctx, uint16_t d, uint16_t b, int64_t r, int64_t g, float table[16]);
vkl_status vkl_int4_table(vkl_context *ctx, uint16_t d, uint16_t z, int64_t r, int64_t g, float table[16]);

vkl_status vkl_int8_quantize(vkl_context *ctx, const float *src, int64_t rows, int64_t cols, uint32_t group,
                             uint8_t *dst);
/* The same on the portable path or the fastest (as vkl_e0m4_quantize_path). */
vkl_status vkl_int8_quantize_path(vkl_context *ctx, const float *src, int64_t rows, int64_t cols, uint32_t group,
                                  uint8_t *dst, bool fast);
vkl_status vkl_int8_dequantize(vkl_context *ctx, const uint8_t *src, int64_t rows, int64_t cols, uint32_t group,
                               float *dst);
vkl_status vkl_int8_check_header(vkl_context *ctx, float d, int64_t r, int64_t g);

#endif
