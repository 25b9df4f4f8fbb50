/* Older-opset forms rewritten to the newest ONNX form the IR uses:
 * attributes that later became inputs turn into i64/f32 weight inputs,
 * opset-dependent defaults are made explicit, and pre-13 Softmax's 2-D
 * coercion is expanded into Flatten -> Softmax -> Reshape(Shape(x)). */
#include <stdio.h>
#include <string.h>

#include "onnx_internal.h"

typedef vkl_status (*rewrite_fn)(onnx_builder *b, onnx_node *n, bool *done);

/* The attribute `name` if present with type `type` (consumed), NULL if
 * absent; a wrong type is an error. */
static vkl_status take_attr(onnx_builder *b, onnx_node *n, const char *name, Onnx__AttributeProto__AttributeType type,
                            const Onnx__AttributeProto **out) {
    uint32_t i;
    *out = onnx_attr_get(n, name, &i);
    if (!*out) return VKL_OK;
    if (onnx_attr_type(*out) != type)
        return onnx_node_fail(b, n, VKL_ERR_FORMAT, "attribute '%s' is %s; opset %lld expects %s", name,
                              onnx_attr_type_name(onnx_attr_type(*out)), (long long)n->opset,
                              onnx_attr_type_name(type));
    n->consumed[i] = true;
    return VKL_OK;
}

static bool has_input(const onnx_node *n, uint32_t k) { return k < n->n_inputs && n->inputs[k] != VKL_NONE; }

/* INTS attribute -> 1-D i64 weight at input k. */
static vkl_status ints_to_input(onnx_builder *b, onnx_node *n, const char *attr, uint32_t k, bool required) {
    const Onnx__AttributeProto *ap;
    vkl_status st = take_attr(b, n, attr, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS, &ap);
    if (st) return st;
    if (!ap && required)
        return onnx_node_fail(b, n, VKL_ERR_FORMAT, "attribute '%s' is required at opset %lld", attr,
                              (long long)n->opset);
    if (!ap) return VKL_OK;
    if (has_input(n, k))
        return onnx_node_fail(b, n, VKL_ERR_FORMAT, "'%s' is given both as an attribute and as input %u", attr, k);
    char suffix[64], base[32];
    snprintf(suffix, sizeof(suffix), "::%s", attr);
    uint32_t id;
    st = onnx_add_i64_weight(b, onnx_node_base(n, base, sizeof(base)), suffix, ap->ints, ap->n_ints, false, &id);
    if (st) return st;
    return onnx_set_input(b, n, k, id);
}

static vkl_status float_to_input(onnx_builder *b, onnx_node *n, const char *attr, uint32_t k) {
    const Onnx__AttributeProto *ap;
    vkl_status st = take_attr(b, n, attr, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, &ap);
    if (st || !ap) return st;
    char suffix[64], base[32];
    snprintf(suffix, sizeof(suffix), "::%s", attr);
    vkl_shape scalar = {0};
    uint32_t id;
    st = onnx_add_weight(b, onnx_node_base(n, base, sizeof(base)), suffix, VKL_DTYPE_F32, &scalar, &ap->f,
                         sizeof(float), true, &id);
    if (st) return st;
    return onnx_set_input(b, n, k, id);
}

static vkl_status push_int(onnx_builder *b, onnx_node *n, const char *name, int64_t v) {
    vkl_attr a = {.name = name, .kind = VKL_ATTR_INT, .i = v};
    return onnx_push_attr(b, n, &a);
}

/* Squeeze/Unsqueeze < 13, ReduceSum < 13, ReduceMean/ReduceMax < 18. */
static vkl_status axes_to_input(onnx_builder *b, onnx_node *n, bool *done) {
    (void)done;
    return ints_to_input(b, n, "axes", 1, false);
}

static vkl_status split_to_input(onnx_builder *b, onnx_node *n, bool *done) {
    (void)done;
    return ints_to_input(b, n, "split", 1, false);
}

/* Before 18, Split without sizes splits evenly into as many parts as it has
 * outputs; 18 asks for that count in num_outputs. */
static vkl_status split_num_outputs(onnx_builder *b, onnx_node *n, bool *done) {
    (void)done;
    if (has_input(n, 1) || onnx_attr_get(n, "num_outputs", NULL)) return VKL_OK;
    return push_int(b, n, "num_outputs", n->n_outputs);
}

static vkl_status clip_to_inputs(onnx_builder *b, onnx_node *n, bool *done) {
    (void)done;
    vkl_status st = float_to_input(b, n, "min", 1);
    return st ? st : float_to_input(b, n, "max", 2);
}

