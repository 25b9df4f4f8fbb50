/* Ref kernels for block-quantized weights: QuantMatMul, the op the importer's
 * quantize pass makes (its definition), and the f32 expansion of a quantized
 * B operand (vkl_ref_quant_dequant) for tests and tools. */
#include "quant_matmul.h"

#include "../../engine/context.h"
#include "../../engine/quant/quant.h"
#include "nn_util.h"
#include "ref_ops.h"

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

/* Row n of W [N, K] as K floats: the stored f32 row itself, or `scratch`
 * filled with the exact f32 values — engine/quant's dequantization of the
 * row's blocks (each header validated: VKL_ERR_FORMAT naming row and group),
 * or the f16/bf16 values widened. */
static vkl_status w_row(const vkl_ref_args *a, const vkl_ref_tensor *w, int64_t n, int64_t K, size_t row_bytes,
                        float *scratch, const float **row) {
    const uint8_t *src = (const uint8_t *)w->data + (size_t)n * row_bytes;
    *row = scratch;
    switch (w->dtype) {
    case VKL_DTYPE_F32: *row = (const float *)(const void *)src; return VKL_OK;
    case VKL_DTYPE_F16: vkl_quant_f16_to_f32((const uint16_t *)(const void *)src, (size_t)K, scratch); return VKL_OK;
    case VKL_DTYPE_BF16: vkl_quant_bf16_to_f32((const uint16_t *)(const void *)src, (size_t)K, scratch); return VKL_OK;
    default: break;
    }
    vkl_status st = vkl_quant_dequantize(a->ctx, w->dtype, w->group, src, row_bytes, 1, K, scratch);
    return st ? vkl_fail_prefix(a->ctx, st, "QuantMatMul: W row %lld", (long long)n) : VKL_OK;
}

/* QuantMatMul (domain vkllm; engine/ops/quant_matmul.c has the table entry):
 *   A [..., K] float, W [N, K], bias? [N] of A's dtype -> Y [..., N] of A's dtype,
 *   Y[m, n] = round_to_Y( sum over k = 0..K-1 of (double)A[m, k] * (double)w(n, k)  + bias[n] )
 * with m running over the M = count(A) / K rows of A and w(n, k) the exact
 * f32 value of W's element (n, k): engine/quant's dequantization for
 * Q_E0M4 / Q_INT4 / Q_INT8 (W.group elements per block along K), the stored
 * value for f32 / f16 / bf16. The sum runs in double with k ascending; the
 * bias is added last, then Y rounds once. (For an f32 A every product is
 * exact in double, so the only roundings are the additions' and the last.)
 * Other backends fold the dequantization into their inner loops (E0M4: one
 * multiply-add per group, docs/quant.md) and are held to this within a
 * relative tolerance.
 * W is expanded one row at a time into K floats of scratch and that row is
 * dotted with every row of A, so the full matrix is never dequantized. */
vkl_status vkl_ref_quant_mat_mul(const vkl_ref_args *a) {
    const vkl_ref_tensor *A = &a->in[0], *W = &a->in[1];
    const vkl_ref_tensor *bias = a->n_in > 2 && a->in[2].data ? &a->in[2] : NULL;
    vkl_ref_tensor *Y = &a->out[0];
    if (!vkl_ref_nn_is_float(A->dtype) || Y->dtype != A->dtype)
        return vkl_ref_nn_bad_dtype(a, "QuantMatMul", "A", A->dtype);
    if (bias && bias->dtype != A->dtype) return vkl_ref_nn_bad_dtype(a, "QuantMatMul", "bias", bias->dtype);
    if (A->rank < 1 || W->rank != 2)
        return vkl_fail(a->ctx, VKL_ERR_SHAPE, "QuantMatMul: A must have rank >= 1 and W rank 2 (ranks %u, %u)",
                        A->rank, W->rank);
    const int64_t K = A->dims[A->rank - 1], N = W->dims[0];
    const int64_t M = K ? A->count / K : vkl_ref_nn_prod(A->dims, 0, A->rank - 1);
    size_t row_bytes;
    vkl_status st = vkl_ref_nn_dim_eq(a, "QuantMatMul", K, W->dims[1], "A's last dim and W's K");
    if (!st && bias) st = vkl_ref_nn_dim_eq(a, "QuantMatMul", bias->count, N, "bias and W's N");
    if (!st && Y->count != M * N)
        st = vkl_fail(a->ctx, VKL_ERR_SHAPE, "QuantMatMul: Y has %lld elements, want %lld x %lld",
                      (long long)Y->count, (long long)M, (long long)N);
    if (st) return st;
    switch (W->dtype) {
    case VKL_DTYPE_F32: case VKL_DTYPE_F16: case VKL_DTYPE_BF16:
        row_bytes = (size_t)K * vkl_dtype_size(W->dtype);
        break;
    case VKL_DTYPE_Q_E0M4: case VKL_DTYPE_Q_INT4: case VKL_DTYPE_Q_INT8:
        if ((st = vkl_quant_canonical_bytes(a->ctx, W->dtype, W->group, 1, K, &row_bytes)))
            return vkl_fail_prefix(a->ctx, st, "QuantMatMul: W");
        break;
    default:
        return vkl_ref_nn_bad_dtype(a, "QuantMatMul", "W", W->dtype);
    }
    if (M == 0 || N == 0) return VKL_OK;
    float *scratch = vkl_ref_scratch_get(a, (size_t)(K ? K : 1) * sizeof(float));
    if (!scratch) return VKL_ERR_OUT_OF_MEMORY;
    const bool a_f32 = A->dtype == VKL_DTYPE_F32;
    for (int64_t n = 0; n < N; n++) {
        const float *w;
        if ((st = w_row(a, W, n, K, row_bytes, scratch, &w))) return st;
        const double b = bias ? vkl_ref_get_f(bias, n) : 0.0;
        for (int64_t m = 0; m < M; m++) {
            double acc = 0;
            if (a_f32) {
                const float *x = (const float *)A->data + m * K;
                for (int64_t k = 0; k < K; k++) acc += (double)x[k] * (double)w[k];
            } else {
                for (int64_t k = 0; k < K; k++) acc += vkl_ref_get_f(A, m * K + k) * (double)w[k];
            }
            acc += b;
            if (Y->dtype == VKL_DTYPE_F32) ((float *)Y->data)[m * N + n] = (float)acc;
            else vkl_ref_set_f(Y, m * N + n, acc);
        }
    }
    return VKL_OK;
}
