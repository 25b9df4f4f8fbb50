/* GELU fusion: 0.5 * x * (1 + erf(x / sqrt(2))) -> Gelu, and GPT-2's NewGELU
 * 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))) -> Gelu(tanh), in
 * whatever order the exporter multiplied the factors. */
#include "match.h"
#include "passes.h"

#define SQRT_HALF 0.70710678118654752440      /* 1/sqrt(2) */
#define SQRT_2_OVER_PI 0.79788456080286535588 /* sqrt(2/pi) */
#define GELU_CUBIC 0.044715

/* t = Add(1, e) in either order: e (the Add joins pat), else VKL_NONE. */
static uint32_t one_plus(vkl_graph *g, uint32_t t, vkl_pattern *pat) {
    uint32_t a = vkl_match_producer(g, t, VKL_OP_ADD), e = VKL_NONE;
    if (a == VKL_NONE) return VKL_NONE;
    const vkl_node *n = &g->nodes[a];
    if (vkl_match_scalar_eq(g, n->inputs[1], 1.0)) e = n->inputs[0];
    else if (vkl_match_scalar_eq(g, n->inputs[0], 1.0)) e = n->inputs[1];
    return e != VKL_NONE && vkl_pattern_add(pat, a) ? e : VKL_NONE;
}

/* t = c * x^power * rest, with `rest` the one other factor when wanted
 * (VKL_NONE: none allowed). The product's nodes join pat. */
static bool monomial(vkl_graph *g, const vkl_uses *u, uint32_t t, uint32_t x, uint32_t power, double c, uint32_t *rest,
                     vkl_pattern *pat) {
    vkl_product q;
    if (!vkl_match_product(g, u, t, &q) || q.n_den || !vkl_match_near(q.scale, c) ||
        vkl_product_count(&q, x) != power || q.n_num != power + (rest ? 1 : 0))
        return false;
    for (uint32_t i = 0; rest && i < q.n_num; i++)
        if (q.num[i] != x) *rest = q.num[i];
    for (uint32_t i = 0; i < q.nodes.n; i++)
        if (!vkl_pattern_add(pat, q.nodes.nodes[i])) return false;
    return true;
}

/* Tanh's argument: sqrt(2/pi) * (x + 0.044715 * x^3) (NewGELU), or
 * x * sqrt(2/pi) * (1 + 0.044715 * x^2) (FastGELU's factored form). */
static bool tanh_argument(vkl_graph *g, const vkl_uses *u, uint32_t z, uint32_t x, vkl_pattern *pat) {
    uint32_t s = VKL_NONE;
    if (monomial(g, u, z, x, 0, SQRT_2_OVER_PI, &s, pat)) {
        uint32_t a = vkl_match_producer(g, s, VKL_OP_ADD), cubic = VKL_NONE;
        if (a == VKL_NONE || !vkl_pattern_add(pat, a)) return false;
        if (g->nodes[a].inputs[0] == x) cubic = g->nodes[a].inputs[1];
        else if (g->nodes[a].inputs[1] == x) cubic = g->nodes[a].inputs[0];
        return cubic != VKL_NONE && monomial(g, u, cubic, x, 3, GELU_CUBIC, NULL, pat);
    }
    if (!monomial(g, u, z, x, 1, SQRT_2_OVER_PI, &s, pat)) return false;
    uint32_t square = one_plus(g, s, pat);
    return square != VKL_NONE && monomial(g, u, square, x, 2, GELU_CUBIC, NULL, pat);
}

/* Root: the Mul/Div whose product is 0.5 * x * a with a = 1 + erf/tanh(...). */
static vkl_status try_gelu(vkl_graph *g, const vkl_uses *u, uint32_t node, bool *fused) {
    const vkl_node *n = &g->nodes[node];
    if ((n->op != VKL_OP_MUL && n->op != VKL_OP_DIV) || n->n_outputs != 1) return VKL_OK;
    uint32_t out = n->outputs[0];
    vkl_product p;
    if (!vkl_match_product(g, u, out, &p) || p.n_den || p.n_num != 2 || !vkl_match_near(p.scale, 0.5)) return VKL_OK;
    for (uint32_t k = 0; k < 2; k++) {
        uint32_t x = p.num[1 - k], f;
        vkl_pattern pat = p.nodes;
        uint32_t e = one_plus(g, p.num[k], &pat);
        const char *approx = NULL;
        if ((f = vkl_match_producer(g, e, VKL_OP_ERF)) != VKL_NONE) {
            if (monomial(g, u, g->nodes[f].inputs[0], x, 1, SQRT_HALF, NULL, &pat)) approx = "none";
        } else if ((f = vkl_match_producer(g, e, VKL_OP_TANH)) != VKL_NONE) {
            if (tanh_argument(g, u, g->nodes[f].inputs[0], x, &pat)) approx = "tanh";
        }
        if (!approx || !vkl_pattern_add(&pat, f) || !vkl_match_keeps_shape(g, x, out) ||
            !vkl_match_closed(g, u, pat.nodes, pat.n, out))
            continue;
        const vkl_attr attr = {.name = "approximate", .kind = VKL_ATTR_STRING, .s = approx};
        uint32_t fused_out;
        vkl_status st = vkl_match_add_node(g, VKL_OP_GELU, g->tensors[out].name, "gelu", &x, 1, &attr, 1, &fused_out);
        if (!st) st = vkl_match_replace(g, &pat, out, fused_out, fused);
        return st;
    }
    return VKL_OK;
}

vkl_status vkl_pass_fuse_gelu(vkl_graph *g, uint32_t *fused) {
    return vkl_match_each(g, try_gelu, fused);
}
