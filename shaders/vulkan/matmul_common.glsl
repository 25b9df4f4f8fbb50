// The operands of matvec.comp, matmul.comp and matmul_int.comp as push
// constants (backends/vulkan/vk_linalg.c fills them, vkl_vk_mm):
//   Y[b, m, n] = alpha * sum_k A(b, m, k) B(b, k, n) + beta * C(m, n)
//   A(b, m, k) = A[a_base + a_off(b) + m a_rs + k a_cs], B(b, k, n) = B[b_off(b) + k b_rs + n b_cs],
//   C(m, n) = C[m c_rs + n c_cs] (a stride 0 broadcasts), Y contiguous [batches, M, N];
// a_off(b) and b_off(b) from b's index over batch_rank (<= 4) merged batch
// dims, outermost first, with each operand's strides (0 where it broadcasts).
#ifndef VKL_MATMUL_COMMON_GLSL
#define VKL_MATMUL_COMMON_GLSL

layout(push_constant) uniform Push {
    uint M, N, K;
    uint a_rs, a_cs, b_rs, b_cs;
    float alpha, beta;
    uint c_rs, c_cs;
    uint q_row_bytes, q_group; // matvec.comp's quantized B: bytes per row of codes, group
    uint batches, batch_rank;
    uint bdims[4], a_bs[4], b_bs[4];
    uint a_base; // A's first element: a row piece of B reads A's matching columns (vk_linalg.c)
} pc;

void mm_batch_offsets(uint b, out uint a_off, out uint b_off) {
    a_off = pc.a_base;
    b_off = 0u;
    for (int d = int(pc.batch_rank) - 1; d >= 0; d--) {
        const uint i = b % pc.bdims[d];
        b /= pc.bdims[d];
        a_off += i * pc.a_bs[d];
        b_off += i * pc.b_bs[d];
    }
}

#endif
