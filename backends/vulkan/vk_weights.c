/* weights_load: every weight read by a node this backend runs goes to
 * device memory once. Quantized weights (E0M4, int4, int8) are repacked with
 * engine/quant's GPU packer (16-byte vector loads along K, codes and block
 * parameters in two planes); other weights keep their bytes. The graph's
 * canonical bytes (often a read-only mmap of the .vkm) are only read.
 * Every weight a live node reads is loaded, whatever its op, and every
 * weight a live node's TENSOR attribute names (Constant's value: its
 * kernel copies it).
 *
 * A weight larger than the binding limit (maxStorageBufferRange, or the
 * testing knob below it) or the allocation limit is stored as row pieces,
 * each its own allocation and bindings (vk_internal.h, vkl_vk_piece). The
 * device bytes of all weights are summed and checked against the memory
 * budget before anything is allocated. Where device-local memory is mapped
 * (unified memory: phones, lavapipe), quantized weights are packed straight
 * into it and plain ones copied from the file: no staging, no host copy of
 * the packed weight. Elsewhere each piece goes through a host buffer of its
 * size and the staging buffer, which is freed when the load ends. */
#include <stdio.h>
#include <string.h>

#include "vk_internal.h"

static VkDeviceSize round_up(VkDeviceSize x, VkDeviceSize a) { return (x + a - 1) / a * a; }

void vkl_vk_weight_free(vkl_backend_device *dev, vkl_vk_weight *w) {
    for (uint32_t i = 0; w->piece && i < w->n_pieces; i++) vkl_vk_buffer_free(dev, &w->piece[i].buf);
    vkl_free(dev->ctx, w->piece);
    memset(w, 0, sizeof(*w));
}

/* How a weight of `rows` rows is cut: rows of qs_row bytes in one plane
 * (plain: the data) and params_row in a second (quantized; else 0). A piece
 * holds as many whole rows as keep each plane within dev->bind_limit and
 * both, the second at an aligned offset, within dev->alloc_limit. */
typedef struct cut {
    int64_t rows, per;         /* rows, and rows per piece (the last may hold fewer) */
    uint32_t n;                /* pieces */
    size_t qs_row, params_row;
    uint64_t bytes;            /* device bytes of all pieces */
} cut;

static size_t piece_params_at(const vkl_backend_device *dev, const cut *c, int64_t rows) {
    return (size_t)round_up((VkDeviceSize)rows * c->qs_row, dev->caps.buffer_alignment);
}

static size_t piece_bytes(const vkl_backend_device *dev, const cut *c, int64_t rows) {
    return (size_t)round_up(piece_params_at(dev, c, rows) + (size_t)rows * c->params_row, 16);
}

static vkl_status cut_make(vkl_backend_device *dev, const char *name, int64_t rows, size_t qs_row, size_t params_row,
                           cut *c) {
    memset(c, 0, sizeof(*c));
    c->rows = rows;
    c->qs_row = qs_row;
    c->params_row = params_row;
    const VkDeviceSize align = dev->caps.buffer_alignment, bind = dev->bind_limit;
    const VkDeviceSize alloc = dev->alloc_limit > align + 16 ? dev->alloc_limit - align - 16 : 0;
    /* a row of 4-byte multiples at least: the plane's range is rounded up to words */
    VkDeviceSize per = bind / round_up(qs_row ? qs_row : 1, 4);
    if (params_row && bind / params_row < per) per = bind / params_row;
    if (alloc / (qs_row + params_row ? qs_row + params_row : 1) < per) per = alloc / (qs_row + params_row);
    if (per < 1)
        return vkl_fail(dev->ctx, VKL_ERR_UNSUPPORTED,
                        "vulkan: weight '%s': one row of %zu bytes exceeds the binding limit (%s, %llu bytes)", name,
                        qs_row, vkl_vk_bind_limit_name(dev), (unsigned long long)bind);
    c->per = rows < (int64_t)per ? (rows ? rows : 1) : (int64_t)per;
    c->n = rows ? (uint32_t)((rows + c->per - 1) / c->per) : 1;
    if ((int64_t)c->n * c->per < rows || c->n > (1u << 20))
        return vkl_fail(dev->ctx, VKL_ERR_UNSUPPORTED, "vulkan: weight '%s' would need more than 2^20 pieces", name);
    for (uint32_t i = 0; i < c->n; i++) {
        const int64_t r = i + 1 < c->n ? c->per : rows - (int64_t)i * c->per;
        c->bytes += piece_bytes(dev, c, r > 0 ? r : 0);
    }
    return VKL_OK;
}

