/* Graph construction, topological order, validation and shape inference
 * driver (the rules themselves are in engine/ops/). */
#include <stdio.h>
#include <string.h>

#include "graph.h"
#include "ops.h"
#include "quant/quant.h"

vkl_status vkl_graph_create(vkl_context *ctx, vkl_graph **out) {
    *out = NULL;
    vkl_graph *g = vkl_calloc(ctx, 1, sizeof(*g));
    if (!g) return VKL_ERR_OUT_OF_MEMORY;
    g->ctx = ctx;
    vkl_arena_init(&g->arena, ctx);
    vkl_status st = vkl_symtab_create(ctx, &g->syms);
    if (st) {
        vkl_free(ctx, g);
        return st;
    }
    *out = g;
    return VKL_OK;
}

void vkl_graph_destroy(vkl_graph *g) {
    if (!g) return;
    vkl_context *ctx = g->ctx;
    if (!g->base) vkl_symtab_destroy(g->syms); /* a derived graph borrows its base's */
    vkl_arena_release(&g->arena);
    vkl_free(ctx, g->tensors);
    vkl_free(ctx, g->nodes);
    vkl_free(ctx, g->inputs);
    vkl_free(ctx, g->outputs);
    vkl_free(ctx, g->name_slots);
    vkl_free(ctx, g);
}

static uint32_t name_hash(const char *s) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static void name_insert(vkl_graph *g, uint32_t id) {
    uint32_t mask = g->name_cap - 1;
    uint32_t i = name_hash(g->tensors[id].name) & mask;
    while (g->name_slots[i] != VKL_NONE) i = (i + 1) & mask;
    g->name_slots[i] = id;
}

/* Rebuild the name index with room for `need` names at load <= 1/2. */
static vkl_status name_rebuild(vkl_graph *g, uint32_t need) {
    uint32_t cap = g->name_cap ? g->name_cap : 64;
    while (cap / 2 < need) {
        if (cap > UINT32_MAX / 2) return vkl_fail(g->ctx, VKL_ERR_OVERFLOW, "too many tensor names");
        cap *= 2;
    }
    if (cap != g->name_cap) {
        uint32_t *slots = vkl_realloc_array(g->ctx, g->name_slots, cap, sizeof(uint32_t));
        if (!slots) return VKL_ERR_OUT_OF_MEMORY;
        g->name_slots = slots;
        g->name_cap = cap;
    }
    for (uint32_t i = 0; i < cap; i++) g->name_slots[i] = VKL_NONE;
    for (uint32_t t = 0; t < g->n_tensors; t++) name_insert(g, t);
    return VKL_OK;
}

/* Grow *arr (element size `size`) so that it holds at least need entries. */
static vkl_status grow(vkl_context *ctx, void **arr, uint32_t *cap, uint32_t need, size_t size) {
    if (need <= *cap) return VKL_OK;
    if (need == VKL_NONE) return vkl_fail(ctx, VKL_ERR_OVERFLOW, "graph has too many entries");
    uint32_t ncap = *cap ? *cap : 16;
    while (ncap < need) ncap = ncap > UINT32_MAX / 2 ? VKL_NONE - 1 : ncap * 2;
    void *p = vkl_realloc_array(ctx, *arr, ncap, size);
    if (!p) return VKL_ERR_OUT_OF_MEMORY;
    *arr = p;
    *cap = ncap;
    return VKL_OK;
}

vkl_status vkl_graph_find_tensor(const vkl_graph *g, const char *name, uint32_t *id) {
    if (!g->name_cap) return VKL_ERR_NOT_FOUND;
    uint32_t mask = g->name_cap - 1;
    for (uint32_t i = name_hash(name) & mask; g->name_slots[i] != VKL_NONE; i = (i + 1) & mask) {
        if (!strcmp(g->tensors[g->name_slots[i]].name, name)) {
            *id = g->name_slots[i];
            return VKL_OK;
        }
    }
    return VKL_ERR_NOT_FOUND;
}

