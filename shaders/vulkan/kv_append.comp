#version 450
// KvAppend: state[pos[b, s], b, h, :] = x[b, h, s, :] in the state's dtype,
// in place (the output binding is the state's memory). Workgroup = one row
// (b, s, h); its invocations write the row's words, encoded as
// kv_append_row.glsl says (the bytes of engine/quant; an f64 state here).
//
// What the ref kernel refuses from the data cannot be refused here; those
// rows are skipped instead, so nothing is written out of bounds: a
// position outside [0, T), an int8 row holding NaN or inf. Two (b, s) with
// the same position race (the ref op keeps the last).
#include "kv_append_row.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;      // a power of two
layout(constant_id = 1) const uint SDT = 1;      // the state's dtype
layout(constant_id = 2) const uint XDT = 1;
layout(constant_id = 3) const uint PDT = 5;      // position_ids: i64 or i32

VKL_TENSOR_IN(Xb, 0)
VKL_TENSOR_IN(Pb, 1)
layout(set = 0, binding = 2, std430) buffer St_t { uint St[]; };

layout(push_constant) uniform Push {
    uint T, B, H, S, D;
    uint rows;         // B * S * H
    uint groups_x;     // row = y * groups_x + x
} pc;

shared uint sRed[WG];

// x's element i as the f32 bits of (float)x
uint x_bits(uint i) {
    if (XDT == VKL_DT_F32) return Xb[i];
    if (XDT == VKL_DT_F16) return vkl_f16_to_f32_bits(vkl_field(Xb[i >> 1], XDT, i));
    if (XDT == VKL_DT_BF16) return vkl_field(Xb[i >> 1], XDT, i) << 16;
    return vkl_f64_to_f32_bits(Xb[2u * i], Xb[2u * i + 1u]);
}

VKL_KV_WRITE_ROW(write_row, St, SDT, x_bits)
VKL_KV_POSITION(position, Pb, PDT)

void main() {
    const uint row = gl_WorkGroupID.y * pc.groups_x + gl_WorkGroupID.x, tid = gl_LocalInvocationID.x;
    if (row >= pc.rows) return;
    const uint h = row % pc.H, s = (row / pc.H) % pc.S, b = row / (pc.H * pc.S);
    const uint pi = b * pc.S + s;
    uint p;
    if (!position(pi, pc.T, p)) return;
    const uint dst = (p * pc.B + b) * pc.H + h; // the state row
    const uint src = ((b * pc.H + h) * pc.S + s) * pc.D;
    const uint D = pc.D;

    if (SDT == VKL_DT_F64) {
        for (uint e = tid; e < D; e += WG) {
            uvec2 v = XDT == VKL_DT_F64 ? uvec2(Xb[2u * (src + e)], Xb[2u * (src + e) + 1u])
                                        : vkl_f32_to_f64_bits(x_bits(src + e));
            St[2u * (dst * D + e)] = v.x;
            St[2u * (dst * D + e) + 1u] = v.y;
        }
    } else {
        write_row(dst, src, D, tid);
    }
}
