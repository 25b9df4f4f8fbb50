/* Constant folding: a node computed only from weights (and constant shape
 * values) runs once at import on the ref backend, and its outputs become
 * weights. Chains fold in one sweep (topological order); sweeps repeat
 * until nothing folds. */
#include <stdio.h>
#include <string.h>

#include "../backend.h"
#include "../context.h"
#include "../ops/shape_util.h"
#include "../run_once.h"
#include "match.h"
#include "passes.h"

/* Folding must not bloat the model: a small constant expanded to a huge
 * one is cheaper to compute at run time. */
#define FOLD_MAX_BYTES ((size_t)16 << 20)

static bool const_dims(const vkl_graph *g, const vkl_shape *s, int64_t *dims) {
    for (uint32_t d = 0; d < s->rank; d++)
        if (!vkl_expr_is_const(g->syms, s->dims[d], &dims[d])) return false;
    return true;
}

/* A weight, or a tensor with a constant value and no producer (a shape
 * tensor shape_ops left behind). */
static bool const_input(const vkl_graph *g, uint32_t t) {
    const vkl_tensor *x = &g->tensors[t];
    int64_t numel, v;
    if (!vkl_shape_const_numel(g, &x->shape, &numel) || !vkl_dtype_valid(x->dtype) || vkl_dtype_is_quantized(x->dtype))
        return false;
    if (x->kind == VKL_TENSOR_WEIGHT) return x->data || !x->nbytes;
    if (x->kind != VKL_TENSOR_ACTIVATION || !x->value || x->producer != VKL_NONE || numel != (int64_t)x->value_count)
        return false;
    for (uint32_t i = 0; i < x->value_count; i++)
        if (!vkl_expr_is_const(g->syms, x->value[i], &v)) return false;
    return vkl_dtype_is_int(x->dtype) || x->dtype == VKL_DTYPE_BOOL;
}

static bool foldable(const vkl_graph *g, uint32_t node) {
    const vkl_node *n = &g->nodes[node];
    const vkl_op_info *info = vkl_op_info_get((vkl_op)n->op);
    size_t total = 0, bytes;
    bool any_out = false;
    if (n->dead || !info || info->shape_source || info->inplace_input >= 0) return false;
    for (uint32_t k = 0; k < n->n_inputs; k++)
        if (n->inputs[k] != VKL_NONE && !const_input(g, n->inputs[k])) return false;
    for (uint32_t k = 0; k < n->n_outputs; k++) {
        if (n->outputs[k] == VKL_NONE) continue;
        const vkl_tensor *t = &g->tensors[n->outputs[k]];
        int64_t count;
        /* A graph output stays produced by a node. */
        if (t->is_output || !vkl_dtype_valid(t->dtype) || vkl_dtype_is_quantized(t->dtype) ||
            !vkl_shape_const_numel(g, &t->shape, &count) || !vkl_tensor_bytes(t->dtype, 0, count, &bytes) ||
            !vkl_add_size(total, bytes, &total) || total > FOLD_MAX_BYTES)
            return false;
        any_out = true;
    }
    return any_out;
}

/* Little-endian bytes of integer value v as dtype. */
static void put_int(unsigned char *p, vkl_dtype dt, int64_t v) {
    size_t es = vkl_dtype_size(dt);
    uint64_t u = (uint64_t)v;
    if (dt == VKL_DTYPE_BOOL) u = v != 0;
    for (size_t b = 0; b < es; b++) p[b] = (unsigned char)(u >> (8 * b));
}

/* Copy tensor t of g into the one-node graph h as a weight named `name`. */
static vkl_status copy_const(const vkl_graph *g, vkl_graph *h, uint32_t t, const char *name, uint32_t *id) {
    const vkl_tensor *x = &g->tensors[t];
    int64_t dims[VKL_MAX_RANK];
    vkl_shape s;
    const_dims(g, &x->shape, dims);
    vkl_status st = vkl_shape_from_ints(h, dims, x->shape.rank, &s);
    if (!st) st = vkl_graph_add_tensor(h, name, x->dtype, VKL_TENSOR_WEIGHT, &s, id);
    if (st || x->kind == VKL_TENSOR_WEIGHT) return st ? st : vkl_graph_set_data(h, *id, x->data, x->nbytes, false);
    size_t es = vkl_dtype_size(x->dtype);
    unsigned char *buf = vkl_calloc(g->ctx, x->value_count ? x->value_count : 1, es);
    if (!buf) return VKL_ERR_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < x->value_count; i++) {
        int64_t v = 0;
        vkl_expr_is_const(g->syms, x->value[i], &v);
        put_int(buf + (size_t)i * es, x->dtype, v);
    }
    st = vkl_graph_set_data(h, *id, buf, (size_t)x->value_count * es, true);
    vkl_free(g->ctx, buf);
    return st;
}

/* The node alone in a new graph h: its constant inputs (and tensor
 * attributes) as weights, its present outputs as graph outputs. */
