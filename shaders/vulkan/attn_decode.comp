#version 450
// Attention for few query rows (decode), first half of split-K flash
// decoding: the keys [lo, hi) are split into NSPLIT chunks of KPS keys;
// workgroup (x, y, z) = (chunk c, KV head g and row block, batch b) attends
// R of the G * S query rows that read KV head g (the G = Hq / Hkv query
// heads of the group, each with its S rows; all of them in one block unless
// there are more than R), so each K and V row of the chunk is read once for
// all of them. It writes per row the chunk's softmax max m, sum l and
// unnormalized output o[Dv] to scratch; attn_combine.comp merges the
// chunks, or (FOLD) the chunks' last workgroup does, as attn_decode_sg.comp's
// fold: one dispatch. All f32 (f64 in the _f64 variant). The _codes builds
// (VKL_QA_CODES; _bytes: VKL_QA_BYTES too; FOLD on, f32) write the merged
// rows as the integer-dot matvecs' codes at binding 6, as
// attn_combine.comp's _codes builds do.
//
// Per block of CH keys: each invocation scores one key for all R rows
// (one pass over its K row, decoded on load), row maxima and sums in two
// levels (NP strips of a row by NP invocations, then the strips' results by
// one: CH / NP + NP dependent shared-memory steps, not CH), weights by all,
// then each invocation accumulates its column pairs of V for all R rows
// (consecutive invocations read consecutive V columns). With PRELOAD (FLAGS
// bit 1), an invocation's first VB V rows are loaded before the barrier
// ahead of the scores (for the first block before Q is read): they do not
// depend on them. With KPRE (FLAGS bit 2, D a multiple of 4), so is a
// scoring invocation's K row, into registers. With both, a block's Q (the
// first), K and V loads wait on memory together.
#include "kv_common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint R = 1;        // query rows per workgroup: min(G * S, 16)
layout(constant_id = 2) const uint CH = 64;      // keys per block (<= WG)
layout(constant_id = 3) const uint D = 64;
layout(constant_id = 4) const uint DV = 64;
layout(constant_id = 5) const uint DTS = 0x41041u; // Q | K << 6 | V << 12 | mask << 18
layout(constant_id = 6) const uint FLAGS = 0;    // bit 0: kv_layout 1; bit 1: PRELOAD; bit 2: KPRE
layout(constant_id = 7) const uint ODT = 1;      // the output's dtype (the fold writes it)
layout(constant_id = 8) const bool FOLD = false; // merge the chunks here; else attn_combine.comp does
layout(constant_id = 9) const uint VB = 8;       // V rows whose loads one invocation has in flight
layout(constant_id = 10) const uint NP = 1;      // strips per row of the block's max and sum (divides CH)

const uint QDT = DTS & 63u, KDT = (DTS >> 6) & 63u, VDT = (DTS >> 12) & 63u, MDT = (DTS >> 18) & 63u;
const uint NPAIR = (DV + 1u) / 2u;
const uint PPT = (NPAIR + WG - 1u) / WG;
// Key lanes of the V sum: with fewer column pairs than invocations, WG /
// NPAIR groups of invocations take every KL-th key (the host's
// decode_shared() counts sO's size the same way).
const uint KL = NPAIR >= WG ? 1u : WG / NPAIR;
const bool KPRE = (FLAGS & 4u) != 0u && D % 4u == 0u;
const uint MAXSPLIT = 64u; // chunks the fold merges at most (vk_attention.c's FOLD_MAX_SPLITS)

VKL_TENSOR_IN(Qb, 0)
VKL_KV_IN(Kb, 1)
VKL_KV_IN(Vb, 2)
VKL_TENSOR_IN(Mb, 3)
// per (b, g, chunk, row): m, l, o[DV]; coherent: the fold's last workgroup reads the others'
layout(set = 0, binding = 4, std430) coherent buffer Part_t { REAL part[]; };
// per (b, g, row block): chunks done; 0 between nodes (the last workgroup resets it)
layout(set = 0, binding = 5, std430) coherent buffer Cnt_t { uint cnt[]; };
layout(set = 0, binding = 6, std430) writeonly buffer Ob_t { uint Ob[]; };
VKL_STORE_PAIR(Ob)

layout(push_constant) uniform Push {
    uint B, Hq, Hkv, S, T;
    uint causal;
    int window;
    uint scale_lo, scale_hi;
    uint msb, msh, msi, msj;
    uint lo, hi;                // the keys some row may see
    uint kps, nsplit;           // keys per chunk, chunks
    uint rows, nrb;             // G * S, blocks of R rows (y = g * nrb + block)
#ifdef VKL_QA_CODES
    uint qa_cols, qa_steps, qa_stride; // attn_combine.comp's
#endif
} pc;

