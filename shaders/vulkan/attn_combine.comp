#version 450
// Second half of split-K flash decoding (attn_decode.comp wrote the
// partials): workgroup (x, y, z) = (row r of KV head g's R rows, g, batch b)
// merges that row's NSPLIT chunks: M = max m_c over chunks that saw a key,
// w_c = exp(m_c - M), out = sum_c w_c o_c / sum_c w_c l_c, or zeros when no
// chunk saw a key. Written in the output's dtype, column pairs per
// invocation (one word of a 16-bit output).
//
// The _codes builds (VKL_QA_CODES; _bytes: VKL_QA_BYTES too) are the merge
// folded into the integer-dot matvecs' activation quantizer (vk_fuse.c's
// ATTN_CODES: the output's only readers are such matvecs, o_proj): the row's
// DV values are not stored but kept in shared memory and quantized, step by
// step, into quant_act.glsl's codes at binding 1 with quant_act_int8.comp's
// own arithmetic (qa_quantize_step) on the very f32 values the plain build
// stores, so the matvecs' results are the unfused ones bit for bit. The
// codes' rows are the output read flat as rows of qa_cols (o_proj's K), so
// DV values at a multiple of DV are whole steps of one row when qa_cols is
// a multiple of DV and DV of the step (vk_attention.c checks). f32 only.
#include "kv_common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint DV = 64;
layout(constant_id = 2) const uint ODT = 1;      // output dtype
layout(constant_id = 3) const uint MAXSPLIT = 64; // chunk weights kept in shared memory

layout(set = 0, binding = 0, std430) readonly buffer Part_t { REAL part[]; };
layout(set = 0, binding = 1, std430) writeonly buffer Ob_t { uint Ob[]; };
VKL_STORE_PAIR(Ob)

layout(push_constant) uniform Push {
    uint Hq, Hkv, S, R, nsplit;
#ifdef VKL_QA_CODES
    uint qa_cols;    // elements per row of codes
    uint qa_steps;   // steps per row of codes (qa_cols / QV_CHUNK)
    uint qa_stride;  // uvec4s per row; the codes are bound whole
#endif
} pc;

#ifdef VKL_QA_CODES
layout(constant_id = 4) const bool QA_RESIDUAL = true;  // quant_act_int8.comp's DOT_RESIDUAL
#ifdef VKL_QA_BYTES
#define QV_CHUNK 16u
#else
#define QV_CHUNK 32u
#endif
#include "quant_common.glsl"
void qa_put(uint w, uint v) { Ob[w] = v; }
#define VKL_QA_WRITE
#include "quant_act.glsl"
shared float sC[DV];               // the row's values, as the plain build stores them
#endif

// columns e, e + 1 (if two) of the row at obase: stored, or kept for the codes
void store2(uint obase, uint e, REAL v0, REAL v1, bool two) {
#ifdef VKL_QA_CODES
    sC[e] = v0;
    if (two) sC[e + 1u] = v1;
#else
    Ob_store2(ODT, obase + e, v0, v1, two);
#endif
}

const uint NPAIR = (DV + 1u) / 2u;
// Chunk lanes: with fewer column pairs than invocations, WG / NPAIR lanes
// each sum a share of the chunks for every pair, then lane 0 adds the
// lanes' sums in lane order.
const uint L = NPAIR >= WG ? 1u : WG / NPAIR;
const uint CB = 4u;                // chunks whose loads an invocation has in flight

