#version 450
#extension GL_GOOGLE_include_directive : require
// Integer MatMul (i32, u32, i64; backends/vulkan/vk_linalg.c): one
// invocation per output, a plain loop over k, products and sums wrapping
// in 32 bits as the ref kernel's wrap to the output type. i64 follows
// tensor.glsl (the low word computed, the high word its sign): exact while
// the results fit int32. Same operands and push constants as matvec.comp.
// Integer products are not on any model's hot path; no tiling.
#include "real.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint DT = 6; // A, B and Y

VKL_TENSOR_IN(A, 0)
VKL_TENSOR_IN(B, 1)
VKL_TENSOR_STORE(Y, 2)

#include "matmul_common.glsl"

void main() {
    const uint id = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WG + gl_LocalInvocationIndex;
    const uint mn = pc.M * pc.N;
    if (id >= pc.batches * mn) return;
    const uint n = id % pc.N, m = (id / pc.N) % pc.M;
    uint a_off, b_off;
    mm_batch_offsets(id / mn, a_off, b_off);
    a_off += m * pc.a_rs;
    b_off += n * pc.b_cs;
    uint acc = 0u;
    for (uint k = 0u; k < pc.K; k++) acc += uint(A_i(DT, a_off + k * pc.a_cs)) * uint(B_i(DT, b_off + k * pc.b_rs));
    Y_put(DT, id, uvec2(acc, vkl_hi_word(DT, acc)));
}
