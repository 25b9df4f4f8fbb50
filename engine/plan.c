/* Greedy planner: walk the schedule; when a tensor is defined, give it a
 * free buffer whose size is provably comparable with its own (growing the
 * buffer to the larger of the two), else a new buffer; free buffers after
 * their tensor's last use. */
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "plan.h"


void vkl_plan_destroy(vkl_plan *p) {
    if (!p) return;
    vkl_context *ctx = p->g->ctx;
    vkl_free(ctx, p->order);
    vkl_free(ctx, p->buffer_of);
    vkl_free(ctx, p->first);
    vkl_free(ctx, p->last);
    vkl_free(ctx, p->buffer_size);
    vkl_free(ctx, p->buffer_state);
    vkl_free(ctx, p->buffer_tensor);
    vkl_free(ctx, p);
}

/* Bytes of tensor t as an expression: elements times the element size, or
 * for a block-quantized tensor (an int8 KV cache) whose last dim is a
 * constant, the other dims times that dim's bytes (vkl_tensor_bytes_shaped
 * of one row). */
static vkl_status tensor_size(const vkl_graph *g, uint32_t t, vkl_expr *bytes) {
    const vkl_tensor *tt = &g->tensors[t];
    size_t es = vkl_dtype_size(tt->dtype), row_bytes;
    uint32_t dims = tt->shape.rank;
    int64_t last;
    if (!es && vkl_dtype_is_quantized(tt->dtype) && dims &&
        vkl_expr_is_const(g->syms, tt->shape.dims[dims - 1], &last) &&
        vkl_tensor_bytes_shaped(tt->dtype, tt->group, last, last, &row_bytes) && row_bytes <= INT64_MAX) {
        es = row_bytes;
        dims--;
    }
    if (!es)
        return vkl_fail(g->ctx, VKL_ERR_UNSUPPORTED, "plan: tensor '%s' (%s, group %u) has no plain dtype and no "
                        "constant whole-block rows", tt->name, vkl_dtype_name(tt->dtype), tt->group);
    vkl_status st = vkl_expr_const(g->syms, (int64_t)es, bytes);
    for (uint32_t d = 0; !st && d < dims; d++) st = vkl_expr_mul(g->syms, *bytes, tt->shape.dims[d], bytes);
    return st;
}

/* Live ranges: inputs and states from step 0, outputs and states to the
 * end; an in-place output extends its input's range (same memory). */
static void live_ranges(vkl_plan *p) {
    const vkl_graph *g = p->g;
    uint32_t end = p->n_order ? p->n_order - 1 : 0;
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        p->first[t] = VKL_NONE;
        p->last[t] = 0;
        const vkl_tensor *tt = &g->tensors[t];
        if (tt->kind == VKL_TENSOR_INPUT || tt->kind == VKL_TENSOR_STATE || (tt->value && tt->producer == VKL_NONE &&
                                                                             tt->kind != VKL_TENSOR_WEIGHT))
            p->first[t] = 0;
        if (tt->kind == VKL_TENSOR_STATE || tt->is_output) p->last[t] = end;
    }
    for (uint32_t s = 0; s < p->n_order; s++) {
        const vkl_node *n = &g->nodes[p->order[s]];
        for (uint32_t k = 0; k < n->n_inputs; k++) {
            uint32_t t = n->inputs[k];
            if (t == VKL_NONE) continue;
            if (p->first[t] == VKL_NONE) p->first[t] = s;
            if (p->last[t] < s) p->last[t] = s;
        }
        for (uint32_t k = 0; k < n->n_outputs; k++) {
            uint32_t t = n->outputs[k];
            if (t == VKL_NONE) continue;
            if (p->first[t] == VKL_NONE || p->first[t] > s) p->first[t] = s;
            if (p->last[t] < s) p->last[t] = s;
        }
    }    /* A node that may only re-view its input (engine/ops/views.c) may be
     * given the input's memory at layout: the input then lives as long as
     * the view. Backwards, so chains of views carry the range to the root. */
    for (uint32_t s = p->n_order; s-- > 0;) {
        uint32_t src = vkl_node_view_input(g->ctx, g, p->order[s], NULL, 0);
        uint32_t out = src == VKL_NONE ? VKL_NONE : g->nodes[p->order[s]].outputs[0];
        if (out != VKL_NONE && p->last[src] < p->last[out]) p->last[src] = p->last[out];
    }
}

