#version 450
#extension GL_GOOGLE_include_directive : require
// The _dot matvecs' activations, quantized once per activation tensor (all
// its QuantMatMuls read the codes: vk_scratch.c's shared ranges) rather
// than in every workgroup of every matvec: A [M, K] f32 -> int8 codes per
// step (layout: quant_act.glsl). One
// invocation per (step, row of A). Built twice: the 4-bit formats' steps of
// 32 in nibble order (this file as is) and int8's steps of 16 in element
// order (_bytes, VKL_QA_BYTES).
//
// The arithmetic (qa_quantize_step) is quant_act.glsl's, shared with
// norm.comp's _codes builds. Activations past K (a short last group: W's
// rows run to KQ) are zeros.
#ifdef VKL_QA_BYTES
#define QV_CHUNK 16u
#else
#define QV_CHUNK 32u
#endif
#include "quant_common.glsl"

layout(local_size_x = 64) in;
layout(constant_id = 0) const bool DOT_RESIDUAL = true;

layout(set = 0, binding = 0, std430) readonly buffer BufA { vec4 a[]; };  // [M, K]
layout(set = 0, binding = 1, std430) writeonly buffer BufQ { uint qa[]; };

layout(push_constant) uniform Push {
    uint M, K;
    uint steps;      // KQ / QV_CHUNK per row
    uint a_off;      // A's first vec4 in its binding
    uint qa_off;     // the first row's first uvec4 in its binding
    uint qa_stride;  // uvec4s per row
} pc;

void qa_put(uint w, uint v) { qa[w] = v; }
#define VKL_QA_WRITE
#include "quant_act.glsl"

void main() {
    const uint c = gl_GlobalInvocationID.x;
    const uint m = gl_WorkGroupID.y;
    if (c >= pc.steps) return;
    const uint kv = pc.K / 4u;  // A's vec4s per row: past them, zeros
    const uint a0 = pc.a_off + m * kv;
    vec4 x[QA_VEC];
    for (uint i = 0u; i < QA_VEC; i++) x[i] = c * QA_VEC + i < kv ? a[a0 + c * QA_VEC + i] : vec4(0.0);
    qa_quantize_step(pc.qa_off + m * pc.qa_stride, pc.steps, c, x, DOT_RESIDUAL);
}
