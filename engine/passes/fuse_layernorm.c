/* LayerNorm fusion: the decomposed form (x - mean) / sqrt(var + eps)
 * [* gamma] [+ beta] over the last axis -> LayerNormalization. Native
 * LayerNormalization nodes are left alone (and not counted here). */
#include "match.h"
#include "passes.h"

/* The pattern ending at `node` (result `out`): `scaled` is the normalized
 * value times gamma?, `beta` the bias added to it (VKL_NONE: no bias Add;
 * `scaled` is then `out`). */
static vkl_status fuse(vkl_graph *g, const vkl_uses *u, uint32_t node, uint32_t out, uint32_t scaled, uint32_t beta,
                       bool *fused) {
    uint32_t gamma, d, x, factor, sub, mean;
    double eps;
    vkl_product p;
    vkl_pattern pat = {0};
    if (beta != VKL_NONE) {
        if (vkl_uses_get(g, u, scaled) != 1 || (vkl_match_producer(g, scaled, VKL_OP_MUL) == VKL_NONE &&
                                                vkl_match_producer(g, scaled, VKL_OP_DIV) == VKL_NONE))
            return VKL_OK;
        vkl_pattern_add(&pat, node);
    }
    if (!vkl_match_product(g, u, scaled, &p) || !vkl_match_near(p.scale, 1.0)) return VKL_OK;
    for (uint32_t i = 0; i < p.nodes.n; i++)
        if (!vkl_pattern_add(&pat, p.nodes.nodes[i])) return VKL_OK;
    if (!vkl_match_inv_rms(g, &p, &pat, &d, &eps, &factor) || !vkl_match_norm_factors(&p, factor, d, &gamma))
        return VKL_OK;
    sub = vkl_match_centered(g, d, &x, &mean);
    if (sub == VKL_NONE || !vkl_pattern_add(&pat, sub) || !vkl_pattern_add(&pat, mean) ||
        !vkl_match_keeps_shape(g, x, out) || !vkl_match_closed(g, u, pat.nodes, pat.n, out))
        return VKL_OK;
    return vkl_match_emit_norm(g, VKL_OP_LAYER_NORMALIZATION, &pat, out, x, gamma, beta, eps, fused);
}

/* Root: Add(scaled, beta) in either order, else the Mul/Div of the
 * normalized value (consumers are offered first, so the bias is kept). */
static vkl_status try_layernorm(vkl_graph *g, const vkl_uses *u, uint32_t node, bool *fused) {
    const vkl_node *n = &g->nodes[node];
    if (n->n_outputs != 1 || n->n_inputs != 2) return VKL_OK;
    uint32_t out = n->outputs[0], in0 = n->inputs[0], in1 = n->inputs[1];
    if (n->op == VKL_OP_MUL || n->op == VKL_OP_DIV) return fuse(g, u, node, out, out, VKL_NONE, fused);
    if (n->op != VKL_OP_ADD || in0 == VKL_NONE || in1 == VKL_NONE) return VKL_OK;
    vkl_status st = fuse(g, u, node, out, in0, in1, fused);
    if (!st && !*fused) st = fuse(g, u, node, out, in1, in0, fused);
    return st;
}

vkl_status vkl_pass_fuse_layernorm(vkl_graph *g, uint32_t *fused) {
    return vkl_match_each(g, try_layernorm, fused);
}
