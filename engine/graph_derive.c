/* vkl_graph_derive: a rewritable copy of a graph that shares what no
 * rewrite changes (names, attributes, values, weight bytes, the symbol
 * table) with its base. */
#include <string.h>

#include "graph.h"

/* `count` elements of `size` bytes into a fresh array of the context's
 * (at least one element, so an empty list is not mistaken for a failure). */
static void *copy_array(vkl_context *ctx, const void *src, uint32_t count, size_t size) {
    void *dst = vkl_calloc(ctx, count ? count : 1, size);
    if (dst && count) memcpy(dst, src, (size_t)count * size);
    return dst;
}

vkl_status vkl_graph_derive(const vkl_graph *base, vkl_graph **out) {
    *out = NULL;
    vkl_context *ctx = base->ctx;
    vkl_graph *g = vkl_calloc(ctx, 1, sizeof(*g));
    if (!g) return VKL_ERR_OUT_OF_MEMORY;
    g->ctx = ctx;
    g->base = base;
    g->syms = base->syms;
    vkl_arena_init(&g->arena, ctx);
    g->tensors = copy_array(ctx, base->tensors, base->n_tensors, sizeof(vkl_tensor));
    g->nodes = copy_array(ctx, base->nodes, base->n_nodes, sizeof(vkl_node));
    g->inputs = copy_array(ctx, base->inputs, base->n_inputs, sizeof(uint32_t));
    g->outputs = copy_array(ctx, base->outputs, base->n_outputs, sizeof(uint32_t));
    g->name_slots = copy_array(ctx, base->name_slots, base->name_cap, sizeof(uint32_t));
    g->n_tensors = g->cap_tensors = base->n_tensors;
    g->n_nodes = g->cap_nodes = base->n_nodes;
    g->n_inputs = g->cap_inputs = base->n_inputs;
    g->n_outputs = g->cap_outputs = base->n_outputs;
    g->name_cap = base->name_cap;
    bool ok = g->tensors && g->nodes && g->inputs && g->outputs && g->name_slots;
    /* every node's lists are its own, so rewiring one leaves the base alone */
    for (uint32_t i = 0; ok && i < g->n_nodes; i++) {
        vkl_node *n = &g->nodes[i];
        uint32_t *in = vkl_arena_alloc(&g->arena, ((size_t)n->n_inputs + n->n_outputs + 1) * sizeof(uint32_t));
        ok = in != NULL;
        if (!ok) break;
        memcpy(in, n->inputs, (size_t)n->n_inputs * sizeof(uint32_t));
        memcpy(in + n->n_inputs, n->outputs, (size_t)n->n_outputs * sizeof(uint32_t));
        n->inputs = in;
        n->outputs = in + n->n_inputs;
    }
    if (!ok) {
        vkl_graph_destroy(g);
        return VKL_ERR_OUT_OF_MEMORY;
    }
    *out = g;
    return VKL_OK;
}
