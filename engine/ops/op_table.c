/* The op table: one vkl_op_info per op, defined beside its shape rule in
 * engine/ops/<family>.c as `vkl_op_info_<name>`, gathered here by enum. */
#include <string.h>

#include "../op_list.h"
#include "../ops.h"

/* Weak while the op families are being filled in: a missing op then shows
 * as NULL here (and fails validation) instead of failing the link. */
#define VKL_DECLARE_INFO(E, n) extern const vkl_op_info vkl_op_info_##n;
VKL_OP_LIST(VKL_DECLARE_INFO)

#define VKL_INFO_ENTRY(E, n) [VKL_OP_##E] = &vkl_op_info_##n,
static const vkl_op_info *const table[VKL_OP_COUNT_] = {VKL_OP_LIST(VKL_INFO_ENTRY)};

const vkl_op_info *vkl_op_info_get(vkl_op op) {
    if ((unsigned)op >= VKL_OP_COUNT_) return NULL;
    return table[op];
}

uint32_t vkl_node_inplace_input(const vkl_graph *g, uint32_t node) {
    const vkl_node *n = &g->nodes[node];
    const vkl_op_info *info = vkl_op_info_get((vkl_op)n->op);
    if (n->dead || !info || info->inplace_input < 0 || !n->n_outputs || n->outputs[0] == VKL_NONE ||
        (uint32_t)info->inplace_input >= n->n_inputs)
        return VKL_NONE;
    return n->inputs[info->inplace_input];
}

bool vkl_op_find(const char *domain, const char *name, vkl_op *out) {
    bool onnx = !domain || !*domain || !strcmp(domain, "ai.onnx");
    for (unsigned i = 0; i < VKL_OP_COUNT_; i++) {
        const vkl_op_info *info = table[i];
        if (!info || strcmp(info->name, name)) continue;
        if (onnx ? *info->domain != 0 : strcmp(info->domain, domain)) continue;
        *out = (vkl_op)i;
        return true;
    }
    return false;
}
