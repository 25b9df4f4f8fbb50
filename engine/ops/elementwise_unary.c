/* Table entries and shape rules of the one-input elementwise ops (math,
 * activations, Not, Clip, Identity, Dropout): the output has the input's
 * shape; Neg, Abs, Identity and Dropout pass known integer values on. */
#include <string.h>

#include "elementwise.h"
#include "op_defs.h"

typedef enum unary_value { U_NONE, U_IDENTITY, U_NEG, U_ABS } unary_value;

/* |a| when a's sign is provable (constants, or an order against 0). */
static vkl_status value_abs(vkl_symtab *t, vkl_expr a, vkl_expr zero, vkl_expr *out, bool *known) {
    int64_t c;
    *known = true;
    if (vkl_expr_is_const(t, a, &c)) {
        *known = c != INT64_MIN;
        return *known ? vkl_expr_const(t, c < 0 ? -c : c, out) : VKL_OK;
    }
    vkl_sym_order o = vkl_expr_compare(t, a, zero);
    if (o == VKL_SYM_GE || o == VKL_SYM_GT || o == VKL_SYM_EQ) {
        *out = a;
        return VKL_OK;
    }
    if (o == VKL_SYM_LE || o == VKL_SYM_LT) return vkl_expr_sub(t, zero, a, out);
    *known = false;
    return VKL_OK;
}

/* Output 0's value from input 0's, element by element. */
static vkl_status propagate_unary(vkl_graph *g, uint32_t node, unary_value op) {
    const vkl_tensor *o = vkl_node_out(g, node, 0);
    vkl_expr v[VKL_MAX_VALUE_ELEMS], zero;
    uint32_t count;
    if (op == U_NONE || !o || !vkl_ew_value_slots(g, o->dtype, &o->shape, &count)) return VKL_OK;
    if (!vkl_ew_value_broadcast(g, vkl_node_in(g, node, 0), &o->shape, v)) return VKL_OK;
    vkl_status st = vkl_expr_const(g->syms, 0, &zero);
    for (uint32_t i = 0; !st && i < count; i++) {
        bool known = true;
        if (op == U_NEG) st = vkl_expr_sub(g->syms, zero, v[i], &v[i]);
        else if (op == U_ABS) st = value_abs(g->syms, v[i], zero, &v[i], &known);
        if (!st && !known) return VKL_OK;
    }
    if (st) return vkl_ew_value_status(st);
    return vkl_node_set_value(g, node, 0, v, count);
}

typedef struct unary_spec {
    unsigned dtypes;
    unary_value vop;
} unary_spec;

static unary_spec spec_of(vkl_op op) {
    switch (op) {
    case VKL_OP_NEG: return (unary_spec){VKL_EW_FLOAT | VKL_EW_SINT, U_NEG};
    case VKL_OP_ABS: return (unary_spec){VKL_EW_NUM, U_ABS};
    case VKL_OP_RELU: return (unary_spec){VKL_EW_FLOAT | VKL_EW_SINT, U_NONE};
    case VKL_OP_NOT: return (unary_spec){VKL_EW_BOOL, U_NONE};
    case VKL_OP_IDENTITY: return (unary_spec){VKL_EW_ALL, U_IDENTITY};
    /* Erf: ONNX also lists integer types; a rounded erf of an integer is
     * meaningless and no exporter emits it, so only floats. */
    default: return (unary_spec){VKL_EW_FLOAT, U_NONE};
    }
}

/* Output 0 = input 0's dtype and shape. */
static vkl_status unary_rule(vkl_graph *g, uint32_t node) {
    unary_spec sp = spec_of((vkl_op)g->nodes[node].op);
    const vkl_tensor *x;
    vkl_status st = vkl_ew_input(g, node, 0, sp.dtypes, &x);
    if (!st) st = vkl_node_set_out(g, node, 0, x->dtype, &x->shape);
    if (!st) st = propagate_unary(g, node, sp.vop);
    return st;
}

static vkl_status gelu_rule(vkl_graph *g, uint32_t node) {
    const char *approx;
    vkl_status st = vkl_op_attr_string(g, node, "approximate", &approx);
    if (st) return st;
    if (strcmp(approx, "none") && strcmp(approx, "tanh"))
        return vkl_fail(g->ctx, VKL_ERR_FORMAT, "Gelu: attribute approximate is '%s'; ONNX allows 'none' or 'tanh'",
                        approx);
    return unary_rule(g, node);
}

/* An optional input that must hold one element of `like`'s dtype (or of
 * `set` when like is NULL); its run-time element count is checked again by
 * the kernel when the shape is symbolic. */
