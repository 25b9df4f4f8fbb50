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
    case VKL_OP_ROPE: return vkl_vk_record_rope;
    case VKL_OP_ATTENTION: return vkl_vk_record_attention;
    case VKL_OP_KV_APPEND: return vkl_vk_record_kv_append;
    default: return NULL;
    }
}

static vkl_status node_fail(const vkl_vk_node *node, vkl_status st, const char *fmt, va_list ap) {
    char what[160], why[512];
    vsnprintf(why, sizeof(why), fmt, ap);
    return vkl_fail(node->dev->ctx, st, "vulkan: %s: %s", vkl_node_str(node->g, node->index, what, sizeof(what)),
                    why);
}

vkl_status vkl_vk_node_unsupported(const vkl_vk_node *node, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vkl_status st = node_fail(node, VKL_ERR_UNSUPPORTED, fmt, ap);
    va_end(ap);
    return st;
}

vkl_status vkl_vk_node_fail(const vkl_vk_node *node, vkl_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    st = node_fail(node, st, fmt, ap);
    va_end(ap);
    return st;
}