vkl_status vkl_graph_add_tensor(vkl_graph *g, const char *name, vkl_dtype dtype, vkl_tensor_kind kind,
                                const vkl_shape *shape, uint32_t *id) {
    uint32_t existing;
    if (!name || !*name) return vkl_fail(g->ctx, VKL_ERR_INVALID_ARGUMENT, "tensor name is empty");
    if (vkl_graph_find_tensor(g, name, &existing) == VKL_OK)
        return vkl_fail(g->ctx, VKL_ERR_FORMAT, "tensor '%s' defined twice", name);
    if (shape && shape->rank > VKL_MAX_RANK)
        return vkl_fail(g->ctx, VKL_ERR_UNSUPPORTED, "tensor '%s' has rank %u; at most %d supported",
                        name, shape->rank, VKL_MAX_RANK);
    vkl_status st = grow(g->ctx, (void **)&g->tensors, &g->cap_tensors, g->n_tensors + 1, sizeof(vkl_tensor));
    if (!st && g->name_cap / 2 < g->n_tensors + 1) st = name_rebuild(g, g->n_tensors + 1);
    if (st) return st;
    const char *copy = vkl_arena_strdup(&g->arena, name);
    if (!copy) return VKL_ERR_OUT_OF_MEMORY;
    vkl_tensor *t = &g->tensors[g->n_tensors];
    memset(t, 0, sizeof(*t));
    t->name = copy;
    t->dtype = dtype;
    t->kind = kind;
    if (shape) t->shape = *shape;
    t->producer = VKL_NONE;
    *id = g->n_tensors++;
    name_insert(g, *id);
    return VKL_OK;
}

vkl_status vkl_graph_set_data(vkl_graph *g, uint32_t tensor, const void *data, size_t nbytes, bool copy) {
    if (tensor >= g->n_tensors) return vkl_fail(g->ctx, VKL_ERR_INVALID_ARGUMENT, "tensor %u out of range", tensor);
    if (copy && nbytes) {
        data = vkl_arena_memdup(&g->arena, data, nbytes);
        if (!data) return VKL_ERR_OUT_OF_MEMORY;
    }
    g->tensors[tensor].data = data;
    g->tensors[tensor].nbytes = nbytes;
    return VKL_OK;
}

vkl_status vkl_graph_set_value(vkl_graph *g, uint32_t tensor, const vkl_expr *value, uint32_t count) {
    if (tensor >= g->n_tensors) return vkl_fail(g->ctx, VKL_ERR_INVALID_ARGUMENT, "tensor %u out of range", tensor);
    if (count > VKL_MAX_VALUE_ELEMS)
        return vkl_fail(g->ctx, VKL_ERR_INVALID_ARGUMENT, "symbolic value of '%s' has %u elements; at most %d",
                        g->tensors[tensor].name, count, VKL_MAX_VALUE_ELEMS);
    vkl_expr *copy = NULL;
    if (value) {
        copy = vkl_arena_memdup(&g->arena, value, (size_t)count * sizeof(vkl_expr));
        if (!copy) return VKL_ERR_OUT_OF_MEMORY;
    }
    g->tensors[tensor].value = copy;
    g->tensors[tensor].value_count = value ? count : 0;
    return VKL_OK;
}

static vkl_status append_id(vkl_graph *g, uint32_t **arr, uint32_t *n, uint32_t *cap, uint32_t tensor) {
    if (tensor >= g->n_tensors) return vkl_fail(g->ctx, VKL_ERR_INVALID_ARGUMENT, "tensor %u out of range", tensor);
    vkl_status st = grow(g->ctx, (void **)arr, cap, *n + 1, sizeof(uint32_t));
    if (st) return st;
    (*arr)[(*n)++] = tensor;
    return VKL_OK;
}

vkl_status vkl_graph_add_input(vkl_graph *g, uint32_t tensor) {
    return append_id(g, &g->inputs, &g->n_inputs, &g->cap_inputs, tensor);
}

vkl_status vkl_graph_add_output(vkl_graph *g, uint32_t tensor) {
    vkl_status st = append_id(g, &g->outputs, &g->n_outputs, &g->cap_outputs, tensor);
    if (!st) g->tensors[tensor].is_output = true;
    return st;
}

static vkl_status remove_id(vkl_graph *g, uint32_t *arr, uint32_t *n, uint32_t tensor, const char *what) {
    for (uint32_t k = 0; k < *n; k++) {
        if (arr[k] != tensor) continue;
        memmove(&arr[k], &arr[k + 1], (size_t)(*n - k - 1) * sizeof(uint32_t));
        --*n;
        return VKL_OK;
    }
    return vkl_fail(g->ctx, VKL_ERR_NOT_FOUND, "tensor %u is not a graph %s", tensor, what);
}

vkl_status vkl_graph_remove_input(vkl_graph *g, uint32_t tensor) {
    return remove_id(g, g->inputs, &g->n_inputs, tensor, "input");
}

vkl_status vkl_graph_remove_output(vkl_graph *g, uint32_t tensor) {
    vkl_status st = remove_id(g, g->outputs, &g->n_outputs, tensor, "output");
    if (!st) {
        bool still = false; /* listed twice */
        for (uint32_t k = 0; k < g->n_outputs; k++) still |= g->outputs[k] == tensor;
        g->tensors[tensor].is_output = still;
    }
    return st;
}

