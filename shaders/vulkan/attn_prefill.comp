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
// runs of 4 columns. Each invocation holds its row of Q in registers and
// reads K and V from shared memory 4 elements (one vec4) at a time, the
// head dims zero-padded to multiples of 4: the products were bound by
// shared-memory loads (two scalar loads per multiply-add with Q in shared
// memory, an H200 at 4.2 TFLOP/s on a 1B prefill), now one vec4 load feeds
// four.
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
const uint D4 = (D + 3u) / 4u, DV4 = (DV + 3u) / 4u;
const uint P4 = (DV4 + TPR - 1u) / TPR; // runs of 4 output columns per invocation
const uint KS4 = D4 + 1u;               // padded K row stride (vec4s): rows start in different banks

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

shared REAL4 sK[BC * KS4];
shared REAL4 sV[BC * DV4];
shared REAL sP[BR * BC];

// Elements [4 c4, 4 c4 + 4) of a K (or V) row, zeros past its width n.
#define KV_RUN(NAME, dt, row, n, c4, sc)                                                           \
    ((n) % 4u == 0u ? NAME##_value4(dt, row, n, 4u * (c4), sc)                                     \
                    : REAL4(4u * (c4) < (n) ? NAME##_value(dt, row, n, 4u * (c4), sc) : REAL(0),   \
                            4u * (c4) + 1u < (n) ? NAME##_value(dt, row, n, 4u * (c4) + 1u, sc) : REAL(0), \
                            4u * (c4) + 2u < (n) ? NAME##_value(dt, row, n, 4u * (c4) + 2u, sc) : REAL(0), \
                            4u * (c4) + 3u < (n) ? NAME##_value(dt, row, n, 4u * (c4) + 3u, sc) : REAL(0)))

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
    const uint r = tid / TPR, lane = tid % TPR, i = i0 + r;
    const bool row_ok = r < BR && i < pc.S;
    REAL4 q[D4]; // this row of Q, scaled once
    for (uint d4 = 0u; d4 < D4; d4++) {
        REAL4 v = REAL4(0);
        for (uint e = 0u; e < 4u; e++) {
            const uint d = 4u * d4 + e;
            if (row_ok && d < D) v[e] = VKL_REAL_AT(Qb, QDT, ((b * pc.Hq + h) * pc.S + i) * D + d) * scale;
        }
        q[d4] = v;
    }
    const int p = int(i) + int(pc.T) - int(pc.S); // the query's position among the keys
    // keys any row of the tile may see: [lo, hi)
    const int pmin = int(i0) + int(pc.T) - int(pc.S), pmax = int(min(i0 + BR, pc.S)) - 1 + int(pc.T) - int(pc.S);
    const int lo = pc.window > 0 ? max(0, pmin - pc.window + 1) : 0;
    const int hi = pc.causal != 0 ? min(int(pc.T), pmax + 1) : int(pc.T);

    REAL m = REAL(0), l = REAL(0);
    bool seen = false; // some key of this row was visible so far (m is valid)
    REAL4 o[P4];
    for (uint k = 0u; k < P4; k++) o[k] = REAL4(0);

    for (int j0 = lo; j0 < hi; j0 += int(BC)) {
        barrier(); // the previous tile's readers are done
        // K and V tiles, four elements per load (one word of 1-byte codes
        // where the width allows); rows past hi are zeros
        for (uint idx = tid; idx < BC * D4; idx += WG) {
            const uint jj = idx / D4, c4 = idx % D4;
            const int j = j0 + int(jj);
            REAL4 v = REAL4(0);
            if (j < hi) {
                const uint row = vkl_kv_row(layout1, pc.B, pc.Hkv, pc.T, b, g, uint(j));
                const float sc = Kb_scale(KDT, row, D);
                v = KV_RUN(Kb, KDT, row, D, c4, sc);
            }
            sK[jj * KS4 + c4] = v;
        }
        for (uint idx = tid; idx < BC * DV4; idx += WG) {
            const uint jj = idx / DV4, c4 = idx % DV4;
            const int j = j0 + int(jj);
            REAL4 v = REAL4(0);
            if (j < hi) {
                const uint row = vkl_kv_row(layout1, pc.B, pc.Hkv, pc.T, b, g, uint(j));
                const float sc = Vb_scale(VDT, row, DV);
                v = KV_RUN(Vb, VDT, row, DV, c4, sc);
            }
            sV[jj * DV4 + c4] = v;
        }
        barrier();
        if (r < BR) {
            for (uint jj = lane; jj < BC; jj += TPR) {
                const int j = j0 + int(jj);
                bool vis = row_ok && j < hi && (pc.causal == 0 || j <= p) && (pc.window <= 0 || p - j < pc.window);
                REAL s = vkl_neg_inf();
                if (vis && MDT == VKL_DT_BOOL)
                    vis = Mb_i(MDT, b * pc.msb + h * pc.msh + i * pc.msi + uint(j) * pc.msj) != 0;
                if (vis) {
                    REAL4 acc = REAL4(0);
                    for (uint d4 = 0u; d4 < D4; d4++) acc += q[d4] * sK[jj * KS4 + d4];
                    s = (acc.x + acc.y) + (acc.z + acc.w);
                    if (MDT != 0u && MDT != VKL_DT_BOOL)
                        s += VKL_REAL_AT(Mb, MDT, b * pc.msb + h * pc.msh + i * pc.msi + uint(j) * pc.msj);
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
                for (uint k = 0u; k < P4; k++) o[k] *= alpha;
                for (uint jj = 0u; jj < BC; jj++) {
                    REAL s = sP[r * BC + jj];
                    if (vkl_is_neg_inf(s)) continue; // its V row may be anything, even NaN
                    REAL w = vkl_exp(s - mn);
                    l += w;
                    for (uint k = 0u; k < P4; k++) {
                        const uint c4 = lane + k * TPR;
                        if (c4 < DV4) o[k] += w * sV[jj * DV4 + c4];
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
    for (uint k = 0u; k < P4; k++) {
        const uint c = 4u * (lane + k * TPR);
        if (c < DV) Ob_store2(QDT, base + c, o[k].x * inv, o[k].y * inv, c + 1u < DV);
        if (c + 2u < DV) Ob_store2(QDT, base + c + 2u, o[k].z * inv, o[k].w * inv, c + 3u < DV);
    }
}
