// The arithmetic type of the nn kernels (norms, softmax, reductions, matmul,
// conv) and element-wise tensor I/O on top of tensor.glsl. `real` is float
// in the default builds and double in the _f64 variants (VKL_F64, SPIR-V
// capability Float64: the device feature shaderFloat64), which the
// recorders pick when a float tensor of the node is f64; f32, f16 and bf16
// tensors compute in f32. Include after tensor.glsl's users' extensions.
//
// Writes: NAME_put(dt, i, bits) stores element i. Elements of 4 and 8
// bytes are whole words; a 1- or 2-byte element shares its word with
// neighbours another invocation may own (a row's last f16 and the next
// row's first), so it is merged in with atomicAnd + atomicOr on its own
// bits: no 8/16-bit storage feature, no race, any ownership pattern. Kernels
// whose invocations own whole words write them directly instead.
#ifndef VKL_REAL_GLSL
#define VKL_REAL_GLSL

#include "tensor.glsl"

#ifndef VKL_DT_F64
#define VKL_DT_F64 4u
#endif

#ifdef VKL_F64
#define real double
#else
#define real float
#endif

// Element bytes and elements per written unit, f64 included (tensor.glsl's
// vkl_dt_size predates the f64 builds and counts f64 as 1 byte).

bool vkl_dt_is_signed(uint dt) {
    return dt == VKL_DT_I64 || dt == VKL_DT_I32 || dt == VKL_DT_I16 || dt == VKL_DT_I8;
}

// Element i of a read-only tensor NAME (declared by VKL_TENSOR_IN) as real.
#ifdef VKL_F64
#define VKL_REAL_IN(NAME)                                                                   \
    real NAME##_r(uint dt, uint i) {                                                        \
        if (dt == VKL_DT_F64) return packDouble2x32(uvec2(NAME[2u * i], NAME[2u * i + 1u])); \
        return real(NAME##_f(dt, i));                                                       \
    }
#else
#define VKL_REAL_IN(NAME) \
    real NAME##_r(uint dt, uint i) { return NAME##_f(dt, i); }
#endif

// v as the bits of dtype dt: x = the element's field (unshifted) or low
// word, y = the high word of an 8-byte type. Floats round to nearest even
// (through f32 for f16/bf16: the value was computed in f32 there anyway).
uvec2 vkl_real_bits(uint dt, real v) {
#ifdef VKL_F64
    if (dt == VKL_DT_F64) return unpackDouble2x32(v);
#endif
    const uint lo = vkl_f_bits(dt, float(v));
    return uvec2(lo, vkl_hi_word(dt, lo));
}

// A written tensor binding NAME with NAME_put(dt, i, bits) (the header says how).
#define VKL_TENSOR_STORE(NAME, BINDING)                                           \
    layout(set = 0, binding = BINDING, std430) buffer NAME##_t { uint NAME[]; };  \
    void NAME##_put(uint dt, uint i, uvec2 b) {                                   \
        const uint size_ = vkl_dt_size(dt);                                     \
        if (size_ == 8u) {                                                        \
            NAME[2u * i] = b.x;                                                   \
            NAME[2u * i + 1u] = b.y;                                              \
        } else if (size_ == 4u) {                                                 \
            NAME[i] = b.x;                                                        \
        } else {                                                                  \
            const uint sh_ = size_ == 2u ? 16u * (i & 1u) : 8u * (i & 3u);        \
            const uint m_ = (size_ == 2u ? 0xffffu : 0xffu) << sh_;               \
            const uint w_ = vkl_word_of(dt, i);                                   \
            atomicAnd(NAME[w_], ~m_);                                             \
            atomicOr(NAME[w_], (b.x << sh_) & m_);                                \
        }                                                                         \
    }

// exp and log: GLSL's take 32-bit floats only, so the f64 variants carry
// their own, accurate to a few ulp of double (the op cases hold f64 to
// 1e-12): exp by x = k ln2 + r, |r| <= ln2 / 2, and a degree-13 Taylor
// polynomial (the first dropped term is below 5e-18 relative); log by
// x = m 2^e with m in [sqrt(1/2), sqrt(2)) and 2 atanh((m - 1) / (m + 1)),
// whose series in z^2 <= 0.0295 is cut after z^22 (below 2e-18).
#ifdef VKL_F64
double vkl_inf_d() { return packDouble2x32(uvec2(0u, 0x7ff00000u)); }
double vkl_nan_d() { return packDouble2x32(uvec2(0u, 0x7ff80000u)); }

double vkl_exp_d(double x) {
    if (isnan(x)) return x;
    if (x > 709.8LF) return vkl_inf_d();
    if (x < -745.2LF) return 0.0LF;
    const double k = floor(x * 1.4426950408889634LF + 0.5LF);
    const double r = (x - k * 6.93147180369123816490e-01LF) - k * 1.90821492927058770002e-10LF;
    double p = 1.0LF;
    for (int i = 13; i >= 1; i--) p = 1.0LF + p * r / double(i);
    // two steps: k may reach -1075, past the normal exponent range
    const int ki = int(k), k1 = ki / 2;
    return ldexp(ldexp(p, k1), ki - k1);
}

double vkl_log_d(double x) {
    if (isnan(x) || x < 0.0LF) return vkl_nan_d();
    if (x == 0.0LF) return -vkl_inf_d();
    if (isinf(x)) return x;
    int e;
    double m = frexp(x, e); // [0.5, 1)
    if (m < 0.70710678118654752LF) {
        m *= 2.0LF;
        e -= 1;
    }
    const double z = (m - 1.0LF) / (m + 1.0LF), z2 = z * z;
    double t = 1.0LF / 23.0LF;
    for (int i = 21; i >= 1; i -= 2) t = 1.0LF / double(i) + z2 * t;
    return 2.0LF * z * t + double(e) * 6.93147180369123816490e-01LF + double(e) * 1.90821492927058770002e-10LF;
}
#define vkl_exp(x) vkl_exp_d(x)
#define vkl_log(x) vkl_log_d(x)
#define vkl_nan_real() vkl_nan_d()
#define vkl_inf_real() vkl_inf_d()
#else
#define vkl_exp(x) exp(x)
#define vkl_log(x) log(x)
#define vkl_nan_real() uintBitsToFloat(0x7fc00000u)
#define vkl_inf_real() uintBitsToFloat(0x7f800000u)
#endif

#endif
