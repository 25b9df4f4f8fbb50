/* vkl_logits_row_graph: find the lm_head by structure and derive the graph
 * that runs it on one row (logits_row.h). */
#include <stdio.h>
#include <string.h>

#include "logits_row.h"
#include "ops.h"

/* Logits are [batch, seq, vocab]: rows run along axis 1. */
#define ROW_AXIS 1

/* Absent, or the same for every row: a weight. */
static bool fixed(const vkl_graph *g, uint32_t t) { return t == VKL_NONE || g->tensors[t].kind == VKL_TENSOR_WEIGHT; }

/* A weight that, broadcast against a rank-3 row carrier, has no extent
 * along the row axis (a bias [V], a scale [1, 1, H], a scalar). */
static bool rowless(const vkl_graph *g, uint32_t t) {
    const vkl_tensor *c = &g->tensors[t];
    if (c->shape.rank > 3) return false;
    uint32_t lead = 3 - c->shape.rank; /* c's dim d lines up with the carrier's dim lead + d */
    int64_t v;
    return ROW_AXIS < lead || (vkl_expr_is_const(g->syms, c->shape.dims[ROW_AXIS - lead], &v) && v == 1);
}

/* A norm or softmax whose axis attribute leaves the row axis alone. */
static bool last_axes_only(const vkl_graph *g, uint32_t node, uint32_t rank) {
    int64_t axis;
    if (vkl_op_attr_int(g, node, "axis", &axis)) return false;
    if (axis < 0) axis += rank;
    return axis > ROW_AXIS && axis < (int64_t)rank;
}

/* The input whose row i alone (with weights) makes the node's output row i,
 * or VKL_NONE when the node is not such a row-wise op. *matmul: it is a
 * matrix product by a weight. */
static uint32_t row_input(const vkl_graph *g, uint32_t node, bool *matmul) {
    const vkl_node *n = &g->nodes[node];
    *matmul = false;
    for (uint32_t k = 1; k < n->n_outputs; k++) /* LayerNormalization's mean and inverse deviation unused */
        if (n->outputs[k] != VKL_NONE && vkl_graph_use_count(g, n->outputs[k])) return VKL_NONE;
    if (!n->n_inputs || n->inputs[0] == VKL_NONE) return VKL_NONE;
    const uint32_t rank = g->tensors[n->inputs[0]].shape.rank;
    uint32_t carrier = 0;
    switch ((vkl_op)n->op) {
    case VKL_OP_SQRT: case VKL_OP_RECIPROCAL: case VKL_OP_NEG: case VKL_OP_ABS: case VKL_OP_EXP: case VKL_OP_LOG:
    case VKL_OP_COS: case VKL_OP_SIN: case VKL_OP_ERF: case VKL_OP_TANH: case VKL_OP_SIGMOID: case VKL_OP_RELU:
    case VKL_OP_GELU: case VKL_OP_NOT: case VKL_OP_CLIP: case VKL_OP_CAST: case VKL_OP_IDENTITY:
        break;
    case VKL_OP_RMS_NORM: case VKL_OP_LAYER_NORMALIZATION: case VKL_OP_SOFTMAX: case VKL_OP_LOG_SOFTMAX:
        if (!last_axes_only(g, node, rank)) return VKL_NONE;
        break;
    case VKL_OP_MAT_MUL:
        if (n->n_inputs != 2 || !fixed(g, n->inputs[1]) || g->tensors[n->inputs[1]].shape.rank != 2) return VKL_NONE;
        *matmul = true;
        break;
    case VKL_OP_QUANT_MAT_MUL:
        *matmul = true;
        break;
    case VKL_OP_ADD: case VKL_OP_SUB: case VKL_OP_MUL: case VKL_OP_DIV: case VKL_OP_POW: case VKL_OP_MAX:
    case VKL_OP_MIN:
        /* one operand carries the rows; every other is a weight without rows */
        carrier = VKL_NONE;
        for (uint32_t k = 0; k < n->n_inputs; k++) {
            if (fixed(g, n->inputs[k])) {
                if (n->inputs[k] != VKL_NONE && !rowless(g, n->inputs[k])) return VKL_NONE;
            } else if (carrier == VKL_NONE) {
                carrier = k;
            } else {
                return VKL_NONE;
            }
        }
        return carrier == VKL_NONE ? VKL_NONE : n->inputs[carrier];
    default:
        return VKL_NONE;
    }
    for (uint32_t k = 1; k < n->n_inputs; k++)
        if (!fixed(g, n->inputs[k])) return VKL_NONE;
    return n->inputs[carrier];
}

/* Rank 3 with the logits' row count along the row axis. */
static bool rows_like_logits(const vkl_graph *g, uint32_t t, vkl_expr rows) {
    const vkl_shape *s = &g->tensors[t].shape;
    return s->rank == 3 && vkl_expr_compare(g->syms, s->dims[ROW_AXIS], rows) == VKL_SYM_EQ;
}

/* The walk: chain[0] makes the logits, chain[count - 1] reads the tensor to
 * narrow (*narrow) as its input *slot. False, with the reason in `why`, when
 * no lm_head is on it. */
