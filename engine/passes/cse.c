/* Common subexpression elimination: equal small weights become one tensor,
 * then nodes with the same op, inputs and attributes become one node. */
#include <string.h>

#include "../ops.h"
#include "../ops/shape_util.h"
#include "passes.h"

static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h;
}

static uint64_t hash_bytes(const void *p, size_t n) {
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static bool attr_equal(const vkl_attr *a, const vkl_attr *b) {
    if (strcmp(a->name, b->name) || a->kind != b->kind) return false;
    switch (a->kind) {
    case VKL_ATTR_INT: case VKL_ATTR_TENSOR: return a->i == b->i;
    case VKL_ATTR_FLOAT: return memcmp(&a->f, &b->f, sizeof(float)) == 0;
    case VKL_ATTR_STRING: return !strcmp(a->s, b->s);
    case VKL_ATTR_INTS: return a->count == b->count && (!a->count || !memcmp(a->ints, b->ints, a->count * sizeof(int64_t)));
    case VKL_ATTR_FLOATS: return a->count == b->count && (!a->count || !memcmp(a->floats, b->floats, a->count * sizeof(float)));
    default: return false;
    }
}

static bool node_equal(const vkl_node *a, const vkl_node *b) {
    if (a->op != b->op || a->n_inputs != b->n_inputs || a->n_outputs != b->n_outputs || a->n_attrs != b->n_attrs)
        return false;
    if (memcmp(a->inputs, b->inputs, a->n_inputs * sizeof(uint32_t))) return false;
    for (uint32_t k = 0; k < a->n_outputs; k++)
        if ((a->outputs[k] == VKL_NONE) != (b->outputs[k] == VKL_NONE)) return false;
    for (uint32_t i = 0; i < a->n_attrs; i++) {
        const vkl_attr *other = vkl_node_attr(b, a->attrs[i].name);
        if (!other || !attr_equal(&a->attrs[i], other)) return false;
    }
    return true;
}

static bool weight_equal(const vkl_tensor *a, const vkl_tensor *b) {
    return a->dtype == b->dtype && a->group == b->group && vkl_shape_equal(&a->shape, &b->shape) &&
           a->nbytes == b->nbytes && (!a->nbytes || !memcmp(a->data, b->data, a->nbytes));
}

/* Open-addressing table of candidate indexes keyed by a 64-bit hash. */
typedef struct table {
    uint64_t *keys;
    uint32_t *vals;
    uint32_t cap;
} table;

static vkl_status table_init(vkl_context *ctx, table *t, uint32_t n) {
    t->cap = 16;
    while (t->cap < 2 * n + 16) t->cap *= 2;
    t->keys = vkl_calloc(ctx, t->cap, sizeof(uint64_t));
    t->vals = vkl_calloc(ctx, t->cap, sizeof(uint32_t));
    if (!t->keys || !t->vals) return VKL_ERR_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < t->cap; i++) t->vals[i] = VKL_NONE;
    return VKL_OK;
}

static void table_free(vkl_context *ctx, table *t) {
    vkl_free(ctx, t->keys);
    vkl_free(ctx, t->vals);
}

/* Small weights only: large ones (matrices) are never duplicated by
 * exporters and hashing them costs a pass over the model. */
#define CSE_WEIGHT_MAX_BYTES 4096

static vkl_status dedup_weights(vkl_graph *g, uint32_t *merged) {
    table t;
    vkl_status st = table_init(g->ctx, &t, g->n_tensors);
    for (uint32_t i = 0; !st && i < g->n_tensors; i++) {
        const vkl_tensor *w = &g->tensors[i];
        if (w->kind != VKL_TENSOR_WEIGHT || w->is_output || w->nbytes > CSE_WEIGHT_MAX_BYTES) continue;
        uint64_t h = mix(mix(hash_bytes(w->data, w->nbytes), (uint64_t)w->dtype), w->shape.rank);
        for (uint32_t d = 0; d < w->shape.rank; d++) h = mix(h, w->shape.dims[d]);
        uint32_t slot = (uint32_t)h & (t.cap - 1);
        for (;; slot = (slot + 1) & (t.cap - 1)) {
            if (t.vals[slot] == VKL_NONE) {
                t.keys[slot] = h;
                t.vals[slot] = i;
                break;
            }
            if (t.keys[slot] == h && weight_equal(&g->tensors[t.vals[slot]], w)) {
                st = vkl_graph_replace_uses(g, i, t.vals[slot]);
                /* attributes referring to the duplicate follow too */
                for (uint32_t n = 0; n < g->n_nodes; n++)
                    for (uint32_t a = 0; a < g->nodes[n].n_attrs; a++)
                        if (g->nodes[n].attrs[a].kind == VKL_ATTR_TENSOR && g->nodes[n].attrs[a].i == i)
                            g->nodes[n].attrs[a].i = t.vals[slot];
                (*merged)++;
                break;
            }
        }
    }
    table_free(g->ctx, &t);
    return st;
}

static uint64_t node_hash(const vkl_node *n) {
    uint64_t h = mix(n->op, n->n_inputs);
    for (uint32_t k = 0; k < n->n_inputs; k++) h = mix(h, n->inputs[k]);
    return mix(h, n->n_attrs);
}

static vkl_status merge_nodes(vkl_graph *g, uint32_t *merged, bool *changed) {
    uint32_t *order = vkl_calloc(g->ctx, g->n_nodes ? g->n_nodes : 1, sizeof(uint32_t));
    table t = {0};
    vkl_status st = order ? table_init(g->ctx, &t, g->n_nodes) : VKL_ERR_OUT_OF_MEMORY;
    uint32_t count = 0;
    if (!st) st = vkl_graph_topo_order(g->ctx, g, order, &count);
    for (uint32_t oi = 0; !st && oi < count; oi++) {
        uint32_t i = order[oi];
        vkl_node *n = &g->nodes[i];
        const vkl_op_info *info = vkl_op_info_get((vkl_op)n->op);
        if (info->inplace_input >= 0) continue; /* side effects */
        uint64_t h = node_hash(n);
        uint32_t slot = (uint32_t)h & (t.cap - 1);
        for (;; slot = (slot + 1) & (t.cap - 1)) {
            if (t.vals[slot] == VKL_NONE) {
                t.keys[slot] = h;
                t.vals[slot] = i;
                break;
            }
            const vkl_node *keep = &g->nodes[t.vals[slot]];
            if (t.keys[slot] != h || !node_equal(keep, n)) continue;
            bool out_is_output = false;
            for (uint32_t k = 0; k < n->n_outputs; k++)
                out_is_output |= n->outputs[k] != VKL_NONE && g->tensors[n->outputs[k]].is_output &&
                                 g->tensors[keep->outputs[k]].is_output;
            if (out_is_output) break; /* two graph outputs stay two tensors */
            for (uint32_t k = 0; !st && k < n->n_outputs; k++)
                if (n->outputs[k] != VKL_NONE) st = vkl_graph_replace_uses(g, n->outputs[k], keep->outputs[k]);
            n->dead = true;
            (*merged)++;
            *changed = true;
            break;
        }
    }
    vkl_free(g->ctx, order);
    table_free(g->ctx, &t);
    return st;
}

vkl_status vkl_pass_cse(vkl_graph *g, uint32_t *merged) {
    *merged = 0;
    vkl_status st = dedup_weights(g, merged);
    bool changed = true;
    while (!st && changed) {
        changed = false;
        st = merge_nodes(g, merged, &changed);
    }
    return st;
}
