/* Helpers shared by the nn family's ref kernels (norm.c, reduce.c,
 * linalg.c, conv.c, fused.c): dtype checks, run-time shape checks,
 * broadcasting offsets. */
#ifndef VKL_REF_NN_UTIL_H
#define VKL_REF_NN_UTIL_H

#include "../../engine/ops/nn_util.h"
#include "ref_kernels.h"

/* f32, f16, bf16 or f64. */
bool vkl_ref_nn_is_float(vkl_dtype t);
/* VKL_ERR_UNSUPPORTED "<op>: <what> dtype <t> is not supported". */
vkl_status vkl_ref_nn_bad_dtype(const vkl_ref_args *a, const char *op, const char *what, vkl_dtype t);
/* Product of dims [from, to). */
int64_t vkl_ref_nn_prod(const int64_t *dims, uint32_t from, uint32_t to);
/* The node's integer attribute (schema default when absent). */
vkl_status vkl_ref_nn_attr(const vkl_ref_args *a, const char *name, int64_t *out);
/* Normalized axis, or VKL_ERR_SHAPE naming the op. */
vkl_status vkl_ref_nn_axis(const vkl_ref_args *a, const char *op, int64_t axis, uint32_t rank, uint32_t *out);
/* VKL_ERR_SHAPE "<op>: <what> differ (x vs y)" unless x == y: dims the shape
 * rule could not compare are checked here at run time. */
vkl_status vkl_ref_nn_dim_eq(const vkl_ref_args *a, const char *op, int64_t x, int64_t y, const char *what);
/* VKL_ERR_SHAPE unless src broadcasts (right-aligned, dims 1 or equal) to dims. */
vkl_status vkl_ref_nn_broadcast_to(const vkl_ref_args *a, const char *op, const vkl_ref_tensor *src,
                                   const int64_t *dims, uint32_t rank, const char *what);
/* Offset in src of the element at row-major index `flat` of a tensor of
 * shape dims (src broadcast to it; only src's rank and dims are read). */
int64_t vkl_ref_nn_broadcast_flat(const vkl_ref_tensor *src, const int64_t *dims, uint32_t rank, int64_t flat);

#endif