shared REAL sW[MAXSPLIT];          // each chunk's m, then its weight
shared REAL sL[MAXSPLIT];          // each chunk's l
shared REAL sInv;
shared REAL sX[L > 1u ? L * NPAIR : 1u], sY[L > 1u ? L * NPAIR : 1u];

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint r = gl_WorkGroupID.x, g = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
    const uint stride = DV + 2u;
    const uint base = ((b * pc.Hkv + g) * pc.nsplit * pc.R + r) * stride; // chunk c at + c * R * stride
    const uint step = pc.R * stride;
    // every chunk's (m, l) read at once, one invocation each (one invocation
    // reading them in a loop waited on memory once per chunk)
    for (uint c = tid; c < pc.nsplit; c += WG) {
        sW[c] = part[base + c * step];
        sL[c] = part[base + c * step + 1u];
    }
    barrier();
    if (tid == 0u) {
        bool any = false;
        REAL M = REAL(0);
        for (uint c = 0u; c < pc.nsplit; c++) {
            if (sL[c] == REAL(0)) continue; // l = 0: the chunk saw no key
            M = any ? max(M, sW[c]) : sW[c];
            any = true;
        }
        REAL L_ = REAL(0);
        for (uint c = 0u; c < pc.nsplit; c++) {
            REAL l = sL[c];
            REAL w = l == REAL(0) ? REAL(0) : vkl_exp(sW[c] - M);
            sW[c] = w;
            L_ += w * l;
        }
        sInv = any ? REAL(1) / L_ : REAL(0);
    }
    barrier();
    const uint G = pc.Hq / pc.Hkv, h = g * G + r / pc.S, i = r % pc.S;
    const uint obase = ((b * pc.Hq + h) * pc.S + i) * DV;
    const uint lane = L > 1u ? tid / NPAIR : 0u, pair = L > 1u ? tid % NPAIR : tid;
    for (uint p = pair; p < NPAIR; p += L > 1u ? NPAIR : WG) {
        const uint col = 2u * p;
        REAL a0 = REAL(0), a1 = REAL(0);
        // this lane's chunks: CB at a time, every L-th batch; their columns
        // loaded before any is added
        for (uint c0 = lane * CB; lane < L && c0 < pc.nsplit; c0 += L * CB) {
            REAL v[2u * CB];
            for (uint u = 0u; u < CB; u++) {
                const uint c = c0 + u;
                // a chunk that saw nothing holds zeros; skip it all the same
                const bool use = c < pc.nsplit && sW[c] != REAL(0);
                v[2u * u] = use ? part[base + c * step + 2u + col] : REAL(0);
                v[2u * u + 1u] = use && col + 1u < DV ? part[base + c * step + 3u + col] : REAL(0);
            }
            for (uint u = 0u; u < CB && c0 + u < pc.nsplit; u++) {
                const REAL w = sW[c0 + u];
                if (w == REAL(0)) continue;
                a0 += w * v[2u * u];
                if (col + 1u < DV) a1 += w * v[2u * u + 1u];
            }
        }
        if (L > 1u) {
            if (lane < L) {
                sX[lane * NPAIR + p] = a0;
                sY[lane * NPAIR + p] = a1;
            }
        } else {
            store2(obase, col, a0 * sInv, a1 * sInv, col + 1u < DV);
        }
    }
    if (L > 1u) {
        barrier();
        if (lane == 0u) {
            REAL a0 = REAL(0), a1 = REAL(0);
            for (uint l = 0u; l < L; l++) {
                a0 += sX[l * NPAIR + pair];
                a1 += sY[l * NPAIR + pair];
            }
            store2(obase, 2u * pair, a0 * sInv, a1 * sInv, 2u * pair + 1u < DV);
        }
    }
#ifdef VKL_QA_CODES
    barrier();
    // the row's DV values are steps c0 .. of codes row m
    const uint m = obase / pc.qa_cols, c0 = obase % pc.qa_cols / QV_CHUNK;
    for (uint c = tid; c < DV / QV_CHUNK; c += WG) {
        vec4 x[QA_VEC];
        for (uint i = 0u; i < QA_VEC; i++)
            x[i] = vec4(sC[(c * QA_VEC + i) * 4u], sC[(c * QA_VEC + i) * 4u + 1u], sC[(c * QA_VEC + i) * 4u + 2u],
                        sC[(c * QA_VEC + i) * 4u + 3u]);
        qa_quantize_step(m * pc.qa_stride, pc.qa_steps, c0 + c, x, QA_RESIDUAL);
    }
#endif
}
