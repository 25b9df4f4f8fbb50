/* Table entries and shape rules of Cast and CastLike. The IR's `to` holds a
 * vkl_dtype (the importer maps ONNX's TensorProto codes). Integer and bool
 * values pass through casts between integer types, wrapped like the data. */
#include "elementwise.h"
#include "op_defs.h"

/* A constant cast to an integer dtype: two's complement wrap, bool v != 0. */
static int64_t wrap_const(int64_t v, vkl_dtype to) {
    switch (to) {
    case VKL_DTYPE_I8: return (int8_t)(uint8_t)v;
    case VKL_DTYPE_U8: return (uint8_t)v;
    case VKL_DTYPE_I16: return (int16_t)(uint16_t)v;
    case VKL_DTYPE_U16: return (uint16_t)v;
    case VKL_DTYPE_I32: return (int32_t)(uint32_t)v;
    case VKL_DTYPE_U32: return (uint32_t)v;
    case VKL_DTYPE_BOOL: return v != 0;
    default: return v; /* i64, u64 (same bits) */
    }
}

/* Symbolic elements keep their expression (dims fit every integer type);
 * to bool they need a provable sign. */
static vkl_status cast_element(vkl_symtab *t, vkl_expr v, vkl_dtype to, vkl_expr zero, vkl_expr *out, bool *known) {
    int64_t c;
    *known = true;
    if (vkl_expr_is_const(t, v, &c)) return vkl_expr_const(t, wrap_const(c, to), out);
    if (to != VKL_DTYPE_BOOL) {
        *out = v;
        return VKL_OK;
    }
    vkl_sym_order o = vkl_expr_compare(t, v, zero);
    *known = o == VKL_SYM_GT || o == VKL_SYM_LT || o == VKL_SYM_EQ;
    return *known ? vkl_expr_const(t, o != VKL_SYM_EQ, out) : VKL_OK;
}

static vkl_status cast_value(vkl_graph *g, uint32_t node, const vkl_tensor *x, vkl_dtype to) {
    const vkl_tensor *o = vkl_node_out(g, node, 0);
    vkl_expr v[VKL_MAX_VALUE_ELEMS], zero;
    uint32_t count;
    if (!vkl_ew_dtype_in(x->dtype, VKL_EW_SINT | VKL_EW_UINT | VKL_EW_BOOL)) return VKL_OK;
    if (!o || !vkl_ew_value_slots(g, to, &o->shape, &count)) return VKL_OK;
    if (!vkl_ew_value_broadcast(g, x, &o->shape, v)) return VKL_OK;
    vkl_status st = vkl_expr_const(g->syms, 0, &zero);
    for (uint32_t i = 0; !st && i < count; i++) {
        bool known;
        st = cast_element(g->syms, v[i], to, zero, &v[i], &known);
        if (!st && !known) return VKL_OK;
    }
    if (st) return vkl_ew_value_status(st);
    return vkl_node_set_value(g, node, 0, v, count);
}

/* Output 0: input 0's shape in dtype `to`, which must be a plain type. */
static vkl_status cast_to(vkl_graph *g, uint32_t node, vkl_dtype to) {
    const vkl_tensor *x;
    vkl_status st = vkl_ew_input(g, node, 0, VKL_EW_ALL, &x);
    if (st) return st;
    if (!vkl_ew_dtype_in(to, VKL_EW_ALL))
        return vkl_fail(g->ctx, vkl_dtype_valid(to) ? VKL_ERR_UNSUPPORTED : VKL_ERR_FORMAT,
                        "%s: cannot cast to dtype %d (%s); targets are the plain element types",
                        vkl_op_info_get((vkl_op)g->nodes[node].op)->name, (int)to, vkl_dtype_name(to));
    int64_t saturate;
    if ((st = vkl_op_attr_int(g, node, "saturate", &saturate))) return st;
    if ((st = vkl_node_set_out(g, node, 0, to, &x->shape))) return st;
    return cast_value(g, node, x, to);
}

static vkl_status cast_rule(vkl_graph *g, uint32_t node) {
    int64_t to;
    vkl_status st = vkl_op_attr_int(g, node, "to", &to);
    if (st) return st;
    if (to < 0 || to > INT32_MAX) return vkl_fail(g->ctx, VKL_ERR_FORMAT, "Cast: attribute to = %lld is not a dtype", (long long)to);
    return cast_to(g, node, (vkl_dtype)to);
}

/* CastLike(input, target_type): the target's dtype; its data is not read. */
static vkl_status cast_like_rule(vkl_graph *g, uint32_t node) {
    const vkl_tensor *like;
    vkl_status st = vkl_node_require(g, node, 1, &like);
    return st ? st : cast_to(g, node, like->dtype);
}

/* saturate (opset 19) only matters for fp8 targets: out-of-range values
 * become the largest finite value instead of NaN/inf. */
static const vkl_attr_schema cast_attrs[] = {
    {.name = "saturate", .kind = VKL_ATTR_INT, .required = false, .def_i = 1},
    {.name = "to", .kind = VKL_ATTR_INT, .required = true},
};

const vkl_op_info vkl_op_info_cast = {.name = "Cast", .domain = "", .min_inputs = 1, .max_inputs = 1,
                                      .min_outputs = 1, .max_outputs = 1, .shape_source = false,
                                      .inplace_input = -1, .attrs = cast_attrs, .n_attrs = 2, .infer = cast_rule};
const vkl_op_info vkl_op_info_cast_like = {.name = "CastLike", .domain = "", .min_inputs = 2, .max_inputs = 2,
                                           .min_outputs = 1, .max_outputs = 1, .shape_source = false,
                                           .inplace_input = -1, .attrs = cast_attrs, .n_attrs = 1,
                                           .infer = cast_like_rule};
