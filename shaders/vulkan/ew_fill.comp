#version 450
// dst[w] = data[w % period]: a tensor whose bytes are known at prepare
// (Shape, Size, ConstantOfShape, Dropout's all-true mask), its repeating
// words in push constants.
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;

layout(set = 0, binding = 0, std430) writeonly buffer Dst { uint dst[]; };
layout(push_constant) uniform Push { uint words; uint period; uint data[30]; } pc;

void main() {
    uint w = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WG + gl_LocalInvocationID.x;
    if (w < pc.words) dst[w] = pc.data[w % pc.period];
}
