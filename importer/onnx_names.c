/* Tensor names of the ONNX graph: a hash map to graph tensor indexes (real
 * models have tens of thousands of names; the graph's own lookup is a
 * linear scan) and the helpers that create tensors through it. */
#include <stdio.h>
#include <string.h>

#include "onnx_internal.h"

static uint32_t hash_name(const char *s) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

vkl_status onnx_names_init(onnx_builder *b, uint32_t expected) {
    uint32_t cap = 64;
    while (cap < expected && cap < (1u << 30)) cap *= 2;
    b->names.slots = vkl_malloc(b->ctx, (size_t)cap * sizeof(uint32_t));
    if (!b->names.slots) return VKL_ERR_OUT_OF_MEMORY;
    memset(b->names.slots, 0xff, (size_t)cap * sizeof(uint32_t));
    b->names.cap = cap;
    b->names.count = 0;
    return VKL_OK;
}

void onnx_names_free(onnx_builder *b) {
    vkl_free(b->ctx, b->names.slots);
    b->names.slots = NULL;
    b->names.cap = b->names.count = 0;
}

bool onnx_names_get(const onnx_builder *b, const char *name, uint32_t *id) {
    const onnx_names *m = &b->names;
    uint32_t mask = m->cap - 1;
    for (uint32_t i = hash_name(name) & mask;; i = (i + 1) & mask) {
        uint32_t t = m->slots[i];
        if (t == VKL_NONE) return false;
        if (!strcmp(b->g->tensors[t].name, name)) {
            *id = t;
            return true;
        }
    }
}

static void insert_slot(uint32_t *slots, uint32_t cap, uint32_t hash, uint32_t id) {
    uint32_t i = hash & (cap - 1);
    while (slots[i] != VKL_NONE) i = (i + 1) & (cap - 1);
    slots[i] = id;
}

/* Keeps the load factor under 1/2 so probes stay short. */
static vkl_status grow_names(onnx_builder *b) {
    onnx_names *m = &b->names;
    if ((m->count + 1) * 2 <= m->cap) return VKL_OK;
    if (m->cap >= (1u << 30)) return vkl_fail(b->ctx, VKL_ERR_OVERFLOW, "too many tensor names");
    uint32_t cap = m->cap * 2;
    uint32_t *slots = vkl_malloc(b->ctx, (size_t)cap * sizeof(uint32_t));
    if (!slots) return VKL_ERR_OUT_OF_MEMORY;
    memset(slots, 0xff, (size_t)cap * sizeof(uint32_t));
    for (uint32_t i = 0; i < m->cap; i++)
        if (m->slots[i] != VKL_NONE)
            insert_slot(slots, cap, hash_name(b->g->tensors[m->slots[i]].name), m->slots[i]);
    vkl_free(b->ctx, m->slots);
    m->slots = slots;
    m->cap = cap;
    return VKL_OK;
}

vkl_status onnx_add_tensor(onnx_builder *b, const char *name, vkl_dtype dtype, vkl_tensor_kind kind,
                           const vkl_shape *shape, uint32_t *id) {
    vkl_status st = grow_names(b);
    if (st) return st;
    st = vkl_graph_add_tensor(b->g, name, dtype, kind, shape, id);
    if (st) return st;
    insert_slot(b->names.slots, b->names.cap, hash_name(name), *id);
    b->names.count++;
    return VKL_OK;
}

vkl_status onnx_tensor_ref(onnx_builder *b, const char *name, uint32_t *id) {
    if (onnx_names_get(b, name, id)) return VKL_OK;
    return onnx_add_tensor(b, name, VKL_DTYPE_INVALID, VKL_TENSOR_ACTIVATION, NULL, id);
}

/* base + suffix, then base + suffix + ".N" until the name is free. Every
 * ONNX name is registered before any node is converted, so a name made here
 * cannot take one the model defines later. */
vkl_status onnx_add_unique_tensor(onnx_builder *b, const char *base, const char *suffix, vkl_dtype dtype,
                                  vkl_tensor_kind kind, const vkl_shape *shape, uint32_t *id) {
    size_t len = strlen(base) + strlen(suffix) + 16;
    char *name = vkl_malloc(b->ctx, len);
    if (!name) return VKL_ERR_OUT_OF_MEMORY;
    snprintf(name, len, "%s%s", base, suffix);
    uint32_t existing;
    for (uint32_t k = 1; onnx_names_get(b, name, &existing); k++) snprintf(name, len, "%s%s.%u", base, suffix, k);
    vkl_status st = onnx_add_tensor(b, name, dtype, kind, shape, id);
    vkl_free(b->ctx, name);
    return st;
}

vkl_status onnx_add_weight(onnx_builder *b, const char *base, const char *suffix, vkl_dtype dtype,
                           const vkl_shape *shape, const void *data, size_t nbytes, bool copy, uint32_t *id) {
    vkl_status st;
    if (!suffix) {
        if (onnx_names_get(b, base, id))
            return vkl_fail(b->ctx, VKL_ERR_FORMAT, "tensor '%s' is defined twice", base);
        st = onnx_add_tensor(b, base, dtype, VKL_TENSOR_WEIGHT, shape, id);
    } else {
        st = onnx_add_unique_tensor(b, base, suffix, dtype, VKL_TENSOR_WEIGHT, shape, id);
    }
    /* Zero-element weights are legal; a non-NULL pointer (never read) keeps
     * them "known" for code that tests data != NULL. */
    static const uint8_t empty_payload[1];
    if (!nbytes) data = empty_payload, copy = false;
    if (!st) st = vkl_graph_set_data(b->g, *id, data, nbytes, copy);
    if (!st) b->stats->weight_bytes += nbytes;
    return st;
}

vkl_status onnx_add_i64_weight(onnx_builder *b, const char *base, const char *suffix, const int64_t *v, size_t n,
                               bool scalar, uint32_t *id) {
    vkl_shape s = {0};
    vkl_status st = VKL_OK;
    if (!scalar) {
        s.rank = 1;
        st = vkl_expr_const(b->g->syms, (int64_t)n, &s.dims[0]);
    }
    if (!st) st = onnx_add_weight(b, base, suffix, VKL_DTYPE_I64, &s, v, n * sizeof(int64_t), true, id);
    return st;
}
