/* QuantMatMul on Vulkan: Y [..., N] = A [..., K] times W [N, K], plus an
 * optional bias. The fast paths: f32 A and Y, W of E0M4, int4 or int8 blocks
 * in the GPU packed layout with K and group multiples of the 16-byte step.
 * A K that is not a multiple of the group (a short last group, stored whole
 * in the packed layout as zero-weight codes), K a multiple of 4: the matvec
 * and the tiled GEMM walk W's padded rows (KQ) and read A only up to K
 * (quant_matvec.glsl, quant_gemm.glsl); the cooperative-matrix GEMM is never
 * given such a W — on a device that has it, the tiled build runs instead —
 * so its tile loader needs no bound on K.
 * Fewer than qmm_min_rows rows of A (decode): the quant_matvec_* shaders,
 * one dispatch of (ceil(N / rows), M) workgroups, each row of A rereading
 * W; their _dot builds (int8 activations, integer dot products) wherever
 * vk_device.c's choose_matvec took them, plain, fused, pieced and with a
 * short last group alike. From qmm_min_rows rows (prefill), with K and group multiples of 32:
 * the quant_gemm_* shaders, W decoded once per 64 x 64 tile of Y, on the
 * matrix units where vk_gemm_tuning.c chose the cooperative-matrix build
 * (_cm), else the tiled one (_f16 with the matvecs' fp16 math). Everything
 * else the ref kernel takes (f16/bf16/f64 A, any K and group, plain
 * f32/f16/bf16 W such as the f32 down projections a quantizer keeps) goes
 * through vk_linalg.c's general products: matvec.comp (decoding each
 * quantized element on its own) or, for a plain W and M > 1, the tiled
 * matmul.comp.
 *
 * Over the binding limit (docs/vulkan.md, "Limits"), the matvec takes W in
 * row pieces (each a range of Y's columns) and A and Y in ranges of rows:
 * one dispatch per piece and row range, each told where its columns and
 * rows start (quant_matvec.glsl's push constants); such a node keeps the
 * matvec at any M. The GEMM and the general path take no pieces. */
#include <stdio.h>
#include <string.h>

#include "vk_internal.h"

/* The general path: Y = A W^T + bias as a vkl_vk_mm. */
static vkl_status record_general(const vkl_vk_node *nd, int64_t M, int64_t K, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_vk_tensor *A = &nd->in[0], *W = &nd->in[1], *Y = &nd->out[0];
    const vkl_vk_tensor *bias = nd->n_in > 2 && nd->in[2].id != VKL_NONE ? &nd->in[2] : NULL;
    const vkl_vk_weight *w = W->weight;
    if (W->pieced || A->pieced || Y->pieced || (bias && bias->pieced))
        return vkl_vk_node_unsupported(nd, "a tensor is over the binding limit (%s, %llu bytes), and only the "
                                       "quantized matvec (f32 A, K and group multiples of its 16-byte step) binds "
                                       "pieces; this node has %s A and %s W", vkl_vk_bind_limit_name(nd->dev),
                                       (unsigned long long)nd->dev->bind_limit, vkl_dtype_name(A->dtype),
                                       vkl_dtype_name(W->dtype));
    vkl_vk_mm mm = {0};
    mm.A = A;
    mm.B = W;
    mm.C = bias;
    mm.Y = Y;
    mm.M = M;
    mm.N = W->dims[0];
    mm.K = K;
    mm.batches = 1;
    mm.a_rs = K;
    mm.a_cs = 1;
    mm.b_rs = 1; /* B(k, n) = W[n, k] */
    mm.b_cs = K;
    mm.c_cs = 1; /* bias[n] on every row */
    mm.alpha = mm.beta = 1.0f;
    mm.b_dtype = W->dtype;
    mm.b_at = W->at;
    if (vkl_dtype_is_quantized(W->dtype)) {
        mm.b_at = w->piece[0].qs;
        mm.p_at = w->piece[0].params;
        if (w->lay.row_stride >= (1ull << 32) || !W->group)
            return vkl_vk_node_unsupported(nd, "W rows of %zu bytes", w->lay.row_stride);
        mm.q_row_bytes = (uint32_t)w->lay.row_stride;
        mm.q_group = W->group;
    }
    return vkl_vk_record_mm(nd, &mm, out, count);
}

/* Rows of A and Y one dispatch takes with a W piece of `cols` rows: all M
 * unless A's rows or Y's (the piece's columns of them) would pass the
 * binding limit, less the alignment a sub-range's start may round down by. */
static int64_t dispatch_rows(const vkl_backend_device *dev, int64_t M, int64_t N, int64_t K, int64_t cols) {
    const VkDeviceSize align = dev->props.limits.minStorageBufferOffsetAlignment;
    const VkDeviceSize room = dev->bind_limit > align ? dev->bind_limit - align : 0;
    int64_t m = M;
    if ((VkDeviceSize)(M * K * 4) > room) m = (int64_t)(room / (VkDeviceSize)(K * 4));
    if ((VkDeviceSize)(((m - 1) * N + cols) * 4) > room && room >= (VkDeviceSize)cols * 4)
        m = (int64_t)((room - (VkDeviceSize)cols * 4) / (VkDeviceSize)(N * 4)) + 1;
    return m > 0 ? m : 1; /* a row that does not fit fails at its binding, naming it */
}

/* K slices of the cooperative-matrix GEMM (quant_gemm_coopmat.glsl): the
 * option's count, else 2 where the node has fewer than cm_target tiles and
 * K at least 16 steps (vk_gemm_tuning.c says why no more); their planes of
 * partial sums within a binding, their workgroups within the dispatch's z
 * range; every slice gets steps. */
