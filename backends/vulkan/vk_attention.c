/* Attention on Vulkan: two kernels, chosen at prepare by the number of
 * query rows.
 *
 *   prefill (attn_prefill.comp): one fused flash-attention dispatch, a
 *     workgroup per (query tile, query head, batch), K/V tiles through
 *     shared memory, online softmax.
 *   decode (attn_decode.comp + attn_combine.comp): split-K flash decoding
 *     for S <= DECODE_MAX_S query rows: the visible keys split into chunks
 *     over workgroups, each attending the query rows of one KV head (GQA:
 *     K and V read once for the group, up to DECODE_MAX_R rows at a time),
 *     partial (max, sum, output) to the executable's scratch buffer, then a
 *     small dispatch merges the chunks (or the chunks' last workgroup:
 *     attn_fold for attn_decode_sg.comp, attn_wg_fold for attn_decode.comp,
 *     on by default where few chunks). Where only integer-dot matvecs read the output (vk_fuse.c's
 *     ATTN_CODES: the o_proj), the merge writes their int8 codes in its
 *     place (vkl_vk_record_attention_codes).
 *
 * Both read Q, K, V and the mask in any dtype the ref op takes (the int8 /
 * fp8 cache decoded on load, exactly as engine/quant), compute in f32 (f64
 * in the _f64 variants, for f64 tensors on devices with shaderFloat64) and
 * follow the ref op's rules: causal and sliding window relative to the
 * query's position T - S + i, GQA head mapping, bool or additive float
 * mask broadcast to [B, Hq, S, T], a row with no visible key is zeros. The
 * shape checks the ref kernel makes at run time are made here with its
 * statuses. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../engine/graph.h"
#include "../../engine/ops.h"
#include "vk_internal.h"

#define ATTN_WG 64
#define DECODE_WG 128   /* attn_decode.comp's invocations by default: at Dv <= 128, two or more key lanes for V */
#define DECODE_MAX_S 4  /* query rows per head that decode (split-K) rather than prefill */
#define DECODE_MAX_R 16 /* rows one decode workgroup holds (of the Hq / Hkv * S of a KV head) */
#define DECODE_CH 64    /* keys per block in attn_decode.comp: one per invocation */
#define VENDOR_NVIDIA 0x10DEu /* PCI vendor id, VkPhysicalDeviceProperties::vendorID */
#define MAX_SPLITS 256  /* attn_combine.comp's and attn_decode_sg.comp's MAXSPLIT */
#define COMBINE_WG 256  /* attn_combine.comp's invocations: Dv = 128 gives 4 chunk lanes */
#define FOLD_MAX_SPLITS 64 /* attn_decode.comp's MAXSPLIT: the most chunks its fold merges */
#define FOLD_CB 16      /* attn_decode.comp's MG_CB: chunks its fold loads in one round */
/* attn_decode_sg.comp's counters: the scratch buffer's first bytes
 * (vk_internal.h); every decode node's partials lie past them, in its own
 * scratch range (vk_scratch.c). */
#define COUNTER_BYTES VKL_VK_SCRATCH_COUNTERS

typedef struct attn {
    const vkl_vk_tensor *q, *k, *v, *mask, *o;
    int64_t B, Hq, Hkv, S, T, D, DV;
    bool layout1, causal, f64;
    int64_t window;            /* clamped to [0, T + S + 1]: beyond that it changes nothing */
    double scale;
    int64_t mstride[4];        /* the mask's strides over [B, Hq, S, T] */
    uint32_t dts;              /* dtypes packed for the shaders' DTS constant */
    int64_t lo, hi;            /* keys some query row may see */
    size_t es;                 /* bytes of the shaders' REAL */
} attn;

static bool is_float(vkl_dtype t) {
    return t == VKL_DTYPE_F32 || t == VKL_DTYPE_F16 || t == VKL_DTYPE_BF16 || t == VKL_DTYPE_F64;
}

static bool kv_dtype_ok(const vkl_vk_tensor *t, int64_t width) {
    if (t->dtype == VKL_DTYPE_Q_INT8) return width > 0 && t->group == (uint64_t)width;
    return is_float(t->dtype) || t->dtype == VKL_DTYPE_FP8_E4M3 || t->dtype == VKL_DTYPE_FP8_E5M2;
}

static bool kv_coded(vkl_dtype t) {
    return t == VKL_DTYPE_FP8_E4M3 || t == VKL_DTYPE_FP8_E5M2 || t == VKL_DTYPE_Q_INT8;
}

/* The mask's strides under numpy broadcasting to [B, Hq, S, T]. */
static vkl_status mask_strides(const vkl_vk_node *nd, const vkl_vk_tensor *m, const int64_t dims[4], int64_t s[4]) {
    if (m->rank > 4) return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "the mask has rank %u; at most 4", m->rank);
    int64_t step = 1;
    for (int32_t d = 3, md = (int32_t)m->rank - 1; d >= 0; d--, md--) {
        const int64_t n = md >= 0 ? m->dims[md] : 1;
        if (n != dims[d] && n != 1)
            return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "the mask's dim %d (%lld) does not broadcast to %lld", md,
                                    (long long)n, (long long)dims[d]);
        s[d] = n == 1 ? 0 : step;
        step *= n;
    }
    return VKL_OK;
}

