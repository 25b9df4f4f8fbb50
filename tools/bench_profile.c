/* vkbench --profile's accounting and table (bench_profile.h).
 *
 * Bytes: every input a node reads and every output it writes, whole, at the
 * step's bound shape, in canonical bytes (vkl_tensor_eval: packed blocks with
 * their scales for quantized weights and caches). Three kinds of node move
 * less than their tensors: a view (Reshape and friends at this binding)
 * moves nothing; a Gather reads only the rows it picks (output elements, at
 * the data's bytes per element); an in-place update (KvAppend) reads its new
 * rows and writes them into the cache, never the whole cache.
 * FLOPs: 2·M·N·K for MatMul, Gemm and QuantMatMul; 2·B·H·S·T·(D + Dv) for
 * Attention (QK^T and PV; 4·S·T·D·H when Dv = D); for everything else, one
 * per element of its largest non-weight tensor (elementwise ops, norms,
 * softmax: a few per element at most, and all of them memory-bound). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_profile.h"
#include "profile.h"

vkl_status vkl_bench_profile_init(vkl_context *ctx, const vkl_graph *g, const char *phase, bool timed,
                                  vkl_bench_profile *p) {
    memset(p, 0, sizeof(*p));
    p->phase = phase;
    p->g = g;
    p->timed = timed;
    p->order = calloc(g->n_nodes ? g->n_nodes : 1, sizeof(uint32_t));
    p->times = calloc(g->n_nodes ? g->n_nodes : 1, sizeof(double));
    p->node_ms = calloc(g->n_nodes ? g->n_nodes : 1, sizeof(double));
    if (!p->order || !p->times || !p->node_ms) {
        vkl_bench_profile_free(p);
        return vkl_fail(ctx, VKL_ERR_OUT_OF_MEMORY, "profile: out of host memory");
    }
    return vkl_graph_topo_order(ctx, g, p->order, &p->n_order);
}

void vkl_bench_profile_free(vkl_bench_profile *p) {
    free(p->order);
    free(p->times);
    free(p->node_ms);
    p->order = NULL;
    p->times = p->node_ms = NULL;
}

typedef struct binding {
    const int64_t *values;
    size_t count;
} binding;

/* Tensor t at the binding: elements and bytes (0 and 0 for an absent one). */
static vkl_status eval(vkl_context *ctx, const vkl_graph *g, const binding *b, uint32_t t, double *elements,
                       double *bytes) {
    *elements = *bytes = 0;
    if (t == VKL_NONE) return VKL_OK;
    int64_t dims[VKL_MAX_RANK], n;
    size_t nb;
    vkl_status st = vkl_tensor_eval(ctx, g, t, b->values, b->count, dims, &n, &nb);
    if (!st) {
        *elements = (double)n;
        *bytes = (double)nb;
    }
    return st;
}

/* One dimension of tensor t at the binding; negative counts from the end. */
static vkl_status dim(vkl_context *ctx, const vkl_graph *g, const binding *b, uint32_t t, int axis, double *out) {
    int64_t dims[VKL_MAX_RANK], n;
    size_t nb;
    vkl_status st = vkl_tensor_eval(ctx, g, t, b->values, b->count, dims, &n, &nb);
    if (st) return st;
    int rank = (int)g->tensors[t].shape.rank;
    if (axis < 0) axis += rank;
    *out = axis >= 0 && axis < rank ? (double)dims[axis] : 1;
    return VKL_OK;
}

/* The reduction length of a matrix product: A's columns (its rows for a
 * Gemm with transA). */
static vkl_status reduction(vkl_context *ctx, const vkl_graph *g, const binding *b, uint32_t node, double *k) {
    int64_t trans_a = 0;
    vkl_status st = g->nodes[node].op == VKL_OP_GEMM ? vkl_op_attr_int(g, node, "transA", &trans_a) : VKL_OK;
    return st ? st : dim(ctx, g, b, g->nodes[node].inputs[0], trans_a ? -2 : -1, k);
}

/* Attention: 2·B·H·S·T·(D + Dv) from Q [B, H, S, D], the output [B, H, S, Dv]
 * and T, the keys' length (axis 2, or 0 in the sequence-first layout). */
