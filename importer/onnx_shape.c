/* Declared types of graph inputs -> dtype and symbolic shape: dim_value is a
 * constant, dim_param an expression ("past + seq") or a symbol, a missing
 * dim a fresh symbol named after the tensor and axis. */
#include <stdio.h>
#include <string.h>

#include "onnx_internal.h"

/* dim_params longer or more nested than this are taken as names: the
 * expression parser recurses, and no real export writes such expressions. */
#define DIM_EXPR_MAX_LEN 200
#define DIM_EXPR_MAX_DEPTH 8

static bool is_word(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static uint32_t fnv1a(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

void onnx_symbol_name(const char *text, char *out) {
    size_t n = 0, len = strlen(text);
    bool prefix = !*text || (text[0] >= '0' && text[0] <= '9');
    if (prefix) out[n++] = '_';
    for (const char *p = text; *p && n < VKL_SYM_NAME_MAX; p++) out[n++] = is_word(*p) ? *p : '_';
    out[n] = 0;
    /* Truncated: a hash of the whole text keeps distinct names distinct. */
    if (len + prefix > VKL_SYM_NAME_MAX) snprintf(out + VKL_SYM_NAME_MAX - 9, 10, "_%08x", fnv1a(text));
}

/* "batch-size" is a name with a dash, not batch minus size: a '-' with a
 * word character on both sides. Exporters write expressions with spaces
 * ("past + seq", "s0 - 1") or as products ("2*s0"). */
static bool parse_as_expression(const char *p) {
    size_t len = strlen(p);
    if (len > DIM_EXPR_MAX_LEN) return false;
    int depth = 0;
    for (size_t i = 0; i < len; i++) {
        if (p[i] == '(' && ++depth > DIM_EXPR_MAX_DEPTH) return false;
        if (p[i] == ')') depth--;
        if (p[i] == '-' && i > 0 && is_word(p[i - 1]) && is_word(p[i + 1])) return false;
    }
    return true;
}

static vkl_status symbol_expr(onnx_builder *b, const char *text, vkl_expr *out) {
    char name[VKL_SYM_NAME_MAX + 1];
    onnx_symbol_name(text, name);
    return vkl_expr_symbol(b->g->syms, name, out);
}

/* An expression when it parses as one, else a name. Running out of memory
 * is not "does not parse". */
static vkl_status param_expr(onnx_builder *b, const char *param, vkl_expr *out) {
    if (parse_as_expression(param)) {
        vkl_status st = vkl_expr_parse(b->g->syms, param, out);
        if (st == VKL_OK || st == VKL_ERR_OUT_OF_MEMORY) return st;
    }
    return symbol_expr(b, param, out);
}

static vkl_status dim_expr(onnx_builder *b, const char *tensor, uint32_t axis,
                           const Onnx__TensorShapeProto__Dimension *d, vkl_expr *out) {
    if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && d->dim_value >= 0)
        return vkl_expr_const(b->g->syms, d->dim_value, out);
    if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && d->dim_param && *d->dim_param)
        return param_expr(b, d->dim_param, out);
    /* Unknown (or a negative dim_value, which some tools write for
     * "unknown"): a symbol of its own, bound from the input at run time. */
    size_t len = strlen(tensor) + 32;
    char *text = vkl_malloc(b->ctx, len);
    if (!text) return VKL_ERR_OUT_OF_MEMORY;
    snprintf(text, len, "unk__%s_%u", tensor, axis);
    vkl_status st = symbol_expr(b, text, out);
    vkl_free(b->ctx, text);
    return st;
}

vkl_status onnx_value_info_type(onnx_builder *b, const Onnx__ValueInfoProto *vi, vkl_dtype *dtype,
                                vkl_shape *shape) {
    const char *name = onnx_str(vi->name);
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
        return vkl_fail(b->ctx, VKL_ERR_UNSUPPORTED,
                        "graph input '%s' is not a tensor (sequence, map, optional and sparse inputs are not "
                        "supported)",
                        name);
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    if (!tt->has_elem_type || !onnx_dtype_to_vkl(tt->elem_type, dtype))
        return vkl_fail(b->ctx, VKL_ERR_UNSUPPORTED,
                        "graph input '%s' has element type %s (%d), which is not supported", name,
                        onnx_dtype_name(tt->elem_type), (int)tt->elem_type);
    if (!tt->shape)
        return vkl_fail(b->ctx, VKL_ERR_UNSUPPORTED, "graph input '%s' declares no shape (its rank is unknown)", name);
    if (tt->shape->n_dim > VKL_MAX_RANK)
        return vkl_fail(b->ctx, VKL_ERR_UNSUPPORTED, "graph input '%s' has rank %zu; at most %d is supported", name,
                        tt->shape->n_dim, VKL_MAX_RANK);
    memset(shape, 0, sizeof(*shape));
    shape->rank = (uint32_t)tt->shape->n_dim;
    for (uint32_t d = 0; d < shape->rank; d++) {
        vkl_status st = dim_expr(b, name, d, tt->shape->dim[d], &shape->dims[d]);
        if (st) return vkl_fail_prefix(b->ctx, st, "graph input '%s' dim %u", name, d);
    }
    return VKL_OK;
}
