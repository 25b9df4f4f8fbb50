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
// Workgroup (x, y, z) = (BR = 16 NSG query rows, query head h, batch b),
// the query tiles in reverse order (under a causal mask the last rows see
// the most keys: they start first). NSG subgroups, each owning 16 rows. Q's
// tile (scaled, fp16) is staged once and each subgroup keeps its rows'
// fragments in registers; then for each tile of BC keys of h's KV head,
// staged as fp16 by the whole workgroup (over Q's staging: it is read
// once; for f16 / f32 caches the next tile is loaded into registers while
// this one is worked on: PREFETCH), each subgroup on its own:
//   S = Q K^T          BC / 16 fragments of D / 16 products, stored to sS
//   online softmax     LPR lanes a row (every lane busy): the row's max
//                      over the tile, then the weights P = exp(s - m)
//                      rounded to fp16 (l sums the rounded ones, so the
//                      output is an exact convex mix of them), written
//                      back over the scores as f32
//   O = alpha O        only where some row's reference max m moved (below)
//   O += P V           P's fragments loaded from sS as f32 and converted
// and at the end O / l goes out in Q's dtype. Head dims are zero-padded
// to multiples of 16 in shared memory.
//
// Lazy rescaling: a row's reference max m moves only when the tile's max
// passes it by more than TAU (or at the row's first visible key), so the
// weights are at most e^TAU (2981, far inside fp16) and O, l grow by that
// factor at most; O / l is the same convex mix. Rescaling O costs its
// fragments a round trip through shared memory (fragments have no row
// access), which a subgroup now pays only on the tiles where one of its 16
// rows' maxima moved that far: after the first tile, rarely.
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
// device without cooperative matrices (lavapipe) runs everything else. Its
// products read Q from a staging of its own (a lane holds no row of it).
#ifndef VKL_COOPMAT_EMULATED
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define CM_UNROLL [[unroll]]
#else
#define CM_UNROLL
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
layout(constant_id = 6) const uint FLAGS = 0;      // bit 0: kv_layout 1; bit 1: K and V at 16-byte offsets

const uint QDT = DTS & 63u, KDT = (DTS >> 6) & 63u, VDT = (DTS >> 12) & 63u, MDT = (DTS >> 18) & 63u;
const uint F = 16u;                                // fragment side
const uint BR = NSG * F;
const uint DF = (D + F - 1u) / F, DVF = (DV + F - 1u) / F, BCF = BC / F; // fragments along D, Dv, keys
const uint D8 = DF * 2u, DV8 = DVF * 2u;           // uvec4s (8 halves) in a row
// Row strides in uvec4s: a row and one more, so rows start in different banks.
const uint SQ = D8 + 1u, SV = DV8 + 1u;
const uint SS = BC + 4u;                           // scores' row stride in floats (whole uvec4s)
const uint LANES = WG / NSG;
// The softmax: LPR lanes share a row (keys jj = part + LPR t), a subgroup
// of fewer than 32 lanes takes its rows in PASSES, 2 lanes a row (so that
// every device, lavapipe's 8 lanes too, runs the lanes' exchange).
const uint LPR = LANES >= 2u * F ? LANES / F : 2u;
const uint RPP = LANES / LPR, PASSES = F / RPP, KPL = BC / LPR;
const float TAU = 8.0;                             // e^8 ~ 2981: the weights' bound

VKL_TENSOR_IN(Qb, 0)
VKL_KV_IN(Kb, 1)
VKL_KV_IN(Vb, 2)
VKL_TENSOR_IN(Mb, 3)
// K and V again as uvec4s, for the f16 and f32 caches' rows (PREFETCH)
layout(set = 0, binding = 1, std430) readonly buffer Kb4_t { uvec4 Kb4[]; };
layout(set = 0, binding = 2, std430) readonly buffer Vb4_t { uvec4 Vb4[]; };
layout(set = 0, binding = 4, std430) writeonly buffer Ob_t { uint Ob[]; };
VKL_STORE_PAIR(Ob)

