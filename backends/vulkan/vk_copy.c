/* What the data-movement and indexing recorders share: the workgroup size
 * and 2D grid of a 1D job, element sizes, and the two copies most of them
 * reduce to — a strided view of one source (copy_view.comp: Transpose,
 * Expand, Tile, Slice) and a same-bytes copy (copy_vec4.comp or words:
 * the reshapes, ScatterND's first step). */
#include <stdio.h>
#include <string.h>

#include "vk_internal.h"

/* dims a view may have before merging: Tile's two per axis */
#define VIEW_MAX (2 * VKL_MAX_RANK)

uint32_t vkl_vk_move_wg(const vkl_backend_device *dev) {
    const VkPhysicalDeviceLimits *lim = &dev->props.limits;
    uint32_t wg = 256;
    if (wg > lim->maxComputeWorkGroupSize[0]) wg = lim->maxComputeWorkGroupSize[0];
    if (wg > lim->maxComputeWorkGroupInvocations) wg = lim->maxComputeWorkGroupInvocations;
    return wg;
}

bool vkl_vk_grid_2d(const vkl_backend_device *dev, uint64_t n, uint32_t *gx, uint32_t *gy) {
    const uint32_t *maxg = dev->props.limits.maxComputeWorkGroupCount;
    const uint64_t x = n < maxg[0] ? n : maxg[0], y = x ? (n + x - 1) / x : 0;
    *gx = (uint32_t)x;
    *gy = y <= maxg[1] ? (uint32_t)y : 0;
    return y <= maxg[1];
}

vkl_status vkl_vk_grid(const vkl_vk_node *nd, uint64_t units, uint32_t wg, uint32_t groups[3]) {
    uint32_t gx, gy;
    const bool fits = vkl_vk_grid_2d(nd->dev, (units + wg - 1) / wg, &gx, &gy);
    /* move.glsl's VKL_MOVE_ID is a uint: every invocation of the grid must have one */
    if (!fits || (uint64_t)gx * gy * wg > (1ull << 32))
        return vkl_vk_node_unsupported(nd, "%llu invocations exceed the device's grid or 32-bit indexing",
                                       (unsigned long long)units);
    groups[0] = gx;
    groups[1] = gy;
    groups[2] = 1;
    return VKL_OK;
}

vkl_status vkl_vk_elem_bytes(const vkl_vk_node *nd, const vkl_vk_tensor *t, uint32_t *es) {
    *es = (uint32_t)vkl_dtype_size(t->dtype);
    if (*es == 1 || *es == 2 || *es == 4 || *es == 8) return VKL_OK;
    return vkl_vk_node_unsupported(nd, "dtype %s has no element size the movement kernels take",
                                   vkl_dtype_name(t->dtype));
}

/* Drop size-1 dims and join an outer dim into its inner neighbour when the
 * view steps through both as one (outermost first, in place). */
static void merge_dims(uint32_t *m, int64_t *dims, int64_t *strides) {
    uint32_t k = 0;
    for (uint32_t d = 0; d < *m; d++) {
        if (dims[d] == 1) continue;
        if (k && strides[k - 1] == strides[d] * dims[d]) {
            dims[k - 1] *= dims[d];
            strides[k - 1] = strides[d];
            continue;
        }
        dims[k] = dims[d];
        strides[k] = strides[d];
        k++;
    }
    *m = k;
}

