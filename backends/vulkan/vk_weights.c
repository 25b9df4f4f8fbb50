/* weights_load: every weight read by a node this backend runs goes to
 * device memory once. Quantized weights (E0M4, int4, int8) are repacked with
 * engine/quant's GPU packer (16-byte vector loads along K, codes and block
 * parameters in two planes); other weights keep their bytes. The graph's
 * canonical bytes (often a read-only mmap of the .vkm) are only read.
 * Every weight a live node reads is loaded, whatever its op, and every
 * weight a live node's TENSOR attribute names (Constant's value: its
 * kernel copies it). */
#include <string.h>

#include "vk_internal.h"

static VkDeviceSize round_up(VkDeviceSize x, VkDeviceSize a) { return (x + a - 1) / a * a; }

void vkl_vk_weight_free(vkl_backend_device *dev, vkl_vk_weight *w) {
    vkl_vk_buffer_free(dev, &w->buf);
    memset(w, 0, sizeof(*w));
}

static vkl_status check_range(vkl_backend_device *dev, VkDeviceSize bytes, const char *what) {
    if (bytes <= dev->props.limits.maxStorageBufferRange) return VKL_OK;
    return vkl_fail(dev->ctx, VKL_ERR_UNSUPPORTED,
                    "vulkan: %s of %llu bytes exceeds the device's maxStorageBufferRange (%u)", what,
                    (unsigned long long)bytes, dev->props.limits.maxStorageBufferRange);
}

vkl_status vkl_vk_weight_pack(vkl_backend_device *dev, vkl_dtype dtype, uint32_t group, int64_t rows, int64_t cols,
                              const void *canon, size_t canon_bytes, vkl_vk_weight *w) {
    memset(w, 0, sizeof(*w));
    vkl_status st = vkl_quant_gpu_layout_make(dev->ctx, dtype, group, rows, cols, &w->lay);
    if (!st) st = check_range(dev, w->lay.qs_bytes, "a weight's code plane");
    if (!st) st = check_range(dev, w->lay.params_bytes, "a weight's parameter plane");
    if (st) return st;
    /* The params plane moves to an offset a descriptor may start at. */
    const VkDeviceSize align = dev->caps.buffer_alignment;
    w->qs_offset = 0;
    w->qs_range = w->lay.qs_bytes;
    w->params_offset = round_up(w->lay.qs_bytes, align);
    w->params_range = w->lay.params_bytes;
    unsigned char *host = vkl_malloc(dev->ctx, w->lay.total_bytes ? w->lay.total_bytes : 1);
    if (!host) return VKL_ERR_OUT_OF_MEMORY;
    st = vkl_quant_pack_gpu(dev->ctx, &w->lay, canon, canon_bytes, host, w->lay.total_bytes);
    if (!st) st = vkl_vk_buffer_alloc(dev, VKL_BUFFER_DEVICE, (size_t)(w->params_offset + w->params_range), &w->buf);
    if (!st) st = vkl_vk_buffer_upload(dev, &w->buf, 0, host, w->lay.qs_bytes);
    if (!st)
        st = vkl_vk_buffer_upload(dev, &w->buf, (size_t)w->params_offset, host + w->lay.params_offset,
                                  w->lay.params_bytes);
    vkl_free(dev->ctx, host);
    if (st) vkl_vk_weight_free(dev, w);
    return st;
}

static vkl_status load_one(vkl_backend_device *dev, const vkl_graph *g, uint32_t t, vkl_vk_weight *w) {
    const vkl_tensor *tt = &g->tensors[t];
    int64_t dims[VKL_MAX_RANK], count;
    vkl_status st = vkl_shape_eval(dev->ctx, g, &tt->shape, NULL, 0, dims, &count);
    if (st) return vkl_fail_prefix(dev->ctx, st, "vulkan: weight '%s'", tt->name);
    if (vkl_dtype_is_quantized(tt->dtype)) {
        const int64_t K = tt->shape.rank ? dims[tt->shape.rank - 1] : 0;
        st = K > 0 ? vkl_vk_weight_pack(dev, tt->dtype, tt->group, count / K, K, tt->data, tt->nbytes, w)
                   : vkl_fail(dev->ctx, VKL_ERR_SHAPE, "quantized weight has no elements");
        return st ? vkl_fail_prefix(dev->ctx, st, "vulkan: weight '%s'", tt->name) : VKL_OK;
    }
    memset(w, 0, sizeof(*w));
    if ((st = check_range(dev, tt->nbytes, "a weight"))) return vkl_fail_prefix(dev->ctx, st, "'%s'", tt->name);
    /* whole words: kernels read tensors as uint[] (shaders/vulkan/tensor.glsl);
     * an empty weight (a ReduceXxx's empty axes) still gets a buffer, since
     * a descriptor needs one, that nothing reads */
    st = vkl_vk_buffer_alloc(dev, VKL_BUFFER_DEVICE, (size_t)round_up(tt->nbytes ? tt->nbytes : 1, 16), &w->buf);
    if (!st && tt->nbytes) st = vkl_vk_buffer_upload(dev, &w->buf, 0, tt->data, tt->nbytes);
    if (st) {
        vkl_vk_weight_free(dev, w);
        return vkl_fail_prefix(dev->ctx, st, "vulkan: weight '%s'", tt->name);
    }
    w->qs_range = round_up(tt->nbytes ? tt->nbytes : 1, 4);
    return VKL_OK;
}

vkl_status vkl_vk_weights_load(vkl_backend_device *dev, const vkl_graph *g, vkl_backend_weights **out) {
    *out = NULL;
    vkl_backend_weights *ws = vkl_calloc(dev->ctx, 1, sizeof(*ws));
    if (!ws) return VKL_ERR_OUT_OF_MEMORY;
    ws->g = g;
    ws->n = g->n_tensors;
    ws->w = vkl_calloc(dev->ctx, g->n_tensors ? g->n_tensors : 1, sizeof(*ws->w));
    vkl_status st = ws->w ? VKL_OK : VKL_ERR_OUT_OF_MEMORY;
    for (uint32_t i = 0; !st && i < g->n_nodes; i++) {
        const vkl_node *n = &g->nodes[i];
        if (n->dead) continue;
        /* its inputs, then the weights its TENSOR attributes name (Constant's value) */
        for (uint32_t j = 0; !st && j < n->n_inputs + n->n_attrs; j++) {
            uint32_t t = j < n->n_inputs ? n->inputs[j] : VKL_NONE;
            if (j >= n->n_inputs) {
                const vkl_attr *a = &n->attrs[j - n->n_inputs];
                if (a->kind != VKL_ATTR_TENSOR || a->i < 0 || a->i >= (int64_t)g->n_tensors) continue;
                t = (uint32_t)a->i;
            }
            if (t == VKL_NONE || g->tensors[t].kind != VKL_TENSOR_WEIGHT || ws->w[t].buf.buf ||
                (!g->tensors[t].nbytes && vkl_dtype_is_quantized(g->tensors[t].dtype)))
                continue;
            st = load_one(dev, g, t, &ws->w[t]);
            if (!st) ws->bytes += ws->w[t].buf.size;
        }
    }
    if (st) {
        vkl_vk_weights_release(dev, ws);
        return st;
    }
    *out = ws;
    return VKL_OK;
}

void vkl_vk_weights_release(vkl_backend_device *dev, vkl_backend_weights *ws) {
    if (!ws) return;
    for (uint32_t i = 0; ws->w && i < ws->n; i++) vkl_vk_weight_free(dev, &ws->w[i]);
    vkl_free(dev->ctx, ws->w);
    vkl_free(dev->ctx, ws);
}