static vkl_status attention_flops(vkl_context *ctx, const vkl_graph *g, const binding *b, uint32_t node,
                                  double out_elements, double *flops) {
    const vkl_node *n = &g->nodes[node];
    int64_t layout = 0;
    double d, t;
    vkl_status st = vkl_op_attr_int(g, node, "kv_layout", &layout);
    if (!st) st = dim(ctx, g, b, n->inputs[0], -1, &d);
    if (!st) st = dim(ctx, g, b, n->inputs[1], layout ? 0 : 2, &t);
    if (st) return st;
    double q_elements, q_bytes;
    st = eval(ctx, g, b, n->inputs[0], &q_elements, &q_bytes);
    *flops = 2.0 * t * (q_elements + out_elements); /* B·H·S·D + B·H·S·Dv */
    return st;
}

static vkl_status node_cost(vkl_context *ctx, const vkl_graph *g, const binding *b, uint32_t node, double *bytes,
                            double *flops) {
    const vkl_node *n = &g->nodes[node];
    *bytes = *flops = 0;
    if (vkl_node_view_input(ctx, g, node, b->values, b->count) != VKL_NONE) return VKL_OK;
    const uint32_t inplace = vkl_node_inplace_input(g, node);
    double largest = 0, out_elements = 0, e, nb;
    vkl_status st = VKL_OK;
    for (uint32_t i = 0; !st && i < n->n_outputs; i++) {
        if (inplace != VKL_NONE && i == 0) continue; /* the cache itself: counted from what is written */
        st = eval(ctx, g, b, n->outputs[i], &e, &nb);
        *bytes += nb;
        if (i == 0) out_elements = e;
        if (e > largest) largest = e;
    }
    for (uint32_t i = 0; !st && i < n->n_inputs; i++) {
        const uint32_t t = n->inputs[i];
        st = eval(ctx, g, b, t, &e, &nb);
        if (st || t == inplace) continue;
        if (n->op == VKL_OP_GATHER && i == 0 && e > 0) nb = out_elements * nb / e; /* the rows picked */
        *bytes += nb;
        if (g->tensors[t].kind != VKL_TENSOR_WEIGHT && e > largest) largest = e;
    }
    if (!st && inplace != VKL_NONE && n->n_inputs > 1) {
        /* the new rows, at the cache's bytes per element */
        double cache_elements, cache_bytes, rows, row_bytes;
        st = eval(ctx, g, b, inplace, &cache_elements, &cache_bytes);
        if (!st) st = eval(ctx, g, b, n->inputs[1], &rows, &row_bytes);
        if (!st && cache_elements > 0) *bytes += rows * cache_bytes / cache_elements;
    }
    if (st) return st;
    double k = 0;
    switch (n->op) {
    case VKL_OP_MAT_MUL:
    case VKL_OP_GEMM:
    case VKL_OP_QUANT_MAT_MUL:
        st = reduction(ctx, g, b, node, &k);
        *flops = 2.0 * out_elements * k;
        return st;
    case VKL_OP_ATTENTION:
        return attention_flops(ctx, g, b, node, out_elements, flops);
    default:
        *flops = largest;
        return VKL_OK;
    }
}

vkl_status vkl_bench_profile_add(vkl_bench_profile *p, vkl_context *ctx, vkl_session *s, double seconds) {
    const vkl_graph *g = p->g;
    binding b;
    b.values = vkl_session_last_binding(s, &b.count);
    if (!b.values) return vkl_fail(ctx, VKL_ERR_STATE, "profile: the session has run no step");
    if (vkl_session_last_graph(s) != g)
        return vkl_fail(ctx, VKL_ERR_INTERNAL, "profile: the %s step ran another graph than the profiled one", p->phase);
    size_t got = 0;
    vkl_status st = p->timed ? vkl_session_node_times(s, p->times, p->n_order, &got) : VKL_OK;
    if (!st && p->timed && got != p->n_order)
        st = vkl_fail(ctx, VKL_ERR_INTERNAL, "profile: %zu node times for %u live nodes", got, p->n_order);
    for (uint32_t k = 0; !st && k < p->n_order; k++) {
        double bytes, flops;
        st = node_cost(ctx, g, &b, p->order[k], &bytes, &flops);
        vkl_bench_op_sum *o = &p->ops[g->nodes[p->order[k]].op];
        o->calls += 1;
        o->bytes += bytes;
        o->flops += flops;
        if (p->timed) {
            p->node_ms[k] += p->times[k];
            o->ms += p->times[k];
            p->op_ms += p->times[k];
        }
    }
    if (st) return st;
    p->steps++;
    p->step_ms += seconds * 1e3;
    return VKL_OK;
}

