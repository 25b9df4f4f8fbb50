/* Ref-backend helpers for block-quantized weights (engine/quant): the
 * QuantMatMul kernel (declared with every kernel in ref_ops.h) lives in
 * quant_matmul.c beside this f32 expansion of a quantized operand. */
#ifndef VKL_REF_QUANT_MATMUL_H
#define VKL_REF_QUANT_MATMUL_H

#include <stdbool.h>

#include "ref_kernels.h"

/* w: a Q_E0M4 / Q_INT4 / Q_INT8 tensor in the canonical orientation,
 * dims [..., N, K] (rank 1: [K], one row), groups of w->group along K,
 * data = the canonical blocks. out receives out_count == w->count floats:
 *   transpose = false: [..., N, K] — Gemm's B with transB = 1;
 *   transpose = true:  [..., K, N] — MatMul's B (ONNX W = (W^T)^T).
 * Values are engine/quant's exact f32 dequantization. Bad blocks are
 * VKL_ERR_FORMAT naming row and group; the transpose borrows one row of
 * scratch (K floats) from the context's allocator. */
vkl_status vkl_ref_quant_dequant(vkl_context *ctx, const vkl_ref_tensor *w, bool transpose, float *out,
                                 int64_t out_count);

#endif
