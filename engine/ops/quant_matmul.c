/* Table entry and shape rule of QuantMatMul (domain vkllm), the matmul the
 * import-time quantize pass makes: A times a weight kept in engine/quant's
 * canonical orientation W [N, K], plus an optional bias. The ref kernel in
 * backends/ref/quant_matmul.c is its definition. */
#include "../quant/quant.h"
#include "nn_util.h"
#include "op_defs.h"

/* W's formats: the block-quantized ones with a valid group, or a plain float
 * weight without one. */
static vkl_status check_w(vkl_graph *g, const vkl_tensor *w) {
    switch (w->dtype) {
    case VKL_DTYPE_F32: case VKL_DTYPE_F16: case VKL_DTYPE_BF16:
        if (w->group == 0) return VKL_OK;
        return vkl_fail(g->ctx, VKL_ERR_FORMAT, "QuantMatMul: W is %s with a group (%u)", vkl_dtype_name(w->dtype),
                        w->group);
    case VKL_DTYPE_Q_E0M4: case VKL_DTYPE_Q_INT4: case VKL_DTYPE_Q_INT8: {
        if (!vkl_quant_block_bytes(w->dtype, w->group))
            return vkl_fail(g->ctx, VKL_ERR_FORMAT, "QuantMatMul: group %u is invalid for %s W", w->group,
                            vkl_dtype_name(w->dtype));
        int64_t k;
        if (vkl_expr_is_const(g->syms, w->shape.dims[1], &k) && k <= 0)
            return vkl_fail(g->ctx, VKL_ERR_SHAPE, "QuantMatMul: W's K = %lld is not positive (group %u)",
                            (long long)k, w->group);
        return VKL_OK;
    }
    default:
        return vkl_fail(g->ctx, VKL_ERR_UNSUPPORTED, "QuantMatMul: W of dtype %s is not supported",
                        vkl_dtype_name(w->dtype));
    }
}

static vkl_status infer_quant_mat_mul(vkl_graph *g, uint32_t node) {
    const vkl_tensor *in[2], *bias = vkl_node_in(g, node, 2);
    vkl_status st = vkl_nn_inputs(g, node, 2, in);
    if (st) return st;
    const vkl_tensor *a = in[0], *w = in[1];
    st = vkl_nn_need_float(g, node, a, "A");
    if (!st) st = vkl_nn_need_rank(g, node, a, 1, true, "A");
    if (!st) st = vkl_nn_need_rank(g, node, w, 2, false, "W");
    if (!st) st = check_w(g, w);
    if (!st) st = vkl_nn_dims_agree(g, node, a->shape.dims[a->shape.rank - 1], w->shape.dims[1],
                                    "A's last dim and W's K (W is [N, K])");
    if (!st && bias) {
        st = vkl_nn_same_dtype(g, node, a, bias, "A and bias");
        if (!st) st = vkl_nn_need_rank(g, node, bias, 1, false, "bias");
        if (!st) st = vkl_nn_dims_agree(g, node, bias->shape.dims[0], w->shape.dims[0], "bias and W's N");
    }
    if (st) return st;
    vkl_shape out = a->shape;
    out.dims[out.rank - 1] = w->shape.dims[0];
    return vkl_node_set_out(g, node, 0, a->dtype, &out);
}

/* QuantMatMul (domain vkllm): A [..., K] (f32, f16, bf16 or f64), W [N, K],
 * bias? [N] of A's dtype -> Y [..., N] of A's dtype:
 *   Y[..., n] = sum over k < K of A[..., k] * w(n, k)  (+ bias[n])
 * W is the transpose of ONNX MatMul's B [K, N] (Gemm's B with transB = 1 as
 * stored): rows are output channels, K the reduction axis. w(n, k) is
 * engine/quant's exact f32 dequantization for Q_E0M4 / Q_INT4 / Q_INT8 with
 * W.group elements per group along K (ceil(K / group) groups a row, the
 * last one short when group does not divide K), or the stored
 * value for plain f32 / f16 / bf16 weights (group 0). A 1-D A is one row.
 * Accumulation: double, k ascending, bias added last, one rounding to Y. */
const vkl_op_info vkl_op_info_quant_mat_mul = {"QuantMatMul", "vkllm", 2, 3, 1, 1, false, -1, NULL, 0,
                                               infer_quant_mat_mul};
