/* Delete shape-computing nodes whose outputs are known symbolically. */
#include "../ops.h"
#include "passes.h"

vkl_status vkl_pass_shape_ops(vkl_graph *g, uint32_t *removed) {
    uint32_t count = 0;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        vkl_node *n = &g->nodes[i];
        if (n->dead || n->n_outputs == 0) continue;
        const vkl_op_info *info = vkl_op_info_get((vkl_op)n->op);
        if (info && info->inplace_input >= 0) continue; /* writes state: never a shape op */
        bool all_known = true;
        for (uint32_t k = 0; k < n->n_outputs && all_known; k++) {
            uint32_t t = n->outputs[k];
            all_known = t == VKL_NONE || g->tensors[t].value != NULL;
        }
        if (!all_known) continue;
        /* A graph output must stay produced by a node. */
        bool is_output = false;
        for (uint32_t k = 0; k < n->n_outputs; k++)
            is_output |= n->outputs[k] != VKL_NONE && g->tensors[n->outputs[k]].is_output;
        if (is_output) continue;
        n->dead = true;
        for (uint32_t k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] != VKL_NONE) g->tensors[n->outputs[k]].producer = VKL_NONE;
        count++;
    }
    *removed = count;
    return VKL_OK;
}