layout(push_constant) uniform Push {
    uint B, Hq, Hkv, S, T;
    uint causal;
    int window;                 // <= 0: none
    uint scale_lo, scale_hi;    // f32 bits (lo)
    uint msb, msh, msi, msj;    // the mask's element strides over [B, Hq, S, T]
} pc;

// K's tile [key][d] (read column-major as K^T) then V's [key][dv], fp16;
// before the first tile, Q's [row][d] (scaled).
const uint KV_SIZE = BC * (SQ + SV), Q_SIZE = BR * SQ;
shared uvec4 sKV[KV_SIZE > Q_SIZE ? KV_SIZE : Q_SIZE];
#ifdef VKL_COOPMAT_EMULATED
shared uvec4 sQ[Q_SIZE];
#endif
shared float sS[BR * SS];       // [row][key]: the scores, then the weights P
shared float sT[NSG * F * F];   // a subgroup's 16 x 16 staging for O
shared float sM[BR], sA[BR];    // per row: reference max, O's factor this tile
shared uint sSeen[BR];          // per row: a visible key seen
shared float sL[BR * LPR];      // per row and lane part: the sum of weights
shared float sRed[BR * LPR];    // per row and lane part: the tile's max

// 8 consecutive values as fp16 (saturated, NaN as 0: the header says why).
uint half2_sat(float a, float b) {
    const vec2 v = vec2(isnan(a) ? 0.0 : a, isnan(b) ? 0.0 : b);
    return packHalf2x16(clamp(v, vec2(-65504.0), vec2(65504.0)));
}
uvec4 halves8(vec4 x, vec4 y) {
    return uvec4(half2_sat(x.x, x.y), half2_sat(x.z, x.w), half2_sat(y.x, y.y), half2_sat(y.z, y.w));
}

// fp16 pairs as half2_sat leaves them: NaN 0, infinities +-65504.
uint h2_sat(uint w) {
    const uvec2 h = uvec2(w & 0xFFFFu, w >> 16);
    const bvec2 special = equal(h & 0x7C00u, uvec2(0x7C00u));
    const bvec2 nan = notEqual(h & 0x03FFu, uvec2(0u));
    uvec2 r = mix(h, (h & 0x8000u) | 0x7BFFu, special);
    r = mix(r, uvec2(0u), bvec2(special.x && nan.x, special.y && nan.y));
    return r.x | (r.y << 16);
}
uvec4 h8_sat(uvec4 x) { return uvec4(h2_sat(x.x), h2_sat(x.y), h2_sat(x.z), h2_sat(x.w)); }
// Unit u (8 elements) of K's (V's) row `row` from the uvec4 views, as
// loaded (x, and y for f32's second half) and as staged fp16.
void k_raw(uint row, uint u, out uvec4 x, out uvec4 y) {
    x = KDT == VKL_DT_F16 ? Kb4[row * (D / 8u) + u] : Kb4[row * (D / 4u) + 2u * u];
    y = KDT == VKL_DT_F16 ? uvec4(0u) : Kb4[row * (D / 4u) + 2u * u + 1u];
}
void v_raw(uint row, uint u, out uvec4 x, out uvec4 y) {
    x = VDT == VKL_DT_F16 ? Vb4[row * (DV / 8u) + u] : Vb4[row * (DV / 4u) + 2u * u];
    y = VDT == VKL_DT_F16 ? uvec4(0u) : Vb4[row * (DV / 4u) + 2u * u + 1u];
}
uvec4 unit_halves(uint dt, uvec4 x, uvec4 y) {
    return dt == VKL_DT_F16 ? h8_sat(x) : halves8(uintBitsToFloat(x), uintBitsToFloat(y));
}

// f16 or f32 caches with rows of whole units of 8 at 16-byte offsets: a
// unit is one uvec4 (f16, its NaN and infinities fixed in the integer
// unit) or two (f32), not eight element reads; and the next tile's K and V
// are loaded into registers (this invocation's KU and VU units, two uvec4s
// each at most) before the current tile's products and stored to shared
// memory after them, so the loads' latency overlaps the work (the grid of
// a 512-token prefill is a few workgroups a compute unit: little else
// hides it). Other caches are staged element by element (KV4).
const bool PREFETCH = (FLAGS & 2u) != 0u && D % 8u == 0u && DV % 8u == 0u &&
                      (KDT == VKL_DT_F16 || KDT == VKL_DT_F32) && (VDT == VKL_DT_F16 || VDT == VKL_DT_F32);
