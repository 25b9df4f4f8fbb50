// The cooperative-matrix GEMM (the _cm builds of quant_gemm_*.comp, for
// NVIDIA's VK_NV_cooperative_matrix: tensor cores): the same product as
// quant_gemm.glsl, its products on the device's fp16 x fp16 -> f32 matrix
// units. The including file defines QG_CODES (codes per u32 word of W) and
//   void qg_decode_h2(uint u, uint param, out uint h[QG_CODES / 2])
// word u's codes as packed fp16 pairs of consecutive elements (2s, 2s + 1),
// each the exact centered code times the group's scale d rounded to fp16
// once.
//
// A workgroup of SG_M x SG_N subgroups computes a BM x BN tile of Y; each
// subgroup owns FM x FN fragments of CM_M x CM_N (CM_M, CM_N, CM_K: a shape
// from vkGetPhysicalDeviceCooperativeMatrixPropertiesNV, chosen by
// vk_gemm_tuning.c, CM_K a multiple of 8). K walks in steps of BK codes
// (32, 64 or 128; K % BK == 0: vk_quant_matmul.c). A step's A slice (as
// fp16) and W slice (each code decoded once, scaled by its group's d and
// rounded to fp16 once) go to shared memory as [m][k] and [n][k] rows of
// packed fp16, written and read as uvec4s (8 halves), into one of two
// buffers: while the matrix units work on step s from one, the invocations
// hold step s + 1's global loads in registers and then store them into the
// other, so each step costs one barrier and the loads' latency overlaps the
// products. The fragments accumulate in f32 over the whole of K (or the
// workgroup's slice of it, below) and are stored once, through a
// per-subgroup staging fragment, with the bounds and the bias. (The
// staging fragments laid over the step buffers, which the loop's last
// barrier frees, would save their shared memory; on an H200 that ran the 1B
// prefill 2% slower at the default tile, and the 128 x 128 tile of 16
// subgroups it lets fit was 10% slower still: 2026-11-27.)
//
// Split K (SPLIT, vk_quant_matmul.c's choice where the tiles alone leave
// the device short of workgroups): workgroup z sums only its slice of the
// K steps and writes its partial tile, without the bias, to plane z of y
// (the node's scratch); quant_gemm_split_sum.comp adds the planes in order
// and the bias. A specialization constant, so that the unsplit pipeline is
// the kernel it was: with the slice's arithmetic in every pipeline, an
// H200's unsplit 1B prefill took 2% longer.
//
// Loads: A in units of 8 consecutive floats of a row (two 16-byte loads,
// one uvec4 store of 8 halves); W in units of 8 consecutive codes too (one
// word of a 4-bit format, two of int8, inside one group since group % 32
// == 0), decoded to 4 packed fp16 pairs in fp16 arithmetic and stored as
// one uvec4. Units of 8 on both sides spread a step's loads and decodes
// evenly over the invocations: the step ends at a barrier, so the slowest
// invocation sets its pace (a unit of a whole uvec4 of W left half the
// invocations of the 64 x 64 tile decoding 32 codes while the others
// waited). Folding d into W's operand keeps the matrix units busy: scaling
// each group's sums apart (the tiled kernel's way, exact) stored every
// fragment to shared memory once a group, which held an H100 to 12-15
// TFLOP/s. The operands are then A and d * w rounded to fp16 once each
// (relative 2^-11), the accumulation f32: test_vk_quant bounds the result
// at 5e-3 relative L2.
//
// VKL_COOPMAT_EMULATED (the _cmemu builds, for tests only): the same body
// with the fragments' loads, products and stores done by each subgroup's
// invocations in plain f32 arithmetic on the same shared memory, offsets
// and strides (coopMatLoadNV's meaning: element (r, k) of A's fragment at
// half k of row r, rows SK uvec4s apart; B's column-major), so that a
// device without cooperative matrices (lavapipe) checks everything else
// this kernel does: loads, decode, double buffering, epilogue.
//
// The fragment loops are unrolled (CM_UNROLL: [[unroll]]), so each
// fragment is a register of its own, never an array element indexed at run
// time; the emulated build keeps them loops (unrolled, its per-element
// products made lavapipe's compile and run outlast the test's limit).
#ifndef VKL_COOPMAT_EMULATED
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#define CM_UNROLL [[unroll]]
#else
#define CM_UNROLL
#endif
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128;   // SG_M * SG_N subgroups of the device's size
layout(constant_id = 1) const uint SG_M = 2;   // subgroups along m
layout(constant_id = 2) const uint SG_N = 2;   // subgroups along n
layout(constant_id = 3) const uint FM = 2;     // fragments per subgroup along m
layout(constant_id = 4) const uint FN = 1;     // fragments per subgroup along n
layout(constant_id = 5) const uint CM_M = 16;  // one fragment: CM_M x CM_K times CM_K x CM_N
layout(constant_id = 6) const uint CM_N = 16;
layout(constant_id = 7) const uint CM_K = 16;
layout(constant_id = 8) const uint BK = 64;    // codes per K step: 32, 64 or 128
layout(constant_id = 9) const bool SPLIT = false;  // K in pc.splits slices (z), y a plane of partial sums each