static vkl_status copy_attr(vkl_graph *g, const vkl_attr *src, vkl_attr *dst) {
    *dst = *src;
    if (!src->name) return vkl_fail(g->ctx, VKL_ERR_INVALID_ARGUMENT, "attribute without a name");
    dst->name = vkl_arena_strdup(&g->arena, src->name);
    if (!dst->name) return VKL_ERR_OUT_OF_MEMORY;
    if (src->s) {
        dst->s = vkl_arena_strdup(&g->arena, src->s);
        if (!dst->s) return VKL_ERR_OUT_OF_MEMORY;
    }
    if (src->ints && src->count) {
        dst->ints = vkl_arena_memdup(&g->arena, src->ints, (size_t)src->count * sizeof(int64_t));
        if (!dst->ints) return VKL_ERR_OUT_OF_MEMORY;
    }
    if (src->floats && src->count) {
        dst->floats = vkl_arena_memdup(&g->arena, src->floats, (size_t)src->count * sizeof(float));
        if (!dst->floats) return VKL_ERR_OUT_OF_MEMORY;
    }
    return VKL_OK;
}

vkl_status vkl_graph_add_node(vkl_graph *g, uint32_t op, const char *name, const uint32_t *inputs,
                              uint32_t n_inputs, const uint32_t *outputs, uint32_t n_outputs,
                              const vkl_attr *attrs, uint32_t n_attrs, uint32_t *id) {
    if (!vkl_op_info_get((vkl_op)op)) return vkl_fail(g->ctx, VKL_ERR_INVALID_ARGUMENT, "op %u out of range", op);
    for (uint32_t i = 0; i < n_outputs; i++) {
        if (outputs[i] == VKL_NONE) continue;
        if (outputs[i] >= g->n_tensors)
            return vkl_fail(g->ctx, VKL_ERR_INVALID_ARGUMENT, "node '%s' output %u out of range", name ? name : "", i);
        if (g->tensors[outputs[i]].producer != VKL_NONE)
            return vkl_fail(g->ctx, VKL_ERR_FORMAT, "tensor '%s' produced by two nodes", g->tensors[outputs[i]].name);
    }
    vkl_status st = grow(g->ctx, (void **)&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof(vkl_node));
    if (st) return st;
    vkl_node n = {0};
    n.op = op;
    n.name = vkl_arena_strdup(&g->arena, name ? name : "");
    n.inputs = vkl_arena_memdup(&g->arena, inputs, (size_t)n_inputs * sizeof(uint32_t));
    n.outputs = vkl_arena_memdup(&g->arena, outputs, (size_t)n_outputs * sizeof(uint32_t));
    n.attrs = vkl_arena_alloc(&g->arena, (size_t)n_attrs * sizeof(vkl_attr));
    if (!n.name || !n.inputs || !n.outputs || !n.attrs) return VKL_ERR_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < n_attrs; i++)
        if ((st = copy_attr(g, &attrs[i], &n.attrs[i]))) return st;
    n.n_inputs = n_inputs;
    n.n_outputs = n_outputs;
    n.n_attrs = n_attrs;
    for (uint32_t i = 0; i < n_outputs; i++)
        if (outputs[i] != VKL_NONE) g->tensors[outputs[i]].producer = g->n_nodes;
    g->nodes[g->n_nodes] = n;
    if (id) *id = g->n_nodes;
    g->n_nodes++;
    return VKL_OK;
}

const vkl_attr *vkl_node_attr(const vkl_node *n, const char *name) {
    for (uint32_t i = 0; i < n->n_attrs; i++)
        if (!strcmp(n->attrs[i].name, name)) return &n->attrs[i];
    return NULL;
}

/* Min-heap of node indexes: among ready nodes the lowest index goes first,
 * so the order is stable and exporters' (already sorted) order survives. */
static void heap_push(uint32_t *h, uint32_t *n, uint32_t v) {
    uint32_t i = (*n)++;
    while (i && h[(i - 1) / 2] > v) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = v;
}

static uint32_t heap_pop(uint32_t *h, uint32_t *n) {
    uint32_t top = h[0], v = h[--(*n)], i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && h[c + 1] < h[c]) c++;
        if (h[c] >= v) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = v;
    return top;
}

/* Kahn's algorithm: pending[i] counts node i's inputs not yet produced;
 * consumers of each tensor in CSR form (first[t] .. first[t+1]). */
