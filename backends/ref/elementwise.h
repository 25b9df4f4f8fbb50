/* The elementwise kernels' shared machinery: numpy broadcasting as rows
 * (a run of contiguous output elements in which every operand steps by 1 or
 * 0), and chunked loads/stores that convert any plain dtype to one of three
 * compute domains, so each op is written once per domain. */
#ifndef VKL_REF_ELEMENTWISE_H
#define VKL_REF_ELEMENTWISE_H

#include "ref_ops.h"

/* What kernels compute in: f32 for f32/f16/bf16 (fp32 math, rounded on
 * store), f64 for f64, int64 for integers and bool (exact, wrapped to the
 * output type on store; u64 keeps its bits). */
typedef enum vkl_ref_ew_domain { VKL_REF_EW_D_F32, VKL_REF_EW_D_F64, VKL_REF_EW_D_I64 } vkl_ref_ew_domain;

/* Domain of a plain dtype; false for fp8 and quantized types. */
bool vkl_ref_ew_domain_of(vkl_dtype t, vkl_ref_ew_domain *out);

/* An op on one chunk, in the domain's C type: in[k] and out point to n
 * float / double / int64_t. in[k] may equal out (in-place folds). Returns a
 * status without a message (the kernel adds one). */
typedef vkl_status (*vkl_ref_ew_fn)(const void *user, const void *const *in, void *out, int64_t n);

#define VKL_REF_EW_MAX_IN 3

/* out = fn(in[0], ..., in[n_in-1]) with numpy broadcasting, computed in
 * domain d. Checks at run time that every input broadcasts to out's dims
 * (VKL_ERR_SHAPE otherwise: the shape rule may have produced max(a, b)).
 * Operands already in the domain's C type are used in place, unconverted. */
vkl_status vkl_ref_ew_map(const vkl_ref_args *a, vkl_ref_ew_domain d, const vkl_ref_tensor *const *in, uint32_t n_in,
                      vkl_ref_tensor *out, vkl_ref_ew_fn fn, const void *user);

/* Rows of a broadcast: out has rows * run elements; row r of operand k
 * starts at element offset(k, r) and steps by step[k] (0 or 1). */
typedef struct vkl_ref_ew_rows {
    uint32_t n;                    /* operands */
    uint32_t outer_rank;           /* output dims iterated per row */
    int64_t outer_dims[VKL_MAX_RANK];
    int64_t outer_stride[VKL_REF_EW_MAX_IN][VKL_MAX_RANK]; /* element stride per outer dim, 0 if broadcast */
    int64_t rows, run;
    int64_t step[VKL_REF_EW_MAX_IN];
} vkl_ref_ew_rows;

vkl_status vkl_ref_ew_rows_init(const vkl_ref_args *a, const vkl_ref_tensor *out, const vkl_ref_tensor *const *in,
                            uint32_t n, vkl_ref_ew_rows *r);
void vkl_ref_ew_rows_offsets(const vkl_ref_ew_rows *r, int64_t row, int64_t *offsets);

/* An optional scalar input (Clip bounds, Dropout's ratio) that is present
 * must hold exactly one element (VKL_ERR_SHAPE otherwise) of a dtype that
 * vkl_ref_get_f/get_i can read (VKL_ERR_UNSUPPORTED otherwise). */
vkl_status vkl_ref_ew_check_scalar(const vkl_ref_args *a, uint32_t k, const char *what);
/* Input k, or NULL when absent. */
const vkl_ref_tensor *vkl_ref_ew_in(const vkl_ref_args *a, uint32_t k);

/* "Op does not support dtype X" (VKL_ERR_UNSUPPORTED). */
vkl_status vkl_ref_ew_unsupported(const vkl_ref_args *a, vkl_dtype t);

#endif
