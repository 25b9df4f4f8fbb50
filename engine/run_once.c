/* vkl_run_once: bind symbols from inputs, give each tensor its own poisoned
 * memory, prepare, execute, read the outputs back. */
#include <string.h>

#include "ops.h"
#include "run_once.h"

vkl_status vkl_bind_from_inputs(const vkl_graph *g, const vkl_host_tensor *inputs, int64_t *values, size_t count) {
    for (size_t i = 0; i < count; i++) values[i] = VKL_SYM_UNBOUND;
    for (uint32_t pass = 0; pass < 2; pass++) {
        for (uint32_t k = 0; k < g->n_inputs; k++) {
            const vkl_tensor *t = &g->tensors[g->inputs[k]];
            const vkl_host_tensor *h = &inputs[k];
            if (h->rank != t->shape.rank)
                return vkl_fail(g->ctx, VKL_ERR_SHAPE, "input '%s' has rank %u; the graph declares %u", t->name,
                                h->rank, t->shape.rank);
            for (uint32_t d = 0; d < h->rank; d++) {
                vkl_expr e = t->shape.dims[d];
                char text[64];
                size_t sym;
                /* pass 0 binds bare symbols; pass 1 checks every dim */
                if (pass == 0) {
                    if (vkl_expr_is_symbol(g->syms, e, &sym) && sym < count) {
                        if (values[sym] != VKL_SYM_UNBOUND && values[sym] != h->dims[d])
                            return vkl_fail(g->ctx, VKL_ERR_SHAPE,
                                            "input '%s' dim %u: %s = %lld, but an earlier input gave %lld", t->name, d,
                                            vkl_symtab_symbol_name(g->syms, sym), (long long)h->dims[d],
                                            (long long)values[sym]);
                        values[sym] = h->dims[d];
                    }
                    continue;
                }
                int64_t v;
                vkl_status st = vkl_expr_eval(g->ctx, g->syms, e, values, count, &v);
                if (st) return vkl_fail_prefix(g->ctx, st, "input '%s' dim %u", t->name, d);
                if (v != h->dims[d]) {
                    vkl_expr_print(g->syms, e, text, sizeof(text));
                    return vkl_fail(g->ctx, VKL_ERR_SHAPE, "input '%s' dim %u is %lld; the graph needs %s = %lld",
                                    t->name, d, (long long)h->dims[d], text, (long long)v);
                }
            }
        }
    }
    return VKL_OK;
}

typedef struct run_state {
    vkl_backend_device *dev;
    vkl_backend_weights *w;
    vkl_backend_buffer *arena;
    vkl_backend_exec *exec;
    size_t *offsets;
    int64_t *values;
} run_state;

static void release(const vkl_backend_vtable *be, vkl_context *ctx, run_state *s) {
    if (s->exec) be->exec_release(s->dev, ctx, s->exec);
    if (s->arena) be->buffer_destroy(s->dev, ctx, s->arena);
    if (s->w) be->weights_release(s->dev, s->w);
    vkl_free(ctx, s->offsets);
    vkl_free(ctx, s->values);
}

vkl_status vkl_read_outputs(vkl_context *ctx, const vkl_backend_vtable *be, vkl_backend_device *dev,
                            const vkl_memory_map *mem, const vkl_graph *g, const int64_t *values, size_t count,
                            vkl_host_tensor *outputs) {
    vkl_status st = VKL_OK;
    for (uint32_t k = 0; k < g->n_outputs; k++) outputs[k].data = NULL;
    for (uint32_t k = 0; !st && k < g->n_outputs; k++) {
        uint32_t t = g->outputs[k];
        vkl_host_tensor *o = &outputs[k];
        int64_t elements;
        o->dtype = g->tensors[t].dtype;
        o->rank = g->tensors[t].shape.rank;
        st = vkl_tensor_eval(ctx, g, t, values, count, o->dims, &elements, &o->nbytes);
        if (!st) {
            o->data = vkl_malloc(ctx, o->nbytes ? o->nbytes : 1);
            if (!o->data) st = VKL_ERR_OUT_OF_MEMORY;
        }
        if (!st && g->tensors[t].kind == VKL_TENSOR_WEIGHT) memcpy(o->data, g->tensors[t].data, o->nbytes);
        else if (!st) st = be->buffer_read(dev, ctx, mem->arena, mem->offsets[t], o->data, o->nbytes);
    }
    if (st)
        for (uint32_t k = 0; k < g->n_outputs; k++) {
            vkl_free(ctx, outputs[k].data);
            outputs[k].data = NULL;
        }
    return st;
}

vkl_status vkl_run_once(vkl_context *ctx, const vkl_backend_vtable *be, const vkl_graph *g,
                        const vkl_host_tensor *inputs, vkl_host_tensor *outputs) {
    vkl_backend_device *dev;
    vkl_status st = be->open(ctx, NULL, &dev);
    if (st) return st;
    st = vkl_run_once_on(ctx, be, dev, g, inputs, outputs);
    be->close(dev);
    return st;
}

