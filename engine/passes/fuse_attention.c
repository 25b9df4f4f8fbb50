/* Attention fusion: eager attention as exported — MatMul(Q, Kᵀ), a scale,
 * an optional additive mask, Softmax, MatMul with V — becomes one Attention
 * node (engine/ops/fused.c), with Hugging Face's repeat_kv expansion of K
 * and V undone: the Attention op maps query heads to KV heads itself (GQA). */
#include <math.h>

#include "../ops/shape_util.h"
#include "match.h"
#include "passes.h"

static bool is_one(const vkl_graph *g, vkl_expr e) {
    int64_t v;
    return vkl_expr_is_const(g->syms, e, &v) && v == 1;
}

/* t = t0 * c or t0 / c with c a scalar constant that does not broadcast t0
 * to a larger shape, repeatedly: returns t0 and folds c into *scale. */
static uint32_t peel_scale(vkl_graph *g, uint32_t t, vkl_pattern *p, double *scale) {
    for (;;) {
        uint32_t n = vkl_match_producer(g, t, VKL_OP_MUL), other = VKL_NONE;
        double c;
        if (n != VKL_NONE && g->nodes[n].n_inputs == 2) {
            const uint32_t *in = g->nodes[n].inputs;
            if (vkl_match_scalar(g, in[1], &c))
                other = in[0];
            else if (vkl_match_scalar(g, in[0], &c))
                other = in[1];
        } else if ((n = vkl_match_producer(g, t, VKL_OP_DIV)) != VKL_NONE && g->nodes[n].n_inputs == 2 &&
                   vkl_match_scalar(g, g->nodes[n].inputs[1], &c) && c != 0) {
            other = g->nodes[n].inputs[0];
            c = 1.0 / c;
        }
        if (other == VKL_NONE || !vkl_shape_equal(&g->tensors[other].shape, &g->tensors[t].shape) ||
            !vkl_pattern_add(p, n))
            return t;
        *scale *= c;
        t = other;
    }
}

/* Hugging Face's repeat_kv: Reshape(Expand(Unsqueeze(k, axis 2), [B, Hkv,
 * n_rep, T, D]), [B, Hkv * n_rep, T, D]) (TorchScript and dynamo alike; the
 * Unsqueeze may be a Reshape that inserts the 1). Returns k, or VKL_NONE. */
static uint32_t match_repeat_kv(vkl_graph *g, uint32_t t, vkl_pattern *p) {
    uint32_t r = vkl_match_producer(g, t, VKL_OP_RESHAPE), axis;
    uint32_t e = r == VKL_NONE ? VKL_NONE : vkl_match_producer(g, g->nodes[r].inputs[0], VKL_OP_EXPAND);
    if (e == VKL_NONE) return VKL_NONE;
    uint32_t u5 = g->nodes[e].inputs[0];
    uint32_t un = vkl_match_producer(g, u5, VKL_OP_UNSQUEEZE);
    if (un == VKL_NONE)
        un = vkl_match_producer(g, u5, VKL_OP_RESHAPE);
    else if (!vkl_match_one_axis(g, un, 1, 5, &axis) || axis != 2)
        return VKL_NONE;
    if (un == VKL_NONE) return VKL_NONE;
    uint32_t k = g->nodes[un].inputs[0];
    if (k == VKL_NONE) return VKL_NONE;
    const vkl_shape *ks = &g->tensors[k].shape, *us = &g->tensors[u5].shape,
                    *es = &g->tensors[g->nodes[e].outputs[0]].shape, *ts = &g->tensors[t].shape;
    vkl_expr heads;
    if (ks->rank != 4 || us->rank != 5 || es->rank != 5 || ts->rank != 4 || !is_one(g, us->dims[2]) ||
        vkl_expr_mul(g->syms, ks->dims[1], es->dims[2], &heads))
        return VKL_NONE;
    for (uint32_t d = 0; d < 4; d++) {
        uint32_t d5 = d < 2 ? d : d + 1; /* the dim of [B, Hkv, 1, T, D] holding k's dim d */
        if (us->dims[d5] != ks->dims[d] || es->dims[d5] != ks->dims[d]) return VKL_NONE;
    }
    if (ts->dims[0] != ks->dims[0] || ts->dims[1] != heads || ts->dims[2] != ks->dims[2] || ts->dims[3] != ks->dims[3])
        return VKL_NONE;
    if (!vkl_pattern_add(p, r) || !vkl_pattern_add(p, e) || !vkl_pattern_add(p, un)) return VKL_NONE;
    return k;
}

typedef struct attn_match {
    vkl_pattern p;
    uint32_t q, k, v, mask, out;
    bool k_transpose; /* K = Transpose(k, k_perm) has to be inserted */
    uint32_t k_perm[4];
    vkl_shape k_shape; /* K's shape, [B, Hkv, T, D] */
    double scale;
} attn_match;