static bool walk(const vkl_graph *g, uint32_t logits, uint32_t *chain, uint32_t *count, uint32_t *narrow,
                 uint32_t *slot, char *why, size_t cap) {
    const vkl_expr rows = g->tensors[logits].shape.dims[ROW_AXIS];
    bool lm_head = false;
    *count = 0;
    if (vkl_graph_use_count(g, logits) != 1) {
        snprintf(why, cap, "other nodes read the logits");
        return false;
    }
    for (uint32_t cur = logits;;) {
        uint32_t p = g->tensors[cur].producer;
        bool matmul;
        uint32_t in = p == VKL_NONE ? VKL_NONE : row_input(g, p, &matmul);
        if (in == VKL_NONE || !rows_like_logits(g, in, rows) || !rows_like_logits(g, cur, rows)) break;
        chain[(*count)++] = p;
        lm_head = lm_head || matmul;
        *narrow = in;
        const vkl_node *n = &g->nodes[p];
        for (uint32_t k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] == in) *slot = k;
        /* narrowing further back would change what other readers of `in` see */
        const vkl_tensor *it = &g->tensors[in];
        if (it->kind != VKL_TENSOR_ACTIVATION || it->producer == VKL_NONE || vkl_graph_use_count(g, in) != 1) break;
        cur = in;
    }
    if (!lm_head)
        snprintf(why, cap, "no matrix product by a weight reaches them through row-wise ops (%u such ops)", *count);
    return lm_head;
}

static vkl_status infer(vkl_graph *g, uint32_t node) {
    vkl_status st = vkl_op_info_get((vkl_op)g->nodes[node].op)->infer(g, node);
    if (st) {
        char buf[160];
        vkl_fail_prefix(g->ctx, st, "%s at one row", vkl_node_str(g, node, buf, sizeof(buf)));
    }
    return st;
}

/* In d (derived from the walked graph): Gather row `logits_row` of `narrow`,
 * feed it to the last walked op, and re-infer the walked ops at one row. */
static vkl_status narrow_graph(vkl_graph *d, uint32_t logits, const uint32_t *chain, uint32_t count, uint32_t narrow,
                               uint32_t slot) {
    vkl_shape one = {.rank = 1};
    vkl_status st = vkl_expr_const(d->syms, 1, &one.dims[0]);
    uint32_t row = VKL_NONE, picked = VKL_NONE, gather = VKL_NONE;
    if (!st) st = vkl_graph_add_tensor(d, VKL_LOGITS_ROW_INPUT, VKL_DTYPE_I64, VKL_TENSOR_INPUT, &one, &row);
    if (!st) st = vkl_graph_add_input(d, row);
    char name[256];
    snprintf(name, sizeof(name), "%s.logits_row", d->tensors[narrow].name);
    if (!st) st = vkl_graph_add_tensor(d, name, VKL_DTYPE_INVALID, VKL_TENSOR_ACTIVATION, NULL, &picked);
    const vkl_attr axis = {.name = "axis", .kind = VKL_ATTR_INT, .i = ROW_AXIS};
    const uint32_t in[2] = {narrow, row};
    if (!st) st = vkl_graph_add_node(d, VKL_OP_GATHER, "logits_row/Gather", in, 2, &picked, 1, &axis, 1, &gather);
    if (st) return st;
    d->nodes[chain[count - 1]].inputs[slot] = picked;
    st = infer(d, gather);
    for (uint32_t i = count; !st && i-- > 0;) st = infer(d, chain[i]);
    int64_t rows;
    if (!st && !(vkl_expr_is_const(d->syms, d->tensors[logits].shape.dims[ROW_AXIS], &rows) && rows == 1))
        st = vkl_fail(d->ctx, VKL_ERR_SHAPE, "the logits of the one-row graph do not have one row");
    if (!st) st = vkl_graph_validate(d);
    return st;
}

vkl_status vkl_logits_row_graph(const vkl_graph *g, uint32_t logits_output, vkl_graph **out, uint32_t *row_input) {
    *out = NULL;
    *row_input = VKL_NONE;
    vkl_context *ctx = g->ctx;
    if (logits_output >= g->n_outputs || g->tensors[g->outputs[logits_output]].shape.rank != 3) {
        vkl_log(ctx, VKL_LOG_DEBUG, "logits_row: no [batch, seq, vocab] logits output; every step computes all rows");
        return VKL_OK;
    }
    const uint32_t logits = g->outputs[logits_output];
    uint32_t *chain = vkl_calloc(ctx, g->n_nodes ? g->n_nodes : 1, sizeof(uint32_t));
    if (!chain) return VKL_ERR_OUT_OF_MEMORY;
    uint32_t count, narrow = VKL_NONE, slot = 0;
    char why[160];
    vkl_status st = VKL_OK;
    if (!walk(g, logits, chain, &count, &narrow, &slot, why, sizeof(why))) {
        vkl_log(ctx, VKL_LOG_DEBUG, "logits_row: no lm_head found for '%s': %s; every step computes all rows",
                g->tensors[logits].name, why);
    } else {
        vkl_graph *d = NULL;
        st = vkl_graph_derive(g, &d);
        if (!st) st = narrow_graph(d, logits, chain, count, narrow, slot);
        if (!st) {
            vkl_log(ctx, VKL_LOG_DEBUG, "logits_row: '%s' narrowed to one row before %u row-wise ops, the lm_head "
                    "among them", g->tensors[narrow].name, count);
            *out = d;
            *row_input = d->n_inputs - 1;
        } else {
            if (st != VKL_ERR_OUT_OF_MEMORY) {
                vkl_log(ctx, VKL_LOG_DEBUG, "logits_row: deriving the one-row graph failed (%s); every step computes "
                        "all rows", vkl_context_error(ctx));
                st = VKL_OK;
            }
            vkl_graph_destroy(d);
        }
    }
    vkl_free(ctx, chain);
    return st;
}
