/* Ref kernels of Cast and CastLike among the plain dtypes, fp8 included.
 * Semantics (ONNX Cast-21, where ONNX leaves a case open we say what we do):
 * - float -> float rounds to nearest even (f64 -> f16/bf16/fp8 goes through
 *   f32, as ONNX's reference does);
 * - float -> int truncates toward zero and SATURATES to the target's range;
 *   NaN -> 0 (ONNX leaves out-of-range and NaN undefined);
 * - int -> int wraps (two's complement), int -> float rounds once;
 * - anything -> bool is v != 0 (NaN -> true); bool -> number is 0 or 1;
 * - -> fp8 (OCP e4m3fn: max 448, no inf; e5m2: max 57344, has inf):
 *   round to nearest even; NaN -> NaN; with saturate=1 (default) +-inf and
 *   values that round past the largest finite become +-max; with
 *   saturate=0 they become NaN (e4m3fn) or +-inf (e5m2). */
#include <math.h>
#include <string.h>

#include "elementwise.h"

/* An fp8 format: mantissa bits, exponent bias, largest finite value and its
 * code, whether it has infinities (e5m2) or spends only S.1111.111 on NaN
 * (e4m3fn). */
typedef struct fp8_format {
    int mbits, bias;
    double max;
    uint8_t max_code;
    bool has_inf;
} fp8_format;

static const fp8_format E4M3 = {3, 7, 448.0, 0x7E, false};
static const fp8_format E5M2 = {2, 15, 57344.0, 0x7B, true};

static const fp8_format *fp8_of(vkl_dtype t) {
    return t == VKL_DTYPE_FP8_E4M3 ? &E4M3 : t == VKL_DTYPE_FP8_E5M2 ? &E5M2 : NULL;
}

static double fp8_decode(const fp8_format *f, uint8_t c) {
    int e = (c & 0x7F) >> f->mbits, m = c & ((1 << f->mbits) - 1), emax = (1 << (7 - f->mbits)) - 1;
    double v;
    if (f->has_inf && e == emax) v = m ? NAN : INFINITY;
    else if (!f->has_inf && e == emax && m == (1 << f->mbits) - 1) v = NAN;
    else if (e == 0) v = ldexp(m, 1 - f->bias - f->mbits); /* subnormal */
    else v = ldexp(m + (1 << f->mbits), e - f->bias - f->mbits);
    return (c & 0x80) ? -v : v;
}

static uint8_t fp8_encode(const fp8_format *f, float x, bool saturate) {
    uint8_t sign = signbit(x) ? 0x80 : 0;
    uint8_t overflow = saturate ? f->max_code : f->has_inf ? 0x7C : 0x7F;
    if (isnan(x)) return sign | 0x7F;
    if (isinf(x)) return sign | overflow;
    /* Round |x| to the grid of its binade (subnormal binades share the
     * smallest normal exponent's spacing); rint, in the default rounding
     * mode, rounds ties to even. */
    int emin = 1 - f->bias, e;
    double a = fabs((double)x);
    frexp(a, &e);
    e = e - 1 < emin ? emin : e - 1; /* a in [2^e, 2^(e+1)) */
    double q = ldexp(1.0, e - f->mbits), r = rint(a / q) * q;
    if (r > f->max) return sign | overflow;
    if (r == 0) return sign;
    frexp(r, &e); /* rounding may have carried into the next binade */
    e -= 1;
    if (e < emin) return sign | (uint8_t)(r / ldexp(1.0, emin - f->mbits)); /* subnormal: exponent field 0 */
    int mant = (int)(r / ldexp(1.0, e - f->mbits)) - (1 << f->mbits);
    return sign | (uint8_t)((e + f->bias) << f->mbits) | (uint8_t)mant;
}

/* One element read exactly: floats (fp8 decoded) as double, u64 as its
 * unsigned value, other integers and bool as int64. */
typedef struct scalar {
    enum { S_FLOAT, S_INT, S_UINT } kind;
    double f;
    int64_t i;
} scalar;

static scalar read_scalar(const vkl_ref_tensor *t, int64_t i) {
    const fp8_format *f8 = fp8_of(t->dtype);
    if (f8) return (scalar){S_FLOAT, fp8_decode(f8, ((const uint8_t *)t->data)[i]), 0};
    if (vkl_dtype_is_float(t->dtype)) return (scalar){S_FLOAT, vkl_ref_get_f(t, i), 0};
    return (scalar){t->dtype == VKL_DTYPE_U64 ? S_UINT : S_INT, 0, vkl_ref_get_i(t, i)};
}

