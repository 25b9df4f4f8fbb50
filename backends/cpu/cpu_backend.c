/* The cpu backend's vtable: the shared host executor (backends/ref/
 * host_exec.h) running this backend's kernels where it has them (the matrix
 * products, on weights repacked at load; attention's rows on all threads),
 * ref's kernels on slices over all threads for the elementwise ops and RoPE
 * (cpu_split.c), and ref's for every other op. */
#include "../ref/host_exec.h"
#include "cpu_backend.h"

static const vkl_ref_kernel cpu_kernels[VKL_OP_COUNT_] = {
    [VKL_OP_QUANT_MAT_MUL] = vkl_cpu_quant_mat_mul,
    [VKL_OP_MAT_MUL] = vkl_cpu_mat_mul,
    [VKL_OP_ATTENTION] = vkl_cpu_attention,
    [VKL_OP_RMS_NORM] = vkl_cpu_rms_norm,
    [VKL_OP_ADD] = vkl_cpu_add,
    [VKL_OP_SUB] = vkl_cpu_sub,
    [VKL_OP_MUL] = vkl_cpu_mul,
    [VKL_OP_DIV] = vkl_cpu_div,
    [VKL_OP_SILU_MUL] = vkl_cpu_silu_mul,
    [VKL_OP_ROPE] = vkl_cpu_rope,
};

/* Kernels that need more scratch than the executor's rule. */
static const vkl_host_scratch_fn cpu_scratch[VKL_OP_COUNT_] = {
    [VKL_OP_ATTENTION] = vkl_cpu_attention_scratch,
};

static vkl_status cpu_prepare(vkl_backend_device *dev, vkl_context *ctx, const vkl_graph *g, vkl_backend_weights *w,
                              const vkl_memory_map *mem, const vkl_binding *b, vkl_backend_exec **out) {
    if (!w || w->g != vkl_graph_weight_source(g))
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "cpu: prepare needs the weights loaded from the same graph");
    const vkl_host_kernels kernels = {"cpu", cpu_kernels, cpu_scratch, w, dev->profile};
    return vkl_host_prepare(dev, ctx, g, &kernels, mem, b, out);
}

const vkl_backend_vtable vkl_backend_cpu = {
    .name = "cpu",
    .probe = vkl_cpu_probe,
    .open = vkl_cpu_open,
    .close = vkl_cpu_close,
    .caps = vkl_cpu_caps,
    .weights_load = vkl_cpu_weights_load,
    .weights_release = vkl_cpu_weights_release,
    .prepare = cpu_prepare,
    .int8_peak = vkl_cpu_int8_peak,
    .worker_speeds = vkl_cpu_worker_speeds,
    .node_times = vkl_host_node_times,
    VKL_HOST_EXEC_VTABLE_ENTRIES,
};