static uint32_t gemm_splits(const vkl_backend_device *dev, int64_t tiles, int64_t M, int64_t N, int64_t steps) {
    int64_t n = dev->cm_split ? dev->cm_split : tiles < dev->cm_target && steps >= 16 ? 2 : 1;
    if (n > steps) n = steps;
    if (n > VKL_VK_GEMM_MAX_SPLIT) n = VKL_VK_GEMM_MAX_SPLIT;
    if (n > dev->props.limits.maxComputeWorkGroupCount[2]) n = dev->props.limits.maxComputeWorkGroupCount[2];
    while (n > 1 && (uint64_t)n * M * N * 4 > dev->bind_limit) n--;
    if (n <= 1) return 1;
    const int64_t per = (steps + n - 1) / n;
    return (uint32_t)((steps + per - 1) / per);
}

/* How a GEMM stores Y: plainly, or adding a fused Add's R (Y's shape;
 * quant_gemm_io.glsl's RESIDUAL), and where in the node's own scratch its
 * split-K planes start (the fused Q/K/V's GEMMs keep theirs apart). */
typedef struct gemm_store {
    const VkDescriptorBufferInfo *residual; /* NULL: none */
    VkDeviceSize planes_at;
} gemm_store;

/* The GEMM: workgroups of a BM x BN tile of Y, K in steps of 32 codes (to
 * KQ, W's row length in whole groups; the cooperative-matrix build: steps
 * of cm_bk, K = KQ); Y = nd->out[0], stored as o says (NULL: plainly). */
static vkl_status record_gemm(const vkl_vk_node *nd, vkl_dtype wt, int64_t M, int64_t N, int64_t K, int64_t KQ,
                              const gemm_store *o, vkl_vk_dispatch *d, uint32_t *count) {
    const vkl_backend_device *dev = nd->dev;
    const VkDescriptorBufferInfo *residual = o ? o->residual : NULL;
    const uint32_t with_r = residual ? 1u : 0u;
    const vkl_vk_tensor *A = &nd->in[0], *W = &nd->in[1], *Y = &nd->out[0];
    const vkl_vk_tensor *bias = nd->n_in > 2 && nd->in[2].id != VKL_NONE ? &nd->in[2] : NULL;
    /* [tiled f32, tiled fp16, cooperative matrix, its emulation]: cmake/shaders.cmake's names */
    static const char *const e0m4[4] = {"quant_gemm_e0m4", "quant_gemm_e0m4_f16", "quant_gemm_e0m4_cm",
                                        "quant_gemm_e0m4_cmemu"};
    static const char *const int4[4] = {"quant_gemm_int4", "quant_gemm_int4_f16", "quant_gemm_int4_cm",
                                        "quant_gemm_int4_cmemu"};
    static const char *const int8[4] = {"quant_gemm_int8", "quant_gemm_int8_f16", "quant_gemm_int8_cm",
                                        "quant_gemm_int8_cmemu"};
    /* a short last group, or K not a multiple of the coopmat step: the tiled build */
    const bool coopmat = (dev->gemm_coopmat || dev->gemm_cm_emulated) && KQ == K && K % dev->cm_bk == 0;
    const int build = coopmat ? 2 + dev->gemm_cm_emulated : dev->f16_math;
    d->shader = wt == VKL_DTYPE_Q_E0M4 ? e0m4[build] : wt == VKL_DTYPE_Q_INT4 ? int4[build] : int8[build];
    uint32_t bm, bn;
    vkl_vk_gemm_tile(dev, coopmat, &bm, &bn);
    /* RESIDUAL: constant 10 in the cooperative-matrix builds, 4 in the tiled ones */
    uint32_t r_spec;
    if (coopmat) {
        const uint32_t spec[11] = {dev->cm_wg, dev->cm_sg_m, dev->cm_sg_n, dev->cm_fm, dev->cm_fn,     dev->cm_m,
                                   dev->cm_n,  dev->cm_k,     dev->cm_bk,  0 /* SPLIT, below */, with_r};
        memcpy(d->spec, spec, sizeof(spec));
        d->n_spec = 11;
        r_spec = 10;
    } else {
        const uint32_t spec[5] = {dev->qmm_wx, dev->qmm_wy, dev->qmm_tm, dev->qmm_tn, with_r};
        memcpy(d->spec, spec, sizeof(spec));
        d->n_spec = 5;
        r_spec = 4;
    }
    const int64_t gx = (N + bn - 1) / bn, gy = (M + bm - 1) / bm;
    const VkPhysicalDeviceLimits *lim = &dev->props.limits;
    /* The shaders index in 32 bits. */
    if (gx > lim->maxComputeWorkGroupCount[0] || gy > lim->maxComputeWorkGroupCount[1] || M * K >= (1ll << 32) ||
        M * N >= (1ll << 32) || N * KQ >= (1ll << 32))
        return vkl_vk_node_unsupported(nd, "M = %lld, N = %lld, K = %lld exceed the GEMM's dispatch or index range",
                                       (long long)M, (long long)N, (long long)K);
    const vkl_vk_weight *w = W->weight;
    d->bind[0] = A->at;
    d->bind[1] = w->piece[0].qs; /* one piece: the caller checked */
    d->bind[2] = w->piece[0].params;
    d->bind[3] = Y->at;
    d->bind[4] = bias ? bias->at : A->at; /* any buffer: has_bias = 0 never reads it */
    d->bind[5] = residual ? *residual : A->at; /* any buffer: RESIDUAL off never reads it */
    d->n_bind = 6;
    d->push[0] = (uint32_t)M;
    d->push[1] = (uint32_t)N;
    d->push[2] = (uint32_t)K;
    d->push[3] = W->group;
    d->push[4] = bias ? 1u : 0u;
    d->push[5] = (uint32_t)KQ;
    d->push[6] = 1;
    d->n_push = 7;
    d->groups[0] = (uint32_t)gx;
    d->groups[1] = (uint32_t)gy;
    d->groups[2] = 1;
    *count = 1;
    const uint32_t splits = coopmat ? gemm_splits(dev, gx * gy, M, N, K / dev->cm_bk) : 1;
    if (splits == 1) return VKL_OK;
    /* Split K: slice z's partial sums to plane z of the node's own scratch,
     * then quant_gemm_split_sum.comp adds them in order, the bias, and R
     * (the split pipeline stores bare sums). */
    const VkDescriptorBufferInfo planes =
        vkl_vk_scratch(vkl_vk_scratch_own(nd) + (o ? o->planes_at : 0), (VkDeviceSize)splits * M * N * 4);
    d->bind[3] = planes;
    d->bind[5] = A->at;
    d->push[4] = 0;
    d->push[6] = splits;
    d->spec[9] = 1;
    d->spec[r_spec] = 0;
    d->groups[2] = splits;
    vkl_vk_dispatch *s = d + 1;
    s->shader = "quant_gemm_split_sum";
    s->spec[0] = with_r;
    s->n_spec = 1;
    s->bind[0] = planes;
    s->bind[1] = Y->at;
    s->bind[2] = bias ? bias->at : planes; /* any buffer: has_bias = 0 never reads it */
    s->bind[3] = residual ? *residual : planes; /* any buffer: RESIDUAL off never reads it */
    s->n_bind = 4;
    const uint64_t total = (uint64_t)M * N, wgs = (total + 255) / 256;
    s->push[0] = (uint32_t)total;
    s->push[1] = (uint32_t)N;
    s->push[2] = splits;
    s->push[3] = bias ? 1u : 0u;
    s->n_push = 4;
    s->groups[0] = (uint32_t)(wgs < lim->maxComputeWorkGroupCount[0] ? wgs : lim->maxComputeWorkGroupCount[0]);
    s->groups[1] = s->groups[2] = 1;
    *count = 2;
    return VKL_OK;
}

