/* The op table: for each op its name, arity, attribute schema, class (shape
 * source or tensor op) and symbolic shape rule. Shape rules live in
 * engine/ops/<family>.c; the table itself in engine/ops/op_table.c. */
#ifndef VKL_OPS_H
#define VKL_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "graph.h"

/* The enum is internal (never stored: .vkm stores op names). */
typedef enum vkl_op {
    /* elementwise binary (numpy broadcasting) */
    VKL_OP_ADD, VKL_OP_SUB, VKL_OP_MUL, VKL_OP_DIV, VKL_OP_POW,
    VKL_OP_EQUAL, VKL_OP_GREATER, VKL_OP_GREATER_OR_EQUAL, VKL_OP_LESS, VKL_OP_LESS_OR_EQUAL,
    VKL_OP_AND, VKL_OP_OR,
    VKL_OP_MAX, VKL_OP_MIN, /* variadic */
    VKL_OP_WHERE,           /* ternary */
    /* elementwise unary */
    VKL_OP_SQRT, VKL_OP_RECIPROCAL, VKL_OP_NEG, VKL_OP_ABS, VKL_OP_EXP, VKL_OP_LOG, VKL_OP_COS, VKL_OP_SIN, VKL_OP_ERF,
    VKL_OP_TANH, VKL_OP_SIGMOID, VKL_OP_RELU, VKL_OP_GELU, VKL_OP_NOT, VKL_OP_CLIP,
    VKL_OP_CAST, VKL_OP_CAST_LIKE, VKL_OP_IDENTITY, VKL_OP_DROPOUT,
    /* normalization and softmax */
    VKL_OP_SOFTMAX, VKL_OP_LOG_SOFTMAX, VKL_OP_LAYER_NORMALIZATION,
    /* reductions and scans */
    VKL_OP_REDUCE_MEAN, VKL_OP_REDUCE_SUM, VKL_OP_REDUCE_MAX, VKL_OP_ARG_MAX, VKL_OP_CUM_SUM,
    VKL_OP_TOP_K,
    /* linear algebra */
    VKL_OP_MAT_MUL, VKL_OP_GEMM, VKL_OP_CONV,
    /* data movement */
    VKL_OP_CONCAT, VKL_OP_SPLIT, VKL_OP_SLICE, VKL_OP_RESHAPE, VKL_OP_TRANSPOSE, VKL_OP_SQUEEZE,
    VKL_OP_UNSQUEEZE, VKL_OP_EXPAND, VKL_OP_TILE, VKL_OP_FLATTEN, VKL_OP_TRILU,
    /* indexing */
    VKL_OP_GATHER, VKL_OP_GATHER_ND, VKL_OP_GATHER_ELEMENTS, VKL_OP_SCATTER_ND,
    /* shape sources and generators */
    VKL_OP_SHAPE, VKL_OP_SIZE, VKL_OP_CONSTANT_OF_SHAPE, VKL_OP_CONSTANT, VKL_OP_RANGE,
    /* vkllm fused ops (domain "vkllm"), created by the importer's passes */
    VKL_OP_RMS_NORM,   /* (x, scale) attrs epsilon, axis */
    VKL_OP_SILU_MUL,   /* (gate, up): silu(gate) * up */
    VKL_OP_ROPE,       /* (x, cos, sin) attr interleaved */
    VKL_OP_ATTENTION,  /* (q, k, v, mask?) attrs scale, causal, window, kv_layout */
    VKL_OP_KV_APPEND,  /* (state, x, position_ids) -> state, in place */
    VKL_OP_QUANT_MAT_MUL, /* (A [..., K], W [N, K] quantized or f32/f16/bf16, bias? [N]) -> [..., N] */
    VKL_OP_COUNT_
} vkl_op;

typedef struct vkl_attr_schema {
    const char *name;
    vkl_attr_kind kind;
    bool required;
    int64_t def_i;     /* default for INT */
    float def_f;       /* default for FLOAT */
    const char *def_s; /* default for STRING */
    /* INTS/FLOATS default to empty; TENSOR has no default. */
} vkl_attr_schema;

/* A shape rule reads the node's input tensors (dtype, shape, and value where
 * known) and attributes, and sets every present output's dtype and shape, and
 * its value when the op is integer arithmetic on known values. It reports
 * errors with vkl_fail naming the op and the offending input/attribute; the
 * caller prefixes the node's identity. */
typedef vkl_status (*vkl_shape_rule)(vkl_graph *g, uint32_t node);

#define VKL_VARIADIC 255

typedef struct vkl_op_info {
    const char *name;   /* ONNX op_type, or the fused op's name */
    const char *domain; /* "" for ONNX, "vkllm" for fused ops */
    uint8_t min_inputs, max_inputs;   /* max VKL_VARIADIC: any number */
    uint8_t min_outputs, max_outputs;
    /* Output depends only on input shapes, never on their data (Shape, Size):
     * the seed of the shape-computing subgraph (Transformer-Lite §2.1). */
    bool shape_source;
    /* Output 0 is input `inplace_input` updated in place, or -1. */
    int8_t inplace_input;
    const vkl_attr_schema *attrs;
    uint8_t n_attrs;
    vkl_shape_rule infer;
} vkl_op_info;

const vkl_op_info *vkl_op_info_get(vkl_op op); /* NULL if out of range */
/* Look up by domain ("" or "ai.onnx" for ONNX, "vkllm") and name. */
bool vkl_op_find(const char *domain, const char *name, vkl_op *out);

/* For a live node whose op updates an input in place (KvAppend): the input
 * tensor whose memory output 0 takes. VKL_NONE for every other node, and
 * when output 0 or that input is absent. */
uint32_t vkl_node_inplace_input(const vkl_graph *g, uint32_t node);

/* For a live node that only re-views its input's bytes under these symbol
 * values (Reshape, Flatten, Squeeze, Unsqueeze, Identity; a Transpose that
 * moves only size-1 dims): the input, whose memory the planner gives
 * output 0; else VKL_NONE. values NULL asks "may it be one for some
 * binding" (a Transpose always may). Weights, states and shape values are
 * never viewed. A failed shape evaluation (reported to ctx) means none.
 * engine/ops/views.c. */
uint32_t vkl_node_view_input(vkl_context *ctx, const vkl_graph *g, uint32_t node, const int64_t *values,
                             size_t count);

/* Typed attribute access with the schema's default when absent. Return
 * VKL_ERR_FORMAT (message names node and attribute) if present with the
 * wrong kind, VKL_ERR_NOT_FOUND if absent and required/without default. */
vkl_status vkl_op_attr_int(const vkl_graph *g, uint32_t node, const char *name, int64_t *out);
vkl_status vkl_op_attr_float(const vkl_graph *g, uint32_t node, const char *name, float *out);
vkl_status vkl_op_attr_string(const vkl_graph *g, uint32_t node, const char *name, const char **out);
/* INTS: *out may be NULL with *count 0 when absent. */
vkl_status vkl_op_attr_ints(const vkl_graph *g, uint32_t node, const char *name, const int64_t **out,
                            uint32_t *count);
vkl_status vkl_op_attr_floats(const vkl_graph *g, uint32_t node, const char *name, const float **out,
                              uint32_t *count);

/* "node 12 'attn/Softmax' (Softmax)" for messages. */
const char *vkl_node_str(const vkl_graph *g, uint32_t node, char *buf, size_t cap);

#endif
