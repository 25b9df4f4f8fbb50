#version 450
#extension GL_GOOGLE_include_directive : require
// The split-K GEMM's second dispatch (quant_gemm_coopmat.glsl with
// pc.splits > 1): y[i] = the planes' partial sums added in plane order, plus
// the bias, so the result does not depend on which slice finished first;
// then a fused node's epilogue (quant_gemm_epilogue.glsl), as the unsplit
// kernel's store applies it.
#include "quant_gemm_epilogue.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint EPI = 0u;  // 0 none, 1 + R, 2 silu(G) * (binding 3)

layout(set = 0, binding = 0, std430) readonly buffer BufP { float part[]; };  // [splits, M, N]
layout(set = 0, binding = 1, std430) writeonly buffer BufY { float y[]; };    // [M, N]
layout(set = 0, binding = 2, std430) readonly buffer BufB { float bias[]; };  // [N] if has_bias
layout(set = 0, binding = 3, std430) readonly buffer BufE { float epi_in[]; }; // [M, N] if EPI != 0

layout(push_constant) uniform Push {
    uint count;  // M * N
    uint N;
    uint splits;
    uint has_bias;
} pc;

void main() {
    const uint stride = gl_NumWorkGroups.x * 256u;
    for (uint i = gl_GlobalInvocationID.x; i < pc.count; i += stride) {
        float s = part[i];
        for (uint z = 1u; z < pc.splits; z++) s += part[z * pc.count + i];
        const float v = s + (pc.has_bias != 0u ? bias[i % pc.N] : 0.0);
        y[i] = qg_epilogue_apply(EPI, v, EPI != 0u ? epi_in[i] : 0.0);
    }
}
