/* engine/quant: the weight and KV-cache number formats — E0M4, int4, int8
 * blocks, bulk f16/bf16, int8 keys and fp8 values — with their reference
 * quantize/dequantize, canonical bytes and per-backend packed layouts.
 * docs/quant.md is the full specification; this header is its API. */
#ifndef VKL_QUANT_H
#define VKL_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../context.h"
#include "../dtype.h"

/* ---- Canonical orientation ------------------------------------------------
 * A quantized weight is a row-major matrix of `rows` rows of `cols` elements,
 * grouped along cols, the reduction axis K. ONNX's MatMul(x[.., K], W[K, N])
 * stores W as [K, N]; the importer quantizes W^T: rows = N, cols = K, and the
 * quantized tensor's shape is [N, K] (Gemm with transB = 1 already has it).
 * Groups never straddle rows. A row has ceil(cols / group) groups; when
 * group does not divide cols the last one is short: it covers the last
 * cols % group elements, its header is computed from those elements alone
 * (the same rule as a full group, over fewer values), and its block is still
 * a full block whose codes past cols are the code of 0 (int4 z, E0M4 q0,
 * int8 0). Readers never use those codes: every kernel stops its activation
 * side at cols (docs/quant.md, "The short last group").
 *
 * ---- Canonical block layouts (the .vkm bytes; vkl_tensor_bytes_shaped) ---
 * The tensor is rows * ceil(cols / group) blocks, row by row, group by group,
 * little-endian, no padding between blocks.
 *
 * Q_E0M4 and Q_INT4 (group % 32 == 0), 4 + group / 2 bytes per block:
 *   u16 d      fp16 dequantization scale, finite, >= 0
 *   u16 zero   fp16 code of w0 = 0:
 *                E0M4: b = half(EXP | q0 << 6), q0 in 0..15, EXP = 0x4000
 *                      (n = 1) or 0x4400 (n = 2): the bias, low six
 *                      fraction bits zero;
 *                int4: z, an integer 0..15 (exact in fp16)
 *   u8 qs[group / 2]   byte j = q[2j] | q[2j + 1] << 4, codes 0..15
 * Dequantized in f32, exactly (no rounding happens: 5-bit times 11-bit):
 *   E0M4: w = (half(EXP | q << 6) - b) * d     (EXP = b & 0xFC00)
 *   int4: w = ((float)q - z) * d
 * Q_INT8 (any group >= 1; per output channel: group = cols), 4 + group:
 *   f32 d, then i8 q[group] in -127..127;  w = (float)q * d (one rounding).
 */

#define VKL_QUANT_GROUP_DEFAULT 128
#define VKL_Q4_HEADER_BYTES 4
#define VKL_Q8_HEADER_BYTES 4
#define VKL_E0M4_EXP_N1 0x4000u /* fp16 sign + exponent bits of [2, 4) */
#define VKL_E0M4_EXP_N2 0x4400u /* [4, 8) */

/* Bytes of one canonical block, 0 if (dtype, group) is not a valid pair.
 * Inline so that vkl_tensor_bytes (engine/graph.c) shares the one formula. */
static inline size_t vkl_quant_block_bytes(vkl_dtype dtype, uint32_t group) {
    switch (dtype) {
    case VKL_DTYPE_Q_E0M4:
    case VKL_DTYPE_Q_INT4:
        return group >= 32 && group % 32 == 0 ? VKL_Q4_HEADER_BYTES + (size_t)group / 2 : 0;
    case VKL_DTYPE_Q_INT8:
        return group >= 1 ? VKL_Q8_HEADER_BYTES + (size_t)group : 0;
    default:
        return 0;
    }
}

/* Groups per row of cols elements: ceil(cols / group), the last maybe short. */
static inline int64_t vkl_quant_row_groups(int64_t cols, uint32_t group) {
    return group ? cols / group + (cols % group != 0) : 0;
}

/* Checks (dtype, group, rows, cols) — quantized dtype, valid group, rows >= 0,
 * cols > 0 — and gives the canonical byte count, rows * ceil(cols / group)
 * blocks. */
vkl_status vkl_quant_canonical_bytes(vkl_context *ctx, vkl_dtype dtype, uint32_t group, int64_t rows, int64_t cols,
                                     size_t *bytes);

typedef struct vkl_quant_spec {
    vkl_dtype dtype;   /* VKL_DTYPE_Q_E0M4, Q_INT4 or Q_INT8 */
    uint32_t group;    /* elements per group along cols */
    uint32_t e0m4_n;   /* E0M4 only: w1 in [2^n, 2^(n+1)), 1 or 2; 0 means 1 */
} vkl_quant_spec;