const uint BM = SG_M * FM * CM_M, BN = SG_N * FN * CM_N;
const uint SK = BK / 8u + 1u;  // shared row stride in uvec4s: the step's row and one uvec4 staggering the banks
const uint SUBGROUPS = SG_M * SG_N;
const uint A_ROW = BK / 8u;              // units of 8 floats in a row's step
const uint W_ROW = BK / 8u;              // units of 8 codes in a row's step
const uint WPU = 8u / QG_CODES;          // words of W in a unit
const uint A_UNITS = BM * A_ROW, W_UNITS = BN * W_ROW;
// Each invocation's share of a step: A_PER units of A, W_PER of W (rounded
// up: invocations past the end load and store nothing). A_REGS, W_REGS:
// the vec4s and words holding them. (Arrays passed to functions are sized
// by these names only: glslang matches spec-constant array sizes by
// expression, and a repeated expression such as 2u * A_PER may not match.)
const uint A_PER = (A_UNITS + WG - 1u) / WG, W_PER = (W_UNITS + WG - 1u) / WG;
const uint A_REGS = 2u * A_PER, W_REGS = W_PER * WPU;
// The store: a subgroup's invocations (WG is SUBGROUPS of the device's
// fixed size) and a fragment's elements each of them stores.
const uint SG_LANES = WG / SUBGROUPS;
const uint OUT_PER = (CM_M * CM_N + SG_LANES - 1u) / SG_LANES;

#include "quant_gemm_io.glsl"

shared uvec4 As[2u * BM * SK];  // [buffer][m][k]: 8 halves per uvec4
shared uvec4 Ws[2u * BN * SK];  // [buffer][n][k]: (d w)^T, read as column-major B
shared float Cs[SUBGROUPS * CM_M * CM_N];  // one fragment per subgroup on its way out

#ifdef VKL_COOPMAT_EMULATED
const uint LANES = SG_LANES;
const uint EL = OUT_PER;  // elements of one fragment per invocation

float half_at(uvec4 v, uint h) { return unpackHalf2x16(v[h / 2u] >> (16u * (h % 2u))).x; }

// c += A's CM_M x CM_K fragment at As[a_at] times B's CM_K x CM_N one at
// Ws[b_at]: this invocation's elements x = lane + q LANES, row-major.
void fragment_mul_add(inout float c[EL], uint a_at, uint b_at, uint lane) {
    for (uint q = 0u; q < EL; q++) {
        const uint x = lane + q * LANES, r = x / CM_N, n = x % CM_N;
        if (x < CM_M * CM_N)
            for (uint k = 0u; k < CM_K; k++)
                c[q] += half_at(As[a_at + r * SK + k / 8u], k % 8u) * half_at(Ws[b_at + n * SK + k / 8u], k % 8u);
    }
}

// coopMatStoreNV(c, Cs, base, CM_N, false): row-major, rows CM_N apart.
void fragment_store(float c[EL], uint base, uint lane) {
    for (uint q = 0u; q < EL; q++) {
        const uint x = lane + q * LANES;
        if (x < CM_M * CM_N) Cs[base + x] = c[q];
    }
}
#endif

// A fused Add's R of the fragment at (fm, fn) (RESIDUAL), this
// invocation's elements x = lane + q SG_LANES (row-major); 0 where there
// is none (a split leaves it to its sum) or the element is outside Y.
void res_load(uint fm, uint fn, uint lane, out float r[OUT_PER]) {
    CM_UNROLL for (uint q = 0u; q < OUT_PER; q++) {
        const uint x = lane + q * SG_LANES, m = fm + x / CM_N, n = fn + x % CM_N;
        r[q] = !SPLIT && RESIDUAL && x < CM_M * CM_N && m < pc.M && n < pc.N ? res[m * pc.N + n] : 0.0;
    }
}

