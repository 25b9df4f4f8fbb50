/* Strided views for the kernels that index tensors element by element
 * (elementwise with broadcasting, layout ops): each source's strides over
 * the output's index space, collapsed to at most VKL_VK_VIEW_RANK dims so
 * the shader's index math fits in push constants (shaders/vulkan/view.glsl
 * reads them back). */
#include <string.h>

#include "vk_internal.h"

void vkl_vk_contiguous_strides(uint32_t rank, const int64_t *dims, int64_t *strides) {
    int64_t s = 1;
    for (int32_t d = (int32_t)rank - 1; d >= 0; d--) {
        strides[d] = s;
        s *= dims[d];
    }
}

vkl_status vkl_vk_broadcast_strides(const vkl_vk_node *nd, const vkl_vk_tensor *t, uint32_t rank,
                                    const int64_t *dims, int64_t *strides) {
    int64_t own[VKL_MAX_RANK];
    if (t->rank > rank)
        return vkl_vk_node_unsupported(nd, "input of rank %u broadcast to rank %u", t->rank, rank);
    vkl_vk_contiguous_strides(t->rank, t->dims, own);
    const uint32_t lead = rank - t->rank;
    for (uint32_t d = 0; d < rank; d++) {
        if (d < lead) {
            strides[d] = 0;
            continue;
        }
        const int64_t n = t->dims[d - lead];
        if (n != dims[d] && n != 1)
            return vkl_vk_node_unsupported(nd, "dim %u of size %lld does not broadcast to %lld", d, (long long)n,
                                           (long long)dims[d]);
        strides[d] = n == 1 ? 0 : own[d - lead];
    }
    return VKL_OK;
}

vkl_status vkl_vk_view_make(const vkl_vk_node *nd, uint32_t rank, const int64_t *dims, uint32_t n_src,
                            const int64_t (*strides)[VKL_MAX_RANK], vkl_vk_view *v) {
    memset(v, 0, sizeof(*v));
    if (n_src > VKL_VK_VIEW_SRC) return vkl_vk_node_unsupported(nd, "%u sources in one view", n_src);
    v->n_src = n_src;
    v->count = 1;
    for (uint32_t d = 0; d < rank; d++) v->count *= dims[d];
    /* Walk from the innermost dim, dropping size-1 dims and merging a dim
     * into the one inside it when every source steps through both as one. */
    int64_t md[VKL_MAX_RANK], ms[VKL_VK_VIEW_SRC][VKL_MAX_RANK];
    uint32_t m = 0;
    for (int32_t d = (int32_t)rank - 1; d >= 0; d--) {
        if (dims[d] == 1) continue;
        bool merge = m > 0;
        for (uint32_t s = 0; merge && s < n_src; s++) merge = strides[s][d] == ms[s][m - 1] * md[m - 1];
        if (merge) {
            md[m - 1] *= dims[d];
            continue;
        }
        md[m] = dims[d];
        for (uint32_t s = 0; s < n_src; s++) ms[s][m] = strides[s][d];
        m++;
    }
    if (m > VKL_VK_VIEW_RANK)
        return vkl_vk_node_unsupported(nd, "%u dims after merging; the strided kernels take %u", m,
                                       VKL_VK_VIEW_RANK);
    if (v->count >= (1ll << 32)) return vkl_vk_node_unsupported(nd, "%lld elements exceed 32-bit indexing",
                                                                (long long)v->count);
    /* stored outermost first, padded with size-1 dims in front */
    v->rank = VKL_VK_VIEW_RANK;
    for (uint32_t d = 0; d < VKL_VK_VIEW_RANK; d++) {
        const bool real = d >= VKL_VK_VIEW_RANK - m;
        const uint32_t k = VKL_VK_VIEW_RANK - 1 - d; /* index into the inner-first arrays */
        v->dims[d] = real ? md[k] : 1;
        for (uint32_t s = 0; s < n_src; s++) {
            v->strides[s][d] = real ? ms[s][k] : 0;
            /* A negative stride (a reversed view) travels as its 32-bit two's
             * complement: view.glsl's uint sums wrap modulo 2^32, so they are
             * exact wherever the index itself is in range (its caller's check). */
            if (v->strides[s][d] <= -(1ll << 32) || v->strides[s][d] >= (1ll << 32))
                return vkl_vk_node_unsupported(nd, "stride %lld outside 32-bit indexing", (long long)v->strides[s][d]);
        }
    }
    return VKL_OK;
}

uint32_t vkl_vk_view_push(const vkl_vk_view *v, uint32_t *push) {
    uint32_t n = 0;
    push[n++] = (uint32_t)v->count;
    for (uint32_t d = 0; d < VKL_VK_VIEW_RANK; d++) push[n++] = (uint32_t)v->dims[d];
    for (uint32_t s = 0; s < v->n_src; s++)
        for (uint32_t d = 0; d < VKL_VK_VIEW_RANK; d++) push[n++] = (uint32_t)v->strides[s][d];
    return n;
}
