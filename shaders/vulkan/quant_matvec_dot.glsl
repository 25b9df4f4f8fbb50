// The integer-dot matrix-vector body (the _dot builds of
// quant_matvec_{e0m4,int4,int8}.comp, VKL_DOT):
//   Y[m, n] = sum_k A[m, k] * w(n, k)  (+ bias[n]),
// A read as the int8 codes quant_act_int8.comp made of it (quant_act.glsl:
// per step of QV_CHUNK activations x ~ scale * (ia * 254 + ib)), W in the
// GPU packed layout (engine/quant/pack_gpu.c). The including file defines
// QV_CHUNK and, per 16-byte step w of a row with its group's param p,
//   int qv_dot_raw(uvec4 w, uint ia[QV_CHUNK / 4])  sum_k ia_k q_k, exact,
//       from packed 4 x 8-bit dot products (q the codes as stored);
//   int qv_dot_zero(uint p)      the codes' offset z (0: none), so that
//       sum_k ia_k (q_k - z) = raw - z * sum_k ia_k;
//   float qv_dot_scale(uint p)   what turns (q - z) into the weight.
// A step then adds
//   float(raw(ia) * 254 + raw(ib) - z * isum) * scale * qv_dot_scale(p)
// to its row's sum: the integers are exact in int32 (|raw| < 2^19, isum
// < 2^20), so the step's result is exactly sum_k x'_k w0_k with x' the
// rounded activations, as it was when every workgroup quantized A itself.
//
// Why the quantization is a pass of its own: in decode, K is 2048-8192 and a
// row's weights are a few 16-byte loads per invocation, so quantizing the
// step's activations in every workgroup that reads them (~100 instructions
// per 32 values, N / ROWS times over) and staging them through shared memory
// with barriers cost more than the dot products. Here the loop is loads and
// dot products only: no shared memory, no barrier in it.
//
// Shape: the workgroup's WG invocations form teams of TEAM; a team computes
// ROWS rows of W (the _glu build: ROWS gate rows and the same ROWS rows of
// up) over the whole K, so a workgroup covers TEAMS * ROWS rows. The team
// walks K in blocks of TEAM * UNROLL steps; in a block, lane l takes steps
// c = base + u * TEAM + l (u < UNROLL), so the team reads each row's weights
// contiguously, 16 bytes a lane, and issues all UNROLL * ROWS weight loads
// (and its steps' activation loads) before any arithmetic: bytes in flight
// are what a memory-bound kernel lives on. The team's sums are reduced by
//   TEAM_SG        subgroupAdd alone (the team is a subgroup: the backend
//                  sets it only where every dispatch runs at that subgroup
//                  size), no shared memory, no barrier;
//   TEAM == WG, _sg  subgroupAdd, then the subgroups' sums through shared
//                  memory (one barrier);
//   otherwise      a shared-memory tree within each team (devices without
//                  subgroup arithmetic, or a team of several subgroups).
// Any M works (grid y: each row of A rereads W).
//
// Pieces (backends/vulkan/vk_quant_matmul.c): a W larger than the binding
// limit is bound one row piece at a time, and Y (or the codes) one range of
// rows at a time; qa_off, y_off and bias_off say where this dispatch's first
// row lies in its binding, y_stride is Y's full row.
//
// Fused builds (backends/vulkan/vk_fuse.c decides; docs/vulkan.md, "Fusion"):
//   VKL_FUSE_ADD (_add): Y = (A W^T (+ bias)) + R, R [M, N] at binding 5,
//     summed as the Add kernel would (ew_binary.comp);
//   VKL_FUSE_GLU (_glu): Y = silu(A Wg^T) * (A Wu^T), Wu (same format,
//     shape and group) at bindings 5 and 6: A's codes read once for both.
//   VKL_GLU_CODES (_glu_codes, with VKL_FUSE_GLU): the _glu, and the int8
//     codes of its output for the dot matvecs that read it (the down
//     projection), in its own steps of QV_CHUNK: glu_codes below.
//   VKL_FUSE_QKV (_qkv): up to three matvecs of one A's codes (the Q, K and
//     V projections), sets 1 and 2 at bindings 5-12, each set's rows in
//     teams and workgroups of their own (quant_matvec_qkv.glsl).

layout(local_size_x_id = 0) in;
// The backend sets them all (vk_device.c: tuning); these are placeholders.
layout(constant_id = 0) const uint WG = 64;     // = local_size_x; a power of two
layout(constant_id = 1) const uint ROWS = 4;    // rows per team
layout(constant_id = 2) const uint TEAM = 64;   // invocations per team: a power of two dividing WG
layout(constant_id = 3) const uint UNROLL = 1;  // steps per lane per block
layout(constant_id = 4) const bool TEAM_SG = false;
layout(constant_id = 5) const bool DOT_RESIDUAL = true;