// Step k0's share of this invocation from global memory into registers:
// ra[2t], ra[2t + 1] the 8 floats of A's unit t (zeros past M), rq[t WPU
// ..] the words of W's unit t and rp[t] its group's parameters.
void load_step(uint k0, uint m0, uint n0, uint tid, uint groups, out vec4 ra[A_REGS], out uint rq[W_REGS],
               out uint rp[W_PER]) {
    [[unroll]] for (uint t = 0u; t < A_PER; t++) {
        const uint e = t * WG + tid, m = m0 + e / A_ROW;
        ra[2u * t] = ra[2u * t + 1u] = vec4(0.0);
        if (e < A_UNITS && m < pc.M) {
            const uint v = m * (pc.K / 4u) + k0 / 4u + 2u * (e % A_ROW);  // in vec4s
            ra[2u * t] = a[v];
            ra[2u * t + 1u] = a[v + 1u];
        }
    }
    [[unroll]] for (uint t = 0u; t < W_PER; t++) {
        const uint e = t * WG + tid;
        const uint n = min(n0 + e / W_ROW, pc.N - 1u);  // rows past N reread row N - 1, never written
        const uint k = k0 + (e % W_ROW) * 8u;
        [[unroll]] for (uint w = 0u; w < WPU; w++) rq[t * WPU + w] = e < W_UNITS ? qs[(n * pc.K + k) / QG_CODES + w] : 0u;
        rp[t] = e < W_UNITS ? params[n * groups + k / pc.group] : 0u;
    }
}

// The registers load_step filled into shared buffer b: A converted to
// fp16, W decoded, scaled by d and rounded to fp16, both as uvec4s.
void store_step(uint b, uint tid, vec4 ra[A_REGS], uint rq[W_REGS], uint rp[W_PER]) {
    [[unroll]] for (uint t = 0u; t < A_PER; t++) {
        const uint e = t * WG + tid;
        if (e < A_UNITS) {
            const vec4 x = ra[2u * t], z = ra[2u * t + 1u];
            As[(b * BM + e / A_ROW) * SK + e % A_ROW] =
                uvec4(packFloat2x16(f16vec2(x.xy)), packFloat2x16(f16vec2(x.zw)), packFloat2x16(f16vec2(z.xy)),
                      packFloat2x16(f16vec2(z.zw)));
        }
    }
    [[unroll]] for (uint t = 0u; t < W_PER; t++) {
        const uint e = t * WG + tid;
        if (e < W_UNITS) {
            uint h[4];  // the unit's 8 codes as fp16 pairs, in order
            [[unroll]] for (uint w = 0u; w < WPU; w++) {
                uint hw[QG_CODES / 2u];
                qg_decode_h2(rq[t * WPU + w], rp[t], hw);
                [[unroll]] for (uint s = 0u; s < QG_CODES / 2u; s++) h[w * (QG_CODES / 2u) + s] = hw[s];
            }
            Ws[(b * BN + e / W_ROW) * SK + e % W_ROW] = uvec4(h[0], h[1], h[2], h[3]);
        }
    }
}

