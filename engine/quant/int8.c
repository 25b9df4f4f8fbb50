/* int8 symmetric blocks, per output channel when group = cols (the lm_head
 * of MNN-LLM's combined quantization; the KV-cache keys of kv_quant.c with
 * group = head_dim). Symmetric, so a W8A8 kernel needs no weight zero point
 * and -128 is never produced (negation-safe for sdot/smmla).
 *
 * Quantize one group: amax = max |w|; d = amax / 127.0f (f32);
 *   q = clamp(roundf(w / d), −127, 127)   (half away from zero)
 * so |w − ŵ| <= d/2 = amax/254 (plus one f32 rounding of q·d).
 * All-zero group: d = 0, q = 0.
 * Dequantize: w = (float)q · d (one f32 multiply, correctly rounded).
 * Block: f32 d (little-endian), then int8 q[group]. */
#include <math.h>
#include <string.h>

#include "quant_internal.h"

static float rd_f32(const uint8_t *p) {
    uint32_t u = vkl_quant_rd32(p);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void wr_f32(uint8_t *p, float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    vkl_quant_wr32(p, u);
}

#if defined(__GNUC__)
#define INT8_INLINE static inline __attribute__((always_inline))
#else
#define INT8_INLINE static inline
#endif

/* roundf (half away from zero) without the library call: x − trunc(x) is
 * exact, so comparing it with 0.5 decides exactly as roundf does. */
INT8_INLINE float round_half_away(float x) {
    const float t = truncf(x), f = fabsf(x - t);
    return f >= 0.5f ? t + copysignf(1.0f, x) : t;
}

INT8_INLINE int8_t code_of(float w, float d) {
    float p = round_half_away(w / d);
    p = p < -127.0f ? -127.0f : p > 127.0f ? 127.0f : p;
    return (int8_t)(int)p;
}

/* One block from w[0..len), len <= group (less: the short last group of a
 * row, whose codes past len are 0, the code of w = 0). */
INT8_INLINE void quantize_group(const float *w, uint32_t len, uint32_t group, uint8_t *blk) {
    /* compares, not fmaxf (a library call); finite input: the same max. Eight
     * partial maxima in fixed-length chunks vectorize (max is exact, so the
     * order does not matter). */
    float m[8] = {0};
    uint32_t i = 0;
    for (; i + 8 <= len; i += 8)
        for (uint32_t k = 0; k < 8; k++) m[k] = fabsf(w[i + k]) > m[k] ? fabsf(w[i + k]) : m[k];
    float amax = 0.0f;
    for (uint32_t k = 0; k < 8; k++) amax = m[k] > amax ? m[k] : amax;
    for (; i < len; i++) amax = fabsf(w[i]) > amax ? fabsf(w[i]) : amax;
    const float d = amax / 127.0f;
    wr_f32(blk, d);
    int8_t *qs = (int8_t *)(blk + VKL_Q8_HEADER_BYTES);
    memset(qs + len, 0, group - len);
    if (!(d > 0.0f)) {
        memset(qs, 0, len);
        return;
    }
    /* fixed-length chunks: loops the compiler vectorizes at -O2 */
    i = 0;
    for (; i + 32 <= len; i += 32)
        for (uint32_t k = 0; k < 32; k++) qs[i + k] = code_of(w[i + k], d);
    for (; i < len; i++) qs[i] = code_of(w[i], d);
}

INT8_INLINE void quantize_rows(const float *src, int64_t rows, int64_t cols, uint32_t group, uint8_t *dst) {
    const size_t block = vkl_quant_block_bytes(VKL_DTYPE_Q_INT8, group);
    const int64_t groups = vkl_quant_row_groups(cols, group);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t g = 0; g < groups; g++) {
            const uint32_t len = cols - g * group < group ? (uint32_t)(cols - g * group) : group;
            quantize_group(src + r * cols + g * group, len, group, dst + (size_t)(r * groups + g) * block);
        }
}

/* Compiled twice, like e0m4.c's codes: the AVX2 build divides, rounds and
 * clamps eight weights at a time; the bytes are the same. */
static void quantize_rows_portable(const float *src, int64_t rows, int64_t cols, uint32_t group, uint8_t *dst) {
    quantize_rows(src, rows, cols, group, dst);
}

#if defined(__x86_64__) && defined(__GNUC__)
#define INT8_HAVE_AVX2_PATH 1
__attribute__((target("avx2,fma"))) static void quantize_rows_avx2(const float *src, int64_t rows, int64_t cols,
                                                                   uint32_t group, uint8_t *dst) {
    quantize_rows(src, rows, cols, group, dst);
}
#endif

vkl_status vkl_int8_quantize_path(vkl_context *ctx, const float *src, int64_t rows, int64_t cols, uint32_t group,
                                  uint8_t *dst, bool fast) {
    (void)ctx; /* every finite group is representable */
#ifdef INT8_HAVE_AVX2_PATH
    if (fast && vkl_quant_cpu_avx2_fma()) {
        quantize_rows_avx2(src, rows, cols, group, dst);
        return VKL_OK;
    }
#else
    (void)fast;
#endif
    quantize_rows_portable(src, rows, cols, group, dst);
    return VKL_OK;
}

vkl_status vkl_int8_quantize(vkl_context *ctx, const float *src, int64_t rows, int64_t cols, uint32_t group,
                             uint8_t *dst) {
    return vkl_int8_quantize_path(ctx, src, rows, cols, group, dst, true);
}

vkl_status vkl_int8_check_header(vkl_context *ctx, float d, int64_t r, int64_t g) {
    if (!isfinite(d) || signbit(d))
        return vkl_fail(ctx, VKL_ERR_FORMAT, "int8 block (row %lld, group %lld): scale %g is not a finite f32 >= 0",
                        (long long)r, (long long)g, (double)d);
    return VKL_OK;
}

vkl_status vkl_int8_dequantize(vkl_context *ctx, const uint8_t *src, int64_t rows, int64_t cols, uint32_t group,
                               float *dst) {
    const size_t block = vkl_quant_block_bytes(VKL_DTYPE_Q_INT8, group);
    const int64_t groups = vkl_quant_row_groups(cols, group);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t g = 0; g < groups; g++) {
            const uint8_t *blk = src + (size_t)(r * groups + g) * block;
            const float d = rd_f32(blk);
            vkl_status st = vkl_int8_check_header(ctx, d, r, g);
            if (st) return st;
            const int8_t *qs = (const int8_t *)(blk + VKL_Q8_HEADER_BYTES);
            float *out = dst + r * cols + g * group;
            const int64_t len = cols - g * group < group ? cols - g * group : group; /* the short last group */
            for (int64_t i = 0; i < len; i++) out[i] = (float)qs[i] * d;
        }
    return VKL_OK;
}