/* Reads and checks the node as the ref kernel does, then what the shaders need. */
static vkl_status attn_read(const vkl_vk_node *nd, attn *a) {
    memset(a, 0, sizeof(*a));
    a->q = &nd->in[0], a->k = &nd->in[1], a->v = &nd->in[2], a->o = &nd->out[0];
    a->mask = nd->n_in > 3 && nd->in[3].id != VKL_NONE ? &nd->in[3] : NULL;
    const vkl_vk_tensor *q = a->q, *k = a->k, *v = a->v, *mask = a->mask;
    if (!is_float(q->dtype)) return vkl_vk_node_unsupported(nd, "Q dtype %s is not supported", vkl_dtype_name(q->dtype));
    if (mask && mask->dtype != VKL_DTYPE_BOOL && !is_float(mask->dtype))
        return vkl_vk_node_unsupported(nd, "mask dtype %s is not supported", vkl_dtype_name(mask->dtype));
    int64_t layout, causal, window;
    float scale;
    vkl_status st = vkl_op_attr_int(nd->g, nd->index, "kv_layout", &layout);
    if (!st) st = vkl_op_attr_int(nd->g, nd->index, "causal", &causal);
    if (!st) st = vkl_op_attr_int(nd->g, nd->index, "window", &window);
    if (!st) st = vkl_op_attr_float(nd->g, nd->index, "scale", &scale);
    if (st) return st;
    if (q->rank != 4 || k->rank != 4 || v->rank != 4 || (layout != 0 && layout != 1))
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "Q, K, V must be 4-D and kv_layout 0 or 1");
    static const uint32_t pos0[4] = {0, 1, 2, 3}, pos1[4] = {1, 2, 0, 3}; /* B, Hkv, T, D in K and V */
    const uint32_t *p = layout ? pos1 : pos0;
    a->layout1 = layout == 1;
    a->B = q->dims[0], a->Hq = q->dims[1], a->S = q->dims[2], a->D = q->dims[3];
    a->Hkv = k->dims[p[1]], a->T = k->dims[p[2]], a->DV = v->dims[p[3]];
    const int64_t eq[5][2] = {{k->dims[p[0]], a->B}, {v->dims[p[0]], a->B}, {v->dims[p[1]], a->Hkv},
                              {v->dims[p[2]], a->T}, {k->dims[p[3]], a->D}};
    static const char *const what[5] = {"K's and Q's batch", "V's and Q's batch", "V's and K's heads",
                                        "V's and K's lengths", "K's and Q's head dims"};
    for (int i = 0; i < 5; i++)
        if (eq[i][0] != eq[i][1])
            return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "%s differ (%lld vs %lld)", what[i], (long long)eq[i][0],
                                    (long long)eq[i][1]);
    if (a->Hkv == 0 ? a->Hq != 0 : a->Hq % a->Hkv != 0)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "Q's %lld heads are not a multiple of K's %lld", (long long)a->Hq,
                                (long long)a->Hkv);
    const int64_t scores[4] = {a->B, a->Hq, a->S, a->T};
    if (mask && (st = mask_strides(nd, mask, scores, a->mstride))) return st;
    if (!kv_dtype_ok(k, a->D))
        return vkl_vk_node_unsupported(nd, "K of dtype %s (group %u) is not supported", vkl_dtype_name(k->dtype),
                                       k->group);
    if (!kv_dtype_ok(v, a->DV))
        return vkl_vk_node_unsupported(nd, "V of dtype %s (group %u) is not supported", vkl_dtype_name(v->dtype),
                                       v->group);
    if (!a->layout1 && (kv_coded(k->dtype) || kv_coded(v->dtype)))
        return vkl_vk_node_unsupported(nd, "int8 / fp8 K and V need kv_layout 1");
    a->causal = causal != 0;
    a->window = window <= 0 ? 0 : window > a->T + a->S + 1 ? a->T + a->S + 1 : window;
    a->scale = scale != 0 ? scale : 1.0 / sqrt((double)a->D);

    /* what the shaders can do */
    const vkl_backend_device *dev = nd->dev;
    a->f64 = q->dtype == VKL_DTYPE_F64 || k->dtype == VKL_DTYPE_F64 || v->dtype == VKL_DTYPE_F64 ||
             (mask && mask->dtype == VKL_DTYPE_F64);
    if (a->f64 && !dev->has_f64)
        return vkl_vk_node_unsupported(nd, "f64 tensors need shaderFloat64: %s has none (or VKL_VK_NO_F64 is set)",
                                       dev->caps.device_name);
    a->es = a->f64 ? 8 : 4;
    if (a->o->dtype != q->dtype || a->o->count != a->B * a->Hq * a->S * a->DV)
        return vkl_vk_node_unsupported(nd, "the output is not [B, Hq, S, Dv] of Q's dtype");
    if ((q->dtype == VKL_DTYPE_F16 || q->dtype == VKL_DTYPE_BF16) && a->DV % 2)
        return vkl_vk_node_unsupported(nd, "a %s output with Dv = %lld: rows of 16-bit elements must be whole "
                                       "32-bit words", vkl_dtype_name(q->dtype), (long long)a->DV);
    if ((k->weight && vkl_dtype_is_quantized(k->dtype)) || (v->weight && vkl_dtype_is_quantized(v->dtype)))
        return vkl_vk_node_unsupported(nd, "an int8 K or V that is a loaded weight is repacked for the matvecs; the "
                                       "kernels read cache rows");
    const vkl_vk_tensor *all[5] = {q, k, v, mask, a->o};
    for (int i = 0; i < 5; i++)
        if (all[i] && all[i]->bytes >= (1ull << 32))
            return vkl_vk_node_unsupported(nd, "a tensor of %zu bytes: the kernels index in 32 bits", all[i]->bytes);
    if (a->T >= (1ll << 30) || a->S >= (1ll << 30) || a->Hq > dev->props.limits.maxComputeWorkGroupCount[1] ||
        a->B > dev->props.limits.maxComputeWorkGroupCount[2])
        return vkl_vk_node_unsupported(nd, "B = %lld, Hq = %lld, S = %lld, T = %lld exceed the kernels' ranges",
                                       (long long)a->B, (long long)a->Hq, (long long)a->S, (long long)a->T);
    a->dts = (uint32_t)q->dtype | (uint32_t)k->dtype << 6 | (uint32_t)v->dtype << 12 |
             (mask ? (uint32_t)mask->dtype : 0u) << 18;
    /* query i is at position T - S + i: row 0 sees the earliest keys, row
     * S - 1 (at T - 1) the latest, causal or not */
    a->hi = a->T;
    a->lo = a->window ? a->T - a->S - a->window + 1 : 0;
    if (a->lo < 0) a->lo = 0;
    if (a->lo > a->hi) a->lo = a->hi;
    return VKL_OK;
}

