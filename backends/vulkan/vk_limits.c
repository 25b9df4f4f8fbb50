/* What the device lets us bind and allocate: the binding limit
 * (maxStorageBufferRange, lowered by a testing knob), the allocation limit
 * (maxMemoryAllocationSize), bindings of a sub-range of a larger tensor
 * (how recorders take tensors in pieces), and the memory budget a model's
 * weights and a session's arena are checked against before allocating. */
#include "../../engine/ops.h"
#include "vk_internal.h"

/* Below this, even one row of a small model's weight would not fit. */
#define MIN_BINDING_KNOB 4096u

vkl_status vkl_vk_limits_init(vkl_backend_device *dev, const vkl_vulkan_options *o) {
    VkPhysicalDeviceMaintenance3Properties m3 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &m3};
    dev->vki.vkGetPhysicalDeviceProperties2(dev->phys, &p2);
    /* Vulkan 1.1 guarantees at least 1 GiB; an older device reports nothing */
    dev->alloc_limit = m3.maxMemoryAllocationSize ? m3.maxMemoryAllocationSize : (VkDeviceSize)1 << 30;
    /* multiples of 16: vec4 kernels read whole uvec4s of every range */
    dev->bind_limit = dev->props.limits.maxStorageBufferRange & ~(VkDeviceSize)15;
    dev->bind_knob = false;
    if (o->max_binding_bytes) {
        if (o->max_binding_bytes < MIN_BINDING_KNOB)
            return vkl_fail(dev->ctx, VKL_ERR_INVALID_ARGUMENT,
                            "vulkan: option max_binding_bytes = %llu: want 0 (the device's) or at least %u",
                            (unsigned long long)o->max_binding_bytes, MIN_BINDING_KNOB);
        if (o->max_binding_bytes < dev->bind_limit) {
            dev->bind_limit = o->max_binding_bytes & ~(uint64_t)15;
            dev->bind_knob = true;
        }
    }
    if (dev->alloc_limit < dev->bind_limit) dev->bind_limit = dev->alloc_limit & ~(VkDeviceSize)15;
    dev->budget_cap = o->memory_budget_bytes;
    return VKL_OK;
}

const char *vkl_vk_bind_limit_name(const vkl_backend_device *dev) {
    return dev->bind_knob ? "max_binding_bytes (VKL_VK_MAX_BINDING_BYTES)" : "maxStorageBufferRange";
}

bool vkl_vk_sub_range(const vkl_backend_device *dev, VkDescriptorBufferInfo whole, VkDeviceSize off,
                      VkDeviceSize bytes, VkDescriptorBufferInfo *out, uint32_t *skip) {
    const VkDeviceSize align = dev->props.limits.minStorageBufferOffsetAlignment;
    if (off > whole.range || bytes > whole.range - off) return false;
    const VkDeviceSize start = whole.offset + off, at = start / align * align;
    const VkDeviceSize range = (start - at + bytes + 3) & ~(VkDeviceSize)3;
    if (range > dev->bind_limit || (start - at) % 4) return false;
    *out = (VkDescriptorBufferInfo){whole.buffer, at, range ? range : 4};
    *skip = (uint32_t)((start - at) / 4);
    return true;
}

bool vkl_vk_takes_pieces(uint32_t op) {
    return op == VKL_OP_QUANT_MAT_MUL || op == VKL_OP_GATHER || op == VKL_OP_MAT_MUL;
}

/* The device-local heap the weights and arenas go to: the largest. */
static uint32_t device_heap(const vkl_backend_device *dev) {
    uint32_t best = 0;
    for (uint32_t i = 0; i < dev->memory.memoryHeapCount; i++)
        if ((dev->memory.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) &&
            dev->memory.memoryHeaps[i].size > dev->memory.memoryHeaps[best].size)
            best = i;
    return best;
}

vkl_status vkl_vk_budget_check(vkl_backend_device *dev, uint64_t need, const char *what) {
    const uint32_t heap = device_heap(dev);
    const uint64_t size = dev->memory.memoryHeaps[heap].size;
    uint64_t avail;
    const char *source;
    if (dev->has_memory_budget) {
        /* heapBudget covers every process; heapUsage is ours */
        VkPhysicalDeviceMemoryBudgetPropertiesEXT mb = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
        VkPhysicalDeviceMemoryProperties2 mp = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2,
                                                .pNext = &mb};
        dev->vki.vkGetPhysicalDeviceMemoryProperties2(dev->phys, &mp);
        avail = mb.heapBudget[heap] > mb.heapUsage[heap] ? mb.heapBudget[heap] - mb.heapUsage[heap] : 0;
        source = "VK_EXT_memory_budget's heapBudget less heapUsage";
    } else {
        avail = size > dev->device_bytes ? size - dev->device_bytes : 0;
        source = "the heap's size less vkllm's allocations (no VK_EXT_memory_budget)";
    }
    if (dev->budget_cap) {
        const uint64_t left = dev->budget_cap > dev->device_bytes ? dev->budget_cap - dev->device_bytes : 0;
        if (left < avail) {
            avail = left;
            source = "memory_budget_bytes (VKL_VK_MEMORY_BUDGET) less vkllm's allocations";
        }
    }
    if (need <= avail) return VKL_OK;
    return vkl_fail(dev->ctx, VKL_ERR_OUT_OF_MEMORY,
                    "vulkan: not enough device memory for %s: %llu bytes needed, %llu available on heap %u "
                    "(%llu bytes; %s)",
                    what, (unsigned long long)need, (unsigned long long)avail, heap, (unsigned long long)size,
                    source);
}