/* What the node runs: checks dtypes and shapes (failing as ref would, naming
 * the node) and picks the path; the matvec's shader family and the elements
 * of W per 16-byte load come back for the fast paths. */
typedef enum qmm_path { QMM_GENERAL, QMM_EMPTY, QMM_GEMM, QMM_MATVEC } qmm_path;
typedef struct qmm_shape {
    int64_t M, N, K;
    int64_t KQ;     /* W's row length in whole groups (> K with a short last group) */
    uint32_t chunk; /* elements of W per 16-byte load */
    int format;     /* 0 E0M4, 1 int4, 2 int8 (fast paths) */
} qmm_shape;

static vkl_status qmm_plan(const vkl_vk_node *nd, qmm_shape *s, qmm_path *path) {
    const vkl_backend_device *dev = nd->dev;
    const vkl_vk_tensor *A = &nd->in[0], *W = &nd->in[1], *Y = &nd->out[0];
    const vkl_vk_tensor *bias = nd->n_in > 2 && nd->in[2].id != VKL_NONE ? &nd->in[2] : NULL;
    if (!vkl_vk_dtype_float(A->dtype) || Y->dtype != A->dtype)
        return vkl_vk_node_unsupported(nd, "A is %s and Y %s; a float A and Y of its dtype expected",
                                       vkl_dtype_name(A->dtype), vkl_dtype_name(Y->dtype));
    if (bias && bias->dtype != A->dtype)
        return vkl_vk_node_unsupported(nd, "bias is %s, want A's %s", vkl_dtype_name(bias->dtype),
                                       vkl_dtype_name(A->dtype));
    if (!W->weight)
        return vkl_vk_node_unsupported(nd, "W is computed by the graph; the Vulkan kernels read a loaded weight");
    bool fast = true;
    switch (W->dtype) {
    case VKL_DTYPE_Q_E0M4: s->format = 0; s->chunk = 32; break;
    case VKL_DTYPE_Q_INT4: s->format = 1; s->chunk = 32; break;
    case VKL_DTYPE_Q_INT8: s->format = 2; s->chunk = 16; break;
    case VKL_DTYPE_F32: case VKL_DTYPE_F16: case VKL_DTYPE_BF16: fast = false; s->chunk = 1; break;
    default:
        return vkl_vk_node_unsupported(nd, "W is %s; the Vulkan kernels take E0M4, int4, int8, f32, f16 and bf16",
                                       vkl_dtype_name(W->dtype));
    }
    if (A->rank < 1 || W->rank != 2)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "A has rank %u and W rank %u", A->rank, W->rank);
    s->K = A->dims[A->rank - 1];
    s->N = W->dims[0];
    s->M = 1;
    for (uint32_t d = 0; d + 1 < A->rank; d++) s->M *= A->dims[d];
    if (W->dims[1] != s->K)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "A's K = %lld, W's K = %lld", (long long)s->K,
                                (long long)W->dims[1]);
    if (Y->count != s->M * s->N)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "Y has %lld elements, want %lld", (long long)Y->count,
                                (long long)(s->M * s->N));
    if (bias && bias->count != s->N)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "bias has %lld elements, want %lld", (long long)bias->count,
                                (long long)s->N);
    /* the fast kernels' conditions; anything else the general path. A short
     * last group needs A's rows in whole vec4s (K % 4); whole groups make K
     * a multiple of the chunk, as before. */
    const bool whole_groups = W->group && s->K % W->group == 0;
    s->KQ = fast ? W->weight->lay.cols : s->K;
    if (!fast || A->dtype != VKL_DTYPE_F32 || (whole_groups ? s->K % s->chunk : s->K % 4) || W->group % s->chunk)
        *path = QMM_GENERAL;
    else if (!s->M || !s->N) *path = QMM_EMPTY;
    else if (s->M >= dev->qmm_min_rows && s->KQ % 32 == 0 && W->group % 32 == 0 && W->weight->n_pieces == 1 &&
             !A->pieced && !Y->pieced && !(bias && bias->pieced))
        *path = QMM_GEMM;
    else *path = QMM_MATVEC;
    return VKL_OK;
}

