/* The executor of the host-memory backends (ref, cpu): host buffers,
 * prepare = concrete shapes + one kernel per live node, execute = run them in
 * order, synchronously. Nothing is shared between executables or buffers but
 * the read-only graph and weights, so calls on different ones run
 * concurrently without a lock; each reports to (and allocates through) the
 * context it is given. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime (engine/clock.h), for profiling */
#include <string.h>

#include "../../engine/clock.h"
#include "host_exec.h"

struct vkl_backend_buffer {
    size_t size;
    unsigned char *data;
};

struct vkl_backend_exec {
    const vkl_graph *g;
    vkl_ref_tensor *tensors; /* per graph tensor: concrete view */
    uint32_t *order;         /* live nodes, topological */
    vkl_ref_kernel *kernels; /* per entry of order: the backend's or ref's */
    void *user;              /* the backend's state for its own kernels */
    const char *name;        /* the backend's, for messages */
    uint32_t n_order;
    vkl_ref_tensor *in, *out; /* scratch argument arrays, max arity */
    vkl_ref_scratch scratch;  /* kernels' working memory, kept across replays */
    /* Shape-value tensors (no producer), written at every execute: another
     * executable's layout may reuse their bytes between our replays. */
    uint32_t *values;
    uint32_t n_values;
    int64_t *binding;         /* the symbol values prepared for */
    size_t n_binding;
    vkl_state_traffic traffic; /* what one execute moves to/from states */
    vkl_state_traffic last;    /* of the last execute; zero before the first */
    double *node_ms;           /* profile: per entry of order, its ms in the last execute; else NULL */
    bool timed;                /* node_ms holds a completed execute's times */
    /* the memory map's uploads then downloads, as host pointers */
    struct io_copy { unsigned char *dst; const unsigned char *src; size_t bytes; } *io;
    size_t n_up, n_down;
};

vkl_status vkl_host_buffer_create(vkl_backend_device *dev, vkl_context *ctx, vkl_buffer_usage usage, size_t bytes,
                                  vkl_backend_buffer **out) {
    (void)dev;
    (void)usage;
    *out = NULL;
    vkl_backend_buffer *b = vkl_calloc(ctx, 1, sizeof(*b));
    if (!b) return VKL_ERR_OUT_OF_MEMORY;
    /* 64-byte aligned so kernels may use vector loads; +63 for the shift. */
    size_t total;
    if (!vkl_add_size(bytes, 64, &total)) {
        vkl_free(ctx, b);
        return vkl_fail(ctx, VKL_ERR_OUT_OF_MEMORY, "host buffer of %zu bytes overflows", bytes);
    }
    b->data = vkl_malloc(ctx, total);
    if (!b->data) {
        vkl_free(ctx, b);
        return VKL_ERR_OUT_OF_MEMORY;
    }
    b->size = bytes;
    *out = b;
    return VKL_OK;
}

unsigned char *vkl_host_buffer_data(const vkl_backend_buffer *b) {
    uintptr_t p = (uintptr_t)b->data;
    return (unsigned char *)((p + 63) & ~(uintptr_t)63);
}

void vkl_host_buffer_destroy(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_buffer *b) {
    (void)dev;
    if (!b) return;
    vkl_free(ctx, b->data);
    vkl_free(ctx, b);
}

static vkl_status check_range(vkl_context *ctx, const vkl_backend_buffer *b, size_t offset, size_t bytes) {
    size_t end;
    if (!vkl_add_size(offset, bytes, &end) || end > b->size)
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "host buffer access [%zu, +%zu) outside its %zu bytes",
                        offset, bytes, b->size);
    return VKL_OK;
}

vkl_status vkl_host_buffer_write(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_buffer *b, size_t offset,
                                 const void *src, size_t bytes) {
    (void)dev;
    vkl_status st = check_range(ctx, b, offset, bytes);
    if (!st && bytes) memcpy(vkl_host_buffer_data(b) + offset, src, bytes);
    return st;
}

vkl_status vkl_host_buffer_read(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_buffer *b, size_t offset,
                                void *dst, size_t bytes) {
    (void)dev;
    vkl_status st = check_range(ctx, b, offset, bytes);
    if (!st && bytes) memcpy(dst, vkl_host_buffer_data(b) + offset, bytes);
    return st;
}

