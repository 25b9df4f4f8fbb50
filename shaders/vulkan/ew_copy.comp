#version 450
// dst = src, word by word (Identity, Dropout's output, Constant from its
// loaded value): tensors are whole words (tensor.glsl), so any dtype.
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;

layout(set = 0, binding = 0, std430) readonly buffer Src { uint src[]; };
layout(set = 0, binding = 1, std430) writeonly buffer Dst { uint dst[]; };
layout(push_constant) uniform Push { uint words; } pc;

void main() {
    uint w = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WG + gl_LocalInvocationID.x;
    if (w < pc.words) dst[w] = src[w];
}
