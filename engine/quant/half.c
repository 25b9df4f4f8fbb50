/* Bulk f32 <-> f16 / bf16 for weights kept in half precision (the f16
 * recipe; MNN-LLM's bf16 embedding). Rounding is the scalar conversions' of
 * engine/dtype.c (nearest even); what this adds is refusing to turn a weight
 * into an infinity. */
#include <math.h>

#include "quant_internal.h"

static vkl_status non_finite(vkl_context *ctx, const char *fmt, size_t i, float v) {
    return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "%s: value [%zu] is %s; non-finite weights cannot be converted",
                    fmt, i, isnan(v) ? "NaN" : v > 0 ? "+inf" : "-inf");
}

vkl_status vkl_quant_f32_to_f16(vkl_context *ctx, const float *src, size_t n, uint16_t *dst) {
    for (size_t i = 0; i < n; i++) {
        float v = src[i];
        if (!isfinite(v)) return non_finite(ctx, "f16", i, v);
        uint16_t h = vkl_f32_to_f16(v);
        if ((h & 0x7FFF) == 0x7C00)
            return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "f16: value [%zu] = %g overflows f16 (max 65504)", i,
                            (double)v);
        dst[i] = h;
    }
    return VKL_OK;
}

vkl_status vkl_quant_f32_to_bf16(vkl_context *ctx, const float *src, size_t n, uint16_t *dst) {
    for (size_t i = 0; i < n; i++) {
        float v = src[i];
        if (!isfinite(v)) return non_finite(ctx, "bf16", i, v);
        uint16_t h = vkl_f32_to_bf16(v);
        if ((h & 0x7FFF) == 0x7F80)
            return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "bf16: value [%zu] = %g rounds to infinity", i,
                            (double)v);
        dst[i] = h;
    }
    return VKL_OK;
}

void vkl_quant_f16_to_f32(const uint16_t *src, size_t n, float *dst) {
    for (size_t i = 0; i < n; i++) dst[i] = vkl_f16_to_f32(src[i]);
}

void vkl_quant_bf16_to_f32(const uint16_t *src, size_t n, float *dst) {
    for (size_t i = 0; i < n; i++) dst[i] = vkl_bf16_to_f32(src[i]);
}
