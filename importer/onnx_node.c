/* ONNX nodes -> graph nodes: op lookup with errors that name the node
 * (index, name, op_type, domain, opset), inputs/outputs by name ("" is an
 * absent optional), Constant nodes folded into weights. */
#include <stdio.h>
#include <string.h>

#include "onnx_internal.h"

/* Ceilings on per-node counts: far above any real export, low enough that
 * the quadratic duplicate checks stay cheap on hostile input. */
#define MAX_NODE_IO 65535
#define MAX_NODE_ATTRS 256

static bool is_onnx_domain(const char *d) { return !*d || !strcmp(d, "ai.onnx"); }

int64_t onnx_opset_of(const onnx_builder *b, const char *domain) {
    bool onnx = is_onnx_domain(domain);
    int64_t best = -1;
    for (size_t i = 0; i < b->proto->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = b->proto->opset_import[i];
        const char *d = onnx_str(o->domain);
        if (onnx ? !is_onnx_domain(d) : strcmp(d, domain)) continue;
        if (o->version > best) best = o->version;
    }
    return best;
}

const char *onnx_node_str(const onnx_builder *b, uint32_t index, char *buf, size_t cap) {
    const Onnx__NodeProto *np = b->proto->graph->node[index];
    const char *domain = onnx_str(np->domain);
    int64_t opset = onnx_opset_of(b, domain);
    char ver[32];
    if (opset >= 0) snprintf(ver, sizeof(ver), "%lld", (long long)opset);
    else snprintf(ver, sizeof(ver), "not imported");
    snprintf(buf, cap, "node %u '%s' (op_type '%s', domain '%s', opset %s)", index, onnx_str(np->name),
             onnx_str(np->op_type), domain, ver);
    return buf;
}

const char *onnx_node_base(const onnx_node *n, char *buf, size_t cap) {
    if (n->np->n_output && n->np->output[0][0]) return n->np->output[0];
    snprintf(buf, cap, "node%u", n->index); /* unique, so made names rarely collide */
    return buf;
}

/* Prefixes the node's identity to an error from a lower layer. */
static vkl_status identified(const onnx_builder *b, const onnx_node *n, vkl_status st) {
    char who[512];
    return st ? vkl_fail_prefix(b->ctx, st, "%s", onnx_node_str(b, n->index, who, sizeof(who))) : st;
}

vkl_status onnx_emit(onnx_builder *b, const onnx_node *n, vkl_op op, const char *name, const uint32_t *inputs,
                     uint32_t n_inputs, const uint32_t *outputs, uint32_t n_outputs, const vkl_attr *attrs,
                     uint32_t n_attrs) {
    vkl_graph *g = b->g;
    if (g->n_nodes >= b->cap_onnx_index) {
        uint32_t cap = b->cap_onnx_index ? b->cap_onnx_index * 2 : 256;
        uint32_t *p = vkl_realloc_array(b->ctx, b->onnx_index, cap, sizeof(uint32_t));
        if (!p) return VKL_ERR_OUT_OF_MEMORY;
        b->onnx_index = p;
        b->cap_onnx_index = cap;
    }
    vkl_status st = vkl_graph_add_node(g, op, name, inputs, n_inputs, outputs, n_outputs, attrs, n_attrs, NULL);
    if (st) return identified(b, n, st);
    b->onnx_index[g->n_nodes - 1] = n->index;
    return VKL_OK;
}

/* ---- Constant ------------------------------------------------------------ */

static vkl_status constant_weight(onnx_builder *b, const onnx_node *n, const char *out, vkl_dtype dt,
                                  const void *data, size_t count, bool scalar) {
    vkl_shape s = {0};
    uint32_t id;
    vkl_status st = VKL_OK;
    if (!scalar) {
        s.rank = 1;
        st = vkl_expr_const(b->g->syms, (int64_t)count, &s.dims[0]);
    }
    if (!st) st = onnx_add_weight(b, out, NULL, dt, &s, data, count * vkl_dtype_size(dt), true, &id);
    return identified(b, n, st);
}

