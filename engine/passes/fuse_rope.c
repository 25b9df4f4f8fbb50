/* RoPE fusion: the rotary embedding as Hugging Face writes it, spelled out
 * by the TorchScript and dynamo exporters (Slice, Neg, Concat, Mul, Add),
 * becomes one RoPE(x, cos, sin) node (engine/ops/fused.c). */
#include "../ops/shape_util.h"
#include "match.h"
#include "passes.h"

static bool dim_const(const vkl_graph *g, uint32_t t, uint32_t d, int64_t *v) {
    const vkl_shape *s = &g->tensors[t].shape;
    return d < s->rank && vkl_expr_is_const(g->syms, s->dims[d], v);
}

static bool is_const(const vkl_graph *g, vkl_expr e, int64_t want) {
    int64_t v;
    return vkl_expr_is_const(g->syms, e, &v) && v == want;
}

/* A one-axis Slice with constant bounds on an axis of constant length,
 * bounds clamped as ONNX does (positive steps only). */
typedef struct slice1 {
    uint32_t node, data, axis;
    int64_t start, end, step;
} slice1;

static int64_t clamp_bound(int64_t b, int64_t len) {
    if (b < 0) b = b < -len ? 0 : b + len;
    return b > len ? len : b;
}

static bool match_slice(vkl_graph *g, uint32_t t, slice1 *s) {
    s->node = vkl_match_producer(g, t, VKL_OP_SLICE);
    if (s->node == VKL_NONE) return false;
    const vkl_node *n = &g->nodes[s->node];
    int64_t len;
    s->data = n->inputs[0];
    if (s->data == VKL_NONE || n->n_inputs < 3) return false;
    uint32_t rank = g->tensors[s->data].shape.rank;
    s->axis = 0; /* ONNX's default axes [0, 1, ...] for one bound */
    s->step = 1;
    if (n->n_inputs > 3 && n->inputs[3] != VKL_NONE && !vkl_match_one_axis(g, s->node, 3, rank, &s->axis)) return false;
    if (n->n_inputs > 4 && n->inputs[4] != VKL_NONE && !vkl_match_const_int(g, n->inputs[4], &s->step)) return false;
    if (s->step <= 0 || !vkl_match_const_int(g, n->inputs[1], &s->start) ||
        !vkl_match_const_int(g, n->inputs[2], &s->end) || !dim_const(g, s->data, s->axis, &len))
        return false;
    s->start = clamp_bound(s->start, len);
    s->end = clamp_bound(s->end, len);
    return true;
}

/* x[..., a:b] on the last axis of a rank-4 x, step `step`. */
static bool is_last_slice(const vkl_graph *g, const slice1 *s, int64_t a, int64_t b, int64_t step) {
    return g->tensors[s->data].shape.rank == 4 && s->axis == 3 && s->start == a && s->end == b && s->step == step;
}

/* rotate_half(x) = Concat(Neg(x[..., h:2h]), x[..., :h]) on the last axis,
 * x's last dim 2h: returns x. */
static uint32_t match_rotate_half(vkl_graph *g, uint32_t rot, vkl_pattern *p) {
    uint32_t c = vkl_match_producer(g, rot, VKL_OP_CONCAT), axis;
    if (c == VKL_NONE || g->nodes[c].n_inputs != 2 || !vkl_match_attr_axis(g, c, "axis", INT64_MIN, 4, &axis) ||
        axis != 3 || g->tensors[rot].shape.rank != 4)
        return VKL_NONE;
    uint32_t neg = vkl_match_producer(g, g->nodes[c].inputs[0], VKL_OP_NEG);
    slice1 hi, lo;
    int64_t d;
    if (neg == VKL_NONE || !match_slice(g, g->nodes[neg].inputs[0], &hi) ||
        !match_slice(g, g->nodes[c].inputs[1], &lo) || hi.data != lo.data || !dim_const(g, lo.data, 3, &d) || d % 2 ||
        !is_last_slice(g, &lo, 0, d / 2, 1) || !is_last_slice(g, &hi, d / 2, d, 1))
        return VKL_NONE;
    if (!vkl_pattern_add(p, c) || !vkl_pattern_add(p, neg) || !vkl_pattern_add(p, hi.node) ||
        !vkl_pattern_add(p, lo.node))
        return VKL_NONE;
    return lo.data;
}

