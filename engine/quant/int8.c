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

static void quantize_group(const float *w, uint32_t group, uint8_t *blk) {
    float amax = 0.0f;
    for (uint32_t i = 0; i < group; i++) amax = fmaxf(amax, fabsf(w[i]));
    const float d = amax / 127.0f;
    wr_f32(blk, d);
    int8_t *qs = (int8_t *)(blk + VKL_Q8_HEADER_BYTES);
    for (uint32_t i = 0; i < group; i++) {
        float p = d > 0.0f ? roundf(w[i] / d) : 0.0f;
        qs[i] = (int8_t)(p < -127.0f ? -127 : p > 127.0f ? 127 : (int)p);
    }
}

vkl_status vkl_int8_quantize(vkl_context *ctx, const float *src, int64_t rows, int64_t cols, uint32_t group,
                             uint8_t *dst) {
    (void)ctx; /* every finite group is representable */
    const size_t block = vkl_quant_block_bytes(VKL_DTYPE_Q_INT8, group);
    const int64_t groups = cols / group;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t g = 0; g < groups; g++)
            quantize_group(src + r * cols + g * group, group, dst + (size_t)(r * groups + g) * block);
    return VKL_OK;
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
    const int64_t groups = cols / group;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t g = 0; g < groups; g++) {
            const uint8_t *blk = src + (size_t)(r * groups + g) * block;
            const float d = rd_f32(blk);
            vkl_status st = vkl_int8_check_header(ctx, d, r, g);
            if (st) return st;
            const int8_t *qs = (const int8_t *)(blk + VKL_Q8_HEADER_BYTES);
            float *out = dst + r * cols + g * group;
            for (uint32_t i = 0; i < group; i++) out[i] = (float)qs[i] * d;
        }
    return VKL_OK;
}
