/* Shape rule and table entry of Slice. With concrete dims and bounds it is
 * ONNX's clamping arithmetic; with symbolic ones each bound is classified
 * (from the start, from the end, +-infinity) so the common export patterns
 * ([0 : seq], [-1 :], [:: -1]) give clean min/max expressions. */
#include <stdio.h>

#include "movement_util.h"
#include "op_defs.h"

/* A bound as an index on the axis before clamping. Constants at or beyond
 * +-INT32_MAX mean "past the end" / "before the start" (exporters write
 * INT64_MAX, INT32_MAX, INT64_MIN for open ends). */
typedef enum { B_START, B_END, B_POS_INF, B_NEG_INF, B_CLAMPED } bound_kind;
typedef struct bound {
    bound_kind kind;
    vkl_expr v; /* B_START: index v >= 0; B_END: index d - v with v > 0; B_CLAMPED: v, already in [0, d] */
} bound;

#define OPEN_END ((int64_t)INT32_MAX)

/* A symbolic bound that is not provably negative is taken as an index from
 * the start, and one provably <= 0 as counting from the end (it comes from
 * shape arithmetic: past_len, -seq); the kernel checks the outcome. */
static vkl_status classify(vkl_graph *g, vkl_expr d, vkl_expr x, bound *b) {
    int64_t c, cd;
    if (!vkl_expr_is_const(g->syms, x, &c)) {
        vkl_expr zero;
        vkl_status st = vkl_mv_const(g, 0, &zero);
        vkl_sym_order o = vkl_expr_compare(g->syms, x, zero);
        if (st || (o != VKL_SYM_LT && o != VKL_SYM_LE)) {
            *b = (bound){B_START, x};
            return st;
        }
        b->kind = B_END;
        return vkl_expr_sub(g->syms, zero, x, &b->v);
    }
    if (vkl_expr_is_const(g->syms, d, &cd)) {
        /* concrete axis: resolve a constant bound now */
        if (c < 0) c += cd;
        b->kind = c < 0 ? B_NEG_INF : c >= cd ? B_POS_INF : B_START;
        return vkl_mv_const(g, c, &b->v);
    }
    if (c >= OPEN_END || c <= -OPEN_END) {
        b->kind = c > 0 ? B_POS_INF : B_NEG_INF;
        return VKL_OK;
    }
    b->kind = c >= 0 ? B_START : B_END;
    return vkl_mv_const(g, c >= 0 ? c : -c, &b->v);
}

/* For step < 0: the bound on the reversed axis (index i -> d - 1 - i), so the
 * count is that of a forward slice. ONNX clamps a backward start into
 * [0, d-1]; reversed, a start counting c from the end becomes
 * max(min(c - 1, d - 1), 0) (c = 1: just 0). */
static vkl_status mirror(vkl_graph *g, vkl_expr d, bool is_start, bound *b) {
    vkl_expr one, zero, t, u;
    int64_t c;
    vkl_status st = vkl_mv_const(g, 1, &one);
    if (!st) st = vkl_mv_const(g, 0, &zero);
    if (st) return st;
    switch (b->kind) {
    case B_POS_INF: b->kind = B_NEG_INF; return VKL_OK;
    case B_NEG_INF:
        b->kind = is_start ? B_END : B_POS_INF;
        b->v = one;
        return VKL_OK;
    case B_START:
        b->kind = B_END;
        return vkl_expr_add(g->syms, b->v, one, &b->v);
    case B_END:
        if (is_start && !(vkl_expr_is_const(g->syms, b->v, &c) && c == 1)) {
            b->kind = B_CLAMPED;
            st = vkl_expr_sub(g->syms, b->v, one, &t);
            if (!st) st = vkl_expr_sub(g->syms, d, one, &u);
            if (!st) st = vkl_expr_min(g->syms, t, u, &t);
            return st ? st : vkl_expr_max(g->syms, t, zero, &b->v);
        }
        b->kind = B_START;
        return vkl_expr_sub(g->syms, b->v, one, &b->v);
    case B_CLAMPED: break;
    }
    return VKL_OK;
}

/* The bound clamped into [0, d] (forward slicing). */
static vkl_status clamped(vkl_graph *g, vkl_expr d, const bound *b, vkl_expr *out) {
    vkl_expr zero, t;
    vkl_status st = vkl_mv_const(g, 0, &zero);
    if (st) return st;
    switch (b->kind) {
    case B_START: return vkl_expr_min(g->syms, b->v, d, out);
    case B_CLAMPED: *out = b->v; return VKL_OK;
    case B_POS_INF: *out = d; return VKL_OK;
    case B_NEG_INF: *out = zero; return VKL_OK;
    case B_END:
        st = vkl_expr_sub(g->syms, d, b->v, &t);
        return st ? st : vkl_expr_max(g->syms, t, zero, out);
    }
    return VKL_OK;
}

