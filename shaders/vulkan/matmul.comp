#version 450
#extension GL_GOOGLE_include_directive : require
// Tiled matrix product for M > 1 (prefill; backends/vulkan/vk_linalg.c):
//   Y[b, m, n] = alpha * sum_k A(b, m, k) B(b, k, n) + beta * C(m, n)
// with the strided operands of matvec.comp (same push constants), float
// dtypes read through tensor.glsl, f32 arithmetic (f64 in the _f64 build).
// Workgroup (x, y, b): a BM x BN tile of Y; 16 x 16 invocations, each a
// TM x TN block of outputs spaced 16 apart (so a subgroup's stores and
// shared reads are consecutive). K walks in steps of BK: the A and B tiles
// are staged in shared memory with coalesced loads (consecutive
// invocations take consecutive k of A, consecutive n of B; out-of-range
// elements are zeros), then each invocation does TM * TN multiply-adds per
// k from registers. No vector loads, no double buffering, no cooperative
// matrix yet: this is the portable baseline.
#include "real.glsl"

layout(local_size_x = 16, local_size_y = 16) in;
layout(constant_id = 0) const uint A_DT = 1;
layout(constant_id = 1) const uint B_DT = 1;
layout(constant_id = 2) const uint Y_DT = 1;
layout(constant_id = 3) const uint C_DT = 1;
layout(constant_id = 4) const uint HAS_C = 0;

const uint TM = 4u, TN = 4u, BM = 16u * TM, BN = 16u * TN, BK = 16u, WG = 256u;

VKL_TENSOR_IN(A, 0)
VKL_REAL_IN(A)
VKL_TENSOR_IN(B, 1)
VKL_REAL_IN(B)
VKL_TENSOR_IN(P, 2) // unused here (matvec.comp's quantized B)
VKL_TENSOR_IN(C, 3)
VKL_REAL_IN(C)
VKL_TENSOR_STORE(Y, 4)

#include "matmul_common.glsl"

shared real As[BK][BM + 1u]; // [k][m]; the pad keeps the transposing stores off one bank
shared real Bs[BK][BN];      // [k][n]

void main() {
    const uint tid = gl_LocalInvocationIndex, tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
    const uint bi = gl_WorkGroupID.z, m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
    uint a_off, b_off;
    mm_batch_offsets(bi, a_off, b_off);
    real acc[TM][TN];
    for (uint t = 0u; t < TM; t++)
        for (uint u = 0u; u < TN; u++) acc[t][u] = real(0.0);

    for (uint k0 = 0u; k0 < pc.K; k0 += BK) {
        for (uint e = tid; e < BM * BK; e += WG) {
            const uint i = e / BK, kk = e % BK, m = m0 + i, k = k0 + kk;
            As[kk][i] = m < pc.M && k < pc.K ? A_r(A_DT, a_off + m * pc.a_rs + k * pc.a_cs) : real(0.0);
        }
        for (uint e = tid; e < BK * BN; e += WG) {
            const uint kk = e / BN, j = e % BN, n = n0 + j, k = k0 + kk;
            Bs[kk][j] = n < pc.N && k < pc.K ? B_r(B_DT, b_off + k * pc.b_rs + n * pc.b_cs) : real(0.0);
        }
        barrier();
        for (uint kk = 0u; kk < BK; kk++) {
            real a[TM], b[TN];
            for (uint t = 0u; t < TM; t++) a[t] = As[kk][ty + 16u * t];
            for (uint u = 0u; u < TN; u++) b[u] = Bs[kk][tx + 16u * u];
            for (uint t = 0u; t < TM; t++)
                for (uint u = 0u; u < TN; u++) acc[t][u] += a[t] * b[u];
        }
        barrier();
    }

    const uint yb = bi * pc.M * pc.N;
    for (uint t = 0u; t < TM; t++) {
        const uint m = m0 + ty + 16u * t;
        if (m >= pc.M) continue;
        for (uint u = 0u; u < TN; u++) {
            const uint n = n0 + tx + 16u * u;
            if (n >= pc.N) continue;
            real v = real(pc.alpha) * acc[t][u];
            if (HAS_C != 0u) v += real(pc.beta) * C_r(C_DT, m * pc.c_rs + n * pc.c_cs);
            Y_put(Y_DT, yb + m * pc.N + n, vkl_real_bits(Y_DT, v));
        }
    }
}
