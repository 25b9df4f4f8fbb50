/* KV cache in place (Transformer-Lite §2.3): where an Attention reads
 * present = Concat(past, new) for K and V, each becomes one state tensor,
 * sequence dimension first, that KvAppend writes at position_ids; the
 * Attention reads the state (kv_layout 1) and the past_* inputs and
 * present_* outputs leave the graph, so nothing is copied per step. */
#include <string.h>

#include "../ops/shape_util.h"
#include "match.h"
#include "passes.h"

/* One of K and V of one Attention. */
typedef struct kv_side {
    vkl_pattern p; /* the Concat, the Transpose after it, copies of past */
    uint32_t past; /* the graph input */
    uint32_t present;
    uint32_t x;      /* this call's rows as the export has them */
    bool bshd;       /* the export's layout is [B, S, H, D] */
    vkl_shape state; /* [T, B, H, D] */
} kv_side;

static bool is_graph_input(const vkl_graph *g, uint32_t t) {
    for (uint32_t k = 0; k < g->n_inputs; k++)
        if (g->inputs[k] == t) return g->tensors[t].kind == VKL_TENSOR_INPUT;
    return false;
}

/* t = Concat(past, x) on the sequence axis of [B, H, T, D], or the
 * Transpose to that layout of a Concat on axis 1 of [B, T, H, D]. */
static bool match_side(vkl_graph *g, uint32_t t, kv_side *s) {
    uint32_t perm[VKL_MAX_RANK], rank, axis, c;
    static const uint32_t bhsd[4] = {0, 2, 1, 3};
    s->p.n = 0;
    s->bshd = false;
    s->present = t;
    uint32_t tr = vkl_match_producer(g, t, VKL_OP_TRANSPOSE);
    if (tr != VKL_NONE) {
        if (!vkl_match_perm(g, tr, perm, &rank) || rank != 4 || memcmp(perm, bhsd, sizeof(bhsd)) ||
            !vkl_pattern_add(&s->p, tr))
            return false;
        s->bshd = true;
        s->present = g->nodes[tr].inputs[0];
    }
    c = vkl_match_producer(g, s->present, VKL_OP_CONCAT);
    if (c == VKL_NONE) return false;
    const vkl_shape *ps = &g->tensors[s->present].shape;
    if (g->nodes[c].n_inputs != 2 || ps->rank != 4 || !vkl_match_attr_axis(g, c, "axis", INT64_MIN, 4, &axis) ||
        axis != (s->bshd ? 1u : 2u) || !vkl_pattern_add(&s->p, c))
        return false;
    s->x = g->nodes[c].inputs[1];
    s->past = g->nodes[c].inputs[0];
    /* an exporter's one-input Concat of the past is a copy */
    uint32_t copy;
    while ((copy = vkl_match_producer(g, s->past, VKL_OP_CONCAT)) != VKL_NONE && g->nodes[copy].n_inputs == 1 &&
           vkl_pattern_add(&s->p, copy))
        s->past = g->nodes[copy].inputs[0];
    if (!is_graph_input(g, s->past) || s->x == VKL_NONE || g->tensors[s->x].shape.rank != 4) return false;
    /* [B, H, T, D] or [B, T, H, D] -> [T, B, H, D] */
    static const uint32_t from_bhtd[4] = {2, 0, 1, 3}, from_bthd[4] = {1, 0, 2, 3};
    const uint32_t *from = s->bshd ? from_bthd : from_bhtd;
    s->state.rank = 4;
    for (uint32_t d = 0; d < 4; d++) s->state.dims[d] = ps->dims[from[d]];
    return true;
}

/* Every tensor the pattern makes is read only inside it, except the
 * Attention's output and the presents, which may also be graph outputs
 * (they are about to stop being ones); the past inputs feed nothing else. */
static bool closed(const vkl_graph *g, const vkl_uses *u, const vkl_pattern *p, uint32_t out, const kv_side *s) {
    for (uint32_t i = 0; i < p->n; i++) {
        const vkl_node *n = &g->nodes[p->nodes[i]];
        for (uint32_t k = 0; k < n->n_outputs; k++) {
            uint32_t t = n->outputs[k], inside = 0;
            if (t == VKL_NONE || t == out) continue;
            for (uint32_t j = 0; j < p->n; j++) {
                const vkl_node *c = &g->nodes[p->nodes[j]];
                for (uint32_t m = 0; m < c->n_inputs; m++) inside += c->inputs[m] == t;
            }
            bool present = t == s[0].present || t == s[1].present;
            if (t >= u->n || u->count[t] != inside + (present && g->tensors[t].is_output)) return false;
        }
    }
    for (uint32_t k = 0; k < 2; k++)
        if (u->count[s[k].past] != 1 || g->tensors[s[k].past].is_output) return false;
    return true;
}

/* position_ids [B, S] for rows x [B, H, S, D]. */
static bool match_positions(const vkl_graph *g, uint32_t pos, const kv_side *s) {
    const vkl_tensor *pt = &g->tensors[pos];
    const vkl_shape *xs = &g->tensors[s->x].shape;
    vkl_expr b = xs->dims[0], seq = xs->dims[s->bshd ? 1 : 2];
    return (pt->dtype == VKL_DTYPE_I64 || pt->dtype == VKL_DTYPE_I32) && pt->shape.rank == 2 &&
           pt->shape.dims[0] == b && pt->shape.dims[1] == seq;
}

