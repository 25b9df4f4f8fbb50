/* The ref backend's KV traffic counter (vkl_state_traffic), the measure the
 * session reports as "KV bytes copied": on a small graph with a cache state,
 * KvAppend counts only its new rows as written, Attention's K/V as read, and
 * a Transpose of the cache (what a Concat-style cache would do every step)
 * as copied. Without this control, "copied 0" would prove nothing. */
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "check.h"
#include "context.h"
#include "graph.h"
#include "ops.h"

static uint32_t add(vkl_graph *g, const char *name, vkl_dtype dt, vkl_tensor_kind kind, const char *dims) {
    vkl_shape s = check_shape(&failures, g, dims, ',');
    uint32_t id = VKL_NONE;
    CHECK(vkl_graph_add_tensor(g, name, dt, kind, dims ? &s : NULL, &id) == VKL_OK);
    if (kind == VKL_TENSOR_INPUT) CHECK(vkl_graph_add_input(g, id) == VKL_OK);
    return id;
}

static uint32_t node(vkl_graph *g, vkl_op op, const uint32_t *ins, uint32_t n_in, const char *out,
                     const vkl_attr *attrs, uint32_t n_attrs) {
    uint32_t o = add(g, out, VKL_DTYPE_F32, VKL_TENSOR_ACTIVATION, NULL);
    CHECK(vkl_graph_add_node(g, op, out, ins, n_in, &o, 1, attrs, n_attrs, NULL) == VKL_OK);
    return o;
}

int main(void) {
    vkl_context *ctx;
    if (vkl_context_create(NULL, &ctx)) return 2;
    vkl_graph *g;
    CHECK(vkl_graph_create(ctx, &g) == VKL_OK);
    /* cache [T = 8, B = 1, H = 1, D = 4]: 128 bytes; one new row: 16 bytes */
    uint32_t cache = add(g, "k.cache", VKL_DTYPE_F32, VKL_TENSOR_STATE, "8, 1, 1, 4");
    uint32_t x = add(g, "x", VKL_DTYPE_F32, VKL_TENSOR_INPUT, "1, 1, 1, 4");
    uint32_t pos = add(g, "position_ids", VKL_DTYPE_I64, VKL_TENSOR_INPUT, "1, 1");
    uint32_t q = add(g, "q", VKL_DTYPE_F32, VKL_TENSOR_INPUT, "1, 1, 1, 4");
    uint32_t kv = node(g, VKL_OP_KV_APPEND, (uint32_t[]){cache, x, pos}, 3, "k.updated", NULL, 0);
    vkl_attr layout = {.name = "kv_layout", .kind = VKL_ATTR_INT, .i = 1};
    uint32_t att = node(g, VKL_OP_ATTENTION, (uint32_t[]){q, kv, kv}, 3, "attn", &layout, 1);
    static const int64_t perm[] = {1, 2, 0, 3};
    vkl_attr p = {.name = "perm", .kind = VKL_ATTR_INTS, .ints = perm, .count = 4};
    uint32_t copy = node(g, VKL_OP_TRANSPOSE, (uint32_t[]){kv}, 1, "cache.copy", &p, 1);
    CHECK(vkl_graph_add_output(g, att) == VKL_OK);
    CHECK(vkl_graph_add_output(g, copy) == VKL_OK);
    vkl_status st = vkl_graph_validate(g);
    if (!st) st = vkl_graph_infer_shapes(g);
    if (st) fprintf(stderr, "graph: %s\n", vkl_context_error(ctx));
    CHECK(st == VKL_OK);

    const vkl_backend_vtable *be = vkl_backend_find("ref");
    vkl_backend_device *dev = NULL;
    vkl_backend_weights *w = NULL;
    vkl_backend_buffer *arena = NULL;
    vkl_backend_exec *e = NULL;
    /* every tensor its own 256-byte slot */
    size_t offsets[16];
    CHECK(g->n_tensors <= 16);
    for (uint32_t t = 0; t < g->n_tensors; t++) offsets[t] = 256 * (size_t)t;
    CHECK(be && be->state_traffic);
    CHECK(be->open(ctx, NULL, &dev) == VKL_OK);
    CHECK(be->weights_load(dev, g, &w) == VKL_OK);
    CHECK(be->buffer_create(dev, ctx, VKL_BUFFER_DEVICE, 256 * 16, &arena) == VKL_OK);
    float data[4] = {0.5f, -1.0f, 2.0f, 0.25f};
    int64_t where = 3;
    CHECK(be->buffer_write(dev, ctx, arena, offsets[x], data, sizeof(data)) == VKL_OK);
    CHECK(be->buffer_write(dev, ctx, arena, offsets[q], data, sizeof(data)) == VKL_OK);
    CHECK(be->buffer_write(dev, ctx, arena, offsets[pos], &where, sizeof(where)) == VKL_OK);
    float zeros[32] = {0};
    CHECK(be->buffer_write(dev, ctx, arena, offsets[cache], zeros, sizeof(zeros)) == VKL_OK);
    vkl_memory_map mem = {arena, offsets, g->n_tensors};
    vkl_binding b = {NULL, 0};
    vkl_state_traffic tr = {1, 1, 1};
    CHECK(be->prepare(dev, ctx, g, w, &mem, &b, &e) == VKL_OK);
    CHECK(e && be->state_traffic(dev, ctx, e, &tr) == VKL_OK);
    CHECK(tr.written == 0 && tr.read == 0 && tr.copied == 0); /* nothing ran yet */
    CHECK(be->execute(dev, ctx, e, &b) == VKL_OK && be->wait(dev, ctx, e) == VKL_OK);
    CHECK(be->state_traffic(dev, ctx, e, &tr) == VKL_OK);
    printf("written %llu, read %llu, copied %llu\n", (unsigned long long)tr.written, (unsigned long long)tr.read,
           (unsigned long long)tr.copied);
    CHECK(tr.written == 16);  /* one row of 4 floats */
    CHECK(tr.read == 2 * 128); /* K and V: the whole cache each */
    CHECK(tr.copied == 128);  /* the Transpose read all of it */
    /* the row landed in place, at position 3 */
    float row[4];
    CHECK(be->buffer_read(dev, ctx, arena, offsets[cache] + 3 * sizeof(row), row, sizeof(row)) == VKL_OK);
    CHECK(!memcmp(row, data, sizeof(row)));

    be->exec_release(dev, ctx, e);
    be->buffer_destroy(dev, ctx, arena);
    be->weights_release(dev, w);
    be->close(dev);
    vkl_graph_destroy(g);
    vkl_context_destroy(ctx);
    if (failures) fprintf(stderr, "test_ref_traffic: %d failures\n", failures);
    return failures ? 1 : 0;
}
