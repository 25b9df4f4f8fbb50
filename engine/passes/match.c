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

bool vkl_match_attr_axis(const vkl_graph *g, uint32_t node, const char *name, int64_t def, uint32_t rank,
                         uint32_t *axis) {
    const vkl_attr *a = vkl_node_attr(&g->nodes[node], name);
    if (a && a->kind != VKL_ATTR_INT) return false;
    int64_t v = a ? a->i : def;
    return v != INT64_MIN && vkl_match_axis(v, rank, axis);
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

bool vkl_match_closed(const vkl_graph *g, const vkl_uses *u, const uint32_t *nodes, uint32_t n, uint32_t out) {
    for (uint32_t i = 0; i < n; i++) {
        const vkl_node *p = &g->nodes[nodes[i]];
        for (uint32_t k = 0; k < p->n_outputs; k++) {
            uint32_t t = p->outputs[k], inside = 0;
            if (t == VKL_NONE || t == out) continue;
            if (t >= u->n) return false;
            for (uint32_t j = 0; j < n; j++) {
                const vkl_node *c = &g->nodes[nodes[j]];
                for (uint32_t m = 0; m < c->n_inputs; m++) inside += c->inputs[m] == t;
            }
            if (u->count[t] != inside) return false;
        }
    }
    return true;
}

uint32_t vkl_match_sole_consumer(const vkl_graph *g, const vkl_uses *u, uint32_t t) {
    if (t == VKL_NONE || t >= u->n || u->count[t] != 1 || g->tensors[t].is_output) return VKL_NONE;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const vkl_node *n = &g->nodes[i];
        if (n->dead) continue;
        for (uint32_t k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] == t) return i;
    }
    return VKL_NONE;
}

bool vkl_pattern_add(vkl_pattern *p, uint32_t node) {
    if (node == VKL_NONE) return false;
    for (uint32_t i = 0; i < p->n; i++)
        if (p->nodes[i] == node) return true;
    if (p->n == VKL_PATTERN_MAX) return false;
    p->nodes[p->n++] = node;
    return true;
}

void vkl_pattern_kill(vkl_graph *g, const vkl_pattern *p) {
    for (uint32_t i = 0; i < p->n; i++) g->nodes[p->nodes[i]].dead = true;
}

/* ---- shared by the norm and activation fusions (and fold) */

uint32_t vkl_uses_get(const vkl_graph *g, const vkl_uses *u, uint32_t t) {
    if (t == VKL_NONE || t >= g->n_tensors) return 0;
    return t < u->n ? u->count[t] : vkl_graph_use_count(g, t);
}

bool vkl_match_near(double a, double b) {
    double d = a - b, s = b < 0 ? -b : b;
    return (d < 0 ? -d : d) <= 1e-6 * (s > 1e-30 ? s : 1e-30);
}

/* One-element constants only: an all-equal vector (a norm weight that
 * happens to be all ones) stays a leaf, so it keeps its shape. */
static bool product_const(const vkl_graph *g, uint32_t t, double *v) {
    int64_t n;
    return t < g->n_tensors && vkl_shape_const_numel(g, &g->tensors[t].shape, &n) && n == 1 &&
           vkl_match_scalar(g, t, v);
}

static bool product_leaf(const vkl_graph *g, vkl_product *p, uint32_t t, bool inverse) {
    double c;
    if (product_const(g, t, &c)) {
        if (!inverse) p->scale *= c;
        else if (c != 0) p->scale /= c;
        else return false;
        return true;
    }
    uint32_t *n = inverse ? &p->n_den : &p->n_num;
    if (*n == VKL_PRODUCT_MAX) return false;
    (inverse ? p->den : p->num)[(*n)++] = t;
    return true;
}

