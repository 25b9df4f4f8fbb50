#version 450
// Range: out[i] = start + i * delta (start, delta: one-element tensors read
// at run time; the length is the output's, known at prepare). Integers
// exactly in int64 (wrapping, as ref); f32/f16/bf16 in f32; f64 in the _f64
// variant (shaderFloat64).
#include "ew_common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint DT = 1;
layout(constant_id = 2) const uint DOMAIN = 0; // 0 f32, 1 int64, 2 f64

VKL_EW_IN(start, 0)
VKL_EW_IN(delta, 1)
VKL_TENSOR_OUT(o, 2)
layout(push_constant) uniform Push { uint count; } pc;

uvec2 elem(uint e) {
    uvec2 s = start_raw(DT, 0u), d = delta_raw(DT, 0u);
    if (DOMAIN == 1u) return vkl_l_add(vkl_raw_l(DT, s), vkl_l_mul(uvec2(e, 0u), vkl_raw_l(DT, d)));
#ifdef VKL_F64
    if (DOMAIN == 2u) return unpackDouble2x32(vkl_raw_d(DT, s) + double(e) * vkl_raw_d(DT, d));
#endif
    uint f = floatBitsToUint(vkl_raw_f(DT, s) + float(e) * vkl_raw_f(DT, d));
    return uvec2(DT == VKL_DT_F16 ? vkl_f32_to_f16_bits(f) : DT == VKL_DT_BF16 ? vkl_f32_to_bf16_bits(f) : f, 0u);
}

void main() {
    uint u = VKL_EW_UNIT(WG);
    VKL_EW_STORE_UNIT(o, DT, u, pc.count, elem)
}