static vkl_status constant_value(onnx_builder *b, const onnx_node *n, const Onnx__AttributeProto *ap,
                                 const char *out) {
    Onnx__AttributeProto__AttributeType t = onnx_attr_type(ap);
    const char *an = onnx_str(ap->name);
    if (!strcmp(an, "value") && t == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR && ap->t) {
        vkl_dtype dt;
        vkl_shape s;
        const void *data;
        size_t nbytes;
        uint32_t id;
        vkl_status st = onnx_tensor_payload(b, ap->t, "Constant", out, &dt, &s, &data, &nbytes);
        if (!st) st = onnx_add_weight(b, out, NULL, dt, &s, data, nbytes, false, &id);
        return identified(b, n, st);
    }
    if (!strcmp(an, "value_float") && t == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)
        return constant_weight(b, n, out, VKL_DTYPE_F32, &ap->f, 1, true);
    if (!strcmp(an, "value_int") && t == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)
        return constant_weight(b, n, out, VKL_DTYPE_I64, &ap->i, 1, true);
    if (!strcmp(an, "value_floats") && t == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS)
        return constant_weight(b, n, out, VKL_DTYPE_F32, ap->floats, ap->n_floats, false);
    if (!strcmp(an, "value_ints") && t == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS)
        return constant_weight(b, n, out, VKL_DTYPE_I64, ap->ints, ap->n_ints, false);
    if (!strcmp(an, "sparse_value") || !strcmp(an, "value_string") || !strcmp(an, "value_strings"))
        return onnx_node_fail(b, n, VKL_ERR_UNSUPPORTED, "Constant attribute '%s' is not supported", an);
    return onnx_node_fail(b, n, VKL_ERR_FORMAT, "Constant attribute '%s' of type %s is not a Constant value", an,
                          onnx_attr_type_name(t));
}

/* A Constant's value becomes a weight under the output's name: no Constant
 * node is emitted. */
static vkl_status constant_node(onnx_builder *b, const onnx_node *n) {
    const Onnx__NodeProto *np = n->np;
    if (np->n_output != 1 || !np->output[0][0] || np->n_input != 0)
        return onnx_node_fail(b, n, VKL_ERR_FORMAT, "a Constant has no inputs and one named output");
    if (np->n_attribute != 1)
        return onnx_node_fail(b, n, VKL_ERR_FORMAT, "a Constant has exactly one value attribute, not %zu",
                              np->n_attribute);
    vkl_status st = constant_value(b, n, np->attribute[0], np->output[0]);
    if (!st) b->stats->constants++;
    return st;
}

/* ---- other nodes ------------------------------------------------------------ */

static void node_init(const onnx_builder *b, onnx_node *n, uint32_t index, const Onnx__NodeProto *np) {
    memset(n, 0, sizeof(*n));
    n->index = index;
    n->np = np;
    n->name = onnx_str(np->name);
    n->op_type = onnx_str(np->op_type);
    n->domain = onnx_str(np->domain);
    n->opset = onnx_opset_of(b, n->domain);
}

static void node_free(const onnx_builder *b, onnx_node *n) {
    vkl_free(b->ctx, n->inputs);
    vkl_free(b->ctx, n->outputs);
    vkl_free(b->ctx, n->attrs);
    vkl_free(b->ctx, n->consumed);
}

bool onnx_is_constant(const Onnx__NodeProto *np) {
    return np->op_type && !strcmp(np->op_type, "Constant") && is_onnx_domain(onnx_str(np->domain));
}

vkl_status onnx_convert_constant(onnx_builder *b, uint32_t index, const Onnx__NodeProto *np) {
    onnx_node n;
    node_init(b, &n, index, np);
    return constant_node(b, &n);
}

