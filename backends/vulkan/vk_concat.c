/* Concat and Split on Vulkan (concat.comp, split.comp). Both see a tensor
 * as rows (the dims before the axis) of pieces (an input's or output's
 * share of the axis times the dims after it). Up to 7 pieces per dispatch
 * (8 bindings), up to VKL_VK_MAX_DISPATCHES dispatches per node. Sizes are
 * in elements of es bytes after widen(): 8-byte elements become word pairs,
 * small elements that every piece holds in pairs become words, and words
 * that every piece holds in fours become 16-byte units (the _v4 builds). */
#include <string.h>

#include "../../engine/ops.h"
#include "vk_internal.h"

#define PIECES 7 /* per dispatch: one binding is the other side */

static int64_t span(const int64_t *dims, uint32_t from, uint32_t to) {
    int64_t n = 1;
    for (uint32_t d = from; d < to; d++) n *= dims[d];
    return n;
}

/* 8-byte elements as word pairs, then while every size is even, pairs of
 * elements as one, up to words; then (v4: every range 16-byte aligned)
 * four words as one 16-byte element where every size allows: sizes[0..n)
 * in elements of *es bytes, *es = 1, 2, 4 or 16. */
static void widen(uint32_t *es, int64_t *sizes, uint32_t n, bool v4) {
    if (*es == 8) {
        for (uint32_t i = 0; i < n; i++) sizes[i] *= 2;
        *es = 4;
    }
    while (*es < 4) {
        bool even = true;
        for (uint32_t i = 0; i < n && even; i++) even = sizes[i] % 2 == 0;
        if (!even) return;
        for (uint32_t i = 0; i < n; i++) sizes[i] /= 2;
        *es *= 2;
    }
    bool quad = v4;
    for (uint32_t i = 0; i < n && quad; i++) quad = sizes[i] % 4 == 0;
    if (!quad) return;
    for (uint32_t i = 0; i < n; i++) sizes[i] /= 4;
    *es = 16;
}

/* Concat: out row = the inputs' rows one after another. */
vkl_status vkl_vk_record_concat(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_vk_tensor *y = &nd->out[0];
    uint32_t axis = 0, es = 0, live[VKL_VARIADIC], n_live = 0; /* set by the checks below; -O3 cannot see it */
    int64_t len[VKL_VARIADIC + 1], sum = 0; /* last: the row length */
    *count = 0;
    vkl_status st = vkl_vk_axis_attr(nd, y->rank, &axis);
    if (!st) st = vkl_vk_elem_bytes(nd, y, &es);
    if (st) return st;
    if (nd->n_in > VKL_VARIADIC) return vkl_vk_node_unsupported(nd, "%u inputs", nd->n_in);
    const int64_t inner = span(y->dims, axis + 1, y->rank), outer = span(y->dims, 0, axis);
    for (uint32_t k = 0; k < nd->n_in; k++) {
        const vkl_vk_tensor *t = &nd->in[k];
        bool ok = t->id != VKL_NONE && t->rank == y->rank && t->dtype == y->dtype;
        for (uint32_t d = 0; ok && d < y->rank; d++) ok = d == axis || t->dims[d] == y->dims[d];
        if (!ok) return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "input %u does not match the output outside axis %u", k, axis);
        sum += t->dims[axis];
        len[k] = t->dims[axis] * inner;
    }
    if (sum != y->dims[axis])
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "the inputs give %lld along axis %u; the output has %lld",
                                (long long)sum, axis, (long long)y->dims[axis]);
    if (!y->count) return VKL_OK;
    len[nd->n_in] = y->dims[axis] * inner;
    bool v4 = y->at.offset % 16 == 0;
    for (uint32_t k = 0; k < nd->n_in; k++)
        if (len[k]) {
            live[n_live++] = k;
            v4 = v4 && nd->in[k].at.offset % 16 == 0;
        }
    widen(&es, len, nd->n_in + 1, v4);
    const int64_t L = len[nd->n_in], elems = outer * L;
    const uint32_t groups = (n_live + PIECES - 1) / PIECES;
    if (groups > VKL_VK_MAX_DISPATCHES)
        return vkl_vk_node_unsupported(nd, "%u non-empty inputs; the kernel takes %u", n_live,
                                       PIECES * VKL_VK_MAX_DISPATCHES);
    if (elems >= (1ll << 32)) return vkl_vk_node_unsupported(nd, "%lld elements exceed 32-bit indexing", (long long)elems);
    const uint64_t units = es == 16 ? (uint64_t)elems : ((uint64_t)elems * es + 3) / 4;
    int64_t pos = 0;
    for (uint32_t gi = 0; gi < groups; gi++) {
        vkl_vk_dispatch *d = &out[gi];
        const uint32_t first = gi * PIECES, n = n_live - first < PIECES ? n_live - first : PIECES;
        memset(d, 0, sizeof(*d));
        d->shader = es == 16 ? "concat_v4" : "concat";
        d->spec[0] = vkl_vk_move_wg(nd->dev);
        d->spec[1] = es;
        d->n_spec = 2;
        d->bind[0] = y->at;
        d->push[0] = (uint32_t)units;
        d->push[1] = (uint32_t)elems;
        d->push[2] = (uint32_t)L;
        d->push[3] = n;
        for (uint32_t i = 0; i < PIECES; i++) {
            const uint32_t k = live[first + (i < n ? i : 0)];
            d->bind[1 + i] = nd->in[k].at; /* unused slots repeat a source: never read */
            if (i < n) {
                d->push[4 + i] = (uint32_t)pos;
                pos += len[k];
            }
        }
        d->push[4 + n] = (uint32_t)pos;
        d->n_bind = 1 + PIECES;
        d->n_push = 4 + 8;
        if ((st = vkl_vk_grid(nd, units, d->spec[0], d->groups))) return st;
    }
    *count = groups;
    return VKL_OK;
}

