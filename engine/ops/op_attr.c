/* Typed attribute access with the op schema's defaults, and node names for
 * messages. */
#include <stdio.h>
#include <string.h>

#include "../ops.h"

const char *vkl_node_str(const vkl_graph *g, uint32_t node, char *buf, size_t cap) {
    if (node >= g->n_nodes) {
        snprintf(buf, cap, "node %u (out of range)", node);
        return buf;
    }
    const vkl_node *n = &g->nodes[node];
    const vkl_op_info *info = vkl_op_info_get((vkl_op)n->op);
    snprintf(buf, cap, "node %u '%s' (%s)", node, n->name ? n->name : "", info ? info->name : "?");
    return buf;
}

static const vkl_attr_schema *schema_of(const vkl_graph *g, uint32_t node, const char *name) {
    const vkl_op_info *info = vkl_op_info_get((vkl_op)g->nodes[node].op);
    if (!info) return NULL;
    for (uint32_t i = 0; i < info->n_attrs; i++)
        if (!strcmp(info->attrs[i].name, name)) return &info->attrs[i];
    return NULL;
}

/* The attribute if present with the right kind; *schema for defaults. */
static vkl_status lookup(const vkl_graph *g, uint32_t node, const char *name, vkl_attr_kind kind,
                         const vkl_attr **attr, const vkl_attr_schema **schema) {
    char buf[160];
    if (node >= g->n_nodes) return vkl_fail(g->ctx, VKL_ERR_INVALID_ARGUMENT, "node %u out of range", node);
    *schema = schema_of(g, node, name);
    *attr = vkl_node_attr(&g->nodes[node], name);
    if (*attr && (*attr)->kind != kind)
        return vkl_fail(g->ctx, VKL_ERR_FORMAT, "%s: attribute '%s' has the wrong kind",
                        vkl_node_str(g, node, buf, sizeof(buf)), name);
    if (!*attr && (!*schema || (*schema)->required))
        return vkl_fail(g->ctx, VKL_ERR_NOT_FOUND, "%s: attribute '%s' is missing",
                        vkl_node_str(g, node, buf, sizeof(buf)), name);
    return VKL_OK;
}

vkl_status vkl_op_attr_int(const vkl_graph *g, uint32_t node, const char *name, int64_t *out) {
    const vkl_attr *a;
    const vkl_attr_schema *s;
    vkl_status st = lookup(g, node, name, VKL_ATTR_INT, &a, &s);
    if (!st) *out = a ? a->i : s->def_i;
    return st;
}

vkl_status vkl_op_attr_float(const vkl_graph *g, uint32_t node, const char *name, float *out) {
    const vkl_attr *a;
    const vkl_attr_schema *s;
    vkl_status st = lookup(g, node, name, VKL_ATTR_FLOAT, &a, &s);
    if (!st) *out = a ? a->f : s->def_f;
    return st;
}

vkl_status vkl_op_attr_string(const vkl_graph *g, uint32_t node, const char *name, const char **out) {
    const vkl_attr *a;
    const vkl_attr_schema *s;
    vkl_status st = lookup(g, node, name, VKL_ATTR_STRING, &a, &s);
    if (!st) *out = a ? a->s : (s->def_s ? s->def_s : "");
    return st;
}

vkl_status vkl_op_attr_ints(const vkl_graph *g, uint32_t node, const char *name, const int64_t **out,
                            uint32_t *count) {
    const vkl_attr *a;
    const vkl_attr_schema *s;
    vkl_status st = lookup(g, node, name, VKL_ATTR_INTS, &a, &s);
    if (!st) {
        *out = a ? a->ints : NULL;
        *count = a ? a->count : 0;
    }
    return st;
}

vkl_status vkl_op_attr_floats(const vkl_graph *g, uint32_t node, const char *name, const float **out,
                              uint32_t *count) {
    const vkl_attr *a;
    const vkl_attr_schema *s;
    vkl_status st = lookup(g, node, name, VKL_ATTR_FLOATS, &a, &s);
    if (!st) {
        *out = a ? a->floats : NULL;
        *count = a ? a->count : 0;
    }
    return st;
}
