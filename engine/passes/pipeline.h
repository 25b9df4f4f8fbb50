/* The importer's optimization pipeline over a freshly imported graph:
 * delete shape-computing nodes, drop no-ops, merge duplicates, fuse, put
 * the KV cache in place, quantize (when a recipe asks), clean up. Each pass
 * can be turned off. */
#ifndef VKL_PASSES_PIPELINE_H
#define VKL_PASSES_PIPELINE_H

#include "../graph.h"
#include "quantize.h"

enum {
    VKL_PASS_SHAPE_OPS = 1u << 0,
    VKL_PASS_IDENTITY = 1u << 1,
    VKL_PASS_CSE = 1u << 2,
    VKL_PASS_FOLD = 1u << 3,
    VKL_PASS_FUSE_RMSNORM = 1u << 4,
    VKL_PASS_FUSE_LAYERNORM = 1u << 5,
    VKL_PASS_FUSE_GELU = 1u << 6,
    VKL_PASS_FUSE_SILU_MUL = 1u << 7,
    VKL_PASS_FUSE_ROPE = 1u << 8,
    VKL_PASS_FUSE_ATTENTION = 1u << 9,
    VKL_PASS_KV_INPLACE = 1u << 10,
    VKL_PASS_QUANTIZE = 1u << 11, /* runs only with an active recipe (vkl_pipeline_run_recipe) */
    VKL_PASS_ALL = (1u << 12) - 1
};

#define VKL_PIPELINE_MAX_STEPS 16

typedef struct vkl_pipeline_step {
    const char *name;
    uint32_t fired; /* nodes removed, merged or patterns fused */
} vkl_pipeline_step;

typedef struct vkl_pipeline_report {
    uint32_t nodes_before, nodes_after;
    uint32_t shape_ops_before, shape_ops_after; /* Transformer-Lite's shape-computing ops */
    vkl_pipeline_step steps[VKL_PIPELINE_MAX_STEPS];
    uint32_t n_steps;
    bool quantized;            /* the quantize pass ran */
    vkl_quantize_report quant; /* its counts, when it ran */
} vkl_pipeline_report;

/* Live nodes that compute shapes: Shape/Size, and nodes all of whose
 * outputs are known symbolically. */
uint32_t vkl_count_shape_ops(const vkl_graph *g);

/* Runs the enabled passes (VKL_PASS_* bits), then compacts the graph and
 * re-runs shape inference and validation. */
vkl_status vkl_pipeline_run(vkl_graph *g, uint32_t passes, vkl_pipeline_report *report);
/* The same, with an import recipe: VKL_PASS_QUANTIZE runs last (after
 * kv_inplace, before the clean-up) when the recipe is active
 * (vkl_quant_recipe_active); recipe NULL is vkl_pipeline_run. */
vkl_status vkl_pipeline_run_recipe(vkl_graph *g, uint32_t passes, const vkl_quant_recipe *recipe,
                                   vkl_pipeline_report *report);
/* The same, the quantize pass run with `quant` (threads, release and
 * progress hooks; NULL: defaults). */
vkl_status vkl_pipeline_run_opts(vkl_graph *g, uint32_t passes, const vkl_quant_recipe *recipe,
                                 const vkl_quantize_options *quant, vkl_pipeline_report *report);

#endif
