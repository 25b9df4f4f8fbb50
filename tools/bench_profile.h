/* vkbench --profile: where a step's time goes, per op type. Each node's
 * device time (the backend's timestamps) beside the bytes it must move and
 * the FLOPs it must do at the step's bound shape, so each op type can be set
 * against the measured copy bandwidth (a roofline). */
#ifndef VKL_TOOLS_BENCH_PROFILE_H
#define VKL_TOOLS_BENCH_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph.h"
#include "ops.h"
#include "vkllm.h"

/* One op type, summed over the profiled steps. */
typedef struct vkl_bench_op_sum {
    double calls; /* live nodes run */
    double ms;    /* device time (0 without timestamps) */
    double bytes; /* weights + activations read and written */
    double flops;
} vkl_bench_op_sum;

typedef struct vkl_bench_profile {
    const char *phase;  /* "decode" or "prefill" */
    const vkl_graph *g; /* the graph the steps ran (a prefill's: the model's one-row graph where it has one) */
    bool timed;         /* node times were recorded (else costs only) */
    size_t steps;
    double step_ms;     /* host clock around the steps, summed */
    double op_ms;       /* node times, summed */
    vkl_bench_op_sum ops[VKL_OP_COUNT_];
    uint32_t *order;    /* live nodes, the order node times come in */
    uint32_t n_order;
    double *times;      /* one step's node times */
    double *node_ms;    /* node times summed, per entry of order */
} vkl_bench_profile;

/* How many of the slowest nodes the table and the JSON name. */
#define VKL_BENCH_TOP_NODES 5

/* For graph g, the one the profiled steps run (vkl_session_last_graph);
 * timed: read node times after each step (the model must be loaded
 * profiled). */
vkl_status vkl_bench_profile_init(vkl_context *ctx, const vkl_graph *g, const char *phase, bool timed,
                                  vkl_bench_profile *p);
void vkl_bench_profile_free(vkl_bench_profile *p);

/* Adds the session's last step (its binding, and its node times when
 * timed), which took `seconds` by the host clock; it must have run p->g. */
vkl_status vkl_bench_profile_add(vkl_bench_profile *p, vkl_context *ctx, vkl_session *s, double seconds);

/* Bytes and FLOPs of one step, over every op type (mean of the steps). */
void vkl_bench_profile_totals(const vkl_bench_profile *p, double *bytes, double *flops);

/* The per-op table, per step, against copy bandwidth copy_bw (bytes/s),
 * and the slowest nodes. */
void vkl_bench_profile_print(const vkl_bench_profile *p, double copy_bw);

/* Op types in the order the table lists them (most time first, then most
 * bytes); returns how many were run. `types` holds VKL_OP_COUNT_ entries. */
size_t vkl_bench_profile_sorted(const vkl_bench_profile *p, vkl_op *types);

/* The slowest nodes, at most VKL_BENCH_TOP_NODES: indexes into p->order,
 * most time first; returns how many. */
size_t vkl_bench_profile_top_nodes(const vkl_bench_profile *p, uint32_t *top);

/* A node's name for the reader ("(unnamed)" for none). */
const char *vkl_bench_node_name(const vkl_node *n);

/* What the table and the JSON say about the compute limit. */
#define VKL_BENCH_NO_PEAK                                                                                      \
    "compute peak: the table sets every op against copy bandwidth only (the prefill line, where a peak was "  \
    "measured, against that), so a compute-bound op shows a low share"

#endif