vkl_status vkl_vk_record_view(const vkl_vk_node *nd, const vkl_vk_tensor *src, const vkl_vk_tensor *dst, uint32_t rank,
                              const int64_t *dims_in, const int64_t *strides_in, int64_t base, vkl_vk_dispatch *d,
                              uint32_t *count) {
    int64_t dims[VIEW_MAX], strides[VIEW_MAX], n = 1;
    uint32_t es, m = rank;
    vkl_status st = vkl_vk_elem_bytes(nd, dst, &es);
    if (st) return st;
    if (rank > VIEW_MAX) return vkl_vk_node_unsupported(nd, "a view of %u dims", rank);
    for (uint32_t i = 0; i < rank; i++) n *= dims_in[i];
    if (n != dst->count)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "the view has %lld elements; the output %lld", (long long)n,
                                (long long)dst->count);
    if (!n) return VKL_OK; /* nothing to write */
    memcpy(dims, dims_in, rank * sizeof(int64_t));
    memcpy(strides, strides_in, rank * sizeof(int64_t));
    merge_dims(&m, dims, strides);
    /* Pairs of elements that stay together in the source move as one element
     * twice the size, up to 16 bytes (copy_view_v4, where both ranges are
     * 16-byte aligned): an attention transpose [B, S, H, D] -> [B, H, S, D]
     * copies D-element runs 16 bytes an invocation, whatever the dtype. */
    const uint32_t max_es = src->at.offset % 16 == 0 && dst->at.offset % 16 == 0 ? 16 : 8;
    while (es < max_es && m && strides[m - 1] == 1 && dims[m - 1] % 2 == 0 && base % 2 == 0) {
        bool even = true;
        for (uint32_t i = 0; i + 1 < m && even; i++) even = strides[i] % 2 == 0;
        if (!even) break;
        for (uint32_t i = 0; i + 1 < m; i++) strides[i] /= 2;
        dims[m - 1] /= 2;
        base /= 2;
        es *= 2;
        merge_dims(&m, dims, strides);
    }
    /* every index the view makes lies in the source */
    int64_t lo = base, hi = base;
    for (uint32_t i = 0; i < m; i++) {
        const int64_t span = (dims[i] - 1) * strides[i];
        if (span < 0) lo += span;
        else hi += span;
    }
    const int64_t src_elems = (int64_t)(src->bytes / es);
    if (lo < 0 || hi >= src_elems)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "the view reads elements %lld..%lld of an input of %lld",
                                (long long)lo, (long long)hi, (long long)src_elems);
    /* 8-byte elements are indexed as word pairs */
    const int64_t cnt = (int64_t)(dst->bytes / es);
    if ((es == 8 ? 2 * hi + 1 : hi) >= (1ll << 32) || (es == 8 && 2 * cnt >= (1ll << 32)))
        return vkl_vk_node_unsupported(nd, "%lld elements or input element %lld are beyond 32-bit indexing",
                                       (long long)cnt, (long long)hi);
    if (m > VKL_MAX_RANK) return vkl_vk_node_unsupported(nd, "a view of %u dims after merging", m);
    int64_t sv[1][VKL_MAX_RANK];
    memcpy(sv[0], strides, m * sizeof(int64_t));
    vkl_vk_view v;
    if ((st = vkl_vk_view_make(nd, m, dims, 1, (const int64_t(*)[VKL_MAX_RANK])sv, &v))) return st;
    const uint64_t units = es >= 8 ? (uint64_t)v.count : ((uint64_t)v.count * es + 3) / 4;
    memset(d, 0, sizeof(*d));
    d->shader = es == 16 ? "copy_view_v4" : "copy_view";
    d->spec[0] = vkl_vk_move_wg(nd->dev);
    d->spec[1] = es;
    d->n_spec = 2;
    d->bind[0] = src->at;
    d->bind[1] = dst->at;
    d->n_bind = 2;
    d->n_push = vkl_vk_view_push(&v, d->push);
    d->push[d->n_push++] = (uint32_t)base;
    d->push[d->n_push++] = (uint32_t)units;
    if ((st = vkl_vk_grid(nd, units, d->spec[0], d->groups))) return st;
    (*count)++;
    return VKL_OK;
}

vkl_status vkl_vk_record_copy(const vkl_vk_node *nd, const vkl_vk_tensor *src, const vkl_vk_tensor *dst,
                              vkl_vk_dispatch *d, uint32_t *count) {
    if (src->bytes != dst->bytes)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "%zu bytes in, %zu out", src->bytes, dst->bytes);
    if (!dst->bytes || (src->at.buffer == dst->at.buffer && src->at.offset == dst->at.offset)) return VKL_OK;
    const VkPhysicalDeviceLimits *lim = &nd->dev->props.limits;
    if (dst->bytes % 16 == 0 && src->at.offset % 16 == 0 && dst->at.offset % 16 == 0) {
        /* 16 bytes an invocation; the shader loops, so the grid is capped */
        const uint64_t n = dst->bytes / 16, wg = vkl_vk_move_wg(nd->dev), groups = (n + wg - 1) / wg;
        if (n >= (1ull << 32) - (uint64_t)lim->maxComputeWorkGroupCount[0] * wg)
            return vkl_vk_node_unsupported(nd, "%zu bytes exceed 32-bit indexing", dst->bytes);
        memset(d, 0, sizeof(*d));
        d->shader = "copy_vec4";
        d->spec[0] = (uint32_t)wg;
        d->n_spec = 1;
        d->bind[0] = src->at;
        d->bind[1] = dst->at;
        d->n_bind = 2;
        d->push[0] = (uint32_t)n;
        d->n_push = 1;
        d->groups[0] = (uint32_t)(groups < lim->maxComputeWorkGroupCount[0] ? groups : lim->maxComputeWorkGroupCount[0]);
        d->groups[1] = d->groups[2] = 1;
        (*count)++;
        return VKL_OK;
    }
    /* whole words: both ranges are rounded up to a word and the tail is padding */
    vkl_vk_tensor s = *src, t = *dst;
    s.dtype = t.dtype = VKL_DTYPE_U32;
    t.count = (int64_t)((dst->bytes + 3) / 4);
    s.bytes = t.bytes = (size_t)t.count * 4;
    const int64_t stride = 1;
    return vkl_vk_record_view(nd, &s, &t, 1, &t.count, &stride, 0, d, count);
}

vkl_status vkl_vk_check_dims(const vkl_vk_node *nd, uint32_t k, const int64_t *dims, uint32_t rank) {
    const vkl_vk_tensor *o = &nd->out[k];
    if (o->rank == rank && (rank == 0 || !memcmp(o->dims, dims, rank * sizeof(int64_t)))) return VKL_OK;
    char want[128], got[128];
    size_t a = 0, b = 0;
    want[0] = got[0] = 0;
    for (uint32_t d = 0; d < rank && a < sizeof(want); d++)
        a += (size_t)snprintf(want + a, sizeof(want) - a, "%s%lld", d ? ", " : "", (long long)dims[d]);
    for (uint32_t d = 0; d < o->rank && b < sizeof(got); d++)
        b += (size_t)snprintf(got + b, sizeof(got) - b, "%s%lld", d ? ", " : "", (long long)o->dims[d]);
    return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "output %u has shape [%s], but the inputs give [%s]", k, got, want);
}