/* K from the second operand of MatMul(Q, Kᵀ): undo its Transpose (or insert
 * one: Kᵀ's permutation with the last two dims swapped), then repeat_kv. */
static bool match_key(vkl_graph *g, uint32_t kt, attn_match *m) {
    uint32_t perm[VKL_MAX_RANK], rank, tr = vkl_match_producer(g, kt, VKL_OP_TRANSPOSE);
    if (g->tensors[kt].shape.rank != 4) return false;
    if (tr != VKL_NONE && vkl_match_perm(g, tr, perm, &rank) && rank == 4 && vkl_pattern_add(&m->p, tr)) {
        m->k = g->nodes[tr].inputs[0];
        uint32_t t = perm[2];
        perm[2] = perm[3];
        perm[3] = t;
    } else {
        m->k = kt;
        for (uint32_t d = 0; d < 4; d++) perm[d] = d < 2 ? d : 5 - d;
    }
    m->k_transpose = false;
    for (uint32_t d = 0; d < 4; d++) {
        m->k_perm[d] = perm[d];
        m->k_transpose |= perm[d] != d;
        m->k_shape.dims[d] = g->tensors[m->k].shape.dims[perm[d]];
    }
    m->k_shape.rank = 4;
    return g->tensors[m->k].shape.rank == 4;
}

/* Both K and V expanded by repeat_kv: read the KV heads directly. */
static void match_gqa(vkl_graph *g, attn_match *m) {
    if (m->k_transpose || g->tensors[m->k].shape.dims[1] != g->tensors[m->q].shape.dims[1]) return;
    vkl_pattern p = m->p;
    uint32_t k = match_repeat_kv(g, m->k, &p);
    uint32_t v = k == VKL_NONE ? VKL_NONE : match_repeat_kv(g, m->v, &p);
    if (v == VKL_NONE) return;
    m->p = p;
    m->k = k;
    m->v = v;
    m->k_shape = g->tensors[k].shape;
}

/* The dims Attention requires: Q [B, Hq, S, D], K [B, Hkv, T, D], V [B,
 * Hkv, T, Dv] with Hkv = Hq (or 1, or the KV heads repeat_kv expanded), the
 * replaced output [B, Hq, S, Dv], and a float mask broadcasting to [B, Hq,
 * S, T]. */
static bool check_shapes(vkl_graph *g, const attn_match *m, const vkl_shape *scores, bool gqa) {
    const vkl_shape *q = &g->tensors[m->q].shape, *k = &m->k_shape, *v = &g->tensors[m->v].shape,
                    *o = &g->tensors[m->out].shape;
    if (q->rank != 4 || v->rank != 4 || o->rank != 4 || scores->rank != 4) return false;
    if (k->dims[0] != q->dims[0] || k->dims[3] != q->dims[3] || v->dims[0] != q->dims[0] || v->dims[1] != k->dims[1] ||
        v->dims[2] != k->dims[2])
        return false;
    if (!gqa && k->dims[1] != q->dims[1] && !is_one(g, k->dims[1])) return false;
    const vkl_expr want_scores[4] = {q->dims[0], q->dims[1], q->dims[2], k->dims[2]};
    const vkl_expr want_out[4] = {q->dims[0], q->dims[1], q->dims[2], v->dims[3]};
    for (uint32_t d = 0; d < 4; d++)
        if (scores->dims[d] != want_scores[d] || o->dims[d] != want_out[d]) return false;
    const vkl_tensor *qt = &g->tensors[m->q];
    if (g->tensors[m->k].dtype != qt->dtype || g->tensors[m->v].dtype != qt->dtype ||
        g->tensors[m->out].dtype != qt->dtype)
        return false;
    if (m->mask == VKL_NONE) return true;
    const vkl_tensor *mt = &g->tensors[m->mask];
    if (mt->dtype != qt->dtype || mt->shape.rank > 4) return false;
    for (uint32_t i = 0; i < mt->shape.rank; i++) {
        vkl_expr d = mt->shape.dims[i];
        if (d != want_scores[4 - mt->shape.rank + i] && !is_one(g, d)) return false;
    }
    return true;
}

/* Softmax(axis -1) of MatMul(Q, Kᵀ) * scale (+ mask), read only by
 * MatMul(probs, V) (through a same-dtype Cast at most). */