void vkl_host_exec_release(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_exec *e) {
    (void)dev;
    if (!e) return;
    vkl_free(ctx, e->tensors);
    vkl_free(ctx, e->order);
    vkl_free(ctx, e->kernels);
    vkl_free(ctx, e->in);
    vkl_free(ctx, e->out);
    vkl_free(ctx, e->scratch.data);
    vkl_free(ctx, e->node_ms);
    vkl_free(ctx, e->values);
    vkl_free(ctx, e->binding);
    vkl_free(ctx, e->io);
    vkl_free(ctx, e);
}

/* Concrete view of tensor i: shape from the binding, data from the weights
 * or the arena. */
static vkl_status bind_tensor(vkl_context *ctx, const char *name, const vkl_graph *g, const vkl_memory_map *mem,
                              const vkl_binding *b, uint32_t i, vkl_ref_tensor *rt) {
    const vkl_tensor *t = &g->tensors[i];
    rt->dtype = t->dtype;
    rt->rank = t->shape.rank;
    rt->group = t->group;
    size_t bytes;
    vkl_status st = vkl_tensor_eval(ctx, g, i, b->values, b->count, rt->dims, &rt->count, &bytes);
    if (st) return vkl_fail_prefix(ctx, st, "%s", name);
    if (t->kind == VKL_TENSOR_WEIGHT) {
        if (bytes != t->nbytes)
            return vkl_fail(ctx, VKL_ERR_FORMAT, "%s: weight '%s' has %zu bytes, needs %zu", name, t->name, t->nbytes, bytes);
        rt->data = (void *)t->data; /* kernels never write inputs */
        return VKL_OK;
    }
    size_t off = i < mem->n_offsets ? mem->offsets[i] : VKL_NO_OFFSET;
    if (off == VKL_NO_OFFSET) return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "%s: tensor '%s' has no memory", name, t->name);
    if ((st = check_range(ctx, mem->arena, off, bytes))) return vkl_fail_prefix(ctx, st, "%s: tensor '%s'", name, t->name);
    rt->data = vkl_host_buffer_data(mem->arena) + off;
    return VKL_OK;
}

/* Shape tensors the importer left without a producer: write their values. */
static vkl_status materialize_value(vkl_context *ctx, const char *name, const vkl_graph *g, const vkl_binding *b,
                                    const vkl_tensor *t, vkl_ref_tensor *rt) {
    if ((int64_t)t->value_count != rt->count)
        return vkl_fail(ctx, VKL_ERR_FORMAT, "%s: tensor '%s' value has %u elements, shape has %lld", name, t->name,
                        t->value_count, (long long)rt->count);
    for (uint32_t k = 0; k < t->value_count; k++) {
        int64_t v;
        vkl_status st = vkl_expr_eval(ctx, g->syms, t->value[k], b->values, b->count, &v);
        if (st) return vkl_fail_prefix(ctx, st, "%s: value of tensor '%s'", name, t->name);
        vkl_ref_set_i(rt, k, v);
    }
    return VKL_OK;
}

static uint64_t view_bytes(const vkl_ref_tensor *t) {
    size_t bytes = 0;
    const int64_t cols = t->rank ? t->dims[t->rank - 1] : 1;
    return vkl_tensor_bytes_shaped(t->dtype, t->group, t->count, cols, &bytes) ? bytes : 0;
}

/* Which tensors are state memory (a state, or an in-place op's output on
 * one), and the bytes each kernel of this executable moves to and from them:
 * KvAppend writes its new rows, Attention reads K/V, any other reader copies. */
static vkl_status count_state_traffic(vkl_context *ctx, vkl_backend_exec *e) {
    const vkl_graph *g = e->g;
    bool *is_state = vkl_calloc(ctx, g->n_tensors ? g->n_tensors : 1, sizeof(bool));
    if (!is_state) return VKL_ERR_OUT_OF_MEMORY;
    for (uint32_t t = 0; t < g->n_tensors; t++) is_state[t] = g->tensors[t].kind == VKL_TENSOR_STATE;
    memset(&e->traffic, 0, sizeof(e->traffic));
    for (uint32_t k = 0; k < e->n_order; k++) {
        const vkl_node *n = &g->nodes[e->order[k]];
        uint32_t src = vkl_node_inplace_input(g, e->order[k]);
        if (src != VKL_NONE && is_state[src]) is_state[n->outputs[0]] = true;
        for (uint32_t j = 0; j < n->n_inputs; j++) {
            uint32_t t = n->inputs[j];
            if (t == VKL_NONE || !is_state[t]) continue;
            if (n->op == VKL_OP_KV_APPEND && j == 0) {
                const vkl_ref_tensor *x = &e->tensors[n->inputs[1]];
                vkl_ref_tensor rows = {.dtype = e->tensors[t].dtype, .group = e->tensors[t].group, .count = x->count};
                e->traffic.written += view_bytes(&rows);
            } else if (n->op == VKL_OP_ATTENTION && (j == 1 || j == 2)) {
                e->traffic.read += view_bytes(&e->tensors[t]);
            } else {
                e->traffic.copied += view_bytes(&e->tensors[t]);
            }
        }
    }
    vkl_free(ctx, is_state);
    return VKL_OK;
}

