// What the attention kernels share: the arithmetic type, reading rows of a
// KV cache of any dtype (docs/quant.md "KV cache"), and -inf tests that do
// not depend on a driver's float controls.
//
// REAL is f32, or f64 in the _f64 variants (built with VKL_F64=1; SPIR-V
// capability Float64, the device feature shaderFloat64): those serve
// graphs whose Q, K, V, mask or output is f64 and are chosen only on
// devices that have the feature. GLSL has no double exp(), so the _f64
// variants bring their own (vkl_exp).
#ifndef VKL_KV_COMMON_GLSL
#define VKL_KV_COMMON_GLSL

#include "kv_encode.glsl"
#include "tensor.glsl"

#define VKL_DT_Q_INT8 34u

#ifdef VKL_F64
#define REAL double
#define REAL2 dvec2
#define REAL4 dvec4
#else
#define REAL float
#define REAL2 vec2
#define REAL4 vec4
#endif

// -inf marks an invisible key: a float mask's -inf, a score that overflowed
// to -inf (the ref op's rule: a score of -inf is invisible). Compared as
// bits so that no fast-math assumption about infinities can drop the test.
float vkl_neg_inf_f() { return uintBitsToFloat(0xff800000u); }
bool vkl_is_neg_inf_f(float x) { return floatBitsToUint(x) == 0xff800000u; }
#ifdef VKL_F64
double vkl_neg_inf() { return packDouble2x32(uvec2(0u, 0xfff00000u)); }
bool vkl_is_neg_inf(double x) { return unpackDouble2x32(x) == uvec2(0u, 0xfff00000u); }
// exp(x) in double: x = k ln2 + r with ln2 split so that k ln2_hi is exact,
// |r| <= ln2 / 2, exp(r) by its Taylor series to r^13 / 13! (the next term
// is below 2e-16 of the sum), scaled by 2^k.
double vkl_exp(double x) {
    if (x < -745.2lf) return 0.0lf;
    if (x > 709.7lf) return packDouble2x32(uvec2(0u, 0x7ff00000u));
    double k = floor(x * 1.4426950408889634lf + 0.5lf);
    double r = (x - k * 6.93147180369123816490e-01lf) - k * 1.90821492927058770002e-10lf;
    double p = 1.0lf / 6227020800.0lf;
    p = p * r + 1.0lf / 479001600.0lf;
    p = p * r + 1.0lf / 39916800.0lf;
    p = p * r + 1.0lf / 3628800.0lf;
    p = p * r + 1.0lf / 362880.0lf;
    p = p * r + 1.0lf / 40320.0lf;
    p = p * r + 1.0lf / 5040.0lf;
    p = p * r + 1.0lf / 720.0lf;
    p = p * r + 1.0lf / 120.0lf;
    p = p * r + 1.0lf / 24.0lf;
    p = p * r + 1.0lf / 6.0lf;
    p = p * r + 0.5lf;
    p = p * r + 1.0lf;
    p = p * r + 1.0lf;
    int ki = int(k);
    // two steps, so that 2^k never leaves the double range on its own
    return ldexp(ldexp(p, ki / 2), ki - ki / 2);
}
#else
float vkl_neg_inf() { return vkl_neg_inf_f(); }
bool vkl_is_neg_inf(float x) { return vkl_is_neg_inf_f(x); }
// Clamped so that no driver's exp sees an argument it may mishandle;
// exp(-87) ~ 1.6e-38 is as good as 0 beside the row's largest weight, 1.
float vkl_exp(float x) { return exp(max(x, -87.0)); }
#endif

// 4 bytes at any byte offset of a word array (an int8 row's scale is
// unaligned when the head dim is not a multiple of 4).
#define VKL_BYTES4(NAME, off) \
    (((off) & 3u) == 0u ? NAME[(off) >> 2] \
                        : (NAME[(off) >> 2] >> (8u * ((off) & 3u))) | (NAME[((off) >> 2) + 1u] << (32u - 8u * ((off) & 3u))))

// fp8 codes -> f32, exactly, by bits (tensor.glsl's decode spends an exp2
// per element; a cache read decodes every element it touches). e4m3fn:
// normals are sign | (e + 120) << 23 | m << 20, subnormals m * 2^-9, 0x7F
// NaN; e5m2 is the top byte of an f16 (kv_encode.glsl widens it exactly).
float vkl_kv_e4m3(uint b) {
    uint e = (b >> 3) & 15u, m = b & 7u, s = (b & 0x80u) << 24;
    if (e == 0u) return uintBitsToFloat(s | floatBitsToUint(float(m) * (1.0 / 512.0)));
    if (e == 15u && m == 7u) return uintBitsToFloat(0x7fc00000u);
    return uintBitsToFloat(s | ((e + 120u) << 23) | (m << 20));
}
float vkl_kv_e5m2(uint b) { return uintBitsToFloat(vkl_f16_to_f32_bits(b << 8)); }

