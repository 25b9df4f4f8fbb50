#version 450
// Attention for many query rows (prefill) on the matrix units: flash
// attention with its two products on NVIDIA's VK_NV_cooperative_matrix
// (fp16 x fp16 -> f32 fragments of 16 x 16 x 16), the softmax in f32.
// vk_attention.c chooses it over attn_prefill.comp where the device has the
// fragments and the node fits (float K and V, no f64); the semantics are
// attn_prefill.comp's: causal and window relative to the query position
// T - S + i, GQA by index, bool or additive float mask, a row with no
// visible key is zeros.
//
// Workgroup (x, y, z) = (BR = 16 NSG query rows, query head h, batch b):
// NSG subgroups, each owning 16 of the rows. Q's tile (scaled) is staged
// once as fp16; each tile of BC keys of h's KV head is staged as fp16 into
// shared memory by the whole workgroup, then each subgroup on its own:
//   S = Q K^T          BC / 16 fragments, D / 16 products each, stored to sS
//   online softmax     a lane per row: running max m and sum l (f32), the
//                      weights P rounded to fp16 (l sums the rounded ones,
//                      so the output is an exact convex mix of them)
//   O = alpha O        O's fragments through sS, each row scaled by the
//                      factor exp(m_old - m_new) (fragments have no row
//                      access of their own)
//   O += P V           DV / 16 fragments, BC / 16 products each
// and at the end O / l goes out in Q's dtype. Head dims are zero-padded
// to multiples of 16 in shared memory.
//
// fp16 operands: Q * scale, K, V and P are rounded to fp16 once each;
// values beyond fp16's range saturate at +-65504 and NaN becomes 0 as they
// are staged, so that a hidden key's row (padding, garbage) cannot turn
// into inf * 0 = NaN in a product it does not count in. (attn_prefill.comp
// skips such rows; here every staged row meets every query row.)
//
// VKL_COOPMAT_EMULATED (the _emu build, for tests): the same body with each
// fragment's load, product and store done by its subgroup's invocations in
// plain f32 on the same shared arrays, offsets and strides (coopMatLoadNV's
// meaning; element x of a 16 x 16 accumulator held by lane x % LANES), so a
// device without cooperative matrices (lavapipe) runs everything else.
#ifndef VKL_COOPMAT_EMULATED
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require
#include "kv_common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128;       // NSG subgroups of the device's size
layout(constant_id = 1) const uint NSG = 4;        // subgroups: 16 query rows each
layout(constant_id = 2) const uint BC = 32;        // keys per tile, a multiple of 16
layout(constant_id = 3) const uint D = 64;         // Q/K head dim
layout(constant_id = 4) const uint DV = 64;        // V head dim
layout(constant_id = 5) const uint DTS = 0x41041u; // dtypes: Q | K << 6 | V << 12 | mask << 18 (0: none)
layout(constant_id = 6) const uint FLAGS = 0;      // bit 0: kv_layout 1

const uint QDT = DTS & 63u, KDT = (DTS >> 6) & 63u, VDT = (DTS >> 12) & 63u, MDT = (DTS >> 18) & 63u;
const uint F = 16u;                                // fragment side
const uint BR = NSG * F;
const uint DF = (D + F - 1u) / F, DVF = (DV + F - 1u) / F, BCF = BC / F; // fragments along D, Dv, keys
const uint D8 = DF * 2u, DV8 = DVF * 2u, BC8 = BC / 8u; // uvec4s (8 halves) in a padded row
// Row strides in uvec4s: a row and one more, so rows start in different banks.
const uint SQ = D8 + 1u, SV = DV8 + 1u, SP = BC8 + 1u;
const uint LANES = WG / NSG;

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
    uint scale_lo, scale_hi;    // f32 bits (lo)
    uint msb, msh, msi, msj;    // the mask's element strides over [B, Hq, S, T]
} pc;

shared uvec4 sQ[BR * SQ];   // [row][d] fp16, Q * scale
shared uvec4 sK[BC * SQ];   // [key][d] fp16: K^T read column-major
shared uvec4 sV[BC * SV];   // [key][dv] fp16
shared uvec4 sP[BR * SP];   // [row][key] fp16 weights
shared float sS[BR * BC];   // a subgroup's 16 x BC scores; then its 16 x 16 staging for O
shared float sM[BR], sL[BR], sA[BR]; // per row: running max, sum (0: nothing seen), O's factor