/* The push constants both attention kernels start with. */
static uint32_t push_common(const attn *a, uint32_t *push) {
    uint32_t n = 0;
    push[n++] = (uint32_t)a->B;
    push[n++] = (uint32_t)a->Hq;
    push[n++] = (uint32_t)a->Hkv;
    push[n++] = (uint32_t)a->S;
    push[n++] = (uint32_t)a->T;
    push[n++] = a->causal ? 1u : 0u;
    push[n++] = (uint32_t)a->window;
    if (a->f64) {
        uint64_t bits;
        memcpy(&bits, &a->scale, 8);
        push[n++] = (uint32_t)bits;
        push[n++] = (uint32_t)(bits >> 32);
    } else {
        const float f = (float)a->scale;
        memcpy(&push[n++], &f, 4);
        push[n++] = 0;
    }
    for (int d = 0; d < 4; d++) push[n++] = (uint32_t)a->mstride[d];
    return n;
}

static void bind_qkvm(const attn *a, vkl_vk_dispatch *d) {
    d->bind[0] = a->q->at;
    d->bind[1] = a->k->at;
    d->bind[2] = a->v->at;
    d->bind[3] = a->mask ? a->mask->at : a->q->at; /* any buffer: MDT = 0 never reads it */
    d->n_bind = 5;
}

/* Both prefill kernels' bindings, push constants and grid: a workgroup
 * per (query tile, query head, batch). */
static void prefill_bindings(const attn *a, int64_t tiles, vkl_vk_dispatch *d) {
    bind_qkvm(a, d);
    d->bind[4] = a->o->at;
    d->n_push = push_common(a, d->push);
    d->groups[0] = (uint32_t)tiles;
    d->groups[1] = (uint32_t)a->Hq;
    d->groups[2] = (uint32_t)a->B;
}

/* attn_prefill.comp's sK (rows of D rounded up to 4, plus 4), sV and sP */
static size_t prefill_shared(const attn *a, int64_t br, int64_t bc) {
    const int64_t d4 = (a->D + 3) / 4, dv4 = (a->DV + 3) / 4;
    return a->es * (size_t)(bc * 4 * (d4 + 1) + bc * 4 * dv4 + br * bc);
}

/* Invocations of a prefill workgroup: 4 per query row, at least ATTN_WG. */
static uint32_t prefill_wg(int64_t br) { return br * 4 > ATTN_WG ? (uint32_t)br * 4 : ATTN_WG; }

static vkl_status record_prefill(const vkl_vk_node *nd, const attn *a, vkl_vk_dispatch *d) {
    const uint32_t smem = nd->dev->props.limits.maxComputeSharedMemorySize;
    /* tiles: up to attn_rows query rows (fewer when S is small), attn_keys
     * keys; halved (keys first) until K, V and the scores fit in shared
     * memory */
    int64_t br = 1, bc = nd->dev->attn_keys;
    while (br < nd->dev->attn_rows && br < a->S) br *= 2;
    while (prefill_shared(a, br, bc) > smem && (bc > 4 || br > 1)) {
        if (bc > 4) bc /= 2;
        else br /= 2;
    }
    if (prefill_shared(a, br, bc) > smem)
        return vkl_vk_node_unsupported(nd, "D = %lld, Dv = %lld: even the smallest tile needs %zu bytes of shared "
                                       "memory; the device has %u", (long long)a->D, (long long)a->DV,
                                       prefill_shared(a, br, bc), smem);
    const int64_t tiles = (a->S + br - 1) / br;
    if (tiles > nd->dev->props.limits.maxComputeWorkGroupCount[0])
        return vkl_vk_node_unsupported(nd, "S = %lld: %lld query tiles exceed the dispatch range", (long long)a->S,
                                       (long long)tiles);
    d->shader = a->f64 ? "attn_prefill_f64" : "attn_prefill";
    const uint32_t spec[] = {prefill_wg(br), (uint32_t)br, (uint32_t)bc, (uint32_t)a->D, (uint32_t)a->DV, a->dts,
                             a->layout1 ? 1u : 0u};
    d->n_spec = (uint32_t)(sizeof(spec) / sizeof(spec[0]));
    memcpy(d->spec, spec, sizeof(spec));
    prefill_bindings(a, tiles, d);
    return VKL_OK;
}

/* attn_prefill_cm.comp's shared memory at nsg subgroups (16 query rows
 * each) and bc keys a tile: K's and V's fp16 rows padded to multiples of 8
 * halves plus 8 (bank staggering), over which Q's are staged first (the
 * emulation stages Q apart); the f32 scores and weights (rows of bc + 4),
 * a 16 x 16 staging a subgroup; three words a row, two a row and lane part
 * (lanes / 16 lanes share a row where the subgroup has 32 or more, else 2). */
static size_t prefill_cm_shared(const vkl_backend_device *dev, const attn *a, uint32_t nsg, uint32_t bc) {
    const size_t br = 16 * (size_t)nsg, sq = (size_t)(a->D + 15) / 16 * 2 + 1, sv = (size_t)(a->DV + 15) / 16 * 2 + 1;
    const size_t kv = bc * (sq + sv), q = br * sq, lpr = dev->subgroup_size >= 32 ? dev->subgroup_size / 16 : 2;
    return 16 * ((kv > q ? kv : q) + (dev->attn_cm == 2 ? q : 0)) + 4 * br * (bc + 4) + 4 * 256 * (size_t)nsg +
           12 * br + 8 * br * lpr;
}