void vkl_bench_profile_totals(const vkl_bench_profile *p, double *bytes, double *flops) {
    *bytes = *flops = 0;
    for (int op = 0; op < VKL_OP_COUNT_ && p->steps; op++) {
        *bytes += p->ops[op].bytes / (double)p->steps;
        *flops += p->ops[op].flops / (double)p->steps;
    }
}

/* Whether op type a goes before b: more time, then more bytes, then enum order. */
static bool before(const vkl_bench_profile *p, vkl_op a, vkl_op b) {
    const vkl_bench_op_sum *x = &p->ops[a], *y = &p->ops[b];
    if (x->ms != y->ms) return x->ms > y->ms;
    if (x->bytes != y->bytes) return x->bytes > y->bytes;
    return a < b;
}

size_t vkl_bench_profile_sorted(const vkl_bench_profile *p, vkl_op *types) {
    size_t n = 0;
    for (int op = 0; op < VKL_OP_COUNT_; op++) {
        if (!(p->ops[op].calls > 0)) continue;
        size_t i = n++; /* insertion sort: a few dozen types at most */
        for (; i > 0 && before(p, (vkl_op)op, types[i - 1]); i--) types[i] = types[i - 1];
        types[i] = (vkl_op)op;
    }
    return n;
}

const char *vkl_bench_node_name(const vkl_node *n) { return n->name && *n->name ? n->name : "(unnamed)"; }

size_t vkl_bench_profile_top_nodes(const vkl_bench_profile *p, uint32_t *top) {
    size_t n = 0;
    for (uint32_t k = 0; k < p->n_order; k++) {
        if (!(p->node_ms[k] > 0)) continue;
        size_t i = n < VKL_BENCH_TOP_NODES ? n++ : n; /* insertion into the kept few */
        for (; i > 0 && p->node_ms[k] > p->node_ms[top[i - 1]]; i--)
            if (i < VKL_BENCH_TOP_NODES) top[i] = top[i - 1];
        if (i < VKL_BENCH_TOP_NODES) top[i] = k;
    }
    return n;
}

void vkl_bench_profile_print(const vkl_bench_profile *p, double copy_bw) {
    if (!p->steps) return;
    const vkl_graph *g = p->g;
    const double steps = (double)p->steps, step_ms = p->step_ms / steps, op_ms = p->op_ms / steps;
    printf("%s profile: %zu step%s; per step %.3f ms by the host clock, %.3f ms in ops by the device (%.0f%%)\n",
           p->phase, p->steps, p->steps == 1 ? "" : "s", step_ms, op_ms, step_ms > 0 ? 100.0 * op_ms / step_ms : 0);
    printf("%-20s %7s %9s %6s %10s %12s %8s %9s %9s %8s\n", "op", "calls", "ms", "share", "MB", "MFLOP", "FLOP/B",
           "GB/s", "GFLOP/s", "of copy");
    vkl_op types[VKL_OP_COUNT_];
    const size_t n = vkl_bench_profile_sorted(p, types);
    for (size_t i = 0; i < n; i++) {
        const vkl_bench_op_sum *o = &p->ops[types[i]];
        const double ms = o->ms / steps, bytes = o->bytes / steps, flops = o->flops / steps;
        const double gbs = ms > 0 ? bytes / ms * 1e-6 : 0, gflops = ms > 0 ? flops / ms * 1e-6 : 0;
        printf("%-20.20s %7.6g %9.4f %5.1f%% %10.3f %12.3f %8.2f %9.2f %9.2f ", vkl_op_info_get(types[i])->name,
               o->calls / steps, ms, op_ms > 0 ? 100.0 * ms / op_ms : 0, bytes / 1e6, flops / 1e6,
               bytes > 0 ? flops / bytes : 0, gbs, gflops);
        if (copy_bw > 0 && ms > 0) printf("%7.1f%%\n", 100.0 * gbs * 1e9 / copy_bw);
        else printf("%8s\n", "-");
    }
    printf("(per step; bytes: weights + activations in and out at the bound shape; of copy: GB/s over the copy "
           "bandwidth above)\n" VKL_BENCH_NO_PEAK "\n");
    uint32_t top[VKL_BENCH_TOP_NODES];
    const size_t n_top = vkl_bench_profile_top_nodes(p, top);
    printf("slowest nodes (ms per step):\n");
    for (size_t i = 0; i < n_top; i++) {
        const vkl_node *node = &g->nodes[p->order[top[i]]];
        printf("%10.4f  %s (%s)\n", p->node_ms[top[i]] / steps, vkl_bench_node_name(node),
               vkl_op_info_get((vkl_op)node->op)->name);
    }
}
