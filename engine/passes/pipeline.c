/* Pass order: no-ops first (so patterns see through casts), shape ops, CSE,
 * fusions from the innermost pattern out, the KV rewrite, quantization
 * (last: the fusions match f32 MatMuls, and the weights it converts are
 * final), then DCE. */
#include <string.h>

#include "../ops.h"
#include "passes.h"
#include "pipeline.h"

uint32_t vkl_count_shape_ops(const vkl_graph *g) {
    uint32_t count = 0;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const vkl_node *n = &g->nodes[i];
        if (n->dead) continue;
        const vkl_op_info *info = vkl_op_info_get((vkl_op)n->op);
        bool known = n->n_outputs > 0;
        for (uint32_t k = 0; k < n->n_outputs && known; k++)
            known = n->outputs[k] == VKL_NONE || g->tensors[n->outputs[k]].value != NULL;
        count += info->shape_source || known;
    }
    return count;
}

static uint32_t live_nodes(const vkl_graph *g) {
    uint32_t count = 0;
    for (uint32_t i = 0; i < g->n_nodes; i++) count += !g->nodes[i].dead;
    return count;
}

typedef vkl_status (*pass_fn)(vkl_graph *g, uint32_t *fired);

static const struct {
    uint32_t bit;
    const char *name;
    pass_fn run;
} schedule[] = {
    {VKL_PASS_IDENTITY, "identity", vkl_pass_identity},
    {VKL_PASS_SHAPE_OPS, "shape_ops", vkl_pass_shape_ops},
    {VKL_PASS_FOLD, "fold", vkl_pass_fold},
    {VKL_PASS_CSE, "cse", vkl_pass_cse},
    {VKL_PASS_FUSE_RMSNORM, "fuse_rmsnorm", vkl_pass_fuse_rmsnorm},
    {VKL_PASS_FUSE_LAYERNORM, "fuse_layernorm", vkl_pass_fuse_layernorm},
    {VKL_PASS_FUSE_GELU, "fuse_gelu", vkl_pass_fuse_gelu},
    {VKL_PASS_FUSE_SILU_MUL, "fuse_silu_mul", vkl_pass_fuse_silu_mul},
    {VKL_PASS_FUSE_ROPE, "fuse_rope", vkl_pass_fuse_rope},
    {VKL_PASS_FUSE_ATTENTION, "fuse_attention", vkl_pass_fuse_attention},
    {VKL_PASS_KV_INPLACE, "kv_inplace", vkl_pass_kv_inplace},
};

vkl_status vkl_pipeline_run(vkl_graph *g, uint32_t passes, vkl_pipeline_report *r) {
    return vkl_pipeline_run_recipe(g, passes, NULL, r);
}

vkl_status vkl_pipeline_run_recipe(vkl_graph *g, uint32_t passes, const vkl_quant_recipe *recipe,
                                   vkl_pipeline_report *r) {
    return vkl_pipeline_run_opts(g, passes, recipe, NULL, r);
}

vkl_status vkl_pipeline_run_opts(vkl_graph *g, uint32_t passes, const vkl_quant_recipe *recipe,
                                 const vkl_quantize_options *quant, vkl_pipeline_report *r) {
    memset(r, 0, sizeof(*r));
    r->nodes_before = live_nodes(g);
    r->shape_ops_before = vkl_count_shape_ops(g);
    vkl_status st = VKL_OK;
    for (size_t i = 0; !st && i < sizeof(schedule) / sizeof(schedule[0]); i++) {
        if (!(passes & schedule[i].bit)) continue;
        vkl_pipeline_step *s = &r->steps[r->n_steps++];
        s->name = schedule[i].name;
        st = schedule[i].run(g, &s->fired);
        if (st) vkl_fail_prefix(g->ctx, st, "pass %s", s->name);
    }
    if (!st && (passes & VKL_PASS_QUANTIZE) && vkl_quant_recipe_active(recipe)) {
        vkl_pipeline_step *s = &r->steps[r->n_steps++];
        s->name = "quantize";
        r->quantized = true;
        st = vkl_pass_quantize_opts(g, recipe, quant, &r->quant, &s->fired);
        if (st) vkl_fail_prefix(g->ctx, st, "pass %s", s->name);
    }
    if (!st) {
        vkl_pipeline_step *s = &r->steps[r->n_steps++];
        s->name = "dce";
        st = vkl_pass_dce(g, &s->fired);
    }
    if (!st) st = vkl_graph_compact(g);
    if (!st) st = vkl_graph_infer_shapes(g);
    if (!st) st = vkl_graph_validate(g);
    r->nodes_after = live_nodes(g);
    r->shape_ops_after = vkl_count_shape_ops(g);
    return st;
}
