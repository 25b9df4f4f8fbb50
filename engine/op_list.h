/* X-macro list of every op: X(ENUM_SUFFIX, c_name). The op table
 * (engine/ops/op_table.c) and each backend's kernel table expand it, so an op
 * added here without a shape rule or a ref kernel fails to link. Keep the
 * order of enum vkl_op in ops.h. */
#ifndef VKL_OP_LIST_H
#define VKL_OP_LIST_H

#define VKL_OP_LIST(X)                                                                   \
    X(ADD, add) X(SUB, sub) X(MUL, mul) X(DIV, div) X(POW, pow)                          \
    X(EQUAL, equal) X(GREATER, greater) X(GREATER_OR_EQUAL, greater_or_equal)            \
    X(LESS, less) X(LESS_OR_EQUAL, less_or_equal) X(AND, and) X(OR, or)                  \
    X(MAX, max) X(MIN, min) X(WHERE, where)                                              \
    X(SQRT, sqrt) X(RECIPROCAL, reciprocal) X(NEG, neg) X(ABS, abs) X(EXP, exp)          \
    X(LOG, log) X(COS, cos) X(SIN, sin) X(ERF, erf) X(TANH, tanh) X(SIGMOID, sigmoid) X(RELU, relu)              \
    X(GELU, gelu) X(NOT, not) X(CLIP, clip) X(CAST, cast) X(CAST_LIKE, cast_like)        \
    X(IDENTITY, identity) X(DROPOUT, dropout)                                            \
    X(SOFTMAX, softmax) X(LOG_SOFTMAX, log_softmax)                                      \
    X(LAYER_NORMALIZATION, layer_normalization)                                          \
    X(REDUCE_MEAN, reduce_mean) X(REDUCE_SUM, reduce_sum) X(REDUCE_MAX, reduce_max)      \
    X(ARG_MAX, arg_max) X(CUM_SUM, cum_sum) X(TOP_K, top_k)                              \
    X(MAT_MUL, mat_mul) X(GEMM, gemm) X(CONV, conv)                                      \
    X(CONCAT, concat) X(SPLIT, split) X(SLICE, slice) X(RESHAPE, reshape)                \
    X(TRANSPOSE, transpose) X(SQUEEZE, squeeze) X(UNSQUEEZE, unsqueeze)                  \
    X(EXPAND, expand) X(TILE, tile) X(FLATTEN, flatten) X(TRILU, trilu)                  \
    X(GATHER, gather) X(GATHER_ND, gather_nd) X(GATHER_ELEMENTS, gather_elements)        \
    X(SCATTER_ND, scatter_nd)                                                            \
    X(SHAPE, shape) X(SIZE, size) X(CONSTANT_OF_SHAPE, constant_of_shape)                \
    X(CONSTANT, constant) X(RANGE, range)                                                \
    X(RMS_NORM, rms_norm) X(SILU_MUL, silu_mul) X(ROPE, rope) X(ATTENTION, attention)    \
    X(KV_APPEND, kv_append) X(QUANT_MAT_MUL, quant_mat_mul)

#endif
