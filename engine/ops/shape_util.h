/* Helpers shared by the shape rules in engine/ops/<family>.c. */
#ifndef VKL_SHAPE_UTIL_H
#define VKL_SHAPE_UTIL_H

#include "../ops.h"

/* Input k of a node, or NULL when absent (VKL_NONE or k >= n_inputs). */
const vkl_tensor *vkl_node_in(const vkl_graph *g, uint32_t node, uint32_t k);
/* Output k of a node, or NULL when absent. */
vkl_tensor *vkl_node_out(vkl_graph *g, uint32_t node, uint32_t k);
/* Set output k's dtype and shape (nothing when absent); clears its value. */
vkl_status vkl_node_set_out(vkl_graph *g, uint32_t node, uint32_t k, vkl_dtype dtype, const vkl_shape *shape);
/* Set output k's symbolic value (count elements; must match its shape). */
vkl_status vkl_node_set_value(vkl_graph *g, uint32_t node, uint32_t k, const vkl_expr *value, uint32_t count);

/* Fails with VKL_ERR_SHAPE "input k of <op> is required" when absent. */
vkl_status vkl_node_require(const vkl_graph *g, uint32_t node, uint32_t k, const vkl_tensor **out);

/* numpy broadcasting of symbolic shapes. Where two dims are neither provably
 * equal nor 1, the result is max(a, b) and the kernels check at run time. */
vkl_status vkl_shape_broadcast(vkl_graph *g, const vkl_shape *a, const vkl_shape *b, vkl_shape *out);
vkl_status vkl_shape_from_ints(vkl_graph *g, const int64_t *dims, uint32_t rank, vkl_shape *out);
/* Product of dims [from, to). */
vkl_status vkl_shape_numel(vkl_graph *g, const vkl_shape *s, uint32_t from, uint32_t to, vkl_expr *out);
bool vkl_shape_equal(const vkl_shape *a, const vkl_shape *b);
/* True and the count when every dim is a constant. */
bool vkl_shape_const_numel(const vkl_graph *g, const vkl_shape *s, int64_t *count);

/* The value of an integer tensor as expressions: its symbolic value if
 * known, else its weight data (i64/i32/i16/i8/u8/bool) as constants. False
 * (no message) when unknown or larger than cap. */
bool vkl_tensor_value(vkl_graph *g, const vkl_tensor *t, vkl_expr *out, uint32_t cap, uint32_t *count);
/* Same, but every element must be a constant: ints out. */
bool vkl_tensor_const_ints(vkl_graph *g, const vkl_tensor *t, int64_t *out, uint32_t cap, uint32_t *count);
/* Read element i of a weight's data as double (plain dtypes); false if not a weight. */
bool vkl_tensor_const_scalar(const vkl_tensor *t, int64_t i, double *out);

/* Normalize axis in [-rank, rank) (or [-rank-1, rank] with `inclusive`). */
vkl_status vkl_axis_norm(vkl_graph *g, int64_t axis, uint32_t rank, bool inclusive, uint32_t *out);

#endif
