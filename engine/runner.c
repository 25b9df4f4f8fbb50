/* vkl_runner: states first in the arena at fixed offsets, then one slot per
 * other tensor for the current binding; the arena grows (keeping the states)
 * when a step needs more. */
#include <string.h>

#include "ops.h"
#include "runner.h"

struct vkl_runner {
    vkl_context *ctx;
    const vkl_backend_vtable *be;
    const vkl_graph *g;
    int64_t max_context;
    vkl_backend_device *dev;
    vkl_backend_weights *w;
    vkl_backend_buffer *arena;
    size_t arena_size;
    size_t states_end;   /* bytes [0, states_end) hold the states */
    size_t *offsets;     /* per tensor */
    size_t *row_bytes;   /* per state tensor: bytes of one dim-0 row */
    int64_t *values;
    size_t n_values;
    bool states_placed;
    size_t align;        /* tensor placement in the arena (vkl_arena_alignment) */
};


void vkl_runner_destroy(vkl_runner *r) {
    if (!r) return;
    if (r->arena) r->be->buffer_destroy(r->dev, r->ctx, r->arena);
    if (r->w) r->be->weights_release(r->dev, r->w);
    if (r->dev) r->be->close(r->dev);
    vkl_free(r->ctx, r->offsets);
    vkl_free(r->ctx, r->row_bytes);
    vkl_free(r->ctx, r->values);
    vkl_free(r->ctx, r);
}

vkl_status vkl_runner_create(vkl_context *ctx, const vkl_backend_vtable *be, const vkl_backend_options *opt,
                             const vkl_graph *g, int64_t max_context, vkl_runner **out) {
    *out = NULL;
    if (max_context <= 0) return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "runner: max_context must be positive");
    vkl_runner *r = vkl_calloc(ctx, 1, sizeof(*r));
    if (!r) return VKL_ERR_OUT_OF_MEMORY;
    r->ctx = ctx;
    r->be = be;
    r->g = g;
    r->max_context = max_context;
    r->n_values = vkl_symtab_symbol_count(g->syms);
    r->offsets = vkl_calloc(ctx, g->n_tensors ? g->n_tensors : 1, sizeof(size_t));
    r->row_bytes = vkl_calloc(ctx, g->n_tensors ? g->n_tensors : 1, sizeof(size_t));
    r->values = vkl_calloc(ctx, r->n_values ? r->n_values : 1, sizeof(int64_t));
    vkl_status st = (!r->offsets || !r->row_bytes || !r->values) ? VKL_ERR_OUT_OF_MEMORY : VKL_OK;
    if (!st) st = be->open(ctx, opt, &r->dev);
    if (!st) {
        vkl_backend_caps caps;
        be->caps(r->dev, &caps);
        r->align = vkl_arena_alignment(&caps);
    }
    if (!st) st = be->weights_load(r->dev, g, &r->w);
    if (st) {
        vkl_runner_destroy(r);
        return st;
    }
    *out = r;
    return VKL_OK;
}

/* Bytes of tensor t under the current binding (dims to `dims`). */
static vkl_status tensor_bytes(vkl_runner *r, uint32_t t, int64_t *dims, size_t *bytes) {
    int64_t elements;
    return vkl_tensor_eval(r->ctx, r->g, t, r->values, r->n_values, dims, &elements, bytes);
}

