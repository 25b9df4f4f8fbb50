#version 450
// out = a OP b with numpy broadcasting, every operand a strided view of the
// output's index space (vk_view.c), for every plain dtype: the op, the
// dtypes, the compute domain and the view's rank are specialization
// constants, so each pipeline folds to its one case. Domains as the ref
// backend's (backends/ref/elementwise_binary.c): f32 for f32/f16/bf16
// (rounded on store), exact int64 for integers and bool (wrapped on store;
// u64 compares and divides unsigned), f64 (the _f64 variant, shaderFloat64)
// for f64 and for Pow of an integer base by a float exponent. Max/Min fold
// a third input (N_SRC = 3); more inputs fold in further dispatches that
// read the output back as a. One invocation writes one 32-bit unit of the
// output (tensor.glsl).
#include "ew_common.glsl"
#include "ew_math.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint OP = 0;
layout(constant_id = 2) const uint DT_A = 1;   // dtype codes of engine/dtype.h
layout(constant_id = 3) const uint DT_B = 1;
layout(constant_id = 4) const uint DT_OUT = 1;
layout(constant_id = 5) const uint RANK = 1;   // real dims of the view, 0..6
layout(constant_id = 6) const uint N_SRC = 2;  // 2, or 3: c folds in after b (Max, Min)
layout(constant_id = 7) const uint DOMAIN = 0; // 0 f32, 1 int64, 2 f64

// op codes: backends/vulkan/vk_elementwise.c's ew_bin_op
#define OP_ADD 0u
#define OP_SUB 1u
#define OP_MUL 2u
#define OP_DIV 3u
#define OP_POW 4u
#define OP_EQ 5u
#define OP_GT 6u
#define OP_GE 7u
#define OP_LT 8u
#define OP_LE 9u
#define OP_AND 10u
#define OP_OR 11u
#define OP_MAX 12u
#define OP_MIN 13u
#define OP_SILU_MUL 14u

VKL_EW_IN(a, 0)
VKL_EW_IN(b, 1)
VKL_EW_IN(c, 2)
VKL_TENSOR_OUT(o, 3)
layout(push_constant) uniform Push { VKL_EW_VIEW_FIELDS } pc;
VKL_EW_VIEW_INDEX(pc, RANK)

float op_f(float x, float y) {
    switch (OP) {
    case OP_ADD: return x + y;
    case OP_SUB: return x - y;
    case OP_MUL: return x * y;
    case OP_DIV: return x / y;
    case OP_POW: return vkl_pow(x, y);
    case OP_EQ: return x == y ? 1.0 : 0.0;
    case OP_GT: return x > y ? 1.0 : 0.0;
    case OP_GE: return x >= y ? 1.0 : 0.0;
    case OP_LT: return x < y ? 1.0 : 0.0;
    case OP_LE: return x <= y ? 1.0 : 0.0;
    case OP_MAX: return (x > y || isnan(x)) ? x : y; // NaN propagates, as numpy's maximum
    case OP_MIN: return (x < y || isnan(x)) ? x : y;
    case OP_SILU_MUL: return x / (1.0 + vkl_exp(-x)) * y;
    default: return vkl_nan();
    }
}

uvec2 op_l(uvec2 x, uvec2 y) {
    const bool u = DT_A == VKL_DT_U64;
    switch (OP) {
    case OP_ADD: return vkl_l_add(x, y);
    case OP_SUB: return vkl_l_sub(x, y);
    case OP_MUL: return vkl_l_mul(x, y);
    case OP_DIV: return u ? vkl_l_udiv(x, y) : vkl_l_sdiv(x, y);
    case OP_POW: return vkl_l_pow(x, y);
    case OP_EQ: return uvec2(x == y ? 1u : 0u, 0u);
    case OP_GT: return uvec2(vkl_l_lt(y, x, u) ? 1u : 0u, 0u);
    case OP_GE: return uvec2(vkl_l_lt(x, y, u) ? 0u : 1u, 0u);
    case OP_LT: return uvec2(vkl_l_lt(x, y, u) ? 1u : 0u, 0u);
    case OP_LE: return uvec2(vkl_l_lt(y, x, u) ? 0u : 1u, 0u);
    case OP_AND: return uvec2(!vkl_l_is_zero(x) && !vkl_l_is_zero(y) ? 1u : 0u, 0u);
    case OP_OR: return uvec2(!vkl_l_is_zero(x) || !vkl_l_is_zero(y) ? 1u : 0u, 0u);
    case OP_MAX: return vkl_l_lt(x, y, u) ? y : x;
    case OP_MIN: return vkl_l_lt(y, x, u) ? y : x;
    default: return uvec2(0u);
    }
}

