#version 450
// Attention for many query rows (prefill): one fused flash-attention pass.
// Workgroup (x, y, z) = (query tile of BR rows, query head h, batch b); it
// reads the K and V rows of h's KV head g = h / (Hq / Hkv) (GQA: the index
// maps, nothing is repeated) in tiles of BC keys staged in shared memory,
// decoded from the cache dtype as they are loaded. Q is scaled once, when
// its tile is staged. Scores, the online softmax (running max m and sum l
// per row) and the output accumulators are f32 (f64 in the _f64 variant);
// the output is divided by l once at the end. Only the key tiles some row
// of the query tile can see (causal, window) are visited.
//
// Invocations: TPR = WG / BR per query row. A row's TPR invocations share
// its scores (each computes BC / TPR of them into shared memory, then each
// reads all BC to update m and l identically) and split its Dv outputs in
// column pairs (a pair is one word of a 16-bit output).
#include "kv_common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint BR = 16;      // query rows per workgroup
layout(constant_id = 2) const uint BC = 16;      // keys per tile
layout(constant_id = 3) const uint D = 64;       // Q/K head dim
layout(constant_id = 4) const uint DV = 64;      // V head dim
layout(constant_id = 5) const uint DTS = 0x41041u; // dtypes: Q | K << 6 | V << 12 | mask << 18 (0: none)
layout(constant_id = 6) const uint FLAGS = 0;    // bit 0: kv_layout 1

const uint QDT = DTS & 63u, KDT = (DTS >> 6) & 63u, VDT = (DTS >> 12) & 63u, MDT = (DTS >> 18) & 63u;
const uint TPR = WG / BR;
const uint NPAIR = (DV + 1u) / 2u;
const uint PPT = (NPAIR + TPR - 1u) / TPR; // column pairs per invocation
const uint KS = D + 1u;                    // padded row stride: rows start in different banks

VKL_TENSOR_IN(Qb, 0)
VKL_KV_IN(Kb, 1)
VKL_KV_IN(Vb, 2)
VKL_TENSOR_IN(Mb, 3)
layout(set = 0, binding = 4, std430) writeonly buffer Ob_t { uint Ob[]; };
VKL_STORE_PAIR(Ob)

layout(push_constant) uniform Push {
    uint B, Hq, Hkv, S, T;
    uint causal;
    int window;                 // <= 0: none
    uint scale_lo, scale_hi;    // f32 bits (lo), or f64 bits in the _f64 variant
    uint msb, msh, msi, msj;    // the mask's element strides over [B, Hq, S, T]
} pc;

shared REAL sQ[BR * KS];
shared REAL sK[BC * KS];
shared REAL sV[BC * DV];
shared REAL sP[BR * BC];

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint i0 = gl_WorkGroupID.x * BR, h = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
    const uint g = h / (pc.Hq / pc.Hkv);
    const bool layout1 = (FLAGS & 1u) != 0u;
#ifdef VKL_F64
    const double scale = packDouble2x32(uvec2(pc.scale_lo, pc.scale_hi));
#else
    const float scale = uintBitsToFloat(pc.scale_lo);
