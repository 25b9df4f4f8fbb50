/* ONNX attributes -> vkl_attr, checked against the op table's schema: an
 * attribute we do not know is an error (never silently ignored), element
 * types in attributes (Cast `to`) become vkl_dtype values, tensors become
 * weights. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "onnx_internal.h"

vkl_status onnx_node_fail(const onnx_builder *b, const onnx_node *n, vkl_status st, const char *fmt, ...) {
    char msg[VKL_ERROR_CAP], who[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return vkl_fail(b->ctx, st, "%s: %s", onnx_node_str(b, n->index, who, sizeof(who)), msg);
}

const Onnx__AttributeProto *onnx_attr_get(const onnx_node *n, const char *name, uint32_t *index) {
    for (size_t i = 0; i < n->np->n_attribute; i++) {
        const Onnx__AttributeProto *ap = n->np->attribute[i];
        if (ap->name && !strcmp(ap->name, name)) {
            if (index) *index = (uint32_t)i;
            return ap;
        }
    }
    return NULL;
}

/* IR version 1 had no `type`: infer it from the field that is set. */
Onnx__AttributeProto__AttributeType onnx_attr_type(const Onnx__AttributeProto *ap) {
    if (ap->has_type && ap->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED) return ap->type;
    if (ap->has_f) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    if (ap->has_i) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    if (ap->has_s) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    if (ap->t) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    if (ap->g) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
    if (ap->sparse_tensor) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR;
    if (ap->tp) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO;
    if (ap->n_floats) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
    if (ap->n_ints) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    if (ap->n_strings) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
    if (ap->n_tensors) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS;
    if (ap->n_graphs) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS;
    if (ap->n_sparse_tensors) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS;
    if (ap->n_type_protos) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS;
    return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED;
}

const char *onnx_attr_type_name(Onnx__AttributeProto__AttributeType t) {
    switch (t) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: return "FLOAT";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: return "INT";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: return "STRING";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: return "TENSOR";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH: return "GRAPH";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR: return "SPARSE_TENSOR";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO: return "TYPE_PROTO";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: return "FLOATS";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS: return "INTS";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: return "STRINGS";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS: return "TENSORS";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS: return "GRAPHS";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS: return "SPARSE_TENSORS";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS: return "TYPE_PROTOS";
    default: return "UNDEFINED";
    }
}

static const char *kind_name(vkl_attr_kind k) {
    static const char *const names[] = {"NONE", "INT", "FLOAT", "STRING", "INTS", "FLOATS", "TENSOR"};
    return (unsigned)k < VKL_ARRAY_LEN(names) ? names[k] : "?";
}

vkl_status onnx_push_attr(onnx_builder *b, onnx_node *n, const vkl_attr *a) {
    if (n->n_attrs == n->cap_attrs) {
        uint32_t cap = n->cap_attrs ? n->cap_attrs * 2 : 4;
        vkl_attr *p = vkl_realloc_array(b->ctx, n->attrs, cap, sizeof(vkl_attr));
        if (!p) return VKL_ERR_OUT_OF_MEMORY;
        n->attrs = p;
        n->cap_attrs = cap;
    }
    n->attrs[n->n_attrs++] = *a;
    return VKL_OK;
}

vkl_status onnx_set_input(onnx_builder *b, onnx_node *n, uint32_t k, uint32_t tensor) {
    if (k >= n->cap_inputs) {
        uint32_t *p = vkl_realloc_array(b->ctx, n->inputs, (size_t)k + 1, sizeof(uint32_t));
        if (!p) return VKL_ERR_OUT_OF_MEMORY;
        n->inputs = p;
        n->cap_inputs = k + 1;
    }
    while (n->n_inputs <= k) n->inputs[n->n_inputs++] = VKL_NONE;
    n->inputs[k] = tensor;
    return VKL_OK;
}

/* Attributes whose INT value is an ONNX element type; the IR holds a
 * vkl_dtype there. */
static bool is_dtype_attr(vkl_op op, const char *name) {
    return op == VKL_OP_CAST && !strcmp(name, "to");
}

static vkl_status string_attr(onnx_builder *b, const onnx_node *n, const Onnx__AttributeProto *ap, vkl_attr *out) {
    if (ap->s.len && memchr(ap->s.data, 0, ap->s.len))
        return onnx_node_fail(b, n, VKL_ERR_FORMAT, "string attribute '%s' contains a NUL byte", ap->name);
    char *s = vkl_arena_alloc(&b->g->arena, ap->s.len + 1);
    if (!s) return VKL_ERR_OUT_OF_MEMORY;
    if (ap->s.len) memcpy(s, ap->s.data, ap->s.len);
    s[ap->s.len] = 0;
    out->kind = VKL_ATTR_STRING;
    out->s = s;
    return VKL_OK;
}

