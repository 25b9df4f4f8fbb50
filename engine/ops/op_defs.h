/* Declarations of every op's table entry, vkl_op_info_<name>, for the
 * family files that define them (engine/ops/<family>.c). */
#ifndef VKL_OP_DEFS_H
#define VKL_OP_DEFS_H

#include "../op_list.h"
#include "../ops.h"

#define VKL_DECLARE_OP_INFO(E, n) extern const vkl_op_info vkl_op_info_##n;
VKL_OP_LIST(VKL_DECLARE_OP_INFO)
#undef VKL_DECLARE_OP_INFO

#endif
