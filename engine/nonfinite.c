/* check_finite: from the backend's first non-finite node output to a message
 * a person can act on (which node, which tensor, which element, and whether
 * a weight it read is itself non-finite: the usual cause is a corrupt file
 * loaded without verification). */
#include <math.h>
#include <stdio.h>

#include "nonfinite.h"
#include "ops.h"

static const char *kind_of(double v) { return isnan(v) ? "NaN" : v > 0 ? "+inf" : "-inf"; }

/* The first f32 weight input of node `ni` holding a NaN or infinity, or
 * VKL_NONE (other dtypes: the output check already caught what they feed). */
static uint32_t nonfinite_weight(const vkl_graph *g, uint32_t ni, size_t *at) {
    const vkl_node *n = &g->nodes[ni];
    for (uint32_t k = 0; k < n->n_inputs; k++) {
        uint32_t t = n->inputs[k];
        if (t == VKL_NONE || g->tensors[t].kind != VKL_TENSOR_WEIGHT || g->tensors[t].dtype != VKL_DTYPE_F32) continue;
        const float *w = g->tensors[t].data;
        for (size_t i = 0; w && i < g->tensors[t].nbytes / sizeof(float); i++)
            if (!isfinite(w[i])) {
                *at = i;
                return t;
            }
    }
    return VKL_NONE;
}

vkl_status vkl_nonfinite_check_logits(vkl_context *ctx, const vkl_graph *g, const vkl_nonfinite *first,
                                      const float *logits, size_t n) {
    size_t bad = 0;
    while (bad < n && isfinite(logits[bad])) bad++;
    if (bad == n) return VKL_OK;
    if (!first->found || first->node >= g->n_nodes)
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT,
                        "check_finite: logit %zu is %s, but no node output held a non-finite value", bad,
                        kind_of(logits[bad]));
    char node[192], weight[192] = "";
    vkl_node_str(g, first->node, node, sizeof(node));
    uint32_t out = g->nodes[first->node].outputs[first->output];
    size_t at = 0;
    uint32_t w = nonfinite_weight(g, first->node, &at);
    if (w != VKL_NONE)
        snprintf(weight, sizeof(weight), "; its weight '%.64s' holds %s at element %zu (a corrupt file?)",
                 g->tensors[w].name, kind_of(((const float *)g->tensors[w].data)[at]), at);
    return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT,
                    "check_finite: logit %zu is %s; non-finite values first appeared in %s: output %u '%.64s' "
                    "element %lld is %s%s",
                    bad, kind_of(logits[bad]), node, first->output, out == VKL_NONE ? "" : g->tensors[out].name,
                    (long long)first->element, kind_of(first->value), weight);
}
