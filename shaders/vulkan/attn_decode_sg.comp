#version 450
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
// Attention for few query rows (decode), first half of split-K flash
// decoding, on subgroups: the same chunks, rows and partials as
// attn_decode.comp (attn_combine.comp merges them), but each subgroup runs
// its own online softmax over its own keys, so the key loop has no
// workgroup barrier; the subgroups' (m, l, o) merge once, at the end.
// Chosen where the device has subgroup arithmetic, one fixed subgroup size
// (SG, a specialization constant the host sets to it), f32 math, even Dv
// and D a multiple of 4 (vk_attention.c); attn_decode.comp otherwise.
//
// With FOLD, the chunks' merge is folded in: the last workgroup of each (b, g, row
// block) to finish, known by a counter in the scratch buffer, merges all
// chunks' partials exactly as attn_combine.comp does and writes the output,
// then sets the counter back to 0: one dispatch and no second barrier per
// node. Its _codes builds (VKL_QA_CODES; _bytes: VKL_QA_BYTES too; FOLD on)
// write the merged rows as the integer-dot matvecs' codes at binding 6
// instead, as attn_combine.comp's _codes builds do (which say when).
//
// A round is SG keys of one subgroup, lane t scoring key base + t:
//   scores: lane t reads its K row whole (16-byte words for a 16-bit cache,
//     all issued before any arithmetic) and dots it with the R query rows
//     (sQ, broadcast reads from shared memory); the mask, causal and window
//     rules are attn_decode.comp's;
//   softmax: per row, the round's max and sum by subgroupMax / subgroupAdd,
//     the running (m, l, o) rescaled as in flash attention;
//   V: the weights go through the subgroup's slice of shared memory; lane t
//     owns column pairs t, t + SG, ... (a subgroup reads each V row as one
//     contiguous run) and adds weight * V for the round's keys, VB rows'
//     loads in flight at a time, the first VB issued with the K loads. A key no row may see is skipped, never
//     multiplied by 0 (its V row may be anything, even NaN).
#include "kv_common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128;
layout(constant_id = 1) const uint R = 1;     // query rows per workgroup: min(G * S, 16)
layout(constant_id = 2) const uint SG = 32;   // the subgroup size (fixed on the devices this runs on)
layout(constant_id = 3) const uint D = 64;    // a multiple of 4
layout(constant_id = 4) const uint DV = 64;   // even
layout(constant_id = 5) const uint DTS = 0x41041u; // Q | K << 6 | V << 12 | mask << 18
layout(constant_id = 6) const uint FLAGS = 0; // bit 0: kv_layout 1
layout(constant_id = 7) const uint ODT = 1;   // the output's dtype (the fold writes it)
layout(constant_id = 8) const bool FOLD = true; // merge the chunks here; else attn_combine.comp does

const uint QDT = DTS & 63u, KDT = (DTS >> 6) & 63u, VDT = (DTS >> 12) & 63u, MDT = (DTS >> 18) & 63u;
const uint NSG = WG / SG;                     // subgroups in the workgroup
const uint NPAIR = DV / 2u;
const uint PPL = (NPAIR + SG - 1u) / SG;      // column pairs per lane
const uint MAXSPLIT = 256u;                   // chunks at most (vk_attention.c's MAX_SPLITS)
const uint VB = 16u;                          // V rows whose loads a lane has in flight
const bool K16 = (KDT == VKL_DT_F16 || KDT == VKL_DT_BF16) && D % 8u == 0u;

VKL_TENSOR_IN(Qb, 0)
VKL_KV_IN(Kb, 1)
VKL_KV_IN(Vb, 2)
VKL_TENSOR_IN(Mb, 3)
// the K cache again, as 16-byte words: a 16-bit row of D % 8 == 0 elements is whole words
layout(set = 0, binding = 1, std430) readonly buffer Kw_t { uvec4 Kw[]; };
// per (b, g, chunk, row): m, l, o[DV]; coherent: the last workgroup reads the others'
layout(set = 0, binding = 4, std430) coherent buffer Part_t { float part[]; };
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

shared vec4 sQ[R * D / 4u];
shared float sP[NSG * R * SG];  // each subgroup's weights of its round
shared float sM[NSG * R], sL[NSG * R];
shared float sO[NSG * R * DV];
shared bool sLast;
shared float sW[MAXSPLIT], sLc[MAXSPLIT], sInv;

