/* KV-cache quantization (MNN-LLM §4.2): int8 keys, one symmetric scale per
 * (token, head) vector — keys reduce over head_dim, so each new key is
 * quantized alone — and fp8 values, cast without a scale — values reduce
 * over seq_len, where a shared scale would have to change as tokens arrive.
 * The fp8 codecs round to nearest even exactly as the ref Cast kernel's
 * saturate=1 path (backends/ref/elementwise_cast.c) does. */
#include <math.h>
#include <string.h>

#include "quant_internal.h"

typedef struct fp8_fmt {
    int mbits, bias;
    uint8_t max_code; /* largest finite magnitude's code */
    bool has_inf;     /* e5m2: exponent all-ones is inf/NaN; e4m3fn: only S.1111.111 is NaN */
} fp8_fmt;

static const fp8_fmt E4M3 = {3, 7, 0x7E, false};
static const fp8_fmt E5M2 = {2, 15, 0x7B, true};

/* On the f32 bits: |x| = sig · 2^(e − 23); the fp8 quantum is 2^(max(e, emin)
 * − mbits); r = |x| / quantum rounded to nearest even; because fp8 codes of
 * one sign are monotonic and the subnormal and first normal binade share a
 * quantum, the code is ((max(e, emin) − emin) << mbits) + r, carry included. */
static uint8_t fp8_encode(const fp8_fmt *f, float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    const uint8_t sign = (uint8_t)((u >> 24) & 0x80);
    const uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return sign | 0x7F;        /* NaN */
    if (a == 0x7F800000u) return sign | f->max_code; /* inf saturates */
    if (a < 0x00800000u) return sign;                /* f32 zero/subnormal: far below fp8's smallest */
    const int e = (int)(a >> 23) - 127, emin = 1 - f->bias;
    const int eq = e > emin ? e : emin;
    const int shift = eq - f->mbits - (e - 23); /* >= 23 - mbits */
    if (shift > 24) return sign;                /* below half the smallest subnormal */
    const uint32_t sig = (a & 0x7FFFFFu) | 0x800000u;
    uint32_t r = sig >> shift;
    const uint32_t rem = sig & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) r++;
    const uint32_t code = ((uint32_t)(eq - emin) << f->mbits) + r;
    return sign | (uint8_t)(code > f->max_code ? f->max_code : code);
}

static float fp8_decode(const fp8_fmt *f, uint8_t c) {
    const int e = (c & 0x7F) >> f->mbits, m = c & ((1 << f->mbits) - 1), emax = (1 << (7 - f->mbits)) - 1;
    float v;
    if (f->has_inf && e == emax) v = m ? NAN : INFINITY;
    else if (!f->has_inf && e == emax && m == (1 << f->mbits) - 1) v = NAN;
    else if (e == 0) v = ldexpf((float)m, 1 - f->bias - f->mbits);
    else v = ldexpf((float)(m + (1 << f->mbits)), e - f->bias - f->mbits);
    return (c & 0x80) ? -v : v;
}

uint8_t vkl_fp8_e4m3_from_f32(float x) { return fp8_encode(&E4M3, x); }
uint8_t vkl_fp8_e5m2_from_f32(float x) { return fp8_encode(&E5M2, x); }
float vkl_fp8_e4m3_to_f32(uint8_t c) { return fp8_decode(&E4M3, c); }
float vkl_fp8_e5m2_to_f32(uint8_t c) { return fp8_decode(&E5M2, c); }

static const fp8_fmt *fp8_of(vkl_context *ctx, vkl_dtype dtype, vkl_status *st) {
    if (dtype == VKL_DTYPE_FP8_E4M3) return &E4M3;
    if (dtype == VKL_DTYPE_FP8_E5M2) return &E5M2;
    *st = vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "kv: %s is not an fp8 dtype", vkl_dtype_name(dtype));
    return NULL;
}

vkl_status vkl_kv_quantize_values(vkl_context *ctx, vkl_dtype dtype, const float *src, size_t n, uint8_t *dst) {
    vkl_status st = VKL_OK;
    const fp8_fmt *f = fp8_of(ctx, dtype, &st);
    if (!f) return st;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(src[i]))
            return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "kv values (%s): value [%zu] is %s", vkl_dtype_name(dtype),
                            i, isnan(src[i]) ? "NaN" : "infinite");
        dst[i] = fp8_encode(f, src[i]);
    }
    return VKL_OK;
}

