/* The end of a test's hand-built graph: validated and its shapes inferred
 * after the builder's own steps, the status checked (check.h's file-scope
 * counters: include check.h first). Header-only. */
#ifndef VKL_TEST_GRAPH_FINISH_H
#define VKL_TEST_GRAPH_FINISH_H

#include "graph.h"

/* g, or NULL (freed) when `st` (the builder's status so far), validation or
 * shape inference failed. */
static inline vkl_graph *test_graph_finish(vkl_context *ctx, vkl_graph *g, vkl_status st) {
    if (!st) st = vkl_graph_validate(g);
    if (!st) st = vkl_graph_infer_shapes(g);
    CHECK_OK(ctx, st);
    if (st) {
        vkl_graph_destroy(g);
        return NULL;
    }
    return g;
}

#endif
