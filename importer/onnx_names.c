/* Tensors of the ONNX graph by name (the graph's own hashed lookup: real
 * models have tens of thousands of names) and the helpers that create
 * activations on first reference and weights under fresh names. */
#include <stdio.h>
#include <string.h>

#include "onnx_internal.h"

bool onnx_names_get(const onnx_builder *b, const char *name, uint32_t *id) {
    return vkl_graph_find_tensor(b->g, name, id) == VKL_OK;
}

vkl_status onnx_add_tensor(onnx_builder *b, const char *name, vkl_dtype dtype, vkl_tensor_kind kind,
                           const vkl_shape *shape, uint32_t *id) {
    return vkl_graph_add_tensor(b->g, name, dtype, kind, shape, id);
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