vkl_status vkl_graph_topo_order(vkl_context *ctx, const vkl_graph *g, uint32_t *order, uint32_t *count) {
    uint32_t nn = g->n_nodes, nt = g->n_tensors;
    uint32_t *pending = vkl_calloc(ctx, nn + 1, sizeof(uint32_t));
    uint32_t *first = vkl_calloc(ctx, nt + 2, sizeof(uint32_t));
    uint32_t *heap = vkl_calloc(ctx, nn + 1, sizeof(uint32_t));
    bool *produced = vkl_calloc(ctx, nt + 1, sizeof(bool));
    uint32_t *users = NULL;
    vkl_status st = (!pending || !first || !heap || !produced) ? VKL_ERR_OUT_OF_MEMORY : VKL_OK;
    /* A tensor is available from the start unless a live node produces it. */
    for (uint32_t t = 0; !st && t < nt; t++) {
        uint32_t p = g->tensors[t].producer;
        produced[t] = p == VKL_NONE || p >= nn || g->nodes[p].dead;
    }
    size_t edges = 0;
    for (uint32_t i = 0; !st && i < nn; i++) {
        const vkl_node *n = &g->nodes[i];
        if (n->dead) continue;
        for (uint32_t k = 0; k < n->n_inputs; k++) {
            uint32_t t = n->inputs[k];
            if (t == VKL_NONE) continue;
            if (t >= nt) {
                pending[i]++; /* never satisfied: reported below */
                continue;
            }
            if (!produced[t]) {
                pending[i]++;
                first[t + 1]++;
                edges++;
            }
        }
    }
    if (!st) users = vkl_calloc(ctx, edges + 1, sizeof(uint32_t));
    if (!st && !users) st = VKL_ERR_OUT_OF_MEMORY;
    for (uint32_t t = 0; !st && t < nt; t++) first[t + 1] += first[t];
    for (uint32_t i = 0; !st && i < nn; i++) {
        const vkl_node *n = &g->nodes[i];
        if (n->dead) continue;
        for (uint32_t k = 0; k < n->n_inputs; k++) {
            uint32_t t = n->inputs[k];
            if (t != VKL_NONE && t < nt && !produced[t]) users[first[t]++] = i;
        }
    }
    /* first[t] now points one past t's range: shift back. */
    for (uint32_t t = nt; !st && t > 0; t--) first[t] = first[t - 1];
    if (!st) first[0] = 0;
    uint32_t hn = 0, done = 0, live = 0;
    for (uint32_t i = 0; !st && i < nn; i++) {
        if (g->nodes[i].dead) continue;
        live++;
        if (!pending[i]) heap_push(heap, &hn, i);
    }
    while (!st && hn) {
        uint32_t i = heap_pop(heap, &hn);
        order[done++] = i;
        const vkl_node *n = &g->nodes[i];
        for (uint32_t k = 0; k < n->n_outputs; k++) {
            uint32_t t = n->outputs[k];
            if (t == VKL_NONE || t >= nt || produced[t]) continue;
            produced[t] = true;
            for (uint32_t u = first[t]; u < first[t + 1]; u++)
                if (--pending[users[u]] == 0) heap_push(heap, &hn, users[u]);
        }
    }
    if (!st && done < live) {
        for (uint32_t i = 0; i < nn; i++) {
            if (g->nodes[i].dead || !pending[i]) continue;
            char buf[160];
            st = vkl_fail(ctx, VKL_ERR_FORMAT, "%s is on a cycle or reads a tensor nothing produces",
                          vkl_node_str(g, i, buf, sizeof(buf)));
            break;
        }
    }
    *count = done;
    vkl_free(ctx, pending);
    vkl_free(ctx, first);
    vkl_free(ctx, heap);
    vkl_free(ctx, produced);
    vkl_free(ctx, users);
    return st;
}

static vkl_status validate_attrs(const vkl_graph *g, uint32_t ni, const vkl_op_info *info) {
    const vkl_node *n = &g->nodes[ni];
    char buf[160];
    for (uint32_t a = 0; a < n->n_attrs; a++) {
        const vkl_attr *at = &n->attrs[a];
        const vkl_attr_schema *s = NULL;
        for (uint32_t k = 0; k < info->n_attrs; k++)
            if (!strcmp(info->attrs[k].name, at->name)) s = &info->attrs[k];
        if (!s)
            return vkl_fail(g->ctx, VKL_ERR_UNSUPPORTED, "%s: unknown attribute '%s'", vkl_node_str(g, ni, buf, sizeof(buf)),
                            at->name);
        if (s->kind != at->kind)
            return vkl_fail(g->ctx, VKL_ERR_FORMAT, "%s: attribute '%s' has kind %d, expected %d",
                            vkl_node_str(g, ni, buf, sizeof(buf)), at->name, (int)at->kind, (int)s->kind);
        if ((at->kind == VKL_ATTR_INTS && at->count && !at->ints) ||
            (at->kind == VKL_ATTR_FLOATS && at->count && !at->floats) || (at->kind == VKL_ATTR_STRING && !at->s))
            return vkl_fail(g->ctx, VKL_ERR_FORMAT, "%s: attribute '%s' has no data", vkl_node_str(g, ni, buf, sizeof(buf)),
                            at->name);
        if (at->kind == VKL_ATTR_TENSOR &&
            (at->i < 0 || at->i >= (int64_t)g->n_tensors || g->tensors[at->i].kind != VKL_TENSOR_WEIGHT))
            return vkl_fail(g->ctx, VKL_ERR_FORMAT, "%s: attribute '%s' does not name a weight tensor",
                            vkl_node_str(g, ni, buf, sizeof(buf)), at->name);
    }
    for (uint32_t k = 0; k < info->n_attrs; k++)
        if (info->attrs[k].required && !vkl_node_attr(n, info->attrs[k].name))
            return vkl_fail(g->ctx, VKL_ERR_FORMAT, "%s: required attribute '%s' is missing",
                            vkl_node_str(g, ni, buf, sizeof(buf)), info->attrs[k].name);
    return VKL_OK;
}

