/* vkl_greedy_pick_graph: the model's graph with its greedy token picked
 * after the logits (greedy_pick.h). */
#include <string.h>

#include "greedy_pick.h"
#include "ops.h"

/* Logits are [batch, seq, vocab]: the vocabulary along axis 2. */
#define VOCAB_AXIS 2

static vkl_status add_node(vkl_graph *d, uint32_t op, const char *name, const uint32_t *in, uint32_t n_in,
                           const vkl_attr *attrs, uint32_t n_attrs, uint32_t *out) {
    uint32_t node;
    vkl_status st = vkl_graph_add_tensor(d, name, VKL_DTYPE_INVALID, VKL_TENSOR_ACTIVATION, NULL, out);
    if (!st) st = vkl_graph_add_node(d, op, name, in, n_in, out, 1, attrs, n_attrs, &node);
    if (!st) st = vkl_op_info_get((vkl_op)op)->infer(d, node);
    if (!st) st = vkl_graph_add_output(d, *out);
    return st;
}

static vkl_status pick(vkl_graph *d, uint32_t logits) {
    const vkl_attr argmax_attrs[2] = {{.name = "axis", .kind = VKL_ATTR_INT, .i = VOCAB_AXIS},
                                      {.name = "keepdims", .kind = VKL_ATTR_INT, .i = 1}};
    const vkl_attr gather_axis = {.name = "axis", .kind = VKL_ATTR_INT, .i = VOCAB_AXIS};
    uint32_t index, value;
    vkl_status st = add_node(d, VKL_OP_ARG_MAX, "greedy_pick.index", &logits, 1, argmax_attrs, 2, &index);
    const uint32_t in[2] = {logits, index};
    if (!st) st = add_node(d, VKL_OP_GATHER_ELEMENTS, "greedy_pick.value", in, 2, &gather_axis, 1, &value);
    if (!st) st = vkl_graph_validate(d);
    return st;
}

vkl_status vkl_greedy_pick_graph(const vkl_graph *g, uint32_t logits_output, vkl_graph **out, uint32_t *index_output,
                                 uint32_t *value_output) {
    *out = NULL;
    *index_output = *value_output = VKL_NONE;
    if (logits_output >= g->n_outputs || g->tensors[g->outputs[logits_output]].shape.rank != 3) return VKL_OK;
    vkl_graph *d = NULL;
    vkl_status st = vkl_graph_derive(g, &d);
    if (!st) st = pick(d, g->outputs[logits_output]);
    if (st) {
        vkl_fail_prefix(g->ctx, st, "the greedy-pick graph");
        vkl_graph_destroy(d);
        return st;
    }
    *out = d;
    *index_output = d->n_outputs - 2;
    *value_output = d->n_outputs - 1;
    return VKL_OK;
}