static bool is_zero(const vkl_graph *g, const bound *b) {
    int64_t c;
    return b->kind == B_NEG_INF || (b->kind == B_START && vkl_expr_is_const(g->syms, b->v, &c) && c == 0);
}

/* Forward length for step 1, by the patterns that have a clean form. */
static vkl_status forward_len(vkl_graph *g, vkl_expr d, const bound *s, const bound *e, vkl_expr *len) {
    vkl_expr zero, S, E, t;
    vkl_status st = vkl_mv_const(g, 0, &zero);
    if (st) return st;
    if (e->kind == B_NEG_INF || s->kind == B_POS_INF) {
        *len = zero;
        return VKL_OK;
    }
    if (is_zero(g, s)) return clamped(g, d, e, len);
    if (e->kind == B_POS_INF && s->kind == B_END) return vkl_expr_min(g->syms, s->v, d, len); /* [-c :] */
    if (e->kind == B_POS_INF) {                                                               /* [v :] */
        st = vkl_expr_sub(g->syms, d, s->v, &t);
        return st ? st : vkl_expr_max(g->syms, t, zero, len);
    }
    if (s->kind == B_START && e->kind == B_END) { /* [v : -c] = max(d - v - c, 0) */
        st = vkl_expr_sub(g->syms, d, s->v, &t);
        if (!st) st = vkl_expr_sub(g->syms, t, e->v, &t);
        return st ? st : vkl_expr_max(g->syms, t, zero, len);
    }
    if (s->kind == B_START && e->kind == B_START) { /* [v : w], v <= w: min(max(d - v, 0), w - v) */
        vkl_sym_order o = vkl_expr_compare(g->syms, s->v, e->v);
        if (o == VKL_SYM_LE || o == VKL_SYM_LT || o == VKL_SYM_EQ) {
            vkl_expr room, want;
            st = vkl_expr_sub(g->syms, d, s->v, &room);
            if (!st) st = vkl_expr_max(g->syms, room, zero, &room);
            if (!st) st = vkl_expr_sub(g->syms, e->v, s->v, &want);
            return st ? st : vkl_expr_min(g->syms, room, want, len);
        }
    }
    if (s->kind == B_END && e->kind == B_END) { /* [-c1 : -c2] = min(max(d - c2, 0), c1 - c2) */
        vkl_sym_order o = vkl_expr_compare(g->syms, s->v, e->v);
        if (o == VKL_SYM_LE || o == VKL_SYM_LT || o == VKL_SYM_EQ) {
            *len = zero;
            return VKL_OK;
        }
        if (o == VKL_SYM_GE || o == VKL_SYM_GT) {
            vkl_expr span;
            st = clamped(g, d, e, &E);
            if (!st) st = vkl_expr_sub(g->syms, s->v, e->v, &span);
            return st ? st : vkl_expr_min(g->syms, E, span, len);
        }
    }
    st = clamped(g, d, s, &S);
    if (!st) st = clamped(g, d, e, &E);
    if (!st) st = vkl_expr_sub(g->syms, E, S, &t);
    return st ? st : vkl_expr_max(g->syms, t, zero, len);
}

/* Output length of one sliced axis of size d. */
static vkl_status slice_len(vkl_graph *g, vkl_expr d, vkl_expr start, vkl_expr end, int64_t step, vkl_expr *len) {
    int64_t cd, cs, ce, first, n;
    if (vkl_expr_is_const(g->syms, d, &cd) && vkl_expr_is_const(g->syms, start, &cs) &&
        vkl_expr_is_const(g->syms, end, &ce)) {
        vkl_mv_slice_range(cd, cs, ce, step, &first, &n);
        return vkl_mv_const(g, n, len);
    }
    bound s, e;
    vkl_status st = classify(g, d, start, &s);
    if (!st) st = classify(g, d, end, &e);
    if (!st && step < 0) st = mirror(g, d, true, &s);
    if (!st && step < 0) st = mirror(g, d, false, &e);
    if (!st) st = forward_len(g, d, &s, &e, len);
    int64_t a = step < 0 ? -step : step;
    if (st || a == 1) return st;
    /* ceil(len / a), len >= 0 */
    vkl_expr bias;
    st = vkl_mv_const(g, a - 1, &bias);
    if (!st) st = vkl_expr_add(g->syms, *len, bias, &bias);
    return st ? st : vkl_expr_floordiv(g->syms, bias, a, len);
}