static bool product_walk(const vkl_graph *g, const vkl_uses *u, vkl_product *p, uint32_t t, bool inverse, bool root) {
    uint32_t pn = t < g->n_tensors ? g->tensors[t].producer : VKL_NONE;
    if (pn == VKL_NONE || g->nodes[pn].dead || !vkl_dtype_is_float(g->tensors[t].dtype) ||
        (!root && vkl_uses_get(g, u, t) != 1))
        return product_leaf(g, p, t, inverse);
    const vkl_node *n = &g->nodes[pn];
    double e = 0;
    bool binary = n->n_inputs == 2 && n->inputs[0] != VKL_NONE && n->inputs[1] != VKL_NONE;
    bool unary = n->n_inputs == 1 && n->inputs[0] != VKL_NONE;
    switch ((vkl_op)n->op) {
    case VKL_OP_MUL: case VKL_OP_DIV: if (!binary) return product_leaf(g, p, t, inverse); break;
    case VKL_OP_RECIPROCAL: case VKL_OP_NEG: if (!unary) return product_leaf(g, p, t, inverse); break;
    case VKL_OP_POW:
        if (!binary || !product_const(g, n->inputs[1], &e) || (e != 2 && e != 3)) return product_leaf(g, p, t, inverse);
        break;
    default: return product_leaf(g, p, t, inverse);
    }
    if (!vkl_pattern_add(&p->nodes, pn)) return false;
    switch ((vkl_op)n->op) {
    case VKL_OP_MUL:
        return product_walk(g, u, p, n->inputs[0], inverse, false) && product_walk(g, u, p, n->inputs[1], inverse, false);
    case VKL_OP_DIV:
        return product_walk(g, u, p, n->inputs[0], inverse, false) && product_walk(g, u, p, n->inputs[1], !inverse, false);
    case VKL_OP_RECIPROCAL: return product_walk(g, u, p, n->inputs[0], !inverse, false);
    case VKL_OP_NEG: p->scale = -p->scale; return product_walk(g, u, p, n->inputs[0], inverse, false);
    default: /* Pow(base, 2 or 3): the base repeated, never expanded itself */
        for (int k = 0; k < (int)e; k++)
            if (!product_leaf(g, p, n->inputs[0], inverse)) return false;
        return true;
    }
}

bool vkl_match_product(const vkl_graph *g, const vkl_uses *u, uint32_t t, vkl_product *p) {
    memset(p, 0, sizeof(*p));
    p->scale = 1;
    if (t == VKL_NONE || t >= g->n_tensors || !vkl_dtype_is_float(g->tensors[t].dtype)) return false;
    return product_walk(g, u, p, t, false, true);
}

uint32_t vkl_product_count(const vkl_product *p, uint32_t t) {
    uint32_t c = 0;
    for (uint32_t i = 0; i < p->n_num; i++) c += p->num[i] == t;
    return c;
}

uint32_t vkl_match_mean_last(vkl_graph *g, uint32_t t, uint32_t *in) {
    uint32_t m = vkl_match_producer(g, t, VKL_OP_REDUCE_MEAN), axis;
    if (m == VKL_NONE || g->nodes[m].n_inputs < 2 || g->nodes[m].inputs[0] == VKL_NONE) return VKL_NONE;
    const vkl_attr *keep = vkl_node_attr(&g->nodes[m], "keepdims");
    uint32_t x = g->nodes[m].inputs[0], rank = g->tensors[x].shape.rank;
    if (keep && (keep->kind != VKL_ATTR_INT || keep->i != 1)) return VKL_NONE;
    if (rank == 0 || !vkl_match_one_axis(g, m, 1, rank, &axis) || axis != rank - 1) return VKL_NONE;
    *in = x;
    return m;
}

uint32_t vkl_match_centered(vkl_graph *g, uint32_t t, uint32_t *x, uint32_t *mean_node) {
    uint32_t s = vkl_match_producer(g, t, VKL_OP_SUB), in;
    if (s == VKL_NONE || g->nodes[s].n_inputs != 2) return VKL_NONE;
    uint32_t m = vkl_match_mean_last(g, g->nodes[s].inputs[1], &in);
    if (m == VKL_NONE || in != g->nodes[s].inputs[0]) return VKL_NONE;
    *x = in;
    *mean_node = m;
    return s;
}

