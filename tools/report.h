/* Summaries printed by several subcommands. */
#ifndef VKL_TOOLS_REPORT_H
#define VKL_TOOLS_REPORT_H

#include "graph.h"

/* "nodes: N" and a count per op type of the live nodes. */
void vkl_tool_print_ops(const vkl_graph *g);
/* Weight bytes in total and per dtype (quantized formats included). */
void vkl_tool_print_weights(const vkl_graph *g);

#endif
