/* Entry points of engine/quant: argument and size checks, then dispatch to
 * the format's file (e0m4.c, int4.c, int8.c); helpers every format shares. */
#include <math.h>
#include <string.h>

#include "quant_internal.h"

static const char *fmt_name(vkl_dtype t) { return vkl_dtype_name(t); }

vkl_status vkl_quant_canonical_bytes(vkl_context *ctx, vkl_dtype dtype, uint32_t group, int64_t rows, int64_t cols,
                                     size_t *bytes) {
    if (!vkl_dtype_is_quantized(dtype))
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "quant: %s is not a block-quantized dtype", fmt_name(dtype));
    size_t block = vkl_quant_block_bytes(dtype, group);
    if (!block)
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "quant: group %u is not valid for %s (%s)", group,
                        fmt_name(dtype), dtype == VKL_DTYPE_Q_INT8 ? "need >= 1" : "need a multiple of 32");
    if (rows < 0 || cols <= 0)
        return vkl_fail(ctx, VKL_ERR_SHAPE, "quant: %s matrix [%lld, %lld] has no valid shape", fmt_name(dtype),
                        (long long)rows, (long long)cols);
    int64_t groups;
    if (!vkl_mul_i64(rows, vkl_quant_row_groups(cols, group), &groups) || !vkl_mul_size((size_t)groups, block, bytes))
        return vkl_fail(ctx, VKL_ERR_OVERFLOW, "quant: %s matrix [%lld, %lld] size overflows", fmt_name(dtype),
                        (long long)rows, (long long)cols);
    return VKL_OK;
}

void vkl_quant_spec_init(vkl_quant_spec *spec, vkl_dtype dtype) {
    spec->dtype = dtype;
    spec->group = VKL_QUANT_GROUP_DEFAULT;
    spec->e0m4_n = 1;
}

/* Whether x[0..n) holds a NaN or infinity (exponent bits all ones): a test
 * on the bits, in fixed-length chunks the compiler vectorizes, since an
 * import runs it over every weight. */
static bool any_non_finite(const float *x, size_t n) {
    uint32_t bad = 0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (size_t k = 0; k < 32; k++) {
            uint32_t u;
            memcpy(&u, &x[i + k], sizeof(u));
            bad |= (u & 0x7F800000u) == 0x7F800000u;
        }
    for (; i < n; i++) bad |= !isfinite(x[i]);
    return bad != 0;
}

vkl_status vkl_quant_check_finite(vkl_context *ctx, const char *format, const float *src, int64_t rows,
                                  int64_t cols) {
    if (rows <= 0 || cols <= 0 || !any_non_finite(src, (size_t)rows * (size_t)cols)) return VKL_OK;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            float v = src[r * cols + c];
            if (!isfinite(v))
                return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT,
                                "%s: weight [%lld, %lld] is %s; non-finite weights cannot be quantized", format,
                                (long long)r, (long long)c, isnan(v) ? "NaN" : v > 0 ? "+inf" : "-inf");
        }
    return VKL_OK;
}

uint16_t vkl_quant_f16_ceil(double x) {
    if (!(x <= 65504.0)) return 0x7C00;
    uint16_t h = vkl_f32_to_f16((float)x);
    while (h < 0x7C00 && (double)vkl_f16_to_f32(h) < x) h++;
    while (h > 0 && (double)vkl_f16_to_f32((uint16_t)(h - 1)) >= x) h--;
    return h;
}