bool vkl_vk_qmm_fusable(const vkl_vk_node *nd, bool *gemm) {
    const vkl_vk_tensor *bias = nd->n_in > 2 && nd->in[2].id != VKL_NONE ? &nd->in[2] : NULL;
    qmm_shape s;
    qmm_path path;
    *gemm = false;
    if (qmm_plan(nd, &s, &path) || (path != QMM_MATVEC && path != QMM_GEMM)) return false;
    *gemm = path == QMM_GEMM; /* a whole W, nothing in pieces: qmm_plan's conditions */
    /* the matvec in one dispatch: no piece of W, and A's and Y's rows in one
     * range (the fused builds index R like Y, from the start) */
    return *gemm || (nd->in[1].weight->n_pieces == 1 && !nd->in[0].pieced && !nd->out[0].pieced &&
                     !(bias && bias->pieced) && dispatch_rows(nd->dev, s.M, s.N, s.K, s.N) >= s.M);
}

size_t vkl_vk_qmv_shared_bytes(const vkl_backend_device *dev, bool glu) {
    const size_t sums = (size_t)dev->qmv_rows * (glu ? 2 : 1); /* per invocation */
    if (dev->matvec_dot) /* quant_matvec_dot.glsl's partial sums, a float where a subgroupAdd reduces the team */
        return dev->qmv_team_sg ? 4 : 4 * sums * dev->qmv_wg;
    /* quant_matvec.glsl: staged activations, partial sums, and the _glu's
     * 2 ROWS sums the gate and up rows meet in */
    return (size_t)dev->qmv_wg * ((dev->qmv_stage ? 9 * 16 * dev->qmv_unroll : 0) + 4 * sums) +
           (glu ? 4 * sums : 0);
}

void vkl_vk_matvec_describe(const vkl_backend_device *dev, char *buf, size_t cap) {
    if (!cap) return;
    if (!dev) {
        buf[0] = 0;
        return;
    }
    if (dev->matvec_dot)
        snprintf(buf, cap, "integer dot, %s: workgroups of %u in teams of %u (%s), %u rows a team, %u steps a lane in "
                 "flight", dev->qmv_dot_residual ? "two int8 terms" : "one int8 term", dev->qmv_wg, dev->qmv_team,
                 dev->qmv_team_sg ? "one subgroup: subgroupAdd"
                 : dev->subgroup_arith && dev->qmv_team == dev->qmv_wg ? "subgroupAdd, then shared memory"
                                                                      : "a shared-memory tree",
                 dev->qmv_rows, dev->qmv_unroll);
    else
        snprintf(buf, cap, "%s math: workgroups of %u, %u rows, %u steps an invocation, activations %s, %s reduction",
                 dev->f16_math ? "fp16" : "f32", dev->qmv_wg, dev->qmv_rows, dev->qmv_unroll,
                 dev->qmv_stage ? "staged in shared memory" : "read directly",
                 dev->subgroup_arith ? "subgroupAdd" : "shared-memory");
}

bool vkl_vk_qmm_glu_fits(const vkl_backend_device *dev) {
    return vkl_vk_qmv_shared_bytes(dev, true) <= dev->props.limits.maxComputeSharedMemorySize;
}

/* The float matvec's builds, and the dot matvec's ([format][fuse]
 * [subgroup reduction]): cmake/shaders.cmake's names. */
#define QMV_NAMES(f, fuse)                                                                                          \
    {{"quant_matvec_" f fuse, "quant_matvec_" f "_f16" fuse}, {"quant_matvec_" f "_sg" fuse, "quant_matvec_" f "_sg_f16" fuse}}
#define QMV_FORMAT(f) {QMV_NAMES(f, ""), QMV_NAMES(f, "_add"), QMV_NAMES(f, "_glu"), QMV_NAMES(f, "_qkv")}
static const char *const float_names[3][4][2][2] = {QMV_FORMAT("e0m4"), QMV_FORMAT("int4"), QMV_FORMAT("int8")};
#undef QMV_FORMAT
#undef QMV_NAMES
#define QMV_NAMES(f, fuse) {"quant_matvec_" f "_dot" fuse, "quant_matvec_" f "_sg_dot" fuse}
#define QMV_FORMAT(f)                                                                                               \
    {QMV_NAMES(f, ""), QMV_NAMES(f, "_add"), QMV_NAMES(f, "_glu"), QMV_NAMES(f, "_qkv"), QMV_NAMES(f, "_glu_codes")}
static const char *const dot_names[3][5][2] = {QMV_FORMAT("e0m4"), QMV_FORMAT("int4"), QMV_FORMAT("int8")};
#undef QMV_FORMAT
#undef QMV_NAMES

uint64_t vkl_vk_codes_row_vec4s(const vkl_backend_device *dev, uint32_t steps, uint32_t chunk) {
    /* quant_act.glsl: ia (and ib) words, then a uvec2 per step, in whole uvec4s */
    const uint64_t words = (uint64_t)steps * (chunk / 4) * (dev->qmv_dot_residual ? 2 : 1) + 2ull * steps;
    return (words + 3) / 4;
}

vkl_status vkl_vk_codes_range(const vkl_vk_node *nd, uint32_t tensor, int64_t M, uint32_t steps, uint32_t chunk,
                              VkDescriptorBufferInfo *codes, uint64_t *row_vec4s, bool *made) {
    *row_vec4s = vkl_vk_codes_row_vec4s(nd->dev, steps, chunk);
    if ((uint64_t)M * *row_vec4s >= (1ull << 32))
        return vkl_vk_node_unsupported(nd, "M = %lld rows of %u steps: the int8 codes exceed the matvec's index "
                                       "range", (long long)M, steps);
    return vkl_vk_scratch_shared(nd, tensor, (uint64_t)steps * chunk << 8 | chunk,
                                 (VkDeviceSize)M * *row_vec4s * 16, codes, made);
}

vkl_status vkl_vk_codes_made_here(const vkl_vk_node *nd, uint32_t tensor, int64_t M, uint32_t steps, uint32_t chunk,
                                  VkDescriptorBufferInfo *codes, uint64_t *row_vec4s) {
    bool made = false;
    vkl_status st = vkl_vk_codes_range(nd, tensor, M, steps, chunk, codes, row_vec4s, &made);
    if (!st && !made) st = vkl_vk_node_unsupported(nd, "the codes of its output were written before it ran");
    return st;
}