layout(set = 0, binding = 0, std430) readonly buffer BufQA { uvec4 qa4[]; };   // quant_act.glsl
layout(set = 0, binding = 0, std430) readonly buffer BufQM { uvec2 qa2[]; };   // the same bytes: meta
#include "quant_matvec_io.glsl"
#ifdef VKL_GLU_CODES
void qa_put(uint w, uint v) { qo[w] = v; }
#define VKL_QA_WRITE
#endif
#include "quant_act.glsl"

layout(push_constant) uniform Push {
    uint M, N;
    uint steps;            // KQ / QV_CHUNK: uvec4s per row of W, steps per row of codes
    uint steps_per_group;  // group / QV_CHUNK: each uvec4 lies in one group
    uint has_bias;
    uint qa_off;           // the first row's codes, in uvec4s of their binding
    uint qa_stride;        // uvec4s per row of codes
    uint y_off, y_stride, bias_off;
    QMV_FUSE_PUSH
} pc;

const uint VEC = QV_CHUNK / 4u;  // words of codes per step
const uint TEAMS = WG / TEAM;
const uint BLOCK = TEAM * UNROLL;
#ifdef VKL_FUSE_GLU
const uint NR = 2u * ROWS;  // sums per team: ROWS gate rows, then the same ROWS rows of up
uvec4 qv_load(uint r, uint i) { return r < ROWS ? qs[i] : qs_up[i]; }
uint qv_param(uint r, uint i) { return r < ROWS ? params[i] : params_up[i]; }
#define QV_ROW(r) ((r) < ROWS ? (r) : (r) - ROWS)
#elif defined(VKL_FUSE_QKV)
const uint NR = ROWS;
#include "quant_matvec_qkv.glsl"
#define QV_ROW(r) (r)
#else
const uint NR = ROWS;
uvec4 qv_load(uint r, uint i) { return qs[i]; }
uint qv_param(uint r, uint i) { return params[i]; }
#define QV_ROW(r) (r)
#endif
shared float partial[TEAM_SG ? 1u : NR * WG];
#include "quant_matvec_reduce.glsl"

// Row r's sum of this lane's team: after subgroupAdd every lane holds all
// rows; pick lane's own without indexing the array by a variable.
float pick(float acc[NR], uint r) {
    float v = acc[0];
    for (uint i = 1u; i < NR; i++)
        if (i == r) v = acc[i];
    return v;
}

void store(uint m, uint n, float v, float up) {
    const uint at = pc.y_off + m * pc.y_stride + n;
#if defined(VKL_FUSE_QKV)
    qkv_store(m, n, v);
#elif defined(VKL_FUSE_GLU)
    y[at] = v / (1.0 + vkl_exp(-v)) * up;  // ew_binary.comp's SiluMul
#else
    v += pc.has_bias != 0u ? bias[pc.bias_off + n] : 0.0;
#ifdef VKL_FUSE_ADD
    y[at] = v + res[at];
#else
    y[at] = v;
#endif
#endif
}

#ifdef VKL_GLU_CODES
// A step of the codes is QV_CHUNK consecutive rows of Y, more (or fewer)
// than a workgroup's TEAMS * ROWS, so it completes where its last rows
// land: each workgroup makes its stores visible, then counts its rows of
// every step it touches into that step's counter (row m of A: counters
// m * steps ..); the one whose rows complete a step reads the step back
// and quantizes it as quant_act_int8.comp would have (qa_quantize_step,
// the same values: bit for bit), then sets the counter back to 0 for the
// next replay (attn_decode_sg.comp's FOLD, one invocation per step here).
// N is a whole number of steps (vk_fuse.c checks).
void glu_codes(uint m, uint tid) {
    const uint lo = gl_WorkGroupID.x * TEAMS * ROWS, hi = min(lo + TEAMS * ROWS, pc.N);
    const uint steps = pc.N / QV_CHUNK, s0 = lo / QV_CHUNK;
    memoryBarrierBuffer();
    barrier();
    for (uint s = s0 + tid; s * QV_CHUNK < hi; s += WG) {
        const uint mine = min(hi, (s + 1u) * QV_CHUNK) - max(lo, s * QV_CHUNK);
        const uint at = m * steps + s;
        if (atomicAdd(cnt[at], mine) + mine != QV_CHUNK) continue;
        memoryBarrierBuffer();
        const uint y0 = pc.y_off + m * pc.y_stride + s * QV_CHUNK;
        vec4 x[QA_VEC];
        for (uint i = 0u; i < QA_VEC; i++)
            x[i] = vec4(y[y0 + 4u * i], y[y0 + 4u * i + 1u], y[y0 + 4u * i + 2u], y[y0 + 4u * i + 3u]);
        qa_quantize_step(m * pc.qo_stride, steps, s, x, DOT_RESIDUAL);
        cnt[at] = 0u;
    }
}
#endif