#ifdef VKL_F64
double op_d(double x, double y) {
    switch (OP) {
    case OP_ADD: return x + y;
    case OP_SUB: return x - y;
    case OP_MUL: return x * y;
    case OP_DIV: return x / y;
    case OP_POW: return vkl_pow_d(x, y);
    case OP_EQ: return x == y ? 1.0LF : 0.0LF;
    case OP_GT: return x > y ? 1.0LF : 0.0LF;
    case OP_GE: return x >= y ? 1.0LF : 0.0LF;
    case OP_LT: return x < y ? 1.0LF : 0.0LF;
    case OP_LE: return x <= y ? 1.0LF : 0.0LF;
    case OP_MAX: return (x > y || vkl_isnan_d(x)) ? x : y;
    case OP_MIN: return (x < y || vkl_isnan_d(x)) ? x : y;
    case OP_SILU_MUL: return x / (1.0LF + vkl_exp_d(-x)) * y;
    default: return vkl_nan_d();
    }
}
#endif

uint src_dt(uint s) { return s == 1u ? DT_B : DT_A; } // c has a's dtype

// Element e of the output as (low, high) words of DT_OUT: the operands'
// raw bits, then in one loop (one call site per conversion and op) each
// converted and folded in.
uvec2 elem(uint e) {
    uvec2 raw[3];
    raw[0] = a_raw(DT_A, vkl_ew_index(0u, e));
    raw[1] = b_raw(DT_B, vkl_ew_index(1u, e));
    raw[2] = N_SRC > 2u ? c_raw(DT_A, vkl_ew_index(2u, e)) : uvec2(0u);
    if (DOMAIN == 1u) {
        uvec2 v = uvec2(0u);
        for (uint s = 0u; s < N_SRC; s++) {
            uvec2 x = vkl_raw_l(src_dt(s), raw[s]);
            v = s == 0u ? x : op_l(v, x);
        }
        if (DT_OUT == VKL_DT_BOOL) return uvec2(vkl_l_is_zero(v) ? 0u : 1u, 0u);
        return v;
    }
#ifdef VKL_F64
    if (DOMAIN == 2u) {
        double v = 0.0LF;
        for (uint s = 0u; s < N_SRC; s++) {
            double x = vkl_raw_d(src_dt(s), raw[s]);
            v = s == 0u ? x : op_d(v, x);
        }
        if (DT_OUT == VKL_DT_F64) return unpackDouble2x32(v);
        if (DT_OUT == VKL_DT_BOOL) return uvec2(v == 0.0LF ? 0u : 1u, 0u);
        // an integer (Pow of an integer base): the ref stores it through
        // int64 (NaN -> 0, saturated), then wraps. pow's last-place error
        // must not truncate an exact integer power (9^0.5 =
        // 2.9999999999999996 -> 2): a result within 2^-40 of an integer is
        // taken as that integer.
        double t = roundEven(v);
        if (abs(v - t) <= abs(t) * 9.094947017729282e-13LF) v = t;
        return vkl_f64_bits_to_int(unpackDouble2x32(v), VKL_DT_I64);
    }
#endif
    float v = 0.0;
    for (uint s = 0u; s < N_SRC; s++) {
        float x = vkl_raw_f(src_dt(s), raw[s]);
        v = s == 0u ? x : op_f(v, x);
    }
    uint f = floatBitsToUint(v);
    switch (DT_OUT) {
    case VKL_DT_F16: return uvec2(vkl_f32_to_f16_bits(f), 0u);
    case VKL_DT_BF16: return uvec2(vkl_f32_to_bf16_bits(f), 0u);
    case VKL_DT_BOOL: return uvec2(v == 0.0 ? 0u : 1u, 0u); // NaN is true, as C's v != 0
    default: return uvec2(f, 0u);
    }
}

void main() {
    uint u = VKL_EW_UNIT(WG);
    VKL_EW_STORE_UNIT(o, DT_OUT, u, pc.count, elem)
}