/* The prefill on the matrix units where the device has it (attn_cm) and
 * the node suits it: f32 math on float K and V (an int8 / fp8 cache or f64
 * keeps attn_prefill.comp), head dims to 256 (the output fragments live in
 * registers) and a tile in shared memory: the device's (attn_cm_sg,
 * attn_cm_keys), fewer subgroups where S is short, halved (keys first)
 * until it fits. false: record_prefill's kernel instead. */
static bool record_prefill_cm(const vkl_vk_node *nd, const attn *a, vkl_vk_dispatch *d) {
    const vkl_backend_device *dev = nd->dev;
    if (!dev->attn_cm || a->f64 || kv_coded(a->k->dtype) || kv_coded(a->v->dtype) || a->D > 256 || a->DV > 256)
        return false;
    uint32_t nsg = dev->attn_cm_sg, bc = dev->attn_cm_keys;
    while (nsg > 1 && 16 * (int64_t)(nsg / 2) >= a->S) nsg /= 2;
    const uint32_t smem = dev->props.limits.maxComputeSharedMemorySize;
    while (prefill_cm_shared(dev, a, nsg, bc) > smem && (bc > 16 || nsg > 1)) {
        if (bc > 16) bc /= 2;
        else nsg /= 2;
    }
    const int64_t tiles = (a->S + 16 * nsg - 1) / (16 * nsg);
    if (prefill_cm_shared(dev, a, nsg, bc) > smem || tiles > dev->props.limits.maxComputeWorkGroupCount[0]) return false;
    d->shader = dev->attn_cm == 2 ? "attn_prefill_cm_emu" : "attn_prefill_cm";
    /* bit 1: K and V bound at 16-byte offsets, so their rows load as uvec4s */
    const bool aligned = a->k->at.offset % 16 == 0 && a->v->at.offset % 16 == 0;
    const uint32_t spec[] = {nsg * dev->subgroup_size, nsg, bc, (uint32_t)a->D, (uint32_t)a->DV, a->dts,
                             (a->layout1 ? 1u : 0u) | (aligned ? 2u : 0u)};
    d->n_spec = (uint32_t)(sizeof(spec) / sizeof(spec[0]));
    memcpy(d->spec, spec, sizeof(spec));
    prefill_bindings(a, tiles, d);
    return true;
}

/* attn_decode.comp's shared memory at `rows` rows a workgroup, with or
 * without its fold (which merges all of them at once): sQ, sS, the row
 * state, sO (the key lanes 1.. KL-1 of the V sum), sPart (at most 64 strips
 * a row), sSeen and sLast; then attn_merge.glsl's arrays: the chunks'
 * weights and sums, the chunk lanes' sums (at most 2 * WG) and the codes
 * builds' rows. */
static size_t decode_shared(const attn *a, uint32_t wg, int64_t rows, bool fold) {
    const int64_t pairs = (a->DV + 1) / 2, lanes = pairs >= wg ? 1 : wg / pairs;
    const int64_t fold_rows = fold ? rows : 1, splits = fold ? FOLD_MAX_SPLITS : 1;
    return a->es * (size_t)(rows * a->D + rows * DECODE_CH + 4 * rows + 2 * (lanes - 1) * rows * pairs + rows * 64 +
                            2 * fold_rows * splits + fold_rows + 2 * (int64_t)wg) +
           4 * (size_t)(rows + 1 + fold_rows * a->DV);
}

/* Rows one decode workgroup takes: all G * S of its KV head, at most DECODE_MAX_R. */
static int64_t decode_block(const attn *a) {
    const int64_t rows = a->Hkv ? a->Hq / a->Hkv * a->S : 0;
    return rows < DECODE_MAX_R ? rows : DECODE_MAX_R;
}

/* attn_decode.comp's invocations: attn_wg_size (options.attention_wg_size),
 * halved (to DECODE_CH, one key each) while its key lanes' sums do not fit
 * in shared memory. */
static uint32_t decode_wg(const vkl_backend_device *dev, const attn *a, int64_t rows) {
    uint32_t wg = dev->attn_wg_size;
    while (wg > DECODE_CH && decode_shared(a, wg, rows, false) > dev->props.limits.maxComputeSharedMemorySize) wg /= 2;
    return wg;
}

/* Whether split-K decoding can take this node: a non-empty key range,
 * shared memory for a block of queries and its scores, the dispatch. */
static bool decode_fits(const vkl_vk_node *nd, const attn *a) {
    const int64_t rb = decode_block(a), rows = a->Hkv ? a->Hq / a->Hkv * a->S : 0;
    const VkPhysicalDeviceLimits *lim = &nd->dev->props.limits;
    return rb >= 1 && a->hi > a->lo &&
           decode_shared(a, decode_wg(nd->dev, a, rb), rb, false) <= lim->maxComputeSharedMemorySize &&
           a->Hkv * ((rows + rb - 1) / rb) <= lim->maxComputeWorkGroupCount[1] &&
           rows <= lim->maxComputeWorkGroupCount[0]; /* the combine: a workgroup per row */
}

/* attn_decode_sg.comp's workgroup: 4 subgroups (at most the device's
 * invocation limit), or 0 where it cannot run: it needs subgroup
 * arithmetic at one fixed size, f32 math, D a multiple of 4, even Dv and
 * its shared memory (sQ, sP, sM, sL, sO); chosen by itself (AUTO) from
 * attn_sg_from keys on. */