static vkl_status add_buffer(vkl_plan *p, uint32_t *cap, vkl_expr size, uint32_t tensor, uint32_t *id) {
    vkl_context *ctx = p->g->ctx;
    if (p->n_buffers == *cap) {
        uint32_t ncap = *cap ? *cap * 2 : 64;
        vkl_expr *s = vkl_realloc_array(ctx, p->buffer_size, ncap, sizeof(vkl_expr));
        if (!s) return VKL_ERR_OUT_OF_MEMORY;
        p->buffer_size = s;
        bool *b = vkl_realloc_array(ctx, p->buffer_state, ncap, sizeof(bool));
        if (!b) return VKL_ERR_OUT_OF_MEMORY;
        p->buffer_state = b;
        uint32_t *t = vkl_realloc_array(ctx, p->buffer_tensor, ncap, sizeof(uint32_t));
        if (!t) return VKL_ERR_OUT_OF_MEMORY;
        p->buffer_tensor = t;
        *cap = ncap;
    }
    p->buffer_size[p->n_buffers] = size;
    p->buffer_state[p->n_buffers] = p->g->tensors[tensor].kind == VKL_TENSOR_STATE;
    p->buffer_tensor[p->n_buffers] = tensor;
    *id = p->n_buffers++;
    return VKL_OK;
}

/* The in-place input whose memory output t takes, or VKL_NONE. */
static uint32_t alias_of(const vkl_graph *g, uint32_t t) {
    uint32_t pr = g->tensors[t].producer;
    if (pr == VKL_NONE || g->nodes[pr].outputs[0] != t) return VKL_NONE;
    return vkl_node_inplace_input(g, pr);
}

typedef struct def_key {
    uint32_t first, t;
} def_key;

static int by_definition(const void *a, const void *b) {
    const def_key *x = a, *y = b;
    if (x->first != y->first) return x->first < y->first ? -1 : 1;
    return x->t < y->t ? -1 : x->t > y->t;
}

/* Memory that must not be handed to another tensor: states persist across
 * runs; outputs are read after the run; shape values are written once at
 * prepare time and read by every replay. */
static bool pinned(const vkl_tensor *t) {
    return t->kind == VKL_TENSOR_STATE || t->is_output || (t->value && t->producer == VKL_NONE);
}