/* The map's io copies as pointer pairs, each range checked against its
 * buffer and its tensor's arena bytes. */
static vkl_status bind_io(vkl_context *ctx, const vkl_graph *g, const vkl_memory_map *mem,
                          vkl_backend_exec *e) {
    size_t n = mem->n_uploads + mem->n_downloads;
    if (!n) return VKL_OK;
    e->io = vkl_calloc(ctx, n, sizeof(*e->io));
    if (!e->io) return VKL_ERR_OUT_OF_MEMORY;
    for (size_t k = 0; k < n; k++) {
        const bool up = k < mem->n_uploads;
        const vkl_io_copy *c = up ? &mem->uploads[k] : &mem->downloads[k - mem->n_uploads];
        const vkl_ref_tensor *t = c->tensor < g->n_tensors ? &e->tensors[c->tensor] : NULL;
        size_t tbytes = 0, end_t, end_b;
        if (t && t->data) tbytes = view_bytes(t);
        if (!t || !t->data || !c->buffer || !vkl_add_size(c->tensor_offset, c->bytes, &end_t) || end_t > tbytes ||
            !vkl_add_size(c->buffer_offset, c->bytes, &end_b) || end_b > c->buffer->size)
            return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT,
                            "%s: io copy %zu (%zu bytes of tensor %u at +%zu, buffer +%zu) is out of range", e->name, k,
                            c->bytes, c->tensor, c->tensor_offset, c->buffer_offset);
        unsigned char *tp = (unsigned char *)t->data + c->tensor_offset, *bp = vkl_host_buffer_data(c->buffer) + c->buffer_offset;
        e->io[k] = up ? (struct io_copy){tp, bp, c->bytes} : (struct io_copy){bp, tp, c->bytes};
    }
    e->n_up = mem->n_uploads;
    e->n_down = mem->n_downloads;
    return VKL_OK;
}

/* Node ni's operands as its kernel sees them: e->in and e->out filled from
 * the tensors' views (absent ones zero). */
static vkl_ref_args node_args(vkl_context *ctx, vkl_backend_exec *e, uint32_t ni) {
    const vkl_node *n = &e->g->nodes[ni];
    for (uint32_t j = 0; j < n->n_inputs; j++)
        e->in[j] = n->inputs[j] == VKL_NONE ? (vkl_ref_tensor){0} : e->tensors[n->inputs[j]];
    for (uint32_t j = 0; j < n->n_outputs; j++)
        e->out[j] = n->outputs[j] == VKL_NONE ? (vkl_ref_tensor){0} : e->tensors[n->outputs[j]];
    return (vkl_ref_args){ctx, &e->scratch, e->g, ni, e->in, n->n_inputs, e->out, n->n_outputs, e->user};
}

