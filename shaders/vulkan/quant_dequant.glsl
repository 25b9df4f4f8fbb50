// Shared by quant_dequant_{e0m4,int4}.comp: writes the exact f32 value of
// every element of a 4-bit weight [rows, cols] from the GPU packed layout,
// through the same decode macros the matvecs use (quant_common.glsl). It
// exists for the bit-exactness test against engine/quant's reference
// dequantization (tests/vulkan/test_vk_quant.c). The including file defines
//   void dq_word(uint u, uint param, out float v[8])
// the 8 values of one packed u32 word under its block header.

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;

layout(set = 0, binding = 0, std430) readonly buffer BufQ { uint qs[]; };      // [rows, cols / 8]
layout(set = 0, binding = 1, std430) readonly buffer BufP { uint params[]; };  // [rows, cols / group]
layout(set = 0, binding = 2, std430) writeonly buffer BufY { float y[]; };     // [rows, cols]

layout(push_constant) uniform Push { uint rows, cols, group; } pc;

void main() {
    const uint words = pc.cols / 8u; // per row: the row stride, cols / 2 bytes
    const uint total = pc.rows * words;
    for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * WG) {
        const uint r = i / words, k = 8u * (i % words);
        float v[8];
        dq_word(qs[i], params[r * (pc.cols / pc.group) + k / pc.group], v);
        for (uint j = 0u; j < 8u; j++) y[r * pc.cols + k + j] = v[j];
    }
}