static vkl_status tensor_attr(onnx_builder *b, const onnx_node *n, const Onnx__AttributeProto *ap, vkl_attr *out) {
    char suffix[96], base[32];
    snprintf(suffix, sizeof(suffix), "::%s", ap->name);
    uint32_t id;
    vkl_status st =
        onnx_tensor_to_weight(b, ap->t, "attribute tensor", onnx_node_base(n, base, sizeof(base)), suffix, &id);
    if (st) {
        char who[512];
        return vkl_fail_prefix(b->ctx, st, "%s attribute '%s'", onnx_node_str(b, n->index, who, sizeof(who)),
                               ap->name);
    }
    out->kind = VKL_ATTR_TENSOR;
    out->i = id;
    return VKL_OK;
}

static vkl_status convert_value(onnx_builder *b, const onnx_node *n, const Onnx__AttributeProto *ap, vkl_attr *out) {
    Onnx__AttributeProto__AttributeType t = onnx_attr_type(ap);
    memset(out, 0, sizeof(*out));
    out->name = ap->name;
    switch (t) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: out->kind = VKL_ATTR_INT, out->i = ap->i; return VKL_OK;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: out->kind = VKL_ATTR_FLOAT, out->f = ap->f; return VKL_OK;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: return string_attr(b, n, ap, out);
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
        out->kind = VKL_ATTR_INTS, out->ints = ap->ints, out->count = (uint32_t)ap->n_ints;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
        out->kind = VKL_ATTR_FLOATS, out->floats = ap->floats, out->count = (uint32_t)ap->n_floats;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR:
        if (!ap->t) break;
        return tensor_attr(b, n, ap, out);
    default:
        return onnx_node_fail(b, n, VKL_ERR_UNSUPPORTED, "attribute '%s' has type %s, which is not supported",
                              ap->name, onnx_attr_type_name(t));
    }
    if ((out->kind == VKL_ATTR_INTS && ap->n_ints > UINT32_MAX) ||
        (out->kind == VKL_ATTR_FLOATS && ap->n_floats > UINT32_MAX) || (out->kind == VKL_ATTR_NONE))
        return onnx_node_fail(b, n, VKL_ERR_FORMAT, "attribute '%s' is malformed", ap->name);
    return VKL_OK;
}

static vkl_status convert_one(onnx_builder *b, onnx_node *n, const Onnx__AttributeProto *ap,
                              const vkl_attr_schema *s) {
    vkl_attr a;
    vkl_status st = convert_value(b, n, ap, &a);
    if (st) return st;
    if (a.kind != s->kind)
        return onnx_node_fail(b, n, VKL_ERR_FORMAT, "attribute '%s' is %s; %s expects %s", ap->name,
                              kind_name(a.kind), n->op_type, kind_name(s->kind));
    if (is_dtype_attr(n->op, ap->name)) {
        vkl_dtype dt;
        if (!onnx_dtype_to_vkl((int32_t)a.i, &dt) || (int64_t)(int32_t)a.i != a.i)
            return onnx_node_fail(b, n, VKL_ERR_UNSUPPORTED,
                                  "attribute '%s' names element type %s (%lld), which is not supported",
                                  ap->name, onnx_dtype_name((int32_t)a.i), (long long)a.i);
        a.i = dt;
    }
    return onnx_push_attr(b, n, &a);
}

static const vkl_attr_schema *schema_find(const vkl_op_info *info, const char *name) {
    for (uint32_t k = 0; k < info->n_attrs; k++)
        if (!strcmp(info->attrs[k].name, name)) return &info->attrs[k];
    return NULL;
}

static vkl_status check_name(onnx_builder *b, const onnx_node *n, size_t i) {
    const Onnx__AttributeProto *ap = n->np->attribute[i];
    if (!ap->name || !*ap->name) return onnx_node_fail(b, n, VKL_ERR_FORMAT, "attribute %zu has no name", i);
    for (size_t j = 0; j < i; j++)
        if (n->np->attribute[j]->name && !strcmp(n->np->attribute[j]->name, ap->name))
            return onnx_node_fail(b, n, VKL_ERR_FORMAT, "attribute '%s' is given twice", ap->name);
    if (ap->ref_attr_name && *ap->ref_attr_name)
        return onnx_node_fail(b, n, VKL_ERR_UNSUPPORTED,
                              "attribute '%s' refers to a function attribute; functions are not supported", ap->name);
    return VKL_OK;
}

vkl_status onnx_convert_attrs(onnx_builder *b, onnx_node *n) {
    for (size_t i = 0; i < n->np->n_attribute; i++) {
        vkl_status st = check_name(b, n, i);
        if (st) return st;
        if (n->consumed[i]) continue;
        const Onnx__AttributeProto *ap = n->np->attribute[i];
        const vkl_attr_schema *s = schema_find(n->info, ap->name);
        if (!s && onnx_attr_droppable(n, ap->name)) continue;
        if (!s)
            return onnx_node_fail(b, n, VKL_ERR_UNSUPPORTED, "attribute '%s' is not supported for %s", ap->name,
                                  n->op_type);
        if ((st = convert_one(b, n, ap, s))) return st;
    }
    return VKL_OK;
}