static vkl_status assign(vkl_plan *p, vkl_plan_mode mode) {
    const vkl_graph *g = p->g;
    vkl_context *ctx = g->ctx;
    uint32_t cap = 0;
    /* busy_until[b]: last step buffer b is in use (VKL_NONE: pinned for good). */
    uint32_t *busy_until = vkl_calloc(ctx, g->n_tensors + 1, sizeof(uint32_t));
    def_key *by_first = vkl_calloc(ctx, g->n_tensors + 1, sizeof(def_key));
    if (!busy_until || !by_first) {
        vkl_free(ctx, busy_until);
        vkl_free(ctx, by_first);
        return VKL_ERR_OUT_OF_MEMORY;
    }
    vkl_status st = VKL_OK;
    /* Tensors in order of definition. */
    uint32_t n = 0;
    for (uint32_t t = 0; t < g->n_tensors; t++)
        if (p->first[t] != VKL_NONE && g->tensors[t].kind != VKL_TENSOR_WEIGHT) by_first[n++] = (def_key){p->first[t], t};
    qsort(by_first, n, sizeof(def_key), by_definition);
    for (uint32_t i = 0; !st && i < n; i++) {
        uint32_t t = by_first[i].t;
        const vkl_tensor *tt = &g->tensors[t];
        p->buffer_of[t] = VKL_NONE;
        uint32_t alias = alias_of(g, t);
        if (alias != VKL_NONE && p->buffer_of[alias] != VKL_NONE) {
            uint32_t b = p->buffer_of[alias];
            p->buffer_of[t] = b;
            if (busy_until[b] < p->last[t]) busy_until[b] = p->last[t];
            continue;
        }
        vkl_expr size;
        st = tensor_size(g, t, &size);
        if (st) break;
        bool pin = mode == VKL_PLAN_NO_REUSE || pinned(tt);
        uint32_t pick = VKL_NONE;
        for (uint32_t b = 0; !pin && b < p->n_buffers; b++) {
            if (p->buffer_state[b] || busy_until[b] == VKL_NONE || busy_until[b] >= p->first[t]) continue;
            vkl_sym_order o = vkl_expr_compare(g->syms, p->buffer_size[b], size);
            if (o == VKL_SYM_UNKNOWN) continue;
            if (o == VKL_SYM_EQ) {
                pick = b;
                break;
            }
            if (pick == VKL_NONE) pick = b;
        }
        if (pick == VKL_NONE) {
            st = add_buffer(p, &cap, size, t, &pick);
            if (st) break;
        } else if (vkl_expr_compare(g->syms, p->buffer_size[pick], size) == VKL_SYM_LE ||
                   vkl_expr_compare(g->syms, p->buffer_size[pick], size) == VKL_SYM_LT) {
            p->buffer_size[pick] = size; /* grow: every earlier tenant is provably smaller */
        }
        p->buffer_of[t] = pick;
        /* pinned buffers are never handed out again */
        busy_until[pick] = pin ? VKL_NONE : p->last[t];
    }
    vkl_free(ctx, busy_until);
    vkl_free(ctx, by_first);
    return st;
}

vkl_status vkl_plan_create(const vkl_graph *g, vkl_plan_mode mode, size_t align, vkl_plan **out) {
    *out = NULL;
    vkl_context *ctx = g->ctx;
    vkl_plan *p = vkl_calloc(ctx, 1, sizeof(*p));
    if (!p) return VKL_ERR_OUT_OF_MEMORY;
    p->g = g;
    p->align = align > VKL_ARENA_ALIGN ? align : VKL_ARENA_ALIGN;
    uint32_t nt = g->n_tensors ? g->n_tensors : 1;
    p->order = vkl_calloc(ctx, g->n_nodes ? g->n_nodes : 1, sizeof(uint32_t));
    p->buffer_of = vkl_calloc(ctx, nt, sizeof(uint32_t));
    p->first = vkl_calloc(ctx, nt, sizeof(uint32_t));
    p->last = vkl_calloc(ctx, nt, sizeof(uint32_t));
    vkl_status st = (!p->order || !p->buffer_of || !p->first || !p->last) ? VKL_ERR_OUT_OF_MEMORY : VKL_OK;
    for (uint32_t t = 0; t < g->n_tensors && p->buffer_of; t++) p->buffer_of[t] = VKL_NONE;
    if (!st) st = vkl_graph_topo_order(ctx, g, p->order, &p->n_order);
    if (!st) {
        live_ranges(p);
        st = assign(p, mode);
    }
    if (st) {
        vkl_plan_destroy(p);
        return st;
    }
    *out = p;
    return VKL_OK;
}

/* *out is written on every path: the compiler cannot see that vkl_fail never
 * returns VKL_OK, and callers add the result to running totals. Reports to
 * ctx (vkl_plan_layout's caller's). */
static vkl_status eval_bytes(vkl_context *ctx, const vkl_plan *p, vkl_expr e, const int64_t *values, size_t n,
                             size_t *out) {
    const vkl_graph *g = p->g;
    *out = 0;
    int64_t v;
    vkl_status st = vkl_expr_eval(ctx, g->syms, e, values, n, &v);
    if (st) return st;
    if (v < 0) return vkl_fail(ctx, VKL_ERR_SHAPE, "plan: a buffer size evaluates to %lld", (long long)v);
    *out = vkl_align_up((size_t)v, p->align);
    return VKL_OK;
}

/* Bytes a state buffer keeps for `rows` rows along the sequence (dim 0) of
 * its state, the other dims evaluated under the step's binding. */