/* The state, and KvAppend(state, x as [B, H, S, D], position_ids). */
static vkl_status add_cache(vkl_graph *g, const kv_side *s, uint32_t pos, vkl_pattern *added, uint32_t *cache) {
    uint32_t state, x = s->x, in[3];
    const char *name = g->tensors[s->present].name;
    *cache = VKL_NONE;
    /* `vkllm check` finds the state of present "P" as "P.cache" */
    vkl_status st = vkl_match_new_tensor(g, name, "cache", &state);
    if (st) return st;
    vkl_tensor *t = &g->tensors[state];
    t->kind = VKL_TENSOR_STATE;
    t->dtype = g->tensors[s->present].dtype;
    t->shape = s->state;
    if (s->bshd) {
        static const int64_t perm[4] = {0, 2, 1, 3};
        vkl_attr a = {.name = "perm", .kind = VKL_ATTR_INTS, .ints = perm, .count = 4};
        st = vkl_match_add_node(g, VKL_OP_TRANSPOSE, g->tensors[s->x].name, "bhsd", &s->x, 1, &a, 1, &x);
        if (st || x == VKL_NONE) return st;
        vkl_pattern_add(added, g->tensors[x].producer);
    }
    in[0] = state;
    in[1] = x;
    in[2] = pos;
    st = vkl_match_add_node(g, VKL_OP_KV_APPEND, name, "kv", in, 3, NULL, 0, cache);
    if (!st && *cache != VKL_NONE) vkl_pattern_add(added, g->tensors[*cache].producer);
    return st;
}

/* The Attention again, reading the caches with kv_layout 1. */
static vkl_status add_attention(vkl_graph *g, uint32_t att, const uint32_t *cache, uint32_t *out) {
    vkl_attr attrs[8];
    uint32_t n_attrs = 0, in[4];
    const vkl_node *n = &g->nodes[att];
    bool have_layout = false;
    for (uint32_t a = 0; a < n->n_attrs && n_attrs < 7; a++) {
        attrs[n_attrs] = n->attrs[a];
        if (!strcmp(attrs[n_attrs].name, "kv_layout")) attrs[n_attrs].i = 1, have_layout = true;
        n_attrs++;
    }
    if (!have_layout) attrs[n_attrs++] = (vkl_attr){.name = "kv_layout", .kind = VKL_ATTR_INT, .i = 1};
    uint32_t n_in = n->n_inputs;
    memcpy(in, n->inputs, n_in * sizeof(uint32_t));
    in[1] = cache[0];
    in[2] = cache[1];
    return vkl_match_add_node(g, VKL_OP_ATTENTION, g->tensors[n->outputs[0]].name, "cached", in, n_in, attrs, n_attrs,
                              out);
}

static vkl_status rewrite(vkl_graph *g, const vkl_uses *u, uint32_t att, bool *done) {
    const vkl_node *n = &g->nodes[att];
    uint32_t pos;
    int64_t layout;
    kv_side s[2];
    *done = false;
    if (n->op != VKL_OP_ATTENTION) return VKL_OK;
    /* KvAppend writes where position_ids say: without them there is no rewrite. */
    if (vkl_graph_find_tensor(g, "position_ids", &pos) || !is_graph_input(g, pos)) return VKL_OK;
    if (n->n_inputs < 3 || n->n_inputs > 4 || n->n_outputs != 1 || n->outputs[0] == VKL_NONE ||
        vkl_op_attr_int(g, att, "kv_layout", &layout) || layout != 0 || !match_side(g, n->inputs[1], &s[0]) ||
        !match_side(g, n->inputs[2], &s[1]) || s[0].past == s[1].past || s[0].state.dims[0] != s[1].state.dims[0] ||
        !match_positions(g, pos, &s[0]) || !match_positions(g, pos, &s[1]))
        return VKL_OK;
    vkl_pattern p = {{att}, 1};
    for (uint32_t k = 0; k < 2; k++)
        for (uint32_t i = 0; i < s[k].p.n; i++)
            if (!vkl_pattern_add(&p, s[k].p.nodes[i])) return VKL_OK;
    uint32_t out = g->nodes[att].outputs[0], cache[2], att2 = VKL_NONE;
    if (!closed(g, u, &p, out, s)) return VKL_OK;
    vkl_pattern added = {{0}, 0};
    vkl_status st = add_cache(g, &s[0], pos, &added, &cache[0]);
    if (!st && cache[0] != VKL_NONE) st = add_cache(g, &s[1], pos, &added, &cache[1]);
    if (!st && cache[0] != VKL_NONE && cache[1] != VKL_NONE) st = add_attention(g, att, cache, &att2);
    if (st) return st;
    bool replaced = false;
    st = vkl_match_replace(g, &p, out, att2, &replaced);
    if (!st && !replaced) {
        vkl_pattern_kill(g, &added); /* a shape rule said no: leave the layer as it was */
        return VKL_OK;
    }
    for (uint32_t k = 0; !st && k < 2; k++) {
        if (g->tensors[s[k].present].is_output) st = vkl_graph_remove_output(g, s[k].present);
        if (!st) st = vkl_graph_remove_input(g, s[k].past);
    }
    *done = !st;
    return st;
}

/* Counts KvAppend nodes: two per rewritten Attention. */
vkl_status vkl_pass_kv_inplace(vkl_graph *g, uint32_t *fused) {
    uint32_t layers = 0;
    vkl_status st = vkl_match_each(g, rewrite, &layers);
    *fused = 2 * layers;
    return st;
}
