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

/* The nodes of one candidate match, each once. */
#define VKL_PATTERN_MAX 32
typedef struct vkl_pattern {
    uint32_t nodes[VKL_PATTERN_MAX];
    uint32_t n;
} vkl_pattern;

/* Adds node (once); false for VKL_NONE or when full. */
bool vkl_pattern_add(vkl_pattern *p, uint32_t node);
/* Marks every node of the pattern dead. */
void vkl_pattern_kill(vkl_graph *g, const vkl_pattern *p);

/* The pattern `nodes` (distinct) may be removed once `out` is rerouted:
 * every other tensor they produce is read only by nodes of the pattern and
 * is not a graph output. */
bool vkl_match_closed(const vkl_graph *g, const vkl_uses *u, const uint32_t *nodes, uint32_t n, uint32_t out);
/* The one live node reading t (t not a graph output, read once), else VKL_NONE. */
uint32_t vkl_match_sole_consumer(const vkl_graph *g, const vkl_uses *u, uint32_t t);

/* t holds exactly one integer known at import time (weight data or a
 * symbolic value that is a constant). */
bool vkl_match_const_int(vkl_graph *g, uint32_t t, int64_t *v);
/* Normalize an axis in [-rank, rank) without reporting an error. */
bool vkl_match_axis(int64_t axis, uint32_t rank, uint32_t *out);
/* The node's integer axis attribute `name` (`def` when absent; INT64_MIN:
 * required), normalized for `rank`. */
bool vkl_match_attr_axis(const vkl_graph *g, uint32_t node, const char *name, int64_t def, uint32_t rank,
                         uint32_t *axis);
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

/* ---- shared by the norm and activation fusions (and fold) */

/* Readers of t per u, also for a tensor added after u was built. */
uint32_t vkl_uses_get(const vkl_graph *g, const vkl_uses *u, uint32_t t);

/* A float tensor written as a product: scale * prod(num) / prod(den). Made
 * by expanding Mul, Div, Reciprocal, Neg and Pow(., 2 or 3) from the root
 * tensor down through float intermediates read only there (the root's own
 * producer is expanded however often the root is read). One-element
 * constants multiply into `scale`; every other factor is a leaf. So
 * Mul(Mul(x, 0.5), a), Mul(x, Mul(a, 0.5)) and Div(Mul(x, a), 2) all read
 * {x, a} * 0.5, which lets a pattern accept every ordering exporters emit. */
#define VKL_PRODUCT_MAX 8
typedef struct vkl_product {
    double scale;
    uint32_t num[VKL_PRODUCT_MAX], n_num;
    uint32_t den[VKL_PRODUCT_MAX], n_den;
    vkl_pattern nodes; /* the nodes expanded, the root's producer first */
} vkl_product;

/* False when t is not float or the product has too many factors. A tensor
 * that no node above expands is the product {t} with scale 1. */
bool vkl_match_product(const vkl_graph *g, const vkl_uses *u, uint32_t t, vkl_product *p);
/* How often t is a factor of p.num. */
uint32_t vkl_product_count(const vkl_product *p, uint32_t t);
/* a == b within a relative 1e-6 (exported float32 constants such as
 * 0.7978845608 or 1.4142135). */
bool vkl_match_near(double a, double b);

/* t = ReduceMean(*in, axes = [last axis], keepdims = 1): the producer node,
 * else VKL_NONE. */
uint32_t vkl_match_mean_last(vkl_graph *g, uint32_t t, uint32_t *in);
/* t = Sub(x, ReduceMean(x, [last axis], keepdims = 1)), LayerNorm's centred
 * input: the Sub node and *x, *mean_node; else VKL_NONE. */
uint32_t vkl_match_centered(vkl_graph *g, uint32_t t, uint32_t *x, uint32_t *mean_node);

/* In product p, the one factor 1 / sqrt(mean(base^2 over the last axis,
 * keepdims) + eps): a divisor Sqrt(s) (Div or Reciprocal) or a factor
 * Pow(s, -0.5), s = Add(ReduceMean(Pow(base, 2) or Mul(base, base)), eps).
 * Adds those nodes to *pat; *factor is the index in p->num of the Pow leaf,
 * or VKL_NONE when the divisor p->den[0] is. */
bool vkl_match_inv_rms(vkl_graph *g, const vkl_product *p, vkl_pattern *pat, uint32_t *base, double *eps,
                       uint32_t *factor);

/* The factors of a normalization product p besides the 1/rms `factor`
 * (from vkl_match_inv_rms): `base` exactly once and at most one more, the
 * scale (*scale = VKL_NONE when there is none). */
bool vkl_match_norm_factors(const vkl_product *p, uint32_t factor, uint32_t base, uint32_t *scale);
/* x is float of rank >= 1 and the pattern's result `out` has its dtype and
 * shape: no operand broadcast x to something larger. */
bool vkl_match_keeps_shape(const vkl_graph *g, uint32_t x, uint32_t out);

/* A new weight "<base>.<suffix>" of dtype and constant shape; the bytes are
 * copied into the graph. */
vkl_status vkl_match_new_weight(vkl_graph *g, const char *base, const char *suffix, vkl_dtype dtype,
                                const vkl_shape *shape, const void *data, size_t nbytes, uint32_t *id);

/* Replace pattern `pat` (result `out`) by op(x, scale, bias?) with axis -1
 * and epsilon, op RMSNorm or LayerNormalization. Scale and bias must be of
 * x's dtype, rank 0 or [last dim or 1]; a missing scale becomes ones of
 * x's last dim when that is a constant. *fused reports whether it happened. */
vkl_status vkl_match_emit_norm(vkl_graph *g, vkl_op op, const vkl_pattern *pat, uint32_t out, uint32_t x,
                               uint32_t scale, uint32_t bias, double eps, bool *fused);

/* Finish a fusion: `to` (the fused node's output, from vkl_match_add_node)
 * replaces `from` if it has from's dtype and shape and the fused node reads
 * nothing the pattern computes; the pattern's nodes die. Otherwise the
 * fused node is dropped and *done stays false. */
vkl_status vkl_match_replace(vkl_graph *g, const vkl_pattern *pat, uint32_t from, uint32_t to, bool *done);

/* Offers each live node to try_fn once, consumers before producers so that
 * the largest pattern around a node is tried first; keeps `u` current after
 * every fusion. *fired counts the fusions try_fn reports. */
typedef vkl_status (*vkl_match_try_fn)(vkl_graph *g, const vkl_uses *u, uint32_t node, bool *fused);
vkl_status vkl_match_each(vkl_graph *g, vkl_match_try_fn try_fn, uint32_t *fired);

#endif