/* First step: states get max_context rows each at the start of the arena. */
static vkl_status place_states(vkl_runner *r) {
    size_t end = 0;
    for (uint32_t t = 0; t < r->g->n_tensors; t++) {
        r->offsets[t] = VKL_NO_OFFSET;
        const vkl_tensor *tt = &r->g->tensors[t];
        if (tt->kind != VKL_TENSOR_STATE) continue;
        int64_t dims[VKL_MAX_RANK];
        size_t bytes;
        if (tt->shape.rank < 1)
            return vkl_fail(r->ctx, VKL_ERR_SHAPE, "state '%s' has no sequence dimension", tt->name);
        vkl_status st = tensor_bytes(r, t, dims, &bytes);
        if (st) return st;
        size_t row = dims[0] ? bytes / (size_t)dims[0] : 0;
        if (!dims[0]) {
            /* zero rows now: size one row from the other dims */
            int64_t per = 1;
            for (uint32_t d = 1; d < tt->shape.rank; d++) per *= dims[d];
            if (!vkl_tensor_bytes(tt->dtype, tt->group, per, &row))
                return vkl_fail(r->ctx, VKL_ERR_OVERFLOW, "state '%s' row size overflows", tt->name);
        }
        size_t total;
        if (!vkl_mul_size(row, (size_t)r->max_context, &total))
            return vkl_fail(r->ctx, VKL_ERR_OVERFLOW, "state '%s' at max context overflows", tt->name);
        r->row_bytes[t] = row;
        r->offsets[t] = end;
        end += vkl_align_up(total, r->align);
    }
    r->states_end = end;
    r->states_placed = true;
    return VKL_OK;
}

/* Lay out every other tensor after the states; grow the arena if needed. */
static vkl_status place_step(vkl_runner *r) {
    const vkl_graph *g = r->g;
    size_t end = r->states_end;
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        const vkl_tensor *tt = &g->tensors[t];
        if (tt->kind == VKL_TENSOR_STATE) {
            int64_t dims[VKL_MAX_RANK];
            size_t bytes;
            vkl_status st = tensor_bytes(r, t, dims, &bytes);
            if (st) return st;
            if (dims[0] > r->max_context)
                return vkl_fail(r->ctx, VKL_ERR_INVALID_ARGUMENT, "state '%s' needs %lld rows; max context is %lld",
                                tt->name, (long long)dims[0], (long long)r->max_context);
            continue;
        }
        r->offsets[t] = VKL_NO_OFFSET;
        if (tt->kind == VKL_TENSOR_WEIGHT) continue;
        int64_t dims[VKL_MAX_RANK];
        size_t bytes;
        if (tensor_bytes(r, t, dims, &bytes)) continue; /* unused tensors with unbound symbols */
        r->offsets[t] = end;
        end += vkl_align_up(bytes, r->align);
    }
    /* An in-place op's output is its input's memory (the KV cache). */
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        uint32_t src = vkl_node_inplace_input(g, i);
        if (src != VKL_NONE) r->offsets[g->nodes[i].outputs[0]] = r->offsets[src];
    }
    if (end <= r->arena_size && r->arena) return VKL_OK;
    /* Grow, carrying the states over through the host. */
    vkl_backend_buffer *bigger;
    vkl_status st = r->be->buffer_create(r->dev, r->ctx, VKL_BUFFER_DEVICE, end, &bigger);
    if (st) return st;
    if (r->arena && r->states_end) {
        void *tmp = vkl_malloc(r->ctx, r->states_end);
        st = tmp ? r->be->buffer_read(r->dev, r->ctx, r->arena, 0, tmp, r->states_end) : VKL_ERR_OUT_OF_MEMORY;
        if (!st) st = r->be->buffer_write(r->dev, r->ctx, bigger, 0, tmp, r->states_end);
        vkl_free(r->ctx, tmp);
    } else if (r->states_end) {
        void *zero = vkl_calloc(r->ctx, 1, r->states_end);
        st = zero ? r->be->buffer_write(r->dev, r->ctx, bigger, 0, zero, r->states_end) : VKL_ERR_OUT_OF_MEMORY;
        vkl_free(r->ctx, zero);
    }
    if (st) {
        r->be->buffer_destroy(r->dev, r->ctx, bigger);
        return st;
    }
    if (r->arena) r->be->buffer_destroy(r->dev, r->ctx, r->arena);
    r->arena = bigger;
    r->arena_size = end;
    return VKL_OK;
}