#endif
    for (uint idx = tid; idx < BR * D; idx += WG) {
        uint r = idx / D, d = idx % D, i = i0 + r;
        sQ[r * KS + d] = i < pc.S ? VKL_REAL_AT(Qb, QDT, ((b * pc.Hq + h) * pc.S + i) * D + d) * scale : REAL(0);
    }
    const uint r = tid / TPR, lane = tid % TPR, i = i0 + r;
    const bool row_ok = r < BR && i < pc.S;
    const int p = int(i) + int(pc.T) - int(pc.S); // the query's position among the keys
    // keys any row of the tile may see: [lo, hi)
    const int pmin = int(i0) + int(pc.T) - int(pc.S), pmax = int(min(i0 + BR, pc.S)) - 1 + int(pc.T) - int(pc.S);
    const int lo = pc.window > 0 ? max(0, pmin - pc.window + 1) : 0;
    const int hi = pc.causal != 0 ? min(int(pc.T), pmax + 1) : int(pc.T);

    REAL m = REAL(0), l = REAL(0);
    bool seen = false; // some key of this row was visible so far (m is valid)
    REAL o[2u * PPT];
    for (uint k = 0u; k < 2u * PPT; k++) o[k] = REAL(0);

    for (int j0 = lo; j0 < hi; j0 += int(BC)) {
        barrier(); // the previous tile's readers are done (and sQ is visible)
        // K and V tiles, four elements per load where the head dim allows
        // (one word of 1-byte codes); rows past hi are zeros
        const uint KQ = D % 4u == 0u ? 4u : 1u, VQ = DV % 4u == 0u ? 4u : 1u;
        for (uint idx = tid; idx < BC * D / KQ; idx += WG) {
            uint jj = idx / (D / KQ), d = idx % (D / KQ) * KQ;
            int j = j0 + int(jj);
            REAL4 v = REAL4(0);
            if (j < hi) {
                uint row = vkl_kv_row(layout1, pc.B, pc.Hkv, pc.T, b, g, uint(j));
                float sc = Kb_scale(KDT, row, D);
                v = KQ == 4u ? Kb_value4(KDT, row, D, d, sc) : REAL4(Kb_value(KDT, row, D, d, sc));
            }
            for (uint q = 0u; q < KQ; q++) sK[jj * KS + d + q] = v[q];
        }
        for (uint idx = tid; idx < BC * DV / VQ; idx += WG) {
            uint jj = idx / (DV / VQ), d = idx % (DV / VQ) * VQ;
            int j = j0 + int(jj);
            REAL4 v = REAL4(0);
            if (j < hi) {
                uint row = vkl_kv_row(layout1, pc.B, pc.Hkv, pc.T, b, g, uint(j));
                float sc = Vb_scale(VDT, row, DV);
                v = VQ == 4u ? Vb_value4(VDT, row, DV, d, sc) : REAL4(Vb_value(VDT, row, DV, d, sc));
            }
            for (uint q = 0u; q < VQ; q++) sV[jj * DV + d + q] = v[q];
        }
        barrier();
        if (r < BR) {
            for (uint jj = lane; jj < BC; jj += TPR) {
                int j = j0 + int(jj);
                bool vis = row_ok && j < hi && (pc.causal == 0 || j <= p) && (pc.window <= 0 || p - j < pc.window);
                REAL s = vkl_neg_inf();
                if (vis && MDT == VKL_DT_BOOL)
                    vis = Mb_i(MDT, b * pc.msb + h * pc.msh + i * pc.msi + uint(j) * pc.msj) != 0;
                if (vis) {
                    REAL acc = REAL(0);
                    for (uint d = 0u; d < D; d++) acc += sQ[r * KS + d] * sK[jj * KS + d];
                    if (MDT != 0u && MDT != VKL_DT_BOOL)
                        acc += VKL_REAL_AT(Mb, MDT, b * pc.msb + h * pc.msh + i * pc.msi + uint(j) * pc.msj);
                    s = acc;
                }
                sP[r * BC + jj] = s;
            }
        }
        barrier();
        if (r < BR) {
            // the row's TPR invocations do this identically: same m, l
            bool any = false;
            REAL mt = REAL(0);
            for (uint jj = 0u; jj < BC; jj++) {
                REAL s = sP[r * BC + jj];
                if (!vkl_is_neg_inf(s)) {
                    mt = any ? max(mt, s) : s;
                    any = true;
                }
            }
            if (any) {
                REAL mn = seen ? max(m, mt) : mt;
                REAL alpha = seen ? vkl_exp(m - mn) : REAL(0);
                l *= alpha;
                for (uint k = 0u; k < 2u * PPT; k++) o[k] *= alpha;
                for (uint jj = 0u; jj < BC; jj++) {
                    REAL s = sP[r * BC + jj];
                    if (vkl_is_neg_inf(s)) continue; // its V row may be anything, even NaN
                    REAL w = vkl_exp(s - mn);
                    l += w;
                    for (uint k = 0u; k < PPT; k++) {
                        uint c = 2u * (lane + k * TPR);
                        if (c < DV) o[2u * k] += w * sV[jj * DV + c];
                        if (c + 1u < DV) o[2u * k + 1u] += w * sV[jj * DV + c + 1u];
                    }
                }
                m = mn;
                seen = true;
            }
        }
    }
    if (!row_ok) return;
    const REAL inv = seen ? REAL(1) / l : REAL(0); // no visible key: zeros
    const uint base = ((b * pc.Hq + h) * pc.S + i) * DV;
    for (uint k = 0u; k < PPT; k++) {
        uint c = 2u * (lane + k * TPR);
        if (c < DV) Ob_store2(QDT, base + c, o[2u * k] * inv, o[2u * k + 1u] * inv, c + 1u < DV);
    }
}
