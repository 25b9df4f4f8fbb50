/* Device memory: one VkBuffer and allocation per buffer (the arena is one
 * such buffer; a sub-allocator can come when models bring hundreds of
 * weights), host-visible memory mapped for good, and blocking copies to and
 * from device-local memory through one host-visible staging buffer, in
 * chunks. On unified-memory devices (lavapipe, most phones) device-local
 * memory is usually host-visible and copies are a memcpy. */
#include <string.h>

#include "vk_internal.h"

#define STAGING_MAX ((size_t)64 << 20)

/* The first type (drivers list them best first) in `bits` with need|want,
 * else with need alone; -1 if none. */
static int memory_type(const vkl_backend_device *dev, uint32_t bits, VkMemoryPropertyFlags need,
                       VkMemoryPropertyFlags want) {
    for (int pass = 0; pass < 2; pass++) {
        VkMemoryPropertyFlags flags = pass == 0 ? need | want : need;
        for (uint32_t i = 0; i < dev->memory.memoryTypeCount; i++)
            if ((bits & (1u << i)) && (dev->memory.memoryTypes[i].propertyFlags & flags) == flags) return (int)i;
    }
    return -1;
}

vkl_status vkl_vk_buffer_alloc(vkl_backend_device *dev, vkl_buffer_usage usage, size_t bytes, vkl_vk_buffer *out) {
    memset(out, 0, sizeof(*out));
    if (bytes > SIZE_MAX - 16) return vkl_fail(dev->ctx, VKL_ERR_OVERFLOW, "vulkan: buffer of %zu bytes", bytes);
    /* Vulkan has no empty buffers, and fills/copies want multiples of 4. */
    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                             .size = bytes ? (bytes + 15) / 16 * 16 : 16,
                             .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                      VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                             .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    vkl_status st = VKL_VKD(dev, vkCreateBuffer, (dev->device, &bi, NULL, &out->buf));
    if (st) return st;
    VkMemoryRequirements req;
    dev->vk.vkGetBufferMemoryRequirements(dev->device, out->buf, &req);
    VkMemoryPropertyFlags need = 0, want = 0;
    switch (usage) {
    case VKL_BUFFER_DEVICE: need = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT; break;
    case VKL_BUFFER_UPLOAD: need = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT; break;
    case VKL_BUFFER_READBACK:
        need = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
        want = VK_MEMORY_PROPERTY_HOST_CACHED_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
        break;
    }
    int type = memory_type(dev, req.memoryTypeBits, need, want);
    if (type < 0 && usage == VKL_BUFFER_DEVICE) type = memory_type(dev, req.memoryTypeBits, 0, 0);
    if (type < 0) {
        vkl_vk_buffer_free(dev, out);
        return vkl_fail(dev->ctx, VKL_ERR_UNSUPPORTED, "vulkan: no memory type for a %s buffer (flags 0x%x)",
                        usage == VKL_BUFFER_DEVICE ? "device" : usage == VKL_BUFFER_UPLOAD ? "upload" : "readback",
                        (unsigned)need);
    }
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .allocationSize = req.size,
                               .memoryTypeIndex = (uint32_t)type};
    st = VKL_VKD(dev, vkAllocateMemory, (dev->device, &ai, NULL, &out->mem));
    dev->work.allocations++;
    if (st) {
        vkl_fail_prefix(dev->ctx, st, "%zu-byte buffer", bytes);
        vkl_vk_buffer_free(dev, out);
        return st;
    }
    st = VKL_VKD(dev, vkBindBufferMemory, (dev->device, out->buf, out->mem, 0));
    VkMemoryPropertyFlags flags = dev->memory.memoryTypes[type].propertyFlags;
    if (!st && (flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT))
        st = VKL_VKD(dev, vkMapMemory, (dev->device, out->mem, 0, VK_WHOLE_SIZE, 0, &out->mapped));
    if (st) {
        vkl_vk_buffer_free(dev, out);
        return st;
    }
    out->size = bytes;
    if (dev->memory.memoryHeaps[dev->memory.memoryTypes[type].heapIndex].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) {
        out->device_local = req.size;
        dev->device_bytes += req.size;
    }
    out->coherent = (flags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
    return VKL_OK;
}

void vkl_vk_buffer_free(vkl_backend_device *dev, vkl_vk_buffer *b) {
    if (!b) return;
    if (b->buf) dev->vk.vkDestroyBuffer(dev->device, b->buf, NULL);
    if (b->mem) dev->vk.vkFreeMemory(dev->device, b->mem, NULL); /* unmaps too */
    dev->device_bytes -= b->device_local;
    memset(b, 0, sizeof(*b));
}

void vkl_vk_barrier_all(vkl_backend_device *dev, VkCommandBuffer cmd) {
    const VkPipelineStageFlags stages =
        VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT;
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask =
                              VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                           VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT |
                                           VK_ACCESS_HOST_READ_BIT};
    dev->vk.vkCmdPipelineBarrier(cmd, stages, stages, 0, 1, &mb, 0, NULL, 0, NULL);
}

void vkl_vk_barrier_compute(vkl_backend_device *dev, VkCommandBuffer cmd) {
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
    dev->vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                                 &mb, 0, NULL, 0, NULL);
}