/* x [B, H, S, D] viewed as pairs: Reshape to [B, H, S, D/2, 2]. */
static uint32_t match_pairs_view(vkl_graph *g, uint32_t xr, vkl_pattern *p) {
    uint32_t r = vkl_match_producer(g, xr, VKL_OP_RESHAPE);
    if (r == VKL_NONE) return VKL_NONE;
    uint32_t x = g->nodes[r].inputs[0];
    if (x == VKL_NONE) return VKL_NONE;
    const vkl_shape *xs = &g->tensors[x].shape, *rs = &g->tensors[xr].shape;
    int64_t d;
    if (xs->rank != 4 || rs->rank != 5 || !dim_const(g, x, 3, &d) || d % 2 || !is_const(g, rs->dims[3], d / 2) ||
        !is_const(g, rs->dims[4], 2))
        return VKL_NONE;
    for (uint32_t k = 0; k < 3; k++)
        if (rs->dims[k] != xs->dims[k]) return VKL_NONE;
    return vkl_pattern_add(p, r) ? x : VKL_NONE;
}

static uint32_t peel_neg(vkl_graph *g, uint32_t t, vkl_pattern *p, int *negs) {
    uint32_t n;
    while ((n = vkl_match_producer(g, t, VKL_OP_NEG)) != VKL_NONE && g->nodes[n].inputs[0] != VKL_NONE &&
           vkl_pattern_add(p, n)) {
        ++*negs;
        t = g->nodes[n].inputs[0];
    }
    return t;
}

/* One operand of GPT-J's stack((-x[..., 1::2], x[..., 0::2]), -1): the
 * elements of x of one parity as [B, H, S, D/2, 1], negated `negs` times.
 * Taken by strided Slices of x, or from x viewed as pairs by Slice or
 * Gather on the pair axis. */
static uint32_t match_pair_part(vkl_graph *g, uint32_t t, vkl_pattern *p, int64_t *parity, int *negs) {
    bool unsq = false;
    uint32_t axis, node;
    if (t == VKL_NONE) return VKL_NONE;
    t = peel_neg(g, t, p, negs);
    if (g->tensors[t].shape.rank == 5 && (node = vkl_match_producer(g, t, VKL_OP_UNSQUEEZE)) != VKL_NONE &&
        vkl_match_one_axis(g, node, 1, 5, &axis) && axis == 4) {
        if (!vkl_pattern_add(p, node)) return VKL_NONE;
        unsq = true;
        t = g->nodes[node].inputs[0];
        if (t == VKL_NONE) return VKL_NONE;
        t = peel_neg(g, t, p, negs);
    }
    uint32_t rank = g->tensors[t].shape.rank;
    slice1 s;
    int64_t d;
    if (match_slice(g, t, &s)) {
        if (!vkl_pattern_add(p, s.node)) return VKL_NONE;
        *parity = s.start;
        if (unsq && rank == 4 && dim_const(g, s.data, 3, &d) && s.start < 2 && is_last_slice(g, &s, s.start, d, 2))
            return s.data;
        if (!unsq && rank == 5 && s.axis == 4 && s.start < 2 && s.end == s.start + 1 && s.step == 1)
            return match_pairs_view(g, s.data, p);
        return VKL_NONE;
    }
    node = vkl_match_producer(g, t, VKL_OP_GATHER);
    if (node == VKL_NONE || !vkl_pattern_add(p, node)) return VKL_NONE;
    const vkl_node *n = &g->nodes[node];
    if (n->n_inputs != 2 || n->inputs[1] == VKL_NONE) return VKL_NONE;
    uint32_t idx_rank = g->tensors[n->inputs[1]].shape.rank;
    if (!vkl_match_attr_axis(g, node, "axis", 0, 5, &axis) || axis != 4 ||
        !vkl_match_const_int(g, n->inputs[1], parity) || *parity < 0 || *parity > 1 ||
        (unsq ? idx_rank != 0 : idx_rank != 1))
        return VKL_NONE;
    return match_pairs_view(g, n->inputs[0], p);
}

/* rotate_every_two(x) = Reshape(Concat(-x_odd, x_even on a new last axis))
 * back to x's shape: returns x. */
static uint32_t match_rotate_pairs(vkl_graph *g, uint32_t rot, vkl_pattern *p) {
    uint32_t r = vkl_match_producer(g, rot, VKL_OP_RESHAPE), axis;
    if (r == VKL_NONE || !vkl_pattern_add(p, r)) return VKL_NONE;
    uint32_t cat = g->nodes[r].inputs[0], c = vkl_match_producer(g, cat, VKL_OP_CONCAT);
    if (c == VKL_NONE || g->nodes[c].n_inputs != 2 || !vkl_match_attr_axis(g, c, "axis", INT64_MIN, 5, &axis) ||
        axis != 4 || g->tensors[cat].shape.rank != 5 || !vkl_pattern_add(p, c))
        return VKL_NONE;
    int64_t par_a = -1, par_b = -1;
    int neg_a = 0, neg_b = 0;
    uint32_t a = g->nodes[c].inputs[0], b = g->nodes[c].inputs[1];
    uint32_t xa = match_pair_part(g, a, p, &par_a, &neg_a);
    uint32_t xb = match_pair_part(g, b, p, &par_b, &neg_b);
    if (xa == VKL_NONE || xa != xb || par_a != 1 || par_b != 0 || neg_a != 1 || neg_b != 0) return VKL_NONE;
    /* the parts are [B, H, S, D/2, 1] and the result has x's shape */
    const vkl_shape *xs = &g->tensors[xa].shape;
    if (!vkl_shape_equal(&g->tensors[rot].shape, xs)) return VKL_NONE;
    for (uint32_t k = 0; k < 2; k++) {
        const vkl_shape *ps = &g->tensors[g->nodes[c].inputs[k]].shape;
        vkl_expr half = g->tensors[cat].shape.dims[3];
        if (ps->rank != 5 || ps->dims[0] != xs->dims[0] || ps->dims[1] != xs->dims[1] || ps->dims[2] != xs->dims[2] ||
            ps->dims[3] != half || !is_const(g, ps->dims[4], 1))
            return VKL_NONE;
    }
    return xa;
}

