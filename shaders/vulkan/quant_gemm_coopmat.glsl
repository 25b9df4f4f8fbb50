// The cooperative-matrix GEMM (the _cm builds of quant_gemm_*.comp, for
// NVIDIA's VK_NV_cooperative_matrix: tensor cores): the same product as
// quant_gemm.glsl, its products on the device's fp16 x fp16 -> f32 matrix
// units.
//
// A workgroup of SG_M x SG_N subgroups computes a BM x BN tile of Y; each
// subgroup owns FM x FN fragments of CM_M x CM_N (CM_M, CM_N, CM_K: a shape
// from vkGetPhysicalDeviceCooperativeMatrixPropertiesNV, chosen by
// vk_device.c). Per K step of BK = 32 codes the step's A slice (as fp16) and
// W slice (each word decoded once, scaled by its group's d and rounded to
// fp16 once) go to shared memory as [m][k] and [n][k], loaded into
// registers one step ahead (below); the fragments
// accumulate in f32 over the whole of K and are stored once, through a
// per-subgroup staging fragment, with the bounds and the bias. Folding d
// into W's operand keeps the matrix units busy: scaling each group's sums
// apart (the tiled kernel's way, exact) stored every fragment to shared
// memory once a group, which held an H100 to 12-15 TFLOP/s. The operands
// are then A and d * w rounded to fp16 once each (relative 2^-11), the
// accumulation f32: test_vk_quant bounds the result at 5e-3 relative L2.
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
const uint SUBGROUPS = SG_M * SG_N;

#include "quant_gemm_io.glsl"

shared float16_t As[BM * SK];  // [m][k]
shared float16_t Ws[BN * SK];  // [n][k]: (d w)^T, read as column-major B
shared float Cs[SUBGROUPS * CM_M * CM_N];  // one fragment per subgroup on its way out

// Each invocation's share of one K step: A_PER values of A, W_PER words
// of W with their groups' parameters (BM * BK and BN * WORDS are multiples
// of WG for every tile vk_gemm_tuning.c picks: it checks).
const uint A_PER = BM * BK / WG, W_PER = BN * WORDS / WG;

void load_step(uint k0, uint m0, uint n0, uint tid, uint words, uint groups, out float ra[A_PER], out uint rq[W_PER],
               out uint rp[W_PER]) {
    for (uint t = 0u; t < A_PER; t++) {
        const uint e = t * WG + tid, m = m0 + e / BK;
        ra[t] = m < pc.M ? a[m * pc.K + k0 + e % BK] : 0.0;
    }
    for (uint t = 0u; t < W_PER; t++) {
        const uint e = t * WG + tid, r = e / WORDS, j = e % WORDS;
        const uint n = min(n0 + r, pc.N - 1u);  // rows past N reread row N - 1, never written
        const uint k = k0 + j * QG_CODES;
        rq[t] = qs[n * words + k / QG_CODES];
        rp[t] = params[n * groups + k / pc.group];
    }
}

void main() {
    const uint tid = gl_LocalInvocationIndex;
    const uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
    const uint sg = gl_SubgroupID, sm = sg / SG_N, sn = sg % SG_N;
    const uint words = pc.K / QG_CODES, groups = pc.K / pc.group;
    fcoopmatNV<32, gl_ScopeSubgroup, CM_M, CM_N> c[FM][FN];
    for (uint i = 0u; i < FM; i++)
        for (uint j = 0u; j < FN; j++) c[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, CM_M, CM_N>(0.0);

    // Software pipelined: the next step's A values and W words are loaded
    // into registers while this step's products run, so a workgroup keeps
    // global loads in flight instead of waiting out their latency at every
    // step (an H100 ran 2-4 workgroups of this size per SM: too few to hide
    // it by occupancy alone).
    float ra[A_PER];
    uint rq[W_PER], rp[W_PER];
    load_step(0u, m0, n0, tid, words, groups, ra, rq, rp);
    for (uint k0 = 0u; k0 < pc.K; k0 += BK) {
        for (uint t = 0u; t < A_PER; t++) {
            const uint e = t * WG + tid;
            As[(e / BK) * SK + e % BK] = float16_t(ra[t]);
        }
        for (uint t = 0u; t < W_PER; t++) {
            const uint e = t * WG + tid, r = e / WORDS, j = e % WORDS;
            const float d = qg_scale(rp[t]);
            float16_t v[QG_CODES];
            qg_decode(rq[t], rp[t], v);
            for (uint q = 0u; q < QG_CODES; q++) Ws[r * SK + j * QG_CODES + q] = float16_t(d * float(v[q]));
        }
        barrier();
        if (k0 + BK < pc.K) load_step(k0 + BK, m0, n0, tid, words, groups, ra, rq, rp);
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
        barrier();  // As and Ws are rewritten by the next step
    }

    // Out, one fragment at a time through this subgroup's staging area: no
    // other subgroup touches it, so a subgroup barrier orders it.
    const uint lane = gl_SubgroupInvocationID, lanes = gl_SubgroupSize, base = sg * CM_M * CM_N;
    for (uint i = 0u; i < FM; i++)
        for (uint j = 0u; j < FN; j++) {
            coopMatStoreNV(c[i][j], Cs, base, CM_N, false);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            const uint fm = m0 + (sm * FM + i) * CM_M, fn = n0 + (sn * FN + j) * CM_N;
            for (uint x = lane; x < CM_M * CM_N; x += lanes) {
                const uint m = fm + x / CM_N, n = fn + x % CM_N;
                if (m < pc.M && n < pc.N) y[m * pc.N + n] = Cs[base + x] + (pc.has_bias != 0u ? bias[n] : 0.0);
            }
            subgroupBarrier();  // read before the next fragment overwrites it
        }
}
