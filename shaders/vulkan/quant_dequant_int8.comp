#version 450
#extension GL_GOOGLE_include_directive : require
// int8 dequantization on the GPU: w = float(q) * d, one f32 rounding, as
// engine/quant rounds it (a result below the f32 normal range may be flushed
// by the device; engine/quant keeps it). One invocation per element: the
// int8 layout pads rows to 16 bytes and any group size is allowed.

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;

layout(set = 0, binding = 0, std430) readonly buffer BufQ { uint qs[]; };      // rows of row_stride bytes
layout(set = 0, binding = 1, std430) readonly buffer BufP { uint params[]; };  // f32 d per (row, group)
layout(set = 0, binding = 2, std430) writeonly buffer BufY { float y[]; };     // [rows, cols]

layout(push_constant) uniform Push { uint rows, cols, group, row_stride; } pc;

void main() {
    const uint total = pc.rows * pc.cols;
    for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * WG) {
        const uint r = i / pc.cols, k = i % pc.cols, byte = r * pc.row_stride + k;
        const int q = bitfieldExtract(int(qs[byte / 4u]), int(8u * (byte % 4u)), 8);
        const float d = uintBitsToFloat(params[r * (pc.cols / pc.group) + k / pc.group]);
        precise float w = float(q) * d;
        y[i] = w;
    }
}
