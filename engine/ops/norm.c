/* Table entries and shape rules for softmax and normalization: Softmax,
 * LogSoftmax, LayerNormalization and the fused RMSNorm (domain vkllm). */
#include "nn_util.h"
#include "op_defs.h"

/* Softmax-13 / LogSoftmax-13: over ONE axis; output has X's shape and dtype. */
static vkl_status infer_softmax(vkl_graph *g, uint32_t node) {
    const vkl_tensor *x;
    uint32_t ax;
    vkl_status st = vkl_nn_inputs(g, node, 1, &x);
    if (!st) st = vkl_nn_need_float(g, node, x, "input");
    if (!st) st = vkl_nn_axis(g, node, x, &ax);
    if (!st) st = vkl_node_set_out(g, node, 0, x->dtype, &x->shape);
    return st;
}

static const vkl_attr_schema softmax_attrs[] = {{"axis", VKL_ATTR_INT, false, -1, 0, NULL}};

const vkl_op_info vkl_op_info_softmax = {"Softmax", "", 1, 1, 1, 1, false, -1, softmax_attrs, 1, infer_softmax};
const vkl_op_info vkl_op_info_log_softmax = {"LogSoftmax", "", 1, 1, 1, 1, false, -1, softmax_attrs, 1,
                                             infer_softmax};

/* ONNX TensorProto element type codes a stash_type may name. */
static bool stash_dtype(int64_t code, vkl_dtype *out) {
    switch (code) {
    case 1: *out = VKL_DTYPE_F32; return true;
    case 10: *out = VKL_DTYPE_F16; return true;
    case 11: *out = VKL_DTYPE_F64; return true;
    case 16: *out = VKL_DTYPE_BF16; return true;
    default: return false;
    }
}

/* LayerNormalization-17: X [d0..dr), Scale and B? broadcast to X (the ONNX
 * function multiplies with numpy broadcasting); Y like X; Mean and InvStdDev
 * are X's shape with dims [axis, r) set to 1, in the stash_type dtype. */
static vkl_status infer_layer_norm(vkl_graph *g, uint32_t node) {
    const vkl_tensor *in[2], *bias = vkl_node_in(g, node, 2);
    int64_t stash;
    uint32_t ax;
    vkl_dtype ut = VKL_DTYPE_F32;
    vkl_status st = vkl_nn_inputs(g, node, 2, in);
    if (st) return st;
    const vkl_tensor *x = in[0], *scale = in[1];
    st = vkl_nn_need_float(g, node, x, "X");
    if (!st) st = vkl_op_attr_int(g, node, "stash_type", &stash);
    if (!st) st = vkl_nn_axis(g, node, x, &ax);
    if (!st && !stash_dtype(stash, &ut))
        st = vkl_fail(g->ctx, VKL_ERR_UNSUPPORTED, "LayerNormalization: stash_type %lld is not a float type",
                      (long long)stash);
    if (!st) st = vkl_nn_need_float(g, node, scale, "Scale");
    if (!st) st = vkl_nn_broadcast_to(g, node, &scale->shape, &x->shape, "Scale");
    if (!st && bias) st = vkl_nn_need_float(g, node, bias, "B");
    if (!st && bias) st = vkl_nn_broadcast_to(g, node, &bias->shape, &x->shape, "B");
    if (!st) st = vkl_node_set_out(g, node, 0, x->dtype, &x->shape);
    if (st) return st;
    vkl_shape stat = x->shape;
    for (uint32_t d = ax; !st && d < stat.rank; d++) st = vkl_expr_const(g->syms, 1, &stat.dims[d]);
    if (!st) st = vkl_node_set_out(g, node, 1, ut, &stat);
    if (!st) st = vkl_node_set_out(g, node, 2, ut, &stat);
    return st;
}

static const vkl_attr_schema layer_norm_attrs[] = {
    {"axis", VKL_ATTR_INT, false, -1, 0, NULL},
    {"epsilon", VKL_ATTR_FLOAT, false, 0, 1e-5f, NULL},
    {"stash_type", VKL_ATTR_INT, false, 1, 0, NULL},
};

const vkl_op_info vkl_op_info_layer_normalization = {
    "LayerNormalization", "", 2, 3, 1, 3, false, -1, layer_norm_attrs, 3, infer_layer_norm};

/* RMSNorm: Scale must broadcast to X's dims [axis, r). */
static vkl_status infer_rms_norm(vkl_graph *g, uint32_t node) {
    const vkl_tensor *in[2];
    uint32_t ax;
    vkl_status st = vkl_nn_inputs(g, node, 2, in);
    if (st) return st;
    const vkl_tensor *x = in[0], *scale = in[1];
    st = vkl_nn_need_float(g, node, x, "X");
    if (!st) st = vkl_nn_need_float(g, node, scale, "Scale");
    if (!st) st = vkl_nn_axis(g, node, x, &ax);
    if (!st) {
        vkl_shape tail = vkl_nn_shape_tail(&x->shape, ax);
        st = vkl_nn_broadcast_to(g, node, &scale->shape, &tail, "Scale (over the normalized dims)");
    }
    if (!st) st = vkl_node_set_out(g, node, 0, x->dtype, &x->shape);
    return st;
}

static const vkl_attr_schema rms_norm_attrs[] = {
    {"axis", VKL_ATTR_INT, false, -1, 0, NULL},
    {"epsilon", VKL_ATTR_FLOAT, false, 0, 1e-5f, NULL},
};

/* RMSNorm (domain vkllm), inputs (X, Scale), attrs axis = -1, epsilon = 1e-5:
 *   Y = X / sqrt(mean(X^2 over dims [axis, r)) + epsilon) * Scale
 * Scale broadcast (right-aligned) over the normalized trailing dims only.
 * Computed in fp32 or wider (the ref kernel accumulates in double); Y has
 * X's shape and dtype. */
const vkl_op_info vkl_op_info_rms_norm = {"RMSNorm", "vkllm", 2, 2, 1, 1, false, -1, rms_norm_attrs, 2,
                                          infer_rms_norm};
