#version 450
// out = cond ? x : y with numpy broadcasting of all three (strided views,
// vk_view.c): elements of any dtype are moved as bits, never converted.
// One invocation writes one 32-bit unit of the output.
#include "ew_common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint DT = 1;   // x, y and out dtype
layout(constant_id = 2) const uint RANK = 1; // real dims of the view, 0..6

VKL_EW_IN(cnd, 0)
VKL_EW_IN(x, 1)
VKL_EW_IN(y, 2)
VKL_TENSOR_OUT(o, 3)
layout(push_constant) uniform Push { VKL_EW_VIEW_FIELDS } pc;
VKL_EW_VIEW_INDEX(pc, RANK)

uvec2 elem(uint e) {
    bool take_x = cnd_raw(VKL_DT_BOOL, vkl_ew_index(0u, e)).x != 0u;
    return take_x ? x_raw(DT, vkl_ew_index(1u, e)) : y_raw(DT, vkl_ew_index(2u, e));
}

void main() {
    uint u = VKL_EW_UNIT(WG);
    VKL_EW_STORE_UNIT(o, DT, u, pc.count, elem)
}