void vkl_quant_spec_init(vkl_quant_spec *spec, vkl_dtype dtype); /* group 128, n 1 */

/* src: rows x cols f32, row-major. dst: exactly the canonical byte count.
 * Every input must be finite (NaN/inf: VKL_ERR_INVALID_ARGUMENT naming the
 * element); a 4-bit group whose range needs an fp16 scale above 65504 is
 * VKL_ERR_UNSUPPORTED. */
vkl_status vkl_quant_quantize(vkl_context *ctx, const vkl_quant_spec *spec, const float *src, int64_t rows,
                              int64_t cols, void *dst, size_t dst_bytes);
/* The reverse, for canonical bytes from anywhere (a file): each block's
 * header is validated (VKL_ERR_FORMAT naming row and group). */
vkl_status vkl_quant_dequantize(vkl_context *ctx, vkl_dtype dtype, uint32_t group, const void *src,
                                size_t src_bytes, int64_t rows, int64_t cols, float *dst);

/* The f32 value of one E0M4 code under a block's header (the exact
 * reference the shaders are held to). b must be a valid E0M4 bias. */
float vkl_e0m4_value(uint16_t d, uint16_t b, unsigned q);

/* Header field access for tests and packers. */
static inline uint16_t vkl_quant_rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline void vkl_quant_wr16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline uint32_t vkl_quant_rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline void vkl_quant_wr32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* ---- Bulk f16 / bf16 (half.c) ---------------------------------------------
 * Round to nearest even. Non-finite input, or a finite value that rounds to
 * infinity (|x| >= 65520 for f16), is VKL_ERR_INVALID_ARGUMENT naming the
 * index: a weight file never silently gains an inf. Decoding is exact. */
vkl_status vkl_quant_f32_to_f16(vkl_context *ctx, const float *src, size_t n, uint16_t *dst);
vkl_status vkl_quant_f32_to_bf16(vkl_context *ctx, const float *src, size_t n, uint16_t *dst);
void vkl_quant_f16_to_f32(const uint16_t *src, size_t n, float *dst);
void vkl_quant_bf16_to_f32(const uint16_t *src, size_t n, float *dst);

/* ---- KV cache (kv_quant.c) --------------------------------------------------
 * Keys: each (token, head) vector of head_dim values is one Q_INT8 block
 * (group = head_dim, symmetric, f32 scale): a new key is quantized on its own
 * and never changes older ones (MNN-LLM §4.2: keys reduce over head_dim).
 * src [tokens, heads, head_dim] f32 -> dst tokens * heads blocks. */
vkl_status vkl_kv_quantize_keys(vkl_context *ctx, const float *src, int64_t tokens, int64_t heads, int64_t head_dim,
                                void *dst, size_t dst_bytes);
vkl_status vkl_kv_dequantize_keys(vkl_context *ctx, const void *src, size_t src_bytes, int64_t tokens,
                                  int64_t heads, int64_t head_dim, float *dst);
/* Values: plain fp8, no scale (values reduce over seq_len, so a per-block
 * scale would change as tokens arrive). OCP e4m3fn (bias 7, max 448, NaN =
 * S.1111.111, no inf) or e5m2 (bias 15, max 57344, IEEE inf/NaN). Round to
 * nearest even; finite values beyond max saturate to +-max. */
uint8_t vkl_fp8_e4m3_from_f32(float x); /* NaN -> 0x7F|sign, +-inf -> +-448 */
uint8_t vkl_fp8_e5m2_from_f32(float x); /* NaN -> 0x7F|sign, +-inf -> +-57344 */
float vkl_fp8_e4m3_to_f32(uint8_t c);
float vkl_fp8_e5m2_to_f32(uint8_t c);
/* Bulk: dtype VKL_DTYPE_FP8_E4M3 or FP8_E5M2; NaN/inf input is
 * VKL_ERR_INVALID_ARGUMENT naming the index. */
vkl_status vkl_kv_quantize_values(vkl_context *ctx, vkl_dtype dtype, const float *src, size_t n, uint8_t *dst);
vkl_status vkl_kv_dequantize_values(vkl_context *ctx, vkl_dtype dtype, const uint8_t *src, size_t n, float *dst);
/* Cache rows as stored, decoded to f32: `rows` rows of `width` elements of
 * f32, f16, bf16, fp8 e4m3 / e5m2, or Q_INT8 blocks with group = width (the
 * key format above). src_bytes must be exactly their size
 * (VKL_ERR_FORMAT otherwise); any other dtype is VKL_ERR_UNSUPPORTED. */
vkl_status vkl_kv_dequantize_rows(vkl_context *ctx, vkl_dtype dtype, const void *src, size_t src_bytes, int64_t rows,
                                  int64_t width, float *dst);

