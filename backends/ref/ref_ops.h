/* Declarations of every ref kernel, vkl_ref_<name>, for the family files
 * that define them (backends/ref/<family>.c). */
#ifndef VKL_REF_OPS_H
#define VKL_REF_OPS_H

#include "../../engine/op_list.h"
#include "ref_kernels.h"

#define VKL_DECLARE_REF_KERNEL(E, n) vkl_status vkl_ref_##n(const vkl_ref_args *a);
VKL_OP_LIST(VKL_DECLARE_REF_KERNEL)
#undef VKL_DECLARE_REF_KERNEL

#endif
