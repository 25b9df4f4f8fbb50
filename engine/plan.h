/* Memory plan (Transformer-Lite §2.1): tensor lifetimes from the schedule,
 * buffers shared between tensors whose sizes are provably related for all
 * symbol values (the paper's subtraction/division test through
 * vkl_expr_compare), one arena laid out per binding within a capacity fixed
 * at the maximum binding. States (the KV cache) and graph inputs/outputs are
 * never shared. */
#ifndef VKL_PLAN_H
#define VKL_PLAN_H

#include "graph.h"

typedef struct vkl_plan {
    const vkl_graph *g;
    uint32_t *order;       /* live nodes, the schedule */
    uint32_t n_order;
    uint32_t *buffer_of;   /* per tensor: buffer index, VKL_NONE for weights and unused tensors */
    uint32_t *first, *last;/* per tensor: live range in schedule steps */
    vkl_expr *buffer_size; /* per buffer: bytes, symbolic */
    bool *buffer_state;    /* per buffer: holds a state (laid out first, never moves) */
    uint32_t *buffer_tensor;/* per buffer: its first tenant (a state buffer's state) */
    uint32_t n_buffers;
    size_t align;          /* buffer placement: VKL_ARENA_ALIGN, or the backend's larger need */
} vkl_plan;

typedef enum vkl_plan_mode {
    VKL_PLAN_REUSE,   /* sessions: tensors whose lives do not overlap share buffers */
    VKL_PLAN_NO_REUSE /* checks (engine/runner): every tensor its own bytes; in-place outputs and views still
                       * share their input's, as in a session, so a check runs what a session runs */
} vkl_plan_mode;

/* Making a plan interns its buffer sizes as expressions in the graph's
 * symbol table, so it is made once, when the graph is built or loaded
 * (vkl_model_load), never while sessions read the graph; the same holds for
 * vkl_plan_no_reuse_bytes and vkl_plan_verify (tools and tests). Buffers
 * are placed at multiples of `align` (0: VKL_ARENA_ALIGN; the backend's
 * vkl_arena_alignment). Reports through the graph's context. */
vkl_status vkl_plan_create(const vkl_graph *g, vkl_plan_mode mode, size_t align, vkl_plan **out);
void vkl_plan_destroy(vkl_plan *p);

/* What a layout is for: this step's symbol values, and how much room the
 * states (the KV cache) keep, whatever the step. */
typedef struct vkl_layout_binding {
    const int64_t *values;       /* this step's */
    size_t n_values;
    const int64_t *state_values; /* states sized by this binding (a session's maximum; NULL: values) */
    int64_t state_rows;          /* > 0 instead: every state keeps this many rows along its dim 0 (the
                                  * sequence), its other dims from values; a step needing more fails */
} vkl_layout_binding;

/* A state tensor's rows along its sequence dimension (dim 0) and the bytes
 * of one row, under `values`; the state named when it has no such dim or a
 * row's size overflows. */
vkl_status vkl_state_rows(vkl_context *ctx, const vkl_graph *g, uint32_t t, const int64_t *values, size_t n_values,
                          int64_t *rows, size_t *row_bytes);

/* Offsets (per tensor; SIZE_MAX, backend.h's VKL_NO_OFFSET, for weights and unused tensors) for
 * one binding; *total is the arena bytes it needs; *states_end (may be NULL)
 * the end of the states, which come first at offsets no step changes. Only
 * reads the plan and the graph, and reports to `ctx`: sessions of one model
 * lay out its one plan concurrently. */
vkl_status vkl_plan_layout(vkl_context *ctx, const vkl_plan *p, const vkl_layout_binding *b, size_t *offsets,
                           size_t *total, size_t *states_end);

/* Bytes if every tensor had its own memory, for the same binding. */
vkl_status vkl_plan_no_reuse_bytes(const vkl_plan *p, const int64_t *values, size_t n_values, size_t *total);

/* Brute-force check for one binding: no two tensors whose live ranges
 * overlap share bytes, and every tensor fits its buffer. VKL_ERR_INTERNAL
 * naming both tensors otherwise. */
vkl_status vkl_plan_verify(const vkl_plan *p, const int64_t *values, size_t n_values);

#endif