static uint32_t decode_sg_wg(const vkl_backend_device *dev, const attn *a, int64_t rows) {
    if (dev->attn_kernel == VKL_VULKAN_ATTENTION_AUTO && a->hi - a->lo < (int64_t)dev->attn_sg_from) return 0;
    const uint32_t sg = dev->subgroup_size;
    uint32_t nsg = 4;
    while (nsg > 1 && nsg * sg > dev->props.limits.maxComputeWorkGroupInvocations) nsg /= 2;
    /* coded caches (int8 / fp8) decode a word of 4 codes per load: their
     * K rows gain nothing from a lane reading them whole, and an H200 ran
     * them slower here (T 4096: 0.041 ms vs 0.032 in attn_decode.comp) */
    const bool coded = kv_coded(a->k->dtype) || kv_coded(a->v->dtype);
    if (!dev->subgroup_arith || !dev->subgroup_fixed || dev->attn_kernel == VKL_VULKAN_ATTENTION_DECODE_WG || a->f64 || coded ||
        a->D % 4 || a->DV % 2 || !a->DV || !sg || nsg * sg > dev->props.limits.maxComputeWorkGroupSize[0] ||
        a->B * a->Hkv * ((a->Hq / a->Hkv * a->S + rows - 1) / rows) > COUNTER_BYTES / 4)
        return 0;
    const size_t shared = 4 * (size_t)(rows * a->D + nsg * rows * sg + 2 * nsg * rows + nsg * rows * a->DV);
    return shared <= dev->props.limits.maxComputeSharedMemorySize ? nsg * sg : 0;
}

/* Where the merge of a decode writes the integer-dot matvecs' codes of its
 * output in place of the output (vkl_vk_record_attention_codes): the
 * codes' range (bound whole), their rows' elements (cols = steps * chunk),
 * steps and elements per step, uvec4s per row. */
typedef struct codes_target {
    VkDescriptorBufferInfo at;
    uint32_t cols, steps, chunk;
    uint64_t row_vec4s;
} codes_target;

static vkl_status record_decode(const vkl_vk_node *nd, const attn *a, const codes_target *codes, vkl_vk_dispatch *d,
                                uint32_t *count) {
    const vkl_backend_device *dev = nd->dev;
    const int64_t rows = a->Hq / a->Hkv * a->S, len = a->hi - a->lo, rb = decode_block(a), nrb = (rows + rb - 1) / rb;
    /* chunks: enough workgroups to fill the device (attn_target over the
     * B * Hkv groups), none shorter than one block of keys (an H100 ran a
     * 1B decode 8% faster with 64-key chunks than with 128: each chunk's
     * blocks run one after another, the chunks side by side); the subgroup
     * kernel's block is a round of keys for each of its subgroups */
    const uint32_t sg_wg = decode_sg_wg(dev, a, rb);
    const int64_t unit = sg_wg ? sg_wg : DECODE_CH;
    int64_t n = dev->attn_splits ? dev->attn_splits : (dev->attn_target + a->B * a->Hkv - 1) / (a->B * a->Hkv);
    if (n > (len + unit - 1) / unit) n = (len + unit - 1) / unit;
    if (n > MAX_SPLITS) n = MAX_SPLITS;
    if (n < 1) n = 1;
    const size_t row_bytes = a->es * (size_t)(a->DV + 2);
    const size_t per_split = row_bytes * (size_t)(a->B * a->Hkv * rows);
    while (n > 1 && per_split * (size_t)n > dev->props.limits.maxStorageBufferRange) n--;
    int64_t kps = (len + n - 1) / n;
    kps = (kps + unit - 1) / unit * unit;
    n = (len + kps - 1) / kps; /* every chunk holds keys */
    const size_t scratch = per_split * (size_t)n;
    if (scratch > dev->props.limits.maxStorageBufferRange || scratch / 4 >= (1ull << 32))
        return vkl_vk_node_unsupported(nd, "the split-K partials (%zu bytes) exceed a storage buffer", scratch);
    const VkDeviceSize own = vkl_vk_scratch_own(nd); /* the partials: this node's own scratch */

    /* attn_decode.comp's fold: where the chunks are few enough, the
     * counters and its shared memory fit */
    const uint32_t wg = decode_wg(dev, a, rb);
    const bool wg_fold = !sg_wg && n <= (int64_t)dev->attn_wg_fold &&
                         a->B * a->Hkv * nrb <= COUNTER_BYTES / 4 &&
                         decode_shared(a, wg, rb, true) <= dev->props.limits.maxComputeSharedMemorySize;
    const bool folds = sg_wg ? dev->attn_fold != 0 : wg_fold;
    /* the codes: written by the fold where it merges, else by the combine */
    const bool fold_codes = codes && folds;
    if (sg_wg) {
        d->shader = !fold_codes ? "attn_decode_sg" : codes->chunk == 16 ? "attn_decode_sg_codes_bytes"
                                                                        : "attn_decode_sg_codes";
        const uint32_t spec[] = {sg_wg,  (uint32_t)rb,         dev->subgroup_size,    (uint32_t)a->D, (uint32_t)a->DV,
                                 a->dts, a->layout1 ? 1u : 0u, (uint32_t)a->o->dtype, dev->attn_fold,
                                 dev->qmv_dot_residual};
        _Static_assert(sizeof(spec) <= sizeof(d->spec), "VKL_VK_MAX_SPEC is too small for attn_decode_sg");
        d->n_spec = (uint32_t)(sizeof(spec) / sizeof(spec[0])) - (fold_codes ? 0 : 1);
        memcpy(d->spec, spec, sizeof(spec));
    } else {
        d->shader = !fold_codes ? (a->f64 ? "attn_decode_f64" : "attn_decode")
                    : codes->chunk == 16 ? "attn_decode_codes_bytes" : "attn_decode_codes";
        const uint32_t vb = dev->attn_wg_vb; /* V rows an invocation has in flight */
        /* loads issued early: V (bit 1), K (bit 2; D / 4 vec4 registers, so to D 128) */
        const uint32_t flags = (a->layout1 ? 1u : 0u) | (dev->attn_wg_preload & 1u ? 2u : 0u) |
                               (dev->attn_wg_preload & 2u && a->D % 4 == 0 && a->D <= 128 ? 4u : 0u);
        const uint32_t spec[] = {wg,     (uint32_t)rb, DECODE_CH,             (uint32_t)a->D,    (uint32_t)a->DV,
                                 a->dts, flags,        (uint32_t)a->o->dtype, wg_fold ? 1u : 0u, vb,
                                 dev->attn_wg_parts, dev->qmv_dot_residual};
        _Static_assert(sizeof(spec) <= sizeof(d->spec), "VKL_VK_MAX_SPEC is too small for attn_decode");
        d->n_spec = (uint32_t)(sizeof(spec) / sizeof(spec[0])) - (fold_codes ? 0 : 1);
        memcpy(d->spec, spec, sizeof(spec));
    }
    bind_qkvm(a, d);
    d->bind[4] = vkl_vk_scratch(own, scratch);
    /* bound with or without a fold: the shaders declare them */
    d->bind[5] = vkl_vk_scratch(0, COUNTER_BYTES);
    d->bind[6] = fold_codes ? codes->at : a->o->at;
    d->n_bind = 7;
    uint32_t np = push_common(a, d->push);
    d->push[np++] = (uint32_t)a->lo;
    d->push[np++] = (uint32_t)a->hi;
    d->push[np++] = (uint32_t)kps;
    d->push[np++] = (uint32_t)n;
    d->push[np++] = (uint32_t)rows;
    d->push[np++] = (uint32_t)nrb;
    if (fold_codes) {
        d->push[np++] = codes->cols;
        d->push[np++] = codes->steps;
        d->push[np++] = (uint32_t)codes->row_vec4s;
    }
    d->n_push = np;
    d->groups[0] = (uint32_t)n;
    d->groups[1] = (uint32_t)(a->Hkv * nrb);
    d->groups[2] = (uint32_t)a->B;
    *count = 1;
    if (folds) return VKL_OK; /* the chunks' last workgroups merge them */

    vkl_vk_dispatch *c = d + 1;
    c->shader = codes ? (codes->chunk == 16 ? "attn_combine_codes_bytes" : "attn_combine_codes")
                : a->f64 ? "attn_combine_f64" : "attn_combine";
    const uint32_t cspec[] = {COMBINE_WG, (uint32_t)a->DV, (uint32_t)a->q->dtype, MAX_SPLITS, dev->qmv_dot_residual};
    c->n_spec = (uint32_t)(sizeof(cspec) / sizeof(cspec[0])) - (codes ? 0 : 1);
    memcpy(c->spec, cspec, sizeof(cspec));
    c->bind[0] = vkl_vk_scratch(own, scratch);
    c->bind[1] = codes ? codes->at : a->o->at;
    c->n_bind = 2;
    const uint32_t cpush[] = {(uint32_t)a->Hq, (uint32_t)a->Hkv, (uint32_t)a->S, (uint32_t)rows, (uint32_t)n,
                              codes ? codes->cols : 0, codes ? codes->steps : 0,
                              codes ? (uint32_t)codes->row_vec4s : 0};
    c->n_push = (uint32_t)(sizeof(cpush) / sizeof(cpush[0])) - (codes ? 0 : 3);
    memcpy(c->push, cpush, sizeof(cpush));
    c->groups[0] = (uint32_t)rows;
    c->groups[1] = (uint32_t)a->Hkv;
    c->groups[2] = (uint32_t)a->B;
    *count = 2;
    return VKL_OK;
}