vkl_status vkl_host_prepare(vkl_backend_device *dev, vkl_context *ctx, const vkl_graph *g,
                            const vkl_host_kernels *kernels, const vkl_memory_map *mem, const vkl_binding *b,
                            vkl_backend_exec **out) {
    *out = NULL;
    vkl_backend_exec *e = vkl_calloc(ctx, 1, sizeof(*e));
    if (!e) return VKL_ERR_OUT_OF_MEMORY;
    e->g = g;
    e->tensors = vkl_calloc(ctx, g->n_tensors ? g->n_tensors : 1, sizeof(vkl_ref_tensor));
    e->order = vkl_calloc(ctx, g->n_nodes ? g->n_nodes : 1, sizeof(uint32_t));
    e->kernels = vkl_calloc(ctx, g->n_nodes ? g->n_nodes : 1, sizeof(vkl_ref_kernel));
    e->user = kernels->user;
    e->name = kernels->name;
    e->values = vkl_calloc(ctx, g->n_tensors ? g->n_tensors : 1, sizeof(uint32_t));
    e->n_binding = b->count;
    e->binding = vkl_calloc(ctx, b->count ? b->count : 1, sizeof(int64_t));
    vkl_status st =
        (!e->tensors || !e->order || !e->kernels || !e->values || !e->binding) ? VKL_ERR_OUT_OF_MEMORY : VKL_OK;
    if (!st && b->count) memcpy(e->binding, b->values, b->count * sizeof(int64_t));
    if (!st) st = vkl_graph_topo_order(ctx, g, e->order, &e->n_order);
    /* Which tensors live nodes touch: only those need memory. */
    uint32_t max_in = 1, max_out = 1;
    for (uint32_t k = 0; !st && k < e->n_order; k++) {
        const vkl_node *n = &g->nodes[e->order[k]];
        char buf[160];
        e->kernels[k] = kernels->table && kernels->table[n->op] ? kernels->table[n->op] : vkl_ref_kernels[n->op];
        if (!e->kernels[k])
            st = vkl_fail(ctx, VKL_ERR_UNSUPPORTED, "%s: no kernel for %s", e->name, vkl_node_str(g, e->order[k], buf, sizeof(buf)));
        if (n->n_inputs > max_in) max_in = n->n_inputs;
        if (n->n_outputs > max_out) max_out = n->n_outputs;
        for (uint32_t j = 0; !st && j < n->n_inputs + n->n_outputs; j++) {
            uint32_t t = j < n->n_inputs ? n->inputs[j] : n->outputs[j - n->n_inputs];
            if (t == VKL_NONE || e->tensors[t].dtype) continue;
            st = bind_tensor(ctx, e->name, g, mem, b, t, &e->tensors[t]);
            if (!st && j < n->n_inputs && g->tensors[t].value && g->tensors[t].producer == VKL_NONE &&
                g->tensors[t].kind != VKL_TENSOR_WEIGHT)
                e->values[e->n_values++] = t;
        }
        /* An in-place op's output is its input's memory. */
        uint32_t src = st ? VKL_NONE : vkl_node_inplace_input(g, e->order[k]);
        if (src != VKL_NONE) e->tensors[n->outputs[0]].data = e->tensors[src].data;
    }
    /* Graph inputs/outputs that no live node touches (pass-through graphs). */
    for (uint32_t k = 0; !st && k < g->n_inputs + g->n_outputs; k++) {
        uint32_t t = k < g->n_inputs ? g->inputs[k] : g->outputs[k - g->n_inputs];
        if (!e->tensors[t].dtype) st = bind_tensor(ctx, e->name, g, mem, b, t, &e->tensors[t]);
    }
    if (!st) {
        e->in = vkl_calloc(ctx, max_in, sizeof(vkl_ref_tensor));
        e->out = vkl_calloc(ctx, max_out, sizeof(vkl_ref_tensor));
        if (!e->in || !e->out) st = VKL_ERR_OUT_OF_MEMORY;
    }
    /* Scratch sized here so executing never allocates: no ref kernel needs
     * more than a few doubles per element of one dimension (attention: T + D
     * + Dv scores and sums; matmul: a row of N; TopK: 2n indexes); a
     * backend's kernel that needs more says how much (kernels->scratch). */
    int64_t maxdim = 1;
    for (uint32_t t = 0; !st && t < g->n_tensors; t++)
        for (uint32_t d = 0; d < e->tensors[t].rank; d++)
            if (e->tensors[t].dims[d] > maxdim) maxdim = e->tensors[t].dims[d];
    if (!st) st = count_state_traffic(ctx, e);
    if (!st) st = bind_io(ctx, g, mem, e);
    size_t scratch = (size_t)(maxdim + 2) * 32;
    for (uint32_t k = 0; !st && kernels->scratch && k < e->n_order; k++) {
        const uint32_t ni = e->order[k];
        const vkl_node *n = &g->nodes[ni];
        if (!kernels->table || !kernels->table[n->op] || !kernels->scratch[n->op]) continue;
        const vkl_ref_args args = node_args(ctx, e, ni);
        const size_t need = kernels->scratch[n->op](&args);
        if (need > scratch) scratch = need;
    }
    if (!st) {
        e->scratch.size = scratch;
        e->scratch.data = vkl_malloc(ctx, e->scratch.size);
        if (!e->scratch.data) st = VKL_ERR_OUT_OF_MEMORY;
    }
    if (!st && kernels->profile) {
        e->node_ms = vkl_calloc(ctx, e->n_order ? e->n_order : 1, sizeof(double));
        if (!e->node_ms) st = VKL_ERR_OUT_OF_MEMORY;
    }
    if (st) {
        vkl_host_exec_release(dev, ctx, e);
        return st;
    }
    *out = e;
    return VKL_OK;
}

