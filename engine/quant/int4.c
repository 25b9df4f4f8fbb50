/* int4 asymmetric (min/max per group, integer zero point): the baseline
 * E0M4 is measured against (Transformer-Lite Table 2; MNN-LLM eq. 1 with the
 * zero point rounded to an integer so that w0 = 0 is exact).
 *
 * Quantize one group: lo = min(0, min w), hi = max(0, max w);
 *   d = the smallest fp16 >= (hi − lo) / 15;   z = clamp(roundf(−lo / d), 0, 15);
 *   q = clamp(z + roundf(w / d), 0, 15)        (roundf: half away from zero)
 * Every position w/d + z lies in [−0.5, 15.5], so |w − ŵ| <= d/2.
 * All-zero group: d = 0, z = 0, q = 0.
 * Dequantize (exact in f32): w = ((float)q − z) · d.
 * Block header: fp16 d, fp16 z (an integer 0..15, exact in fp16). */
#include <math.h>
#include <string.h>

#include "quant_internal.h"

/* One block from w[0..len), len <= group (less: the short last group of a
 * row, whose codes past len are z, the code of w = 0). */
static vkl_status quantize_group(vkl_context *ctx, const float *w, uint32_t len, uint32_t group, uint8_t *blk,
                                 int64_t r, int64_t g) {
    uint8_t *qs = blk + VKL_Q4_HEADER_BYTES;
    memset(qs, 0, group / 2);
    float lo, hi;
    vkl_quant_range0(w, len, &lo, &hi);
    if (lo == 0.0f && hi == 0.0f) {
        vkl_quant_wr16(blk, 0);
        vkl_quant_wr16(blk + 2, 0);
        return VKL_OK;
    }
    uint16_t d = vkl_quant_f16_ceil(((double)hi - (double)lo) / 15.0);
    if (d >= 0x7C00)
        return vkl_fail(ctx, VKL_ERR_UNSUPPORTED,
                        "int4: group (row %lld, group %lld) spans [%g, %g]; its scale does not fit fp16",
                        (long long)r, (long long)g, (double)lo, (double)hi);
    const float df = vkl_f16_to_f32(d);
    float zf = roundf(-lo / df);
    int z = zf < 0.0f ? 0 : zf > 15.0f ? 15 : (int)zf;
    for (uint32_t i = 0; i < group; i++) {
        float p = (i < len ? roundf(w[i] / df) : 0.0f) + (float)z; /* |w/d| <= 15.5: no overflow */
        unsigned q = p < 0.0f ? 0u : p > 15.0f ? 15u : (unsigned)p;
        qs[i / 2] |= (uint8_t)(q << (4 * (i & 1)));
    }
    vkl_quant_wr16(blk, d);
    vkl_quant_wr16(blk + 2, vkl_f32_to_f16((float)z));
    return VKL_OK;
}

vkl_status vkl_int4_quantize(vkl_context *ctx, const float *src, int64_t rows, int64_t cols, uint32_t group,
                             uint8_t *dst) {
    const size_t block = vkl_quant_block_bytes(VKL_DTYPE_Q_INT4, group);
    const int64_t groups = vkl_quant_row_groups(cols, group);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t g = 0; g < groups; g++) {
            const uint32_t len = cols - g * group < group ? (uint32_t)(cols - g * group) : group;
            vkl_status st = quantize_group(ctx, src + r * cols + g * group, len, group,
                                           dst + (size_t)(r * groups + g) * block, r, g);
            if (st) return st;
        }
    return VKL_OK;
}

vkl_status vkl_int4_check_header(vkl_context *ctx, uint16_t d, uint16_t z, int64_t r, int64_t g) {
    if (!vkl_quant_f16_scale_ok(d))
        return vkl_fail(ctx, VKL_ERR_FORMAT, "int4 block (row %lld, group %lld): scale 0x%04x is not a finite fp16 >= 0",
                        (long long)r, (long long)g, d);
    float zf = vkl_f16_to_f32(z);
    if ((z & 0x8000) || !(zf >= 0.0f && zf <= 15.0f) || zf != floorf(zf))
        return vkl_fail(ctx, VKL_ERR_FORMAT, "int4 block (row %lld, group %lld): zero point 0x%04x is not 0..15",
                        (long long)r, (long long)g, z);
    return VKL_OK;
}

vkl_status vkl_int4_table(vkl_context *ctx, uint16_t d, uint16_t z, int64_t r, int64_t g, float table[16]) {
    vkl_status st = vkl_int4_check_header(ctx, d, z, r, g);
    const float df = vkl_f16_to_f32(d), zf = vkl_f16_to_f32(z);
    for (unsigned q = 0; !st && q < 16; q++) table[q] = ((float)q - zf) * df;
    return st;
}
