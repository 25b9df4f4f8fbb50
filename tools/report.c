/* Summaries printed by several subcommands: op histogram, weight bytes by
 * format. */
#include <stdio.h>

#include "ops.h"
#include "report.h"

void vkl_tool_print_ops(const vkl_graph *g) {
    uint32_t counts[VKL_OP_COUNT_] = {0};
    for (uint32_t i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i].dead && g->nodes[i].op < VKL_OP_COUNT_) counts[g->nodes[i].op]++;
    printf("nodes: %u\n ", g->n_nodes);
    for (unsigned op = 0; op < VKL_OP_COUNT_; op++)
        if (counts[op]) printf(" %s=%u", vkl_op_info_get((vkl_op)op)->name, counts[op]);
    printf("\n");
}

void vkl_tool_print_weights(const vkl_graph *g) {
    uint64_t bytes[VKL_DTYPE_COUNT_] = {0}, count[VKL_DTYPE_COUNT_] = {0}, total = 0;
    for (uint32_t i = 0; i < g->n_tensors; i++) {
        const vkl_tensor *t = &g->tensors[i];
        if (t->kind != VKL_TENSOR_WEIGHT || t->dtype >= VKL_DTYPE_COUNT_) continue;
        bytes[t->dtype] += t->nbytes;
        count[t->dtype]++;
        total += t->nbytes;
    }
    printf("weights: %llu bytes\n", (unsigned long long)total);
    for (int d = 0; d < VKL_DTYPE_COUNT_; d++)
        if (count[d]) printf("  %-8s %6llu tensors %12llu bytes\n", vkl_dtype_name((vkl_dtype)d),
                             (unsigned long long)count[d], (unsigned long long)bytes[d]);
}