vkl_status vkl_kv_dequantize_values(vkl_context *ctx, vkl_dtype dtype, const uint8_t *src, size_t n, float *dst) {
    vkl_status st = VKL_OK;
    const fp8_fmt *f = fp8_of(ctx, dtype, &st);
    if (!f) return st;
    for (size_t i = 0; i < n; i++) dst[i] = fp8_decode(f, src[i]);
    return VKL_OK;
}

static vkl_status key_rows(vkl_context *ctx, int64_t tokens, int64_t heads, int64_t head_dim, int64_t *rows) {
    if (tokens < 0 || heads <= 0 || head_dim <= 0 || head_dim > UINT32_MAX)
        return vkl_fail(ctx, VKL_ERR_SHAPE, "kv keys: [%lld, %lld, %lld] is not a valid [tokens, heads, head_dim]",
                        (long long)tokens, (long long)heads, (long long)head_dim);
    if (!vkl_mul_i64(tokens, heads, rows)) return vkl_fail(ctx, VKL_ERR_OVERFLOW, "kv keys: tokens * heads overflows");
    return VKL_OK;
}

vkl_status vkl_kv_quantize_keys(vkl_context *ctx, const float *src, int64_t tokens, int64_t heads, int64_t head_dim,
                                void *dst, size_t dst_bytes) {
    int64_t rows = 0;
    vkl_status st = key_rows(ctx, tokens, heads, head_dim, &rows);
    if (st) return st;
    vkl_quant_spec spec;
    vkl_quant_spec_init(&spec, VKL_DTYPE_Q_INT8);
    spec.group = (uint32_t)head_dim;
    st = vkl_quant_quantize(ctx, &spec, src, rows, head_dim, dst, dst_bytes);
    return st ? vkl_fail_prefix(ctx, st, "kv keys") : VKL_OK;
}

vkl_status vkl_kv_dequantize_keys(vkl_context *ctx, const void *src, size_t src_bytes, int64_t tokens,
                                  int64_t heads, int64_t head_dim, float *dst) {
    int64_t rows = 0;
    vkl_status st = key_rows(ctx, tokens, heads, head_dim, &rows);
    if (st) return st;
    st = vkl_quant_dequantize(ctx, VKL_DTYPE_Q_INT8, (uint32_t)head_dim, src, src_bytes, rows, head_dim, dst);
    return st ? vkl_fail_prefix(ctx, st, "kv keys") : VKL_OK;
}

vkl_status vkl_kv_dequantize_rows(vkl_context *ctx, vkl_dtype dtype, const void *src, size_t src_bytes, int64_t rows,
                                  int64_t width, float *dst) {
    size_t n = 0, need = 0, row_bytes = 0;
    if (width > 0 && width <= UINT32_MAX)
        row_bytes = dtype == VKL_DTYPE_Q_INT8 ? vkl_quant_block_bytes(dtype, (uint32_t)width)
                                              : vkl_dtype_size(dtype) * (size_t)width;
    if (rows < 0 || !row_bytes || !vkl_mul_size((size_t)rows, (size_t)width, &n) ||
        !vkl_mul_size((size_t)rows, row_bytes, &need))
        return vkl_fail(ctx, VKL_ERR_SHAPE, "kv rows: %lld rows of %lld %s elements is not a valid size",
                        (long long)rows, (long long)width, vkl_dtype_name(dtype));
    if (src_bytes != need)
        return vkl_fail(ctx, VKL_ERR_FORMAT, "kv rows: %zu bytes for %lld rows of %lld %s elements, expected %zu",
                        src_bytes, (long long)rows, (long long)width, vkl_dtype_name(dtype), need);
    switch (dtype) {
    case VKL_DTYPE_F32: memcpy(dst, src, n * sizeof(float)); return VKL_OK;
    case VKL_DTYPE_F16: vkl_quant_f16_to_f32(src, n, dst); return VKL_OK;
    case VKL_DTYPE_BF16: vkl_quant_bf16_to_f32(src, n, dst); return VKL_OK;
    case VKL_DTYPE_FP8_E4M3: case VKL_DTYPE_FP8_E5M2: return vkl_kv_dequantize_values(ctx, dtype, src, n, dst);
    case VKL_DTYPE_Q_INT8: return vkl_kv_dequantize_keys(ctx, src, src_bytes, rows, 1, width, dst);
    default:
        return vkl_fail(ctx, VKL_ERR_UNSUPPORTED, "kv rows: a %s cache is not a KV cache format", vkl_dtype_name(dtype));
    }
}
