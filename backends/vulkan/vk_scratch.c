/* The executable's scratch buffer (vk_internal.h, vkl_vk_scratch): which
 * offsets its recorders get. Two kinds of range: a node's own (what its
 * dispatches pass to each other: the split-K partials), undefined when the
 * node starts, and shared ranges, each filled once by the first node that
 * asks for its key and read by later nodes too (the _dot matvecs' codes of
 * one activation tensor, which the Q, K and V projections, or a chain of
 * matvecs on one input, all read). Shared ranges are handed out in node
 * order, one after another past the counters, and never reused; a node's
 * own range starts above every shared range handed out so far, so it can
 * cover only shared ranges that later nodes fill, after it is done (the
 * barriers between dispatches follow from the overlap). */
#include "vk_internal.h"

/* Shared ranges start at multiples of this: a binding offset, and whole uvec4s. */
static VkDeviceSize scratch_align(const vkl_backend_device *dev) {
    const VkDeviceSize a = dev->props.limits.minStorageBufferOffsetAlignment;
    return a > 16 ? a : 16;
}

vkl_status vkl_vk_scratch_shared(const vkl_vk_node *nd, uint32_t tensor, uint64_t tag, VkDeviceSize bytes,
                                 VkDescriptorBufferInfo *out, bool *made) {
    vkl_vk_scratch_book *book = nd->book;
    for (uint32_t i = 0; i < book->n; i++) {
        const vkl_vk_scratch_range *r = &book->ranges[i];
        if (r->tensor != tensor || r->tag != tag) continue;
        if (r->bytes != bytes)
            return vkl_vk_node_unsupported(nd, "shared scratch of tensor %u (tag %llu) asked for as %llu bytes, "
                                           "made as %llu", tensor, (unsigned long long)tag,
                                           (unsigned long long)bytes, (unsigned long long)r->bytes);
        *out = vkl_vk_scratch(r->offset, r->bytes);
        *made = false;
        return VKL_OK;
    }
    const VkDeviceSize align = scratch_align(nd->dev);
    const VkDeviceSize at = VKL_VK_SCRATCH_COUNTERS + book->end;
    if (!bytes || bytes > (VkDeviceSize)1 << 40)
        return vkl_vk_node_unsupported(nd, "shared scratch of %llu bytes", (unsigned long long)bytes);
    if (book->n == book->cap) {
        const uint32_t cap = book->cap ? 2 * book->cap : 16;
        vkl_vk_scratch_range *r = vkl_realloc_array(nd->dev->ctx, book->ranges, cap, sizeof(*r));
        if (!r) return VKL_ERR_OUT_OF_MEMORY;
        book->ranges = r;
        book->cap = cap;
    }
    book->ranges[book->n++] = (vkl_vk_scratch_range){tensor, tag, at, bytes};
    book->end += (bytes + align - 1) / align * align;
    *out = vkl_vk_scratch(at, bytes);
    *made = true;
    return VKL_OK;
}

VkDeviceSize vkl_vk_scratch_own(const vkl_vk_node *nd) { return VKL_VK_SCRATCH_COUNTERS + nd->book->end; }

void vkl_vk_scratch_book_free(vkl_context *ctx, vkl_vk_scratch_book *book) {
    vkl_free(ctx, book->ranges);
    *book = (vkl_vk_scratch_book){0};
}
