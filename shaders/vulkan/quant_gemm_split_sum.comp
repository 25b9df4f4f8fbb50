#version 450
// The split-K GEMM's second dispatch (quant_gemm_coopmat.glsl with
// pc.splits > 1): y[i] = the planes' partial sums added in plane order, plus
// the bias, so the result does not depend on which slice finished first;
// then a fused residual Add's R (quant_gemm_io.glsl's RESIDUAL), as the
// unsplit kernel's store adds it.
layout(local_size_x = 256) in;
layout(constant_id = 0) const bool RESIDUAL = false;

layout(set = 0, binding = 0, std430) readonly buffer BufP { float part[]; };  // [splits, M, N]
layout(set = 0, binding = 1, std430) writeonly buffer BufY { float y[]; };    // [M, N]
layout(set = 0, binding = 2, std430) readonly buffer BufB { float bias[]; };  // [N] if has_bias
layout(set = 0, binding = 3, std430) readonly buffer BufR { float res[]; };   // [M, N] if RESIDUAL

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
        y[i] = RESIDUAL ? v + res[i] : v;
    }
}
