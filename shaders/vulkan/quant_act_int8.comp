#version 450
#extension GL_GOOGLE_include_directive : require
// The _dot matvecs' activations, quantized once per QuantMatMul (and once
// for a fused gate/up pair) rather than in every workgroup of the matvec:
// A [M, K] f32 -> int8 codes per step (layout: quant_act.glsl). One
// invocation per (step, row of A). Built twice: the 4-bit formats' steps of
// 32 in nibble order (this file as is) and int8's steps of 16 in element
// order (_bytes, VKL_QA_BYTES).
//
// Per step: sa = max|x| / 127, ia = round(x / sa) (|ia| <= 127) and, with
// DOT_RESIDUAL (the default), the rounding left over as a second code
// ib = round((x / sa - ia) * 254) (|ib| <= 127), so x ~ sa (ia + ib / 254)
// to within sa / 508: about 16 bits per step instead of 8. The matvec then
// gets each step's sum_k x'_k w0_k exactly (x' the rounded activations):
// docs/vulkan.md, "Integer dot products", has the bound. Activations past K
// (a short last group: W's rows run to KQ) are zeros.
#ifdef VKL_QA_BYTES
#define QV_CHUNK 16u
#else
#define QV_CHUNK 32u
#endif
#include "quant_common.glsl"
#include "quant_act.glsl"

layout(local_size_x = 64) in;
layout(constant_id = 0) const bool DOT_RESIDUAL = true;

layout(set = 0, binding = 0, std430) readonly buffer BufA { vec4 a[]; };  // [M, K]
layout(set = 0, binding = 1, std430) writeonly buffer BufQ { uvec4 qa4[]; };
layout(set = 0, binding = 1, std430) writeonly buffer BufQM { uvec2 qa2[]; };  // the same bytes: meta

layout(push_constant) uniform Push {
    uint M, K;
    uint steps;      // KQ / QV_CHUNK per row
    uint a_off;      // A's first vec4 in its binding
    uint qa_off;     // the first row's first uvec4 in its binding
    uint qa_stride;  // uvec4s per row
} pc;

const uint VEC = QV_CHUNK / 4u;  // vec4s of activations, and words of codes, per step

vec4 step_bytes(vec4 x[VEC], uint i) {
#ifdef VKL_QA_BYTES
    return x[i];
#else
    return vkl_nibble_order(x, i);
#endif
}

int sum_i8x4(uint w) {
    const int v = int(w);
    return (bitfieldExtract(v, 0, 8) + bitfieldExtract(v, 8, 8)) + (bitfieldExtract(v, 16, 8) + bitfieldExtract(v, 24, 8));
}

void main() {
    const uint c = gl_GlobalInvocationID.x;
    const uint m = gl_WorkGroupID.y;
    if (c >= pc.steps) return;
    const uint kv = pc.K / 4u;  // A's vec4s per row: past them, zeros
    const uint a0 = pc.a_off + m * kv;
    vec4 x[VEC];
    float amax = 0.0;
    for (uint i = 0u; i < VEC; i++) {
        x[i] = c * VEC + i < kv ? a[a0 + c * VEC + i] : vec4(0.0);
        const vec4 ax = abs(x[i]);
        amax = max(amax, max(max(ax.x, ax.y), max(ax.z, ax.w)));
    }
    const float to_code = amax > 1e-30 ? 127.0 / amax : 0.0;  // below: a block of zeros
    uint ia[VEC], ib[VEC];
    int isa = 0, isb = 0;
    for (uint i = 0u; i < VEC; i++) {
        const vec4 v = step_bytes(x, i) * to_code;  // in [-127, 127]
        // round to nearest (precise: a compiler may not fold the add and subtract away)
        precise vec4 q = (v + VKL_ROUND_MAGIC) - VKL_ROUND_MAGIC;
        ia[i] = vkl_pack_i8x4(q);
        isa += sum_i8x4(ia[i]);
        if (DOT_RESIDUAL) {
            ib[i] = vkl_pack_i8x4((v - q) * 254.0);  // |v - q| <= 1/2: codes within +-127
            isb += sum_i8x4(ib[i]);
        }
    }
    // an infinite activation makes sa infinite and the row's sums NaN, not 0 (a NaN
    // one propagates only where max does: GLSL leaves max with NaN undefined)
    const float sa = amax * (1.0 / 127.0);
    const uint row = pc.qa_off + m * pc.qa_stride;
    for (uint j = 0u; j < QA_VEC4; j++) {
        qa4[row + c * QA_VEC4 + j] = uvec4(ia[4u * j], ia[4u * j + 1u], ia[4u * j + 2u], ia[4u * j + 3u]);
        if (DOT_RESIDUAL)
            qa4[qa_ib(row, pc.steps) + c * QA_VEC4 + j] =
                uvec4(ib[4u * j], ib[4u * j + 1u], ib[4u * j + 2u], ib[4u * j + 3u]);
    }
    // |isa| <= 32 * 127: isa * 254 + isb is exact in int32
    const float scale = DOT_RESIDUAL ? sa * (1.0 / 254.0) : sa;
    const int isum = DOT_RESIDUAL ? isa * 254 + isb : isa;
    qa2[qa_meta(row, pc.steps, DOT_RESIDUAL) + c] = uvec2(floatBitsToUint(scale), uint(isum));
}
