#version 450
// KvAppend: state[pos[b, s], b, h, :] = x[b, h, s, :] in the state's dtype,
// in place (the output binding is the state's memory). Workgroup = one row
// (b, s, h); its invocations write the row's words. The bytes equal
// engine/quant's (kv_encode.glsl: integer arithmetic only): f = (float)x,
// then f32 as is, f16 / bf16 / fp8 round to nearest even, int8 one block
// per row, d = max|f| / 127.0f and q = clamp(roundf(f / d), -127, 127).
//
// What the ref kernel refuses from the data cannot be refused here; those
// rows are skipped instead, so nothing is written out of bounds: a
// position outside [0, T), an int8 row holding NaN or inf. Two (b, s) with
// the same position race (the ref op keeps the last).
#include "kv_common.glsl"

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

void main() {
    const uint row = gl_WorkGroupID.y * pc.groups_x + gl_WorkGroupID.x, tid = gl_LocalInvocationID.x;
    if (row >= pc.rows) return;
    const uint h = row % pc.H, s = (row / pc.H) % pc.S, b = row / (pc.H * pc.S);
    const uint pi = b * pc.S + s;
    uint p;
    if (PDT == VKL_DT_I64) {
        if (Pb[2u * pi + 1u] != 0u) return; // negative, or beyond 2^32
        p = Pb[2u * pi];
    } else {
        int v = int(Pb[pi]);
        if (v < 0) return;
        p = uint(v);
    }
    if (p >= pc.T) return;
    const uint dst = (p * pc.B + b) * pc.H + h; // the state row
    const uint src = ((b * pc.H + h) * pc.S + s) * pc.D;
    const uint D = pc.D;

    if (SDT == VKL_DT_Q_INT8) {
        uint amax = 0u;
        for (uint e = tid; e < D; e += WG) amax = max(amax, x_bits(src + e) & 0x7fffffffu);
        sRed[tid] = amax;
        barrier();
        for (uint n = WG / 2u; n > 0u; n /= 2u) {
            if (tid < n) sRed[tid] = max(sRed[tid], sRed[tid + n]);
            barrier();
        }
        amax = sRed[0];
        if (amax >= 0x7f800000u) return; // NaN or inf in the row
        const uint d = vkl_f32_div_bits(amax, 0x42fe0000u); // amax / 127.0f
        const uint base = dst * (D + 4u) / 4u;            // D % 4 == 0: rows are whole words
        if (tid == 0u) St[base] = d;
        for (uint w = tid; w < D / 4u; w += WG) {
            uint word = 0u;
            for (uint k = 0u; k < 4u; k++) {
                uint code = d == 0u ? 0u : vkl_int8_code(x_bits(src + 4u * w + k), d);
                word |= code << (8u * k);
            }
            St[base + 1u + w] = word;
        }
    } else if (SDT == VKL_DT_FP8_E4M3 || SDT == VKL_DT_FP8_E5M2) {
        for (uint w = tid; w < D / 4u; w += WG) {
            uint word = 0u;
            for (uint k = 0u; k < 4u; k++) {
                uint f = x_bits(src + 4u * w + k);
                word |= (SDT == VKL_DT_FP8_E4M3 ? vkl_fp8_e4m3_bits(f) : vkl_fp8_e5m2_bits(f)) << (8u * k);
            }
            St[dst * D / 4u + w] = word;
        }
    } else if (SDT == VKL_DT_F16 || SDT == VKL_DT_BF16) {
        for (uint w = tid; w < D / 2u; w += WG) {
            uint f0 = x_bits(src + 2u * w), f1 = x_bits(src + 2u * w + 1u);
            St[dst * D / 2u + w] = SDT == VKL_DT_F16 ? vkl_f32_to_f16_bits(f0) | (vkl_f32_to_f16_bits(f1) << 16)
                                                      : vkl_f32_to_bf16_bits(f0) | (vkl_f32_to_bf16_bits(f1) << 16);
        }
    } else if (SDT == VKL_DT_F64) {
        for (uint e = tid; e < D; e += WG) {
            uvec2 v = XDT == VKL_DT_F64 ? uvec2(Xb[2u * (src + e)], Xb[2u * (src + e) + 1u])
                                        : vkl_f32_to_f64_bits(x_bits(src + e));
            St[2u * (dst * D + e)] = v.x;
            St[2u * (dst * D + e) + 1u] = v.y;
        }
    } else {
        for (uint e = tid; e < D; e += WG) St[dst * D + e] = x_bits(src + e);
    }
}
