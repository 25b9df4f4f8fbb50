/* Timing one dispatch on the device, and the device's memory bandwidth as
 * its shader cores move it: a compute shader (copy_vec4.comp) copies a
 * large buffer, 16 bytes per invocation, timed with GPU timestamps; bytes
 * read + written per second, the best of the medians of batches of copies
 * run for half a second. That is the roofline vkbench holds memory-bound
 * kernels to (vkCmdCopyBuffer may run on a copy engine with other limits).
 * The best batch, not the last: on an H100 fresh from idle the first
 * measurement of a process read 1,692 GB/s against 2,969 a minute later,
 * the clocks still ramping after a quarter second. The source holds a
 * non-zero pattern: copying never-written memory could be cheaper than
 * copying data. The compute peaks (vk_peak.c) use the same timer. */
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

vkl_status vkl_vk_time_dispatch(vkl_backend_device *dev, const vkl_vk_timed *t, double *best_seconds) {
    *best_seconds = 0;
    if (!dev->timestamp_bits)
        return vkl_fail(dev->ctx, VKL_ERR_UNSUPPORTED, "vulkan: timing a dispatch needs timestamps, which %s lacks",
                        dev->caps.device_name);
    VkQueryPool q = VK_NULL_HANDLE;
    VkQueryPoolCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                .queryCount = 2 * COPIES};
    vkl_status st = VKL_VKD(dev, vkCreateQueryPool, (dev->device, &qi, NULL, &q));
    uint64_t ts[2 * COPIES], d[COPIES], best = 0;
    const uint64_t mask = dev->timestamp_bits >= 64 ? ~0ull : (1ull << dev->timestamp_bits) - 1;
    const double t0 = seconds();
    for (int run = 0; !st && (run < 2 || seconds() - t0 < t->seconds); run++) {
        VkCommandBuffer cmd;
        if ((st = vkl_vk_once_begin(dev, &cmd))) break;
        dev->vk.vkCmdResetQueryPool(cmd, q, 0, 2 * COPIES);
        if (run == 0 && t->first) t->first(dev, cmd, t->user);
        vkl_vk_barrier_all(dev, cmd);
        for (uint32_t i = 0; i < COPIES; i++) {
            dev->vk.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, q, 2 * i);
            vkl_vk_cmd_dispatch(dev, cmd, t->pipe, t->n_bind, t->set, t->push, t->n_push, t->groups);
            dev->vk.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, q, 2 * i + 1);
            vkl_vk_barrier_all(dev, cmd);
        }
        st = vkl_vk_once_end(dev);
        if (!st)
            st = VKL_VKD(dev, vkGetQueryPoolResults, (dev->device, q, 0, 2 * COPIES, sizeof(ts), ts, sizeof(uint64_t),
                                                      VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
        if (st || run == 0) continue; /* the first batch also warmed up (and ran `first`) */
        for (uint32_t i = 0; i < COPIES; i++) d[i] = (ts[2 * i + 1] - ts[2 * i]) & mask;
        qsort(d, COPIES, sizeof(d[0]), cmp_u64);
        if (!best || d[COPIES / 2] < best) best = d[COPIES / 2];
    }
    if (q) dev->vk.vkDestroyQueryPool(dev->device, q, NULL);
    if (st) return st;
    *best_seconds = (double)best * dev->props.limits.timestampPeriod * 1e-9;
    if (*best_seconds <= 0) return vkl_fail(dev->ctx, VKL_ERR_DEVICE, "vulkan: a dispatch timed at 0 ns");
    return VKL_OK;
}

static void fill_source(vkl_backend_device *dev, VkCommandBuffer cmd, void *user) {
    dev->vk.vkCmdFillBuffer(cmd, *(VkBuffer *)user, 0, VK_WHOLE_SIZE, 0x3F800000u); /* 1.0f */
}

vkl_status vkl_vk_copy_bandwidth(vkl_backend_device *dev, size_t bytes, double *bytes_per_second) {
    *bytes_per_second = 0;
    if (!dev->timestamp_bits)
        return vkl_fail(dev->ctx, VKL_ERR_UNSUPPORTED, "vulkan: copy bandwidth needs timestamps, which %s lacks",
                        dev->caps.device_name);
    const uint64_t n = bytes / 16;
    if (!n || n > UINT32_MAX)
        return vkl_fail(dev->ctx, VKL_ERR_INVALID_ARGUMENT, "vulkan: copy bandwidth over %zu bytes", bytes);
    vkl_vk_buffer src = {0}, dst = {0};
    VkDescriptorPool pool = VK_NULL_HANDLE;
    vkl_status st = vkl_vk_buffer_alloc(dev, VKL_BUFFER_DEVICE, bytes, &src);
    if (!st) st = vkl_vk_buffer_alloc(dev, VKL_BUFFER_DEVICE, bytes, &dst);
    const vkl_vk_pipeline *pl = NULL;
    const uint32_t spec[1] = {WG};
    if (!st) st = vkl_vk_pipeline_get(dev, "copy_vec4", 2, spec, 1, &pl);
    const VkDescriptorBufferInfo b[2] = {{src.buf, 0, n * 16}, {dst.buf, 0, n * 16}};
    vkl_vk_timed t = {.pipe = pl ? pl->pipeline : VK_NULL_HANDLE, .n_bind = 2, .n_push = 1,
                      .seconds = RUN_SECONDS, .first = fill_source, .user = &src.buf};
    if (!st) st = vkl_vk_set_once(dev, 2, b, &pool, &t.set);
    uint64_t groups = (n + WG - 1) / WG;
    if (groups > dev->props.limits.maxComputeWorkGroupCount[0]) groups = dev->props.limits.maxComputeWorkGroupCount[0];
    t.groups[0] = (uint32_t)groups;
    t.groups[1] = t.groups[2] = 1;
    t.push[0] = (uint32_t)n;
    double s = 0;
    if (!st) st = vkl_vk_time_dispatch(dev, &t, &s);
    if (!st) *bytes_per_second = 2.0 * (double)(n * 16) / s;
    if (pool) dev->vk.vkDestroyDescriptorPool(dev->device, pool, NULL);
    vkl_vk_buffer_free(dev, &src);
    vkl_vk_buffer_free(dev, &dst);
    return st;
}