/* Runs the kernels in order; with `first`, records the first node whose
 * output holds a NaN or infinity (vkl_ref_first_nonfinite). */
static vkl_status run(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_exec *e, vkl_nonfinite *first) {
    (void)dev;
    const vkl_graph *g = e->g;
    vkl_binding prepared = {e->binding, e->n_binding};
    memset(&e->last, 0, sizeof(e->last));
    if (first) memset(first, 0, sizeof(*first));
    for (size_t k = 0; k < e->n_up; k++) memcpy(e->io[k].dst, e->io[k].src, e->io[k].bytes);
    for (uint32_t k = 0; k < e->n_values; k++) {
        vkl_status st = materialize_value(ctx, e->name, g, &prepared, &g->tensors[e->values[k]], &e->tensors[e->values[k]]);
        if (st) return st;
    }
    e->timed = false;
    for (uint32_t k = 0; k < e->n_order; k++) {
        uint32_t ni = e->order[k];
        const vkl_node *n = &g->nodes[ni];
        vkl_ref_args args = node_args(ctx, e, ni);
        if (e->node_ms) e->node_ms[k] = 0;
        /* a view the planner gave its input's memory: the bytes are there already */
        if (n->n_outputs && e->out[0].data && e->out[0].data == e->in[0].data &&
            vkl_node_view_input(ctx, g, ni, e->binding, e->n_binding) != VKL_NONE)
            continue;
        const double t0 = e->node_ms ? vkl_clock_seconds(CLOCK_MONOTONIC) : 0;
        vkl_status st = e->kernels[k](&args);
        if (e->node_ms) e->node_ms[k] = (vkl_clock_seconds(CLOCK_MONOTONIC) - t0) * 1e3;
        if (st) {
            char buf[160];
            return vkl_fail_prefix(ctx, st, "%s: %s", e->name, vkl_node_str(g, ni, buf, sizeof(buf)));
        }
        for (uint32_t j = 0; first && !first->found && j < n->n_outputs; j++) {
            if (!e->out[j].data || !vkl_ref_first_nonfinite(&e->out[j], &first->element, &first->value)) continue;
            first->found = true;
            first->node = ni;
            first->output = j;
        }
    }
    for (size_t k = e->n_up; k < e->n_up + e->n_down; k++) memcpy(e->io[k].dst, e->io[k].src, e->io[k].bytes);
    e->last = e->traffic;
    e->timed = e->node_ms != NULL;
    return VKL_OK;
}

vkl_status vkl_host_execute(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_exec *e, const vkl_binding *actual) {
    (void)actual; /* prepared for exact values; nothing varies per run */
    return run(dev, ctx, e, NULL);
}

vkl_status vkl_host_execute_checked(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_exec *e,
                                    const vkl_binding *actual, vkl_nonfinite *first) {
    (void)actual;
    if (!first) return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "%s: execute_checked without a result", e->name);
    return run(dev, ctx, e, first);
}

vkl_status vkl_host_state_traffic(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_exec *e,
                                  vkl_state_traffic *out) {
    (void)dev;
    (void)ctx;
    *out = e->last;
    return VKL_OK;
}

vkl_status vkl_host_node_times(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_exec *e, double *ms, size_t cap,
                               size_t *count) {
    (void)dev;
    *count = 0;
    if (!e->node_ms)
        return vkl_fail(ctx, VKL_ERR_UNSUPPORTED,
                        "%s: no per-node times: the device was opened without profiling (vkl_backend_options.profile)",
                        e->name);
    if (!e->timed) return vkl_fail(ctx, VKL_ERR_STATE, "%s: node_times before any execute completed", e->name);
    for (uint32_t k = 0; k < e->n_order && k < cap; k++) ms[(*count)++] = e->node_ms[k];
    return VKL_OK;
}

vkl_status vkl_host_wait(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_exec *e) {
    (void)dev;
    (void)ctx;
    (void)e;
    return VKL_OK;
}