/* cos_b (or sin_b) broadcast against x [B, H, S, R]: the table RoPE reads,
 * [B or 1, S, R] or [S, R]. A [B, 1, S, R] operand is the Unsqueeze of the
 * table when it is one; otherwise *squeeze asks for its dim 1 to be dropped. */
static bool match_table(vkl_graph *g, uint32_t tb, uint32_t x, uint32_t *table, bool *squeeze, vkl_shape *shape) {
    const vkl_shape *ts = &g->tensors[tb].shape, *xs = &g->tensors[x].shape;
    uint32_t r = ts->rank, un, axis;
    if (r < 2 || r > 4 || ts->dims[r - 1] != xs->dims[3] || ts->dims[r - 2] != xs->dims[2]) return false;
    if (r >= 3 && !is_const(g, ts->dims[r - 3], 1)) return false;
    if (r == 4 && ts->dims[0] != xs->dims[0] && !is_const(g, ts->dims[0], 1)) return false;
    *table = tb;
    *squeeze = false;
    *shape = *ts;
    if (r < 4) return true;
    shape->rank = 3;
    shape->dims[1] = ts->dims[2];
    shape->dims[2] = ts->dims[3];
    un = vkl_match_producer(g, tb, VKL_OP_UNSQUEEZE);
    if (un != VKL_NONE && g->nodes[un].inputs[0] != VKL_NONE && vkl_match_one_axis(g, un, 1, 4, &axis) && axis == 1)
        *table = g->nodes[un].inputs[0];
    else
        *squeeze = true;
    return true;
}

/* Squeeze(t, axes=[1]): the [B, 1, S, R] table as [B, S, R]. */
static vkl_status squeeze_dim1(vkl_graph *g, uint32_t t, uint32_t *out) {
    static const int64_t one = 1;
    vkl_shape s = {1, {0}};
    uint32_t in[2] = {t, VKL_NONE};
    vkl_status st = vkl_expr_const(g->syms, 1, &s.dims[0]);
    if (!st) st = vkl_match_new_weight(g, g->tensors[t].name, "axes", VKL_DTYPE_I64, &s, &one, sizeof(one), &in[1]);
    if (!st) st = vkl_match_add_node(g, VKL_OP_SQUEEZE, g->tensors[t].name, "table", in, 2, NULL, 0, out);
    return st;
}

/* The rotated tensor is x = X[..., :R] and the result is concatenated with
 * X[..., R:] (partial rotary): extend the pattern to X and that Concat. */
static bool match_partial(vkl_graph *g, const vkl_uses *u, uint32_t x, uint32_t y, vkl_pattern *p, uint32_t *big_x,
                          uint32_t *out) {
    slice1 rot, pass;
    int64_t r, d;
    uint32_t cat = vkl_match_sole_consumer(g, u, y), axis;
    if (cat == VKL_NONE || g->nodes[cat].op != VKL_OP_CONCAT || g->nodes[cat].n_inputs != 2 ||
        g->nodes[cat].inputs[0] != y || !vkl_match_attr_axis(g, cat, "axis", INT64_MIN, 4, &axis) || axis != 3)
        return false;
    if (!match_slice(g, x, &rot) || !match_slice(g, g->nodes[cat].inputs[1], &pass) || rot.data != pass.data ||
        !dim_const(g, x, 3, &r) || !dim_const(g, rot.data, 3, &d) || r >= d || !is_last_slice(g, &rot, 0, r, 1) ||
        !is_last_slice(g, &pass, r, d, 1))
        return false;
    if (!vkl_pattern_add(p, rot.node) || !vkl_pattern_add(p, pass.node) || !vkl_pattern_add(p, cat)) return false;
    *big_x = rot.data;
    *out = g->nodes[cat].outputs[0];
    return true;
}