vkl_status vkl_quant_quantize(vkl_context *ctx, const vkl_quant_spec *spec, const float *src, int64_t rows,
                              int64_t cols, void *dst, size_t dst_bytes) {
    if (!spec || (!src && rows) || (!dst && rows))
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "quant: NULL spec or buffer");
    size_t need = 0;
    vkl_status st = vkl_quant_canonical_bytes(ctx, spec->dtype, spec->group, rows, cols, &need);
    if (st) return st;
    if (dst_bytes != need)
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "quant: %s [%lld, %lld] group %u needs %zu bytes, got %zu",
                        fmt_name(spec->dtype), (long long)rows, (long long)cols, spec->group, need, dst_bytes);
    st = vkl_quant_check_finite(ctx, fmt_name(spec->dtype), src, rows, cols);
    if (st) return st;
    switch (spec->dtype) {
    case VKL_DTYPE_Q_E0M4: {
        uint32_t n = spec->e0m4_n ? spec->e0m4_n : 1;
        if (n != 1 && n != 2)
            return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "e0m4: n = %u, must be 1 or 2", spec->e0m4_n);
        return vkl_e0m4_quantize(ctx, src, rows, cols, spec->group, n, dst);
    }
    case VKL_DTYPE_Q_INT4: return vkl_int4_quantize(ctx, src, rows, cols, spec->group, dst);
    default: return vkl_int8_quantize(ctx, src, rows, cols, spec->group, dst);
    }
}

/* E0M4 and int4 blocks share their layout: expand each through its table. */
static vkl_status q4_dequantize(vkl_context *ctx, vkl_q4_table_fn table_of, const uint8_t *src, int64_t rows,
                                int64_t cols, uint32_t group, float *dst) {
    const size_t block = VKL_Q4_HEADER_BYTES + group / 2;
    const int64_t groups = vkl_quant_row_groups(cols, group);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t g = 0; g < groups; g++) {
            const uint8_t *blk = src + (size_t)(r * groups + g) * block;
            float table[16];
            vkl_status st = table_of(ctx, vkl_quant_rd16(blk), vkl_quant_rd16(blk + 2), r, g, table);
            if (st) return st;
            float *out = dst + r * cols + g * group;
            const int64_t len = cols - g * group < group ? cols - g * group : group; /* the short last group */
            for (int64_t i = 0; i < len; i++) out[i] = table[vkl_quant_nibble(blk + VKL_Q4_HEADER_BYTES, (size_t)i)];
        }
    return VKL_OK;
}

vkl_status vkl_quant_dequantize(vkl_context *ctx, vkl_dtype dtype, uint32_t group, const void *src,
                                size_t src_bytes, int64_t rows, int64_t cols, float *dst) {
    if ((!src || !dst) && rows) return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "dequant: NULL buffer");
    size_t need = 0;
    vkl_status st = vkl_quant_canonical_bytes(ctx, dtype, group, rows, cols, &need);
    if (st) return st;
    if (src_bytes != need)
        return vkl_fail(ctx, VKL_ERR_FORMAT, "dequant: %s [%lld, %lld] group %u has %zu bytes, expected %zu",
                        fmt_name(dtype), (long long)rows, (long long)cols, group, src_bytes, need);
    switch (dtype) {
    case VKL_DTYPE_Q_E0M4: return q4_dequantize(ctx, vkl_e0m4_table, src, rows, cols, group, dst);
    case VKL_DTYPE_Q_INT4: return q4_dequantize(ctx, vkl_int4_table, src, rows, cols, group, dst);
    default: return vkl_int8_dequantize(ctx, src, rows, cols, group, dst);
    }
}

vkl_status vkl_quant_check_pack_sizes(vkl_context *ctx, const char *what, vkl_dtype dtype, uint32_t group,
                                      int64_t rows, int64_t cols, size_t packed_expected, size_t canon_bytes,
                                      size_t packed_bytes) {
    size_t canon = 0;
    vkl_status st = vkl_quant_canonical_bytes(ctx, dtype, group, rows, cols, &canon);
    if (st) return st;
    if (canon_bytes != canon || packed_bytes != packed_expected)
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT,
                        "%s: buffers of %zu (canonical) and %zu (packed) bytes, expected %zu and %zu", what,
                        canon_bytes, packed_bytes, canon, packed_expected);
    return VKL_OK;
}