// A KV cache tensor NAME at BINDING (read-only): NAME_scale(dt, r, w) is
// row r's int8 scale d (1 for other dtypes), NAME_elem(dt, r, w, e) element
// e of row r (rows of w elements) before that scale: the int8 code, or the
// value itself. An int8 element's value is elem * scale in f32, exactly as
// engine/quant's (float)q * d; fp8 decodes exactly (tensor.glsl).
#ifdef VKL_F64
#define VKL_KV_F64_ELEM(NAME) \
    if (dt == VKL_DT_F64) return packDouble2x32(uvec2(NAME[2u * (r * w + e)], NAME[2u * (r * w + e) + 1u]));
#else
#define VKL_KV_F64_ELEM(NAME)
#endif
#define VKL_KV_IN(NAME, BINDING)                                                              \
    VKL_TENSOR_IN(NAME, BINDING)                                                              \
    float NAME##_scale(uint dt, uint r, uint w) {                                             \
        return dt == VKL_DT_Q_INT8 ? uintBitsToFloat(VKL_BYTES4(NAME, r * (w + 4u))) : 1.0;   \
    }                                                                                         \
    REAL NAME##_elem(uint dt, uint r, uint w, uint e) {                                       \
        if (dt == VKL_DT_Q_INT8) {                                                            \
            uint o = r * (w + 4u) + 4u + e;                                                   \
            return REAL(bitfieldExtract(int(NAME[o >> 2]), int(8u * (o & 3u)), 8));           \
        }                                                                                     \
        VKL_KV_F64_ELEM(NAME)                                                                 \
        if (dt == VKL_DT_FP8_E4M3 || dt == VKL_DT_FP8_E5M2) {                                 \
            uint i = r * w + e, c = (NAME[i >> 2] >> (8u * (i & 3u))) & 0xffu;                \
            return REAL(dt == VKL_DT_FP8_E4M3 ? vkl_kv_e4m3(c) : vkl_kv_e5m2(c));             \
        }                                                                                     \
        return REAL(NAME##_f(dt, r * w + e));                                                 \
    }                                                                                         \
    REAL NAME##_value(uint dt, uint r, uint w, uint e, float scale) {                         \
        if (dt == VKL_DT_Q_INT8) return REAL(float(NAME##_elem(dt, r, w, e)) * scale);        \
        return NAME##_elem(dt, r, w, e);                                                      \
    }                                                                                         \
    /* elements e, e + 1 (e and w even): one word for 1- and 2-byte dtypes */                 \
    REAL2 NAME##_value2(uint dt, uint r, uint w, uint e, float scale) {                       \
        if (dt == VKL_DT_Q_INT8) {                                                            \
            uint o = r * (w + 4u) + 4u + e, x = NAME[o >> 2] >> (8u * (o & 3u));              \
            return REAL2(vec2(bitfieldExtract(int(x), 0, 8), bitfieldExtract(int(x), 8, 8)) * scale); \
        }                                                                                     \
        if (dt == VKL_DT_FP8_E4M3 || dt == VKL_DT_FP8_E5M2) {                                 \
            uint i = r * w + e, x = NAME[i >> 2] >> (8u * (i & 3u));                          \
            return dt == VKL_DT_FP8_E4M3 ? REAL2(vkl_kv_e4m3(x & 0xffu), vkl_kv_e4m3((x >> 8) & 0xffu)) \
                                         : REAL2(vkl_kv_e5m2(x & 0xffu), vkl_kv_e5m2((x >> 8) & 0xffu)); \
        }                                                                                     \
        if (dt == VKL_DT_F16) return REAL2(unpackHalf2x16(NAME[(r * w + e) >> 1]));           \
        if (dt == VKL_DT_BF16) {                                                              \
            uint x = NAME[(r * w + e) >> 1];                                                  \
            return REAL2(uintBitsToFloat(x << 16), uintBitsToFloat(x & 0xffff0000u));         \
        }                                                                                     \
        return REAL2(NAME##_elem(dt, r, w, e), NAME##_elem(dt, r, w, e + 1u));                \
    }                                                                                         \
    /* elements e..e + 3 (e and w multiples of 4): one word for 1-byte dtypes */              \
    REAL4 NAME##_value4(uint dt, uint r, uint w, uint e, float scale) {                       \
        if (dt == VKL_DT_Q_INT8) {                                                            \
            int x = int(NAME[(r * (w + 4u) + 4u + e) >> 2]);                                  \
            return REAL4(vec4(bitfieldExtract(x, 0, 8), bitfieldExtract(x, 8, 8), bitfieldExtract(x, 16, 8), \
                              bitfieldExtract(x, 24, 8)) * scale);                            \
        }                                                                                     \
        if (dt == VKL_DT_FP8_E4M3) {                                                          \
            uint x = NAME[(r * w + e) >> 2];                                                  \
            return REAL4(vkl_kv_e4m3(x & 0xffu), vkl_kv_e4m3((x >> 8) & 0xffu), vkl_kv_e4m3((x >> 16) & 0xffu), \
                         vkl_kv_e4m3(x >> 24));                                               \
        }                                                                                     \
        if (dt == VKL_DT_FP8_E5M2) {                                                          \
            uint x = NAME[(r * w + e) >> 2];                                                  \
            return REAL4(vkl_kv_e5m2(x & 0xffu), vkl_kv_e5m2((x >> 8) & 0xffu), vkl_kv_e5m2((x >> 16) & 0xffu), \
                         vkl_kv_e5m2(x >> 24));                                               \
        }                                                                                     \
        return REAL4(NAME##_value2(dt, r, w, e, scale), NAME##_value2(dt, r, w, e + 2u, scale)); \
    }

// A plain tensor's element i as REAL (f64 read whole in the _f64 variants).
#ifdef VKL_F64
#define VKL_REAL_AT(NAME, dt, i) \
    ((dt) == VKL_DT_F64 ? packDouble2x32(uvec2(NAME[2u * (i)], NAME[2u * (i) + 1u])) : double(NAME##_f(dt, i)))
#else
#define VKL_REAL_AT(NAME, dt, i) NAME##_f(dt, i)
#endif

// Writes elements e and e + 1 (only e when !two) of a written tensor NAME
// of dtype dt (f32, f16, bf16; f64 in the _f64 variants) as whole words:
// a 16-bit pair is one word, so e must be even there (the recorders refuse
// rows of odd length for 16-bit outputs). f16 and bf16 round to nearest
// even from f32 as engine/dtype.c does (kv_encode.glsl).
#ifdef VKL_F64
#define VKL_STORE_F64(NAME)                                                 \
    if (dt == VKL_DT_F64) {                                                 \
        uvec2 w0 = unpackDouble2x32(v0);                                    \
        NAME[2u * e] = w0.x;                                                \
        NAME[2u * e + 1u] = w0.y;                                           \
        if (two) {                                                          \
            uvec2 w1 = unpackDouble2x32(v1);                                \
            NAME[2u * e + 2u] = w1.x;                                       \
            NAME[2u * e + 3u] = w1.y;                                       \
        }                                                                   \
        return;                                                             \
    }
#else
#define VKL_STORE_F64(NAME)
#endif
#define VKL_STORE_PAIR(NAME)                                                                     \
    void NAME##_store2(uint dt, uint e, REAL v0, REAL v1, bool two) {                          \
        VKL_STORE_F64(NAME)                                                                    \
        uint b0 = floatBitsToUint(float(v0)), b1 = floatBitsToUint(float(v1));                  \
        if (dt == VKL_DT_F32) {                                                                \
            NAME[e] = b0;                                                                      \
            if (two) NAME[e + 1u] = b1;                                                        \
        } else if (dt == VKL_DT_F16) {                                                         \
            NAME[e >> 1] = vkl_f32_to_f16_bits(b0) | (two ? vkl_f32_to_f16_bits(b1) << 16 : 0u);  \
        } else {                                                                               \
            NAME[e >> 1] = vkl_f32_to_bf16_bits(b0) | (two ? vkl_f32_to_bf16_bits(b1) << 16 : 0u); \
        }                                                                                      \
    }

// Row r of an attention K or V: (b, kv head g, position j) in either
// kv_layout (0: [B, Hkv, T, D]; 1: [T, B, Hkv, D], the in-place cache).
uint vkl_kv_row(bool layout1, uint B, uint Hkv, uint T, uint b, uint g, uint j) {
    return layout1 ? (j * B + b) * Hkv + g : (b * Hkv + g) * T + j;
}

#endif