const uint KU = (BC * D8 + WG - 1u) / WG, VU = (BC * DV8 + WG - 1u) / WG;
const uint KR = 2u * KU, VR = 2u * VU;

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

// c += Q's 16 x 16 fragment at sQ[a] times K^T's at sKV[k] (column-major:
// element (d, n) at half d of key row n); strides SQ.
void emu_qk(inout float c[EL], uint a, uint k, uint lane) {
    [[dont_unroll]] for (uint q = 0u; q < EL; q++) {
        const uint x = lane + q * LANES, r = x / F, n = x % F;
        if (x < F * F)
            [[dont_unroll]] for (uint d = 0u; d < F; d++)
                c[q] += half_at(sQ[a + r * SQ + d / 8u], d % 8u) * half_at(sKV[k + n * SQ + d / 8u], d % 8u);
    }
}
// c += P's fragment at sS[a] (f32, already fp16 values; stride SS) times
// V's at sKV[v] (row-major: element (j, n) at half n of row j; stride SV).
void emu_pv(inout float c[EL], uint a, uint v, uint lane) {
    [[dont_unroll]] for (uint q = 0u; q < EL; q++) {
        const uint x = lane + q * LANES, r = x / F, n = x % F;
        if (x < F * F)
            [[dont_unroll]] for (uint j = 0u; j < F; j++)
                c[q] += sS[a + r * SS + j] * half_at(sKV[v + j * SV + n / 8u], n % 8u);
    }
}
// coopMatStoreNV(c, sS or sT, base, stride, false) / coopMatLoadNV(c, sT, base, F, false)
void emu_store_s(float c[EL], uint base, uint lane) {
    [[dont_unroll]] for (uint q = 0u; q < EL; q++) {
        const uint x = lane + q * LANES;
        if (x < F * F) sS[base + (x / F) * SS + x % F] = c[q];
    }
}
void emu_store_t(float c[EL], uint base, uint lane) {
    [[dont_unroll]] for (uint q = 0u; q < EL; q++) {
        const uint x = lane + q * LANES;
        if (x < F * F) sT[base + x] = c[q];
    }
}
void emu_load_t(out float c[EL], uint base, uint lane) {
    [[dont_unroll]] for (uint q = 0u; q < EL; q++) {
        const uint x = lane + q * LANES;
        c[q] = x < F * F ? sT[base + x] : 0.0;
    }
}
#define ACC float[EL]
#else
#define ACC fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
#define HALF fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#endif

void subgroup_sync() {
    subgroupMemoryBarrierShared();
    subgroupBarrier();
}

// O's fragments through this subgroup's staging: out[f] = o[f] with each
// row scaled by sA.
void rescale_o(inout ACC o[DVF], uint row0, uint tbase, uint lane) {
    CM_UNROLL for (uint f = 0u; f < DVF; f++) {
#ifdef VKL_COOPMAT_EMULATED
        emu_store_t(o[f], tbase, lane);
#else
        coopMatStoreNV(o[f], sT, tbase, F, false);
#endif
        subgroup_sync();
        for (uint x = lane; x < F * F; x += LANES) sT[tbase + x] *= sA[row0 + x / F];
        subgroup_sync();
#ifdef VKL_COOPMAT_EMULATED
        emu_load_t(o[f], tbase, lane);
#else
        coopMatLoadNV(o[f], sT, tbase, F, false);
#endif
        subgroup_sync(); // read before the next fragment overwrites it
    }
}