bool vkl_vk_qmm_reads_codes(const vkl_vk_node *nd, uint32_t *steps, uint32_t *chunk) {
    qmm_shape s;
    qmm_path path;
    if (!nd->dev->matvec_dot || qmm_plan(nd, &s, &path) || path != QMM_MATVEC) return false;
    *steps = (uint32_t)(s.KQ / s.chunk);
    *chunk = s.chunk;
    return true;
}

/* One dispatch per range of rows of A that binds within the limit:
 * quant_act_int8 (_bytes for int8's steps of 16) writes their codes. */
static vkl_status record_quant_act(const vkl_vk_node *nd, const qmm_shape *s, VkDescriptorBufferInfo codes,
                                   uint64_t row_vec4s, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_backend_device *dev = nd->dev;
    const vkl_vk_tensor *A = &nd->in[0];
    const int64_t M = s->M, K = s->K, steps = s->KQ / s->chunk;
    const VkDeviceSize align = dev->props.limits.minStorageBufferOffsetAlignment;
    const VkDeviceSize room = dev->bind_limit > align ? dev->bind_limit - align : 0;
    const VkDeviceSize row_bytes = (VkDeviceSize)K * 4 > row_vec4s * 16 ? (VkDeviceSize)K * 4 : row_vec4s * 16;
    const int64_t at_once = room / row_bytes ? (int64_t)(room / row_bytes) : 1; /* a row too large fails its binding */
    const uint32_t wg = 64; /* quant_act_int8.comp's local_size_x */
    if ((steps + wg - 1) / wg > dev->props.limits.maxComputeWorkGroupCount[0])
        return vkl_vk_node_unsupported(nd, "K = %lld exceeds the activation quantizer's dispatch range", (long long)K);
    for (int64_t m0 = 0; m0 < M; m0 += at_once) {
        const int64_t mc = M - m0 < at_once ? M - m0 : at_once;
        if (*count == VKL_VK_MAX_DISPATCHES)
            return vkl_vk_node_unsupported(nd, "M = %lld rows need more than %u dispatches under the binding limit",
                                           (long long)M, VKL_VK_MAX_DISPATCHES);
        vkl_vk_dispatch *d = &out[(*count)++];
        uint32_t a_skip = 0, q_skip = 0;
        if (!vkl_vk_sub_range(dev, A->at, (VkDeviceSize)(m0 * K * 4), (VkDeviceSize)(mc * K * 4), &d->bind[0],
                              &a_skip) ||
            a_skip % 4 ||
            !vkl_vk_sub_range(dev, codes, (VkDeviceSize)m0 * row_vec4s * 16, (VkDeviceSize)mc * row_vec4s * 16,
                              &d->bind[1], &q_skip) ||
            q_skip % 4)
            return vkl_vk_node_unsupported(nd, "rows %lld.. of A or of its int8 codes do not bind within the binding "
                                           "limit (%llu bytes)", (long long)m0, (unsigned long long)dev->bind_limit);
        d->shader = s->format == 2 ? "quant_act_int8_bytes" : "quant_act_int8";
        d->spec[0] = dev->qmv_dot_residual;
        d->n_spec = 1;
        d->n_bind = 2;
        const uint32_t push[] = {(uint32_t)mc, (uint32_t)K, (uint32_t)steps, a_skip / 4, q_skip / 4,
                                 (uint32_t)row_vec4s};
        memcpy(d->push, push, sizeof(push));
        d->n_push = (uint32_t)(sizeof(push) / sizeof(push[0]));
        d->groups[0] = (uint32_t)((steps + wg - 1) / wg);
        d->groups[1] = (uint32_t)mc;
        d->groups[2] = 1;
    }
    return VKL_OK;
}

/* The matvec: one dispatch per W piece and range of rows (one for a whole W,
 * A and Y, which the fused builds require; *matvecs counts them). The
 * integer-dot build reads A's codes in place of A: a shared scratch range
 * (vk_scratch.c) keyed by A and the step, so that every matvec of one A
 * (the Q, K and V projections) reads the codes the first one's
 * record_quant_act dispatches made. fuse: 0 plain, 1 _add (R = nd->in[3]),
 * 2 _glu (Wu = nd->in[3]), 3 _qkv (set 0 alone: vkl_vk_record_qmm_qkv binds
 * the others), 4 _glu_codes (dot only; as _glu, and vkl_vk_record_qmm_glu
 * binds the output's codes). */