// 8 consecutive values as fp16 (saturated, NaN as 0: the header says why).
uint half2_sat(float a, float b) {
    const vec2 v = vec2(isnan(a) ? 0.0 : a, isnan(b) ? 0.0 : b);
    return packHalf2x16(clamp(v, vec2(-65504.0), vec2(65504.0)));
}
uvec4 halves8(vec4 x, vec4 y) {
    return uvec4(half2_sat(x.x, x.y), half2_sat(x.z, x.w), half2_sat(y.x, y.y), half2_sat(y.z, y.w));
}

// Elements [e, e + 4) of a K (or V) row of width n, zeros past it.
#define KV4(NAME, dt, row, n, e)                                                                        \
    ((n) % 4u == 0u ? ((e) < (n) ? vec4(NAME##_value4(dt, row, n, e, 1.0)) : vec4(0.0))                \
                    : vec4((e) < (n) ? float(NAME##_value(dt, row, n, e, 1.0)) : 0.0,                  \
                           (e) + 1u < (n) ? float(NAME##_value(dt, row, n, (e) + 1u, 1.0)) : 0.0,      \
                           (e) + 2u < (n) ? float(NAME##_value(dt, row, n, (e) + 2u, 1.0)) : 0.0,      \
                           (e) + 3u < (n) ? float(NAME##_value(dt, row, n, (e) + 3u, 1.0)) : 0.0))

#ifdef VKL_COOPMAT_EMULATED
const uint EL = (F * F + LANES - 1u) / LANES; // elements of one accumulator per invocation

float half_at(uvec4 v, uint k) { return unpackHalf2x16(v[k / 2u] >> (16u * (k % 2u))).x; }

// c += Q's 16 x 16 fragment at sQ[a] times K^T's at sK[k] (column-major:
// element (d, n) at half d of key row n); strides SQ.
void emu_qk(inout float c[EL], uint a, uint k, uint lane) {
    [[dont_unroll]] for (uint q = 0u; q < EL; q++) {
        const uint x = lane + q * LANES, r = x / F, n = x % F;
        if (x < F * F)
            [[dont_unroll]] for (uint d = 0u; d < F; d++)
                c[q] += half_at(sQ[a + r * SQ + d / 8u], d % 8u) * half_at(sK[k + n * SQ + d / 8u], d % 8u);
    }
}
// c += P's fragment at sP[a] (stride SP) times V's at sV[v] (row-major: element (j, n) at half n of row j; stride SV).
void emu_pv(inout float c[EL], uint a, uint v, uint lane) {
    [[dont_unroll]] for (uint q = 0u; q < EL; q++) {
        const uint x = lane + q * LANES, r = x / F, n = x % F;
        if (x < F * F)
            [[dont_unroll]] for (uint j = 0u; j < F; j++)
                c[q] += half_at(sP[a + r * SP + j / 8u], j % 8u) * half_at(sV[v + j * SV + n / 8u], n % 8u);
    }
}
// coopMatStoreNV(c, sS, base, stride, false) / coopMatLoadNV(c, sS, base, stride, false)
void emu_store(float c[EL], uint base, uint stride, uint lane) {
    [[dont_unroll]] for (uint q = 0u; q < EL; q++) {
        const uint x = lane + q * LANES;
        if (x < F * F) sS[base + (x / F) * stride + x % F] = c[q];
    }
}
void emu_load(out float c[EL], uint base, uint stride, uint lane) {
    [[dont_unroll]] for (uint q = 0u; q < EL; q++) {
        const uint x = lane + q * LANES;
        c[q] = x < F * F ? sS[base + (x / F) * stride + x % F] : 0.0;
    }
}
#define ACC float[EL]
#else
#define ACC fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
#endif

void subgroup_sync() {
    subgroupMemoryBarrierShared();
    subgroupBarrier();
}

void main() {
    const uint tid = gl_LocalInvocationIndex;
    const uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
    const uint i0 = gl_WorkGroupID.x * BR, h = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
    const uint g = h / (pc.Hq / pc.Hkv);
    const bool layout1 = (FLAGS & 1u) != 0u;
    const float scale = uintBitsToFloat(pc.scale_lo);

    // Q's tile, scaled, as fp16 rows (zeros past D and past S)
    for (uint idx = tid; idx < BR * D8; idx += WG) {
        const uint r = idx / D8, u = idx % D8, i = i0 + r;
        float x[8];
        for (uint e = 0u; e < 8u; e++) {
            const uint d = 8u * u + e;
            x[e] = i < pc.S && d < D ? Qb_f(QDT, ((b * pc.Hq + h) * pc.S + i) * D + d) * scale : 0.0;
        }
        sQ[r * SQ + u] = halves8(vec4(x[0], x[1], x[2], x[3]), vec4(x[4], x[5], x[6], x[7]));
    }

    // keys any row of the tile may see: [lo, hi)
    const int pmin = int(i0) + int(pc.T) - int(pc.S), pmax = int(min(i0 + BR, pc.S)) - 1 + int(pc.T) - int(pc.S);
    const int lo = pc.window > 0 ? max(0, pmin - pc.window + 1) : 0;
    const int hi = pc.causal != 0 ? min(int(pc.T), pmax + 1) : int(pc.T);

    const uint row0 = sg * F;      // this subgroup's first row in the tile
    const uint srow = sg * F * BC; // and its scores' (then staging's) place in sS
    for (uint rr = lane; rr < F; rr += LANES) { // each row's state is its own lane's (subgroup-ordered)
        sM[row0 + rr] = 0.0;
        sL[row0 + rr] = 0.0;
    }
    ACC o[DVF];
#ifdef VKL_COOPMAT_EMULATED
    for (uint f = 0u; f < DVF; f++)
        for (uint q = 0u; q < EL; q++) o[f][q] = 0.0;
#else
    for (uint f = 0u; f < DVF; f++) o[f] = ACC(0.0);
#endif

    for (int j0 = lo; j0 < hi; j0 += int(BC)) {
        barrier(); // Q and the row state staged / the previous tile's readers done
        for (uint idx = tid; idx < BC * D8; idx += WG) {
            const uint jj = idx / D8, u = idx % D8;
            const int j = j0 + int(jj);
            uvec4 v = uvec4(0u);
            if (j < hi) {
                const uint row = vkl_kv_row(layout1, pc.B, pc.Hkv, pc.T, b, g, uint(j));
                v = halves8(KV4(Kb, KDT, row, D, 8u * u), KV4(Kb, KDT, row, D, 8u * u + 4u));
            }
            sK[jj * SQ + u] = v;
        }
        for (uint idx = tid; idx < BC * DV8; idx += WG) {
            const uint jj = idx / DV8, u = idx % DV8;
            const int j = j0 + int(jj);
            uvec4 v = uvec4(0u);
            if (j < hi) {
                const uint row = vkl_kv_row(layout1, pc.B, pc.Hkv, pc.T, b, g, uint(j));
                v = halves8(KV4(Vb, VDT, row, DV, 8u * u), KV4(Vb, VDT, row, DV, 8u * u + 4u));
            }
            sV[jj * SV + u] = v;
        }
        barrier();

        // S = Q K^T for this subgroup's rows
        for (uint n = 0u; n < BCF; n++) {
#ifdef VKL_COOPMAT_EMULATED
            float s[EL];
            for (uint q = 0u; q < EL; q++) s[q] = 0.0;
            for (uint kk = 0u; kk < DF; kk++) emu_qk(s, row0 * SQ + 2u * kk, n * F * SQ + 2u * kk, lane);
            emu_store(s, srow + n * F, BC, lane);
#else
            ACC s = ACC(0.0);
            for (uint kk = 0u; kk < DF; kk++) {
                fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fq, fk;
                coopMatLoadNV(fq, sQ, row0 * SQ + 2u * kk, SQ, false);
                coopMatLoadNV(fk, sK, n * F * SQ + 2u * kk, SQ, true);
                s = coopMatMulAddNV(fq, fk, s);
            }
            coopMatStoreNV(s, sS, srow + n * F, BC, false);
#endif
        }
        subgroup_sync();

        // online softmax: a lane per row
        for (uint rr = lane; rr < F; rr += LANES) {
            const uint r = row0 + rr, i = i0 + r;
            const int p = int(i) + int(pc.T) - int(pc.S); // the query's position among the keys
            bool any = false;
            float mt = 0.0;
            for (uint jj = 0u; jj < BC; jj++) {
                const int j = j0 + int(jj);
                bool vis = i < pc.S && j < hi && (pc.causal == 0u || j <= p) && (pc.window <= 0 || p - j < pc.window);
                if (vis && MDT == VKL_DT_BOOL)
                    vis = Mb_i(MDT, b * pc.msb + h * pc.msh + i * pc.msi + uint(j) * pc.msj) != 0;
                float s = vkl_neg_inf_f();
                if (vis) {
                    s = sS[srow + rr * BC + jj];
                    if (MDT != 0u && MDT != VKL_DT_BOOL)
                        s += Mb_f(MDT, b * pc.msb + h * pc.msh + i * pc.msi + uint(j) * pc.msj);
                }
                sS[srow + rr * BC + jj] = s;
                if (!vkl_is_neg_inf_f(s)) {
                    mt = any ? max(mt, s) : s;
                    any = true;
                }
            }
            const float m = sM[r], l = sL[r];
            const bool seen = l > 0.0;
            const float mn = !any ? m : seen ? max(m, mt) : mt;
            const float alpha = !any ? 1.0 : seen ? vkl_exp(m - mn) : 0.0;
            float ln = l * alpha;
            for (uint u = 0u; u < BC8; u++) {
                uint w[4];
                for (uint e = 0u; e < 4u; e++) {
                    vec2 pw = vec2(0.0);
                    for (uint t = 0u; t < 2u; t++) {
                        const float s = sS[srow + rr * BC + 8u * u + 2u * e + t];
                        pw[t] = any && !vkl_is_neg_inf_f(s) ? vkl_exp(s - mn) : 0.0;
                    }
                    w[e] = packHalf2x16(pw);
                    const vec2 rounded = unpackHalf2x16(w[e]);
                    ln += rounded.x + rounded.y;
                }
                sP[r * SP + u] = uvec4(w[0], w[1], w[2], w[3]);
            }
            sM[r] = mn;
            sL[r] = ln;
            sA[r] = alpha;
        }
        subgroup_sync();

        // O = alpha O, row by row through this subgroup's staging (sS)
        for (uint f = 0u; f < DVF; f++) {
#ifdef VKL_COOPMAT_EMULATED
            emu_store(o[f], srow, F, lane);
#else
            coopMatStoreNV(o[f], sS, srow, F, false);
#endif
            subgroup_sync();
            for (uint x = lane; x < F * F; x += LANES) sS[srow + x] *= sA[row0 + x / F];
            subgroup_sync();
#ifdef VKL_COOPMAT_EMULATED
            emu_load(o[f], srow, F, lane);
#else
            coopMatLoadNV(o[f], sS, srow, F, false);
#endif
            subgroup_sync(); // read before the next fragment overwrites it
        }

        // O += P V
        for (uint kk = 0u; kk < BCF; kk++) {
#ifdef VKL_COOPMAT_EMULATED
            for (uint f = 0u; f < DVF; f++) emu_pv(o[f], row0 * SP + 2u * kk, kk * F * SV + 2u * f, lane);
#else
            fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fp;
            coopMatLoadNV(fp, sP, row0 * SP + 2u * kk, SP, false);
            for (uint f = 0u; f < DVF; f++) {
                fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fv;
                coopMatLoadNV(fv, sV, kk * F * SV + 2u * f, SV, false);
                o[f] = coopMatMulAddNV(fp, fv, o[f]);
            }
#endif
        }
    }

    // out: O / l (a row that saw no key: zeros)
    subgroup_sync();
    for (uint rr = lane; rr < F; rr += LANES) {
        const float l = sL[row0 + rr];
        sA[row0 + rr] = l > 0.0 ? 1.0 / l : 0.0;
    }
    for (uint f = 0u; f < DVF; f++) {
        subgroup_sync();
#ifdef VKL_COOPMAT_EMULATED
        emu_store(o[f], srow, F, lane);
#else
        coopMatStoreNV(o[f], sS, srow, F, false);
#endif
        subgroup_sync();
        for (uint x = lane; x < F * F / 2u; x += LANES) {
            const uint rr = x / (F / 2u), c = f * F + 2u * (x % (F / 2u)), i = i0 + row0 + rr;
            if (i < pc.S && c < DV) {
                const float inv = sA[row0 + rr];
                Ob_store2(QDT, ((b * pc.Hq + h) * pc.S + i) * DV + c, sS[srow + rr * F + c - f * F] * inv,
                          sS[srow + rr * F + c + 1u - f * F] * inv, c + 1u < DV);
            }
        }
    }
}
