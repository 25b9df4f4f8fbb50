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
    /* The memory plan every session lays out for its own bindings: made at
     * load because making it interns expressions in the graph's symbol table,
     * which sessions read concurrently. NULL for graphs sessions refuse. */
    vkl_plan *plan;
    /* roles (graph input/output positions, VKL_NONE when absent) */
    uint32_t in_ids, in_mask, in_pos, out_logits;
    /* symbols: batch, seq (new tokens), total (attended length), past */
    size_t sym_batch, sym_seq, sym_total, sym_past;
    size_t vocab;
};

#define VKL_NO_SYMBOL SIZE_MAX

#endif
