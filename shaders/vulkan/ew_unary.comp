#version 450
// out = OP(x), same shape and dtype, x contiguous: math and activations,
// Neg, Abs, Relu, Not and Clip (bounds: one-element tensors at bindings 1
// and 2, read by every invocation, so run-time bounds work). Domains as the
// ref backend's (backends/ref/elementwise_unary.c): f32 for f32/f16/bf16,
// exact int64 for integers and bool (wrapped on store), f64 in the _f64
// variant (shaderFloat64). One invocation writes one 32-bit unit.
#include "ew_common.glsl"
#include "ew_math.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint OP = 0;
layout(constant_id = 2) const uint DT = 1;     // input and output dtype
layout(constant_id = 3) const uint DOMAIN = 0; // 0 f32, 1 int64, 2 f64
layout(constant_id = 4) const bool HAS_LO = false; // Clip's min is present
layout(constant_id = 5) const bool HAS_HI = false; // Clip's max is present

// op codes: backends/vulkan/vk_ew_unary.c's ew_un_op
#define OP_SQRT 0u
#define OP_RECIPROCAL 1u
#define OP_NEG 2u
#define OP_ABS 3u
#define OP_EXP 4u
#define OP_LOG 5u
#define OP_COS 6u
#define OP_SIN 7u
#define OP_ERF 8u
#define OP_TANH 9u
#define OP_SIGMOID 10u
#define OP_RELU 11u
#define OP_GELU 12u
#define OP_GELU_TANH 13u
#define OP_NOT 14u
#define OP_CLIP 15u

VKL_EW_IN(x, 0)
VKL_EW_IN(lo, 1)
VKL_EW_IN(hi, 2)
VKL_TENSOR_OUT(o, 3)
layout(push_constant) uniform Push { uint count; } pc;

bool vkl_is_nan_bits(float v) { return (floatBitsToUint(v) & 0x7fffffffu) > 0x7f800000u; }

// Each transcendental at one call site (spirv-opt inlines every call):
// Sigmoid shares Exp's, Gelu Erf's, Gelu tanh Tanh's, Cos Sin's.
// sqrt of a negative number is undefined in Vulkan: NaN, as C's.
float op_f(float v, float l, float h) {
    switch (OP) {
    case OP_SQRT: return v < 0.0 ? vkl_nan() : sqrt(v);
    case OP_RECIPROCAL: return 1.0 / v;
    case OP_NEG: return -v;
    case OP_ABS: return abs(v);
    case OP_EXP: case OP_SIGMOID: { // sigmoid as the ref: exp of -|x| only, never overflows
        float t = vkl_exp(OP == OP_EXP ? v : -abs(v));
        return OP == OP_EXP ? t : v >= 0.0 ? 1.0 / (1.0 + t) : t / (1.0 + t);
    }
    case OP_LOG: return vkl_log(v);
    case OP_COS: case OP_SIN: return vkl_sincos(v, OP == OP_COS);
    case OP_ERF: case OP_GELU: {
        float t = vkl_erf(OP == OP_ERF ? v : v * 0.707106781);
        return OP == OP_ERF ? t : 0.5 * v * (1.0 + t);
    }
    case OP_TANH: case OP_GELU_TANH: {
        float t = vkl_tanh(OP == OP_TANH ? v : 0.797884561 * (v + 0.044715 * v * v * v));
        return OP == OP_TANH ? t : 0.5 * v * (1.0 + t);
    }
    // NaN stays NaN in Relu and Clip, tested on the bits: NVIDIA's compiler
    // turns `v < 0 ? 0 : v` into a max() that drops NaN (seen on an H100,
    // driver 580.159.04: relu_specials, clip_f32_nan)
    case OP_RELU: return vkl_is_nan_bits(v) ? v : v < 0.0 ? 0.0 : v;
    case OP_CLIP:
        if (vkl_is_nan_bits(v)) return v;
        if (HAS_LO) v = v < l ? l : v;
        if (HAS_HI) v = h < v ? h : v; // max wins when min > max, as ONNX
        return v;
    default: return vkl_nan();
    }
}

