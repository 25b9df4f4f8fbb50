/* Table entries and shape rules for matrix products: MatMul (numpy matmul)
 * and Gemm. Conv is in conv.c. */
#include "nn_util.h"
#include "op_defs.h"

/* MatMul takes every float type and the 32/64-bit integers (ONNX MatMul-13). */
static vkl_status need_matmul_dtype(vkl_graph *g, uint32_t node, const vkl_tensor *a, const vkl_tensor *b) {
    switch (a->dtype) {
    case VKL_DTYPE_F32: case VKL_DTYPE_F16: case VKL_DTYPE_BF16: case VKL_DTYPE_F64:
    case VKL_DTYPE_I32: case VKL_DTYPE_I64: case VKL_DTYPE_U32: case VKL_DTYPE_U64: break;
    default:
        return vkl_fail(g->ctx, VKL_ERR_UNSUPPORTED, "MatMul: dtype %s is not supported", vkl_dtype_name(a->dtype));
    }
    return vkl_nn_same_dtype(g, node, a, b, "A and B");
}

/* MatMul-13: A [..., M, K] @ B [..., K, N] -> [..., M, N]. A 1-D A is [1, K]
 * and a 1-D B is [K, 1], the added dim dropped from the result; batch dims
 * broadcast (numpy). */
static vkl_status infer_mat_mul(vkl_graph *g, uint32_t node) {
    const vkl_tensor *in[2];
    vkl_expr one;
    vkl_status st = vkl_nn_inputs(g, node, 2, in);
    if (st) return st;
    const vkl_tensor *a = in[0], *b = in[1];
    st = need_matmul_dtype(g, node, a, b);
    if (!st) st = vkl_nn_need_rank(g, node, a, 1, true, "A");
    if (!st) st = vkl_nn_need_rank(g, node, b, 1, true, "B");
    if (!st) st = vkl_expr_const(g->syms, 1, &one);
    if (st) return st;
    vkl_shape sa = a->shape, sb = b->shape;
    if (sa.rank == 1) sa = (vkl_shape){2, {one, a->shape.dims[0]}};
    if (sb.rank == 1) sb = (vkl_shape){2, {b->shape.dims[0], one}};
    st = vkl_nn_dims_agree(g, node, sa.dims[sa.rank - 1], sb.dims[sb.rank - 2], "A's columns and B's rows");
    vkl_shape ba = sa, bb = sb, out;
    ba.rank -= 2;
    bb.rank -= 2;
    if (!st) st = vkl_shape_broadcast(g, &ba, &bb, &out);
    if (st) return st;
    if (out.rank + 2 > VKL_MAX_RANK)
        return vkl_fail(g->ctx, VKL_ERR_UNSUPPORTED, "MatMul: batch rank %u is too large", out.rank);
    if (a->shape.rank > 1) out.dims[out.rank++] = sa.dims[sa.rank - 2];
    if (b->shape.rank > 1) out.dims[out.rank++] = sb.dims[sb.rank - 1];
    return vkl_node_set_out(g, node, 0, a->dtype, &out);
}

const vkl_op_info vkl_op_info_mat_mul = {"MatMul", "", 2, 2, 1, 1, false, -1, NULL, 0, infer_mat_mul};

/* Gemm-13: Y [M, N] = alpha * A' B' + beta * C, A' = transA ? A^T : A (same
 * for B), C optional and unidirectionally broadcast to [M, N]. */
static vkl_status infer_gemm(vkl_graph *g, uint32_t node) {
    const vkl_tensor *in[2], *c = vkl_node_in(g, node, 2);
    int64_t ta, tb;
    vkl_status st = vkl_nn_inputs(g, node, 2, in);
    if (st) return st;
    const vkl_tensor *a = in[0], *b = in[1];
    st = vkl_nn_need_float(g, node, a, "A");
    if (!st) st = vkl_nn_same_dtype(g, node, a, b, "A and B");
    if (!st && c) st = vkl_nn_same_dtype(g, node, a, c, "A and C");
    if (!st) st = vkl_nn_need_rank(g, node, a, 2, false, "A");
    if (!st) st = vkl_nn_need_rank(g, node, b, 2, false, "B");
    if (!st) st = vkl_op_attr_int(g, node, "transA", &ta);
    if (!st) st = vkl_op_attr_int(g, node, "transB", &tb);
    if (st) return st;
    vkl_expr m = a->shape.dims[ta ? 1 : 0], k = a->shape.dims[ta ? 0 : 1];
    vkl_expr kb = b->shape.dims[tb ? 1 : 0], n = b->shape.dims[tb ? 0 : 1];
    vkl_shape out = {2, {m, n}};
    st = vkl_nn_dims_agree(g, node, k, kb, "the inner dims of A' and B'");
    if (!st && c) st = vkl_nn_broadcast_to(g, node, &c->shape, &out, "C");
    if (!st) st = vkl_node_set_out(g, node, 0, a->dtype, &out);
    return st;
}

static const vkl_attr_schema gemm_attrs[] = {
    {"alpha", VKL_ATTR_FLOAT, false, 0, 1.0f, NULL},
    {"beta", VKL_ATTR_FLOAT, false, 0, 1.0f, NULL},
    {"transA", VKL_ATTR_INT, false, 0, 0, NULL},
    {"transB", VKL_ATTR_INT, false, 0, 0, NULL},
};

const vkl_op_info vkl_op_info_gemm = {"Gemm", "", 2, 3, 1, 1, false, -1, gemm_attrs, 4, infer_gemm};
