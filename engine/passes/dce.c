/* Dead code elimination: drop nodes whose results nobody reads. */
#include "passes.h"

vkl_status vkl_pass_dce(vkl_graph *g, uint32_t *removed) {
    uint32_t *uses = vkl_calloc(g->ctx, g->n_tensors ? g->n_tensors : 1, sizeof(uint32_t));
    if (!uses) return VKL_ERR_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const vkl_node *n = &g->nodes[i];
        if (n->dead) continue;
        for (uint32_t k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] != VKL_NONE) uses[n->inputs[k]]++;
    }
    for (uint32_t k = 0; k < g->n_outputs; k++) uses[g->outputs[k]]++;
    /* Visit in reverse creation order so chains die in one sweep when nodes
     * were added in topological order; sweep again until stable otherwise. */
    uint32_t count = 0;
    bool changed = true;
    while (changed) {
        changed = false;
        for (uint32_t i = g->n_nodes; i-- > 0;) {
            vkl_node *n = &g->nodes[i];
            if (n->dead) continue;
            bool live = false;
            for (uint32_t k = 0; k < n->n_outputs && !live; k++)
                live = n->outputs[k] != VKL_NONE && uses[n->outputs[k]] > 0;
            if (live) continue;
            n->dead = true;
            count++;
            changed = true;
            for (uint32_t k = 0; k < n->n_inputs; k++)
                if (n->inputs[k] != VKL_NONE) uses[n->inputs[k]]--;
        }
    }
    vkl_free(g->ctx, uses);
    *removed = count;
    return VKL_OK;
}
