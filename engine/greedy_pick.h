/* The greedy-pick graph of a causal LM: the model's graph with the greedy
 * token chosen after the logits, in the same execute, so that a decode step
 * of a greedy session reads back a few bytes instead of a vocabulary of
 * logits. docs/runtime.md, "Greedy sampling on the device". */
#ifndef VKL_GREEDY_PICK_H
#define VKL_GREEDY_PICK_H

#include "graph.h"

/* From g (logits, output `logits_output`, shaped [batch, seq, vocab]): *out
 * is a graph derived from g (vkl_graph_derive) with two more nodes and
 * outputs on the logits, whose bytes stay where the plan puts them:
 *   index = ArgMax(logits, axis 2, keepdims): i64 [batch, seq, 1], the
 *           first index of the largest value, NaN counting as largest
 *           (the ref kernel's order, every backend's);
 *   value = GatherElements(logits, index, axis 2): the logit there.
 * So value is NaN exactly when a NaN is in the row, -inf exactly when every
 * logit is -inf, and otherwise index is the host greedy sampler's token
 * (engine/sampler.h: lowest index on ties, +inf wins). *index_output and
 * *value_output: their output positions. Where the logits output is not
 * [batch, seq, vocab], *out is NULL. Reports through g's context. */
vkl_status vkl_greedy_pick_graph(const vkl_graph *g, uint32_t logits_output, vkl_graph **out, uint32_t *index_output,
                                 uint32_t *value_output);

#endif