static vkl_status record_matvec(const vkl_vk_node *nd, const qmm_shape *s, int fuse, vkl_vk_dispatch *out,
                                uint32_t *count, uint32_t *matvecs) {
    const vkl_backend_device *dev = nd->dev;
    const vkl_vk_tensor *A = &nd->in[0], *W = &nd->in[1], *Y = &nd->out[0];
    const vkl_vk_tensor *bias = nd->n_in > 2 && nd->in[2].id != VKL_NONE ? &nd->in[2] : NULL;
    const int64_t M = s->M, N = s->N, K = s->K, KQ = s->KQ;
    const uint32_t chunk = s->chunk;
    const bool dot = dev->matvec_dot; /* vk_device.c's choose_matvec */
    const char *shader = dot ? dot_names[s->format][fuse][dev->subgroup_arith]
                             : float_names[s->format][fuse][dev->subgroup_arith][dev->f16_math];
    /* rows of W per workgroup: the dot build's teams of qmv_rows each */
    const uint32_t rows = dot ? dev->qmv_rows * (dev->qmv_wg / dev->qmv_team) : dev->qmv_rows;
    const int64_t blocks = (N + rows - 1) / rows;
    const VkPhysicalDeviceLimits *lim = &dev->props.limits;
    /* The shaders index in 32 bits. */
    if (blocks > lim->maxComputeWorkGroupCount[0] || M > lim->maxComputeWorkGroupCount[1] || M * K >= (1ll << 32) ||
        M * N >= (1ll << 32) || N * (KQ / chunk) >= (1ll << 32))
        return vkl_vk_node_unsupported(nd, "M = %lld, N = %lld, K = %lld exceed the matvec's dispatch or index range",
                                       (long long)M, (long long)N, (long long)K);
    if (bias && bias->pieced)
        return vkl_vk_node_unsupported(nd, "bias of %zu bytes is over the binding limit", bias->bytes);
    uint64_t row_vec4s = 0;
    VkDescriptorBufferInfo codes = {0};
    if (dot) { /* made: this is A's first dot matvec (and no RMSNorm wrote its codes: vk_fuse.c) */
        bool made = false;
        vkl_status st = vkl_vk_codes_range(nd, A->id, M, (uint32_t)(KQ / chunk), chunk, &codes, &row_vec4s, &made);
        if (!st && made) st = record_quant_act(nd, s, codes, row_vec4s, out, count);
        if (st) return st;
    }
    *matvecs = 0;
    const vkl_vk_weight *w = W->weight;
    for (uint32_t pi = 0; pi < w->n_pieces; pi++) {
        const vkl_vk_piece *p = &w->piece[pi];
        const int64_t rows_at_once = dispatch_rows(dev, M, N, K, p->rows);
        for (int64_t m0 = 0; m0 < M && p->rows; m0 += rows_at_once) {
            const int64_t mc = M - m0 < rows_at_once ? M - m0 : rows_at_once;
            if (*count == VKL_VK_MAX_DISPATCHES)
                return vkl_vk_node_unsupported(nd, "W in %u pieces and M = %lld rows need more than %u dispatches "
                                               "under the binding limit of %llu bytes", w->n_pieces, (long long)M,
                                               VKL_VK_MAX_DISPATCHES, (unsigned long long)dev->bind_limit);
            vkl_vk_dispatch *d = &out[(*count)++];
            uint32_t a_skip = 0, y_skip = 0;
            /* A's rows: 16-byte multiples (K % 4 == 0) from a 64-byte aligned
             * start; the codes' rows: whole uvec4s (row_vec4s) */
            const bool a_ok =
                dot ? vkl_vk_sub_range(dev, codes, (VkDeviceSize)m0 * row_vec4s * 16,
                                       (VkDeviceSize)mc * row_vec4s * 16, &d->bind[0], &a_skip)
                    : vkl_vk_sub_range(dev, A->at, (VkDeviceSize)(m0 * K * 4), (VkDeviceSize)(mc * K * 4),
                                       &d->bind[0], &a_skip);
            if (!a_ok || a_skip % 4 ||
                !vkl_vk_sub_range(dev, Y->at, (VkDeviceSize)((m0 * N + p->row0) * 4),
                                  (VkDeviceSize)(((mc - 1) * N + p->rows) * 4), &d->bind[3], &y_skip))
                return vkl_vk_node_unsupported(nd, "rows %lld.. of A or Y do not bind within the binding limit "
                                               "(%llu bytes)", (long long)m0, (unsigned long long)dev->bind_limit);
            d->shader = shader;
            ++*matvecs;
            if (dot) {
                d->reads = 1u; /* the codes: shared scratch, only read here */
                const uint32_t spec[] = {dev->qmv_wg,    dev->qmv_rows,           dev->qmv_team,
                                         dev->qmv_unroll, dev->qmv_team_sg ? 1u : 0u, dev->qmv_dot_residual};
                memcpy(d->spec, spec, sizeof(spec));
                d->n_spec = (uint32_t)(sizeof(spec) / sizeof(spec[0]));
                const uint32_t push[] = {(uint32_t)mc,       (uint32_t)p->rows,   (uint32_t)(KQ / chunk),
                                         W->group / chunk,   bias ? 1u : 0u,       a_skip / 4,
                                         (uint32_t)row_vec4s, y_skip,              (uint32_t)N,
                                         (uint32_t)p->row0};
                memcpy(d->push, push, sizeof(push));
                d->n_push = (uint32_t)(sizeof(push) / sizeof(push[0]));
            } else {
                const uint32_t spec[] = {dev->qmv_wg,     rows,
                                         dev->qmv_stage,  dev->qmv_unroll,
                                         dev->qmv_e0m4_f32,  /* E0M4 f32 math only; other shaders ignore it */
                                         dev->qmv_f16_center}; /* 4-bit f16 math only */
                memcpy(d->spec, spec, sizeof(spec));
                d->n_spec = (uint32_t)(sizeof(spec) / sizeof(spec[0]));
                const uint32_t push[] = {(uint32_t)mc, (uint32_t)p->rows, (uint32_t)K, W->group / chunk,
                                         bias ? 1u : 0u, a_skip / 4,       y_skip,      (uint32_t)N,
                                         (uint32_t)p->row0, (uint32_t)KQ};
                memcpy(d->push, push, sizeof(push));
                d->n_push = (uint32_t)(sizeof(push) / sizeof(push[0]));
            }
            d->bind[1] = p->qs;
            d->bind[2] = p->params;
            d->bind[4] = bias ? bias->at : A->at; /* any buffer: has_bias = 0 never reads it */
            d->n_bind = 5;
            if (fuse == 1) {
                d->bind[5] = nd->in[3].at; /* R: Y's shape, bound whole as Y is */
                d->n_bind = 6;
            } else if (fuse == 2 || fuse == 4) {
                d->bind[5] = nd->in[3].weight->piece[0].qs;
                d->bind[6] = nd->in[3].weight->piece[0].params;
                d->n_bind = 7;
            }
            d->groups[0] = (uint32_t)((p->rows + rows - 1) / rows);
            d->groups[1] = (uint32_t)mc;
            d->groups[2] = 1;
        }
    }
    return VKL_OK;
}

