/* Remove nodes that compute nothing: Identity, Dropout at inference, and a
 * Cast to the dtype its input already has (exporters emit f32 -> f32 casts
 * around every norm). Consumers then read the input directly, which lets
 * the fusion patterns see through. */
#include "../ops.h"
#include "passes.h"

static bool is_noop(const vkl_graph *g, const vkl_node *n) {
    if (n->n_inputs < 1 || n->inputs[0] == VKL_NONE || !n->n_outputs || n->outputs[0] == VKL_NONE) return false;
    const vkl_tensor *in = &g->tensors[n->inputs[0]], *out = &g->tensors[n->outputs[0]];
    switch ((vkl_op)n->op) {
    case VKL_OP_IDENTITY: return true;
    /* Dropout's mask output, if read, keeps the node alive. */
    case VKL_OP_DROPOUT: return n->n_outputs < 2 || n->outputs[1] == VKL_NONE;
    case VKL_OP_CAST: case VKL_OP_CAST_LIKE: return in->dtype == out->dtype && in->dtype != VKL_DTYPE_INVALID;
    default: return false;
    }
}

vkl_status vkl_pass_identity(vkl_graph *g, uint32_t *removed) {
    uint32_t count = 0;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        vkl_node *n = &g->nodes[i];
        if (n->dead || !is_noop(g, n)) continue;
        uint32_t in = n->inputs[0], out = n->outputs[0];
        /* A graph input passed straight to a graph output must keep a node. */
        if (g->tensors[out].is_output && g->tensors[in].kind != VKL_TENSOR_ACTIVATION) continue;
        if (g->tensors[out].is_output && g->tensors[in].is_output) continue;
        n->dead = true;
        vkl_status st = vkl_graph_replace_uses(g, out, in);
        if (st) return st;
        count++;
    }
    *removed = count;
    return VKL_OK;
}
