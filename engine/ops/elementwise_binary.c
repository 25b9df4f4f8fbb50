/* Table entries and shape rules of the broadcasting elementwise ops
 * (arithmetic, comparison, logic, variadic Max/Min, Where, fused SiluMul),
 * with value propagation for the integer arithmetic of shape subgraphs. */
#include "elementwise.h"
#include "op_defs.h"

/* What an op does to known values; V_NONE: values are not propagated. */
typedef enum value_op {
    V_NONE, V_ADD, V_SUB, V_MUL, V_DIV, V_MAX, V_MIN, V_EQ, V_GT, V_GE, V_LT, V_LE
} value_op;

/* Integer Div of values: ONNX truncates toward zero. Constants fold exactly;
 * a provably exact quotient is exact; a positive constant divisor gives
 * floordiv, which equals truncation for the non-negative values dims have. */
static vkl_status value_div(vkl_symtab *t, vkl_expr a, vkl_expr b, vkl_expr *out, bool *known) {
    int64_t ca, cb;
    bool ka = vkl_expr_is_const(t, a, &ca), kb = vkl_expr_is_const(t, b, &cb);
    *known = false;
    if (kb && cb == 0) return VKL_OK; /* the kernel reports it at run time */
    if (ka && kb) {
        if (ca == INT64_MIN && cb == -1) return VKL_OK;
        *known = true;
        return vkl_expr_const(t, ca / cb, out);
    }
    if (vkl_expr_divisible(t, a, b)) {
        *known = true;
        return vkl_expr_div_exact(t, a, b, out);
    }
    if (kb && cb > 0) {
        *known = true;
        return vkl_expr_floordiv(t, a, cb, out);
    }
    return VKL_OK;
}

/* Comparisons of values: 1 or 0 where the order of a and b is provable. */
static vkl_status value_compare(vkl_symtab *t, value_op op, vkl_expr a, vkl_expr b, vkl_expr *out, bool *known) {
    vkl_sym_order o = a == b ? VKL_SYM_EQ : vkl_expr_compare(t, a, b);
    bool lt = o == VKL_SYM_LT, gt = o == VKL_SYM_GT, eq = o == VKL_SYM_EQ;
    bool le = lt || eq || o == VKL_SYM_LE, ge = gt || eq || o == VKL_SYM_GE;
    int truth = -1; /* unknown */
    switch (op) {
    case V_EQ: truth = eq ? 1 : (lt || gt) ? 0 : -1; break;
    case V_GT: truth = gt ? 1 : le ? 0 : -1; break;
    case V_GE: truth = ge ? 1 : lt ? 0 : -1; break;
    case V_LT: truth = lt ? 1 : ge ? 0 : -1; break;
    case V_LE: truth = le ? 1 : gt ? 0 : -1; break;
    default: break;
    }
    *known = truth >= 0;
    return *known ? vkl_expr_const(t, truth, out) : VKL_OK;
}

/* One element of a value op; *known false when it cannot be derived. */
static vkl_status value_binary(vkl_symtab *t, value_op op, vkl_expr a, vkl_expr b, vkl_expr *out, bool *known) {
    *known = true;
    switch (op) {
    case V_ADD: return vkl_expr_add(t, a, b, out);
    case V_SUB: return vkl_expr_sub(t, a, b, out);
    case V_MUL: return vkl_expr_mul(t, a, b, out);
    case V_MAX: return vkl_expr_max(t, a, b, out);
    case V_MIN: return vkl_expr_min(t, a, b, out);
    case V_DIV: return value_div(t, a, b, out, known);
    case V_NONE: *known = false; return VKL_OK;
    default: return value_compare(t, op, a, b, out, known);
    }
}

/* Output 0's value: inputs [0, n) broadcast to it and folded left with op,
 * when every input's value is known. */
