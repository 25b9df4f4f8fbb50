#version 450
// KvAppend's state copied to its output word for word, for a caller that
// gives the output its own memory instead of the state's (kv_append.comp
// then writes the new rows there).
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;
layout(set = 0, binding = 0, std430) readonly buffer Src_t { uint src[]; };
layout(set = 0, binding = 1, std430) writeonly buffer Dst_t { uint dst[]; };
layout(push_constant) uniform Push {
    uint words;
    uint groups_x;
} pc;

void main() {
    const uint i = (gl_WorkGroupID.y * pc.groups_x + gl_WorkGroupID.x) * WG + gl_LocalInvocationID.x;
    if (i < pc.words) dst[i] = src[i];
}
