/* E0M4 (Transformer-Lite §2.3): reference quantize and dequantize of the
 * canonical blocks. A 4-bit code is the top four fp16 fraction bits of a
 * value whose sign and exponent are fixed, so dequantizing is two bit ops.
 *
 * Quantize one group w0[0..group) (n = 1 or 2, EXP = fp16 bits of 2^n,
 * Δ = 2^(n-4) the code spacing, codes c(q) = 2^n + q·Δ, eps = one fp16 ulp
 * = Δ/64):
 *   1. lo = min(0, min w0), hi = max(0, max w0) — the range holds 0.
 *   2. Scale: s maps [lo, hi] onto [2^n, 2^(n+1) − eps], i.e. s·(hi − lo) =
 *      (16 − 1/64)·Δ. Blocks store d = 1/s (dequantizing multiplies), so d =
 *      the smallest fp16 >= (hi − lo) / ((16 − 1/64)·Δ) and s = 1.0f / d.
 *   3. Bias: b = fmaf(−lo, s, 2^n) (lo lands on 2^n) rounded to fp16 and
 *      kept in [EXP, EXP | 0x3FF]; then its fraction bits below the top four
 *      are zeroed (b &= 0xFFC0), so b = c(q0) is a code and w0 = 0 maps onto
 *      it exactly. Zeroing lowers b by t in [0, Δ): every w1 moves down by t.
 *   4. Per element: w1 = fmaf(w0, s, b) in f32, rounded to fp16 (RNE); its
 *      bits are clamped into [EXP, EXP | 0x3FF] — elements within t of lo
 *      fall below 2^n after step 3 and become code 0; values within an f32
 *      rounding of the top stay below 2^(n+1) — then y1 = bits 9..6,
 *      y2 = bit 5, q = min(y1 + y2, 15).
 *   All-zero group: d = 0, b = EXP, every q = 0.
 * This reproduces the paper's Table 2 ratio on Gaussian groups of 128
 * (MAE E0M4/int4 = 0.954 here, 0.955 there). Fitting s to the zeroed b
 * instead, so that no element needs the clamp, costs up to a code step of
 * range and measures 0.983 (docs/quant.md).
 *
 * Dequantize (the exact f32 reference; no rounding occurs, since w1 − b is
 * (q − q0)·Δ, exact by Sterbenz, and a 5-bit times an 11-bit significand
 * fits f32):
 *   w1 = half(EXP | q << 6);   w0 = (w1 − b) · d   (EXP = b & 0xFC00)
 * In a matmul, one multiply-add per group: Σ x·w0 = d·Σ x·w1 − (b·d)·Σ x, or
 * per element fma(w1, d, −b·d), which in f32 gives the same bits (w1·d and
 * b·d are exact in f32, and so is their difference).
 *
 * Shader form, with the GPU layout of pack_gpu.c (a u32 word x holds
 * elements 2s and 2s+1 in bits 4s..4s+3 and 16+4s..19+4s, s = 0..3), two
 * codes become two fp16 values with one shift, one AND, one OR — the
 * paper's "as_half(EXP | q << 6)", done two lanes at a time:
 *   const uint EXP2 = EXP * 0x00010001u;            // EXP in both halves
 *   GLSL:   vec2  w1 = unpackHalf2x16((((x >> (4u * s)) << 6) & 0x03C003C0u) | EXP2);
 *           (with s a constant the two shifts are one: s = 0..3 gives
 *            x << 6, x << 2, x >> 2, x >> 6)
 *           vec2  w0 = (w1 - b) * d;        // f32: bit-exact with this file
 *   f16:    f16vec2 w1 = unpackFloat2x16(...same...);  // EXT_shader_explicit_arithmetic_types
 *   OpenCL: half2 w1 = as_half2((((x >> (4 * s)) << 6) & 0x03C003C0u) | EXP2);
 * (tests/quant/test_quant.c runs exactly this expression on packed bytes.)
 * (in f16 arithmetic w1 − b is still exact; the product rounds once.) */
#include <math.h>
#include <string.h>

#include "quant_internal.h"

#define E0M4_SPAN (16.0 - 1.0 / 64.0) /* (2^(n+1) − eps − 2^n) / Δ */

/* fp16 bits of w1 = x·s + bias, kept inside [EXP, EXP | 0x3FF]. */
static uint16_t w1_bits(float x, float s, float bias, uint16_t exp) {
    float w1 = fmaf(x, s, bias);
    uint16_t h = w1 >= vkl_f16_to_f32(exp) ? vkl_f32_to_f16(w1) : exp;
    return h > (exp | 0x3FF) ? (uint16_t)(exp | 0x3FF) : h;
}