/* Split sizes as ref has them: the `split` input, else equal chunks of
 * ceil(D / outputs) with a smaller last one. */
static vkl_status split_sizes(const vkl_vk_node *nd, int64_t dim, int64_t *sizes) {
    const uint32_t n = nd->n_out;
    if (nd->n_in > 1 && nd->in[1].id != VKL_NONE) {
        uint32_t c;
        int64_t sum = 0;
        vkl_status st = vkl_vk_input_ints(nd, 1, "split", sizes, VKL_VARIADIC, &c);
        if (st) return st;
        if (c != n) return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "%u split sizes for %u outputs", c, n);
        for (uint32_t k = 0; k < n; k++) {
            if (sizes[k] < 0) return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "split[%u] = %lld", k, (long long)sizes[k]);
            sum += sizes[k];
        }
        if (sum != dim)
            return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "sizes sum to %lld; the axis has %lld", (long long)sum,
                                    (long long)dim);
        return VKL_OK;
    }
    const int64_t chunk = dim % n ? dim / n + 1 : dim / n;
    for (uint32_t k = 0; k < n; k++) sizes[k] = k + 1 < n ? chunk : dim - chunk * (n - 1);
    if (sizes[n - 1] < 0)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "%lld cannot be split into %u chunks", (long long)dim, n);
    return VKL_OK;
}

/* Split: output j = the input's rows at [off_j, off_j + size_j) along the axis. */
vkl_status vkl_vk_record_split(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_vk_tensor *in = &nd->in[0];
    uint32_t axis = 0, es = 0, live[VKL_VARIADIC], n_live = 0; /* set by the checks below; -O3 cannot see it */
    /* sizes, then offsets, then the row length, all widened together */
    int64_t v[2 * VKL_VARIADIC + 1], dims[VKL_MAX_RANK];
    *count = 0;
    if (nd->n_out == 0 || nd->n_out > VKL_VARIADIC) return vkl_vk_node_unsupported(nd, "%u outputs", nd->n_out);
    const uint32_t n = nd->n_out;
    vkl_status st = vkl_vk_axis_attr(nd, in->rank, &axis);
    if (!st) st = vkl_vk_elem_bytes(nd, in, &es);
    if (!st) st = split_sizes(nd, in->dims[axis], v);
    if (st) return st;
    const int64_t inner = span(in->dims, axis + 1, in->rank), outer = span(in->dims, 0, axis);
    int64_t off = 0;
    for (uint32_t j = 0; j < n; j++) {
        if (nd->out[j].id != VKL_NONE) {
            memcpy(dims, in->dims, sizeof(dims));
            dims[axis] = v[j];
            if ((st = vkl_vk_check_dims(nd, j, dims, in->rank))) return st;
            if (nd->out[j].count) live[n_live++] = j;
        }
        v[n + j] = off * inner;
        off += v[j];
        v[j] *= inner;
    }
    v[2 * n] = in->dims[axis] * inner;
    bool v4 = in->at.offset % 16 == 0;
    for (uint32_t i = 0; i < n_live; i++) v4 = v4 && nd->out[live[i]].at.offset % 16 == 0;
    widen(&es, v, 2 * n + 1, v4);
    const int64_t L = v[2 * n];
    if (outer * L >= (1ll << 32))
        return vkl_vk_node_unsupported(nd, "%lld elements exceed 32-bit indexing", (long long)(outer * L));
    const uint32_t groups = (n_live + PIECES - 1) / PIECES;
    if (groups > VKL_VK_MAX_DISPATCHES)
        return vkl_vk_node_unsupported(nd, "%u non-empty outputs; the kernel takes %u", n_live,
                                       PIECES * VKL_VK_MAX_DISPATCHES);
    for (uint32_t gi = 0; gi < groups; gi++) {
        vkl_vk_dispatch *d = &out[gi];
        const uint32_t first = gi * PIECES, m = n_live - first < PIECES ? n_live - first : PIECES;
        uint64_t units = 0;
        memset(d, 0, sizeof(*d));
        d->shader = es == 16 ? "split_v4" : "split";
        d->spec[0] = vkl_vk_move_wg(nd->dev);
        d->spec[1] = es;
        d->n_spec = 2;
        d->bind[0] = in->at;
        d->push[0] = (uint32_t)L;
        d->push[1] = (uint32_t)outer;
        d->push[2] = m;
        for (uint32_t i = 0; i < PIECES; i++) {
            const uint32_t j = live[first + (i < m ? i : 0)];
            d->bind[1 + i] = nd->out[j].at; /* unused slots repeat an output: never written */
            if (i >= m) continue;
            d->push[3 + i] = (uint32_t)v[n + j];
            d->push[10 + i] = (uint32_t)v[j];
            d->push[17 + i] = (uint32_t)units;
            units += es == 16 ? (uint64_t)(outer * v[j]) : ((uint64_t)(outer * v[j]) * es + 3) / 4;
        }
        d->push[17 + m] = (uint32_t)units;
        d->n_bind = 1 + PIECES;
        d->n_push = 3 + 7 + 7 + 8;
        if (units >= (1ull << 32)) return vkl_vk_node_unsupported(nd, "%llu words exceed 32-bit indexing",
                                                                  (unsigned long long)units);
        if ((st = vkl_vk_grid(nd, units, d->spec[0], d->groups))) return st;
    }
    *count = groups;
    return VKL_OK;
}