static vkl_status propagate_fold(vkl_graph *g, uint32_t node, uint32_t n, value_op op) {
    const vkl_tensor *o = vkl_node_out(g, node, 0);
    vkl_expr acc[VKL_MAX_VALUE_ELEMS], v[VKL_MAX_VALUE_ELEMS];
    uint32_t count;
    if (op == V_NONE || !o || !vkl_ew_value_slots(g, o->dtype, &o->shape, &count)) return VKL_OK;
    if (!vkl_ew_value_broadcast(g, vkl_node_in(g, node, 0), &o->shape, acc)) return VKL_OK;
    for (uint32_t k = 1; k < n; k++) {
        if (!vkl_ew_value_broadcast(g, vkl_node_in(g, node, k), &o->shape, v)) return VKL_OK;
        for (uint32_t i = 0; i < count; i++) {
            bool known;
            vkl_status st = value_binary(g->syms, op, acc[i], v[i], &acc[i], &known);
            if (st) return vkl_ew_value_status(st);
            if (!known) return VKL_OK;
        }
    }
    return vkl_node_set_value(g, node, 0, acc, count);
}

/* How each same-dtype broadcasting op types its inputs and output. */
typedef struct binary_spec {
    unsigned dtypes; /* accepted input dtypes */
    bool out_bool;   /* comparisons and logic give bool */
    value_op vop;
} binary_spec;

static binary_spec spec_of(vkl_op op) {
    switch (op) {
    case VKL_OP_ADD: return (binary_spec){VKL_EW_NUM, false, V_ADD};
    case VKL_OP_SUB: return (binary_spec){VKL_EW_NUM, false, V_SUB};
    case VKL_OP_MUL: return (binary_spec){VKL_EW_NUM, false, V_MUL};
    case VKL_OP_DIV: return (binary_spec){VKL_EW_NUM, false, V_DIV};
    case VKL_OP_MAX: return (binary_spec){VKL_EW_NUM, false, V_MAX};
    case VKL_OP_MIN: return (binary_spec){VKL_EW_NUM, false, V_MIN};
    case VKL_OP_EQUAL: return (binary_spec){VKL_EW_NUM | VKL_EW_BOOL, true, V_EQ};
    case VKL_OP_GREATER: return (binary_spec){VKL_EW_NUM, true, V_GT};
    case VKL_OP_GREATER_OR_EQUAL: return (binary_spec){VKL_EW_NUM, true, V_GE};
    case VKL_OP_LESS: return (binary_spec){VKL_EW_NUM, true, V_LT};
    case VKL_OP_LESS_OR_EQUAL: return (binary_spec){VKL_EW_NUM, true, V_LE};
    case VKL_OP_AND: case VKL_OP_OR: return (binary_spec){VKL_EW_BOOL, true, V_NONE};
    case VKL_OP_SILU_MUL: return (binary_spec){VKL_EW_FLOAT, false, V_NONE};
    default: return (binary_spec){0, false, V_NONE}; /* not an op of this rule: rejects every dtype */
    }
}

/* Every input of one dtype from the op's set, all broadcast together. */
static vkl_status same_dtype_rule(vkl_graph *g, uint32_t node) {
    binary_spec sp = spec_of((vkl_op)g->nodes[node].op);
    uint32_t n = g->nodes[node].n_inputs;
    const vkl_tensor *first, *t;
    vkl_shape s;
    vkl_status st = vkl_ew_input(g, node, 0, sp.dtypes, &first);
    for (uint32_t k = 1; !st && k < n; k++) {
        st = vkl_ew_input(g, node, k, sp.dtypes, &t);
        if (!st) st = vkl_ew_same_dtype(g, node, first, t, k);
    }
    if (!st) st = vkl_ew_broadcast(g, node, 0, n, &s);
    if (!st) st = vkl_node_set_out(g, node, 0, sp.out_bool ? VKL_DTYPE_BOOL : first->dtype, &s);
    if (!st) st = propagate_fold(g, node, n, sp.vop);
    return st;
}

/* Pow: base and exponent may differ in dtype; the result has the base's. */
static vkl_status pow_rule(vkl_graph *g, uint32_t node) {
    const vkl_tensor *base, *exponent;
    vkl_shape s;
    vkl_status st = vkl_ew_input(g, node, 0, VKL_EW_NUM, &base);
    if (!st) st = vkl_ew_input(g, node, 1, VKL_EW_NUM, &exponent);
    if (!st) st = vkl_ew_broadcast(g, node, 0, 2, &s);
    if (!st) st = vkl_node_set_out(g, node, 0, base->dtype, &s);
    return st;
}

