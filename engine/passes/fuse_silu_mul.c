/* SwiGLU fusion: Mul(Mul(g, Sigmoid(g)), up) in any operand order ->
 * SiluMul(g, up). A bare SiLU (no product with `up`) stays as it is. */
#include "match.h"
#include "passes.h"

/* t = Mul(g, Sigmoid(g)) in either order: g (both nodes join pat). */
static uint32_t silu_of(vkl_graph *g, uint32_t t, vkl_pattern *pat) {
    uint32_t m = vkl_match_producer(g, t, VKL_OP_MUL);
    if (m == VKL_NONE || g->nodes[m].n_inputs != 2) return VKL_NONE;
    for (uint32_t k = 0; k < 2; k++) {
        uint32_t gate = g->nodes[m].inputs[1 - k], s = vkl_match_producer(g, g->nodes[m].inputs[k], VKL_OP_SIGMOID);
        if (s != VKL_NONE && gate != VKL_NONE && g->nodes[s].inputs[0] == gate && vkl_pattern_add(pat, m) &&
            vkl_pattern_add(pat, s))
            return gate;
    }
    return VKL_NONE;
}

static vkl_status try_silu_mul(vkl_graph *g, const vkl_uses *u, uint32_t node, bool *fused) {
    const vkl_node *n = &g->nodes[node];
    if (n->op != VKL_OP_MUL || n->n_inputs != 2 || n->n_outputs != 1) return VKL_OK;
    uint32_t out = n->outputs[0];
    for (uint32_t k = 0; k < 2; k++) {
        vkl_pattern pat = {0};
        uint32_t up = g->nodes[node].inputs[1 - k], gate;
        vkl_pattern_add(&pat, node);
        gate = silu_of(g, g->nodes[node].inputs[k], &pat);
        if (gate == VKL_NONE || up == VKL_NONE || !vkl_dtype_is_float(g->tensors[gate].dtype) ||
            !vkl_match_closed(g, u, pat.nodes, pat.n, out))
            continue;
        const uint32_t ins[2] = {gate, up};
        uint32_t fused_out;
        vkl_status st = vkl_match_add_node(g, VKL_OP_SILU_MUL, g->tensors[out].name, "silu_mul", ins, 2, NULL, 0,
                                           &fused_out);
        if (!st) st = vkl_match_replace(g, &pat, out, fused_out, fused);
        return st;
    }
    return VKL_OK;
}

vkl_status vkl_pass_fuse_silu_mul(vkl_graph *g, uint32_t *fused) {
    return vkl_match_each(g, try_silu_mul, fused);
}