vkl_status vkl_state_rows(vkl_context *ctx, const vkl_graph *g, uint32_t t, const int64_t *values, size_t n_values,
                          int64_t *rows, size_t *row_bytes) {
    const vkl_tensor *tt = &g->tensors[t];
    int64_t dims[VKL_MAX_RANK], elements, per = 1;
    size_t bytes;
    if (tt->shape.rank < 1) return vkl_fail(ctx, VKL_ERR_SHAPE, "state '%s' has no sequence dimension", tt->name);
    vkl_status st = vkl_tensor_eval(ctx, g, t, values, n_values, dims, &elements, &bytes);
    if (st) return st;
    for (uint32_t d = 1; d < tt->shape.rank; d++) per *= dims[d];
    if (!vkl_tensor_bytes(tt->dtype, tt->group, per, row_bytes))
        return vkl_fail(ctx, VKL_ERR_OVERFLOW, "state '%s': a row's size overflows", tt->name);
    *rows = dims[0];
    return VKL_OK;
}

/* Bytes a state buffer keeps for lb->state_rows rows along the sequence of
 * its state, the other dims evaluated under the step's binding. */
static vkl_status state_bytes(vkl_context *ctx, const vkl_plan *p, uint32_t b, const vkl_layout_binding *lb,
                              size_t *out) {
    const vkl_tensor *tt = &p->g->tensors[p->buffer_tensor[b]];
    int64_t rows;
    size_t row, bytes;
    *out = 0;
    vkl_status st = vkl_state_rows(ctx, p->g, p->buffer_tensor[b], lb->values, lb->n_values, &rows, &row);
    if (st) return st;
    if (rows > lb->state_rows)
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "state '%s' needs %lld rows; %lld are kept", tt->name,
                        (long long)rows, (long long)lb->state_rows);
    if (!vkl_mul_size(row, (size_t)lb->state_rows, &bytes))
        return vkl_fail(ctx, VKL_ERR_OVERFLOW, "plan: state '%s' of %lld rows overflows", tt->name,
                        (long long)lb->state_rows);
    *out = vkl_align_up(bytes, p->align);
    return VKL_OK;
}

vkl_status vkl_plan_layout(vkl_context *ctx, const vkl_plan *p, const vkl_layout_binding *lb, size_t *offsets,
                           size_t *total, size_t *states_end) {
    const vkl_graph *g = p->g;
    size_t *buf_off = vkl_calloc(ctx, p->n_buffers ? p->n_buffers : 1, sizeof(size_t));
    if (!buf_off) return VKL_ERR_OUT_OF_MEMORY;
    size_t end = 0;
    vkl_status st = VKL_OK;
    for (int pass = 0; pass < 2 && !st; pass++) {
        if (pass == 1 && states_end) *states_end = end;
        for (uint32_t b = 0; b < p->n_buffers && !st; b++) {
            if (p->buffer_state[b] != (pass == 0)) continue;
            size_t bytes;
            if (pass == 0 && lb->state_rows > 0) st = state_bytes(ctx, p, b, lb, &bytes);
            else
                st = eval_bytes(ctx, p, p->buffer_size[b], pass == 0 && lb->state_values ? lb->state_values : lb->values,
                                lb->n_values, &bytes);
            if (st) break;
            buf_off[b] = end;
            if (!vkl_add_size(end, bytes, &end)) st = vkl_fail(ctx, VKL_ERR_OVERFLOW, "plan: arena size overflows");
        }
    }
    for (uint32_t t = 0; !st && t < g->n_tensors; t++)
        offsets[t] = p->buffer_of[t] == VKL_NONE ? SIZE_MAX : buf_off[p->buffer_of[t]];
    /* Views under this binding share their input's bytes (schedule order:
     * a view of a view takes the root's offset). */
    for (uint32_t k = 0; !st && k < p->n_order; k++) {
        uint32_t src = vkl_node_view_input(ctx, g, p->order[k], lb->values, lb->n_values);
        uint32_t out = src == VKL_NONE ? VKL_NONE : g->nodes[p->order[k]].outputs[0];
        if (out != VKL_NONE && offsets[src] != SIZE_MAX && offsets[out] != SIZE_MAX) offsets[out] = offsets[src];
    }
    *total = end;
    vkl_free(ctx, buf_off);
    return st;
}