/* Whether the node runs split-K decoding: by the number of query rows;
 * options.attention PREFILL / DECODE force one where it applies. */
static bool takes_decode(const vkl_vk_node *nd, const attn *a) {
    const uint32_t kind = nd->dev->attn_kernel;
    return kind != 1 && (kind >= 2 || a->S <= DECODE_MAX_S) && decode_fits(nd, a);
}

vkl_status vkl_vk_record_attention(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    attn a;
    *count = 0;
    vkl_status st = attn_read(nd, &a);
    if (st || !a.o->count) return st;
    if (!a.D) return vkl_vk_node_unsupported(nd, "head dim 0");
    if (takes_decode(nd, &a)) return record_decode(nd, &a, NULL, out, count);
    if (record_prefill_cm(nd, &a, out)) {
        *count = 1;
        return VKL_OK;
    }
    st = record_prefill(nd, &a, out);
    if (!st) *count = 1;
    return st;
}

/* The codes' conditions (attn_combine.comp's _codes builds): a decode
 * with an f32 output, read flat as rows of cols = steps * chunk elements,
 * each merged row's Dv values whole steps of one of those rows, and the
 * codes within one binding. */
static bool codes_fit(const vkl_vk_node *nd, const attn *a, int64_t cols, uint32_t steps, uint32_t chunk) {
    if (!a->o->count || !a->D || a->f64 || a->o->dtype != VKL_DTYPE_F32 || !takes_decode(nd, a) || !chunk ||
        cols <= 0 || (uint64_t)steps * chunk != (uint64_t)cols || a->DV % chunk || cols % a->DV ||
        a->o->count % cols)
        return false;
    const uint64_t bytes = (uint64_t)(a->o->count / cols) * vkl_vk_codes_row_vec4s(nd->dev, steps, chunk) * 16;
    return bytes <= nd->dev->bind_limit;
}

bool vkl_vk_attn_codes_fit(const vkl_vk_node *nd, int64_t cols, uint32_t steps, uint32_t chunk) {
    attn a;
    return nd->n_out == 1 && !attn_read(nd, &a) && codes_fit(nd, &a, cols, steps, chunk);
}