/* Control flow gets its own message: "not supported" alone would hide why. */
static vkl_status check_structure(onnx_builder *b, const onnx_node *n) {
    if (!*n->op_type) return onnx_node_fail(b, n, VKL_ERR_FORMAT, "node has no op_type");
    if (n->np->n_input > MAX_NODE_IO || n->np->n_output > MAX_NODE_IO || n->np->n_attribute > MAX_NODE_ATTRS)
        return onnx_node_fail(b, n, VKL_ERR_UNSUPPORTED, "node has %zu inputs, %zu outputs and %zu attributes",
                              n->np->n_input, n->np->n_output, n->np->n_attribute);
    for (size_t i = 0; i < n->np->n_attribute; i++) {
        const Onnx__AttributeProto *ap = n->np->attribute[i];
        Onnx__AttributeProto__AttributeType t = onnx_attr_type(ap);
        if (t == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH || t == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS)
            return onnx_node_fail(b, n, VKL_ERR_UNSUPPORTED,
                                  "attribute '%s' is a subgraph; nested graphs (If, Loop, Scan) are not supported",
                                  onnx_str(ap->name));
    }
    return VKL_OK;
}

/* Only asked once an op is unknown: models carry functions they never
 * call, and the scan is per node. */
static vkl_status check_function(onnx_builder *b, const onnx_node *n) {
    const Onnx__ModelProto *m = b->proto;
    for (size_t i = 0; i < m->n_functions; i++) {
        const Onnx__FunctionProto *f = m->functions[i];
        const char *fd = onnx_str(f->domain);
        bool same_domain = is_onnx_domain(fd) ? is_onnx_domain(n->domain) : !strcmp(fd, n->domain);
        if (same_domain && f->name && !strcmp(f->name, n->op_type))
            return onnx_node_fail(b, n, VKL_ERR_UNSUPPORTED,
                                  "calls the model-local function '%s'; local functions are not supported", f->name);
    }
    return VKL_OK;
}

static vkl_status lookup_op(onnx_builder *b, onnx_node *n) {
    char who[512];
    if (!vkl_op_find(n->domain, n->op_type, &n->op) || !(n->info = vkl_op_info_get(n->op))) {
        vkl_status st = check_function(b, n);
        if (st) return st;
        return vkl_fail(b->ctx, VKL_ERR_UNSUPPORTED, "%s is not supported",
                        onnx_node_str(b, n->index, who, sizeof(who)));
    }
    if (n->opset < 0)
        return onnx_node_fail(b, n, VKL_ERR_FORMAT, "the model imports no opset for domain '%s'", n->domain);
    return VKL_OK;
}

static vkl_status map_io(onnx_builder *b, onnx_node *n) {
    const Onnx__NodeProto *np = n->np;
    n->cap_inputs = (uint32_t)np->n_input + 4;
    n->inputs = vkl_calloc(b->ctx, n->cap_inputs, sizeof(uint32_t));
    n->outputs = vkl_calloc(b->ctx, np->n_output ? np->n_output : 1, sizeof(uint32_t));
    n->consumed = vkl_calloc(b->ctx, np->n_attribute ? np->n_attribute : 1, sizeof(bool));
    if (!n->inputs || !n->outputs || !n->consumed) return VKL_ERR_OUT_OF_MEMORY;
    for (size_t k = 0; k < np->n_input; k++) {
        uint32_t id = VKL_NONE;
        vkl_status st = np->input[k][0] ? onnx_tensor_ref(b, np->input[k], &id) : VKL_OK;
        if (st) return st;
        n->inputs[n->n_inputs++] = id;
    }
    for (size_t k = 0; k < np->n_output; k++) {
        uint32_t id = VKL_NONE;
        /* registered before any node was converted (onnx_register_outputs) */
        if (np->output[k][0] && !onnx_names_get(b, np->output[k], &id))
            return onnx_node_fail(b, n, VKL_ERR_INTERNAL, "output '%s' was not registered", np->output[k]);
        n->outputs[n->n_outputs++] = id;
    }
    return VKL_OK;
}

