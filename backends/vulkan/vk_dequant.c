/* GPU dequantization of a weight, for the bit-exactness test: the same
 * packing (engine/quant/pack_gpu.c) and the same decode macros
 * (shaders/vulkan/quant_common.glsl) the matvecs use, writing every f32.
 * The output is filled with NaN bits first, so an element the shader
 * skipped cannot match the reference. */
#include <string.h>

#include "vk_internal.h"
#include "vulkan_backend.h"

#define DQ_WG 256u

typedef struct dq_run {
    vkl_vk_weight w;
    vkl_vk_buffer out;
    VkDescriptorPool pool;
} dq_run;

static vkl_status dispatch(vkl_backend_device *dev, dq_run *r, const char *shader, const uint32_t *push,
                           uint32_t n_push, uint64_t items) {
    const vkl_vk_pipeline *pl;
    const uint32_t spec[1] = {DQ_WG};
    vkl_status st = vkl_vk_pipeline_get(dev, shader, 3, spec, 1, &pl);
    if (st) return st;
    VkPipeline pipe = pl->pipeline;
    const VkDescriptorBufferInfo b[3] = {r->w.piece[0].qs, r->w.piece[0].params, {r->out.buf, 0, r->out.size}};
    VkDescriptorSet set;
    if ((st = vkl_vk_set_once(dev, 3, b, &r->pool, &set))) return st;
    uint64_t groups = (items + DQ_WG - 1) / DQ_WG; /* the shaders loop over the rest */
    if (groups > 65535) groups = 65535;
    const uint32_t grid[3] = {(uint32_t)groups, 1, 1};
    VkCommandBuffer cmd;
    if ((st = vkl_vk_once_begin(dev, &cmd))) return st;
    dev->vk.vkCmdFillBuffer(cmd, r->out.buf, 0, VK_WHOLE_SIZE, 0xFFFFFFFFu); /* NaN */
    vkl_vk_barrier_all(dev, cmd);
    vkl_vk_cmd_dispatch(dev, cmd, pipe, 3, set, push, n_push, grid);
    vkl_vk_barrier_all(dev, cmd);
    return vkl_vk_once_end(dev);
}

static vkl_status dequantize(vkl_backend_device *dev, vkl_dtype dtype, uint32_t group, int64_t rows, int64_t cols,
                             const void *canon, size_t canon_bytes, float *out, dq_run *r) {
    const char *shader = dtype == VKL_DTYPE_Q_E0M4 ? "quant_dequant_e0m4"
                         : dtype == VKL_DTYPE_Q_INT4 ? "quant_dequant_int4"
                         : dtype == VKL_DTYPE_Q_INT8 ? "quant_dequant_int8"
                                                     : NULL;
    if (!shader)
        return vkl_fail(dev->ctx, VKL_ERR_UNSUPPORTED, "vulkan dequantize: %s is not a block format",
                        vkl_dtype_name(dtype));
    if (group && cols % group) /* the shaders index whole groups (QuantMatMul reads short ones) */
        return vkl_fail(dev->ctx, VKL_ERR_UNSUPPORTED, "vulkan dequantize: [%lld, %lld] has a short last group "
                        "(group %u); this test path takes whole groups only", (long long)rows, (long long)cols, group);
    vkl_status st = vkl_vk_weight_pack(dev, dtype, group, rows, cols, canon, canon_bytes, &r->w);
    if (st) return st;
    if (r->w.n_pieces != 1)
        return vkl_fail(dev->ctx, VKL_ERR_UNSUPPORTED, "vulkan dequantize: [%lld, %lld] is over the binding limit",
                        (long long)rows, (long long)cols);
    const uint64_t elems = (uint64_t)rows * (uint64_t)cols; /* <= canonical bytes * 2: no overflow */
    if (elems * 4 >= (1ull << 32))
        return vkl_fail(dev->ctx, VKL_ERR_UNSUPPORTED, "vulkan dequantize: [%lld, %lld] exceeds 32-bit indexing",
                        (long long)rows, (long long)cols);
    if ((st = vkl_vk_buffer_alloc(dev, VKL_BUFFER_DEVICE, (size_t)elems * 4, &r->out))) return st;
    const uint32_t push[4] = {(uint32_t)rows, (uint32_t)cols, group, (uint32_t)r->w.lay.row_stride};
    const bool four_bit = dtype != VKL_DTYPE_Q_INT8;
    if (elems && (st = dispatch(dev, r, shader, push, four_bit ? 3 : 4, four_bit ? elems / 8 : elems))) return st;
    return vkl_vk_buffer_download(dev, &r->out, 0, out, (size_t)elems * 4);
}

vkl_status vkl_vk_dequantize(vkl_backend_device *dev, vkl_context *ctx, vkl_dtype dtype, uint32_t group, int64_t rows,
                             int64_t cols, const void *canon, size_t canon_bytes, float *out) {
    dq_run r;
    memset(&r, 0, sizeof(r));
    vkl_vk_enter(dev, ctx); /* the one-shot command buffer, the queue, the pipelines */
    vkl_status st = dequantize(dev, dtype, group, rows, cols, canon, canon_bytes, out, &r);
    if (r.pool) dev->vk.vkDestroyDescriptorPool(dev->device, r.pool, NULL);
    vkl_vk_buffer_free(dev, &r.out);
    vkl_vk_weight_free(dev, &r.w);
    return vkl_vk_leave(dev, vkl_vk_validation_status(dev, st, "dequantize"));
}