vkl_status vkl_vk_record_attention_codes(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    attn a;
    *count = 0;
    const vkl_vk_fusion *f = nd->fusion;
    codes_target t = {.cols = f->steps * f->chunk, .steps = f->steps, .chunk = f->chunk};
    vkl_status st = attn_read(nd, &a);
    if (!st && !codes_fit(nd, &a, t.cols, t.steps, t.chunk))
        st = vkl_vk_node_unsupported(nd, "its decode does not write codes of %u steps of %u", t.steps, t.chunk);
    /* before the node's own scratch (record_decode's partials), which must lie above the codes */
    if (!st) st = vkl_vk_codes_made_here(nd, f->extra, a.o->count / t.cols, t.steps, t.chunk, &t.at, &t.row_vec4s);
    return st ? st : record_decode(nd, &a, &t, out, count);
}

/* Whether prefill attention runs on the matrix units (attn_cm), and its
 * largest tile: 4 subgroups (64 query rows, as the scalar kernel's tile)
 * of 32 keys (record_prefill_cm halves it where shared memory is short),
 * or attention_rows / 16 subgroups and attention_keys keys where those
 * options ask for at least 16. The device needs VK_NV_cooperative_matrix
 * with the 16x16x16 fp16 -> f32 shape (vk_gemm_tuning.c's probe), neither
 * coopmat nor fp16 turned off, and math not F32 (which asks for f32
 * products); the emulation needs only a known subgroup size. */
static vkl_status prefill_cm_tuning(vkl_backend_device *dev, const vkl_vulkan_options *o) {
    const uint32_t need = VKL_FEATURE_COOPMAT | VKL_FEATURE_FP16;
    const VkPhysicalDeviceLimits *lim = &dev->props.limits;
    const bool can = dev->has_coopmat_nv && (dev->caps.features & need) == need && dev->subgroup_size &&
                     dev->cm_m == 16 && dev->cm_n == 16 && dev->cm_k == 16 && o->math != VKL_VULKAN_MATH_F32;
    dev->attn_cm_sg = o->attention_rows >= 16 ? o->attention_rows / 16 : 4;
    dev->attn_cm_keys = o->attention_keys >= 16 ? o->attention_keys : 32;
    while (dev->attn_cm_sg > 1 && (dev->attn_cm_sg * dev->subgroup_size > lim->maxComputeWorkGroupInvocations ||
                                   dev->attn_cm_sg * dev->subgroup_size > lim->maxComputeWorkGroupSize[0]))
        dev->attn_cm_sg /= 2;
    const bool fits = dev->subgroup_size && dev->attn_cm_sg * dev->subgroup_size <= lim->maxComputeWorkGroupInvocations &&
                      dev->attn_cm_sg * dev->subgroup_size <= lim->maxComputeWorkGroupSize[0];
    switch (o->attention_prefill) {
    /* The default where it can run: on an H200 (2026-11-27) a 1B prefill
     * of 512 tokens took 11.94 ms with it against 14.00 with the f32
     * kernel (its attention 1.12 ms against 3.23), of 2048 tokens 50.4
     * against 84.1. Its first form (a lane per row in the softmax, O
     * rescaled every tile, Q reloaded) had been slower than the f32 kernel
     * (19.81 against 18.43 ms, 2026-11-26). */
    case VKL_VULKAN_ATTENTION_PREFILL_AUTO: dev->attn_cm = can && fits ? 1 : 0; break;
    case VKL_VULKAN_ATTENTION_PREFILL_SCALAR: dev->attn_cm = 0; break;
    case VKL_VULKAN_ATTENTION_PREFILL_COOPMAT:
        if (!can || !fits)
            return vkl_fail(dev->ctx, VKL_ERR_UNSUPPORTED, "vulkan: option attention_prefill = COOPMAT: %s has no "
                            "usable 16x16x16 fp16 cooperative matrices (VK_NV_cooperative_matrix with fp16, neither "
                            "turned off, math not F32, a known subgroup size)", dev->caps.device_name);
        dev->attn_cm = 1;
        break;
    case VKL_VULKAN_ATTENTION_PREFILL_EMULATED:
        if (!fits)
            return vkl_fail(dev->ctx, VKL_ERR_UNSUPPORTED, "vulkan: option attention_prefill = EMULATED needs a "
                            "known subgroup size of at most %u invocations", lim->maxComputeWorkGroupInvocations);
        dev->attn_cm = 2;
        break;
    default:
        return vkl_fail(dev->ctx, VKL_ERR_INVALID_ARGUMENT, "vulkan: option attention_prefill = %d: want AUTO, "
                        "COOPMAT, SCALAR or EMULATED", (int)o->attention_prefill);
    }
    return VKL_OK;
}

