/* Which ops have a Vulkan kernel: op -> recorder. A recorder checks a node
 * (dtypes, shapes, device limits) and describes its dispatches; prepare in
 * vk_backend.c binds and records them. Adding an op = one file with its
 * recorder and shaders, one line here. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../../engine/ops.h"
#include "vk_internal.h"

vkl_vk_recorder vkl_vk_recorder_for(uint32_t op) {
    switch (op) {
    case VKL_OP_QUANT_MAT_MUL: return vkl_vk_record_quant_mat_mul;
    case VKL_OP_CONCAT: return vkl_vk_record_concat;
    case VKL_OP_SPLIT: return vkl_vk_record_split;
    case VKL_OP_SLICE: return vkl_vk_record_slice;
    case VKL_OP_RESHAPE: return vkl_vk_record_reshape;
    case VKL_OP_TRANSPOSE: return vkl_vk_record_transpose;
    case VKL_OP_SQUEEZE: return vkl_vk_record_reshape;
    case VKL_OP_UNSQUEEZE: return vkl_vk_record_reshape;
    case VKL_OP_EXPAND: return vkl_vk_record_expand;
    case VKL_OP_TILE: return vkl_vk_record_tile;
    case VKL_OP_FLATTEN: return vkl_vk_record_reshape;
    case VKL_OP_TRILU: return vkl_vk_record_trilu;
    case VKL_OP_GATHER: return vkl_vk_record_gather;
    case VKL_OP_GATHER_ELEMENTS: return vkl_vk_record_gather_elements;
    case VKL_OP_GATHER_ND: return vkl_vk_record_gather_nd;
    case VKL_OP_SCATTER_ND: return vkl_vk_record_scatter_nd;
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
    case VKL_OP_ROPE: return vkl_vk_record_rope;
    case VKL_OP_ATTENTION: return vkl_vk_record_attention;
    case VKL_OP_KV_APPEND: return vkl_vk_record_kv_append;
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

static vkl_status node_fail(const vkl_vk_node *node, vkl_status st, const char *fmt, va_list ap) {
    char what[160], why[512];
    vsnprintf(why, sizeof(why), fmt, ap);
    return vkl_fail(node->dev->ctx, st, "vulkan: %s: %s", vkl_node_str(node->g, node->index, what, sizeof(what)), why);
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

vkl_status vkl_vk_input_ints(const vkl_vk_node *node, uint32_t k, const char *what, int64_t *out, uint32_t cap,
                             uint32_t *count) {
    *count = 0;
    const uint32_t t = k < node->n_in ? node->in[k].id : VKL_NONE;
    if (t == VKL_NONE) return vkl_vk_node_unsupported(node, "input %u (%s) is absent", k, what);
    const vkl_tensor *tt = &node->g->tensors[t];
    const vkl_binding *b = node->binding;
    if (tt->value) {
        if (tt->value_count > cap) return vkl_vk_node_unsupported(node, "input %u (%s) has %u values", k, what, tt->value_count);
        for (uint32_t i = 0; i < tt->value_count; i++) {
            vkl_status st = vkl_expr_eval(node->dev->ctx, node->g->syms, tt->value[i], b ? b->values : NULL, b ? b->count : 0, &out[i]);
            if (st) return vkl_fail_prefix(node->dev->ctx, st, "vulkan: input %u (%s) of node %u", k, what, node->index);
        }
        *count = tt->value_count;
        return VKL_OK;
    }
    const size_t es = vkl_dtype_size(tt->dtype);
    if (tt->kind != VKL_TENSOR_WEIGHT || !tt->data || !vkl_dtype_is_int(tt->dtype) || !es)
        return vkl_vk_node_unsupported(node, "input %u (%s '%s') is run-time data; the Vulkan kernel needs its values "
                                       "when the graph is prepared", k, what, tt->name);
    const size_t n = tt->nbytes / es;
    if (n > cap) return vkl_vk_node_unsupported(node, "input %u (%s) has %zu values", k, what, n);
    const unsigned char *p = tt->data;
    for (size_t i = 0; i < n; i++) {
        union { int64_t i64; int32_t i32; int16_t i16; int8_t i8; uint32_t u32; uint16_t u16; uint8_t u8; } v;
        memcpy(&v, p + i * es, es);
        switch (tt->dtype) {
        case VKL_DTYPE_I64: case VKL_DTYPE_U64: out[i] = v.i64; break;
        case VKL_DTYPE_I32: out[i] = v.i32; break;
        case VKL_DTYPE_U32: out[i] = v.u32; break;
        case VKL_DTYPE_I16: out[i] = v.i16; break;
        case VKL_DTYPE_U16: out[i] = v.u16; break;
        case VKL_DTYPE_I8: out[i] = v.i8; break;
        default: out[i] = v.u8; break;
        }
    }
    *count = (uint32_t)n;
    return VKL_OK;
}

vkl_status vkl_vk_axis_attr(const vkl_vk_node *nd, uint32_t rank, uint32_t *axis) {
    int64_t a;
    vkl_status st = vkl_op_attr_int(nd->g, nd->index, "axis", &a);
    if (st) return st;
    if (a < -(int64_t)rank || a >= (int64_t)rank)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "axis %lld is out of range for rank %u", (long long)a, rank);
    *axis = (uint32_t)(a < 0 ? a + rank : a);
    return VKL_OK;
}
