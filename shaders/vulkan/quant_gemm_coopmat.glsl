// The cooperative-matrix GEMM (the _cm builds of quant_gemm_*.comp, for
// NVIDIA's VK_NV_cooperative_matrix: tensor cores): the same product,
// decode and exactness as quant_gemm.glsl, its products on the device's
// fp16 x fp16 -> f32 matrix units.
//
// A workgroup of SG_M x SG_N subgroups computes a BM x BN tile of Y; each
// subgroup owns FM x FN fragments of CM_M x CM_N (CM_M, CM_N, CM_K: a shape
// from vkGetPhysicalDeviceCooperativeMatrixPropertiesNV, chosen by
// vk_device.c). Per K step of BK = 32 codes the step's A slice (as fp16) and
// W slice (decoded once to the exact centered codes w1 - b, q - z or q, in
// fp16) go to shared memory as [m][k] and [n][k], and the fragments
// accumulate their products in f32 from zero over one group. At the group's
// end each subgroup stores its fragments to shared memory and every
// invocation scales its share of the tile by the group's d (per column n)
// into f32 registers: d stays out of the fp16 operands, so W's values are
// the format's, exactly, as in the tiled kernel. Single-buffered: the lead
// tunes tile shape and buffering on the device (docs/vulkan.md).
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128;   // SG_M * SG_N subgroups of the device's size
layout(constant_id = 1) const uint SG_M = 2;   // subgroups along m
layout(constant_id = 2) const uint SG_N = 2;   // subgroups along n
layout(constant_id = 3) const uint FM = 2;     // fragments per subgroup along m
layout(constant_id = 4) const uint FN = 2;     // fragments per subgroup along n
layout(constant_id = 5) const uint CM_M = 16;  // one fragment: CM_M x CM_K times CM_K x CM_N
layout(constant_id = 6) const uint CM_N = 16;
layout(constant_id = 7) const uint CM_K = 16;

const uint BK = 32u;
const uint BM = SG_M * FM * CM_M, BN = SG_N * FN * CM_N;
const uint SK = BK + 8u;  // shared row stride in halves: 16-byte aligned rows, staggered banks
const uint WORDS = BK / QG_CODES;
const uint PER = BM * BN / WG;  // outputs each invocation keeps in registers

#include "quant_gemm_io.glsl"

shared float16_t As[BM * SK];  // [m][k]
shared float16_t Ws[BN * SK];  // [n][k]: W^T, read as column-major B
shared float Cs[BM * BN];      // a group's fragments, [m][n]
shared float ds[BN];

void main() {
    const uint tid = gl_LocalInvocationIndex;
    const uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
    const uint sg = gl_SubgroupID, sm = sg / SG_N, sn = sg % SG_N;
    const uint words = pc.K / QG_CODES, groups = pc.K / pc.group;
    fcoopmatNV<32, gl_ScopeSubgroup, CM_M, CM_N> c[FM][FN];
    for (uint i = 0u; i < FM; i++)
        for (uint j = 0u; j < FN; j++) c[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, CM_M, CM_N>(0.0);
    float acc[PER];
    for (uint e = 0u; e < PER; e++) acc[e] = 0.0;

    for (uint k0 = 0u; k0 < pc.K; k0 += BK) {
        for (uint e = tid; e < BM * BK; e += WG) {
            const uint i = e / BK, kk = e % BK, m = m0 + i;
            As[i * SK + kk] = float16_t(m < pc.M ? a[m * pc.K + k0 + kk] : 0.0);
        }
        for (uint e = tid; e < BN * WORDS; e += WG) {
            const uint r = e / WORDS, j = e % WORDS;
            const uint n = min(n0 + r, pc.N - 1u);  // rows past N reread row N - 1, never written
            const uint p = params[n * groups + k0 / pc.group];
            float16_t v[QG_CODES];
            qg_decode(qs[n * words + k0 / QG_CODES + j], p, v);
            for (uint q = 0u; q < QG_CODES; q++) Ws[r * SK + j * QG_CODES + q] = v[q];
            if (j == 0u) ds[r] = qg_scale(p);
        }
        barrier();
        for (uint kk = 0u; kk < BK; kk += CM_K) {
            fcoopmatNV<16, gl_ScopeSubgroup, CM_M, CM_K> fa[FM];
            fcoopmatNV<16, gl_ScopeSubgroup, CM_K, CM_N> fb[FN];
            for (uint i = 0u; i < FM; i++)
                coopMatLoadNV(fa[i], As, ((sm * FM + i) * CM_M) * SK + kk, SK, false);
            for (uint j = 0u; j < FN; j++)
                coopMatLoadNV(fb[j], Ws, ((sn * FN + j) * CM_N) * SK + kk, SK, true);
            for (uint i = 0u; i < FM; i++)
                for (uint j = 0u; j < FN; j++) c[i][j] = coopMatMulAddNV(fa[i], fb[j], c[i][j]);
        }
        if ((k0 + BK) % pc.group == 0u) {  // the group ends: scale its sums once
            for (uint i = 0u; i < FM; i++)
                for (uint j = 0u; j < FN; j++) {
                    coopMatStoreNV(c[i][j], Cs, ((sm * FM + i) * CM_M) * BN + (sn * FN + j) * CM_N, BN, false);
                    c[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, CM_M, CM_N>(0.0);
                }
            barrier();
            for (uint e = 0u; e < PER; e++) {
                const uint x = e * WG + tid;
                acc[e] += ds[x % BN] * Cs[x];
            }
        }
        barrier();  // As, Ws, Cs and ds are rewritten by the next step
    }

    for (uint e = 0u; e < PER; e++) {
        const uint x = e * WG + tid, m = m0 + x / BN, n = n0 + x % BN;
        if (m < pc.M && n < pc.N) y[m * pc.N + n] = acc[e] + (pc.has_bias != 0u ? bias[n] : 0.0);
    }
}