vkl_status vkl_vk_once_begin(vkl_backend_device *dev, VkCommandBuffer *cmd) {
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    *cmd = dev->once;
    dev->work.recordings++;
    return VKL_VKD(dev, vkBeginCommandBuffer, (dev->once, &bi));
}

vkl_status vkl_vk_once_end(vkl_backend_device *dev) {
    vkl_status st = VKL_VKD(dev, vkEndCommandBuffer, (dev->once));
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &dev->once};
    if (!st) st = vkl_vk_submit(dev, &si, dev->once_fence);
    dev->work.submits++;
    if (!st) st = VKL_VKD(dev, vkWaitForFences, (dev->device, 1, &dev->once_fence, VK_TRUE, VKL_VK_WAIT_NS));
    dev->work.waits++;
    if (!st) st = VKL_VKD(dev, vkResetFences, (dev->device, 1, &dev->once_fence));
    return st;
}

/* The staging buffer, at least min(want, STAGING_MAX) bytes; *size gets it. */
static vkl_status staging(vkl_backend_device *dev, size_t want, size_t *size) {
    if (want > STAGING_MAX) want = STAGING_MAX;
    if (dev->staging.buf && dev->staging.size >= want) {
        *size = dev->staging.size;
        return VKL_OK;
    }
    vkl_vk_buffer_free(dev, &dev->staging);
    /* READBACK: host-visible, cached where possible; fine for writing too */
    vkl_status st = vkl_vk_buffer_alloc(dev, VKL_BUFFER_READBACK, want, &dev->staging);
    *size = dev->staging.size;
    return st;
}

vkl_status vkl_vk_buffer_flush(vkl_backend_device *dev, vkl_vk_buffer *b) {
    if (b->coherent) return VKL_OK;
    VkMappedMemoryRange r = {.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, .memory = b->mem, .size = VK_WHOLE_SIZE};
    return VKL_VKD(dev, vkFlushMappedMemoryRanges, (dev->device, 1, &r));
}

static vkl_status invalidate(vkl_backend_device *dev, vkl_vk_buffer *b) {
    if (b->coherent) return VKL_OK;
    VkMappedMemoryRange r = {.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, .memory = b->mem, .size = VK_WHOLE_SIZE};
    return VKL_VKD(dev, vkInvalidateMappedMemoryRanges, (dev->device, 1, &r));
}

static vkl_status check_range(vkl_backend_device *dev, const vkl_vk_buffer *b, size_t offset, size_t bytes) {
    size_t end;
    if (!vkl_add_size(offset, bytes, &end) || end > b->size)
        return vkl_fail(dev->ctx, VKL_ERR_INVALID_ARGUMENT, "vulkan: buffer access [%zu, +%zu) outside its %zu bytes",
                        offset, bytes, (size_t)b->size);
    return VKL_OK;
}

/* One staged chunk: staging <-> b, with barriers on both sides so it is
 * ordered against whatever ran on the queue before and runs after. */
static vkl_status staged_copy(vkl_backend_device *dev, vkl_vk_buffer *b, size_t offset, size_t n, bool to_device) {
    VkCommandBuffer cmd;
    vkl_status st = vkl_vk_once_begin(dev, &cmd);
    if (st) return st;
    vkl_vk_barrier_all(dev, cmd);
    VkBufferCopy region = {.srcOffset = to_device ? 0 : offset, .dstOffset = to_device ? offset : 0, .size = n};
    dev->vk.vkCmdCopyBuffer(cmd, to_device ? dev->staging.buf : b->buf, to_device ? b->buf : dev->staging.buf, 1,
                            &region);
    vkl_vk_barrier_all(dev, cmd);
    return vkl_vk_once_end(dev);
}

vkl_status vkl_vk_buffer_upload(vkl_backend_device *dev, vkl_vk_buffer *b, size_t offset, const void *src,
                                size_t bytes) {
    vkl_status st = check_range(dev, b, offset, bytes);
    if (st || !bytes) return st;
    if (b->mapped) {
        memcpy((unsigned char *)b->mapped + offset, src, bytes);
        return vkl_vk_buffer_flush(dev, b);
    }
    size_t cap = 0;
    for (size_t done = 0; !st && done < bytes;) {
        if ((st = staging(dev, bytes - done, &cap))) break;
        size_t n = bytes - done < cap ? bytes - done : cap;
        memcpy(dev->staging.mapped, (const unsigned char *)src + done, n);
        st = vkl_vk_buffer_flush(dev, &dev->staging);
        if (!st) st = staged_copy(dev, b, offset + done, n, true);
        done += n;
    }
    return st;
}

vkl_status vkl_vk_buffer_download(vkl_backend_device *dev, vkl_vk_buffer *b, size_t offset, void *dst, size_t bytes) {
    vkl_status st = check_range(dev, b, offset, bytes);
    if (st || !bytes) return st;
    if (b->mapped) {
        st = invalidate(dev, b);
        if (!st) memcpy(dst, (const unsigned char *)b->mapped + offset, bytes);
        return st;
    }
    size_t cap = 0;
    for (size_t done = 0; !st && done < bytes;) {
        if ((st = staging(dev, bytes - done, &cap))) break;
        size_t n = bytes - done < cap ? bytes - done : cap;
        st = staged_copy(dev, b, offset + done, n, false);
        if (!st) st = invalidate(dev, &dev->staging);
        if (!st) memcpy((unsigned char *)dst + done, dev->staging.mapped, n);
        done += n;
    }
    return st;
}
