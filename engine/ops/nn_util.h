/* Helpers shared by the nn family's shape rules (norm.c, reduce.c, linalg.c,
 * conv.c, fused.c): dtype and rank checks, symbolic dim agreement, and the
 * reduce-axes set that the ref kernels also use. */
#ifndef VKL_NN_UTIL_H
#define VKL_NN_UTIL_H

#include "shape_util.h"

/* Inputs 0..n-1, each required (VKL_ERR_SHAPE naming the first absent one). */
vkl_status vkl_nn_inputs(vkl_graph *g, uint32_t node, uint32_t n, const vkl_tensor **t);
/* The "axis" attribute normalized against x's rank. */
vkl_status vkl_nn_axis(vkl_graph *g, uint32_t node, const vkl_tensor *x, uint32_t *axis);
/* The node's op name ("Softmax") for messages. */
const char *vkl_nn_op_name(const vkl_graph *g, uint32_t node);
/* VKL_ERR_UNSUPPORTED unless t is f32, f16, bf16 or f64. */
vkl_status vkl_nn_need_float(vkl_graph *g, uint32_t node, const vkl_tensor *t, const char *what);
/* VKL_ERR_SHAPE unless b has a's dtype. */
vkl_status vkl_nn_same_dtype(vkl_graph *g, uint32_t node, const vkl_tensor *a, const vkl_tensor *b, const char *what);
/* VKL_ERR_SHAPE unless t has exactly `rank` dims (or at least, with at_least). */
vkl_status vkl_nn_need_rank(vkl_graph *g, uint32_t node, const vkl_tensor *t, uint32_t rank, bool at_least,
                            const char *what);
/* VKL_ERR_SHAPE when dims a and b are provably different. Dims the algebra
 * cannot order (two unrelated symbols) pass; kernels check them at run time. */
vkl_status vkl_nn_dims_agree(vkl_graph *g, uint32_t node, vkl_expr a, vkl_expr b, const char *what);
/* Unidirectional broadcasting: src (right-aligned, rank <= dst's) has dims
 * that are 1 or agree with dst's. `what` names src in the message. */
vkl_status vkl_nn_broadcast_to(vkl_graph *g, uint32_t node, const vkl_shape *src, const vkl_shape *dst,
                               const char *what);
/* dims [from, rank) of s. */
vkl_shape vkl_nn_shape_tail(const vkl_shape *s, uint32_t from);

/* Reduce axes (ONNX ReduceXxx-18): mask[d] = true for each reduced dim.
 * Axes are normalized, each in [-rank, rank), no repeats; an empty list
 * reduces every dim unless noop_with_empty_axes, which reduces none. Shared
 * with the ref kernels so that both read axes the same way. */
vkl_status vkl_nn_reduce_mask(vkl_context *ctx, const char *op, const int64_t *axes, uint32_t n_axes, uint32_t rank,
                              bool noop_with_empty_axes, bool *mask);

/* Conv attributes, validated (defined in conv.c; the ref kernel reads them
 * the same way). pads are begins then ends, used with auto_pad NOTSET. */
typedef enum vkl_nn_auto_pad {
    VKL_NN_PAD_NOTSET,
    VKL_NN_PAD_SAME_UPPER,
    VKL_NN_PAD_SAME_LOWER,
    VKL_NN_PAD_VALID
} vkl_nn_auto_pad;

typedef struct vkl_nn_conv {
    uint32_t n_spatial;
    int64_t group;
    vkl_nn_auto_pad auto_pad;
    int64_t strides[VKL_MAX_RANK], dilations[VKL_MAX_RANK], pads[2 * VKL_MAX_RANK];
    bool has_kernel_shape;
    int64_t kernel_shape[VKL_MAX_RANK];
} vkl_nn_conv;

vkl_status vkl_nn_conv_attrs(const vkl_graph *g, uint32_t node, uint32_t n_spatial, vkl_nn_conv *out);
/* Concrete geometry of spatial dim i: output size and leading pad for an
 * input of size `in` and a kernel of size `k`. VKL_ERR_SHAPE when the
 * dilated kernel does not fit the padded input. */
vkl_status vkl_nn_conv_dim(vkl_context *ctx, const vkl_nn_conv *c, uint32_t i, int64_t in, int64_t k, int64_t *out,
                           int64_t *pad_begin);

#endif