/* Where's value: when every condition element is a constant, each output
 * element is the chosen branch's value (which must then be known). */
static vkl_status where_value(vkl_graph *g, uint32_t node) {
    const vkl_tensor *o = vkl_node_out(g, node, 0);
    vkl_expr c[VKL_MAX_VALUE_ELEMS], x[VKL_MAX_VALUE_ELEMS], y[VKL_MAX_VALUE_ELEMS];
    uint32_t count;
    if (!o || !vkl_ew_value_slots(g, o->dtype, &o->shape, &count)) return VKL_OK;
    if (!vkl_ew_value_broadcast(g, vkl_node_in(g, node, 0), &o->shape, c)) return VKL_OK;
    bool kx = vkl_ew_value_broadcast(g, vkl_node_in(g, node, 1), &o->shape, x);
    bool ky = vkl_ew_value_broadcast(g, vkl_node_in(g, node, 2), &o->shape, y);
    for (uint32_t i = 0; i < count; i++) {
        int64_t cv;
        if (!vkl_expr_is_const(g->syms, c[i], &cv) || !(cv ? kx : ky)) return VKL_OK;
        x[i] = cv ? x[i] : y[i];
    }
    return vkl_node_set_value(g, node, 0, x, count);
}

/* Where(cond, X, Y): cond bool, X and Y one dtype, three-way broadcast. */
static vkl_status where_rule(vkl_graph *g, uint32_t node) {
    const vkl_tensor *cond, *x, *y;
    vkl_shape s;
    vkl_status st = vkl_ew_input(g, node, 0, VKL_EW_BOOL, &cond);
    if (!st) st = vkl_ew_input(g, node, 1, VKL_EW_ALL, &x);
    if (!st) st = vkl_ew_input(g, node, 2, VKL_EW_ALL, &y);
    if (!st) st = vkl_ew_same_dtype(g, node, x, y, 2);
    if (!st) st = vkl_ew_broadcast(g, node, 0, 3, &s);
    if (!st) st = vkl_node_set_out(g, node, 0, x->dtype, &s);
    if (!st) st = where_value(g, node);
    return st;
}

/* None of these ops has attributes in its newest ONNX form. */
#define EW_OP(cname, op_type, op_domain, min_in, max_in, rule)                                                \
    const vkl_op_info vkl_op_info_##cname = {.name = op_type, .domain = op_domain, .min_inputs = min_in,    \
                                             .max_inputs = max_in, .min_outputs = 1, .max_outputs = 1,      \
                                             .shape_source = false, .inplace_input = -1, .attrs = NULL,     \
                                             .n_attrs = 0, .infer = rule};

EW_OP(add, "Add", "", 2, 2, same_dtype_rule)
EW_OP(sub, "Sub", "", 2, 2, same_dtype_rule)
EW_OP(mul, "Mul", "", 2, 2, same_dtype_rule)
EW_OP(div, "Div", "", 2, 2, same_dtype_rule)
EW_OP(pow, "Pow", "", 2, 2, pow_rule)
EW_OP(equal, "Equal", "", 2, 2, same_dtype_rule)
EW_OP(greater, "Greater", "", 2, 2, same_dtype_rule)
EW_OP(greater_or_equal, "GreaterOrEqual", "", 2, 2, same_dtype_rule)
EW_OP(less, "Less", "", 2, 2, same_dtype_rule)
EW_OP(less_or_equal, "LessOrEqual", "", 2, 2, same_dtype_rule)
EW_OP(and, "And", "", 2, 2, same_dtype_rule)
EW_OP(or, "Or", "", 2, 2, same_dtype_rule)
EW_OP(max, "Max", "", 1, VKL_VARIADIC, same_dtype_rule)
EW_OP(min, "Min", "", 1, VKL_VARIADIC, same_dtype_rule)
EW_OP(where, "Where", "", 3, 3, where_rule)
EW_OP(silu_mul, "SiluMul", "vkllm", 2, 2, same_dtype_rule)
