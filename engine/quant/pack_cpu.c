/* The CPU weight layout of the Arm W4A8 paper, made at load time from the
 * canonical blocks (and back): [h/hp, l/lp, hp, lp] tiles, unsigned 4-bit
 * codes in the 2x16 transposed nibble order, f32 scale/zero records per
 * hp rows and group (see quant.h). */
#include <string.h>

#include "quant_internal.h"

static bool is4(vkl_dtype t) { return t == VKL_DTYPE_Q_E0M4 || t == VKL_DTYPE_Q_INT4; }

vkl_status vkl_quant_cpu_layout_make(vkl_context *ctx, vkl_dtype dtype, uint32_t group, int64_t rows, int64_t cols,
                                     uint32_t hp, uint32_t lp, vkl_quant_cpu_layout *out) {
    size_t canon = 0;
    vkl_status st = vkl_quant_canonical_bytes(ctx, dtype, group, rows, cols, &canon);
    if (st) return st;
    /* The padded matrix: a short last group is stored whole (quant.h). Its
     * canonical bytes are the same; the sizes below are checked. */
    cols = vkl_quant_row_groups(cols, group) * (int64_t)group;
    if (hp < 1 || hp > 64 || lp < 1 || lp > 64 || group % lp)
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT,
                        "cpu layout: tile hp=%u lp=%u (need 1..64, lp dividing group %u)", hp, lp, group);
    memset(out, 0, sizeof(*out));
    out->dtype = dtype;
    out->group = group;
    out->hp = hp;
    out->lp = lp;
    out->rows = rows;
    out->cols = cols;
    out->rows_pad = (rows + hp - 1) / hp * hp; /* rows <= canon: no overflow */
    out->e0m4_exp = VKL_E0M4_EXP_N1;
    size_t elems, records, rec_bytes = (size_t)hp * 4 * (is4(dtype) ? 2 : 1);
    bool ok = vkl_mul_size((size_t)out->rows_pad, (size_t)cols, &elems) &&
              vkl_mul_size((size_t)(out->rows_pad / hp), (size_t)(cols / group), &records) &&
              vkl_mul_size(records, rec_bytes, &out->params_bytes);
    if (ok) {
        out->qs_bytes = is4(dtype) ? elems / 2 : elems; /* elems is a multiple of 32 for 4-bit */
        out->params_offset = (out->qs_bytes + 15) / 16 * 16;
        ok = out->params_offset >= out->qs_bytes &&
             vkl_add_size(out->params_offset, out->params_bytes, &out->total_bytes);
    }
    if (!ok)
        return vkl_fail(ctx, VKL_ERR_OVERFLOW, "cpu layout: [%lld, %lld] size overflows", (long long)rows,
                        (long long)cols);
    return VKL_OK;
}

/* Position of element (r, k) in the tile stream [h/hp, l/lp, hp, lp]. */
static size_t stream_index(const vkl_quant_cpu_layout *lay, int64_t r, int64_t k) {
    size_t hb = (size_t)r / lay->hp, i = (size_t)r % lay->hp, lb = (size_t)k / lay->lp, j = (size_t)k % lay->lp;
    return ((hb * ((size_t)lay->cols / lay->lp) + lb) * lay->hp + i) * lay->lp + j;
}

/* 2x16 transposed order: nibble e sits in byte 16*(e/32) + e%16, high half
 * when e%32 >= 16. */
static void put_nibble(uint8_t *qs, size_t e, unsigned q) {
    qs[e / 32 * 16 + e % 16] |= (uint8_t)(q << ((e % 32) / 16 * 4));
}
/* 32 codes in canonical order (16 bytes, q[2t] | q[2t+1] << 4) as one
 * chunk of the 2x16 transposed order: put_nibble for each, a byte at a time. */
static void put_chunk(uint8_t *chunk, const uint8_t *canon) {
    for (unsigned j = 0; j < 16; j++) {
        const unsigned sh = 4 * (j & 1);
        chunk[j] = (uint8_t)(((canon[j / 2] >> sh) & 15u) | ((canon[8 + j / 2] >> sh) & 15u) << 4);
    }
}
static unsigned get_nibble(const uint8_t *qs, size_t e) {
    return (qs[e / 32 * 16 + e % 16] >> ((e % 32) / 16 * 4)) & 15u;
}