typedef struct slice_params {
    uint32_t n;                         /* sliced axes */
    uint32_t axes[VKL_MAX_VALUE_ELEMS];
    vkl_expr starts[VKL_MAX_VALUE_ELEMS], ends[VKL_MAX_VALUE_ELEMS];
    int64_t steps[VKL_MAX_VALUE_ELEMS];
} slice_params;

static vkl_status slice_read(vkl_graph *g, uint32_t node, uint32_t rank, slice_params *p) {
    static const char *const names[] = {"", "starts", "ends", "axes", "steps"};
    int64_t ints[VKL_MAX_VALUE_ELEMS];
    uint32_t n, cnt, mask;
    vkl_status st = VKL_OK;
    for (uint32_t k = 1; k <= 4 && !st; k++)
        if (k < 3 || vkl_node_in(g, node, k)) st = vkl_mv_check_int_input(g, node, k, names[k], 1);
    if (!st) st = vkl_mv_input_value(g, node, 1, "starts", p->starts, VKL_MAX_VALUE_ELEMS, &n);
    if (!st) st = vkl_mv_input_value(g, node, 2, "ends", p->ends, VKL_MAX_VALUE_ELEMS, &cnt);
    if (st) return st;
    if (cnt != n) return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Slice: %u starts but %u ends", n, cnt);
    p->n = n;
    for (uint32_t i = 0; i < n; i++) ints[i] = i, p->steps[i] = 1;
    if (vkl_node_in(g, node, 3) && (st = vkl_mv_input_ints(g, node, 3, "axes", ints, VKL_MAX_VALUE_ELEMS, &cnt))) return st;
    if (vkl_node_in(g, node, 3) && cnt != n)
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Slice: %u axes for %u starts", cnt, n);
    if ((st = vkl_mv_axes(g, node, "axes", ints, n, rank, p->axes, &mask))) return st;
    if (vkl_node_in(g, node, 4) && (st = vkl_mv_input_ints(g, node, 4, "steps", p->steps, VKL_MAX_VALUE_ELEMS, &cnt)))
        return st;
    if (vkl_node_in(g, node, 4) && cnt != n)
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Slice: %u steps for %u starts", cnt, n);
    for (uint32_t i = 0; i < n; i++)
        if (p->steps[i] == 0) return vkl_fail(g->ctx, VKL_ERR_SHAPE, "Slice: steps[%u] is 0", i);
    return VKL_OK;
}

/* Value of a sliced small integer tensor with constant bounds: a strided view. */
static vkl_status slice_value(vkl_graph *g, uint32_t node, const vkl_tensor *in, const slice_params *p) {
    vkl_expr v[VKL_MAX_VALUE_ELEMS], o[VKL_MAX_VALUE_ELEMS];
    int64_t dims[VKL_MAX_RANK], strides[VKL_MAX_RANK], vstrides[VKL_MAX_RANK], offset = 0, total = 1;
    uint32_t cnt;
    if (!vkl_mv_known_value(g, in, v, &cnt, dims)) return VKL_OK;
    vkl_mv_strides(dims, in->shape.rank, strides);
    for (uint32_t d = 0; d < in->shape.rank; d++) vstrides[d] = strides[d];
    for (uint32_t i = 0; i < p->n; i++) {
        int64_t s, e, first, a = p->axes[i];
        if (!vkl_expr_is_const(g->syms, p->starts[i], &s) || !vkl_expr_is_const(g->syms, p->ends[i], &e)) return VKL_OK;
        vkl_mv_slice_range(dims[a], s, e, p->steps[i], &first, &dims[a]);
        offset += first * strides[a];
        vstrides[a] = strides[a] * p->steps[i];
    }
    for (uint32_t d = 0; d < in->shape.rank; d++) total *= dims[d];
    vkl_mv_view(v, offset, in->shape.rank, dims, vstrides, o);
    return vkl_mv_set_value(g, node, 0, o, (uint32_t)total);
}

static vkl_status slice_infer(vkl_graph *g, uint32_t node) {
    const vkl_tensor *in;
    slice_params p;
    vkl_status st = vkl_node_require(g, node, 0, &in);
    if (!st) st = slice_read(g, node, in->shape.rank, &p);
    if (st) return st;
    vkl_shape out = in->shape;
    for (uint32_t i = 0; i < p.n; i++) {
        uint32_t a = p.axes[i];
        if ((st = slice_len(g, in->shape.dims[a], p.starts[i], p.ends[i], p.steps[i], &out.dims[a])))
            return vkl_fail_prefix(g->ctx, st, "Slice: axis %u", a);
    }
    if ((st = vkl_node_set_out(g, node, 0, in->dtype, &out))) return st;
    return slice_value(g, node, in, &p);
}

const vkl_op_info vkl_op_info_slice = {"Slice", "", 3, 5, 1, 1, false, -1, NULL, 0, slice_infer};