vkl_status vkl_vk_record_quant_mat_mul(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    *count = 0;
    qmm_shape s;
    qmm_path path;
    vkl_status st = qmm_plan(nd, &s, &path);
    if (st) return st;
    switch (path) {
    case QMM_GENERAL: return record_general(nd, s.M, s.K, out, count);
    case QMM_EMPTY: return VKL_OK; /* nothing to compute: no dispatch */
    case QMM_GEMM:
        return record_gemm(nd, nd->in[1].dtype, s.M, s.N, s.K, s.KQ, NULL, out, count);
    default: {
        uint32_t matvecs;
        return record_matvec(nd, &s, 0, out, count, &matvecs);
    }
    }
}

/* The fused matvecs: nd as a QuantMatMul node (A, W, bias) with in[3] the
 * residual R or the up weight Wu and out[0] the fused node's output;
 * vk_fuse.c checked vkl_vk_qmm_fusable (and Wu against W) first. The Add
 * (fuse 1) also on the GEMM path. */
static vkl_status record_fused(const vkl_vk_node *nd, int fuse, vkl_vk_dispatch *out, uint32_t *count) {
    *count = 0;
    qmm_shape s;
    qmm_path path;
    vkl_status st = qmm_plan(nd, &s, &path);
    if (!st && path == QMM_GEMM && fuse == 1) { /* the Add on the GEMM: R added as Y is stored */
        const gemm_store add = {&nd->in[3].at, 0};
        return record_gemm(nd, nd->in[1].dtype, s.M, s.N, s.K, s.KQ, &add, out, count);
    }
    if (!st && path != QMM_MATVEC) st = vkl_vk_node_unsupported(nd, "fused, yet not on the matvec path");
    uint32_t matvecs = 0;
    if (!st) st = record_matvec(nd, &s, fuse, out, count, &matvecs);
    /* R is indexed like a whole Y: a second matvec dispatch would misplace it */
    if (!st && matvecs != 1) st = vkl_vk_node_unsupported(nd, "fused, yet in %u matvec dispatches", matvecs);
    return st;
}

vkl_status vkl_vk_record_qmm_add(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    return record_fused(nd, 1, out, count);
}

bool vkl_vk_qmm_glu_codes_fit(const vkl_vk_node *gate, uint32_t steps, uint32_t chunk) {
    const vkl_backend_device *dev = gate->dev;
    const VkPhysicalDeviceLimits *lim = &dev->props.limits;
    qmm_shape s;
    qmm_path path;
    if (!dev->matvec_dot || qmm_plan(gate, &s, &path) || path != QMM_MATVEC) return false;
    /* a counter per step of each row of Y, among the scratch buffer's
     * (attn_decode_sg.comp's too: each node leaves them 0) */
    return s.chunk == chunk && s.N == (int64_t)steps * chunk &&
           (uint64_t)s.M * steps <= VKL_VK_SCRATCH_COUNTERS / 4 &&
           (uint64_t)s.M * vkl_vk_codes_row_vec4s(dev, steps, chunk) * 16 <= dev->bind_limit &&
           lim->maxPerStageDescriptorStorageBuffers >= VKL_VK_GLU_CODES_BINDINGS &&
           lim->maxDescriptorSetStorageBuffers >= VKL_VK_GLU_CODES_BINDINGS;
}

/* With nd->fusion's steps (vk_fuse.c's GLU codes), the _glu_codes build:
 * the _glu's dispatch, its output's codes (made here: no quantizer runs
 * for them) bound whole at 7 and the counters at 8. */
vkl_status vkl_vk_record_qmm_glu(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    const uint32_t steps = nd->fusion ? nd->fusion->steps : 0, chunk = nd->fusion ? nd->fusion->chunk : 0;
    if (!steps) return record_fused(nd, 2, out, count);
    *count = 0;
    if (!vkl_vk_qmm_glu_codes_fit(nd, steps, chunk))
        return vkl_vk_node_unsupported(nd, "its output's codes (%u steps of %u) do not fit the fused gate/up matvec",
                                       steps, chunk);
    const int64_t M = nd->out[0].count / ((int64_t)steps * chunk);
    VkDescriptorBufferInfo codes;
    uint64_t row_vec4s = 0;
    vkl_status st = vkl_vk_codes_made_here(nd, nd->out[0].id, M, steps, chunk, &codes, &row_vec4s);
    if (!st) st = record_fused(nd, 4, out, count);
    if (st) return st;
    vkl_vk_dispatch *d = &out[*count - 1];
    d->bind[7] = codes;
    d->bind[8] = vkl_vk_scratch(0, VKL_VK_SCRATCH_COUNTERS);
    d->n_bind = VKL_VK_GLU_CODES_BINDINGS;
    d->push[d->n_push++] = (uint32_t)row_vec4s;
    return VKL_OK;
}

bool vkl_vk_qmm_qkv_fits(const vkl_backend_device *dev) {
    const VkPhysicalDeviceLimits *lim = &dev->props.limits;
    return lim->maxPerStageDescriptorStorageBuffers >= VKL_VK_QKV_BINDINGS &&
           lim->maxDescriptorSetStorageBuffers >= VKL_VK_QKV_BINDINGS;
}

/* The Q/K/V projections on the GEMM (prefill): each set's GEMM as its own
 * node would record it, side by side (no barrier between them: one A read,
 * outputs apart), so a device short of tiles in one (K and V have few)
 * runs them together; then their split-K sums, each set's planes at its
 * own place in the node's scratch. */
static vkl_status record_qkv_gemm(const vkl_vk_node *member, const qmm_shape *s, uint32_t sets,
                                  vkl_vk_dispatch *out, uint32_t *count) {
    const VkDeviceSize align = member[0].dev->props.limits.minStorageBufferOffsetAlignment > 16
                                   ? member[0].dev->props.limits.minStorageBufferOffsetAlignment
                                   : 16;
    vkl_vk_dispatch sums[3];
    uint32_t n = 0, n_sums = 0;
    gemm_store store = {NULL, 0};
    for (uint32_t j = 0; j < sets; j++) {
        uint32_t c = 0;
        vkl_status st = record_gemm(&member[j], member[j].in[1].dtype, s[j].M, s[j].N, s[j].K, s[j].KQ, &store,
                                    out + n, &c);
        if (st) return st;
        if (c == 2) { /* the sum waits for every GEMM; the next set's planes above this one's */
            sums[n_sums++] = out[n + 1];
            store.planes_at += (out[n + 1].bind[0].range + align - 1) / align * align;
        }
        n++;
    }
    for (uint32_t i = 0; i < n_sums; i++) out[n++] = sums[i];
    *count = n;
    return VKL_OK;
}

