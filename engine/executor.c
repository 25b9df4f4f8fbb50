/* Wrappers over the backend vtable shared by sessions and the runner. */
#include <string.h>

#include "executor.h"
#include "ops.h"

/* Host bytes per buffer_write of a fill: a KV cache of hundreds of MiB is
 * zeroed without a host copy of its size. */
#define FILL_CHUNK ((size_t)1 << 20)

vkl_status vkl_buffer_fill(vkl_context *ctx, const vkl_backend_vtable *be, vkl_backend_device *dev,
                           vkl_backend_buffer *buf, size_t from, size_t to, unsigned char byte) {
    if (to <= from) return VKL_OK;
    size_t chunk = to - from < FILL_CHUNK ? to - from : FILL_CHUNK;
    unsigned char *bytes = vkl_malloc(ctx, chunk);
    if (!bytes) return VKL_ERR_OUT_OF_MEMORY;
    memset(bytes, byte, chunk);
    vkl_status st = VKL_OK;
    for (size_t at = from; !st && at < to; at += chunk) {
        if (to - at < chunk) chunk = to - at;
        st = be->buffer_write(dev, ctx, buf, at, bytes, chunk);
    }
    vkl_free(ctx, bytes);
    return st;
}

vkl_status vkl_arena_create(vkl_context *ctx, const vkl_backend_vtable *be, vkl_backend_device *dev, size_t bytes,
                            size_t states_end, bool poison, vkl_backend_buffer **out) {
    *out = NULL;
    vkl_backend_buffer *arena;
    vkl_status st = be->buffer_create(dev, ctx, VKL_BUFFER_DEVICE, bytes, &arena);
    if (st) return st;
    st = vkl_buffer_fill(ctx, be, dev, arena, 0, states_end, 0);
    if (!st && poison) st = vkl_arena_poison(ctx, be, dev, arena, states_end, bytes);
    if (st) {
        be->buffer_destroy(dev, ctx, arena);
        return st;
    }
    *out = arena;
    return VKL_OK;
}

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

vkl_status vkl_write_inputs(vkl_context *ctx, const vkl_backend_vtable *be, vkl_backend_device *dev,
                            const vkl_memory_map *mem, const vkl_graph *g, const int64_t *values, size_t count,
                            const vkl_host_tensor *inputs) {
    for (uint32_t k = 0; k < g->n_inputs; k++) {
        uint32_t t = g->inputs[k];
        int64_t dims[VKL_MAX_RANK], elements;
        size_t bytes;
        vkl_status st = vkl_tensor_eval(ctx, g, t, values, count, dims, &elements, &bytes);
        if (st) return st;
        if (inputs[k].dtype != g->tensors[t].dtype)
            return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "input '%s' is %s; the graph wants %s", g->tensors[t].name,
                            vkl_dtype_name(inputs[k].dtype), vkl_dtype_name(g->tensors[t].dtype));
        if (inputs[k].nbytes != bytes)
            return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "input '%s' has %zu bytes; its shape needs %zu",
                            g->tensors[t].name, inputs[k].nbytes, bytes);
        if (mem->offsets[t] == VKL_NO_OFFSET) continue; /* no node reads it */
        st = be->buffer_write(dev, ctx, mem->arena, mem->offsets[t], inputs[k].data, bytes);
        if (st) return st;
    }
    return VKL_OK;
}

vkl_status vkl_exec_run(vkl_context *ctx, const vkl_backend_vtable *be, vkl_backend_device *dev,
                        vkl_backend_exec *exec, const vkl_binding *b, vkl_nonfinite *first) {
    if (first && !be->execute_checked)
        return vkl_fail(ctx, VKL_ERR_UNSUPPORTED, "backend '%s' cannot check outputs for NaN; the ref backend can",
                        be->name);
    vkl_status st = first ? be->execute_checked(dev, ctx, exec, b, first) : be->execute(dev, ctx, exec, b);
    return st ? st : be->wait(dev, ctx, exec);
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
