/* vkl_runner: a no-reuse plan laid out afresh for every step's binding,
 * states first at offsets no step moves; the arena grows (carrying the
 * states) when a step needs more. */
#include <string.h>

#include "ops.h"
#include "runner.h"

struct vkl_runner {
    vkl_context *ctx;
    const vkl_backend_vtable *be;
    vkl_backend_device *dev;
    bool own_device;
    const vkl_graph *g;
    vkl_plan *plan;
    vkl_backend_weights *w;
    vkl_backend_buffer *arena;
    size_t arena_size;
    size_t states_end;   /* bytes [0, states_end) hold the states */
    size_t *offsets;     /* per tensor, the last step's */
    int64_t *values;
    size_t n_values;
    int64_t state_rows;
    bool stepped;        /* the states are placed (and zeroed) */
};

void vkl_runner_destroy(vkl_runner *r) {
    if (!r) return;
    if (r->arena) r->be->buffer_destroy(r->dev, r->ctx, r->arena);
    if (r->w) r->be->weights_release(r->dev, r->w);
    if (r->dev && r->own_device) r->be->close(r->dev);
    vkl_plan_destroy(r->plan);
    vkl_free(r->ctx, r->offsets);
    vkl_free(r->ctx, r->values);
    vkl_free(r->ctx, r);
}

vkl_status vkl_runner_create_on(vkl_context *ctx, const vkl_backend_vtable *be, vkl_backend_device *dev,
                                const vkl_graph *g, int64_t state_rows, vkl_runner **out) {
    *out = NULL;
    if (state_rows < 0) return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "runner: state rows must not be negative");
    vkl_runner *r = vkl_calloc(ctx, 1, sizeof(*r));
    if (!r) return VKL_ERR_OUT_OF_MEMORY;
    r->ctx = ctx;
    r->be = be;
    r->dev = dev;
    r->g = g;
    r->state_rows = state_rows;
    r->n_values = vkl_symtab_symbol_count(g->syms);
    r->offsets = vkl_calloc(ctx, g->n_tensors ? g->n_tensors : 1, sizeof(size_t));
    r->values = vkl_calloc(ctx, r->n_values ? r->n_values : 1, sizeof(int64_t));
    vkl_status st = (!r->offsets || !r->values) ? VKL_ERR_OUT_OF_MEMORY : VKL_OK;
    vkl_backend_caps caps;
    if (!st) be->caps(dev, &caps);
    if (!st) st = vkl_plan_create(g, VKL_PLAN_NO_REUSE, vkl_arena_alignment(&caps), &r->plan);
    /* a derived graph reads its base's weights (engine/backend.h, prepare) */
    if (!st) st = be->weights_load(dev, vkl_graph_weight_source(g), &r->w);
    if (st) {
        vkl_runner_destroy(r);
        return st;
    }
    *out = r;
    return VKL_OK;
}

vkl_status vkl_runner_create(vkl_context *ctx, const vkl_backend_vtable *be, const vkl_backend_options *opt,
                             const vkl_graph *g, int64_t max_context, vkl_runner **out) {
    *out = NULL;
    if (max_context <= 0) return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "runner: max_context must be positive");
    vkl_backend_device *dev;
    vkl_status st = be->open(ctx, opt, &dev);
    if (st) return st;
    st = vkl_runner_create_on(ctx, be, dev, g, max_context, out);
    if (st) {
        be->close(dev);
        return st;
    }
    (*out)->own_device = true;
    return VKL_OK;
}

/* Room for a step of `total` bytes: a bigger arena, the states carried over
 * through the host (zeroed on the first step); every byte past the states
 * poisoned, on every step, so no step reads what an earlier one left. */
