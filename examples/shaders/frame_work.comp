#version 450
// The example app's own per-frame GPU work (examples/shared_device.c): every
// element runs an integer recurrence the host can check exactly.
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Out { uint v[]; } out_buf;
layout(push_constant) uniform Frame { uint frame; uint steps; uint count; } pc;

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= pc.count) return;
    uint x = i ^ (pc.frame * 2654435761u);
    for (uint k = 0u; k < pc.steps; k++) x = x * 1664525u + 1013904223u;
    out_buf.v[i] = x;
}
