/* The device's memory bandwidth as its shader cores move it: a compute
 * shader (copy_vec4.comp) copies a large buffer, 16 bytes per invocation,
 * timed with GPU timestamps; bytes read + written per second, the best of
 * the medians of batches of copies run for half a second. That is the
 * roofline vkbench holds memory-bound kernels to (vkCmdCopyBuffer may run
 * on a copy engine with other limits). The best batch, not the last: on an
 * H100 fresh from idle the first measurement of a process read 1,692 GB/s
 * against 2,969 a minute later, the clocks still ramping after a quarter
 * second. The source holds a non-zero pattern: copying never-written memory
 * could be cheaper than copying data. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdlib.h>
#include <time.h>

#include "vk_internal.h"

#define COPIES 9
#define WG 256u
#define RUN_SECONDS 0.5

static double seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct copy_run {
    vkl_vk_buffer src, dst;
    VkQueryPool q;
    VkDescriptorPool pool;
} copy_run;

static vkl_status measure(vkl_backend_device *dev, size_t bytes, copy_run *r, double *bytes_per_second) {
    const uint64_t n = bytes / 16;
    if (!n || n > UINT32_MAX)
        return vkl_fail(dev->ctx, VKL_ERR_INVALID_ARGUMENT, "vulkan: copy bandwidth over %zu bytes", bytes);
    vkl_status st = vkl_vk_buffer_alloc(dev, VKL_BUFFER_DEVICE, bytes, &r->src);
    if (!st) st = vkl_vk_buffer_alloc(dev, VKL_BUFFER_DEVICE, bytes, &r->dst);
    VkQueryPoolCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                .queryCount = 2 * COPIES};
    if (!st) st = VKL_VKD(dev, vkCreateQueryPool, (dev->device, &qi, NULL, &r->q));
    const vkl_vk_pipeline *pl = NULL;
    const uint32_t spec[1] = {WG};
    if (!st) st = vkl_vk_pipeline_get(dev, "copy_vec4", 2, spec, 1, &pl);
    VkPipeline pipe = pl ? pl->pipeline : VK_NULL_HANDLE;
    const VkDescriptorBufferInfo b[2] = {{r->src.buf, 0, n * 16}, {r->dst.buf, 0, n * 16}};
    VkDescriptorSet set = VK_NULL_HANDLE;
    if (!st) st = vkl_vk_set_once(dev, 2, b, &r->pool, &set);
    uint64_t groups = (n + WG - 1) / WG;
    if (groups > dev->props.limits.maxComputeWorkGroupCount[0]) groups = dev->props.limits.maxComputeWorkGroupCount[0];
    const uint32_t grid[3] = {(uint32_t)groups, 1, 1}, push[1] = {(uint32_t)n};
    uint64_t t[2 * COPIES], d[COPIES], best = 0;
    const uint64_t mask = dev->timestamp_bits >= 64 ? ~0ull : (1ull << dev->timestamp_bits) - 1;
    const double t0 = seconds();
    for (int run = 0; !st && (run < 2 || seconds() - t0 < RUN_SECONDS); run++) {
        VkCommandBuffer cmd;
        if ((st = vkl_vk_once_begin(dev, &cmd))) break;
        dev->vk.vkCmdResetQueryPool(cmd, r->q, 0, 2 * COPIES);
        if (run == 0) dev->vk.vkCmdFillBuffer(cmd, r->src.buf, 0, VK_WHOLE_SIZE, 0x3F800000u); /* 1.0f */
        vkl_vk_barrier_all(dev, cmd);
        for (uint32_t i = 0; i < COPIES; i++) {
            dev->vk.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, r->q, 2 * i);
            vkl_vk_cmd_dispatch(dev, cmd, pipe, 2, set, push, 1, grid);
            dev->vk.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, r->q, 2 * i + 1);
            vkl_vk_barrier_all(dev, cmd);
        }
        st = vkl_vk_once_end(dev);
        if (!st)
            st = VKL_VKD(dev, vkGetQueryPoolResults, (dev->device, r->q, 0, 2 * COPIES, sizeof(t), t, sizeof(uint64_t),
                                                      VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
        if (st || run == 0) continue; /* the first batch also filled the source */
        for (uint32_t i = 0; i < COPIES; i++) d[i] = (t[2 * i + 1] - t[2 * i]) & mask;
        qsort(d, COPIES, sizeof(d[0]), cmp_u64);
        if (!best || d[COPIES / 2] < best) best = d[COPIES / 2];
    }
    if (st) return st;
    const double s = (double)best * dev->props.limits.timestampPeriod * 1e-9;
    if (s <= 0) return vkl_fail(dev->ctx, VKL_ERR_DEVICE, "vulkan: a %zu-byte copy timed at 0 ns", bytes);
    *bytes_per_second = 2.0 * (double)(n * 16) / s;
    return VKL_OK;
}

vkl_status vkl_vk_copy_bandwidth(vkl_backend_device *dev, size_t bytes, double *bytes_per_second) {
    *bytes_per_second = 0;
    if (!dev->timestamp_bits)
        return vkl_fail(dev->ctx, VKL_ERR_UNSUPPORTED, "vulkan: copy bandwidth needs timestamps, which %s lacks",
                        dev->caps.device_name);
    copy_run r = {0};
    vkl_status st = measure(dev, bytes, &r, bytes_per_second);
    if (r.pool) dev->vk.vkDestroyDescriptorPool(dev->device, r.pool, NULL);
    if (r.q) dev->vk.vkDestroyQueryPool(dev->device, r.q, NULL);
    vkl_vk_buffer_free(dev, &r.src);
    vkl_vk_buffer_free(dev, &r.dst);
    return st;
}
