/* Strided copies shared by the ref data-movement kernels: Transpose, Slice,
 * Expand, Tile, Split and Concat are all "copy a strided view of the input
 * into a contiguous output". */
#ifndef VKL_REF_STRIDED_COPY_H
#define VKL_REF_STRIDED_COPY_H

#include <stddef.h>
#include <stdint.h>

#include "ref_kernels.h"

#define VKL_REF_VIEW_MAX_RANK (2 * VKL_MAX_RANK)

/* dst, contiguous row-major over dims[0..rank), gets element idx from
 * src + esize * sum(idx[d] * strides[d]) (strides in elements; 0 repeats,
 * negative walks backwards). Runs that are contiguous in src go by memcpy. */
void vkl_ref_strided_copy(void *dst, const void *src, uint32_t rank, const int64_t *dims, const int64_t *strides,
                          size_t esize);

/* Element size of a plain dtype, or VKL_ERR_UNSUPPORTED naming the op. */
vkl_status vkl_ref_elem_size(const vkl_ref_args *a, vkl_dtype t, size_t *esize);
/* Element size and row-major strides of input 0: the start of every view. */
vkl_status vkl_ref_view_of_input(const vkl_ref_args *a, size_t *esize, int64_t *strides);
/* Output k's dims must equal `dims` (the shape rule and the run-time data
 * agree); VKL_ERR_SHAPE otherwise. */
vkl_status vkl_ref_check_dims(const vkl_ref_args *a, uint32_t k, const int64_t *dims, uint32_t rank);
/* Optional input k is present. Tested by dtype, not data: an empty tensor
 * may have no bytes. */
static inline bool vkl_ref_present(const vkl_ref_args *a, uint32_t k) {
    return k < a->n_in && a->in[k].dtype != VKL_DTYPE_INVALID;
}
/* ONNX name of the kernel's op, for messages. */
const char *vkl_ref_op_name(const vkl_ref_args *a);

#endif