vkl_status onnx_register_outputs(onnx_builder *b, uint32_t index, const Onnx__NodeProto *np) {
    for (size_t k = 0; k < np->n_output; k++) {
        const char *name = np->output[k];
        uint32_t id;
        if (!name[0]) continue;
        if (onnx_names_get(b, name, &id)) {
            char who[512];
            const vkl_tensor *t = &b->g->tensors[id];
            const char *what = t->kind == VKL_TENSOR_WEIGHT  ? "an initializer or Constant"
                               : t->kind == VKL_TENSOR_INPUT ? "a graph input"
                                                             : "another node's output";
            return vkl_fail(b->ctx, VKL_ERR_FORMAT, "%s writes '%s', which is already %s",
                            onnx_node_str(b, index, who, sizeof(who)), name, what);
        }
        vkl_status st = onnx_add_tensor(b, name, VKL_DTYPE_INVALID, VKL_TENSOR_ACTIVATION, NULL, &id);
        if (st) return st;
    }
    return VKL_OK;
}

/* The op table's arity and required attributes, checked here so that the
 * message names the ONNX node (validation would name the graph's). */
static vkl_status check_signature(onnx_builder *b, const onnx_node *n) {
    const vkl_op_info *info = n->info;
    if (n->n_inputs < info->min_inputs || (info->max_inputs != VKL_VARIADIC && n->n_inputs > info->max_inputs))
        return onnx_node_fail(b, n, VKL_ERR_FORMAT, "%u inputs; %s takes %u to %u", n->n_inputs, n->op_type,
                              info->min_inputs, info->max_inputs);
    if (n->n_outputs < info->min_outputs || n->n_outputs > info->max_outputs)
        return onnx_node_fail(b, n, VKL_ERR_FORMAT, "%u outputs; %s gives %u to %u", n->n_outputs, n->op_type,
                              info->min_outputs, info->max_outputs);
    for (uint32_t k = 0; k < info->n_attrs; k++) {
        if (!info->attrs[k].required) continue;
        bool found = false;
        for (uint32_t a = 0; a < n->n_attrs && !found; a++) found = !strcmp(n->attrs[a].name, info->attrs[k].name);
        if (!found)
            return onnx_node_fail(b, n, VKL_ERR_FORMAT, "required attribute '%s' is missing", info->attrs[k].name);
    }
    return VKL_OK;
}

vkl_status onnx_check_inputs_defined(onnx_builder *b) {
    const vkl_graph *g = b->g;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const vkl_node *n = &g->nodes[i];
        for (uint32_t k = 0; k < n->n_inputs; k++) {
            const vkl_tensor *t = n->inputs[k] == VKL_NONE ? NULL : &g->tensors[n->inputs[k]];
            if (!t || t->kind != VKL_TENSOR_ACTIVATION || t->producer != VKL_NONE) continue;
            char who[512];
            return vkl_fail(b->ctx, VKL_ERR_FORMAT,
                            "%s reads '%s', which no node, initializer or graph input defines",
                            onnx_node_str(b, b->onnx_index[i], who, sizeof(who)), t->name);
        }
    }
    return VKL_OK;
}

vkl_status onnx_convert_node(onnx_builder *b, uint32_t index, Onnx__NodeProto *np) {
    onnx_node n;
    node_init(b, &n, index, np);
    vkl_status st = check_structure(b, &n);
    if (!st) st = lookup_op(b, &n);
    if (!st) st = map_io(b, &n);
    bool done = false;
    if (!st) st = onnx_legacy_rewrite(b, &n, &done);
    if (!st && !done) st = onnx_convert_attrs(b, &n);
    if (!st && !done) st = check_signature(b, &n);
    if (!st && !done)
        st = onnx_emit(b, &n, n.op, n.name, n.inputs, n.n_inputs, n.outputs, n.n_outputs, n.attrs, n.n_attrs);
    node_free(b, &n);
    return st;
}