/* Byte offset of row r's scale in the record of (r's hp-block, group g);
 * its zero (4-bit) is hp floats further. */
static size_t record_at(const vkl_quant_cpu_layout *lay, int64_t r, int64_t g) {
    size_t per = (size_t)lay->hp * (is4(lay->dtype) ? 2 : 1);
    size_t rec = (size_t)r / lay->hp * ((size_t)lay->cols / lay->group) + (size_t)g;
    return lay->params_offset + (rec * per + (size_t)r % lay->hp) * 4;
}

static void put_f32(uint8_t *p, float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    vkl_quant_wr32(p, u);
}
static float get_f32(const uint8_t *p) {
    uint32_t u = vkl_quant_rd32(p);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static vkl_status check_sizes(vkl_context *ctx, const vkl_quant_cpu_layout *lay, size_t canon_bytes,
                              size_t packed_bytes) {
    return vkl_quant_check_pack_sizes(ctx, "cpu layout", lay->dtype, lay->group, lay->rows, lay->cols, lay->total_bytes,
                                      canon_bytes, packed_bytes);
}

/* One 4-bit block's header as the kernel's (scale, zero). */
static vkl_status header_to_record(vkl_context *ctx, vkl_quant_cpu_layout *lay, const uint8_t *blk, int64_t r,
                                   int64_t g, float *scale, float *zero) {
    uint16_t d = vkl_quant_rd16(blk), z = vkl_quant_rd16(blk + 2);
    if (lay->dtype == VKL_DTYPE_Q_INT4) {
        vkl_status st = vkl_int4_check_header(ctx, d, z, r, g);
        *scale = vkl_f16_to_f32(d);
        *zero = vkl_f16_to_f32(z);
        return st;
    }
    vkl_status st = vkl_e0m4_check_header(ctx, d, z, r, g);
    if (st) return st;
    uint16_t exp = z & 0xFC00;
    if (r == 0 && g == 0) lay->e0m4_exp = exp;
    if (exp != lay->e0m4_exp)
        return vkl_fail(ctx, VKL_ERR_UNSUPPORTED,
                        "cpu layout: e0m4 block (row %lld, group %lld) uses n = %d, the tensor's first block n = %d",
                        (long long)r, (long long)g, exp == VKL_E0M4_EXP_N1 ? 1 : 2,
                        lay->e0m4_exp == VKL_E0M4_EXP_N1 ? 1 : 2);
    /* Integer view: w1 − b = (q − q0)·2^(n−4), so scale = d·2^(n−4) (exact). */
    *scale = vkl_f16_to_f32(d) * (exp == VKL_E0M4_EXP_N1 ? 0.125f : 0.25f);
    *zero = (float)((z >> 6) & 15u);
    return VKL_OK;
}

static vkl_status record_to_header(vkl_context *ctx, const vkl_quant_cpu_layout *lay, float scale, float zero,
                                   int64_t r, int64_t g, uint8_t *blk) {
    float dv = lay->dtype == VKL_DTYPE_Q_E0M4 ? scale / (lay->e0m4_exp == VKL_E0M4_EXP_N1 ? 0.125f : 0.25f) : scale;
    uint16_t d = vkl_f32_to_f16(dv);
    bool zero_ok = zero >= 0.0f && zero <= 15.0f && zero == (float)(unsigned)zero;
    if (vkl_f16_to_f32(d) != dv || !zero_ok)
        return vkl_fail(ctx, VKL_ERR_FORMAT, "cpu layout: record (row %lld, group %lld) scale %g zero %g is not a %s header",
                        (long long)r, (long long)g, (double)scale, (double)zero, vkl_dtype_name(lay->dtype));
    uint16_t z = lay->dtype == VKL_DTYPE_Q_E0M4 ? (uint16_t)(lay->e0m4_exp | (unsigned)zero << 6)
                                                : vkl_f32_to_f16(zero);
    vkl_quant_wr16(blk, d);
    vkl_quant_wr16(blk + 2, z);
    return lay->dtype == VKL_DTYPE_Q_E0M4 ? vkl_e0m4_check_header(ctx, d, z, r, g) : vkl_int4_check_header(ctx, d, z, r, g);
}

vkl_status vkl_quant_pack_cpu(vkl_context *ctx, vkl_quant_cpu_layout *lay, const void *canon, size_t canon_bytes,
                              void *dst, size_t dst_bytes) {
    vkl_status st = check_sizes(ctx, lay, canon_bytes, dst_bytes);
    if (st) return st;
    const uint8_t *src = canon;
    uint8_t *out = dst;
    memset(out, 0, dst_bytes); /* padded rows: code 0, scale 0, zero 0 */
    const size_t block = vkl_quant_block_bytes(lay->dtype, lay->group);
    const int64_t groups = lay->cols / lay->group;
    for (int64_t r = 0; r < lay->rows; r++)
        for (int64_t g = 0; g < groups; g++) {
            const uint8_t *blk = src + (size_t)(r * groups + g) * block, *qs = blk + 4;
            uint8_t *rec = out + record_at(lay, r, g);
            if (!is4(lay->dtype)) {
                float d = get_f32(blk);
                if ((st = vkl_int8_check_header(ctx, d, r, g))) return st;
                put_f32(rec, d);
                /* lp divides group: the block is whole runs of lp stream bytes */
                for (uint32_t i = 0; i < lay->group; i += lay->lp)
                    memcpy(out + stream_index(lay, r, g * lay->group + i), qs + i, lay->lp);
                continue;
            }
            float scale = 0.0f, zero = 0.0f;
            if ((st = header_to_record(ctx, lay, blk, r, g, &scale, &zero))) return st;
            put_f32(rec, scale);
            put_f32(rec + (size_t)lay->hp * 4, zero);
            if (lay->lp % 32 == 0) {
                /* runs of 32 codes start chunks: a byte at a time (loading a
                 * 1B model's weights element by element took 15 s) */
                for (uint32_t i = 0; i < lay->group; i += 32)
                    put_chunk(out + stream_index(lay, r, g * lay->group + i) / 2, qs + i / 2);
                continue;
            }
            for (uint32_t i = 0; i < lay->group; i++)
                put_nibble(out, stream_index(lay, r, g * lay->group + i), vkl_quant_nibble(qs, i));
        }
    return VKL_OK;
}

vkl_status vkl_quant_unpack_cpu(vkl_context *ctx, const vkl_quant_cpu_layout *lay, const void *packed,
                                size_t packed_bytes, void *canon, size_t canon_bytes) {
    vkl_status st = check_sizes(ctx, lay, canon_bytes, packed_bytes);
    if (st) return st;
    if (lay->dtype == VKL_DTYPE_Q_E0M4 && lay->e0m4_exp != VKL_E0M4_EXP_N1 && lay->e0m4_exp != VKL_E0M4_EXP_N2)
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "cpu layout: e0m4 exponent bits 0x%04x are not n = 1 or 2",
                        lay->e0m4_exp);
    const uint8_t *src = packed;
    uint8_t *out = canon;
    const size_t block = vkl_quant_block_bytes(lay->dtype, lay->group);
    const int64_t groups = lay->cols / lay->group;
    for (int64_t r = 0; r < lay->rows; r++)
        for (int64_t g = 0; g < groups; g++) {
            uint8_t *blk = out + (size_t)(r * groups + g) * block, *qs = blk + 4;
            const uint8_t *rec = src + record_at(lay, r, g);
            if (!is4(lay->dtype)) {
                float d = get_f32(rec);
                if ((st = vkl_int8_check_header(ctx, d, r, g))) return st;
                put_f32(blk, d);
                for (uint32_t i = 0; i < lay->group; i++) qs[i] = src[stream_index(lay, r, g * lay->group + i)];
                continue;
            }
            st = record_to_header(ctx, lay, get_f32(rec), get_f32(rec + (size_t)lay->hp * 4), r, g, blk);
            if (st) return st;
            memset(qs, 0, lay->group / 2);
            for (uint32_t i = 0; i < lay->group; i++)
                qs[i / 2] |= (uint8_t)(get_nibble(src, stream_index(lay, r, g * lay->group + i)) << (4 * (i & 1)));
        }
    return VKL_OK;
}
