// The matrix-vector body shared by quant_matvec_{e0m4,int4,int8}.comp:
//   Y[m, n] = sum_k A[m, k] * w(n, k)  (+ bias[n]),  A [M, K] f32, Y [M, N] f32,
// W in the GPU packed layout (engine/quant/pack_gpu.c). The including file
// defines QV_CHUNK (elements of W in one 16-byte uvec4) and
//   float qv_chunk(uvec4 w, QV_X x[QV_CHUNK / 4], float sum_x, uint param)
// the format's dot product of one uvec4 of W with its activations, the
// group's dequantization folded in. Loads, loop and reduction are this one
// file, so the formats differ only in their decode: a fair comparison.
//
// Two arithmetic settings, one loop: QV_X is vec4 (f32 math, the default
// build) or, with VKL_F16 (the _f16 variants), f16vec4: the activations are
// converted to fp16 once, when they are staged (or loaded, unstaged), and
// qv_chunk multiplies and sums within its uvec4 in fp16; sum_x (the sum of
// the fp16-rounded activations, so that a fold's b * sum_x cancels the same
// values the fp16 sums saw; unused, and so removed by the compiler, where
// qv_chunk centers the codes instead), each uvec4's scaling by d and
// everything across uvec4s and invocations stay f32. Why the fp16 sums
// cannot overflow: the formats' files (quant_matvec_*.comp) bound them.
//
// Tuned for M = 1 (decode, the paper's Table 1): workgroup (x, y) computes
// the ROWS outputs n = x*ROWS .. x*ROWS+ROWS-1 of row m = y. The workgroup
// walks K in blocks of WG * UNROLL uvec4 steps; in a block, invocation tid
// takes steps c = base + u * WG + tid (u < UNROLL), so a subgroup reads each
// row's weights contiguously, 16 bytes per invocation, and all UNROLL * ROWS
// loads of an invocation are issued before any arithmetic (bytes in flight
// are what a memory-bound kernel lives on). The block's activations are
// staged through shared memory: read from A with coalesced 16-byte loads,
// stored with one vec4 of padding per step so that each invocation's own
// QV_CHUNK / 4 vec4 reads are free of bank conflicts, then reused for the
// ROWS rows. STAGE_X = false reads them from A directly (16 bytes per
// invocation, 32 cache lines per subgroup load), for devices where barriers
// cost more than that: lavapipe runs 2.4x faster without the staging; an
// H100 runs the same within 2% either way, and slower with UNROLL > 1
// (docs/vulkan.md). Sums across uvec4s are f32. Any M works (each row of A
// rereads W); prefill wants a tiled matmul.
//
// Pieces (backends/vulkan/vk_quant_matmul.c): a W larger than the binding
// limit is bound one row piece at a time, and a Y (or A) larger than it one
// range of rows at a time; each dispatch then computes the piece's columns of
// those rows. a_off, y_off and bias_off (in vec4s, floats and floats) say
// where this dispatch's first element lies in its binding, y_stride is Y's
// full row; a whole W and Y have a_off = y_off = bias_off = 0, y_stride = N.
//
// Fused builds (backends/vulkan/vk_fuse.c decides; docs/vulkan.md, "Fusion"),
// whole W, A and Y only:
//   VKL_FUSE_ADD (_add): Y = (A W^T (+ bias)) + R, R [M, N] at binding 5: a
//     residual Add folded into the store, summed in the order the Add
//     kernel would (ew_binary.comp), so the result is the unfused one.
//   VKL_FUSE_GLU (_glu): Y = silu(A Wg^T) * (A Wu^T), Wg at bindings 1 and
//     2, Wu (same format, shape and group) at 5 and 6: each workgroup
//     computes ROWS rows of both (NR = 2 ROWS sums), so A is read once for
//     both and the SiluMul is the store (ew_binary.comp's formula).
//   VKL_FUSE_QKV (_qkv): up to three matvecs of one A (the Q, K and V
//     projections), W, Y and bias of set 0 at 1-4, of sets 1 and 2 at 5-12,
//     each set's rows in workgroups of their own (quant_matvec_qkv.glsl).
//
// A K that is not a multiple of the group (docs/quant.md, "The short last
// group"): W's rows hold whole groups, KQ elements (the short last group's
// tail as zero-weight codes), A's rows hold K (a multiple of 4). The loop
// walks KQ; the activations past K are read as 0, never loaded, so the
// tail's weights meet zeros and the folded sums (sum_x) count only real
// values. With K = KQ nothing changes.

// The integer-dot builds (VKL_DOT) have their own body: quant_matvec_dot.glsl.
#ifdef VKL_F16
#define QV_X f16vec4
#else
#define QV_X vec4
#endif

layout(local_size_x_id = 0) in;
// The backend sets all four (vk_device.c: tuning); these are placeholders.
layout(constant_id = 0) const uint WG = 64;  // = local_size_x; a power of two
layout(constant_id = 1) const uint ROWS = 8;
layout(constant_id = 2) const bool STAGE_X = true;
layout(constant_id = 3) const uint UNROLL = 1;

layout(set = 0, binding = 0, std430) readonly buffer BufA { vec4 a[]; };       // [M, K]
#include "quant_matvec_io.glsl"

