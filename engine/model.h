/* Internal view of vkl_model: the mapped file, its graph, the backend with
 * the weights loaded, and the roles of the graph's inputs and outputs that a
 * session needs (token ids, attention mask, positions, logits). */
#ifndef VKL_MODEL_H
#define VKL_MODEL_H

#include "backend.h"
#include "plan.h"
#include "vkm.h"

/* Everything here is written by vkl_model_load only and read-only after:
 * sessions on several threads share it (docs/runtime.md, "Threads"). */
struct vkl_model {
    vkl_context *ctx;
    vkl_vkm *vkm;
    const vkl_graph *g;
    const vkl_backend_vtable *be;
    vkl_backend_device *dev;
    vkl_backend_weights *weights;
    vkl_backend_caps caps;          /* as probed with the model's options */
    char reason[192];               /* why this backend (vkl_model_backend_reason) */
    /* The memory plan every session lays out for its own bindings: made at
     * load because making it interns expressions in the graph's symbol table,
     * which sessions read concurrently. NULL for graphs sessions refuse. */
    vkl_plan *plan;
    /* The one-row graph (engine/logits_row.h: the lm_head on one row of the
     * hidden state) and its plan, which prompts that keep only their last
     * row's logits run; NULL where no lm_head was found (every step runs g).
     * in_row: its input position of VKL_LOGITS_ROW_INPUT. */
    vkl_graph *g_row;
    vkl_plan *plan_row;
    uint32_t in_row;
    /* The greedy-pick graph (engine/greedy_pick.h: the full graph plus the
     * argmax of its logits and the logit there) and its plan, which decode
     * steps of greedy sessions run; NULL for graphs sessions refuse.
     * out_pick_index, out_pick_value: its output positions of the two. */
    vkl_graph *g_pick;
    vkl_plan *plan_pick;
    uint32_t out_pick_index, out_pick_value;
    /* roles (graph input/output positions, VKL_NONE when absent) */
    uint32_t in_ids, in_mask, in_pos, out_logits;
    /* symbols: batch, seq (new tokens), total (attended length), past */
    size_t sym_batch, sym_seq, sym_total, sym_past;
    size_t vocab;
};

#define VKL_NO_SYMBOL SIZE_MAX

/* Of a graph's outputs, the one a session reads logits from: the output
 * named "logits", else the first; VKL_NONE when there are none. */
uint32_t vkl_model_logits_output(const vkl_graph *g);
/* The vocabulary size of the logits output, when it is [batch, seq, vocab]
 * with a constant vocab; false otherwise (not a causal LM). The importer
 * checks a tokenizer against it before storing one. */
bool vkl_model_graph_vocab(const vkl_graph *g, size_t *vocab);

#endif