/* Range of an integer dtype other than u64 (whose top does not fit). */
static void int_range(vkl_dtype t, int64_t *lo, int64_t *hi) {
    switch (t) {
    case VKL_DTYPE_I8: *lo = INT8_MIN, *hi = INT8_MAX; return;
    case VKL_DTYPE_U8: *lo = 0, *hi = UINT8_MAX; return;
    case VKL_DTYPE_I16: *lo = INT16_MIN, *hi = INT16_MAX; return;
    case VKL_DTYPE_U16: *lo = 0, *hi = UINT16_MAX; return;
    case VKL_DTYPE_I32: *lo = INT32_MIN, *hi = INT32_MAX; return;
    case VKL_DTYPE_U32: *lo = 0, *hi = UINT32_MAX; return;
    default: *lo = INT64_MIN, *hi = INT64_MAX; return;
    }
}

/* Float -> integer dtype t: truncate, saturate, NaN -> 0. Returns the bits
 * vkl_ref_set_i stores. */
static int64_t float_to_int(double d, vkl_dtype t) {
    if (isnan(d)) return 0;
    if (t == VKL_DTYPE_U64) {
        if (d <= 0) return 0;
        return d >= 18446744073709551616.0 ? (int64_t)UINT64_MAX : (int64_t)(uint64_t)d;
    }
    int64_t lo, hi;
    int_range(t, &lo, &hi);
    if (d <= (double)lo) return lo;
    if (d >= (double)hi) return hi; /* (double)INT64_MAX is 2^63: still saturates */
    return (int64_t)d;
}

/* The value as a float, rounded once from its exact form. */
static float scalar_f32(scalar v) {
    return v.kind == S_FLOAT ? (float)v.f : v.kind == S_UINT ? (float)(uint64_t)v.i : (float)v.i;
}

static void write_scalar(vkl_ref_tensor *t, int64_t i, scalar v, bool saturate) {
    unsigned char *p = t->data;
    const fp8_format *f8 = fp8_of(t->dtype);
    switch (t->dtype) {
    case VKL_DTYPE_F64: {
        double d = v.kind == S_FLOAT ? v.f : v.kind == S_UINT ? (double)(uint64_t)v.i : (double)v.i;
        memcpy(p + i * 8, &d, 8);
        return;
    }
    case VKL_DTYPE_F32: { float f = scalar_f32(v); memcpy(p + i * 4, &f, 4); return; }
    case VKL_DTYPE_F16: { uint16_t h = vkl_f32_to_f16(scalar_f32(v)); memcpy(p + i * 2, &h, 2); return; }
    case VKL_DTYPE_BF16: { uint16_t h = vkl_f32_to_bf16(scalar_f32(v)); memcpy(p + i * 2, &h, 2); return; }
    case VKL_DTYPE_FP8_E4M3: case VKL_DTYPE_FP8_E5M2: p[i] = fp8_encode(f8, scalar_f32(v), saturate); return;
    case VKL_DTYPE_BOOL: p[i] = v.kind == S_FLOAT ? v.f != 0 : v.i != 0; return;
    default: vkl_ref_set_i(t, i, v.kind == S_FLOAT ? float_to_int(v.f, t->dtype) : v.i); return;
    }
}

/* Same-domain casts (float <-> float, int/bool <-> int/bool) go through the
 * chunked converters: the chunk is already the output value. */
static vkl_status copy_chunk(const void *user, const void *const *in, void *out, int64_t n) {
    memcpy(out, in[0], (size_t)n * *(const size_t *)user);
    return VKL_OK;
}

/* out (dtype out->dtype) = in converted. */
static vkl_status cast(const vkl_ref_args *a) {
    const vkl_ref_tensor *x = &a->in[0];
    vkl_ref_tensor *o = &a->out[0];
    vkl_ref_ew_domain dx, dout;
    bool plain_x = vkl_ref_ew_domain_of(x->dtype, &dx), plain_o = vkl_ref_ew_domain_of(o->dtype, &dout);
    if (!plain_x && !fp8_of(x->dtype)) return vkl_ref_ew_unsupported(a, x->dtype);
    if (!plain_o && !fp8_of(o->dtype)) return vkl_ref_ew_unsupported(a, o->dtype);
    if (plain_x && plain_o && (dx == VKL_REF_EW_D_I64) == (dout == VKL_REF_EW_D_I64)) {
        vkl_ref_ew_domain d = dx == VKL_REF_EW_D_F64 ? dx : dout; /* f64 either side: round once, from f64 */
        size_t es = d == VKL_REF_EW_D_F32 ? sizeof(float) : sizeof(int64_t);
        const vkl_ref_tensor *in[1] = {x};
        return vkl_ref_ew_map(a, d, in, 1, o, copy_chunk, &es);
    }
    int64_t saturate;
    vkl_status st = vkl_op_attr_int(a->g, a->node, "saturate", &saturate);
    for (int64_t i = 0; !st && i < x->count; i++) write_scalar(o, i, read_scalar(x, i), saturate != 0);
    return st;
}

vkl_status vkl_ref_cast(const vkl_ref_args *a) { return cast(a); }
/* CastLike(input, target_type): Cast to target_type's dtype (the output's). */
vkl_status vkl_ref_cast_like(const vkl_ref_args *a) { return cast(a); }