static vkl_status slice_to_inputs(onnx_builder *b, onnx_node *n, bool *done) {
    (void)done;
    vkl_status st = ints_to_input(b, n, "starts", 1, true);
    if (!st) st = ints_to_input(b, n, "ends", 2, true);
    if (!st) st = ints_to_input(b, n, "axes", 3, false);
    return st;
}

static vkl_status topk_to_input(onnx_builder *b, onnx_node *n, bool *done) {
    (void)done;
    const Onnx__AttributeProto *ap;
    vkl_status st = take_attr(b, n, "k", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, &ap);
    if (st || !ap) return st;
    uint32_t id;
    char base[32];
    if ((st = onnx_add_i64_weight(b, onnx_node_base(n, base, sizeof(base)), "::k", &ap->i, 1, false, &id))) return st;
    return onnx_set_input(b, n, 1, id);
}

static vkl_status reshape_to_input(onnx_builder *b, onnx_node *n, bool *done) {
    (void)done;
    return ints_to_input(b, n, "shape", 1, false);
}

/* Cast before opset 6 named the type as a string. */
static vkl_status cast_string_to(onnx_builder *b, onnx_node *n, bool *done) {
    (void)done;
    static const struct {
        const char *name;
        int32_t onnx;
    } names[] = {{"FLOAT", 1},  {"UINT8", 2},  {"INT8", 3},    {"UINT16", 4},  {"INT16", 5},   {"INT32", 6},
                 {"INT64", 7},  {"BOOL", 9},   {"FLOAT16", 10}, {"DOUBLE", 11}, {"UINT32", 12}, {"UINT64", 13}};
    const Onnx__AttributeProto *ap = onnx_attr_get(n, "to", NULL);
    if (!ap || onnx_attr_type(ap) != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING) return VKL_OK;
    vkl_status st = take_attr(b, n, "to", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING, &ap);
    if (st) return st;
    for (size_t i = 0; i < VKL_ARRAY_LEN(names); i++) {
        vkl_dtype dt;
        if (ap->s.len == strlen(names[i].name) && !memcmp(ap->s.data, names[i].name, ap->s.len) &&
            onnx_dtype_to_vkl(names[i].onnx, &dt))
            return push_int(b, n, "to", dt);
    }
    return onnx_node_fail(b, n, VKL_ERR_UNSUPPORTED, "attribute 'to' names an element type that is not supported");
}

static vkl_status concat_axis(onnx_builder *b, onnx_node *n, bool *done) {
    (void)done;
    return onnx_attr_get(n, "axis", NULL) ? VKL_OK : push_int(b, n, "axis", 1);
}

/* Dropout before 12: `ratio` (and before 7 `is_test`) only matter when
 * training. */
static vkl_status dropout_attrs(onnx_builder *b, onnx_node *n, bool *done) {
    (void)done;
    const Onnx__AttributeProto *ap;
    vkl_status st = take_attr(b, n, "ratio", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, &ap);
    if (!st) st = take_attr(b, n, "is_test", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, &ap);
    return st;
}

/* Before 7, binary ops broadcast only with broadcast=1, aligning B at `axis`
 * when given. Without an axis that is the numpy rule restricted to a
 * suffix, so dropping the flag keeps the meaning; with one it does not. */
static vkl_status legacy_broadcast(onnx_builder *b, onnx_node *n, bool *done) {
    (void)done;
    const Onnx__AttributeProto *ap;
    vkl_status st = take_attr(b, n, "broadcast", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, &ap);
    if (st) return st;
    if (n->op != VKL_OP_GEMM && onnx_attr_get(n, "axis", NULL))
        return onnx_node_fail(b, n, VKL_ERR_UNSUPPORTED,
                              "broadcasting along 'axis' (opset %lld) has no numpy-broadcasting equivalent; re-export "
                              "with opset >= 7",
                              (long long)n->opset);
    return VKL_OK;
}

static vkl_status new_activation(onnx_builder *b, const onnx_node *n, const char *suffix, uint32_t *id) {
    char base[32];
    return onnx_add_unique_tensor(b, onnx_node_base(n, base, sizeof(base)), suffix, VKL_DTYPE_INVALID,
                                  VKL_TENSOR_ACTIVATION, NULL, id);
}

/* Softmax/LogSoftmax before 13 coerce x to 2-D at `axis` (default 1) and
 * normalize each row: exactly Flatten(axis) -> Softmax(-1) -> Reshape back.
 * axis -1 already means that. */