vkl_status vkl_vk_attention_tuning(vkl_backend_device *dev, const vkl_vulkan_options *o) {
    /* Workgroups a decode step aims at: a few per compute unit on a GPU
     * (Vulkan does not say how many units; these are guesses to measure on
     * each device), about the thread count on a CPU device. */
    const VkPhysicalDeviceType type = dev->props.deviceType;
    dev->attn_target = type == VK_PHYSICAL_DEVICE_TYPE_CPU ? 16 : type == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ? 128 : 512;
    if (o->attention > VKL_VULKAN_ATTENTION_DECODE_WG)
        return vkl_fail(dev->ctx, VKL_ERR_INVALID_ARGUMENT,
                        "vulkan: option attention = %d: want AUTO, PREFILL, DECODE or DECODE_WG",
                        (int)o->attention);
    if (o->attention_splits > MAX_SPLITS)
        return vkl_fail(dev->ctx, VKL_ERR_INVALID_ARGUMENT, "vulkan: option attention_splits = %u: want 0..%u",
                        o->attention_splits, MAX_SPLITS);
    if (o->attention_target > 65535)
        return vkl_fail(dev->ctx, VKL_ERR_INVALID_ARGUMENT, "vulkan: option attention_target = %u: want 0..65535",
                        o->attention_target);
    /* Prefill tiles: 64 query rows (256 invocations, K and V read once per
     * 64 rows) x 16 keys unless asked (a power of two within the shader's
     * reach and the workgroup limit). An H200's 1B prefill of 512 tokens:
     * 23.5 ms at 64 x 16, 23.7 at 32 x 16, 24.5 at 64 x 32, 25.9 at 16 x 16,
     * 29.5 at 16 x 32, 37.5 at 16 x 64. */
    dev->attn_rows = 64;
    dev->attn_keys = 16;
    /* (rows: to 128 for the matrix units' kernel, 8 subgroups; the f32
     * kernel takes at most 64 of them) */
    const uint32_t keys = o->attention_keys, rows = o->attention_rows > 64 ? 64 : o->attention_rows;
    if (o->attention_rows && (o->attention_rows > 128 || (rows & (rows - 1)) ||
                              prefill_wg(rows) > dev->props.limits.maxComputeWorkGroupInvocations ||
                              prefill_wg(rows) > dev->props.limits.maxComputeWorkGroupSize[0]))
        return vkl_fail(dev->ctx, VKL_ERR_INVALID_ARGUMENT, "vulkan: option attention_rows = %u: want a power of two "
                        "1..128 whose %u invocations the device allows", o->attention_rows, prefill_wg(rows));
    if (keys && (keys < 4 || keys > 128 || (keys & (keys - 1))))
        return vkl_fail(dev->ctx, VKL_ERR_INVALID_ARGUMENT, "vulkan: option attention_keys = %u: want a power of two "
                        "4..128", keys);
    if (rows) dev->attn_rows = rows;
    if (keys) dev->attn_keys = keys;
    const vkl_status st = prefill_cm_tuning(dev, o);
    if (st) return st;
    dev->attn_kernel = (uint32_t)o->attention; /* 0 auto, 1 prefill, 2 decode, 3 decode without subgroups */
    dev->attn_splits = o->attention_splits;
    /* the fold merges in one workgroup per row block, which waits on
     * memory once per 4 chunks: slower than the combine dispatch on an
     * H200 (T 4096, f16 cache: 0.044 ms folded, 0.027 ms not) */
    dev->attn_fold = o->attention_fold > 0 ? 1u : 0u;
    /* Below a few thousand keys the workgroup kernel's split is the faster
     * one on NVIDIA (H100, Hq 32 / Hkv 8, f16 cache, D 64 and 128: ahead by
     * 1-5 us a node at T 256 .. 2048, behind by 2-3 us at T 4096;
     * test_vk_attention's bench); elsewhere unmeasured, so the subgroup
     * kernel wherever it runs, as before. */
    dev->attn_sg_from = o->attention_sg_from ? o->attention_sg_from
                        : dev->props.vendorID == VENDOR_NVIDIA ? 3072u : 1u;
    if (o->attention_target) dev->attn_target = o->attention_target;
    /* attn_decode.comp's latency knobs (docs/vulkan.md, "Decode attention
     * latency"), defaults as an H100 measured them (test_vk_attention's
     * bench and the 1B decode, 2026-11-26): the two-level row max / sum on
     * (8 strips: D 128 at T 640 0.019 ms against 0.020 serial); the fold, the
     * early K / V loads and a block's V rows in one round off (each slower
     * there: the fold where a node has at most FOLD_CB chunks 0.023 against
     * 0.019 ms at D 128, T 640; all three 0.025; 1B decode with the fold
     * 763.8 tok/s against 797.4 without). */
    const uint32_t vb = o->attention_wg_vb, parts = o->attention_wg_parts;
    if (vb > DECODE_CH)
        return vkl_fail(dev->ctx, VKL_ERR_INVALID_ARGUMENT, "vulkan: option attention_wg_vb = %u: want 0..%u", vb,
                        DECODE_CH);
    if (parts > DECODE_CH || (parts & (parts - 1)))
        return vkl_fail(dev->ctx, VKL_ERR_INVALID_ARGUMENT, "vulkan: option attention_wg_parts = %u: want 0 or a "
                        "power of two 1..%u", parts, DECODE_CH);
    dev->attn_wg_fold = o->attention_wg_fold == 2 ? FOLD_CB : o->attention_wg_fold == 1 ? FOLD_MAX_SPLITS : 0u;
    dev->attn_wg_vb = vb ? vb : 8;
    const uint32_t size = o->attention_wg_size, lim = dev->props.limits.maxComputeWorkGroupInvocations;
    if (size && (size < DECODE_CH || (size & (size - 1)) || size > lim || size > dev->props.limits.maxComputeWorkGroupSize[0]))
        return vkl_fail(dev->ctx, VKL_ERR_INVALID_ARGUMENT, "vulkan: option attention_wg_size = %u: want 0 or a power "
                        "of two from %u that the device allows (%u)", size, DECODE_CH, lim);
    dev->attn_wg_size = size ? size : DECODE_WG;
    dev->attn_wg_parts = parts ? parts : 8;
    if (o->attention_wg_preload > 3)
        return vkl_fail(dev->ctx, VKL_ERR_INVALID_ARGUMENT, "vulkan: option attention_wg_preload = %d: want -1 or a "
                        "mask 0..3 (1: V, 2: K)", o->attention_wg_preload);
    if (o->attention_wg_fold < -1 || o->attention_wg_fold > 2)
        return vkl_fail(dev->ctx, VKL_ERR_INVALID_ARGUMENT, "vulkan: option attention_wg_fold = %d: want -1 .. 2",
                        o->attention_wg_fold);
    dev->attn_wg_preload = o->attention_wg_preload < 0 ? 0u : (uint32_t)o->attention_wg_preload;
    return VKL_OK;
}