// Tile j0's K and V units of this invocation into registers (PREFETCH).
void fetch_tile(int j0, int hi, uint tid, bool layout1, uint b, uint g, out uvec4 kr[KR], out uvec4 vr[VR]) {
    CM_UNROLL for (uint t = 0u; t < KU; t++) {
        const uint idx = t * WG + tid, jj = idx / D8, u = idx % D8;
        const int j = j0 + int(jj);
        kr[2u * t] = kr[2u * t + 1u] = uvec4(0u);
        if (idx < BC * D8 && j < hi && u < D / 8u) // (units past D: zeros, where D % 16 == 8)
            k_raw(vkl_kv_row(layout1, pc.B, pc.Hkv, pc.T, b, g, uint(j)), u, kr[2u * t], kr[2u * t + 1u]);
    }
    CM_UNROLL for (uint t = 0u; t < VU; t++) {
        const uint idx = t * WG + tid, jj = idx / DV8, u = idx % DV8;
        const int j = j0 + int(jj);
        vr[2u * t] = vr[2u * t + 1u] = uvec4(0u);
        if (idx < BC * DV8 && j < hi && u < DV / 8u)
            v_raw(vkl_kv_row(layout1, pc.B, pc.Hkv, pc.T, b, g, uint(j)), u, vr[2u * t], vr[2u * t + 1u]);
    }
}
// ... and from registers into the staged tile (keys past hi: zeros).
void put_tile(uint tid, uvec4 kr[KR], uvec4 vr[VR]) {
    CM_UNROLL for (uint t = 0u; t < KU; t++) {
        const uint idx = t * WG + tid;
        if (idx < BC * D8) sKV[(idx / D8) * SQ + idx % D8] = unit_halves(KDT, kr[2u * t], kr[2u * t + 1u]);
    }
    CM_UNROLL for (uint t = 0u; t < VU; t++) {
        const uint idx = t * WG + tid;
        if (idx < BC * DV8) sKV[BC * SQ + (idx / DV8) * SV + idx % DV8] = unit_halves(VDT, vr[2u * t], vr[2u * t + 1u]);
    }
}

void main() {
    const uint tid = gl_LocalInvocationIndex;
    const uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
    const uint i0 = (gl_NumWorkGroups.x - 1u - gl_WorkGroupID.x) * BR, h = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
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
#ifdef VKL_COOPMAT_EMULATED
        sQ[r * SQ + u] = halves8(vec4(x[0], x[1], x[2], x[3]), vec4(x[4], x[5], x[6], x[7]));
#else
        sKV[r * SQ + u] = halves8(vec4(x[0], x[1], x[2], x[3]), vec4(x[4], x[5], x[6], x[7]));
#endif
    }

    // keys any row of the tile may see: [lo, hi)
    const int shift = int(pc.T) - int(pc.S); // a query row's position among the keys, less its index
    const int pmin = int(i0) + shift, pmax = int(min(i0 + BR, pc.S)) - 1 + shift;
    const int lo = pc.window > 0 ? max(0, pmin - pc.window + 1) : 0;
    const int hi = pc.causal != 0u ? min(int(pc.T), pmax + 1) : int(pc.T);

    const uint row0 = sg * F;   // this subgroup's first row in the tile
    const uint tbase = sg * F * F;
    // the subgroup's rows: [sg_first, sg_last] positions, whether all are real rows
    const int sg_first = int(i0 + row0) + shift, sg_last = int(i0 + row0 + F - 1u) + shift;
    const bool sg_rows_real = i0 + row0 + F <= pc.S;
    for (uint rr = lane; rr < F; rr += LANES) {
        sM[row0 + rr] = 0.0;
        sSeen[row0 + rr] = 0u;
        for (uint part = 0u; part < LPR; part++) sL[(row0 + rr) * LPR + part] = 0.0;
    }
    ACC o[DVF];
#ifdef VKL_COOPMAT_EMULATED
    for (uint f = 0u; f < DVF; f++)
        for (uint q = 0u; q < EL; q++) o[f][q] = 0.0;
#else
    CM_UNROLL for (uint f = 0u; f < DVF; f++) o[f] = ACC(0.0);
    barrier(); // Q staged
    HALF fq[DF];
    CM_UNROLL for (uint kk = 0u; kk < DF; kk++) coopMatLoadNV(fq[kk], sKV, row0 * SQ + 2u * kk, SQ, false);
