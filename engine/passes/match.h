/* Small pattern-matching helpers shared by the fusion passes. */
#ifndef VKL_PASSES_MATCH_H
#define VKL_PASSES_MATCH_H

#include "../ops.h"

/* How many live nodes read each tensor (+1 for graph outputs). Build once
 * per pass; keep it current with vkl_uses_retire when killing a node. */
typedef struct vkl_uses {
    uint32_t *count; /* n_tensors entries */
    uint32_t n;
} vkl_uses;

vkl_status vkl_uses_build(const vkl_graph *g, vkl_uses *u);
void vkl_uses_free(const vkl_graph *g, vkl_uses *u);
/* Node i is being killed: its inputs lose a reader. */
void vkl_uses_retire(const vkl_graph *g, vkl_uses *u, uint32_t node);

/* The live node producing t if its op is `op`, else VKL_NONE. */
uint32_t vkl_match_producer(const vkl_graph *g, uint32_t t, vkl_op op);
/* t is a weight (or known value) holding one element, or all equal elements
 * (e.g. a broadcast constant): its value. */
bool vkl_match_scalar(const vkl_graph *g, uint32_t t, double *value);
/* t is a 1-element weight equal to v within a relative 1e-6. */
bool vkl_match_scalar_eq(const vkl_graph *g, uint32_t t, double v);
/* Node `n` (Add/Mul: commutative) has input `known` at one side: the other. */
uint32_t vkl_match_other_input(const vkl_graph *g, uint32_t n, uint32_t known);

/* Add a fresh activation tensor named "<base>.<suffix>" (made unique). */
vkl_status vkl_match_new_tensor(vkl_graph *g, const char *base, const char *suffix, uint32_t *id);

/* t holds exactly one integer known at import time (weight data or a
 * symbolic value that is a constant). */
bool vkl_match_const_int(vkl_graph *g, uint32_t t, int64_t *v);
/* Normalize an axis in [-rank, rank) without reporting an error. */
bool vkl_match_axis(int64_t axis, uint32_t rank, uint32_t *out);
/* Input k of node holds exactly one axis (Unsqueeze/Squeeze/Slice axes),
 * normalized for `rank`. */
bool vkl_match_one_axis(vkl_graph *g, uint32_t node, uint32_t k, uint32_t rank, uint32_t *axis);
/* A Transpose node's permutation (the default reversal when absent) for its
 * input's rank; false if malformed. */
bool vkl_match_perm(const vkl_graph *g, uint32_t node, uint32_t perm[VKL_MAX_RANK], uint32_t *rank);

/* Add a node with one fresh output "<base>.<suffix>" and run its shape rule
 * at once, so later passes see the output's dtype and shape. If the rule
 * rejects the node, it is marked dead again and *out is VKL_NONE (the
 * caller then leaves its pattern alone); only allocation failures are
 * returned as errors. */
vkl_status vkl_match_add_node(vkl_graph *g, vkl_op op, const char *base, const char *suffix, const uint32_t *inputs,
                              uint32_t n_inputs, const vkl_attr *attrs, uint32_t n_attrs, uint32_t *out);

#endif