static vkl_status validate_weight(const vkl_graph *g, uint32_t ti) {
    const vkl_tensor *t = &g->tensors[ti];
    /* Activations get their dtype from shape inference. */
    if (t->kind == VKL_TENSOR_ACTIVATION && t->dtype == VKL_DTYPE_INVALID) return VKL_OK;
    if (!vkl_dtype_valid(t->dtype))
        return vkl_fail(g->ctx, VKL_ERR_FORMAT, "tensor '%s' has invalid dtype %d", t->name, (int)t->dtype);
    /* Block formats need a valid group (an int8 KV cache state too); plain dtypes have none. */
    if (vkl_dtype_is_quantized(t->dtype) ? !vkl_quant_block_bytes(t->dtype, t->group) : t->group != 0)
        return vkl_fail(g->ctx, VKL_ERR_FORMAT, "tensor '%s' is %s with group %u", t->name, vkl_dtype_name(t->dtype),
                        t->group);
    if (t->kind != VKL_TENSOR_WEIGHT) return VKL_OK;
    int64_t elements = 1, last = 1;
    for (uint32_t d = 0; d < t->shape.rank; d++) {
        if (!vkl_expr_is_const(g->syms, t->shape.dims[d], &last) || last < 0)
            return vkl_fail(g->ctx, VKL_ERR_FORMAT, "weight '%s' has a non-constant or negative dim %u", t->name, d);
        if (!vkl_mul_i64(elements, last, &elements))
            return vkl_fail(g->ctx, VKL_ERR_OVERFLOW, "weight '%s' element count overflows", t->name);
    }
    size_t bytes;
    if (!vkl_tensor_bytes_shaped(t->dtype, t->group, elements, last, &bytes))
        return vkl_fail(g->ctx, VKL_ERR_FORMAT, "weight '%s': size of %lld %s elements (group %u) is invalid",
                        t->name, (long long)elements, vkl_dtype_name(t->dtype), t->group);
    if (bytes != t->nbytes || (bytes && !t->data))
        return vkl_fail(g->ctx, VKL_ERR_FORMAT, "weight '%s' holds %zu bytes; its dtype and shape need %zu", t->name,
                        t->nbytes, bytes);
    return VKL_OK;
}

