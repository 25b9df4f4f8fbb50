/* Pattern-matching helpers for the fusion passes. */
#include <stdio.h>
#include <string.h>

#include "../ops/shape_util.h"
#include "match.h"

vkl_status vkl_uses_build(const vkl_graph *g, vkl_uses *u) {
    u->n = g->n_tensors;
    u->count = vkl_calloc(g->ctx, u->n ? u->n : 1, sizeof(uint32_t));
    if (!u->count) return VKL_ERR_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const vkl_node *n = &g->nodes[i];
        if (n->dead) continue;
        for (uint32_t k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] != VKL_NONE) u->count[n->inputs[k]]++;
    }
    for (uint32_t k = 0; k < g->n_outputs; k++) u->count[g->outputs[k]]++;
    return VKL_OK;
}

void vkl_uses_free(const vkl_graph *g, vkl_uses *u) {
    vkl_free(g->ctx, u->count);
    u->count = NULL;
}

void vkl_uses_retire(const vkl_graph *g, vkl_uses *u, uint32_t node) {
    const vkl_node *n = &g->nodes[node];
    for (uint32_t k = 0; k < n->n_inputs; k++)
        if (n->inputs[k] != VKL_NONE && n->inputs[k] < u->n && u->count[n->inputs[k]]) u->count[n->inputs[k]]--;
}

uint32_t vkl_match_producer(const vkl_graph *g, uint32_t t, vkl_op op) {
    if (t == VKL_NONE || t >= g->n_tensors) return VKL_NONE;
    uint32_t p = g->tensors[t].producer;
    if (p == VKL_NONE || p >= g->n_nodes || g->nodes[p].dead || g->nodes[p].op != (uint32_t)op) return VKL_NONE;
    return p;
}

bool vkl_match_scalar(const vkl_graph *g, uint32_t t, double *value) {
    if (t == VKL_NONE || t >= g->n_tensors) return false;
    const vkl_tensor *w = &g->tensors[t];
    int64_t n;
    if (w->kind != VKL_TENSOR_WEIGHT || !vkl_shape_const_numel(g, &w->shape, &n) || n < 1 || n > 4096) return false;
    double first;
    if (!vkl_tensor_const_scalar(w, 0, &first)) return false;
    for (int64_t i = 1; i < n; i++) {
        double v;
        if (!vkl_tensor_const_scalar(w, i, &v) || v != first) return false;
    }
    *value = first;
    return true;
}

bool vkl_match_scalar_eq(const vkl_graph *g, uint32_t t, double v) {
    double x;
    if (!vkl_match_scalar(g, t, &x)) return false;
    double d = x - v, scale = v < 0 ? -v : v;
    if (d < 0) d = -d;
    return d <= 1e-6 * (scale > 1 ? scale : 1);
}

uint32_t vkl_match_other_input(const vkl_graph *g, uint32_t n, uint32_t known) {
    const vkl_node *node = &g->nodes[n];
    if (node->n_inputs != 2) return VKL_NONE;
    if (node->inputs[0] == known) return node->inputs[1];
    if (node->inputs[1] == known) return node->inputs[0];
    return VKL_NONE;
}

vkl_status vkl_match_new_tensor(vkl_graph *g, const char *base, const char *suffix, uint32_t *id) {
    char name[512];
    uint32_t existing;
    snprintf(name, sizeof(name), "%s.%s", base, suffix);
    for (unsigned k = 2; vkl_graph_find_tensor(g, name, &existing) == VKL_OK; k++)
        snprintf(name, sizeof(name), "%s.%s%u", base, suffix, k);
    return vkl_graph_add_tensor(g, name, VKL_DTYPE_INVALID, VKL_TENSOR_ACTIVATION, NULL, id);
}

bool vkl_match_const_int(vkl_graph *g, uint32_t t, int64_t *v) {
    uint32_t n;
    int64_t tmp[1];
    if (t == VKL_NONE || t >= g->n_tensors || !vkl_tensor_const_ints(g, &g->tensors[t], tmp, 1, &n) || n != 1)
        return false;
    *v = tmp[0];
    return true;
}

bool vkl_match_axis(int64_t axis, uint32_t rank, uint32_t *out) {
    if (axis < -(int64_t)rank || axis >= (int64_t)rank) return false;
    *out = (uint32_t)(axis < 0 ? axis + rank : axis);
    return true;
}

bool vkl_match_one_axis(vkl_graph *g, uint32_t node, uint32_t k, uint32_t rank, uint32_t *axis) {
    const vkl_node *n = &g->nodes[node];
    int64_t a;
    return k < n->n_inputs && vkl_match_const_int(g, n->inputs[k], &a) && vkl_match_axis(a, rank, axis);
}

bool vkl_match_perm(const vkl_graph *g, uint32_t node, uint32_t perm[VKL_MAX_RANK], uint32_t *rank) {
    const vkl_node *n = &g->nodes[node];
    if (n->op != VKL_OP_TRANSPOSE || n->n_inputs != 1 || n->inputs[0] == VKL_NONE) return false;
    uint32_t r = g->tensors[n->inputs[0]].shape.rank, seen = 0;
    const vkl_attr *a = vkl_node_attr(n, "perm");
    if (r > VKL_MAX_RANK) return false;
    if (!a) {
        for (uint32_t d = 0; d < r; d++) perm[d] = r - 1 - d;
    } else {
        if (a->kind != VKL_ATTR_INTS || a->count != r) return false;
        for (uint32_t d = 0; d < r; d++) {
            uint32_t p;
            if (!vkl_match_axis(a->ints[d], r, &p) || (seen >> p & 1)) return false;
            seen |= 1u << p;
            perm[d] = p;
        }
    }
    *rank = r;
    return true;
}

vkl_status vkl_match_add_node(vkl_graph *g, vkl_op op, const char *base, const char *suffix, const uint32_t *inputs,
                              uint32_t n_inputs, const vkl_attr *attrs, uint32_t n_attrs, uint32_t *out) {
    uint32_t t, node;
    *out = VKL_NONE;
    vkl_status st = vkl_match_new_tensor(g, base, suffix, &t);
    if (!st) st = vkl_graph_add_node(g, op, g->tensors[t].name, inputs, n_inputs, &t, 1, attrs, n_attrs, &node);
    if (st) return st;
    st = vkl_op_info_get(op)->infer(g, node);
    if (st == VKL_ERR_OUT_OF_MEMORY) return st;
    if (st) {
        g->nodes[node].dead = true;
        g->tensors[t].producer = VKL_NONE;
        return VKL_OK;
    }
    *out = t;
    return VKL_OK;
}