static vkl_status softmax_coerced(onnx_builder *b, onnx_node *n, bool *done) {
    const Onnx__AttributeProto *ap;
    vkl_status st = take_attr(b, n, "axis", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, &ap);
    int64_t axis = ap ? ap->i : 1;
    if (st || axis == -1) return st ? st : push_int(b, n, "axis", -1);
    vkl_op flatten = VKL_OP_FLATTEN, shape = VKL_OP_SHAPE, reshape = VKL_OP_RESHAPE;
    if (!vkl_op_info_get(flatten) || !vkl_op_info_get(shape) || !vkl_op_info_get(reshape))
        return onnx_node_fail(b, n, VKL_ERR_UNSUPPORTED,
                              "opset-%lld %s with axis %lld needs Flatten, Shape and Reshape, which are not supported",
                              (long long)n->opset, n->op_type, (long long)axis);
    if (n->n_inputs != 1 || n->inputs[0] == VKL_NONE || n->n_outputs != 1 || n->outputs[0] == VKL_NONE)
        return onnx_node_fail(b, n, VKL_ERR_FORMAT, "%s takes one input and gives one output", n->op_type);
    if ((st = onnx_convert_attrs(b, n))) return st; /* rejects anything besides axis */
    uint32_t flat, norm, dims;
    if ((st = new_activation(b, n, "::coerced_2d", &flat)) || (st = new_activation(b, n, "::softmax_2d", &norm)) ||
        (st = new_activation(b, n, "::shape", &dims)))
        return st;
    vkl_attr a_flat = {.name = "axis", .kind = VKL_ATTR_INT, .i = axis};
    vkl_attr a_last = {.name = "axis", .kind = VKL_ATTR_INT, .i = -1};
    uint32_t x = n->inputs[0], y = n->outputs[0], rs_in[2] = {norm, dims};
    if ((st = onnx_emit(b, n, flatten, n->name, &x, 1, &flat, 1, &a_flat, 1)) ||
        (st = onnx_emit(b, n, n->op, n->name, &flat, 1, &norm, 1, &a_last, 1)) ||
        (st = onnx_emit(b, n, shape, n->name, &x, 1, &dims, 1, NULL, 0)) ||
        (st = onnx_emit(b, n, reshape, n->name, rs_in, 2, &y, 1, NULL, 0)))
        return st;
    *done = true;
    return VKL_OK;
}

static const struct {
    vkl_op op;
    int64_t below; /* applies to opsets below this */
    rewrite_fn fn;
} rewrites[] = {
    {VKL_OP_SQUEEZE, 13, axes_to_input},
    {VKL_OP_UNSQUEEZE, 13, axes_to_input},
    {VKL_OP_REDUCE_SUM, 13, axes_to_input},
    {VKL_OP_REDUCE_MEAN, 18, axes_to_input},
    {VKL_OP_REDUCE_MAX, 18, axes_to_input},
    {VKL_OP_SPLIT, 13, split_to_input}, /* before split_num_outputs */
    {VKL_OP_SPLIT, 18, split_num_outputs},
    {VKL_OP_CLIP, 11, clip_to_inputs},
    {VKL_OP_SLICE, 10, slice_to_inputs},
    {VKL_OP_TOP_K, 10, topk_to_input},
    {VKL_OP_RESHAPE, 5, reshape_to_input},
    {VKL_OP_CAST, 6, cast_string_to},
    {VKL_OP_CONCAT, 4, concat_axis},
    {VKL_OP_DROPOUT, 12, dropout_attrs},
    {VKL_OP_SOFTMAX, 13, softmax_coerced},
    {VKL_OP_LOG_SOFTMAX, 13, softmax_coerced},
    {VKL_OP_ADD, 7, legacy_broadcast},
    {VKL_OP_SUB, 7, legacy_broadcast},
    {VKL_OP_MUL, 7, legacy_broadcast},
    {VKL_OP_DIV, 7, legacy_broadcast},
    {VKL_OP_POW, 7, legacy_broadcast},
    {VKL_OP_AND, 7, legacy_broadcast},
    {VKL_OP_OR, 7, legacy_broadcast},
    {VKL_OP_EQUAL, 7, legacy_broadcast},
    {VKL_OP_GREATER, 7, legacy_broadcast},
    {VKL_OP_LESS, 7, legacy_broadcast},
    {VKL_OP_GEMM, 7, legacy_broadcast},
};

vkl_status onnx_legacy_rewrite(onnx_builder *b, onnx_node *n, bool *done) {
    *done = false;
    for (size_t i = 0; i < VKL_ARRAY_LEN(rewrites) && !*done; i++) {
        if (rewrites[i].op != n->op || n->opset >= rewrites[i].below) continue;
        vkl_status st = rewrites[i].fn(b, n, done);
        if (st) return st;
    }
    return VKL_OK;
}

/* `consumed_inputs` (opsets < 6) was a memory-planning hint with no effect
 * on results. */
bool onnx_attr_droppable(const onnx_node *n, const char *name) {
    return n->opset < 7 && !strcmp(name, "consumed_inputs");
}