vkl_status vkl_graph_validate(const vkl_graph *g) {
    char buf[160];
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        vkl_status st = validate_weight(g, t);
        if (st) return st;
        if (g->tensors[t].shape.rank > VKL_MAX_RANK)
            return vkl_fail(g->ctx, VKL_ERR_FORMAT, "tensor '%s' has rank %u > %d", g->tensors[t].name,
                            g->tensors[t].shape.rank, VKL_MAX_RANK);
    }
    for (uint32_t i = 0; i < g->n_inputs; i++)
        if (g->inputs[i] >= g->n_tensors) return vkl_fail(g->ctx, VKL_ERR_FORMAT, "graph input %u out of range", i);
    for (uint32_t i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] >= g->n_tensors) return vkl_fail(g->ctx, VKL_ERR_FORMAT, "graph output %u out of range", i);
    for (uint32_t ni = 0; ni < g->n_nodes; ni++) {
        const vkl_node *n = &g->nodes[ni];
        if (n->dead) continue;
        const vkl_op_info *info = vkl_op_info_get((vkl_op)n->op);
        if (!info) return vkl_fail(g->ctx, VKL_ERR_FORMAT, "node %u has unknown op %u", ni, n->op);
        if (n->n_inputs < info->min_inputs || (info->max_inputs != VKL_VARIADIC && n->n_inputs > info->max_inputs))
            return vkl_fail(g->ctx, VKL_ERR_FORMAT, "%s has %u inputs; %s takes %u to %u",
                            vkl_node_str(g, ni, buf, sizeof(buf)), n->n_inputs, info->name, info->min_inputs,
                            info->max_inputs);
        if (n->n_outputs < info->min_outputs || n->n_outputs > info->max_outputs)
            return vkl_fail(g->ctx, VKL_ERR_FORMAT, "%s has %u outputs; %s gives %u to %u",
                            vkl_node_str(g, ni, buf, sizeof(buf)), n->n_outputs, info->name, info->min_outputs,
                            info->max_outputs);
        for (uint32_t k = 0; k < n->n_inputs; k++) {
            uint32_t t = n->inputs[k];
            if (t == VKL_NONE) continue;
            if (t >= g->n_tensors)
                return vkl_fail(g->ctx, VKL_ERR_FORMAT, "%s input %u out of range", vkl_node_str(g, ni, buf, sizeof(buf)), k);
            const vkl_tensor *tt = &g->tensors[t];
            if (tt->kind == VKL_TENSOR_ACTIVATION && tt->producer == VKL_NONE && !tt->value)
                return vkl_fail(g->ctx, VKL_ERR_FORMAT, "%s reads '%s', which nothing produces",
                                vkl_node_str(g, ni, buf, sizeof(buf)), tt->name);
        }
        for (uint32_t k = 0; k < n->n_outputs; k++) {
            uint32_t t = n->outputs[k];
            if (t == VKL_NONE) continue;
            if (t >= g->n_tensors || g->tensors[t].producer != ni)
                return vkl_fail(g->ctx, VKL_ERR_FORMAT, "%s output %u is inconsistent", vkl_node_str(g, ni, buf, sizeof(buf)), k);
            if (g->tensors[t].kind == VKL_TENSOR_WEIGHT || g->tensors[t].kind == VKL_TENSOR_INPUT)
                return vkl_fail(g->ctx, VKL_ERR_FORMAT, "%s writes '%s', a weight or graph input",
                                vkl_node_str(g, ni, buf, sizeof(buf)), g->tensors[t].name);
        }
        vkl_status st = validate_attrs(g, ni, info);
        if (st) return st;
    }
    uint32_t *order = vkl_calloc(g->ctx, g->n_nodes ? g->n_nodes : 1, sizeof(uint32_t));
    if (!order) return VKL_ERR_OUT_OF_MEMORY;
    uint32_t count;
    vkl_status st = vkl_graph_topo_order(g->ctx, g, order, &count);
    vkl_free(g->ctx, order);
    return st;
}

vkl_status vkl_graph_infer_shapes(vkl_graph *g) {
    uint32_t *order = vkl_calloc(g->ctx, g->n_nodes ? g->n_nodes : 1, sizeof(uint32_t));
    if (!order) return VKL_ERR_OUT_OF_MEMORY;
    uint32_t count;
    vkl_status st = vkl_graph_topo_order(g->ctx, g, order, &count);
    for (uint32_t i = 0; !st && i < count; i++) {
        const vkl_op_info *info = vkl_op_info_get((vkl_op)g->nodes[order[i]].op);
        st = info->infer(g, order[i]);
        if (st) {
            char buf[160];
            vkl_fail_prefix(g->ctx, st, "%s", vkl_node_str(g, order[i], buf, sizeof(buf)));
        }
    }
    vkl_free(g->ctx, order);
    return st;
}

vkl_status vkl_shape_eval(vkl_context *ctx, const vkl_graph *g, const vkl_shape *s, const int64_t *values,
                          size_t count, int64_t *dims, int64_t *elements) {
    int64_t n = 1;
    for (uint32_t d = 0; d < s->rank; d++) {
        vkl_status st = vkl_expr_eval(ctx, g->syms, s->dims[d], values, count, &dims[d]);
        if (st) return st;
        if (dims[d] < 0) {
            char buf[64];
            vkl_expr_print(g->syms, s->dims[d], buf, sizeof(buf));
            return vkl_fail(ctx, VKL_ERR_SHAPE, "dim %u (%s) evaluates to %lld", d, buf, (long long)dims[d]);
        }
        if (!vkl_mul_i64(n, dims[d], &n)) return vkl_fail(ctx, VKL_ERR_OVERFLOW, "element count overflows");
    }
    if (elements) *elements = n;
    return VKL_OK;
}

vkl_status vkl_tensor_eval(vkl_context *ctx, const vkl_graph *g, uint32_t t, const int64_t *values, size_t count,
                           int64_t *dims, int64_t *elements, size_t *bytes) {
    const vkl_tensor *tt = &g->tensors[t];
    vkl_status st = vkl_shape_eval(ctx, g, &tt->shape, values, count, dims, elements);
    if (st) return vkl_fail_prefix(ctx, st, "tensor '%s'", tt->name);
    if (!vkl_tensor_bytes_shaped(tt->dtype, tt->group, *elements, tt->shape.rank ? dims[tt->shape.rank - 1] : 1, bytes))
        return vkl_fail(ctx, VKL_ERR_OVERFLOW, "tensor '%s': size overflows", tt->name);
    return VKL_OK;
}