layout(push_constant) uniform Push {
    uint M, N, K;
    uint steps_per_group;  // group / QV_CHUNK: each uvec4 lies in one group
    uint has_bias;
    uint a_off, y_off, y_stride, bias_off;
    uint KQ;  // W's row length: K rounded up to whole groups
    QMV_FUSE_PUSH
} pc;

const uint VEC = QV_CHUNK / 4u;  // vec4s of activations per step
const uint PAD = VEC + 1u;       // their stride in shared memory
const uint BLOCK = WG * UNROLL;  // steps per block
#ifdef VKL_FUSE_GLU
const uint NR = 2u * ROWS;  // sums per workgroup: ROWS gate rows, then the same ROWS rows of up
uvec4 qv_load(uint r, uint i) { return r < ROWS ? qs[i] : qs_up[i]; }
uint qv_param(uint r, uint i) { return r < ROWS ? params[i] : params_up[i]; }
#define QV_ROW(r) ((r) < ROWS ? (r) : (r) - ROWS)
shared float glu_sums[NR];
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
shared QV_X xs[STAGE_X ? BLOCK * PAD : 1u];
shared float partial[NR * WG];
#include "quant_matvec_reduce.glsl"

void main() {
    const uint tid = gl_LocalInvocationID.x;
#ifdef VKL_FUSE_QKV
    uint N;
    const uint n0 = qkv_pick(N) * ROWS;
#else
    const uint N = pc.N;
    const uint n0 = gl_WorkGroupID.x * ROWS;
#endif
    const uint m = gl_WorkGroupID.y;
    const uint steps = pc.KQ / QV_CHUNK;                // uvec4s per row of W
    const uint groups = steps / pc.steps_per_group;     // params per row of W
    const uint a0 = pc.a_off + m * (pc.K / 4u);
    const uint kv = pc.K / 4u;                          // A's vec4s per row: past them, zeros

    float acc[NR];
    for (uint r = 0u; r < NR; r++) acc[r] = 0.0;

    for (uint base = 0u; base < steps; base += BLOCK) {
        // This block's weights first: their loads fly while A is staged.
        uvec4 w[UNROLL * NR];
        uint p[UNROLL * NR];
        for (uint u = 0u; u < UNROLL; u++) {
            const uint c = base + u * WG + tid;
            const uint g = c / pc.steps_per_group;
            for (uint r = 0u; r < NR; r++) {
                const uint n = min(n0 + QV_ROW(r), N - 1u);  // rows past N reread row N - 1, never written
                w[u * NR + r] = c < steps ? qv_load(r, n * steps + c) : uvec4(0u);
                p[u * NR + r] = c < steps ? qv_param(r, n * groups + g) : 0u;
            }
        }
        if (STAGE_X) {
            const uint nv = min(BLOCK, steps - base) * VEC;
            for (uint j = 0u; j < VEC * UNROLL; j++) {
                const uint v = j * WG + tid;
                if (v < nv) xs[(v / VEC) * PAD + v % VEC] = base * VEC + v < kv ? QV_X(a[a0 + base * VEC + v]) : QV_X(0.0);
            }
            barrier();
        }
        for (uint u = 0u; u < UNROLL; u++) {
            const uint c = base + u * WG + tid;
            if (c >= steps) break;
            QV_X x[VEC];
            float sum_x = 0.0;
            for (uint i = 0u; i < VEC; i++) {
                x[i] = STAGE_X ? xs[(u * WG + tid) * PAD + i] : c * VEC + i < kv ? QV_X(a[a0 + c * VEC + i]) : QV_X(0.0);
                const vec4 xf = vec4(x[i]);  // f32 math: x[i] itself
                sum_x += (xf.x + xf.y) + (xf.z + xf.w);
            }
            for (uint r = 0u; r < NR; r++) acc[r] += qv_chunk(w[u * NR + r], x, sum_x, p[u * NR + r]);
        }
        if (STAGE_X) barrier();  // xs is rewritten by the next block
    }

#ifdef VKL_SUBGROUP
    QMV_SUBGROUP_SUMS(acc)
    if (tid < NR) acc[0] = qmv_subgroups_total(tid);
#else
    QMV_TREE_SUM(acc, tid, tid, WG)
    if (tid < NR) acc[0] = partial[tid * WG];
#endif
    const uint n = n0 + tid;
    const uint at = pc.y_off + m * pc.y_stride + n;
#ifdef VKL_FUSE_GLU
    // invocation r holds row r's sum (r < NR <= WG): gate r and up r meet in shared memory
    if (tid < NR) glu_sums[tid] = acc[0];
    barrier();
    if (tid < ROWS && n < N) {
        const float g = glu_sums[tid], u = glu_sums[ROWS + tid];
        y[at] = g / (1.0 + vkl_exp(-g)) * u;
    }
#elif defined(VKL_FUSE_QKV)
    if (tid < ROWS && n < N) qkv_store(m, n, acc[0]);
#else
    if (tid < ROWS && n < N) {
        const float v = acc[0] + (pc.has_bias != 0u ? bias[pc.bias_off + n] : 0.0);
#ifdef VKL_FUSE_ADD
        y[at] = v + res[at];
#else
        y[at] = v;
#endif
    }
#endif
}