/* The pieces' buffers and ranges, allocated, nothing written yet. */
static vkl_status pieces_alloc(vkl_backend_device *dev, const cut *c, bool quantized, vkl_vk_weight *w) {
    w->piece = vkl_calloc(dev->ctx, c->n, sizeof(*w->piece));
    if (!w->piece) return VKL_ERR_OUT_OF_MEMORY;
    w->n_pieces = c->n;
    w->rows = c->rows;
    for (uint32_t i = 0; i < c->n; i++) {
        vkl_vk_piece *p = &w->piece[i];
        p->row0 = (int64_t)i * c->per;
        p->rows = i + 1 < c->n ? c->per : c->rows - p->row0;
        const size_t bytes = piece_bytes(dev, c, p->rows);
        vkl_status st = vkl_vk_buffer_alloc(dev, VKL_BUFFER_DEVICE, bytes, &p->buf);
        if (st) return st;
        w->bytes += p->buf.size;
        /* whole words: kernels read tensors as uint[] (shaders/vulkan/tensor.glsl);
         * an empty weight (a ReduceXxx's empty axes) still gets a range, since
         * a descriptor needs one, that nothing reads */
        const size_t qs = (size_t)p->rows * c->qs_row;
        p->qs = (VkDescriptorBufferInfo){p->buf.buf, 0, round_up(qs ? qs : 1, 4)};
        if (quantized)
            p->params = (VkDescriptorBufferInfo){p->buf.buf, piece_params_at(dev, c, p->rows),
                                                 (size_t)p->rows * c->params_row};
    }
    return VKL_OK;
}

/* Quantized: the whole weight's layout and its cut into pieces. */
static vkl_status quant_cut(vkl_backend_device *dev, const char *name, vkl_dtype dtype, uint32_t group, int64_t rows,
                            int64_t cols, vkl_quant_gpu_layout *lay, cut *c) {
    vkl_status st = vkl_quant_gpu_layout_make(dev->ctx, dtype, group, rows, cols, lay);
    if (!st) st = cut_make(dev, name, rows, lay->row_stride, rows ? lay->params_bytes / (size_t)rows : 0, c);
    return st;
}

/* One piece's rows packed: straight into its memory when that is mapped
 * (unified memory: no second host copy), else through a host buffer of the
 * piece's size and the staging buffer. */
static vkl_status pack_piece(vkl_backend_device *dev, const vkl_vk_weight *w, vkl_vk_piece *p,
                             const unsigned char *canon, size_t canon_row) {
    vkl_quant_gpu_layout pl;
    vkl_status st = vkl_quant_gpu_layout_make(dev->ctx, w->lay.dtype, w->lay.group, p->rows, w->lay.cols, &pl);
    if (st) return st;
    pl.params_offset = (size_t)p->params.offset; /* where the descriptor may start */
    pl.total_bytes = pl.params_offset + pl.params_bytes;
    const unsigned char *src = canon + (size_t)p->row0 * canon_row;
    const size_t src_bytes = (size_t)p->rows * canon_row;
    if (p->buf.mapped) {
        st = vkl_quant_pack_gpu(dev->ctx, &pl, src, src_bytes, p->buf.mapped, pl.total_bytes);
        return st ? st : vkl_vk_buffer_flush(dev, &p->buf);
    }
    unsigned char *host = vkl_malloc(dev->ctx, pl.total_bytes ? pl.total_bytes : 1);
    if (!host) return VKL_ERR_OUT_OF_MEMORY;
    st = vkl_quant_pack_gpu(dev->ctx, &pl, src, src_bytes, host, pl.total_bytes);
    if (!st) st = vkl_vk_buffer_upload(dev, &p->buf, 0, host, pl.qs_bytes);
    if (!st)
        st = vkl_vk_buffer_upload(dev, &p->buf, pl.params_offset, host + pl.params_offset,
                                  pl.params_bytes);
    vkl_free(dev->ctx, host);
    return st;
}

