#version 450
// out = x converted to DT_OUT, bit for bit as the ref Cast
// (backends/ref/elementwise_cast.c): floats round to nearest even (f64 to
// f16/bf16/fp8 through f32), float -> integer truncates and saturates (NaN
// -> 0), integers wrap, anything -> bool is v != 0 (NaN -> true), fp8 per
// SATURATE. Integer bit operations only: no float conversion a device might
// flush or round its own way, and no shaderFloat64 for f64.
#include "ew_common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint DT_IN = 1;
layout(constant_id = 2) const uint DT_OUT = 1;
layout(constant_id = 3) const bool SATURATE = true;

VKL_EW_IN(x, 0)
VKL_TENSOR_OUT(o, 1)
layout(push_constant) uniform Push { uint count; } pc;

// Element e converted: each conversion at one call site.
uvec2 elem(uint e) {
    const bool in_f64 = DT_IN == VKL_DT_F64, in_int = vkl_dt_is_int(DT_IN);
    uvec2 r = x_raw(DT_IN, e);
    if (DT_OUT == VKL_DT_BOOL) { // v != 0, NaN included
        if (in_int) return uvec2(vkl_l_is_zero(r) ? 0u : 1u, 0u);
        uint f = in_f64 ? (r.y & 0x7fffffffu) | r.x : vkl_raw_f32_bits(DT_IN, r) & 0x7fffffffu;
        return uvec2(f != 0u ? 1u : 0u, 0u);
    }
    if (vkl_dt_is_float(DT_OUT)) { // f32, f16, bf16, fp8: through f32 (f64 and integers rounded once)
        uint f = in_f64   ? vkl_f64_bits_to_f32(r)
                 : in_int ? vkl_l_to_f32_bits(vkl_raw_l(DT_IN, r), DT_IN != VKL_DT_U64)
                          : vkl_raw_f32_bits(DT_IN, r);
        switch (DT_OUT) {
        case VKL_DT_F16: return uvec2(vkl_f32_to_f16_bits(f), 0u);
        case VKL_DT_BF16: return uvec2(vkl_f32_to_bf16_bits(f), 0u);
        case VKL_DT_FP8_E4M3: case VKL_DT_FP8_E5M2:
            return uvec2(vkl_f32_bits_to_fp8(f, DT_OUT == VKL_DT_FP8_E4M3, SATURATE), 0u);
        default: return uvec2(f, 0u);
        }
    }
    if (in_int) { // to f64 (rounded), or to an integer (wrapped by the store)
        uvec2 l = vkl_raw_l(DT_IN, r);
        return DT_OUT == VKL_DT_F64 ? vkl_l_to_f64_bits(l, DT_IN != VKL_DT_U64) : l;
    }
    uvec2 d = in_f64 ? r : vkl_f32_bits_to_f64(vkl_raw_f32_bits(DT_IN, r));
    return DT_OUT == VKL_DT_F64 ? d : vkl_f64_bits_to_int(d, DT_OUT);
}

void main() {
    uint u = VKL_EW_UNIT(WG);
    VKL_EW_STORE_UNIT(o, DT_OUT, u, pc.count, elem)
}