vkl_status vkl_run_once_on(vkl_context *ctx, const vkl_backend_vtable *be, vkl_backend_device *dev,
                           const vkl_graph *g, const vkl_host_tensor *inputs, vkl_host_tensor *outputs) {
    run_state s = {.dev = dev};
    size_t nsym = vkl_symtab_symbol_count(g->syms);
    s.values = vkl_calloc(ctx, nsym ? nsym : 1, sizeof(int64_t));
    s.offsets = vkl_calloc(ctx, g->n_tensors ? g->n_tensors : 1, sizeof(size_t));
    if (!s.values || !s.offsets) {
        release(be, ctx, &s);
        return VKL_ERR_OUT_OF_MEMORY;
    }
    for (uint32_t k = 0; k < g->n_outputs; k++) outputs[k].data = NULL;
    vkl_status st = vkl_bind_from_inputs(g, inputs, s.values, nsym);

    /* Every non-weight tensor that has a shape under this binding gets its
     * own aligned slot. Tensors of dead nodes evaluate too; cheap. */
    vkl_backend_caps caps;
    be->caps(dev, &caps);
    const size_t align = vkl_arena_alignment(&caps);
    size_t total = 0;
    for (uint32_t t = 0; !st && t < g->n_tensors; t++) {
        s.offsets[t] = VKL_NO_OFFSET;
        if (g->tensors[t].kind == VKL_TENSOR_WEIGHT) continue;
        int64_t dims[VKL_MAX_RANK], elements;
        size_t bytes;
        if (vkl_tensor_eval(ctx, g, t, s.values, nsym, dims, &elements, &bytes)) {
            /* unbound symbols: only an error if the tensor is used; prepare reports it */
            continue;
        }
        s.offsets[t] = total;
        size_t next;
        if (!vkl_add_size(total, vkl_align_up(bytes, align), &next))
            st = vkl_fail(ctx, VKL_ERR_OVERFLOW, "arena size overflows");
        total = next;
    }
    /* An in-place op's output is its input's memory (the KV cache). */
    for (uint32_t i = 0; !st && i < g->n_nodes; i++) {
        uint32_t src = vkl_node_inplace_input(g, i);
        if (src != VKL_NONE) s.offsets[g->nodes[i].outputs[0]] = s.offsets[src];
    }
    if (!st) st = be->weights_load(s.dev, g, &s.w);
    if (!st) st = be->buffer_create(s.dev, ctx, VKL_BUFFER_DEVICE, total, &s.arena);
    if (!st && total) {
        /* Poison: 0xFF bytes are NaN in every float type and -1 in ints, so an
         * output a kernel forgets to write cannot pass a comparison. */
        unsigned char *poison = vkl_malloc(ctx, total);
        if (!poison) st = VKL_ERR_OUT_OF_MEMORY;
        else {
            memset(poison, 0xFF, total);
            for (uint32_t t = 0; t < g->n_tensors; t++) {
                if (g->tensors[t].kind != VKL_TENSOR_STATE || s.offsets[t] == VKL_NO_OFFSET) continue;
                int64_t dims[VKL_MAX_RANK], elements;
                size_t bytes;
                if (!vkl_tensor_eval(ctx, g, t, s.values, nsym, dims, &elements, &bytes)) memset(poison + s.offsets[t], 0, bytes);
            }
            st = be->buffer_write(s.dev, ctx, s.arena, 0, poison, total);
            vkl_free(ctx, poison);
        }
    }
    for (uint32_t k = 0; !st && k < g->n_inputs; k++) {
        uint32_t t = g->inputs[k];
        int64_t dims[VKL_MAX_RANK], elements;
        size_t bytes;
        st = vkl_tensor_eval(ctx, g, t, s.values, nsym, dims, &elements, &bytes);
        if (!st && inputs[k].dtype != g->tensors[t].dtype)
            st = vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "input '%s' is %s; the graph wants %s", g->tensors[t].name,
                          vkl_dtype_name(inputs[k].dtype), vkl_dtype_name(g->tensors[t].dtype));
        if (!st && inputs[k].nbytes != bytes)
            st = vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "input '%s' has %zu bytes; its shape needs %zu",
                          g->tensors[t].name, inputs[k].nbytes, bytes);
        if (!st) st = be->buffer_write(s.dev, ctx, s.arena, s.offsets[t], inputs[k].data, bytes);
    }
    vkl_binding binding = {s.values, nsym};
    vkl_memory_map mem = {s.arena, s.offsets, g->n_tensors};
    if (!st) st = be->prepare(s.dev, ctx, g, s.w, &mem, &binding, &s.exec);
    if (!st) st = be->execute(s.dev, ctx, s.exec, &binding);
    if (!st) st = be->wait(s.dev, ctx, s.exec);
    if (!st) st = vkl_read_outputs(ctx, be, s.dev, &mem, g, s.values, nsym, outputs);
    release(be, ctx, &s);
    return st;
}