static vkl_status quantize_group(vkl_context *ctx, const float *w, uint32_t group, uint32_t n, uint8_t *blk,
                                 int64_t r, int64_t g) {
    const uint16_t exp = n == 1 ? VKL_E0M4_EXP_N1 : VKL_E0M4_EXP_N2;
    uint8_t *qs = blk + VKL_Q4_HEADER_BYTES;
    memset(qs, 0, group / 2);
    float lo, hi;
    vkl_quant_range0(w, group, &lo, &hi);
    if (lo == 0.0f && hi == 0.0f) {
        vkl_quant_wr16(blk, 0);
        vkl_quant_wr16(blk + 2, exp);
        return VKL_OK;
    }
    const uint16_t d = vkl_quant_f16_ceil(((double)hi - (double)lo) / (E0M4_SPAN * ldexp(1.0, (int)n - 4)));
    if (d >= 0x7C00)
        return vkl_fail(ctx, VKL_ERR_UNSUPPORTED,
                        "e0m4: group (row %lld, group %lld) spans [%g, %g]; its scale does not fit fp16",
                        (long long)r, (long long)g, (double)lo, (double)hi);
    const float s = 1.0f / vkl_f16_to_f32(d);
    /* lo lands on 2^n, so 0 on 2^n − lo·s; zeroing the low bits makes it a code */
    const uint16_t b = (uint16_t)(w1_bits(-lo, s, vkl_f16_to_f32(exp), exp) & 0xFFC0);
    const float bf = vkl_f16_to_f32(b);
    for (uint32_t i = 0; i < group; i++) {
        uint16_t h = w1_bits(w[i], s, bf, exp);
        unsigned y1 = (h >> 6) & 15u, y2 = (h >> 5) & 1u;
        unsigned q = y1 + y2 > 15u ? 15u : y1 + y2;
        qs[i / 2] |= (uint8_t)(q << (4 * (i & 1)));
    }
    vkl_quant_wr16(blk, d);
    vkl_quant_wr16(blk + 2, b);
    return VKL_OK;
}

vkl_status vkl_e0m4_quantize(vkl_context *ctx, const float *src, int64_t rows, int64_t cols, uint32_t group,
                             uint32_t n, uint8_t *dst) {
    const size_t block = vkl_quant_block_bytes(VKL_DTYPE_Q_E0M4, group);
    const int64_t groups = cols / group;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t g = 0; g < groups; g++) {
            vkl_status st = quantize_group(ctx, src + r * cols + g * group, group, n,
                                           dst + (size_t)(r * groups + g) * block, r, g);
            if (st) return st;
        }
    return VKL_OK;
}

vkl_status vkl_e0m4_check_header(vkl_context *ctx, uint16_t d, uint16_t b, int64_t r, int64_t g) {
    if (!vkl_quant_f16_scale_ok(d))
        return vkl_fail(ctx, VKL_ERR_FORMAT, "e0m4 block (row %lld, group %lld): scale 0x%04x is not a finite fp16 >= 0",
                        (long long)r, (long long)g, d);
    uint16_t exp = b & 0xFC00;
    if ((b & 0x3F) || (exp != VKL_E0M4_EXP_N1 && exp != VKL_E0M4_EXP_N2))
        return vkl_fail(ctx, VKL_ERR_FORMAT,
                        "e0m4 block (row %lld, group %lld): bias 0x%04x is not a code of [2,4) or [4,8)",
                        (long long)r, (long long)g, b);
    return VKL_OK;
}

float vkl_e0m4_value(uint16_t d, uint16_t b, unsigned q) {
    uint16_t w1 = (uint16_t)((b & 0xFC00) | (q & 15u) << 6); /* half(EXP | q << 6) */
    return (vkl_f16_to_f32(w1) - vkl_f16_to_f32(b)) * vkl_f16_to_f32(d);
}

vkl_status vkl_e0m4_table(vkl_context *ctx, uint16_t d, uint16_t b, int64_t r, int64_t g, float table[16]) {
    vkl_status st = vkl_e0m4_check_header(ctx, d, b, r, g);
    for (unsigned q = 0; !st && q < 16; q++) table[q] = vkl_e0m4_value(d, b, q);
    return st;
}