static vkl_status build_single(const vkl_graph *g, uint32_t node, vkl_graph *h, vkl_attr *attrs, uint32_t *ins,
                               uint32_t *outs) {
    const vkl_node *n = &g->nodes[node];
    char name[32];
    vkl_status st = VKL_OK;
    for (uint32_t k = 0; !st && k < n->n_inputs; k++) {
        ins[k] = VKL_NONE;
        for (uint32_t j = 0; j < k && ins[k] == VKL_NONE; j++)
            if (n->inputs[j] == n->inputs[k]) ins[k] = ins[j];
        snprintf(name, sizeof(name), "in%u", k);
        if (n->inputs[k] != VKL_NONE && ins[k] == VKL_NONE) st = copy_const(g, h, n->inputs[k], name, &ins[k]);
    }
    for (uint32_t a = 0; !st && a < n->n_attrs; a++) {
        attrs[a] = n->attrs[a];
        if (attrs[a].kind != VKL_ATTR_TENSOR) continue;
        uint32_t id;
        snprintf(name, sizeof(name), "attr%u", a);
        if (attrs[a].i < 0 || attrs[a].i >= (int64_t)g->n_tensors || !const_input(g, (uint32_t)attrs[a].i))
            return vkl_fail(g->ctx, VKL_ERR_FORMAT, "fold: a tensor attribute is not a weight");
        st = copy_const(g, h, (uint32_t)attrs[a].i, name, &id);
        attrs[a].i = id;
    }
    for (uint32_t k = 0; !st && k < n->n_outputs; k++) {
        outs[k] = VKL_NONE;
        if (n->outputs[k] == VKL_NONE) continue;
        snprintf(name, sizeof(name), "out%u", k);
        st = vkl_graph_add_tensor(h, name, VKL_DTYPE_INVALID, VKL_TENSOR_ACTIVATION, NULL, &outs[k]);
        if (!st) st = vkl_graph_add_output(h, outs[k]);
    }
    if (!st) st = vkl_graph_add_node(h, n->op, n->name ? n->name : "fold", ins, n->n_inputs, outs, n->n_outputs, attrs, n->n_attrs, NULL);
    return st;
}

/* h's inferred outputs must be what g expects: same dtype, same dims. */
static bool same_outputs(const vkl_graph *g, uint32_t node, const vkl_graph *h, const uint32_t *outs) {
    const vkl_node *n = &g->nodes[node];
    for (uint32_t k = 0; k < n->n_outputs; k++) {
        if (n->outputs[k] == VKL_NONE) continue;
        const vkl_tensor *a = &g->tensors[n->outputs[k]], *b = &h->tensors[outs[k]];
        int64_t da[VKL_MAX_RANK], db[VKL_MAX_RANK];
        if (a->dtype != b->dtype || a->shape.rank != b->shape.rank || !const_dims(g, &a->shape, da) ||
            !const_dims(h, &b->shape, db) || (a->shape.rank && memcmp(da, db, a->shape.rank * sizeof(int64_t))))
            return false;
    }
    return true;
}

/* Run the node on its constants; on success its outputs are replaced by
 * weights and it dies. A node the shape rule or kernel rejects is left to
 * fail (or not) at run time: *folded stays false. */
static vkl_status fold_node(vkl_graph *g, const vkl_backend_vtable *ref, uint32_t node, bool *folded) {
    const vkl_node *n = &g->nodes[node];
    uint32_t n_in = n->n_inputs, n_out = n->n_outputs, n_present = 0;
    vkl_graph *h = NULL;
    vkl_attr *attrs = vkl_calloc(g->ctx, n->n_attrs + 1, sizeof(vkl_attr));
    uint32_t *ids = vkl_calloc(g->ctx, n_in + n_out + 1, sizeof(uint32_t));
    vkl_host_tensor *res = vkl_calloc(g->ctx, n_out + 1, sizeof(vkl_host_tensor));
    vkl_status st = attrs && ids && res ? vkl_graph_create(g->ctx, &h) : VKL_ERR_OUT_OF_MEMORY;
    *folded = false;
    bool ok = false;
    if (!st) {
        st = build_single(g, node, h, attrs, ids, ids + n_in);
        ok = !st;
        if (st != VKL_ERR_OUT_OF_MEMORY) st = VKL_OK; /* a malformed node is left as it is */
    }
    ok = ok && vkl_graph_infer_shapes(h) == VKL_OK && same_outputs(g, node, h, ids + n_in);
    if (ok) ok = vkl_run_once(g->ctx, ref, h, NULL, res) == VKL_OK;
    for (uint32_t k = 0; ok && !st && k < n_out; k++) {
        uint32_t old = g->nodes[node].outputs[k], id;
        if (old == VKL_NONE) continue;
        const vkl_tensor *t = &g->tensors[old];
        vkl_shape s = t->shape;
        st = vkl_match_new_weight(g, t->name, "folded", t->dtype, &s, res[n_present].data, res[n_present].nbytes, &id);
        if (!st) st = vkl_graph_replace_uses(g, old, id);
        n_present++;
    }
    if (ok && !st) {
        g->nodes[node].dead = true;
        *folded = true;
    }
    if (ok) /* run_once allocated every output */
        for (uint32_t k = 0; k < h->n_outputs; k++) vkl_free(g->ctx, res[k].data);
    if (h) vkl_graph_destroy(h);
    vkl_free(g->ctx, attrs);
    vkl_free(g->ctx, ids);
    vkl_free(g->ctx, res);
    return st;
}

vkl_status vkl_pass_fold(vkl_graph *g, uint32_t *folded) {
    const vkl_backend_vtable *ref = vkl_backend_find("ref");
    uint32_t n = g->n_nodes, count;
    uint32_t *order = vkl_calloc(g->ctx, n ? n : 1, sizeof(uint32_t));
    bool *failed = vkl_calloc(g->ctx, n ? n : 1, sizeof(bool));
    vkl_status st = order && failed ? VKL_OK : VKL_ERR_OUT_OF_MEMORY;
    bool changed = ref != NULL;
    *folded = 0;
    while (!st && changed) {
        changed = false;
        st = vkl_graph_topo_order(g->ctx, g, order, &count);
        for (uint32_t k = 0; !st && k < count; k++) {
            uint32_t i = order[k];
            bool done;
            if (i >= n || failed[i] || !foldable(g, i)) continue;
            st = fold_node(g, ref, i, &done);
            failed[i] = !done;
            *folded += done;
            changed |= done;
        }
    }
    vkl_free(g->ctx, order);
    vkl_free(g->ctx, failed);
    return st;
}
