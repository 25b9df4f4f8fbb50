#version 450
#extension GL_GOOGLE_include_directive : require
// Matrix-vector products for the matmuls whose rows of A are few (decode:
// M = 1), and the QuantMatMul shapes and dtypes the quant_matvec_* kernels
// do not take (backends/vulkan/vk_linalg.c, vk_quant_matmul.c):
//   Y[b, m, n] = alpha * sum_k A(b, m, k) B(b, k, n) + beta * C(m, n)
// with A(b, m, k) = A[a_off(b) + m a_rs + k a_cs], B likewise, C(m, n) =
// C[m c_rs + n c_cs] (strides 0 broadcast), Y contiguous [batch, M, N].
// Workgroup (x, m, b) makes outputs of row m of batch b. Two shapes of
// work, chosen by the recorder from B's layout so that a subgroup always
// reads consecutive addresses of B:
//   MODE 0 (B's k contiguous: Gemm transB, QuantMatMul's W [N, K]): ROWS
//     outputs per workgroup; invocations stride k, each A element read once
//     for the ROWS dot products; the ROWS sums across the workgroup share
//     one round of barriers (subgroupAdd in the _sg build, else a tree).
//   MODE 1 (B's n contiguous: MatMul's B [K, N]): NX = 32 columns per
//     workgroup, WG / NX slices of k; a shared-memory tree sums the slices.
// B is a plain tensor of dtype B_DT (f32, f16, bf16, f64: one element read
// per word access), or, for QuantMatMul, W [N, K] in the GPU packed layout
// (engine/quant/pack_gpu.c) when B_DT is Q_E0M4 (32), Q_INT4 (33) or
// Q_INT8 (34): element (n, k) decoded on its own, as quant_dequant*.comp do
// (exactly, f32), any K and group (a short last group too). That is the general path, not the fast
// one: the quant_matvec_* kernels stream 16-byte vectors of codes.
#include "wg_reduce.glsl"
#include "real.glsl"
#include "quant_common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;   // power of two, >= 32
layout(constant_id = 1) const uint MODE = 0;
layout(constant_id = 2) const uint ROWS = 4;  // MODE 0: outputs per workgroup
layout(constant_id = 3) const uint A_DT = 1;
layout(constant_id = 4) const uint B_DT = 1;
layout(constant_id = 5) const uint Y_DT = 1;
layout(constant_id = 6) const uint C_DT = 1;
layout(constant_id = 7) const uint HAS_C = 0;

const uint NX = 32u;  // MODE 1: columns per workgroup
const uint Q_E0M4 = 32u, Q_INT4 = 33u, Q_INT8 = 34u;

VKL_TENSOR_IN(A, 0)
VKL_REAL_IN(A)
VKL_TENSOR_IN(B, 1)
VKL_REAL_IN(B)
VKL_TENSOR_IN(P, 2) // quantized B: one u32 of block parameters per (row, group)
VKL_TENSOR_IN(C, 3)
VKL_REAL_IN(C)
VKL_TENSOR_STORE(Y, 4)

#include "matmul_common.glsl"


// element (n, k) of a quantized W [N, K]: ceil(K / group) groups a row, the
// last one short when group does not divide K (its tail, past K, never read)
float q_elem(uint n, uint k) {
    const uint p = P[n * ((pc.K + pc.q_group - 1u) / pc.q_group) + k / pc.q_group];
    if (B_DT == Q_INT8) {
        const uint byte = n * pc.q_row_bytes + k;
        const float q = float(bitfieldExtract(int(B[byte / 4u]), int(8u * (byte % 4u)), 8));
        return q * uintBitsToFloat(p);
    }
    const uint u = B[(n * pc.q_row_bytes) / 4u + k / 8u], e = k % 8u;
    const uint q = (u >> (4u * (e >> 1) + 16u * (e & 1u))) & 0xFu;
    const float d = vkl_half_exact(p & 0xFFFFu), b = unpackHalf2x16(p >> 16).x;
    if (B_DT == Q_INT4) return (float(q) - b) * d; // b: the zero code
    const uint ex = (p >> 16) & 0xFC00u;           // E0M4: the group's sign and exponent
    return (unpackHalf2x16(ex | (q << 6)).x - b) * d;
}

real b_elem(uint off, uint k, uint n) {
    if (B_DT >= Q_E0M4) return real(q_elem(n, k));
    return B_r(B_DT, off + k * pc.b_rs + n * pc.b_cs);
}

void finish(uint yb, uint m, uint n, real acc) {
    real v = real(pc.alpha) * acc;
    if (HAS_C != 0u) v += real(pc.beta) * C_r(C_DT, m * pc.c_rs + n * pc.c_cs);
    Y_put(Y_DT, yb + m * pc.N + n, vkl_real_bits(Y_DT, v));
}

shared real cols_part[MODE == 1u ? WG : 1u];
shared real rows_part[MODE == 0u ? ROWS * WG : 1u];

void main() {
    const uint tid = gl_LocalInvocationIndex, m = gl_WorkGroupID.y, bi = gl_WorkGroupID.z;
    uint a_off, b_off;
    mm_batch_offsets(bi, a_off, b_off);
    a_off += m * pc.a_rs;
    const uint yb = bi * pc.M * pc.N;

    if (MODE == 0u) {
        const uint n0 = gl_WorkGroupID.x * ROWS;
        real acc[ROWS];
        for (uint r = 0u; r < ROWS; r++) acc[r] = real(0.0);
        for (uint k = tid; k < pc.K; k += WG) {
            const real a = A_r(A_DT, a_off + k * pc.a_cs);
            for (uint r = 0u; r < ROWS; r++) {
                const uint n = min(n0 + r, pc.N - 1u); // rows past N reread row N - 1, never written
                acc[r] += a * b_elem(b_off, k, n);
            }
        }
        // all ROWS sums in one round of barriers
#ifdef VKL_SUBGROUP
        for (uint r = 0u; r < ROWS; r++) {
            const real v = subgroupAdd(acc[r]);
            if (subgroupElect()) rows_part[r * WG + gl_SubgroupID] = v;
        }
        barrier();
        if (tid < ROWS && n0 + tid < pc.N) {
            real v = real(0.0);
            for (uint i = 0u; i < gl_NumSubgroups; i++) v += rows_part[tid * WG + i];
            finish(yb, m, n0 + tid, v);
        }
#else
        for (uint r = 0u; r < ROWS; r++) rows_part[r * WG + tid] = acc[r];
        barrier();
        for (uint h = WG / 2u; h > 0u; h >>= 1) {
            if (tid < h)
                for (uint r = 0u; r < ROWS; r++) rows_part[r * WG + tid] += rows_part[r * WG + tid + h];
            barrier();
        }
        if (tid < ROWS && n0 + tid < pc.N) finish(yb, m, n0 + tid, rows_part[tid * WG]);
#endif
    } else {
        const uint tx = tid % NX, ty = tid / NX, KY = WG / NX;
        const uint n = gl_WorkGroupID.x * NX + tx, nn = min(n, pc.N - 1u);
        real acc = real(0.0);
        for (uint k = ty; k < pc.K; k += KY) acc += A_r(A_DT, a_off + k * pc.a_cs) * b_elem(b_off, k, nn);
        cols_part[tid] = acc;
        barrier();
        for (uint h = KY / 2u; h > 0u; h >>= 1) {
            if (ty < h) cols_part[tid] += cols_part[tid + h * NX];
            barrier();
        }
        if (ty == 0u && n < pc.N) finish(yb, m, n, cols_part[tx]);
    }
}