static vkl_status scalar_input(vkl_graph *g, uint32_t node, uint32_t k, const char *what, const vkl_tensor *like,
                               unsigned set) {
    const vkl_tensor *t = vkl_node_in(g, node, k);
    const vkl_op_info *info = vkl_op_info_get((vkl_op)g->nodes[node].op);
    int64_t n;
    char buf[128];
    if (!t) return VKL_OK;
    vkl_status st = like ? vkl_ew_same_dtype(g, node, like, t, k) : vkl_ew_input(g, node, k, set, &t);
    if (st) return st;
    if (vkl_shape_const_numel(g, &t->shape, &n) && n != 1)
        return vkl_fail(g->ctx, VKL_ERR_SHAPE, "%s: input %u (%s) must be a scalar; it has shape %s", info->name, k,
                        what, vkl_shape_str(g, &t->shape, buf, sizeof(buf)));
    return VKL_OK;
}

/* Clip(input, min?, max?): the bounds are optional scalars of input's dtype. */
static vkl_status clip_rule(vkl_graph *g, uint32_t node) {
    const vkl_tensor *x;
    vkl_status st = vkl_ew_input(g, node, 0, VKL_EW_NUM, &x);
    if (!st) st = scalar_input(g, node, 1, "min", x, 0);
    if (!st) st = scalar_input(g, node, 2, "max", x, 0);
    if (!st) st = vkl_node_set_out(g, node, 0, x->dtype, &x->shape);
    return st;
}

/* Dropout(data, ratio?, training_mode?) -> (output, mask?): inference only.
 * A constant training_mode = true with a non-zero ratio fails here already;
 * the kernel checks run-time values. */
static vkl_status dropout_rule(vkl_graph *g, uint32_t node) {
    const vkl_tensor *x, *ratio = vkl_node_in(g, node, 1), *training = vkl_node_in(g, node, 2);
    vkl_status st = vkl_ew_input(g, node, 0, VKL_EW_FLOAT | VKL_EW_FP8, &x);
    if (!st) st = scalar_input(g, node, 1, "ratio", NULL, VKL_EW_FLOAT);
    if (!st) st = scalar_input(g, node, 2, "training_mode", NULL, VKL_EW_BOOL);
    if (st) return st;
    double train = 0, r = 0.5;
    if (training && vkl_tensor_const_scalar(training, 0, &train) && train != 0 &&
        (!ratio || (vkl_tensor_const_scalar(ratio, 0, &r) && r != 0)))
        return vkl_fail(g->ctx, VKL_ERR_UNSUPPORTED, "Dropout: training_mode is true with ratio %g; only inference "
                        "(or ratio 0) is supported", r);
    st = vkl_node_set_out(g, node, 0, x->dtype, &x->shape);
    if (!st) st = vkl_node_set_out(g, node, 1, VKL_DTYPE_BOOL, &x->shape);
    if (!st) st = propagate_unary(g, node, U_IDENTITY);
    return st;
}

static const vkl_attr_schema gelu_attrs[] = {
    {.name = "approximate", .kind = VKL_ATTR_STRING, .required = false, .def_s = "none"},
};
/* seed has no ONNX default and is never read: inference does not draw. */
static const vkl_attr_schema dropout_attrs[] = {
    {.name = "seed", .kind = VKL_ATTR_INT, .required = false},
};

#define EW_UNARY(cname, op_type, max_in, max_out, attr_table, n_attr, rule)                                    \
    const vkl_op_info vkl_op_info_##cname = {.name = op_type, .domain = "", .min_inputs = 1,                   \
                                             .max_inputs = max_in, .min_outputs = 1, .max_outputs = max_out,   \
                                             .shape_source = false, .inplace_input = -1, .attrs = attr_table,  \
                                             .n_attrs = n_attr, .infer = rule};

EW_UNARY(sqrt, "Sqrt", 1, 1, NULL, 0, unary_rule)
EW_UNARY(reciprocal, "Reciprocal", 1, 1, NULL, 0, unary_rule)
EW_UNARY(neg, "Neg", 1, 1, NULL, 0, unary_rule)
EW_UNARY(abs, "Abs", 1, 1, NULL, 0, unary_rule)
EW_UNARY(exp, "Exp", 1, 1, NULL, 0, unary_rule)
EW_UNARY(log, "Log", 1, 1, NULL, 0, unary_rule)
EW_UNARY(cos, "Cos", 1, 1, NULL, 0, unary_rule)
EW_UNARY(sin, "Sin", 1, 1, NULL, 0, unary_rule)
EW_UNARY(erf, "Erf", 1, 1, NULL, 0, unary_rule)
EW_UNARY(tanh, "Tanh", 1, 1, NULL, 0, unary_rule)
EW_UNARY(sigmoid, "Sigmoid", 1, 1, NULL, 0, unary_rule)
EW_UNARY(relu, "Relu", 1, 1, NULL, 0, unary_rule)
EW_UNARY(gelu, "Gelu", 1, 1, gelu_attrs, 1, gelu_rule)
EW_UNARY(not, "Not", 1, 1, NULL, 0, unary_rule)
EW_UNARY(clip, "Clip", 3, 1, NULL, 0, clip_rule)
EW_UNARY(identity, "Identity", 1, 1, NULL, 0, unary_rule)
EW_UNARY(dropout, "Dropout", 3, 2, dropout_attrs, 1, dropout_rule)