shared REAL sQ[R * D];
shared REAL sS[R * CH];         // scores, then weights
shared REAL sM[R], sMn[R], sA[R], sL[R];
shared uint sSeen[R];
shared REAL sPart[R * NP];      // the strips' maxima, then their sums
shared bool sLast;
shared REAL sO[KL > 1u ? 2u * (KL - 1u) * R * NPAIR : 1u]; // lanes 1.. KL-1's sums: .x plane, then .y

#ifdef VKL_QA_CODES
layout(constant_id = 11) const bool QA_RESIDUAL = true;  // quant_act_int8.comp's DOT_RESIDUAL
#ifdef VKL_QA_BYTES
#define QV_CHUNK 16u
#else
#define QV_CHUNK 32u
#endif
#include "quant_common.glsl"
void qa_put(uint w, uint v) { Ob[w] = v; }
#define VKL_QA_WRITE
#include "quant_act.glsl"
#endif

// the fold: this workgroup's R rows of the (b, g) whose chunks it merges
const uint MG_ROWS = FOLD ? R : 1u;
const uint MG_MAXSPLIT = FOLD ? MAXSPLIT : 1u;
const uint MG_CB = 16u; // vk_attention.c's FOLD_CB: up to 16 chunks merge in one round of loads
uint g_base, g_obase[R]; // row r0's chunk 0; each row's output
uint merge_part(uint r, uint c) { return g_base + (c * pc.rows + r) * (DV + 2u); }
uint merge_out(uint r) { return g_obase[r]; }
#include "attn_merge.glsl"

// V rows j1, j1 + KL, ... (VB of them, clamped to the n keys of the block
// at j0) into v: this invocation's column pairs of each (a macro: GLSL
// takes no array parameter sized by specialization constants)
#define LOAD_V(j0, n, j1)                                                                           \
    for (uint u = 0u; u < VB; u++) {                                                                \
        const uint jj = (j1) + u * KL;                                                              \
        const uint row = vkl_kv_row(layout1, pc.B, pc.Hkv, pc.T, b, g, (j0) + min(jj, (n) - 1u));   \
        const float vs = Vb_scale(VDT, row, DV);                                                    \
        for (uint k = 0u; k < PPT; k++) {                                                           \
            const uint col = 2u * (pair + k * WG);                                                  \
            v[u * PPT + k] = col >= DV ? REAL2(0)                                                   \
                           : DV % 2u == 0u ? Vb_value2(VDT, row, DV, col, vs)                       \
                           : REAL2(Vb_value(VDT, row, DV, col, vs),                                 \
                                   col + 1u < DV ? Vb_value(VDT, row, DV, col + 1u, vs) : REAL(0)); \
        }                                                                                           \
    }

// this invocation's K row of the block at j0 (key j0 + tid) into kr, decoded
#define LOAD_K(j0)                                                                  \
    if (KPRE && tid < CH && (j0) + tid < c1) {                                      \
        const uint krow = vkl_kv_row(layout1, pc.B, pc.Hkv, pc.T, b, g, (j0) + tid); \
        const float kscale = Kb_scale(KDT, krow, D);                                \
        for (uint e = 0u; e < D / 4u; e++) kr[e] = Kb_value4(KDT, krow, D, 4u * e, kscale); \
    }

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint lane = KL > 1u ? tid / NPAIR : 0u, pair = KL > 1u ? tid % NPAIR : tid;
    const uint c = gl_WorkGroupID.x, g = gl_WorkGroupID.y / pc.nrb, r0 = gl_WorkGroupID.y % pc.nrb * R;
    const uint b = gl_WorkGroupID.z;
    const uint G = pc.Hq / pc.Hkv;
    const bool layout1 = (FLAGS & 1u) != 0u, preload = (FLAGS & 2u) != 0u;
#ifdef VKL_F64
    const double scale = packDouble2x32(uvec2(pc.scale_lo, pc.scale_hi));
#else
    const float scale = uintBitsToFloat(pc.scale_lo);
