/* Helpers shared by the shape rules of the data-movement, indexing and
 * generator families: value-dependent inputs, axis lists, and the symbolic
 * value propagation that turns Shape -> Gather -> Concat -> Reshape chains
 * into symbolic shapes (Transformer-Lite §2.1). */
#ifndef VKL_MOVEMENT_UTIL_H
#define VKL_MOVEMENT_UTIL_H

#include "shape_util.h"

/* Name of the node's op for messages ("Reshape"). */
const char *vkl_mv_op_name(const vkl_graph *g, uint32_t node);

/* Input k must be an integer tensor of rank `rank` (scalar: 0, list: 1;
 * rank 0 also accepts a 1-element list); `what` names it ("shape"). */
vkl_status vkl_mv_check_int_input(vkl_graph *g, uint32_t node, uint32_t k, const char *what, uint32_t rank);
/* Value of an integer input (symbolic or constant data) that the output
 * shape depends on. Fails VKL_ERR_UNSUPPORTED "output shape depends on the
 * run-time value of input k (what)" when unknown. */
vkl_status vkl_mv_input_value(vkl_graph *g, uint32_t node, uint32_t k, const char *what, vkl_expr *out,
                              uint32_t cap, uint32_t *count);
/* Same, every element a constant. */
vkl_status vkl_mv_input_ints(vkl_graph *g, uint32_t node, uint32_t k, const char *what, int64_t *out,
                             uint32_t cap, uint32_t *count);

/* Normalize `n` axes against `rank` ([-rank, rank)), rejecting duplicates.
 * norm (may be NULL) gets the normalized axes; *mask bit a is set for axis a. */
vkl_status vkl_mv_axes(vkl_graph *g, uint32_t node, const char *what, const int64_t *axes, uint32_t n,
                       uint32_t rank, uint32_t *norm, uint32_t *mask);

/* Concrete dims when every dim of s is a constant. */
bool vkl_mv_const_dims(const vkl_graph *g, const vkl_shape *s, int64_t *dims);
vkl_status vkl_mv_const(vkl_graph *g, int64_t v, vkl_expr *out);
/* A shape from a list of dim expressions (rank <= VKL_MAX_RANK checked). */
vkl_status vkl_mv_shape_from_exprs(vkl_graph *g, const vkl_expr *dims, uint32_t rank, vkl_shape *out);

/* Value propagation. Values live on small integer tensors of constant shape. */
bool vkl_mv_value_dtype(vkl_dtype t);
/* Known value of an input tensor when it can carry one: integer dtype,
 * constant shape, at most VKL_MAX_VALUE_ELEMS elements. Also the concrete
 * dims (may be NULL). */
bool vkl_mv_known_value(vkl_graph *g, const vkl_tensor *t, vkl_expr *val, uint32_t *count, int64_t *dims);
/* Set output k's value when its dtype and element count allow one. */
vkl_status vkl_mv_set_value(vkl_graph *g, uint32_t node, uint32_t k, const vkl_expr *val, uint32_t count);
/* Output k keeps the value of input 0 element for element (reshapes). */
vkl_status vkl_mv_pass_value(vkl_graph *g, uint32_t node);

/* A strided view of `src`, in row-major order over dims[0..rank): element
 * idx reads src[offset + sum(idx[d] * strides[d])]. rank <= 2 * VKL_MAX_RANK;
 * the caller guarantees every read is in range and count fits `out`. */
void vkl_mv_view(const vkl_expr *src, int64_t offset, uint32_t rank, const int64_t *dims, const int64_t *strides,
                 vkl_expr *out);
/* ONNX Slice on one axis of concrete size d: negative start/end count from
 * the end, then clamp ([0, d] for step > 0; start to [0, d-1] and end to
 * [-1, d-1] for step < 0). *first: index of the first element taken; *len:
 * how many (step != 0). Shared by the shape rule and the ref kernel. */
void vkl_mv_slice_range(int64_t d, int64_t start, int64_t end, int64_t step, int64_t *first, int64_t *len);
/* Row-major element strides of concrete dims. */
void vkl_mv_strides(const int64_t *dims, uint32_t rank, int64_t *strides);

#endif
