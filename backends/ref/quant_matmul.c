/* Dequantizing helper for the ref MatMul/Gemm with a quantized B operand:
 * the canonical blocks of engine/quant expanded to f32, optionally
 * transposed into MatMul's [K, N] orientation. */
#include "quant_matmul.h"

#include "../../engine/context.h"
#include "../../engine/quant/quant.h"

vkl_status vkl_ref_quant_dequant(vkl_context *ctx, const vkl_ref_tensor *w, bool transpose, float *out,
                                 int64_t out_count) {
    if (!w || !out || !vkl_dtype_is_quantized(w->dtype))
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "ref quant dequant: need a quantized tensor and an output");
    if (w->rank < 1 || w->dims[w->rank - 1] <= 0 || out_count != w->count)
        return vkl_fail(ctx, VKL_ERR_SHAPE, "ref quant dequant: rank %u tensor of %lld elements into %lld floats",
                        w->rank, (long long)w->count, (long long)out_count);
    const int64_t K = w->dims[w->rank - 1], rows = w->count / K;
    const int64_t N = w->rank >= 2 ? w->dims[w->rank - 2] : 1, batch = N ? rows / N : 0;
    size_t bytes = 0, row_bytes = 0;
    vkl_status st = vkl_quant_canonical_bytes(ctx, w->dtype, w->group, rows, K, &bytes);
    if (!st) st = vkl_quant_canonical_bytes(ctx, w->dtype, w->group, 1, K, &row_bytes);
    if (st) return vkl_fail_prefix(ctx, st, "ref quant dequant");
    if (!transpose) return vkl_quant_dequantize(ctx, w->dtype, w->group, w->data, bytes, rows, K, out);
    float *row = vkl_malloc(ctx, (size_t)K * sizeof(float));
    if (!row) return VKL_ERR_OUT_OF_MEMORY;
    const uint8_t *src = w->data;
    for (int64_t b = 0; b < batch && !st; b++)
        for (int64_t n = 0; n < N && !st; n++) {
            const int64_t r = b * N + n;
            st = vkl_quant_dequantize(ctx, w->dtype, w->group, src + (size_t)r * row_bytes, row_bytes, 1, K, row);
            if (st) {
                vkl_fail_prefix(ctx, st, "ref quant dequant: row %lld", (long long)r);
                break;
            }
            float *dst = out + b * N * K; /* [K, N] matrix b */
            for (int64_t k = 0; k < K; k++) dst[k * N + n] = row[k];
        }
    vkl_free(ctx, row);
    return st;
}