void main() {
    const uint tid = gl_LocalInvocationIndex;
    const uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
    const uint sg = gl_SubgroupID, sm = sg / SG_N, sn = sg % SG_N;
    const uint groups = pc.K / pc.group;
    // This workgroup's K steps: [s0, s0 + steps) of the whole K's, the
    // z-th of pc.splits slices (every slice has steps: the host's choice).
    const uint per = (pc.K / BK + pc.splits - 1u) / pc.splits, s0 = SPLIT ? gl_WorkGroupID.z * per : 0u;
    const uint steps = SPLIT ? min(per, pc.K / BK - s0) : pc.K / BK;
    const uint lane = gl_SubgroupInvocationID;
#ifdef VKL_COOPMAT_EMULATED
    float c[FM][FN][EL];
    for (uint i = 0u; i < FM; i++)
        for (uint j = 0u; j < FN; j++)
            for (uint q = 0u; q < EL; q++) c[i][j][q] = 0.0;
#else
    fcoopmatNV<32, gl_ScopeSubgroup, CM_M, CM_N> c[FM][FN];
    CM_UNROLL for (uint i = 0u; i < FM; i++)
        CM_UNROLL for (uint j = 0u; j < FN; j++) c[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, CM_M, CM_N>(0.0);
#endif

    vec4 ra[A_REGS];
    uint rq[W_REGS];
    uint rp[W_PER];
    load_step(s0 * BK, m0, n0, tid, groups, ra, rq, rp);
    store_step(0u, tid, ra, rq, rp);
    barrier();
    for (uint s = 0u; s < steps; s++) {
        // Buffer s % 2 holds step s (the barrier above or at the end of the
        // last iteration made it visible); buffer (s + 1) % 2 was last read
        // in step s - 1, which every subgroup finished before that barrier.
        const uint b = s % 2u;
        if (s + 1u < steps) load_step((s0 + s + 1u) * BK, m0, n0, tid, groups, ra, rq, rp);
        CM_UNROLL for (uint kk = 0u; kk < BK; kk += CM_K) {
            // Offsets and strides in uvec4s (8 halves; CM_K % 8 == 0).
            uint a_at[FM], b_at[FN];
            CM_UNROLL for (uint i = 0u; i < FM; i++) a_at[i] = (b * BM + (sm * FM + i) * CM_M) * SK + kk / 8u;
            CM_UNROLL for (uint j = 0u; j < FN; j++) b_at[j] = (b * BN + (sn * FN + j) * CM_N) * SK + kk / 8u;
#ifdef VKL_COOPMAT_EMULATED
            for (uint i = 0u; i < FM; i++)
                for (uint j = 0u; j < FN; j++) fragment_mul_add(c[i][j], a_at[i], b_at[j], lane);
#else
            fcoopmatNV<16, gl_ScopeSubgroup, CM_M, CM_K> fa[FM];
            fcoopmatNV<16, gl_ScopeSubgroup, CM_K, CM_N> fb[FN];
            CM_UNROLL for (uint i = 0u; i < FM; i++) coopMatLoadNV(fa[i], As, a_at[i], SK, false);
            CM_UNROLL for (uint j = 0u; j < FN; j++) coopMatLoadNV(fb[j], Ws, b_at[j], SK, true);
            CM_UNROLL for (uint i = 0u; i < FM; i++)
                CM_UNROLL for (uint j = 0u; j < FN; j++) c[i][j] = coopMatMulAddNV(fa[i], fb[j], c[i][j]);
#endif
        }
        if (s + 1u < steps) store_step(1u - b, tid, ra, rq, rp);
        barrier();
    }

    // Out, one fragment at a time through this subgroup's staging area: no
    // other subgroup touches it, so a subgroup barrier orders it. A split
    // writes its plane of partial sums, the bias left to the sum. A fused
    // Add's R may share memory with y as far as the compiler knows, so no
    // load of it moves past a store of y: each fragment's R is loaded
    // before the previous fragment is stored (res_load), its latency behind
    // that work.
    const uint base = sg * CM_M * CM_N;
    const uint plane = SPLIT ? gl_WorkGroupID.z * pc.M * pc.N : 0u;
    float r[OUT_PER], r_next[OUT_PER];
    res_load(m0 + sm * FM * CM_M, n0 + sn * FN * CM_N, lane, r);
    CM_UNROLL for (uint f = 0u; f < FM * FN; f++) {
        const uint i = f / FN, j = f % FN;
        const uint fm = m0 + (sm * FM + i) * CM_M, fn = n0 + (sn * FN + j) * CM_N;
        if (f + 1u < FM * FN)
            res_load(m0 + (sm * FM + (f + 1u) / FN) * CM_M, n0 + (sn * FN + (f + 1u) % FN) * CM_N, lane, r_next);
#ifdef VKL_COOPMAT_EMULATED
        fragment_store(c[i][j], base, lane);
#else
        coopMatStoreNV(c[i][j], Cs, base, CM_N, false);
#endif
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        CM_UNROLL for (uint q = 0u; q < OUT_PER; q++) {
            const uint x = lane + q * SG_LANES, m = fm + x / CM_N, n = fn + x % CM_N;
            if (x < CM_M * CM_N && m < pc.M && n < pc.N) {
                const float v = Cs[base + x] + (pc.has_bias != 0u ? bias[n] : 0.0);
                y[plane + m * pc.N + n] = !SPLIT && RESIDUAL ? v + r[q] : v;
            }
        }
        subgroupBarrier();  // read before the next fragment overwrites it
        CM_UNROLL for (uint q = 0u; q < OUT_PER; q++) r[q] = r_next[q];
    }
}
