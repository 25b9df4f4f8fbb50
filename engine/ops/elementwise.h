/* Helpers shared by the elementwise shape rules (elementwise_binary.c,
 * elementwise_unary.c, elementwise_cast.c): dtype sets and value broadcasting. */
#ifndef VKL_OPS_ELEMENTWISE_H
#define VKL_OPS_ELEMENTWISE_H

#include "shape_util.h"

/* Sets of dtypes an op accepts. */
enum {
    VKL_EW_FLOAT = 1u << 0, /* f32 f16 bf16 f64 */
    VKL_EW_SINT = 1u << 1,  /* i8 i16 i32 i64 */
    VKL_EW_UINT = 1u << 2,  /* u8 u16 u32 u64 */
    VKL_EW_BOOL = 1u << 3,
    VKL_EW_FP8 = 1u << 4,   /* fp8 e4m3 / e5m2: only where bytes are moved, not computed */
    VKL_EW_NUM = VKL_EW_FLOAT | VKL_EW_SINT | VKL_EW_UINT,
    VKL_EW_ALL = VKL_EW_NUM | VKL_EW_BOOL | VKL_EW_FP8
};

bool vkl_ew_dtype_in(vkl_dtype t, unsigned set);
/* Input k must be present and have a dtype in `set` (VKL_ERR_UNSUPPORTED
 * naming the op and dtype otherwise). */
vkl_status vkl_ew_input(vkl_graph *g, uint32_t node, uint32_t k, unsigned set, const vkl_tensor **out);
/* Input k must have the same dtype as input 0 (VKL_ERR_SHAPE otherwise). */
vkl_status vkl_ew_same_dtype(vkl_graph *g, uint32_t node, const vkl_tensor *first, const vkl_tensor *t, uint32_t k);
/* Output shape of inputs [from, from + count) broadcast together (numpy). */
vkl_status vkl_ew_broadcast(vkl_graph *g, uint32_t node, uint32_t from, uint32_t count, vkl_shape *out);

/* Value propagation. A tensor of this dtype and shape may carry a value when
 * it is an integer/bool tensor with a constant shape of at most
 * VKL_MAX_VALUE_ELEMS elements; *count is then its element count. */
bool vkl_ew_value_slots(vkl_graph *g, vkl_dtype dtype, const vkl_shape *shape, uint32_t *count);
/* Value of t broadcast to `out` (numpy rules; out has constant dims and at
 * most VKL_MAX_VALUE_ELEMS elements): false when t's value is unknown. */
bool vkl_ew_value_broadcast(vkl_graph *g, const vkl_tensor *t, const vkl_shape *out, vkl_expr *vals);
/* Failures of a value computation only lose the value, except running out of
 * memory, which is returned. */
vkl_status vkl_ew_value_status(vkl_status st);

#endif
