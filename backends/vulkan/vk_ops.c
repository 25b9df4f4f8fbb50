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
    /* elementwise */
    case VKL_OP_ADD: return vkl_vk_record_binary;
    case VKL_OP_SUB: return vkl_vk_record_binary;
    case VKL_OP_MUL: return vkl_vk_record_binary;
    case VKL_OP_DIV: return vkl_vk_record_binary;
    case VKL_OP_POW: return vkl_vk_record_binary;
    case VKL_OP_EQUAL: return vkl_vk_record_binary;
    case VKL_OP_GREATER: return vkl_vk_record_binary;
    case VKL_OP_GREATER_OR_EQUAL: return vkl_vk_record_binary;
    case VKL_OP_LESS: return vkl_vk_record_binary;
    case VKL_OP_LESS_OR_EQUAL: return vkl_vk_record_binary;
    case VKL_OP_AND: return vkl_vk_record_binary;
    case VKL_OP_OR: return vkl_vk_record_binary;
    case VKL_OP_MAX: return vkl_vk_record_binary;
    case VKL_OP_MIN: return vkl_vk_record_binary;
    case VKL_OP_SILU_MUL: return vkl_vk_record_binary;
    case VKL_OP_WHERE: return vkl_vk_record_where;
    case VKL_OP_SQRT: return vkl_vk_record_unary;
    case VKL_OP_RECIPROCAL: return vkl_vk_record_unary;
    case VKL_OP_NEG: return vkl_vk_record_unary;
    case VKL_OP_ABS: return vkl_vk_record_unary;
    case VKL_OP_EXP: return vkl_vk_record_unary;
    case VKL_OP_LOG: return vkl_vk_record_unary;
    case VKL_OP_COS: return vkl_vk_record_unary;
    case VKL_OP_SIN: return vkl_vk_record_unary;
    case VKL_OP_ERF: return vkl_vk_record_unary;
    case VKL_OP_TANH: return vkl_vk_record_unary;
    case VKL_OP_SIGMOID: return vkl_vk_record_unary;
    case VKL_OP_RELU: return vkl_vk_record_unary;
    case VKL_OP_GELU: return vkl_vk_record_unary;
    case VKL_OP_NOT: return vkl_vk_record_unary;
    case VKL_OP_CLIP: return vkl_vk_record_unary;
    case VKL_OP_IDENTITY: return vkl_vk_record_identity;
    case VKL_OP_DROPOUT: return vkl_vk_record_dropout;
    case VKL_OP_CAST: return vkl_vk_record_cast;
    case VKL_OP_CAST_LIKE: return vkl_vk_record_cast;
    /* generators */
    case VKL_OP_SHAPE: return vkl_vk_record_shape;
    case VKL_OP_SIZE: return vkl_vk_record_size;
    case VKL_OP_CONSTANT_OF_SHAPE: return vkl_vk_record_constant_of_shape;
    case VKL_OP_CONSTANT: return vkl_vk_record_constant;
    case VKL_OP_RANGE: return vkl_vk_record_range;
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
