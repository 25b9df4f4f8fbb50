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

#endif