vkl_status vkl_vk_weight_pack(vkl_backend_device *dev, vkl_dtype dtype, uint32_t group, int64_t rows, int64_t cols,
                              const void *canon, size_t canon_bytes, vkl_vk_weight *w) {
    memset(w, 0, sizeof(*w));
    cut c;
    vkl_status st = quant_cut(dev, "(quantized)", dtype, group, rows, cols, &w->lay, &c);
    if (st) return st;
    size_t expect = 0;
    st = vkl_quant_canonical_bytes(dev->ctx, dtype, group, rows, cols, &expect);
    if (!st && expect != canon_bytes)
        st = vkl_fail(dev->ctx, VKL_ERR_FORMAT, "vulkan: %zu canonical bytes for [%lld, %lld] %s, expected %zu",
                      canon_bytes, (long long)rows, (long long)cols, vkl_dtype_name(dtype), expect);
    if (!st) st = pieces_alloc(dev, &c, true, w);
    const size_t canon_row = rows ? canon_bytes / (size_t)rows : 0;
    for (uint32_t i = 0; !st && i < w->n_pieces; i++) st = pack_piece(dev, w, &w->piece[i], canon, canon_row);
    if (st) vkl_vk_weight_free(dev, w);
    return st;
}

/* A plain weight's rows: dims[0] (one row for a scalar). */
static int64_t plain_rows(const vkl_tensor *tt, const int64_t *dims) {
    return tt->shape.rank && dims[0] > 0 ? dims[0] : 1;
}

/* The cut of weight t: what it will take on the device. */
static vkl_status weight_cut(vkl_backend_device *dev, const vkl_graph *g, uint32_t t, vkl_quant_gpu_layout *lay,
                             cut *c) {
    const vkl_tensor *tt = &g->tensors[t];
    int64_t dims[VKL_MAX_RANK], count;
    vkl_status st = vkl_shape_eval(dev->ctx, g, &tt->shape, NULL, 0, dims, &count);
    if (!st && vkl_dtype_is_quantized(tt->dtype)) {
        const int64_t K = tt->shape.rank ? dims[tt->shape.rank - 1] : 0;
        st = K > 0 ? quant_cut(dev, tt->name, tt->dtype, tt->group, count / K, K, lay, c)
                   : vkl_fail(dev->ctx, VKL_ERR_SHAPE, "quantized weight has no elements");
    } else if (!st) {
        const int64_t rows = plain_rows(tt, dims);
        st = cut_make(dev, tt->name, rows, tt->nbytes / (size_t)rows, 0, c);
    }
    return st ? vkl_fail_prefix(dev->ctx, st, "vulkan: weight '%s'", tt->name) : VKL_OK;
}

static vkl_status load_one(vkl_backend_device *dev, const vkl_graph *g, uint32_t t, vkl_vk_weight *w) {
    const vkl_tensor *tt = &g->tensors[t];
    memset(w, 0, sizeof(*w));
    cut c;
    vkl_status st = weight_cut(dev, g, t, &w->lay, &c);
    if (st) return st;
    const bool quantized = vkl_dtype_is_quantized(tt->dtype);
    st = pieces_alloc(dev, &c, quantized, w);
    /* bytes per row: canonical blocks (the packer checks each piece's size) or plain elements */
    const size_t row = tt->nbytes / (size_t)c.rows;
    for (uint32_t i = 0; !st && i < w->n_pieces; i++) {
        vkl_vk_piece *p = &w->piece[i];
        if (quantized)
            st = pack_piece(dev, w, p, tt->data, row);
        else if (p->rows && row)
            st = vkl_vk_buffer_upload(dev, &p->buf, 0, (const unsigned char *)tt->data + p->row0 * row,
                                      (size_t)p->rows * row);
    }
    if (st) {
        vkl_vk_weight_free(dev, w);
        return vkl_fail_prefix(dev->ctx, st, "vulkan: weight '%s'", tt->name);
    }
    return VKL_OK;
}