static bool match_softmax(vkl_graph *g, const vkl_uses *u, uint32_t sm, attn_match *m) {
    uint32_t in = g->nodes[sm].n_inputs == 1 ? g->nodes[sm].inputs[0] : VKL_NONE, axis;
    if (in == VKL_NONE || g->tensors[in].shape.rank != 4 || !vkl_match_attr_axis(g, sm, "axis", -1, 4, &axis) ||
        axis != 3)
        return false;
    m->p.n = 0;
    vkl_pattern_add(&m->p, sm);
    uint32_t probs = g->nodes[sm].outputs[0], c = vkl_match_sole_consumer(g, u, probs);
    if (c != VKL_NONE && g->nodes[c].op == VKL_OP_CAST &&
        g->tensors[g->nodes[c].outputs[0]].dtype == g->tensors[probs].dtype) {
        vkl_pattern_add(&m->p, c);
        probs = g->nodes[c].outputs[0];
        c = vkl_match_sole_consumer(g, u, probs);
    }
    if (c == VKL_NONE || g->nodes[c].op != VKL_OP_MAT_MUL || g->nodes[c].inputs[0] != probs ||
        !vkl_pattern_add(&m->p, c))
        return false;
    m->v = g->nodes[c].inputs[1];
    m->out = g->nodes[c].outputs[0];
    if (m->v == VKL_NONE || m->out == VKL_NONE) return false;
    /* scores side: an Add whose one operand leads to MatMul(Q, Kᵀ) */
    m->mask = VKL_NONE;
    m->scale = 1;
    uint32_t s = in, mm = VKL_NONE, add = vkl_match_producer(g, in, VKL_OP_ADD);
    if (add != VKL_NONE &&
        (g->nodes[add].n_inputs != 2 || g->nodes[add].inputs[0] == VKL_NONE || g->nodes[add].inputs[1] == VKL_NONE))
        add = VKL_NONE;
    vkl_pattern base = m->p;
    for (uint32_t side = 0; add != VKL_NONE && side < 2 && mm == VKL_NONE; side++) {
        const uint32_t *ai = g->nodes[add].inputs;
        m->p = base;
        m->scale = 1;
        vkl_pattern_add(&m->p, add);
        s = peel_scale(g, ai[side], &m->p, &m->scale);
        mm = vkl_match_producer(g, s, VKL_OP_MAT_MUL);
        m->mask = ai[1 - side];
        if (!vkl_shape_equal(&g->tensors[ai[side]].shape, &g->tensors[in].shape)) mm = VKL_NONE;
    }
    if (mm == VKL_NONE) {
        m->p = base;
        m->scale = 1;
        m->mask = VKL_NONE;
        s = peel_scale(g, in, &m->p, &m->scale);
        mm = vkl_match_producer(g, s, VKL_OP_MAT_MUL);
    }
    if (mm == VKL_NONE || !vkl_pattern_add(&m->p, mm)) return false;
    m->q = peel_scale(g, g->nodes[mm].inputs[0], &m->p, &m->scale);
    uint32_t kt = peel_scale(g, g->nodes[mm].inputs[1], &m->p, &m->scale);
    if (m->q == VKL_NONE || kt == VKL_NONE || !match_key(g, kt, m)) return false;
    uint32_t k_expanded = m->k;
    match_gqa(g, m);
    return check_shapes(g, m, &g->tensors[s].shape, m->k != k_expanded) && isfinite(m->scale) && m->scale != 0 &&
           (float)m->scale != 0 && isfinite((float)m->scale);
}

static vkl_status fuse_one(vkl_graph *g, const vkl_uses *u, uint32_t sm, bool *fused) {
    attn_match m;
    *fused = false;
    if (g->nodes[sm].op != VKL_OP_SOFTMAX || !match_softmax(g, u, sm, &m) ||
        !vkl_match_closed(g, u, m.p.nodes, m.p.n, m.out))
        return VKL_OK;
    const char *base = g->tensors[m.out].name;
    uint32_t k = m.k, att, in[4];
    vkl_status st = VKL_OK;
    if (m.k_transpose) {
        int64_t perm[4] = {m.k_perm[0], m.k_perm[1], m.k_perm[2], m.k_perm[3]};
        vkl_attr a = {.name = "perm", .kind = VKL_ATTR_INTS, .ints = perm, .count = 4};
        st = vkl_match_add_node(g, VKL_OP_TRANSPOSE, g->tensors[m.k].name, "key", &m.k, 1, &a, 1, &k);
        if (st || k == VKL_NONE) return st;
    }
    in[0] = m.q;
    in[1] = k;
    in[2] = m.v;
    in[3] = m.mask;
    const vkl_attr attrs[4] = {
        {.name = "scale", .kind = VKL_ATTR_FLOAT, .f = (float)m.scale},
        {.name = "causal", .kind = VKL_ATTR_INT, .i = 0},
        {.name = "window", .kind = VKL_ATTR_INT, .i = 0},
        {.name = "kv_layout", .kind = VKL_ATTR_INT, .i = 0},
    };
    st = vkl_match_add_node(g, VKL_OP_ATTENTION, base, "attention", in, m.mask == VKL_NONE ? 3 : 4, attrs, 4, &att);
    if (!st) st = vkl_match_replace(g, &m.p, m.out, att, fused);
    if (!st && !*fused && m.k_transpose) g->nodes[g->tensors[k].producer].dead = true;
    return st;
}

vkl_status vkl_pass_fuse_attention(vkl_graph *g, uint32_t *fused) {
    return vkl_match_each(g, fuse_one, fused);
}
