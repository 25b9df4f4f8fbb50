/* RMSNorm fusion: x / sqrt(mean(x^2, last axis) + eps) [* weight], in every
 * operand order the TorchScript and dynamo exporters write, -> RMSNorm. */
#include "match.h"
#include "passes.h"

/* Root: the Mul/Div whose product is x * weight? / sqrt(...). Consumers are
 * offered first, so Mul(weight, Mul(x, rsqrt)) is taken whole. */
static vkl_status try_rmsnorm(vkl_graph *g, const vkl_uses *u, uint32_t node, bool *fused) {
    const vkl_node *n = &g->nodes[node];
    if ((n->op != VKL_OP_MUL && n->op != VKL_OP_DIV) || n->n_outputs != 1) return VKL_OK;
    uint32_t out = n->outputs[0], x, factor, w, centred_x, mean;
    double eps;
    vkl_product p;
    if (!vkl_match_product(g, u, out, &p) || !vkl_match_near(p.scale, 1.0)) return VKL_OK;
    vkl_pattern pat = p.nodes;
    if (!vkl_match_inv_rms(g, &p, &pat, &x, &eps, &factor) || !vkl_match_norm_factors(&p, factor, x, &w) ||
        !vkl_match_keeps_shape(g, x, out) || !vkl_match_closed(g, u, pat.nodes, pat.n, out))
        return VKL_OK;
    /* The RMS of x - mean(x) is LayerNorm: fuse_layernorm takes it whole. */
    if (vkl_match_centered(g, x, &centred_x, &mean) != VKL_NONE) return VKL_OK;
    return vkl_match_emit_norm(g, VKL_OP_RMS_NORM, &pat, out, x, w, VKL_NONE, eps, fused);
}

vkl_status vkl_pass_fuse_rmsnorm(vkl_graph *g, uint32_t *fused) {
    return vkl_match_each(g, try_rmsnorm, fused);
}
