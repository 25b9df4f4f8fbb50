/* Which ops have a Vulkan kernel: op -> recorder. A recorder checks a node
 * (dtypes, shapes, device limits) and describes its dispatches; prepare in
 * vk_backend.c binds and records them. Adding an op = one file with its
 * recorder and shaders, one line here. */
#include <stdarg.h>
#include <stdio.h>

#include "../../engine/ops.h"
#include "vk_internal.h"

vkl_vk_recorder vkl_vk_recorder_for(uint32_t op) {
    switch (op) {
    case VKL_OP_QUANT_MAT_MUL: return vkl_vk_record_quant_mat_mul;
    case VKL_OP_MAT_MUL: return vkl_vk_record_mat_mul;
    case VKL_OP_GEMM: return vkl_vk_record_gemm;
    case VKL_OP_CONV: return vkl_vk_record_conv;
    case VKL_OP_REDUCE_SUM: return vkl_vk_record_reduce_sum;
    case VKL_OP_REDUCE_MEAN: return vkl_vk_record_reduce_mean;
    case VKL_OP_REDUCE_MAX: return vkl_vk_record_reduce_max;
    case VKL_OP_CUM_SUM: return vkl_vk_record_cum_sum;
    case VKL_OP_ARG_MAX: return vkl_vk_record_arg_max;
    case VKL_OP_TOP_K: return vkl_vk_record_top_k;
    case VKL_OP_SOFTMAX: return vkl_vk_record_softmax;
    case VKL_OP_LOG_SOFTMAX: return vkl_vk_record_log_softmax;
    case VKL_OP_RMS_NORM: return vkl_vk_record_rms_norm;
    case VKL_OP_LAYER_NORMALIZATION: return vkl_vk_record_layer_normalization;
    default: return NULL;
    }
}

vkl_status vkl_vk_node_unsupported(const vkl_vk_node *node, const char *fmt, ...) {
    char what[160], why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    return vkl_fail(node->dev->ctx, VKL_ERR_UNSUPPORTED, "vulkan: %s: %s",
                    vkl_node_str(node->g, node->index, what, sizeof(what)), why);
}
