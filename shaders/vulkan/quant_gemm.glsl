// The tiled matrix product shared by quant_gemm_{e0m4,int4,int8}.comp, for
// prefill (M > 1; backends/vulkan/vk_quant_matmul.c picks it):
//   Y[m, n] = sum_k A[m, k] * w(n, k)  (+ bias[n]),  A [M, K] f32, Y [M, N] f32,
// W in the GPU packed layout (engine/quant/pack_gpu.c). The including file
// defines QG_T (float, or float16_t in the _f16 builds), QG_CODES (codes per
// u32 word of W), and
//   void qg_decode(uint u, uint param, out QG_T v[QG_CODES])
//   float qg_scale(uint param)
// the format's exact centered codes (w1 - b, q - z, q) of one word and its
// group's scale d, so that w(n, k) = v * d exactly (see each format's file
// for where the fp16 build rounds).
//
// Workgroup (x, y) computes the BM x BN tile of Y at (y * BM, x * BN) with
// WX x WY invocations, each a TM x TN block of outputs spaced WY (rows) and
// WX (columns) apart, so a subgroup's shared reads and stores are
// consecutive. K walks in steps of BK = 32 codes (group % 32 == 0: a step
// lies in one group of every row): the step's A slice (coalesced f32 loads,
// converted to QG_T) and W slice (one u32 word per invocation, decoded once)
// go to shared memory, transposed to [k][m] and [k][n] with an odd stride so
// the stores avoid bank conflicts; then each invocation does TM * TN
// products per k from registers into `part`, the group's sum, which is
// scaled by its d and added to the f32 result `acc` when the group ends.
// In the fp16 build the products are summed in fp16 over runs of RUN = 4
// k (fused multiply-adds), each run then added to `part` in f32; the
// formats' files bound the runs against overflow.
//
// A K that is not a multiple of the group (docs/quant.md, "The short last
// group"): W's rows hold KQ codes, whole groups; K walks to KQ and the A
// slice reads 0 past K, so the tail's codes meet zeros. (The
// cooperative-matrix body is never given one: vk_quant_matmul.c.)
//
// Tile shape (specialization constants) from vk_device.c's tuning; the
// shared memory it needs, BK * (BM + BN + 2) QG_T values and BN floats,
// is checked there against the device's limit.

layout(local_size_x_id = 0, local_size_y_id = 1) in;
layout(constant_id = 0) const uint WX = 16;  // invocations along n
layout(constant_id = 1) const uint WY = 16;  // invocations along m
layout(constant_id = 2) const uint TM = 4;   // outputs per invocation along m
layout(constant_id = 3) const uint TN = 4;   // outputs per invocation along n

const uint BK = 32u;
const uint BM = WY * TM, BN = WX * TN, WG = WX * WY;
const uint SA = BM + 1u, SW = BN + 1u;  // shared strides: odd
const uint WORDS = BK / QG_CODES;       // u32 words of one row's step

#include "quant_gemm_io.glsl"

shared QG_T As[BK * SA];  // [k][m]
shared QG_T Ws[BK * SW];  // [k][n]
shared float ds[BN];      // the step's group scale of each row

#ifdef VKL_F16
const uint RUN = 4u;
#endif

void main() {
    const uint tid = gl_LocalInvocationIndex, tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
    const uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
    const uint words = pc.KQ / QG_CODES, groups = pc.KQ / pc.group;  // per row of W
    float acc[TM][TN], part[TM][TN];
    for (uint t = 0u; t < TM; t++)
        for (uint u = 0u; u < TN; u++) {
            acc[t][u] = 0.0;
            part[t][u] = 0.0;
        }

    for (uint k0 = 0u; k0 < pc.KQ; k0 += BK) {
        for (uint e = tid; e < BM * BK; e += WG) {
            const uint i = e / BK, kk = e % BK, m = m0 + i;
            As[kk * SA + i] = QG_T(m < pc.M && k0 + kk < pc.K ? a[m * pc.K + k0 + kk] : 0.0);
        }
        for (uint e = tid; e < BN * WORDS; e += WG) {
            const uint r = e / WORDS, j = e % WORDS;
            const uint n = min(n0 + r, pc.N - 1u);  // rows past N reread row N - 1, never written
            const uint p = params[n * groups + k0 / pc.group];
            QG_T v[QG_CODES];
            qg_decode(qs[n * words + k0 / QG_CODES + j], p, v);
            for (uint c = 0u; c < QG_CODES; c++) Ws[(j * QG_CODES + c) * SW + r] = v[c];
            if (j == 0u) ds[r] = qg_scale(p);
        }
        barrier();
#ifdef VKL_F16
        for (uint k1 = 0u; k1 < BK; k1 += RUN) {
            QG_T h[TM][TN];
            for (uint t = 0u; t < TM; t++)
                for (uint u = 0u; u < TN; u++) h[t][u] = QG_T(0.0);
            for (uint kk = k1; kk < k1 + RUN; kk++) {
                QG_T x[TM], w[TN];
                for (uint t = 0u; t < TM; t++) x[t] = As[kk * SA + ty + WY * t];
                for (uint u = 0u; u < TN; u++) w[u] = Ws[kk * SW + tx + WX * u];
                for (uint t = 0u; t < TM; t++)
                    for (uint u = 0u; u < TN; u++) h[t][u] = fma(x[t], w[u], h[t][u]);
            }
            for (uint t = 0u; t < TM; t++)
                for (uint u = 0u; u < TN; u++) part[t][u] += float(h[t][u]);
        }
#else
        for (uint kk = 0u; kk < BK; kk++) {
            float x[TM], w[TN];
            for (uint t = 0u; t < TM; t++) x[t] = As[kk * SA + ty + WY * t];
            for (uint u = 0u; u < TN; u++) w[u] = Ws[kk * SW + tx + WX * u];
            for (uint t = 0u; t < TM; t++)
                for (uint u = 0u; u < TN; u++) part[t][u] += x[t] * w[u];
        }
#endif
        if ((k0 + BK) % pc.group == 0u)  // the group ends: scale its sums once
            for (uint u = 0u; u < TN; u++) {
                const float d = ds[tx + WX * u];
                for (uint t = 0u; t < TM; t++) {
                    acc[t][u] += d * part[t][u];
                    part[t][u] = 0.0;
                }
            }
        barrier();  // As, Ws and ds are rewritten by the next step
    }

    // A fused Add's R first, all of it: it may share memory with y (as far
    // as the compiler knows), so a load after a store of y would wait for it.
    float r[TM][TN];
    for (uint t = 0u; t < TM; t++)
        for (uint u = 0u; u < TN; u++) {
            const uint m = m0 + ty + WY * t, n = n0 + tx + WX * u;
            r[t][u] = RESIDUAL && m < pc.M && n < pc.N ? res[m * pc.N + n] : 0.0;
        }
    for (uint t = 0u; t < TM; t++) {
        const uint m = m0 + ty + WY * t;
        if (m >= pc.M) continue;
        for (uint u = 0u; u < TN; u++) {
            const uint n = n0 + tx + WX * u;
            if (n >= pc.N) continue;
            const float v = acc[t][u] + (pc.has_bias != 0u ? bias[n] : 0.0);
            y[m * pc.N + n] = RESIDUAL ? v + r[t][u] : v;
        }
    }
}
