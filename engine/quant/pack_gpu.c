/* The GPU weight layout, made at load time from the canonical blocks (and
 * back, to prove it loses nothing): nibbles and parameters in two planes so
 * that a shader streams 16-byte vectors along K and decodes two codes per
 * shift/AND/OR (see quant.h for the layout, e0m4.c for the expression). */
#include <string.h>

#include "quant_internal.h"

static bool is4(vkl_dtype t) { return t == VKL_DTYPE_Q_E0M4 || t == VKL_DTYPE_Q_INT4; }

vkl_status vkl_quant_gpu_layout_make(vkl_context *ctx, vkl_dtype dtype, uint32_t group, int64_t rows, int64_t cols,
                                     vkl_quant_gpu_layout *out) {
    size_t canon = 0;
    vkl_status st = vkl_quant_canonical_bytes(ctx, dtype, group, rows, cols, &canon);
    if (st) return st;
    /* The padded matrix: a short last group is stored whole (quant.h). Its
     * canonical bytes are the same; the sizes below are checked. */
    cols = vkl_quant_row_groups(cols, group) * (int64_t)group;
    memset(out, 0, sizeof(*out));
    out->dtype = dtype;
    out->group = group;
    out->rows = rows;
    out->cols = cols;
    /* cols <= canon, so neither rounding up nor the products below overflow
     * except through rows, which the checked multiplies catch. */
    out->row_stride = is4(dtype) ? (size_t)cols / 2 : ((size_t)cols + 15) / 16 * 16;
    size_t groups = (size_t)rows * ((size_t)cols / group); /* <= canon / block: no overflow */
    if (!vkl_mul_size((size_t)rows, out->row_stride, &out->qs_bytes) || !vkl_mul_size(groups, 4, &out->params_bytes) ||
        !vkl_add_size(out->qs_bytes, out->params_bytes, &out->total_bytes))
        return vkl_fail(ctx, VKL_ERR_OVERFLOW, "gpu layout: [%lld, %lld] size overflows", (long long)rows,
                        (long long)cols);
    out->params_offset = out->qs_bytes; /* a multiple of 16: row_stride is */
    return VKL_OK;
}

static vkl_status check_sizes(vkl_context *ctx, const vkl_quant_gpu_layout *lay, size_t canon_bytes,
                              size_t packed_bytes) {
    return vkl_quant_check_pack_sizes(ctx, "gpu layout", lay->dtype, lay->group, lay->rows, lay->cols, lay->total_bytes,
                                      canon_bytes, packed_bytes);
}

static vkl_status check_header(vkl_context *ctx, vkl_dtype t, const uint8_t *blk, int64_t r, int64_t g) {
    if (t == VKL_DTYPE_Q_E0M4) return vkl_e0m4_check_header(ctx, vkl_quant_rd16(blk), vkl_quant_rd16(blk + 2), r, g);
    if (t == VKL_DTYPE_Q_INT4) return vkl_int4_check_header(ctx, vkl_quant_rd16(blk), vkl_quant_rd16(blk + 2), r, g);
    uint32_t u = vkl_quant_rd32(blk);
    float d;
    memcpy(&d, &u, 4);
    return vkl_int8_check_header(ctx, d, r, g);
}

/* Word of 8 codes in GPU order: element 2s at bits 4s, 2s+1 at bits 16+4s. */
static uint32_t gpu_word(const uint8_t *qs, size_t first) {
    uint32_t w = 0;
    for (unsigned s = 0; s < 4; s++) {
        w |= (uint32_t)vkl_quant_nibble(qs, first + 2 * s) << (4 * s);
        w |= (uint32_t)vkl_quant_nibble(qs, first + 2 * s + 1) << (16 + 4 * s);
    }
    return w;
}

vkl_status vkl_quant_pack_gpu(vkl_context *ctx, const vkl_quant_gpu_layout *lay, const void *canon,
                              size_t canon_bytes, void *dst, size_t dst_bytes) {
    vkl_status st = check_sizes(ctx, lay, canon_bytes, dst_bytes);
    if (st) return st;
    const uint8_t *src = canon;
    uint8_t *out = dst;
    memset(out, 0, dst_bytes);
    const size_t block = vkl_quant_block_bytes(lay->dtype, lay->group), hdr = 4; /* both header kinds */
    const int64_t groups = lay->cols / lay->group;
    for (int64_t r = 0; r < lay->rows; r++)
        for (int64_t g = 0; g < groups; g++) {
            const uint8_t *blk = src + (size_t)(r * groups + g) * block;
            if ((st = check_header(ctx, lay->dtype, blk, r, g))) return st;
            memcpy(out + lay->params_offset + (size_t)(r * groups + g) * 4, blk, 4);
            uint8_t *row = out + (size_t)r * lay->row_stride;
            if (!is4(lay->dtype)) {
                memcpy(row + (size_t)g * lay->group, blk + hdr, lay->group);
                continue;
            }
            for (uint32_t t = 0; t < lay->group / 8; t++)
                vkl_quant_wr32(row + ((size_t)g * lay->group + 8 * t) / 2, gpu_word(blk + hdr, 8 * (size_t)t));
        }
    return VKL_OK;
}

vkl_status vkl_quant_unpack_gpu(vkl_context *ctx, const vkl_quant_gpu_layout *lay, const void *packed,
                                size_t packed_bytes, void *canon, size_t canon_bytes) {
    vkl_status st = check_sizes(ctx, lay, canon_bytes, packed_bytes);
    if (st) return st;
    const uint8_t *src = packed;
    uint8_t *out = canon;
    const size_t block = vkl_quant_block_bytes(lay->dtype, lay->group), hdr = 4;
    const int64_t groups = lay->cols / lay->group;
    for (int64_t r = 0; r < lay->rows; r++)
        for (int64_t g = 0; g < groups; g++) {
            uint8_t *blk = out + (size_t)(r * groups + g) * block;
            memcpy(blk, src + lay->params_offset + (size_t)(r * groups + g) * 4, 4);
            if ((st = check_header(ctx, lay->dtype, blk, r, g))) return st;
            const uint8_t *row = src + (size_t)r * lay->row_stride;
            if (!is4(lay->dtype)) {
                memcpy(blk + hdr, row + (size_t)g * lay->group, lay->group);
                continue;
            }
            uint8_t *qs = blk + hdr;
            for (uint32_t t = 0; t < lay->group / 8; t++) {
                uint32_t w = vkl_quant_rd32(row + ((size_t)g * lay->group + 8 * t) / 2);
                for (unsigned s = 0; s < 4; s++) {
                    size_t i = 8 * (size_t)t + 2 * s; /* even element: low nibble of byte i/2 */
                    qs[i / 2] = (uint8_t)((w >> (4 * s) & 15u) | (w >> (16 + 4 * s) & 15u) << 4);
                }
            }
        }
    return VKL_OK;
}