vkl_status vkl_tensor_value_bytes(vkl_context *ctx, const vkl_graph *g, uint32_t t, const int64_t *values, size_t count,
                                  void *dst, size_t cap, size_t *bytes) {
    const vkl_tensor *tt = &g->tensors[t];
    const size_t size = vkl_dtype_size(tt->dtype);
    *bytes = 0;
    if (!tt->value || !size || tt->dtype == VKL_DTYPE_FP8_E4M3 || tt->dtype == VKL_DTYPE_FP8_E5M2)
        return vkl_fail(ctx, VKL_ERR_UNSUPPORTED, "tensor '%s': no %s value to write", tt->name,
                        vkl_dtype_name(tt->dtype));
    if ((size_t)tt->value_count > cap / size)
        return vkl_fail(ctx, VKL_ERR_OVERFLOW, "tensor '%s': %u values do not fit %zu bytes", tt->name,
                        tt->value_count, cap);
    unsigned char *p = dst;
    for (uint32_t k = 0; k < tt->value_count; k++, p += size) {
        int64_t v;
        vkl_status st = vkl_expr_eval(ctx, g->syms, tt->value[k], values, count, &v);
        if (st) return vkl_fail_prefix(ctx, st, "value of tensor '%s'", tt->name);
        union { int64_t i64; int32_t i32; int16_t i16; int8_t i8; double f64; float f32; uint16_t h; } u;
        switch (tt->dtype) {
        case VKL_DTYPE_F64: u.f64 = (double)v; break;
        case VKL_DTYPE_F32: u.f32 = (float)v; break;
        case VKL_DTYPE_F16: u.h = vkl_f32_to_f16((float)v); break;
        case VKL_DTYPE_BF16: u.h = vkl_f32_to_bf16((float)v); break;
        case VKL_DTYPE_BOOL: u.i8 = v != 0; break;
        default:
            /* integers: the low `size` bytes, two's complement (little endian) */
            u.i64 = v;
            if (size == 4) u.i32 = (int32_t)v;
            else if (size == 2) u.i16 = (int16_t)v;
            else if (size == 1) u.i8 = (int8_t)v;
            break;
        }
        memcpy(p, &u, size);
    }
    *bytes = (size_t)tt->value_count * size;
    return VKL_OK;
}

const char *vkl_shape_str(const vkl_graph *g, const vkl_shape *s, char *buf, size_t cap) {
    size_t used = 0;
    if (!cap) return buf;
    buf[0] = 0;
    used += (size_t)snprintf(buf, cap, "[");
    for (uint32_t d = 0; d < s->rank && used < cap; d++) {
        if (d) used += (size_t)snprintf(buf + used, cap - used, ", ");
        if (used >= cap) break;
        used += vkl_expr_print(g->syms, s->dims[d], buf + used, cap - used);
    }
    if (used < cap) snprintf(buf + used, cap - used, "]");
    return buf;
}

bool vkl_tensor_bytes(vkl_dtype dtype, uint32_t group, int64_t elements, size_t *bytes) {
    if (elements < 0) return false;
    if (!vkl_dtype_is_quantized(dtype)) {
        size_t es = vkl_dtype_size(dtype);
        return es && vkl_mul_size((size_t)elements, es, bytes);
    }
    /* Block formats (engine/quant/quant.h, docs/quant.md): whole groups of
     * `group` elements along the last axis, one block each;
     * e0m4/int4 (group % 32 == 0): fp16 d, fp16 zero code, group/2 bytes of
     * nibbles; int8 (group >= 1): f32 d, group bytes. */
    size_t per = vkl_quant_block_bytes(dtype, group);
    if (!per || elements % group) return false;
    return vkl_mul_size((size_t)(elements / group), per, bytes);
}

bool vkl_tensor_bytes_shaped(vkl_dtype dtype, uint32_t group, int64_t elements, int64_t cols, size_t *bytes) {
    if (!vkl_dtype_is_quantized(dtype)) return vkl_tensor_bytes(dtype, group, elements, bytes);
    /* rows of cols, each ceil(cols / group) blocks (whole groups: elements / group) */
    size_t per = vkl_quant_block_bytes(dtype, group), row;
    if (!per || elements < 0 || cols < 0 || (cols ? elements % cols != 0 : elements != 0)) return false;
    if (!cols) {
        *bytes = 0;
        return true;
    }
    return vkl_mul_size((size_t)vkl_quant_row_groups(cols, group), per, &row) &&
           vkl_mul_size((size_t)(elements / cols), row, bytes);
}

