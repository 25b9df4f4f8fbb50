/* The one-row graph of a causal LM: the model's graph with the lm_head (and
 * the row-wise ops around it) run on one row of the hidden state instead of
 * every row. A prompt that keeps only its last token's logits runs it: for
 * a Llama-3.2-1B the lm_head is a fifth of a prefill's FLOPs.
 * docs/runtime.md, "The last row's logits". */
#ifndef VKL_LOGITS_ROW_H
#define VKL_LOGITS_ROW_H

#include "graph.h"

/* The one-row graph's extra input: i64 [1], the row (0-based, within the
 * step's padded length) whose logits the step computes. The session writes
 * it before every execute, so one executable serves every true length
 * inside its padded bucket. */
#define VKL_LOGITS_ROW_INPUT "logits_row"

/* From g (logits, output `logits_output`, shaped [batch, seq, vocab]):
 * walks back from the logits through ops that map row i to row i using
 * weights only (elementwise ops against weights, casts, norms over the last
 * axis, MatMul / QuantMatMul by a weight) while each intermediate tensor
 * feeds only the next of them; needs a matrix product (the lm_head) among
 * them. The tensor where the walk stops is narrowed by a Gather of row
 * `logits_row` along the sequence axis, and the walked ops are re-inferred
 * at one row: *out is a graph derived from g (vkl_graph_derive) whose logits
 * are [batch, 1, vocab], and *row_input its input position of
 * VKL_LOGITS_ROW_INPUT. Where no lm_head is found that way, *out is NULL
 * and the reason goes to the debug log: callers run g for every step, as
 * before. Fails only on memory. Reports through g's context. */
vkl_status vkl_logits_row_graph(const vkl_graph *g, uint32_t logits_output, vkl_graph **out, uint32_t *row_input);

#endif
