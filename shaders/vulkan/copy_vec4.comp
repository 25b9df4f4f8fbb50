#version 450
// dst = src, 16 bytes per invocation per iteration: a device-memory copy
// through the shader cores, the roofline of memory-bound kernels
// (vkbench's copy bandwidth; backends/vulkan/vk_measure.c).
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;

layout(set = 0, binding = 0, std430) readonly buffer Src { uvec4 src[]; };
layout(set = 0, binding = 1, std430) writeonly buffer Dst { uvec4 dst[]; };

layout(push_constant) uniform Push { uint n; } pc;  // uvec4s

void main() {
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += gl_NumWorkGroups.x * WG) dst[i] = src[i];
}
