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

#endif