#endif

    uvec4 kr[KR], vr[VR];
    if (PREFETCH && lo < hi) fetch_tile(lo, hi, tid, layout1, b, g, kr, vr);
    for (int j0 = lo; j0 < hi; j0 += int(BC)) {
        barrier(); // Q's fragments loaded / the previous tile's readers done
        if (PREFETCH) put_tile(tid, kr, vr);
        else {
        for (uint idx = tid; idx < BC * D8; idx += WG) {
            const uint jj = idx / D8, u = idx % D8;
            const int j = j0 + int(jj);
            uvec4 v = uvec4(0u);
            if (j < hi) {
                const uint row = vkl_kv_row(layout1, pc.B, pc.Hkv, pc.T, b, g, uint(j));
                v = halves8(KV4(Kb, KDT, row, D, 8u * u), KV4(Kb, KDT, row, D, 8u * u + 4u));
            }
            sKV[jj * SQ + u] = v;
        }
        for (uint idx = tid; idx < BC * DV8; idx += WG) {
            const uint jj = idx / DV8, u = idx % DV8;
            const int j = j0 + int(jj);
            uvec4 v = uvec4(0u);
            if (j < hi) {
                const uint row = vkl_kv_row(layout1, pc.B, pc.Hkv, pc.T, b, g, uint(j));
                v = halves8(KV4(Vb, VDT, row, DV, 8u * u), KV4(Vb, VDT, row, DV, 8u * u + 4u));
            }
            sKV[BC * SQ + jj * SV + u] = v;
        }
        }
        barrier();
        if (PREFETCH && j0 + int(BC) < hi) fetch_tile(j0 + int(BC), hi, tid, layout1, b, g, kr, vr);

        // A subgroup none of whose rows sees a key of this tile skips it
        // (uniform in the subgroup: the rows' positions bound it).
        if (pc.causal != 0u && j0 > sg_last) continue;
        if (pc.window > 0 && sg_first - (j0 + int(BC) - 1) >= pc.window) continue;
        if (i0 + row0 >= pc.S) continue;
        // every key of the tile visible to every row: no per-key test
        const bool full = MDT == 0u && sg_rows_real && j0 + int(BC) <= hi &&
                          (pc.causal == 0u || j0 + int(BC) - 1 <= sg_first) &&
                          (pc.window <= 0 || sg_last - j0 < pc.window);

        // S = Q K^T for this subgroup's rows
        CM_UNROLL for (uint n = 0u; n < BCF; n++) {
#ifdef VKL_COOPMAT_EMULATED
            float s[EL];
            for (uint q = 0u; q < EL; q++) s[q] = 0.0;
            for (uint kk = 0u; kk < DF; kk++) emu_qk(s, row0 * SQ + 2u * kk, n * F * SQ + 2u * kk, lane);
            emu_store_s(s, row0 * SS + n * F, lane);
#else
            ACC s = ACC(0.0);
            CM_UNROLL for (uint kk = 0u; kk < DF; kk++) {
                HALF fk;
                coopMatLoadNV(fk, sKV, n * F * SQ + 2u * kk, SQ, true);
                s = coopMatMulAddNV(fq[kk], fk, s);
            }
            coopMatStoreNV(s, sS, row0 * SS + n * F, SS, false);
#endif
        }
        subgroup_sync();

        // online softmax: LPR lanes a row, keys part, part + LPR, ...
        [[dont_unroll]] for (uint pass = 0u; pass < PASSES; pass++) {
            const uint rr = lane / LPR + pass * RPP, part = lane % LPR;
            const uint r = row0 + rr, i = i0 + r;
            const int p = int(i) + shift;
            float sv[KPL];
            bool any = false;
            float mt = 0.0;
            CM_UNROLL for (uint t = 0u; t < KPL; t++) {
                const uint jj = part + LPR * t;
                const int j = j0 + int(jj);
                bool vis = full || (i < pc.S && j < hi && (pc.causal == 0u || j <= p) &&
                                    (pc.window <= 0 || p - j < pc.window));
                if (!full && vis && MDT == VKL_DT_BOOL)
                    vis = Mb_i(MDT, b * pc.msb + h * pc.msh + i * pc.msi + uint(j) * pc.msj) != 0;
                float s = vkl_neg_inf_f();
                if (vis) {
                    s = sS[r * SS + jj];
                    if (MDT != 0u && MDT != VKL_DT_BOOL)
                        s += Mb_f(MDT, b * pc.msb + h * pc.msh + i * pc.msi + uint(j) * pc.msj);
                }
                sv[t] = s;
                if (!vkl_is_neg_inf_f(s)) {
                    mt = any ? max(mt, s) : s;
                    any = true;
                }
            }
            if (LPR > 1u) { // the row's max over its lanes' parts
                sRed[r * LPR + part] = any ? mt : vkl_neg_inf_f();
                subgroup_sync();
                any = false;
                for (uint q = 0u; q < LPR; q++) {
                    const float x = sRed[r * LPR + q];
                    if (!vkl_is_neg_inf_f(x)) {
                        mt = any ? max(mt, x) : x;
                        any = true;
                    }
                }
            }
            const float m = sM[r];
            const bool seen = sSeen[r] != 0u;
            // the reference max moves at the first visible key and when passed by more than TAU
            const bool move = any && (!seen || mt > m + TAU);
            const float mn = move ? mt : m;
            const float alpha = move && seen ? vkl_exp(m - mn) : 1.0;
            float ln = sL[r * LPR + part] * alpha;
            CM_UNROLL for (uint t = 0u; t < KPL; t++) {
                const float s = sv[t];
                const float w = vkl_is_neg_inf_f(s) ? 0.0 : unpackHalf2x16(packHalf2x16(vec2(vkl_exp(s - mn), 0.0))).x;
                ln += w;
                sS[r * SS + part + LPR * t] = w;
            }
            sL[r * LPR + part] = ln;
            if (LPR > 1u) subgroup_sync(); // every part read sM / sSeen before they change
            if (part == 0u) {
                sM[r] = mn;
                sSeen[r] = any || seen ? 1u : 0u;
                sA[r] = alpha;
            }
        }
        subgroup_sync();

        // O = alpha O where a row's reference max moved (the same test in every lane)
        bool moved = false;
        for (uint rr = 0u; rr < F; rr++) moved = moved || sA[row0 + rr] != 1.0;
        if (moved) rescale_o(o, row0, tbase, lane);

        // O += P V
        CM_UNROLL for (uint kk = 0u; kk < BCF; kk++) {
#ifdef VKL_COOPMAT_EMULATED
            for (uint f = 0u; f < DVF; f++) emu_pv(o[f], row0 * SS + kk * F, BC * SQ + kk * F * SV + 2u * f, lane);
#else
            ACC pf;
            coopMatLoadNV(pf, sS, row0 * SS + kk * F, SS, false);
            const HALF fp = HALF(pf);
            CM_UNROLL for (uint f = 0u; f < DVF; f++) {
                HALF fv;
                coopMatLoadNV(fv, sKV, BC * SQ + kk * F * SV + 2u * f, SV, false);
                o[f] = coopMatMulAddNV(fp, fv, o[f]);
            }
#endif
        }
    }

    // out: O / l (a row that saw no key: zeros)
    subgroup_sync();
    for (uint rr = lane; rr < F; rr += LANES) {
        float l = 0.0;
        for (uint part = 0u; part < LPR; part++) l += sL[(row0 + rr) * LPR + part];
        sA[row0 + rr] = l > 0.0 ? 1.0 / l : 0.0;
    }
    CM_UNROLL for (uint f = 0u; f < DVF; f++) {
        subgroup_sync();
#ifdef VKL_COOPMAT_EMULATED
        emu_store_t(o[f], tbase, lane);
#else
        coopMatStoreNV(o[f], sT, tbase, F, false);
#endif
        subgroup_sync();
        for (uint x = lane; x < F * F / 2u; x += LANES) {
            const uint rr = x / (F / 2u), c = f * F + 2u * (x % (F / 2u)), i = i0 + row0 + rr;
            if (i < pc.S && c < DV) {
                const float inv = sA[row0 + rr];
                Ob_store2(QDT, ((b * pc.Hq + h) * pc.S + i) * DV + c, sT[tbase + rr * F + c - f * F] * inv,
                          sT[tbase + rr * F + c + 1u - f * F] * inv, c + 1u < DV);
            }
        }
    }
}