static vkl_status make_room(vkl_runner *r, size_t total) {
    if (r->arena && total <= r->arena_size)
        return vkl_arena_poison(r->ctx, r->be, r->dev, r->arena, r->states_end, r->arena_size);
    vkl_backend_buffer *bigger;
    vkl_status st = vkl_arena_create(r->ctx, r->be, r->dev, total, r->states_end, true, &bigger);
    if (st) return st;
    if (r->arena && r->states_end) {
        void *tmp = vkl_malloc(r->ctx, r->states_end);
        st = tmp ? r->be->buffer_read(r->dev, r->ctx, r->arena, 0, tmp, r->states_end) : VKL_ERR_OUT_OF_MEMORY;
        if (!st) st = r->be->buffer_write(r->dev, r->ctx, bigger, 0, tmp, r->states_end);
        vkl_free(r->ctx, tmp);
    }
    if (st) {
        r->be->buffer_destroy(r->dev, r->ctx, bigger);
        return st;
    }
    if (r->arena) r->be->buffer_destroy(r->dev, r->ctx, r->arena);
    r->arena = bigger;
    r->arena_size = total;
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
    vkl_layout_binding lb = {r->values, r->n_values, NULL, r->state_rows};
    size_t total = 0, states_end = 0;
    if (!st) st = vkl_plan_layout(r->ctx, r->plan, &lb, r->offsets, &total, &states_end);
    if (!st && r->stepped && states_end != r->states_end)
        st = vkl_fail(r->ctx, VKL_ERR_INVALID_ARGUMENT, "runner: the states need %zu bytes now, %zu at the first "
                      "step; give the runner state rows", states_end, r->states_end);
    if (!st) {
        r->states_end = states_end;
        st = make_room(r, total);
    }
    if (!st) r->stepped = true;
    vkl_memory_map mem = {r->arena, r->offsets, g->n_tensors, NULL, 0, NULL, 0};
    if (!st) st = vkl_write_inputs(r->ctx, r->be, r->dev, &mem, g, r->values, r->n_values, inputs);
    vkl_binding binding = {r->values, r->n_values};
    vkl_backend_exec *exec = NULL;
    if (!st) st = r->be->prepare(r->dev, r->ctx, g, r->w, &mem, &binding, &exec);
    if (!st) st = vkl_exec_run(r->ctx, r->be, r->dev, exec, &binding, NULL);
    if (exec) r->be->exec_release(r->dev, r->ctx, exec);
    if (!st) st = vkl_read_outputs(r->ctx, r->be, r->dev, &mem, g, r->values, r->n_values, outputs);
    return st;
}

vkl_status vkl_runner_read_state(vkl_runner *r, uint32_t tensor, int64_t rows, void *dst, size_t cap,
                                 size_t *row_bytes) {
    const vkl_graph *g = r->g;
    if (tensor >= g->n_tensors || g->tensors[tensor].kind != VKL_TENSOR_STATE || !r->stepped ||
        r->offsets[tensor] == VKL_NO_OFFSET)
        return vkl_fail(r->ctx, VKL_ERR_INVALID_ARGUMENT, "runner: tensor %u is not a placed state", tensor);
    int64_t now;
    size_t bytes;
    vkl_status st = vkl_state_rows(r->ctx, g, tensor, r->values, r->n_values, &now, row_bytes);
    if (st) return st;
    const int64_t kept = r->state_rows ? r->state_rows : now; /* 0: sized by the step */
    if (rows < 0 || rows > kept)
        return vkl_fail(r->ctx, VKL_ERR_INVALID_ARGUMENT, "runner: %lld rows out of range (%lld kept)", (long long)rows,
                        (long long)kept);
    if (!vkl_mul_size(*row_bytes, (size_t)rows, &bytes))
        return vkl_fail(r->ctx, VKL_ERR_OVERFLOW, "runner: state '%s' rows overflow", g->tensors[tensor].name);
    if (bytes > cap) return vkl_fail(r->ctx, VKL_ERR_INVALID_ARGUMENT, "runner: %zu bytes do not fit in %zu", bytes, cap);
    return r->be->buffer_read(r->dev, r->ctx, r->arena, r->offsets[tensor], dst, bytes);
}