vkl_status vkl_graph_replace_uses(vkl_graph *g, uint32_t from, uint32_t to) {
    if (from >= g->n_tensors || to >= g->n_tensors)
        return vkl_fail(g->ctx, VKL_ERR_INVALID_ARGUMENT, "replace_uses: tensor out of range");
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        vkl_node *n = &g->nodes[i];
        if (n->dead) continue;
        for (uint32_t k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] == from) n->inputs[k] = to;
    }
    bool was_output = false;
    for (uint32_t k = 0; k < g->n_outputs; k++)
        if (g->outputs[k] == from) g->outputs[k] = to, was_output = true;
    if (was_output) {
        vkl_tensor *f = &g->tensors[from], *t = &g->tensors[to];
        size_t len = strlen(f->name) + sizeof(".replaced");
        char *renamed = vkl_arena_alloc(&g->arena, len);
        if (!renamed) return VKL_ERR_OUT_OF_MEMORY;
        snprintf(renamed, len, "%s.replaced", f->name);
        t->name = f->name;
        t->is_output = true;
        f->name = renamed;
        f->is_output = false;
        return name_rebuild(g, g->n_tensors);
    }
    return VKL_OK;
}

uint32_t vkl_graph_use_count(const vkl_graph *g, uint32_t t) {
    uint32_t uses = 0;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const vkl_node *n = &g->nodes[i];
        if (n->dead) continue;
        for (uint32_t k = 0; k < n->n_inputs; k++) uses += n->inputs[k] == t;
    }
    for (uint32_t k = 0; k < g->n_outputs; k++) uses += g->outputs[k] == t;
    return uses;
}

static void mark_used(bool *used, uint32_t t, uint32_t n) {
    if (t != VKL_NONE && t < n) used[t] = true;
}

vkl_status vkl_graph_compact(vkl_graph *g) {
    vkl_context *ctx = g->ctx;
    bool *used = vkl_calloc(ctx, g->n_tensors ? g->n_tensors : 1, sizeof(bool));
    uint32_t *remap = vkl_calloc(ctx, g->n_tensors ? g->n_tensors : 1, sizeof(uint32_t));
    if (!used || !remap) {
        vkl_free(ctx, used);
        vkl_free(ctx, remap);
        return VKL_ERR_OUT_OF_MEMORY;
    }
    for (uint32_t k = 0; k < g->n_inputs; k++) mark_used(used, g->inputs[k], g->n_tensors);
    for (uint32_t k = 0; k < g->n_outputs; k++) mark_used(used, g->outputs[k], g->n_tensors);
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const vkl_node *n = &g->nodes[i];
        if (n->dead) continue;
        for (uint32_t k = 0; k < n->n_inputs; k++) mark_used(used, n->inputs[k], g->n_tensors);
        for (uint32_t k = 0; k < n->n_outputs; k++) mark_used(used, n->outputs[k], g->n_tensors);
        for (uint32_t a = 0; a < n->n_attrs; a++)
            if (n->attrs[a].kind == VKL_ATTR_TENSOR) mark_used(used, (uint32_t)n->attrs[a].i, g->n_tensors);
    }
    uint32_t nt = 0;
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        remap[t] = used[t] ? nt : VKL_NONE;
        if (used[t]) g->tensors[nt++] = g->tensors[t];
    }
    g->n_tensors = nt;
    uint32_t nn = 0;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i].dead) continue;
        vkl_node *n = &g->nodes[nn];
        *n = g->nodes[i];
        for (uint32_t k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] != VKL_NONE) n->inputs[k] = remap[n->inputs[k]];
        for (uint32_t k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] != VKL_NONE) n->outputs[k] = remap[n->outputs[k]];
        for (uint32_t a = 0; a < n->n_attrs; a++)
            if (n->attrs[a].kind == VKL_ATTR_TENSOR) n->attrs[a].i = remap[n->attrs[a].i];
        nn++;
    }
    g->n_nodes = nn;
    for (uint32_t k = 0; k < g->n_inputs; k++) g->inputs[k] = remap[g->inputs[k]];
    for (uint32_t k = 0; k < g->n_outputs; k++) g->outputs[k] = remap[g->outputs[k]];
    /* producers: recompute from the surviving nodes */
    for (uint32_t t = 0; t < g->n_tensors; t++) g->tensors[t].producer = VKL_NONE;
    for (uint32_t i = 0; i < g->n_nodes; i++)
        for (uint32_t k = 0; k < g->nodes[i].n_outputs; k++)
            if (g->nodes[i].outputs[k] != VKL_NONE) g->tensors[g->nodes[i].outputs[k]].producer = i;
    vkl_free(ctx, used);
    vkl_free(ctx, remap);
    return name_rebuild(g, g->n_tensors);
}
