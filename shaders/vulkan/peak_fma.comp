#version 450
// The device's fused multiply-add peak (backends/vulkan/vk_peak.c):
// registers only, 8 independent chains of vec4 (f16vec4 in the _f16 build)
// x = x * m + c per iteration, 64 FLOPs per invocation and iteration, so
// neither memory nor one chain's latency limits it. m and c come from push
// constants and the iteration count too, so nothing folds; the chains'
// sum is stored so nothing is dead. x converges (|m| < 1), never overflows.
#ifdef VKL_F16
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define T f16vec4
#else
#define T vec4
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;

layout(set = 0, binding = 0, std430) writeonly buffer BufY { float y[]; };

layout(push_constant) uniform Push {
    uint iters;
    float m, c;
} pc;

void main() {
    const T m = T(pc.m), c = T(pc.c);
    T x[8];
    for (uint i = 0u; i < 8u; i++) x[i] = T(float(gl_LocalInvocationIndex + i) * (1.0 / 512.0));
    for (uint it = 0u; it < pc.iters; it++)
        for (uint i = 0u; i < 8u; i++) x[i] = fma(x[i], m, c);
    vec4 s = vec4(0.0);
    for (uint i = 0u; i < 8u; i++) s += vec4(x[i]);
    y[gl_GlobalInvocationID.x] = (s.x + s.y) + (s.z + s.w);
}
