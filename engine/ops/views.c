/* Which nodes only re-view their input's bytes: the output's elements are
 * the input's, in the same order. Reshape, Flatten, Squeeze, Unsqueeze and
 * Identity always are; a Transpose is when its permutation moves only dims
 * of size 1 past each other (a decode step's [1, 1, H, D] -> [1, H, 1, D]
 * around attention). The planner gives such an output its input's memory,
 * so backends dispatch nothing for it. */
#include "../ops.h"

/* Transpose keeps the element order iff the dims of size > 1, read in
 * output order, appear in increasing input order. */
static bool transpose_keeps_order(vkl_context *ctx, const vkl_graph *g, uint32_t node, const int64_t *values,
                                  size_t count) {
    const vkl_node *n = &g->nodes[node];
    const vkl_tensor *in = &g->tensors[n->inputs[0]];
    int64_t dims[VKL_MAX_RANK], elements;
    if (vkl_shape_eval(ctx, g, &in->shape, values, count, dims, &elements)) return false;
    const uint32_t r = in->shape.rank;
    const int64_t *perm = NULL;
    uint32_t np = 0, p[VKL_MAX_RANK];
    if (vkl_op_attr_ints(g, node, "perm", &perm, &np) || (perm && np != r)) return false;
    for (uint32_t d = 0; d < r; d++) {
        int64_t v = perm ? perm[d] : (int64_t)(r - 1 - d);
        if (v < 0) v += r;
        if (v < 0 || v >= (int64_t)r) return false;
        p[d] = (uint32_t)v;
    }
    int64_t last = -1;
    for (uint32_t d = 0; d < r; d++) {
        if (dims[p[d]] == 1) continue;
        if ((int64_t)p[d] < last) return false;
        last = p[d];
    }
    return true;
}

uint32_t vkl_node_view_input(vkl_context *ctx, const vkl_graph *g, uint32_t node, const int64_t *values,
                             size_t count) {
    const vkl_node *n = &g->nodes[node];
    if (n->dead || !n->n_inputs || !n->n_outputs || n->inputs[0] == VKL_NONE || n->outputs[0] == VKL_NONE)
        return VKL_NONE;
    const vkl_tensor *in = &g->tensors[n->inputs[0]], *out = &g->tensors[n->outputs[0]];
    /* weights live outside the arena; a pinned shape value is rewritten at every execute */
    if (in->kind == VKL_TENSOR_WEIGHT || (in->value && in->producer == VKL_NONE) || in->dtype != out->dtype ||
        in->kind == VKL_TENSOR_STATE)
        return VKL_NONE;
    /* under a binding, only if the element counts agree: a reshape that is
     * wrong at run time runs its kernel, which names the error */
    int64_t dims[VKL_MAX_RANK], in_elements, out_elements;
    if (values && (vkl_shape_eval(ctx, g, &in->shape, values, count, dims, &in_elements) ||
                   vkl_shape_eval(ctx, g, &out->shape, values, count, dims, &out_elements) ||
                   in_elements != out_elements))
        return VKL_NONE;
    switch (n->op) {
    case VKL_OP_RESHAPE: case VKL_OP_FLATTEN: case VKL_OP_SQUEEZE: case VKL_OP_UNSQUEEZE: case VKL_OP_IDENTITY:
        return n->inputs[0];
    case VKL_OP_TRANSPOSE:
        return !values || transpose_keeps_order(ctx, g, node, values, count) ? n->inputs[0] : VKL_NONE;
    default:
        return VKL_NONE;
    }
}