#endif
    const uint c0 = pc.lo + c * pc.kps, c1 = min(pc.hi, c0 + pc.kps);
    REAL4 kr[(D + 3u) / 4u]; // read only with KPRE (a KPRE-sized array trips glslc -O)
    REAL2 v[VB * PPT];
    // the first block's K and V loads, issued before Q's
    LOAD_K(c0);
    if (preload && lane < KL && c0 < c1) LOAD_V(c0, min(CH, c1 - c0), lane);
    for (uint idx = tid; idx < R * D; idx += WG) {
        uint rr = r0 + idx / D, d = idx % D, h = g * G + rr / pc.S, i = rr % pc.S;
        sQ[idx] = rr < pc.rows ? VKL_REAL_AT(Qb, QDT, ((b * pc.Hq + h) * pc.S + i) * D + d) * scale : REAL(0);
    }
    for (uint r = tid; r < R; r += WG) {
        sM[r] = REAL(0);
        sL[r] = REAL(0);
        sSeen[r] = 0u;
    }
    REAL o[R * 2u * PPT];
    for (uint k = 0u; k < R * 2u * PPT; k++) o[k] = REAL(0);

    for (uint j0 = c0; j0 < c1; j0 += CH) {
        const uint n = min(CH, c1 - j0);
        if (j0 != c0) { // this block's loads before the barrier (the previous block is done with v)
            LOAD_K(j0);
            if (preload && lane < KL) LOAD_V(j0, n, lane);
        }
        barrier(); // sQ and the row state are visible; the previous block's readers are done
        // scores: key j0 + tid for every row
        if (tid < CH) {
            uint j = j0 + tid;
            REAL acc[R];
            for (uint r = 0u; r < R; r++) acc[r] = REAL(0);
            if (j < c1) {
                uint row = vkl_kv_row(layout1, pc.B, pc.Hkv, pc.T, b, g, j);
                float ks = Kb_scale(KDT, row, D);
                if (D % 4u == 0u) { // a word of four 1-byte codes per load
                    for (uint d = 0u; d < D; d += 4u) {
                        REAL4 kv = KPRE ? kr[d / 4u] : Kb_value4(KDT, row, D, d, ks);
                        for (uint r = 0u; r < R; r++)
                            acc[r] += dot(REAL4(sQ[r * D + d], sQ[r * D + d + 1u], sQ[r * D + d + 2u], sQ[r * D + d + 3u]), kv);
                    }
                } else {
                    for (uint d = 0u; d < D; d++) {
                        REAL kv = Kb_value(KDT, row, D, d, ks);
                        for (uint r = 0u; r < R; r++) acc[r] += sQ[r * D + d] * kv;
                    }
                }
            }
            for (uint r = 0u; r < R; r++) {
                uint rr = r0 + r, h = g * G + rr / pc.S, i = rr % pc.S;
                int p = int(i) + int(pc.T) - int(pc.S), jj = int(j);
                bool vis = rr < pc.rows && j < c1 && (pc.causal == 0 || jj <= p) && (pc.window <= 0 || p - jj < pc.window);
                uint mi = b * pc.msb + h * pc.msh + i * pc.msi + j * pc.msj;
                if (vis && MDT == VKL_DT_BOOL) vis = Mb_i(MDT, mi) != 0;
                REAL s = vkl_neg_inf();
                if (vis) s = MDT != 0u && MDT != VKL_DT_BOOL ? acc[r] + VKL_REAL_AT(Mb, MDT, mi) : acc[r];
                sS[r * CH + tid] = s;
            }
        }
        barrier();
        // each row's new max and the factor for what it had: the strips'
        // maxima, then the row's (-inf: nothing visible there)
        for (uint idx = tid; idx < R * NP; idx += WG) {
            REAL mt = vkl_neg_inf();
            for (uint jj = 0u; jj < CH / NP; jj++) {
                const REAL s = sS[idx * (CH / NP) + jj];
                if (!vkl_is_neg_inf(s)) mt = vkl_is_neg_inf(mt) ? s : max(mt, s);
            }
            sPart[idx] = mt;
        }
        barrier();
        for (uint r = tid; r < R; r += WG) {
            bool any = false;
            REAL mt = REAL(0);
            for (uint p = 0u; p < NP; p++) {
                const REAL s = sPart[r * NP + p];
                if (!vkl_is_neg_inf(s)) {
                    mt = any ? max(mt, s) : s;
                    any = true;
                }
            }
            bool seen = sSeen[r] != 0u;
            REAL mn = !any ? sM[r] : seen ? max(sM[r], mt) : mt;
            sA[r] = seen ? vkl_exp(sM[r] - mn) : REAL(1); // o and l are 0 until seen
            sMn[r] = mn;
            sM[r] = mn;
            if (any) sSeen[r] = 1u;
        }
        barrier();
        for (uint idx = tid; idx < R * CH; idx += WG) {
            REAL s = sS[idx];
            sS[idx] = vkl_is_neg_inf(s) ? REAL(0) : vkl_exp(s - sMn[idx / CH]);
        }
        barrier();
        // the strips' sums, then the row's
        for (uint idx = tid; idx < R * NP; idx += WG) {
            REAL sum = REAL(0);
            for (uint jj = 0u; jj < CH / NP; jj++) sum += sS[idx * (CH / NP) + jj];
            sPart[idx] = sum;
        }
        if (NP > 1u) barrier();
        for (uint r = tid; r < R; r += WG) {
            REAL sum = REAL(0);
            for (uint p = 0u; p < NP; p++) sum += sPart[r * NP + p];
            sL[r] = sL[r] * sA[r] + sum;
        }
        for (uint r = 0u; r < R; r++)
            for (uint k = 0u; k < 2u * PPT; k++) o[r * 2u * PPT + k] *= sA[r];
        // V: lane kl of the KL key lanes takes keys kl, kl + KL, ..., its
        // column pairs of each; VB rows' loads are issued before any of
        // them is used, so a block waits on memory CH / (KL * VB) times
        // rather than once per key (the first VB already, with PRELOAD).
        if (lane < KL)
            for (uint j1 = lane; j1 < n; j1 += KL * VB) {
                if (!preload || j1 != lane) LOAD_V(j0, n, j1);
                for (uint u = 0u; u < VB; u++) {
                    const uint jj = j1 + u * KL;
                    if (jj >= n) break;
                    for (uint r = 0u; r < R; r++) {
                        REAL w = sS[r * CH + jj];
                        // an invisible key's V row may be anything, even NaN: skip, don't multiply by 0
                        if (w != REAL(0))
                            for (uint k = 0u; k < PPT; k++) {
                                o[r * 2u * PPT + 2u * k] += w * v[u * PPT + k].x;
                                o[r * 2u * PPT + 2u * k + 1u] += w * v[u * PPT + k].y;
                            }
                    }
                }
            }
    }
    // the key lanes' sums into lane 0's (each lane scaled its own by the same sA)
    if (KL > 1u && lane > 0u && lane < KL)
        for (uint r = 0u; r < R; r++) {
            sO[((lane - 1u) * R + r) * NPAIR + pair] = o[r * 2u * PPT];
            sO[(((KL - 1u) + lane - 1u) * R + r) * NPAIR + pair] = o[r * 2u * PPT + 1u];
        }
    barrier(); // sL, sM of the last block; sO
    if (KL > 1u && lane == 0u)
        for (uint l = 1u; l < KL; l++)
            for (uint r = 0u; r < R; r++) {
                o[r * 2u * PPT] += sO[((l - 1u) * R + r) * NPAIR + pair];
                o[r * 2u * PPT + 1u] += sO[(((KL - 1u) + l - 1u) * R + r) * NPAIR + pair];
            }
    const uint stride = DV + 2u;
    const uint base = ((b * pc.Hkv + g) * pc.nsplit + c) * pc.rows * stride + r0 * stride;
    for (uint r = 0u; r < R && r0 + r < pc.rows; r++) {
        bool seen = sSeen[r] != 0u;
        if (tid == 0u) {
            part[base + r * stride] = seen ? sM[r] : REAL(0);
            part[base + r * stride + 1u] = seen ? sL[r] : REAL(0); // l = 0: nothing visible here
        }
        for (uint k = 0u; k < PPT && lane == 0u; k++) {
            uint col = 2u * (pair + k * WG);
            if (col < DV) part[base + r * stride + 2u + col] = o[r * 2u * PPT + 2u * k];
            if (col + 1u < DV) part[base + r * stride + 3u + col] = o[r * 2u * PPT + 2u * k + 1u];
        }
    }
    // The chunks' merge by whichever workgroup of this (b, g, row block)
    // finishes last (attn_decode_sg.comp's fold): each makes its partials
    // visible, then counts itself in.
    if (!FOLD) return;
    memoryBarrierBuffer();
    barrier();
    const uint counter = (b * pc.Hkv + g) * pc.nrb + r0 / R;
    if (tid == 0u) sLast = atomicAdd(cnt[counter], 1u) == pc.nsplit - 1u;
    barrier();
    if (!sLast) return;
    memoryBarrierBuffer();
    g_base = ((b * pc.Hkv + g) * pc.nsplit * pc.rows + r0) * stride;
    for (uint r = 0u; r < R; r++) {
        const uint rr = r0 + r, h = g * G + rr / pc.S, i = rr % pc.S;
        g_obase[r] = ((b * pc.Hq + h) * pc.S + i) * DV;
    }
    merge(min(R, pc.rows - r0), pc.nsplit);
    if (tid == 0u) cnt[counter] = 0u;
}