bool vkl_match_inv_rms(vkl_graph *g, const vkl_product *p, vkl_pattern *pat, uint32_t *base, double *eps,
                       uint32_t *factor) {
    uint32_t s = VKL_NONE, root = VKL_NONE;
    *factor = VKL_NONE;
    if (p->n_den == 1) {
        root = vkl_match_producer(g, p->den[0], VKL_OP_SQRT);
        if (root != VKL_NONE) s = g->nodes[root].inputs[0];
    } else if (p->n_den == 0) {
        for (uint32_t i = 0; i < p->n_num; i++) {
            uint32_t pw = vkl_match_producer(g, p->num[i], VKL_OP_POW);
            if (pw == VKL_NONE || !vkl_match_scalar_eq(g, g->nodes[pw].inputs[1], -0.5)) continue;
            if (root != VKL_NONE) return false; /* two of them */
            root = pw;
            s = g->nodes[pw].inputs[0];
            *factor = i;
        }
    }
    uint32_t add = vkl_match_producer(g, s, VKL_OP_ADD), ms = VKL_NONE, sq_in, base_t;
    if (root == VKL_NONE || add == VKL_NONE) return false;
    const vkl_node *a = &g->nodes[add];
    if (vkl_match_scalar(g, a->inputs[1], eps)) ms = a->inputs[0];
    else if (vkl_match_scalar(g, a->inputs[0], eps)) ms = a->inputs[1];
    uint32_t mean = vkl_match_mean_last(g, ms, &sq_in);
    if (mean == VKL_NONE) return false;
    uint32_t sq = vkl_match_producer(g, sq_in, VKL_OP_POW);
    if (sq != VKL_NONE) {
        if (!vkl_match_scalar_eq(g, g->nodes[sq].inputs[1], 2.0)) return false;
        base_t = g->nodes[sq].inputs[0];
    } else {
        sq = vkl_match_producer(g, sq_in, VKL_OP_MUL);
        if (sq == VKL_NONE || g->nodes[sq].inputs[0] != g->nodes[sq].inputs[1]) return false;
        base_t = g->nodes[sq].inputs[0];
    }
    /* the square must not broadcast: the mean is then over base's last axis */
    if (base_t == VKL_NONE || !vkl_shape_equal(&g->tensors[base_t].shape, &g->tensors[sq_in].shape)) return false;
    *base = base_t;
    return vkl_pattern_add(pat, root) && vkl_pattern_add(pat, add) && vkl_pattern_add(pat, mean) &&
           vkl_pattern_add(pat, sq);
}

bool vkl_match_norm_factors(const vkl_product *p, uint32_t factor, uint32_t base, uint32_t *scale) {
    *scale = VKL_NONE;
    for (uint32_t i = 0; i < p->n_num; i++) {
        if (i == factor || p->num[i] == base) continue;
        if (*scale != VKL_NONE) return false;
        *scale = p->num[i];
    }
    return vkl_product_count(p, base) == 1;
}

bool vkl_match_keeps_shape(const vkl_graph *g, uint32_t x, uint32_t out) {
    const vkl_tensor *a = &g->tensors[x], *b = &g->tensors[out];
    return vkl_dtype_is_float(a->dtype) && a->shape.rank > 0 && a->dtype == b->dtype &&
           vkl_shape_equal(&a->shape, &b->shape);
}

vkl_status vkl_match_new_weight(vkl_graph *g, const char *base, const char *suffix, vkl_dtype dtype,
                                const vkl_shape *shape, const void *data, size_t nbytes, uint32_t *id) {
    vkl_status st = vkl_match_new_tensor(g, base, suffix, id);
    if (st) return st;
    vkl_tensor *t = &g->tensors[*id];
    t->kind = VKL_TENSOR_WEIGHT;
    t->dtype = dtype;
    t->shape = *shape;
    return vkl_graph_set_data(g, *id, data, nbytes, true);
}

/* A norm's scale or bias for x: rank 0, or [last dim or 1], of x's dtype. */
static bool norm_param(const vkl_graph *g, uint32_t t, const vkl_tensor *x) {
    const vkl_tensor *w = &g->tensors[t];
    int64_t d;
    if (w->dtype != x->dtype || w->shape.rank > 1) return false;
    return w->shape.rank == 0 || w->shape.dims[0] == x->shape.dims[x->shape.rank - 1] ||
           (vkl_expr_is_const(g->syms, w->shape.dims[0], &d) && d == 1);
}