#ifdef VKL_QA_CODES
layout(constant_id = 9) const bool QA_RESIDUAL = true;  // quant_act_int8.comp's DOT_RESIDUAL
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

// a 16-bit pair word as two floats
vec2 pair16(uint w) {
    return KDT == VKL_DT_F16 ? unpackHalf2x16(w) : vec2(uintBitsToFloat(w << 16), uintBitsToFloat(w & 0xffff0000u));
}

// V rows base + u0 .. base + u0 + VB - 1 (clamped to the round's n keys)
// into v: this lane's column pairs of each (a macro: GLSL takes no array
// parameter sized by specialization constants)
#define LOAD_V(u0)                                                                                 \
    for (uint u = 0u; u < VB; u++) {                                                               \
        const uint vrow = vkl_kv_row(layout1, pc.B, pc.Hkv, pc.T, b, g, base + min((u0) + u, n - 1u)); \
        const float vs = Vb_scale(VDT, vrow, DV);                                                  \
        for (uint k = 0u; k < PPL; k++) {                                                          \
            const uint col = 2u * (lane + k * SG);                                                 \
            v[u * PPL + k] = col < DV ? Vb_value2(VDT, vrow, DV, col, vs) : vec2(0.0);             \
        }                                                                                          \
    }

void main() {
    const uint tid = gl_LocalInvocationID.x, sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
    const uint c = gl_WorkGroupID.x, g = gl_WorkGroupID.y / pc.nrb, r0 = gl_WorkGroupID.y % pc.nrb * R;
    const uint b = gl_WorkGroupID.z;
    const uint G = pc.Hq / pc.Hkv;
    const bool layout1 = (FLAGS & 1u) != 0u;
    const float scale = uintBitsToFloat(pc.scale_lo);
    for (uint idx = tid; idx < R * D; idx += WG) {
        uint rr = r0 + idx / D, d = idx % D, h = g * G + rr / pc.S, i = rr % pc.S;
        float q = rr < pc.rows ? Qb_f(QDT, ((b * pc.Hq + h) * pc.S + i) * D + d) * scale : 0.0;
        sQ[idx / 4u][idx % 4u] = q;
    }
    barrier();

    const uint c0 = pc.lo + c * pc.kps, c1 = min(pc.hi, c0 + pc.kps);
    float m[R], l[R], o[R * 2u * PPL];
    for (uint r = 0u; r < R; r++) {
        m[r] = vkl_neg_inf_f();
        l[r] = 0.0;
    }
    for (uint k = 0u; k < R * 2u * PPL; k++) o[k] = 0.0;

    for (uint base = c0 + sg * SG; base < c1; base += NSG * SG) {
        // the round's first VB V rows, loaded beside K: they do not wait on the scores
        const uint n = min(SG, c1 - base);
        vec2 v[VB * PPL];
        LOAD_V(0u);
        // scores of key j for every row
        const uint j = base + lane;
        float s[R];
        for (uint r = 0u; r < R; r++) s[r] = 0.0;
        if (j < c1) {
            const uint row = vkl_kv_row(layout1, pc.B, pc.Hkv, pc.T, b, g, j);
            if (K16) {
                uvec4 kw[(D + 7u) / 8u]; // D / 8 where read (K16); never an empty array
                for (uint e = 0u; e < D / 8u; e++) kw[e] = Kw[row * (D / 8u) + e];
                for (uint e = 0u; e < D / 8u; e++) {
                    const vec4 k0 = vec4(pair16(kw[e].x), pair16(kw[e].y));
                    const vec4 k1 = vec4(pair16(kw[e].z), pair16(kw[e].w));
                    for (uint r = 0u; r < R; r++)
                        s[r] += dot(sQ[(r * D) / 4u + 2u * e], k0) + dot(sQ[(r * D) / 4u + 2u * e + 1u], k1);
                }
            } else {
                const float ks = Kb_scale(KDT, row, D);
                for (uint d = 0u; d < D; d += 4u) {
                    const vec4 kv = Kb_value4(KDT, row, D, d, ks);
                    for (uint r = 0u; r < R; r++) s[r] += dot(sQ[(r * D + d) / 4u], kv);
                }
            }
        }
        // mask, then the round's softmax per row
        for (uint r = 0u; r < R; r++) {
            const uint rr = r0 + r, h = g * G + rr / pc.S, i = rr % pc.S;
            const int p = int(i) + int(pc.T) - int(pc.S), jj = int(j);
            bool vis = rr < pc.rows && j < c1 && (pc.causal == 0u || jj <= p) && (pc.window <= 0 || p - jj < pc.window);
            const uint mi = b * pc.msb + h * pc.msh + i * pc.msi + j * pc.msj;
            if (vis && MDT == VKL_DT_BOOL) vis = Mb_i(MDT, mi) != 0;
            float sc = vkl_neg_inf_f();
            if (vis) sc = MDT != 0u && MDT != VKL_DT_BOOL ? s[r] + Mb_f(MDT, mi) : s[r];
            const bool live = !vkl_is_neg_inf_f(sc);
            const float mt = subgroupMax(sc); // -inf: no lane's key is visible to this row
            float w = 0.0;
            if (!vkl_is_neg_inf_f(mt)) {
                const bool seen = !vkl_is_neg_inf_f(m[r]);
                const float mn = seen ? max(m[r], mt) : mt;
                const float a = seen ? vkl_exp(m[r] - mn) : 0.0;
                w = live ? vkl_exp(sc - mn) : 0.0;
                l[r] = l[r] * a + subgroupAdd(w);
                m[r] = mn;
                for (uint k = 0u; k < 2u * PPL; k++) o[r * 2u * PPL + k] *= a;
            }
            sP[(sg * R + r) * SG + lane] = w;
        }
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        // V: the round's rows, VB at a time (the first VB loaded with K, above)
        for (uint u0 = 0u; u0 < n; u0 += VB) {
            if (u0 > 0u) LOAD_V(u0);
            for (uint u = 0u; u < VB && u0 + u < n; u++)
                for (uint r = 0u; r < R; r++) {
                    const float w = sP[(sg * R + r) * SG + u0 + u];
                    if (w != 0.0)
                        for (uint k = 0u; k < PPL; k++) {
                            o[r * 2u * PPL + 2u * k] += w * v[u * PPL + k].x;
                            o[r * 2u * PPL + 2u * k + 1u] += w * v[u * PPL + k].y;
                        }
                }
        }
        subgroupBarrier(); // sP is rewritten by the next round
    }

    // the subgroups' states into shared memory, then one merge per (row, column)
    for (uint r = 0u; r < R; r++) {
        if (lane == 0u) {
            sM[sg * R + r] = m[r];
            sL[sg * R + r] = l[r];
        }
        for (uint k = 0u; k < PPL; k++) {
            const uint col = 2u * (lane + k * SG);
            if (col < DV) {
                sO[(sg * R + r) * DV + col] = o[r * 2u * PPL + 2u * k];
                sO[(sg * R + r) * DV + col + 1u] = o[r * 2u * PPL + 2u * k + 1u];
            }
        }
    }
    barrier();
    const uint stride = DV + 2u;
    const uint pbase = ((b * pc.Hkv + g) * pc.nsplit + c) * pc.rows * stride + r0 * stride;
    for (uint idx = tid; idx < R * (DV + 2u); idx += WG) {
        const uint r = idx / (DV + 2u), e = idx % (DV + 2u);
        if (r0 + r >= pc.rows) continue;
        float M = vkl_neg_inf_f();
        for (uint t = 0u; t < NSG; t++) M = vkl_is_neg_inf_f(sM[t * R + r]) ? M : vkl_is_neg_inf_f(M) ? sM[t * R + r] : max(M, sM[t * R + r]);
        const bool seen = !vkl_is_neg_inf_f(M);
        float acc = 0.0;
        if (seen)
            for (uint t = 0u; t < NSG; t++) {
                const float mt = sM[t * R + r];
                if (vkl_is_neg_inf_f(mt)) continue; // this subgroup saw no key of the row
                const float f = vkl_exp(mt - M);
                acc += f * (e == 1u ? sL[t * R + r] : e >= 2u ? sO[(t * R + r) * DV + e - 2u] : 0.0);
            }
        // m, l: a chunk that saw nothing writes (0, 0), as attn_decode.comp
        part[pbase + r * stride + e] = e == 0u ? (seen ? M : 0.0) : acc;
    }
    // The chunks' merge (attn_combine.comp's arithmetic, in its order), by
    // whichever workgroup of this (b, g, row block) finishes last: each
    // makes its partials visible, then counts itself in.
    if (!FOLD) return;
    memoryBarrierBuffer();
    barrier();
    if (tid == 0u) sLast = atomicAdd(cnt[(b * pc.Hkv + g) * pc.nrb + r0 / R], 1u) == pc.nsplit - 1u;
    barrier();
    if (!sLast) return;
    memoryBarrierBuffer();
    for (uint r = 0u; r < R && r0 + r < pc.rows; r++) {
        const uint rbase = ((b * pc.Hkv + g) * pc.nsplit * pc.rows + r0 + r) * stride, step = pc.rows * stride;
        for (uint c = tid; c < pc.nsplit; c += WG) {
            sW[c] = part[rbase + c * step];
            sLc[c] = part[rbase + c * step + 1u];
        }
        barrier();
        if (tid == 0u) {
            bool any = false;
            float M = 0.0;
            for (uint c = 0u; c < pc.nsplit; c++) {
                if (sLc[c] == 0.0) continue; // l = 0: the chunk saw no key
                M = any ? max(M, sW[c]) : sW[c];
                any = true;
            }
            float L = 0.0;
            for (uint c = 0u; c < pc.nsplit; c++) {
                const float w = sLc[c] == 0.0 ? 0.0 : vkl_exp(sW[c] - M);
                sW[c] = w;
                L += w * sLc[c];
            }
            sInv = any ? 1.0 / L : 0.0;
        }
        barrier();
        const uint rr = r0 + r, h = g * G + rr / pc.S, i = rr % pc.S;
        const uint obase = ((b * pc.Hq + h) * pc.S + i) * DV;
        for (uint col = 2u * tid; col < DV; col += 2u * WG) {
            float a0 = 0.0, a1 = 0.0;
            for (uint c0 = 0u; c0 < pc.nsplit; c0 += 4u) {
                vec2 pv[4]; // 4 chunks' columns loaded before any is added (same order of sums)
                for (uint u = 0u; u < 4u; u++) {
                    const uint c = c0 + u;
                    // a chunk that saw nothing holds zeros; skip it all the same
                    pv[u] = c < pc.nsplit && sW[c] != 0.0
                                ? vec2(part[rbase + c * step + 2u + col], part[rbase + c * step + 3u + col])
                                : vec2(0.0);
                }
                for (uint u = 0u; u < 4u && c0 + u < pc.nsplit; u++) {
                    const float w = sW[c0 + u];
                    if (w == 0.0) continue;
                    a0 += w * pv[u].x;
                    a1 += w * pv[u].y;
                }
            }
#ifdef VKL_QA_CODES
            // kept for the codes in sO, whose partials are written out by now
            sO[col] = a0 * sInv;
            sO[col + 1u] = a1 * sInv;
#else
            Ob_store2(ODT, obase + col, a0 * sInv, a1 * sInv, true);
#endif
        }
#ifdef VKL_QA_CODES
        barrier();
        const uint m = obase / pc.qa_cols, c0 = obase % pc.qa_cols / QV_CHUNK;  // attn_combine.comp's
        for (uint c = tid; c < DV / QV_CHUNK; c += WG) {
            vec4 x[QA_VEC];
            for (uint i = 0u; i < QA_VEC; i++) x[i] = vec4(sO[(c * QA_VEC + i) * 4u], sO[(c * QA_VEC + i) * 4u + 1u],
                                                           sO[(c * QA_VEC + i) * 4u + 2u], sO[(c * QA_VEC + i) * 4u + 3u]);
            qa_quantize_step(m * pc.qa_stride, pc.qa_steps, c0 + c, x, QA_RESIDUAL);
        }
#endif
        barrier(); // sW and sInv (and the codes build's sO) are the next row's
    }
    if (tid == 0u) cnt[(b * pc.Hkv + g) * pc.nrb + r0 / R] = 0u;
}