vkl_status vkl_plan_no_reuse_bytes(const vkl_plan *p, const int64_t *values, size_t n_values, size_t *total) {
    const vkl_graph *g = p->g;
    size_t sum = 0;
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        if (p->buffer_of[t] == VKL_NONE || alias_of(g, t) != VKL_NONE) continue;
        vkl_expr e;
        size_t bytes = 0;
        vkl_status st = tensor_size(g, t, &e);
        if (!st) st = eval_bytes(g->ctx, p, e, values, n_values, &bytes);
        if (st) return st;
        if (!vkl_add_size(sum, bytes, &sum)) return vkl_fail(g->ctx, VKL_ERR_OVERFLOW, "plan: size overflows");
    }
    *total = sum;
    return VKL_OK;
}

/* The tensor whose bytes t shares through a chain of views (t itself if none). */
static uint32_t view_root(const vkl_graph *g, uint32_t t, const int64_t *values, size_t n_values) {
    for (;;) {
        uint32_t pr = g->tensors[t].producer;
        uint32_t src = pr == VKL_NONE || g->nodes[pr].outputs[0] != t ? VKL_NONE
                                                                       : vkl_node_view_input(g->ctx, g, pr, values, n_values);
        if (src == VKL_NONE) return t;
        t = src;
    }
}

vkl_status vkl_plan_verify(const vkl_plan *p, const int64_t *values, size_t n_values) {
    const vkl_graph *g = p->g;
    vkl_context *ctx = g->ctx;
    size_t *off = vkl_calloc(ctx, g->n_tensors ? g->n_tensors : 1, sizeof(size_t));
    size_t *len = vkl_calloc(ctx, g->n_tensors ? g->n_tensors : 1, sizeof(size_t));
    size_t total;
    vkl_layout_binding lb = {values, n_values, NULL, 0};
    vkl_status st = (!off || !len) ? VKL_ERR_OUT_OF_MEMORY : vkl_plan_layout(ctx, p, &lb, off, &total, NULL);
    for (uint32_t t = 0; !st && t < g->n_tensors; t++) {
        if (p->buffer_of[t] == VKL_NONE) continue;
        vkl_expr e;
        int64_t v;
        st = tensor_size(g, t, &e);
        if (!st) st = vkl_expr_eval(ctx, g->syms, e, values, n_values, &v);
        if (st) break;
        len[t] = (size_t)v;
        size_t cap;
        st = eval_bytes(ctx, p, p->buffer_size[p->buffer_of[t]], values, n_values, &cap);
        if (!st && len[t] > cap)
            st = vkl_fail(ctx, VKL_ERR_INTERNAL, "plan: tensor '%s' (%zu bytes) exceeds its buffer (%zu)",
                          g->tensors[t].name, len[t], cap);
        if (!st && off[t] + len[t] > total)
            st = vkl_fail(ctx, VKL_ERR_INTERNAL, "plan: tensor '%s' ends past the arena", g->tensors[t].name);
    }
    for (uint32_t a = 0; !st && a < g->n_tensors; a++) {
        if (p->buffer_of[a] == VKL_NONE || !len[a]) continue;
        for (uint32_t b = a + 1; !st && b < g->n_tensors; b++) {
            if (p->buffer_of[b] == VKL_NONE || !len[b]) continue;
            if (alias_of(g, a) == b || alias_of(g, b) == a) continue; /* in place by design */
            if (view_root(g, a, values, n_values) == view_root(g, b, values, n_values)) continue; /* views */
            bool live = p->first[a] <= p->last[b] && p->first[b] <= p->last[a];
            bool bytes = off[a] < off[b] + len[b] && off[b] < off[a] + len[a];
            if (live && bytes)
                st = vkl_fail(ctx, VKL_ERR_INTERNAL, "plan: '%s' and '%s' are live together and share bytes",
                              g->tensors[a].name, g->tensors[b].name);
        }
    }
    vkl_free(ctx, off);
    vkl_free(ctx, len);
    return st;
}