typedef struct rope_match {
    vkl_pattern p;
    uint32_t x, cos_b, sin_b, y;
    int64_t interleaved;
} rope_match;

/* Add(Mul(x, cos_b), Mul(rotate(x), sin_b)), operands in either order. */
static bool match_add(vkl_graph *g, uint32_t add, rope_match *m) {
    const vkl_node *n = &g->nodes[add];
    if (n->n_inputs != 2 || n->inputs[0] == VKL_NONE || n->inputs[1] == VKL_NONE) return false;
    for (uint32_t side = 0; side < 2; side++) {
        uint32_t mc = vkl_match_producer(g, n->inputs[side], VKL_OP_MUL);
        uint32_t ms = vkl_match_producer(g, n->inputs[1 - side], VKL_OP_MUL);
        if (mc == VKL_NONE || ms == VKL_NONE || mc == ms || g->nodes[ms].n_inputs != 2 ||
            g->nodes[ms].inputs[0] == VKL_NONE || g->nodes[ms].inputs[1] == VKL_NONE)
            continue;
        for (uint32_t k = 0; k < 2; k++) {
            for (int form = 0; form < 2; form++) {
                m->p.n = 0;
                vkl_pattern_add(&m->p, add);
                vkl_pattern_add(&m->p, mc);
                vkl_pattern_add(&m->p, ms);
                uint32_t rot = g->nodes[ms].inputs[k];
                m->x = form ? match_rotate_pairs(g, rot, &m->p) : match_rotate_half(g, rot, &m->p);
                if (m->x == VKL_NONE) continue;
                m->cos_b = vkl_match_other_input(g, mc, m->x);
                m->sin_b = g->nodes[ms].inputs[1 - k];
                m->interleaved = form;
                m->y = n->outputs[0];
                const vkl_shape *xs = &g->tensors[m->x].shape;
                if (m->cos_b != VKL_NONE && vkl_shape_equal(&g->tensors[m->y].shape, xs) &&
                    vkl_shape_equal(&g->tensors[n->inputs[0]].shape, xs) &&
                    vkl_shape_equal(&g->tensors[n->inputs[1]].shape, xs))
                    return true;
            }
        }
    }
    return false;
}

static vkl_status fuse_one(vkl_graph *g, const vkl_uses *u, uint32_t add, bool *fused) {
    rope_match m;
    uint32_t cos, sin, big_x, out, in[3];
    bool sq_cos, sq_sin;
    vkl_shape cs, ss;
    *fused = false;
    if (g->nodes[add].op != VKL_OP_ADD) return VKL_OK;
    uint32_t y = g->nodes[add].n_outputs == 1 ? g->nodes[add].outputs[0] : VKL_NONE;
    if (y == VKL_NONE || g->tensors[y].shape.rank != 4 || !match_add(g, add, &m)) return VKL_OK;
    if (!match_table(g, m.cos_b, m.x, &cos, &sq_cos, &cs) || !match_table(g, m.sin_b, m.x, &sin, &sq_sin, &ss) ||
        !vkl_shape_equal(&cs, &ss))
        return VKL_OK;
    /* Prefer the whole head (partial rotary); else just the rotated part. */
    vkl_pattern base = m.p;
    big_x = m.x;
    out = m.y;
    if (!match_partial(g, u, m.x, m.y, &m.p, &big_x, &out) || !vkl_match_closed(g, u, m.p.nodes, m.p.n, out)) {
        m.p = base;
        big_x = m.x;
        out = m.y;
        if (!vkl_match_closed(g, u, m.p.nodes, m.p.n, out)) return VKL_OK;
    }
    /* the tables come from outside the pattern (they outlive it) */
    for (uint32_t i = 0; i < m.p.n; i++)
        if (g->tensors[cos].producer == m.p.nodes[i] || g->tensors[sin].producer == m.p.nodes[i]) return VKL_OK;
    vkl_status st = VKL_OK;
    if (sq_cos) st = squeeze_dim1(g, cos, &cos);
    if (!st && sq_sin) st = squeeze_dim1(g, sin, &sin);
    if (st || cos == VKL_NONE || sin == VKL_NONE) return st;
    in[0] = big_x;
    in[1] = cos;
    in[2] = sin;
    vkl_attr attr = {.name = "interleaved", .kind = VKL_ATTR_INT, .i = m.interleaved};
    uint32_t rope;
    st = vkl_match_add_node(g, VKL_OP_ROPE, g->tensors[out].name, "rope", in, 3, &attr, 1, &rope);
    if (!st) st = vkl_match_replace(g, &m.p, out, rope, fused);
    return st;
}

vkl_status vkl_pass_fuse_rope(vkl_graph *g, uint32_t *fused) {
    return vkl_match_each(g, fuse_one, fused);
}
