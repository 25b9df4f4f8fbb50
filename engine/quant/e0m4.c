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

/* fp16 bits of w1 = x·s + bias, kept inside [EXP, EXP | 0x3FF]; lo_f =
 * 2^n (the value of EXP), hi_f = 2^(n+1). Below 2^n: EXP. At or above
 * 2^(n+1): the clamp. In between, vkl_f32_to_f16 written out for one binade
 * (sign 0, exponent fixed: the top ten f32 fraction bits, rounded to nearest
 * even; a carry out of the binade is clamped), which keeps the call out of
 * the loop that runs once per weight. */
#if defined(__GNUC__)
#define E0M4_INLINE static inline __attribute__((always_inline))
#else
#define E0M4_INLINE static inline
#endif

E0M4_INLINE uint16_t w1_bits(float x, float s, float bias, uint16_t exp, float lo_f, float hi_f) {
    const float w1 = fmaf(x, s, bias);
    if (!(w1 >= lo_f)) return exp;
    if (w1 >= hi_f) return (uint16_t)(exp | 0x3FF);
    uint32_t u;
    memcpy(&u, &w1, sizeof(u));
    const uint32_t man = u & 0x7FFFFFu, rem = man & 0x1FFFu;
    uint32_t h = exp | (man >> 13);
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
    return h > (exp | 0x3FFu) ? (uint16_t)(exp | 0x3FF) : (uint16_t)h;
}

/* The 4-bit code of w1 = x·s + bias, without branches (so that the loop
 * vectorizes): w1_bits' clamps done on the f32 value — below 2^n (or NaN) it
 * becomes 2^n, whose fraction is 0 (= EXP's); at or above 2^(n+1) it becomes
 * the largest f32 below, whose fraction rounds up past 0x3FF and is clamped
 * to it (= EXP | 0x3FF's) — then the fp16 fraction h rounded to nearest even,
 * then y1 = bits 9..6 of h, rounded up by y2 = bit 5. hi_m = the largest f32
 * below 2^(n+1). */
E0M4_INLINE unsigned code_of(float x, float s, float bias, float lo_f, float hi_m) {
    float w1 = fmaf(x, s, bias);
    w1 = w1 > lo_f ? w1 : lo_f;
    w1 = w1 < hi_m ? w1 : hi_m;
    uint32_t u;
    memcpy(&u, &w1, sizeof(u));
    const uint32_t man = u & 0x7FFFFFu, rem = man & 0x1FFFu;
    uint32_t h = man >> 13;
    h += (uint32_t)(rem > 0x1000u) | ((uint32_t)(rem == 0x1000u) & h);
    h = h < 0x3FFu ? h : 0x3FFu;
    const uint32_t q = ((h >> 6) & 15u) + ((h >> 5) & 1u);
    return q < 15u ? q : 15u;
}

/* The codes of one group (a multiple of 32 long) from w[0..len), two to a
 * byte, low nibble first: codes of 32 elements, then their bytes (two simple
 * loops the compiler vectorizes, where one interleaved loop it does not).
 * Past len (the short last group of a row) the codes are those of w = 0:
 * a zero-filled copy of the partial run goes through the same loop. */
E0M4_INLINE void group_codes(const float *w, uint32_t len, uint32_t group, float s, float bf, float lo_f, float hi_m,
                             uint8_t *qs) {
    for (uint32_t i0 = 0; i0 < group; i0 += 32) {
        float tail[32];
        const float *x = w + i0;
        if (i0 + 32 > len) {
            for (uint32_t i = 0; i < 32; i++) tail[i] = i0 + i < len ? w[i0 + i] : 0.0f;
            x = tail;
        }
        uint8_t c[32];
        for (uint32_t i = 0; i < 32; i++) c[i] = (uint8_t)code_of(x[i], s, bf, lo_f, hi_m);
        for (uint32_t i = 0; i < 16; i++) qs[i0 / 2 + i] = (uint8_t)(c[2 * i] | c[2 * i + 1] << 4);
    }
}

/* The same loop compiled twice. fmaf is correctly rounded on every path, so
 * both give the same bytes; where the CPU has AVX2 and FMA the second one
 * runs eight weights at a time with the fma instruction, instead of a libm
 * call per weight (a third of an import's time otherwise). Chosen at run
 * time: the build targets plain x86-64. */
static void group_codes_portable(const float *w, uint32_t len, uint32_t group, float s, float bf, float lo_f,
                                 float hi_m, uint8_t *qs) {
    group_codes(w, len, group, s, bf, lo_f, hi_m, qs);
}

#if defined(__x86_64__) && defined(__GNUC__)
#define E0M4_HAVE_FMA_PATH 1
__attribute__((target("avx2,fma"))) static void group_codes_avx2(const float *w, uint32_t len, uint32_t group, float s,
                                                                 float bf, float lo_f, float hi_m, uint8_t *qs) {
    group_codes(w, len, group, s, bf, lo_f, hi_m, qs);
}
#endif

typedef void (*group_codes_fn)(const float *w, uint32_t len, uint32_t group, float s, float bf, float lo_f,
                               float hi_m, uint8_t *qs);

/* One block from w[0..len), len <= group (less: a row's short last group). */
static vkl_status quantize_group(vkl_context *ctx, group_codes_fn codes, const float *w, uint32_t len, uint32_t group,
                                 uint32_t n, uint8_t *blk, int64_t r, int64_t g) {
    const uint16_t exp = n == 1 ? VKL_E0M4_EXP_N1 : VKL_E0M4_EXP_N2;
    uint8_t *qs = blk + VKL_Q4_HEADER_BYTES;
    float lo, hi;
    vkl_quant_range0(w, len, &lo, &hi);
    if (lo == 0.0f && hi == 0.0f) {
        memset(qs, 0, group / 2);
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
    const float lo_f = vkl_f16_to_f32(exp), hi_f = 2.0f * lo_f;
    /* lo lands on 2^n, so 0 on 2^n − lo·s; zeroing the low bits makes it a code */
    const uint16_t b = (uint16_t)(w1_bits(-lo, s, lo_f, exp, lo_f, hi_f) & 0xFFC0);
    codes(w, len, group, s, vkl_f16_to_f32(b), lo_f, nextafterf(hi_f, 0.0f), qs);
    vkl_quant_wr16(blk, d);
    vkl_quant_wr16(blk + 2, b);
    return VKL_OK;
}

vkl_status vkl_e0m4_quantize_path(vkl_context *ctx, const float *src, int64_t rows, int64_t cols, uint32_t group,
                                  uint32_t n, uint8_t *dst, bool fast) {
    group_codes_fn codes = group_codes_portable;
#ifdef E0M4_HAVE_FMA_PATH
    if (fast && vkl_quant_cpu_avx2_fma()) codes = group_codes_avx2;
#else
    (void)fast;
#endif
    const size_t block = vkl_quant_block_bytes(VKL_DTYPE_Q_E0M4, group);
    const int64_t groups = vkl_quant_row_groups(cols, group);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t g = 0; g < groups; g++) {
            const uint32_t len = cols - g * group < group ? (uint32_t)(cols - g * group) : group;
            vkl_status st = quantize_group(ctx, codes, src + r * cols + g * group, len, group, n,
                                           dst + (size_t)(r * groups + g) * block, r, g);
            if (st) return st;
        }
    return VKL_OK;
}

vkl_status vkl_e0m4_quantize(vkl_context *ctx, const float *src, int64_t rows, int64_t cols, uint32_t group,
                             uint32_t n, uint8_t *dst) {
    return vkl_e0m4_quantize_path(ctx, src, rows, cols, group, n, dst, true);
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