void main() {
    const uint tid = gl_LocalInvocationID.x;
#ifdef VKL_SUBGROUP
    // a team of one subgroup is that subgroup, however the device lays them out
    const uint team = TEAM_SG ? gl_SubgroupID : tid / TEAM, lane = TEAM_SG ? gl_SubgroupInvocationID : tid % TEAM;
#else
    const uint team = tid / TEAM, lane = tid % TEAM;
#endif
#ifdef VKL_FUSE_QKV
    uint N;
    const uint n0 = (qkv_pick(N) * TEAMS + team) * ROWS;
#else
    const uint N = pc.N;
    const uint n0 = (gl_WorkGroupID.x * TEAMS + team) * ROWS;
#endif
    const uint m = gl_WorkGroupID.y;
    const uint steps = pc.steps;
    const uint groups = steps / pc.steps_per_group;  // params per row of W
    const uint row = pc.qa_off + m * pc.qa_stride;
    const uint ib0 = qa_ib(row, steps), meta0 = qa_meta(row, steps, DOT_RESIDUAL);

    float acc[NR];
    for (uint r = 0u; r < NR; r++) acc[r] = 0.0;

    for (uint base = 0u; base < steps; base += BLOCK) {
        // every load of the block first: weights and params per row, codes and meta per step
        uvec4 w[UNROLL * NR];
        uint p[UNROLL * NR];
        uvec4 ca[UNROLL * QA_VEC4], cb[UNROLL * QA_VEC4];
        uvec2 meta[UNROLL];
        for (uint u = 0u; u < UNROLL; u++) {
            const uint c = base + u * TEAM + lane;
            const bool in_k = c < steps;
            const uint g = c / pc.steps_per_group;
            for (uint r = 0u; r < NR; r++) {
                const uint n = min(n0 + QV_ROW(r), N - 1u);  // rows past N reread row N - 1, never written
                w[u * NR + r] = in_k ? qv_load(r, n * steps + c) : uvec4(0u);
                p[u * NR + r] = in_k ? qv_param(r, n * groups + g) : 0u;
            }
            for (uint j = 0u; j < QA_VEC4; j++) {
                ca[u * QA_VEC4 + j] = in_k ? qa4[row + c * QA_VEC4 + j] : uvec4(0u);
                cb[u * QA_VEC4 + j] = in_k && DOT_RESIDUAL ? qa4[ib0 + c * QA_VEC4 + j] : uvec4(0u);
            }
            meta[u] = in_k ? qa2[meta0 + c] : uvec2(0u);
        }
        for (uint u = 0u; u < UNROLL; u++) {
            if (base + u * TEAM + lane >= steps) break;
            uint ia[VEC], ib[VEC];
            for (uint i = 0u; i < VEC; i++) {
                ia[i] = ca[u * QA_VEC4 + i / 4u][i % 4u];
                ib[i] = cb[u * QA_VEC4 + i / 4u][i % 4u];
            }
            const float scale = uintBitsToFloat(meta[u].x);
            const int isum = int(meta[u].y);
            for (uint r = 0u; r < NR; r++) {
                const uvec4 wr = w[u * NR + r];
                const uint pr = p[u * NR + r];
                // |raw| < 2^19 (int8: 16 * 128 * 127), so raw * 254 + raw' is exact in int32
                const int d = (DOT_RESIDUAL ? qv_dot_raw(wr, ia) * 254 + qv_dot_raw(wr, ib) : qv_dot_raw(wr, ia)) -
                              qv_dot_zero(pr) * isum;
                acc[r] += float(d) * scale * qv_dot_scale(pr);
            }
        }
    }

    // row r's sum to lane r of the team (r < ROWS; the _glu's up row r beside it)
    float v = 0.0, up = 0.0;
#ifdef VKL_SUBGROUP
    if (TEAM_SG) {
        for (uint r = 0u; r < NR; r++) acc[r] = subgroupAdd(acc[r]);
        v = pick(acc, lane);
#ifdef VKL_FUSE_GLU
        up = pick(acc, ROWS + lane);
#endif
    } else if (TEAM == WG) {
        QMV_SUBGROUP_SUMS(acc)
        if (tid < ROWS) {
            v = qmv_subgroups_total(tid);
#ifdef VKL_FUSE_GLU
            up = qmv_subgroups_total(ROWS + tid);
#endif
        }
    } else
#endif
    {
        QMV_TREE_SUM(acc, tid, lane, TEAM)
        if (lane < ROWS) {
            v = partial[lane * WG + team * TEAM];
#ifdef VKL_FUSE_GLU
            up = partial[(ROWS + lane) * WG + team * TEAM];
#endif
        }
    }
    const uint n = n0 + lane;
    if (lane < ROWS && n < N) store(m, n, v, up);
#ifdef VKL_GLU_CODES
    glu_codes(m, tid);
#endif
}