uvec2 op_l(uvec2 v, uvec2 l, uvec2 h) {
    const bool u = DT == VKL_DT_U64;
    switch (OP) {
    case OP_NEG: return vkl_l_neg(v);
    case OP_ABS: return !u && vkl_l_is_neg(v) ? vkl_l_neg(v) : v; // |INT_MIN| wraps to INT_MIN
    case OP_RELU: return vkl_l_is_neg(v) ? uvec2(0u) : v;
    case OP_NOT: return uvec2(vkl_l_is_zero(v) ? 1u : 0u, 0u);
    case OP_CLIP:
        if (HAS_LO) v = vkl_l_lt(v, l, u) ? l : v;
        if (HAS_HI) v = vkl_l_lt(h, v, u) ? h : v;
        return v;
    default: return uvec2(0u);
    }
}

#ifdef VKL_F64
double op_d(double v, double l, double h) {
    switch (OP) {
    case OP_SQRT: return v < 0.0LF ? vkl_nan_d() : sqrt(v);
    case OP_RECIPROCAL: return 1.0LF / v;
    case OP_NEG: return -v;
    case OP_ABS: return abs(v);
    case OP_EXP: case OP_SIGMOID: {
        double t = vkl_exp_d(OP == OP_EXP ? v : -abs(v));
        return OP == OP_EXP ? t : v >= 0.0LF ? 1.0LF / (1.0LF + t) : t / (1.0LF + t);
    }
    case OP_LOG: return vkl_log_d(v);
    case OP_COS: case OP_SIN: return vkl_sincos_d(v, OP == OP_COS);
    case OP_ERF: case OP_GELU: {
        double t = vkl_erf_d(OP == OP_ERF ? v : v * 0.70710678118654752440LF);
        return OP == OP_ERF ? t : 0.5LF * v * (1.0LF + t);
    }
    case OP_TANH: case OP_GELU_TANH: {
        double t = vkl_tanh_d(OP == OP_TANH ? v : 0.79788456080286535588LF * (v + 0.044715LF * v * v * v));
        return OP == OP_TANH ? t : 0.5LF * v * (1.0LF + t);
    }
    case OP_RELU: return isnan(v) ? v : v < 0.0LF ? 0.0LF : v;
    case OP_CLIP:
        if (isnan(v)) return v;
        if (HAS_LO) v = v < l ? l : v;
        if (HAS_HI) v = h < v ? h : v;
        return v;
    default: return vkl_nan_d();
    }
}
#endif

// Element e: x's raw bits and the bounds' (Clip), each converted at one
// call site, then the op.
uvec2 elem(uint e) {
    uvec2 raw[3];
    raw[0] = x_raw(DT, e);
    raw[1] = HAS_LO ? lo_raw(DT, 0u) : uvec2(0u);
    raw[2] = HAS_HI ? hi_raw(DT, 0u) : uvec2(0u);
    const uint n = OP == OP_CLIP ? 3u : 1u;
    if (DOMAIN == 1u) {
        uvec2 v[3];
        for (uint k = 0u; k < n; k++) v[k] = vkl_raw_l(DT, raw[k]);
        uvec2 r = op_l(v[0], v[1], v[2]);
        return DT == VKL_DT_BOOL ? uvec2(vkl_l_is_zero(r) ? 0u : 1u, 0u) : r;
    }
#ifdef VKL_F64
    if (DOMAIN == 2u) {
        double v[3];
        for (uint k = 0u; k < n; k++) v[k] = vkl_raw_d(DT, raw[k]);
        return unpackDouble2x32(op_d(v[0], v[1], v[2]));
    }
#endif
    float v[3];
    for (uint k = 0u; k < n; k++) v[k] = vkl_raw_f(DT, raw[k]);
    uint f = floatBitsToUint(op_f(v[0], v[1], v[2]));
    return uvec2(DT == VKL_DT_F16 ? vkl_f32_to_f16_bits(f) : DT == VKL_DT_BF16 ? vkl_f32_to_bf16_bits(f) : f, 0u);
}

void main() {
    uint u = VKL_EW_UNIT(WG);
    VKL_EW_STORE_UNIT(o, DT, u, pc.count, elem)
}