/* Set 0's matvec dispatch (record_matvec, after A's quantizer where it is
 * the first reader of A's codes), then sets 1 and 2 bound beside it and
 * their workgroups after set 0's: each set's blocks of rows as its own
 * dispatch would number them, so each row's sum is the unfused one. On the
 * GEMM: record_qkv_gemm. */
vkl_status vkl_vk_record_qmm_qkv(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    *count = 0;
    if (nd->n_in != VKL_VK_QKV_IN || nd->n_out != VKL_VK_QKV_OUT)
        return vkl_vk_node_unsupported(nd, "a fused Q/K/V node of %u inputs and %u outputs", nd->n_in, nd->n_out);
    const uint32_t sets = nd->out[2].id != VKL_NONE ? 3 : 2;
    vkl_vk_tensor in[3][3];
    vkl_vk_node member[3];
    qmm_shape s[3];
    qmm_path path[3];
    for (uint32_t j = 0; j < sets; j++) {
        in[j][0] = nd->in[0];
        in[j][1] = nd->in[1 + 2 * j];
        in[j][2] = nd->in[2 + 2 * j];
        member[j] = *nd;
        member[j].in = in[j];
        member[j].n_in = 3;
        member[j].out = &nd->out[j];
        member[j].n_out = 1;
        vkl_status st = qmm_plan(&member[j], &s[j], &path[j]);
        if (st) return st;
        const vkl_vk_tensor *W = &in[j][1], *bias = in[j][2].id != VKL_NONE ? &in[j][2] : NULL;
        if (path[0] == QMM_GEMM) { /* every set on the GEMM: a dispatch each, nothing shared */
            if (path[j] != QMM_GEMM)
                return vkl_vk_node_unsupported(nd, "fused Q/K/V set %u is not on the GEMM as set 0 is", j);
            continue;
        }
        if (path[j] != QMM_MATVEC || W->weight->n_pieces != 1 || nd->out[j].pieced || (bias && bias->pieced))
            return vkl_vk_node_unsupported(nd, "fused Q/K/V set %u is not one whole matvec", j);
        if (j && (s[j].M != s[0].M || s[j].K != s[0].K || s[j].KQ != s[0].KQ || s[j].format != s[0].format ||
                  W->group != in[0][1].group))
            return vkl_vk_node_unsupported(nd, "fused Q/K/V set %u differs from set 0 in M, K, format or group", j);
    }
    if (path[0] == QMM_GEMM) return record_qkv_gemm(member, s, sets, out, count);
    if (!vkl_vk_qmm_qkv_fits(nd->dev))
        return vkl_vk_node_unsupported(nd, "a fused Q/K/V matvec needs %u storage buffers per stage and set",
                                       VKL_VK_QKV_BINDINGS);
    uint32_t matvecs = 0;
    vkl_status st = record_matvec(&member[0], &s[0], 3, out, count, &matvecs);
    if (st) return st;
    if (matvecs != 1) return vkl_vk_node_unsupported(nd, "fused, yet in %u matvec dispatches", matvecs);
    const vkl_backend_device *dev = nd->dev;
    vkl_vk_dispatch *d = &out[*count - 1];
    const uint32_t rows = dev->matvec_dot ? dev->qmv_rows * (dev->qmv_wg / dev->qmv_team) : dev->qmv_rows;
    uint32_t first[4] = {0}, y_off[3] = {0}, n_rows[3] = {0}, has_bias[3] = {0};
    for (uint32_t j = 0; j < 3; j++) {
        const int64_t blocks = j < sets ? (s[j].N + rows - 1) / rows : 0;
        if (first[j] + blocks > dev->props.limits.maxComputeWorkGroupCount[0])
            return vkl_vk_node_unsupported(nd, "fused Q/K/V sets of %lld rows exceed the dispatch range",
                                           (long long)(s[0].N + s[1].N + (sets > 2 ? s[2].N : 0)));
        first[j + 1] = first[j] + (uint32_t)blocks;
        if (!j || j >= sets) continue;
        const vkl_vk_tensor *Y = &nd->out[j], *bias = in[j][2].id != VKL_NONE ? &in[j][2] : NULL;
        const vkl_vk_piece *p = &in[j][1].weight->piece[0];
        VkDescriptorBufferInfo *b = &d->bind[1 + 4 * j];
        if (!vkl_vk_sub_range(dev, Y->at, 0, (VkDeviceSize)(s[j].M * s[j].N * 4), &b[2], &y_off[j]))
            return vkl_vk_node_unsupported(nd, "fused Q/K/V set %u's Y does not bind within the binding limit", j);
        b[0] = p->qs;
        b[1] = p->params;
        b[3] = bias ? bias->at : nd->in[0].at; /* any buffer: has_bias = 0 never reads it */
        n_rows[j] = (uint32_t)s[j].N;
        has_bias[j] = bias ? 1u : 0u;
    }
    if (sets == 2) /* set 2 has no workgroups: any valid buffers */
        for (uint32_t i = 0; i < 4; i++) d->bind[9 + i] = d->bind[5 + i];
    d->n_bind = VKL_VK_QKV_BINDINGS;
    const uint32_t push[] = {n_rows[1], n_rows[2], first[1], first[2], y_off[1], y_off[2], has_bias[1], has_bias[2]};
    memcpy(d->push + d->n_push, push, sizeof(push));
    d->n_push += (uint32_t)(sizeof(push) / sizeof(push[0]));
    d->groups[0] = first[3];
    return VKL_OK;
}