/* Ones of x's last dim (a constant) and float dtype; VKL_NONE when not. */
static vkl_status ones_for(vkl_graph *g, uint32_t x, uint32_t *id) {
    const vkl_tensor *t = &g->tensors[x];
    vkl_dtype dt = t->dtype;
    vkl_shape s = {1, {t->shape.dims[t->shape.rank - 1]}};
    int64_t count;
    size_t es = vkl_dtype_size(dt), bytes;
    *id = VKL_NONE;
    if (!vkl_expr_is_const(g->syms, s.dims[0], &count) || count < 1 || !vkl_mul_size((size_t)count, es, &bytes) ||
        (dt != VKL_DTYPE_F32 && dt != VKL_DTYPE_F16 && dt != VKL_DTYPE_BF16 && dt != VKL_DTYPE_F64))
        return VKL_OK;
    unsigned char *buf = vkl_malloc(g->ctx, bytes);
    if (!buf) return VKL_ERR_OUT_OF_MEMORY;
    const float one = 1.0f;
    const double one_d = 1.0;
    const uint16_t one_h = vkl_f32_to_f16(1.0f), one_b = vkl_f32_to_bf16(1.0f);
    const void *one_p = dt == VKL_DTYPE_F32 ? (const void *)&one
                        : dt == VKL_DTYPE_F64 ? (const void *)&one_d
                        : dt == VKL_DTYPE_F16 ? (const void *)&one_h : (const void *)&one_b;
    for (int64_t i = 0; i < count; i++) memcpy(buf + (size_t)i * es, one_p, es);
    vkl_status st = vkl_match_new_weight(g, t->name, "ones", dt, &s, buf, bytes, id);
    vkl_free(g->ctx, buf);
    return st;
}

vkl_status vkl_match_emit_norm(vkl_graph *g, vkl_op op, const vkl_pattern *pat, uint32_t out, uint32_t x,
                               uint32_t scale, uint32_t bias, double eps, bool *fused) {
    vkl_status st = VKL_OK;
    *fused = false;
    if ((scale != VKL_NONE && !norm_param(g, scale, &g->tensors[x])) ||
        (bias != VKL_NONE && !norm_param(g, bias, &g->tensors[x])))
        return VKL_OK;
    if (scale == VKL_NONE) st = ones_for(g, x, &scale);
    if (st || scale == VKL_NONE) return st;
    const vkl_attr attrs[] = {{.name = "axis", .kind = VKL_ATTR_INT, .i = -1},
                              {.name = "epsilon", .kind = VKL_ATTR_FLOAT, .f = (float)eps}};
    const uint32_t ins[3] = {x, scale, bias};
    uint32_t to;
    st = vkl_match_add_node(g, op, g->tensors[out].name, vkl_op_info_get(op)->name, ins, bias == VKL_NONE ? 2 : 3,
                            attrs, 2, &to);
    if (!st) st = vkl_match_replace(g, pat, out, to, fused);
    return st;
}

vkl_status vkl_match_replace(vkl_graph *g, const vkl_pattern *pat, uint32_t from, uint32_t to, bool *done) {
    *done = false;
    if (to == VKL_NONE) return VKL_OK;
    const vkl_tensor *a = &g->tensors[from], *b = &g->tensors[to];
    uint32_t fused = b->producer;
    bool ok = a->dtype == b->dtype && vkl_shape_equal(&a->shape, &b->shape);
    /* The fused node must not read what the pattern computed (it dies). */
    for (uint32_t k = 0; ok && k < g->nodes[fused].n_inputs; k++) {
        uint32_t in = g->nodes[fused].inputs[k];
        for (uint32_t i = 0; ok && in != VKL_NONE && i < pat->n; i++) ok = g->tensors[in].producer != pat->nodes[i];
    }
    if (!ok) {
        g->nodes[fused].dead = true;
        g->tensors[to].producer = VKL_NONE;
        return VKL_OK;
    }
    vkl_pattern_kill(g, pat);
    *done = true;
    return vkl_graph_replace_uses(g, from, to);
}

vkl_status vkl_match_each(vkl_graph *g, vkl_match_try_fn try_fn, uint32_t *fired) {
    uint32_t n = g->n_nodes, count = 0;
    uint32_t *order = vkl_calloc(g->ctx, n ? n : 1, sizeof(uint32_t));
    vkl_uses u = {0};
    vkl_status st = order ? vkl_graph_topo_order(g->ctx, g, order, &count) : VKL_ERR_OUT_OF_MEMORY;
    if (!st) st = vkl_uses_build(g, &u);
    *fired = 0;
    for (uint32_t k = count; !st && k-- > 0;) {
        bool fused = false;
        if (g->nodes[order[k]].dead) continue;
        st = try_fn(g, &u, order[k], &fused);
        if (st || !fused) continue;
        (*fired)++;
        vkl_uses_free(g, &u);
        st = vkl_uses_build(g, &u);
    }
    if (u.count) vkl_uses_free(g, &u);
    vkl_free(g->ctx, order);
    return st;
}