/* Whether weights_load takes tensor t: a weight with data (a quantized one
 * with no bytes is an empty block tensor nothing reads), not yet taken. */
static bool wanted(const vkl_graph *g, const vkl_backend_weights *ws, uint32_t t) {
    return t != VKL_NONE && t < g->n_tensors && g->tensors[t].kind == VKL_TENSOR_WEIGHT && !ws->w[t].n_pieces &&
           (g->tensors[t].nbytes || !vkl_dtype_is_quantized(g->tensors[t].dtype));
}

/* Input j of node n, then the weights its TENSOR attributes name (Constant's value). */
static uint32_t node_weight(const vkl_graph *g, const vkl_node *n, uint32_t j) {
    if (j < n->n_inputs) return n->inputs[j];
    const vkl_attr *a = &n->attrs[j - n->n_inputs];
    return a->kind == VKL_ATTR_TENSOR && a->i >= 0 && a->i < (int64_t)g->n_tensors ? (uint32_t)a->i : VKL_NONE;
}

vkl_status vkl_vk_weights_load(vkl_backend_device *dev, const vkl_graph *g, vkl_backend_weights **out) {
    *out = NULL;
    vkl_backend_weights *ws = vkl_calloc(dev->ctx, 1, sizeof(*ws));
    if (!ws) return VKL_ERR_OUT_OF_MEMORY;
    ws->g = g;
    ws->n = g->n_tensors;
    ws->w = vkl_calloc(dev->ctx, g->n_tensors ? g->n_tensors : 1, sizeof(*ws->w));
    bool *take = vkl_calloc(dev->ctx, g->n_tensors ? g->n_tensors : 1, sizeof(*take));
    vkl_status st = ws->w && take ? VKL_OK : VKL_ERR_OUT_OF_MEMORY;
    /* First what every weight a live node reads takes, against the budget,
     * before anything is allocated. */
    uint64_t need = 0;
    uint32_t n_take = 0;
    for (uint32_t i = 0; !st && i < g->n_nodes; i++) {
        const vkl_node *n = &g->nodes[i];
        for (uint32_t j = 0; !st && !n->dead && j < n->n_inputs + n->n_attrs; j++) {
            const uint32_t t = node_weight(g, n, j);
            if (!wanted(g, ws, t) || take[t]) continue;
            vkl_quant_gpu_layout lay;
            cut c;
            st = weight_cut(dev, g, t, &lay, &c);
            need += c.bytes;
            take[t] = true;
            n_take++;
        }
    }
    char what[64];
    snprintf(what, sizeof(what), "the model's weights (%u tensors)", n_take);
    if (!st) st = vkl_vk_budget_check(dev, need, what);
    for (uint32_t t = 0; !st && t < g->n_tensors; t++) {
        if (!take[t]) continue;
        st = load_one(dev, g, t, &ws->w[t]);
        if (!st) ws->bytes += ws->w[t].bytes;
    }
    vkl_free(dev->ctx, take);
    /* discrete GPUs: the staging buffer served the upload; it is not kept */
    vkl_vk_buffer_free(dev, &dev->staging);
    if (st) {
        vkl_vk_weights_release(dev, ws);
        return st;
    }
    *out = ws;
    return VKL_OK;
}

void vkl_vk_weights_release(vkl_backend_device *dev, vkl_backend_weights *ws) {
    if (!ws) return;
    for (uint32_t i = 0; ws->w && i < ws->n; i++) vkl_vk_weight_free(dev, &ws->w[i]);
    vkl_free(dev->ctx, ws->w);
    vkl_free(dev->ctx, ws);
}
