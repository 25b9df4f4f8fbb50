/* Graph passes run by the importer, one per file in engine/passes/. Each
 * returns how often it fired so `vkllm import` can report it, leaves dead
 * nodes marked (vkl_graph_compact removes them) and keeps the graph valid:
 * a pattern that does not match exactly is left as plain ops. */
#ifndef VKL_PASSES_H
#define VKL_PASSES_H

#include "../graph.h"

/* Remove nodes none of whose outputs is read by a live node or is a graph
 * output, repeatedly. */
vkl_status vkl_pass_dce(vkl_graph *g, uint32_t *removed);

/* Transformer-Lite §2.1: delete shape-computing nodes. A node all of whose
 * outputs have a symbolic value (set by shape inference) is computed
 * entirely from shapes and constants: its consumers read the values, which
 * the backend writes at prepare time from the bound symbols. */
vkl_status vkl_pass_shape_ops(vkl_graph *g, uint32_t *removed);

/* Remove Identity, inference Dropout and same-dtype Cast nodes. */
vkl_status vkl_pass_identity(vkl_graph *g, uint32_t *removed);

/* Merge nodes with the same op, inputs and attributes (e.g. the duplicate
 * ReduceMean the Arm paper shows); repeats until nothing merges. */
vkl_status vkl_pass_cse(vkl_graph *g, uint32_t *merged);

/* Constant folding: a node whose every input is a weight (or a constant
 * shape value), not a shape source nor in place, with outputs of at most
 * 16 MiB, runs once on the ref backend; its outputs become weights.
 * Repeats until nothing folds. Counts nodes folded. */
vkl_status vkl_pass_fold(vkl_graph *g, uint32_t *folded);

/* x / sqrt(mean(x^2, last axis) + eps) [* weight] -> RMSNorm(x, weight or
 * ones, axis -1). Counts RMSNorm nodes made. */
vkl_status vkl_pass_fuse_rmsnorm(vkl_graph *g, uint32_t *fused);

/* Decomposed LayerNorm over the last axis [* gamma] [+ beta] ->
 * LayerNormalization. Counts only the decomposed ones fused (native
 * LayerNormalization nodes are counted by the importer's summary). */
vkl_status vkl_pass_fuse_layernorm(vkl_graph *g, uint32_t *fused);

/* 0.5 x (1 + erf(x / sqrt 2)) -> Gelu; 0.5 x (1 + tanh(sqrt(2/pi) (x +
 * 0.044715 x^3))) -> Gelu(approximate "tanh"). Counts Gelu nodes made. */
vkl_status vkl_pass_fuse_gelu(vkl_graph *g, uint32_t *fused);

/* Mul(Mul(g, Sigmoid(g)), up) -> SiluMul(g, up). Counts SiluMul nodes made. */
vkl_status vkl_pass_fuse_silu_mul(vkl_graph *g, uint32_t *fused);

/* Hugging Face rotary embeddings (rotate_half; GPT-J's rotate-every-two;
 * partial rotary) -> RoPE(x, cos, sin). Counts RoPE nodes made. */
vkl_status vkl_pass_fuse_rope(vkl_graph *g, uint32_t *fused);

/* Eager attention MatMul -> scale -> (+ mask) -> Softmax -> MatMul, with
 * repeat_kv's GQA expansion of K/V undone -> Attention. Counts Attention
 * nodes made. */
vkl_status vkl_pass_fuse_attention(vkl_graph *g, uint32_t *fused);

/* Transformer-Lite §2.3: Concat(past, new) KV caches -> one state tensor
 * per layer and K/V, sequence first, written by KvAppend at position_ids;
 * the past_* inputs and present_* outputs leave the graph. Counts KvAppend
 * nodes made. */
vkl_status vkl_pass_kv_inplace(vkl_graph *g, uint32_t *fused);

#endif