/* ---- GPU packed layout (pack_gpu.c) -----------------------------------------
 * Made at load time from the canonical bytes. Two planes, each starting on a
 * 16-byte boundary so a shader reads uvec4s along K:
 *   qs plane: row r at r * row_stride; 4-bit: row_stride = cols / 2, and each
 *     u32 word (little-endian) holding elements 8t..8t+7 of the row puts
 *     element 8t+2s in bits 4s..4s+3 and 8t+2s+1 in bits 16+4s..19+4s
 *     (s = 0..3), so one shift, one AND and one OR make two fp16 values (see
 *     e0m4.c); int8: row_stride = cols rounded up to 16, zero padded.
 *   params plane at params_offset: rows * (cols / group) entries in row
 *     order; 4-bit: one u32 = d | zero << 16 (the canonical header, i.e. an
 *     f16vec2 (d, zero)); int8: one f32 d.
 * Both layouts (this one and the CPU's) are of the padded matrix: their cols
 * is the caller's rounded up to whole groups, the short last group's tail
 * stored as its zero-weight codes, so a kernel sees whole groups and only
 * has to read no activation past the true K. */
typedef struct vkl_quant_gpu_layout {
    vkl_dtype dtype;
    uint32_t group;
    int64_t rows, cols; /* cols: whole groups, the true K rounded up */
    size_t row_stride, qs_bytes;
    size_t params_offset, params_bytes;
    size_t total_bytes;
} vkl_quant_gpu_layout;

vkl_status vkl_quant_gpu_layout_make(vkl_context *ctx, vkl_dtype dtype, uint32_t group, int64_t rows, int64_t cols,
                                     vkl_quant_gpu_layout *out);
vkl_status vkl_quant_pack_gpu(vkl_context *ctx, const vkl_quant_gpu_layout *lay, const void *canon,
                              size_t canon_bytes, void *dst, size_t dst_bytes);
vkl_status vkl_quant_unpack_gpu(vkl_context *ctx, const vkl_quant_gpu_layout *lay, const void *packed,
                                size_t packed_bytes, void *canon, size_t canon_bytes);

/* ---- CPU packed layout (pack_cpu.c) -----------------------------------------
 * The Arm paper's weight tiling [h/hp, l/lp, hp, lp] (h = rows, l = cols),
 * rows padded to a multiple of hp with zero codes and zero scales.
 *   qs plane: tiles in that order, each hp x lp row-major. 4-bit: codes stay
 *     unsigned 0..15 (int4 pre-converted to uint4: the kernel subtracts the
 *     zero once per group from the sum, never per weight) and the nibble
 *     stream is cut into 32-nibble chunks; chunk c is 16 bytes with byte j =
 *     e[32c + j] | e[32c + 16 + j] << 4 (the [16, 2] -> [2, 16] transpose: a
 *     vector AND gives elements 0..15, a vector shift 16..31, no zip).
 *     int8: one byte per element.
 *   params plane (16-aligned): [rows_pad/hp][cols/group] records of f32
 *     scale[hp] then, 4-bit only, f32 zero[hp]: w = (q - zero) * scale, with
 *     E0M4 in its integer view scale = d * 2^(n-4), zero = q0 (the same
 *     kernel serves both formats).
 * Defaults: hp = lp = 8 (smmla 2x8 operands); hp = lp = 4 for sdot. */
typedef struct vkl_quant_cpu_layout {
    vkl_dtype dtype;
    uint32_t group, hp, lp;
    int64_t rows, cols, rows_pad; /* cols: whole groups, the true K rounded up */
    size_t qs_bytes, params_offset, params_bytes, total_bytes;
    uint16_t e0m4_exp; /* E0M4: EXP shared by all groups; set by pack, used by unpack */
} vkl_quant_cpu_layout;

/* hp in 1..64; lp in 1..64 dividing group. */
vkl_status vkl_quant_cpu_layout_make(vkl_context *ctx, vkl_dtype dtype, uint32_t group, int64_t rows, int64_t cols,
                                     uint32_t hp, uint32_t lp, vkl_quant_cpu_layout *out);
/* Validates the canonical headers; E0M4 blocks of one tensor must share n
 * (the quantizer guarantees it) or it is VKL_ERR_UNSUPPORTED. */
vkl_status vkl_quant_pack_cpu(vkl_context *ctx, vkl_quant_cpu_layout *lay, const void *canon, size_t canon_bytes,
                              void *dst, size_t dst_bytes);
vkl_status vkl_quant_unpack_cpu(vkl_context *ctx, const vkl_quant_cpu_layout *lay, const void *packed,
                                size_t packed_bytes, void *canon, size_t canon_bytes);

#endif