static vkl_status bind(vkl_runner *r, const vkl_host_tensor *inputs, const vkl_sym_value *extra, size_t n_extra) {
    vkl_status st = vkl_bind_from_inputs(r->g, inputs, r->values, r->n_values);
    for (size_t i = 0; !st && i < n_extra; i++) {
        size_t index;
        if (vkl_symtab_find_symbol(r->g->syms, extra[i].name, &index) != VKL_OK) continue; /* not used */
        if (r->values[index] != VKL_SYM_UNBOUND && r->values[index] != extra[i].value)
            return vkl_fail(r->ctx, VKL_ERR_INVALID_ARGUMENT, "symbol %s is %lld from the inputs but %lld was given",
                            extra[i].name, (long long)r->values[index], (long long)extra[i].value);
        r->values[index] = extra[i].value;
    }
    return st;
}

vkl_status vkl_runner_step(vkl_runner *r, const vkl_host_tensor *inputs, const vkl_sym_value *extra, size_t n_extra,
                           vkl_host_tensor *outputs) {
    const vkl_graph *g = r->g;
    for (uint32_t k = 0; k < g->n_outputs; k++) outputs[k].data = NULL;
    vkl_status st = bind(r, inputs, extra, n_extra);
    if (!st && !r->states_placed) st = place_states(r);
    if (!st) st = place_step(r);
    for (uint32_t k = 0; !st && k < g->n_inputs; k++) {
        uint32_t t = g->inputs[k];
        int64_t dims[VKL_MAX_RANK];
        size_t bytes;
        st = tensor_bytes(r, t, dims, &bytes);
        if (!st && (inputs[k].dtype != g->tensors[t].dtype || inputs[k].nbytes != bytes))
            st = vkl_fail(r->ctx, VKL_ERR_INVALID_ARGUMENT, "input '%s': got %s with %zu bytes, the graph needs %s with %zu",
                          g->tensors[t].name, vkl_dtype_name(inputs[k].dtype), inputs[k].nbytes,
                          vkl_dtype_name(g->tensors[t].dtype), bytes);
        if (!st) st = r->be->buffer_write(r->dev, r->ctx, r->arena, r->offsets[t], inputs[k].data, bytes);
    }
    vkl_binding binding = {r->values, r->n_values};
    vkl_memory_map mem = {r->arena, r->offsets, g->n_tensors};
    vkl_backend_exec *exec = NULL;
    if (!st) st = r->be->prepare(r->dev, r->ctx, g, r->w, &mem, &binding, &exec);
    if (!st) st = r->be->execute(r->dev, r->ctx, exec, &binding);
    if (!st) st = r->be->wait(r->dev, r->ctx, exec);
    if (exec) r->be->exec_release(r->dev, r->ctx, exec);
    if (!st) st = vkl_read_outputs(r->ctx, r->be, r->dev, &mem, g, r->values, r->n_values, outputs);
    return st;
}

vkl_status vkl_runner_read_state(vkl_runner *r, uint32_t tensor, int64_t rows, void *dst, size_t cap,
                                 size_t *row_bytes) {
    if (tensor >= r->g->n_tensors || r->g->tensors[tensor].kind != VKL_TENSOR_STATE || !r->states_placed)
        return vkl_fail(r->ctx, VKL_ERR_INVALID_ARGUMENT, "runner: tensor %u is not a placed state", tensor);
    if (rows < 0 || rows > r->max_context)
        return vkl_fail(r->ctx, VKL_ERR_INVALID_ARGUMENT, "runner: %lld rows out of range", (long long)rows);
    size_t bytes = (size_t)rows * r->row_bytes[tensor];
    *row_bytes = r->row_bytes[tensor];
    if (bytes > cap) return vkl_fail(r->ctx, VKL_ERR_INVALID_ARGUMENT, "runner: %zu bytes do not fit in %zu", bytes, cap);
    return r->be->buffer_read(r->dev, r->ctx, r->arena, r->offsets[tensor], dst, bytes);
}
