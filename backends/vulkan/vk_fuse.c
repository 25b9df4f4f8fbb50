/* Fusion at prepare (docs/vulkan.md, "Fusion"): which live nodes the Vulkan
 * backend records as one dispatch, decided from the graph's structure and
 * the executable's memory map, in this backend only (the graph, and so ref
 * and cpu, are untouched). The matvec patterns are recorded at the
 * position of their last node, where every input is ready:
 *
 *   ADD  Add(QuantMatMul(A, W[, bias]), R), either operand order, same
 *        shapes (no broadcasting): the matvec adds R as it stores the Add's
 *        output (quant_matvec.glsl's _add builds); on the prefill GEMM, the
 *        GEMM's store (or its split sum) does (quant_gemm_io.glsl's RESIDUAL);
 *   GLU  SiluMul(QuantMatMul(A, Wg), QuantMatMul(A, Wu)) with one A, no
 *        bias, Wg and Wu of one format, shape and group: one matvec of both
 *        rows stores silu(gate) * up (the _glu builds). Not on the GEMM:
 *        unfused, gate's and up's GEMMs run side by side (one A, no barrier
 *        between them), which a two-GEMM form storing the SiluMul from the
 *        gate's product gives up (docs/vulkan.md has the H200's figures);
 *   NORM_CODES  an RMSNorm whose output only integer-dot matvecs read: it
 *        writes their int8 codes (norm.comp's _codes builds) in place of
 *        its output and of their activation quantizer (try_norm);
 *   GLU codes  a GLU (integer-dot matvec) whose output only integer-dot
 *        matvecs read (the down projection), in steps of its own format's
 *        size that tile a row: it stores its output and writes their int8
 *        codes too, in place of their quantizer (the _glu_codes builds: the
 *        workgroup completing a step quantizes it; try_glu_codes);
 *   ATTN_CODES  likewise a decode Attention whose output (or a view of it
 *        that records nothing) only integer-dot matvecs read, the o_proj:
 *        its merge writes their codes (attn_combine.comp's and the fold's
 *        _codes builds; try_attn_codes);
 *   ROPE_KV  RoPE(K) + KvAppend(K) of one Attention's K cache, with that
 *        Attention's KvAppend(V) (same position_ids) and RoPE(Q) (same
 *        cos, sin and rotation) where they fit too: one rope_kv_append.comp
 *        dispatch (try_rope_kv) at one of the members' positions, the
 *        largest set that passes the memory checks (rope_kv_check);
 *   QKV  two or three QuantMatMuls of one A (a layer's Q, K and V
 *        projections) on the fusable matvec path, W of one format, K and
 *        group, biases allowed: one _qkv matvec (quant_matvec_qkv.glsl) at
 *        the first one's position (try_qkv, after the others); on the GEMM,
 *        their GEMMs side by side there, with no barrier between them.
 *
 * Each QuantMatMul output must have that one consumer and be no graph
 * output, and the QuantMatMul must run the one-dispatch matvec or (ADD,
 * QKV) the GEMM on a whole W (vkl_vk_qmm_fusable; VKL_VULKAN_FUSE_GEMM
 * turns the GEMM forms off). Memory: the
 * fused dispatch reads A later than the QuantMatMul would have, so no node
 * between them may write A's bytes (the planner may hand A's memory on once
 * the QuantMatMul is its last reader), and the output must not share bytes
 * with A or R (one dispatch reads and writes them). An output the planner
 * placed there (A's memory is free again after the QuantMatMul, so a decode
 * step's o_proj + residual Add lands on it) is moved into a buffer of the
 * executable's own when all its readers can follow (try_move). A pattern
 * that fails any of this is recorded unfused. Views between the nodes (Reshape,
 * Transpose: vk_view.c) make the QuantMatMul's consumer the view, not the
 * Add, so such patterns are not matched.
 *
 * ROPE_KV moves each member's reads and writes to the dispatch's position:
 * RoPE(K)'s output must have KvAppend(K) as its one reader and be no graph
 * output (it is never written), RoPE(Q)'s the Attention alone; an input
 * read later or earlier than its member would is ready there and written
 * by no other node in between, an output written at another time is read
 * or written by no other node in between, and no output shares bytes with
 * an input or another output (the states are their KvAppends' in-place
 * outputs). An input another fusion moved is read only inside its move's
 * life. An input is ready where its maker's work runs: through views given
 * their input's memory to the node that writes the bytes, and at the Q/K/V
 * dispatch for a fused K or V projection (so a layer's KvAppend(V) joins
 * the dispatch although v_proj comes after KvAppend(K) in the order).
 *
 * QKV reads A where its first member does, and writes the later members'
 * outputs there, earlier than planned: no node in between may read or
 * write their bytes, and no output may share bytes with A, a bias or
 * another output (qkv_check). Decided after ADD and GLU, it sees where
 * their dispatches run (touched_at, runs_at); ROPE_KV, decided after it,
 * checks its own moves against every node's planned position, which QKV
 * only makes earlier for its outputs. A later output
 * that fails those checks (the planner gives V the bytes of K or Q, dead
 * before v_proj) is moved to memory of its own, together with the views
 * sharing its memory, alive until its last reader's dispatch
 * (qkv_movable). */
#include <string.h>

#include "../../engine/ops.h"
#include "vk_internal.h"

/* The output t has exactly one reader, which is no graph output. */
static bool single_use(const vkl_graph *g, uint32_t t) {
    const vkl_tensor *tt = &g->tensors[t];
    return tt->kind == VKL_TENSOR_ACTIVATION && !tt->is_output && vkl_graph_use_count(g, t) == 1;
}

static bool same_dims(const vkl_vk_tensor *a, const vkl_vk_tensor *b) {
    return a->rank == b->rank && !memcmp(a->dims, b->dims, a->rank * sizeof(a->dims[0]));
}

/* An output fusion moved: live in `at` from position first to last. */
typedef struct move {
    uint32_t first, last;
    VkDescriptorBufferInfo at;
} move;

typedef struct fuse_ctx {
    vkl_backend_device *dev;
    const vkl_graph *g;
    const vkl_backend_weights *w;
    const vkl_memory_map *mem;
    const vkl_binding *b;
    const uint32_t *order;
    uint32_t n;
    uint32_t *pos;           /* node -> its position in order (VKL_NONE: not live) */
    vkl_vk_fusion *fused;
    VkDescriptorBufferInfo *moved; /* per tensor (vkl_vk_fuse_plan) */
    move *moves;             /* the moves so far, n_moves of them (one per Add / SiluMul, two per Q/K/V) */
    uint32_t *move_of;       /* per tensor: its move's index in moves, or VKL_NONE */
    uint32_t n_moves;
    VkDeviceSize move_bytes; /* the moved outputs' buffer */
    uint32_t overlapping;    /* patterns kept apart for their memory */
} fuse_ctx;

/* A match the memory map keeps apart, at debug level: which node, and why. */
static void kept_apart(fuse_ctx *c, uint32_t node, const char *why) {
    char what[160];
    c->overlapping++;
    vkl_log(c->dev->ctx, VKL_LOG_DEBUG, "vulkan: %s not fused: %s", vkl_node_str(c->g, node, what, sizeof(what)), why);
}

static vkl_status bind(const fuse_ctx *c, uint32_t t, vkl_vk_tensor *v) {
    return vkl_vk_bind_moved(c->dev, c->g, c->w, c->mem, c->b, c->moved, t, v);
}

/* The QuantMatMul node qn bound (A, W, bias | Y) and on the fusable matvec
 * path, or (where gemm is not NULL and VKL_VULKAN_FUSE_GEMM is on) on the
 * GEMM path, *gemm saying which; false (and no error) otherwise. */
static bool fusable_qmm(const fuse_ctx *c, uint32_t qn, vkl_vk_tensor in[3], vkl_vk_tensor *y, bool *gemm) {
    const vkl_node *n = &c->g->nodes[qn];
    if (n->op != VKL_OP_QUANT_MAT_MUL || n->n_inputs < 2 || n->n_outputs != 1) return false;
    for (uint32_t j = 0; j < 3; j++)
        if (bind(c, j < n->n_inputs ? n->inputs[j] : VKL_NONE, &in[j])) return false;
    if (bind(c, n->outputs[0], y)) return false;
    const vkl_vk_node node = {c->dev, c->g, qn, in, y, 3, 1, c->b, c->w};
    bool on_gemm;
    /* a node it refuses is refused again, unfused, by its recorder */
    if (!vkl_vk_qmm_fusable(&node, &on_gemm) ||
        (on_gemm && (!gemm || (c->dev->fuse_off & VKL_VULKAN_FUSE_GEMM))))
        return false;
    if (gemm) *gemm = on_gemm;
    return true;
}

static bool one_of(uint32_t x, const uint32_t *set, uint32_t n) {
    for (uint32_t i = 0; i < n; i++)
        if (set[i] == x) return true;
    return false;
}

/* No node at positions (from, to) other than those in skip[0..n_skip)
 * writes bytes of A. A view given its input's memory (what prepare records
 * no dispatch for) writes nothing. */
static bool untouched_between(const fuse_ctx *c, uint32_t from, uint32_t to, const uint32_t *skip, uint32_t n_skip,
                              const vkl_vk_tensor *A) {
    for (uint32_t k = from + 1; k < to; k++) {
        const uint32_t ni = c->order[k];
        const vkl_node *n = &c->g->nodes[ni];
        if (one_of(ni, skip, n_skip)) continue;
        const uint32_t src = vkl_node_view_input(c->dev->ctx, c->g, ni, c->b->values, c->b->count);
        vkl_vk_tensor in = {0};
        if (src != VKL_NONE && bind(c, src, &in)) return false;
        for (uint32_t o = 0; o < n->n_outputs; o++) {
            vkl_vk_tensor out;
            if (n->outputs[o] == VKL_NONE) continue;
            if (bind(c, n->outputs[o], &out)) return false;
            const bool viewed = o == 0 && src != VKL_NONE && in.at.buffer == out.at.buffer &&
                                in.at.offset == out.at.offset && in.at.range == out.at.range;
            if (!viewed && vkl_vk_overlaps(&out.at, &A->at)) return false;
        }
    }
    return true;
}

static VkDescriptorBufferInfo place_move(fuse_ctx *c, uint32_t k, uint32_t last, VkDeviceSize bytes);

/* The fused output O at position k would share bytes with A: give it its
 * own memory instead, in the executable's buffer of moved outputs (placed
 * first-fit among the earlier moves whose lives overlap), if every reader of
 * O can be told: O is no graph output, no reader is a view (which would keep
 * O's planned memory), and O lives until its last read, a QuantMatMul
 * reader's counting where a later fusion may move it (its one consumer). */
static bool try_move(fuse_ctx *c, uint32_t k, uint32_t ot, const vkl_vk_tensor *out) {
    const vkl_graph *g = c->g;
    if (g->tensors[ot].kind != VKL_TENSOR_ACTIVATION || g->tensors[ot].is_output || out->pieced) return false;
    uint32_t last = k;
    for (uint32_t j = k + 1; j < c->n; j++) {
        const uint32_t ni = c->order[j];
        const vkl_node *n = &g->nodes[ni];
        bool reads = false;
        for (uint32_t i = 0; i < n->n_inputs; i++) reads |= n->inputs[i] == ot;
        if (!reads) continue;
        if (vkl_node_view_input(c->dev->ctx, g, ni, c->b->values, c->b->count) == ot) return false;
        last = j > last ? j : last;
        if (n->op == VKL_OP_QUANT_MAT_MUL && n->n_outputs == 1 && n->outputs[0] != VKL_NONE)
            for (uint32_t m = j + 1; m < c->n; m++) {
                const vkl_node *u = &g->nodes[c->order[m]];
                for (uint32_t i = 0; i < u->n_inputs; i++)
                    if (u->inputs[i] == n->outputs[0] && m > last) last = m;
            }
    }
    c->move_of[ot] = c->n_moves;
    c->moved[ot] = place_move(c, k, last, out->at.range);
    return true;
}

/* A range of `bytes` in the executable's buffer of moved outputs for an
 * output live from position first to last: first fit among the moves so
 * far whose lives overlap it. */
static VkDescriptorBufferInfo place_move(fuse_ctx *c, uint32_t k, uint32_t last, VkDeviceSize bytes) {
    const VkDeviceSize align = c->dev->props.limits.minStorageBufferOffsetAlignment > 64
                                   ? c->dev->props.limits.minStorageBufferOffsetAlignment
                                   : 64;
    /* first fit: the lowest offset (0 or the end of an earlier move) clear of every move alive meanwhile */
    VkDeviceSize at = 0;
    for (uint32_t cand = 0; cand <= c->n_moves; cand++) {
        at = cand ? (c->moves[cand - 1].at.offset + c->moves[cand - 1].at.range + align - 1) / align * align : 0;
        bool clear = true;
        for (uint32_t i = 0; i < c->n_moves && clear; i++) {
            const move *m = &c->moves[i];
            clear = !(m->first <= last && k <= m->last && m->at.offset < at + bytes && at < m->at.offset + m->at.range);
        }
        if (clear) break;
    }
    /* VK_NULL_HANDLE until vkl_vk_fuse_plan allocates the buffer: no other
     * range during planning has it (scratch markers come later) */
    const VkDescriptorBufferInfo r = {VK_NULL_HANDLE, at, bytes};
    c->moves[c->n_moves++] = (move){k, last, r};
    if (at + bytes > c->move_bytes) c->move_bytes = at + bytes;
    return r;
}

/* Position k holds an Add: fused with the QuantMatMul producing one operand. */
static vkl_status try_add(fuse_ctx *c, uint32_t k) {
    const vkl_graph *g = c->g;
    const vkl_node *add = &g->nodes[c->order[k]];
    if (add->n_inputs != 2 || add->n_outputs != 1 || add->inputs[0] == add->inputs[1]) return VKL_OK;
    for (uint32_t j = 0; j < 2; j++) {
        const uint32_t yt = add->inputs[j], rt = add->inputs[1 - j];
        if (yt == VKL_NONE || rt == VKL_NONE) return VKL_OK;
        const uint32_t qn = g->tensors[yt].producer;
        if (qn == VKL_NONE || c->pos[qn] == VKL_NONE || c->fused[c->pos[qn]].kind != VKL_VK_FUSE_NONE ||
            !single_use(g, yt))
            continue;
        vkl_vk_tensor in[3], y, r, out;
        bool gemm;
        if (!fusable_qmm(c, qn, in, &y, &gemm)) continue;
        vkl_status st = bind(c, rt, &r);
        if (!st) st = bind(c, add->outputs[0], &out);
        if (st) return st;
        if (r.dtype != VKL_DTYPE_F32 || out.dtype != VKL_DTYPE_F32 || r.pieced || out.pieced || !same_dims(&r, &y) ||
            !same_dims(&out, &y))
            continue;
        const char *why = !untouched_between(c, c->pos[qn], k, NULL, 0, &in[0])
                              ? "a node between it and its QuantMatMul writes A's memory"
                          : (vkl_vk_overlaps(&out.at, &in[0].at) || vkl_vk_overlaps(&out.at, &r.at)) &&
                                  !try_move(c, k, add->outputs[0], &out)
                              ? "its output shares memory with A or R, and a reader of it could not be moved"
                              : NULL;
        if (why) {
            kept_apart(c, c->order[k], why);
            continue;
        }
        c->fused[c->pos[qn]].kind = VKL_VK_FUSE_GONE;
        c->fused[k] = (vkl_vk_fusion){VKL_VK_FUSE_ADD, qn, rt};
        return VKL_OK;
    }
    return VKL_OK;
}

/* Position k holds a SiluMul: fused with the QuantMatMuls of gate and up. */
static vkl_status try_glu(fuse_ctx *c, uint32_t k) {
    const vkl_graph *g = c->g;
    const vkl_node *sm = &g->nodes[c->order[k]];
    if (sm->n_inputs != 2 || sm->n_outputs != 1 || sm->inputs[0] == sm->inputs[1] ||
        sm->inputs[0] == VKL_NONE || sm->inputs[1] == VKL_NONE)
        return VKL_OK;
    const uint32_t gt = sm->inputs[0], ut = sm->inputs[1];
    const uint32_t gn = g->tensors[gt].producer, un = g->tensors[ut].producer;
    if (gn == VKL_NONE || un == VKL_NONE || gn == un || c->pos[gn] == VKL_NONE || c->pos[un] == VKL_NONE ||
        c->fused[c->pos[gn]].kind != VKL_VK_FUSE_NONE || c->fused[c->pos[un]].kind != VKL_VK_FUSE_NONE ||
        !single_use(g, gt) || !single_use(g, ut))
        return VKL_OK;
    vkl_vk_tensor gin[3], uin[3], gy, uy, out;
    if (!vkl_vk_qmm_glu_fits(c->dev) || !fusable_qmm(c, gn, gin, &gy, NULL) || !fusable_qmm(c, un, uin, &uy, NULL))
        return VKL_OK;
    const vkl_vk_tensor *wg = &gin[1], *wu = &uin[1];
    if (gin[0].id != uin[0].id || gin[2].id != VKL_NONE || uin[2].id != VKL_NONE || wg->dtype != wu->dtype ||
        wg->group != wu->group || !same_dims(wg, wu) || !same_dims(&gy, &uy))
        return VKL_OK;
    vkl_status st = bind(c, sm->outputs[0], &out);
    if (st) return st;
    if (out.dtype != VKL_DTYPE_F32 || out.pieced || !same_dims(&out, &gy)) return VKL_OK;
    const uint32_t first = c->pos[gn] < c->pos[un] ? c->pos[gn] : c->pos[un];
    const uint32_t other = c->pos[gn] < c->pos[un] ? un : gn;
    const char *why = !untouched_between(c, first, k, &other, 1, &gin[0])
                          ? "a node between it and its QuantMatMuls writes A's memory"
                      : vkl_vk_overlaps(&out.at, &gin[0].at) && !try_move(c, k, sm->outputs[0], &out)
                          ? "its output shares memory with A, and a reader of it could not be moved"
                          : NULL;
    if (why) {
        kept_apart(c, c->order[k], why);
        return VKL_OK;
    }
    c->fused[c->pos[gn]].kind = c->fused[c->pos[un]].kind = VKL_VK_FUSE_GONE;
    c->fused[k] = (vkl_vk_fusion){VKL_VK_FUSE_GLU, gn, un};
    return VKL_OK;
}

/* ---- ROPE_KV ----------------------------------------------------------------------------------------- */

/* A fused RoPE + KvAppend's members: RoPE(K), KvAppend(K), KvAppend(V),
 * RoPE(Q) (the last two VKL_NONE when not fused). */
enum { M_ROPE_K, M_KV_K, M_KV_V, M_ROPE_Q, M_N };

/* The node's views as vkl_vk_record_rope_kv reads them (vk_internal.h):
 * the tensor ids of its inputs then outputs. */
static void rope_kv_ids(const vkl_graph *g, const uint32_t m[M_N], uint32_t ids[VKL_VK_ROPE_KV_IN + VKL_VK_ROPE_KV_OUT]) {
    const vkl_node *rk = &g->nodes[m[M_ROPE_K]], *kk = &g->nodes[m[M_KV_K]];
    const vkl_node *kv = m[M_KV_V] != VKL_NONE ? &g->nodes[m[M_KV_V]] : NULL;
    const vkl_node *rq = m[M_ROPE_Q] != VKL_NONE ? &g->nodes[m[M_ROPE_Q]] : NULL;
    const uint32_t v[VKL_VK_ROPE_KV_IN + VKL_VK_ROPE_KV_OUT] = {
        rk->inputs[0], rk->inputs[1], rk->inputs[2], kk->inputs[2], kk->inputs[0],
        kv ? kv->inputs[1] : VKL_NONE, kv ? kv->inputs[0] : VKL_NONE, rq ? rq->inputs[0] : VKL_NONE,
        kk->outputs[0], kv ? kv->outputs[0] : VKL_NONE, rq ? rq->outputs[0] : VKL_NONE};
    memcpy(ids, v, sizeof(v));
}

/* No node at positions (from, to) but the members reads or writes bytes of
 * `at`: what the fused dispatch writes there at another time than the
 * member would have is seen by nobody too early, and overwrites nobody's.
 * A fused Add or SiluMul there also reads its QuantMatMuls' A. (Another
 * layer's fused RoPE + KvAppend never falls in between: each layer's Q, K
 * and V derive from the previous layer's attention output.) */
static bool quiet_between(const fuse_ctx *c, uint32_t from, uint32_t to, const uint32_t m[M_N],
                          const VkDescriptorBufferInfo *at) {
    for (uint32_t k = from + 1; k < to; k++) {
        const uint32_t ni = c->order[k];
        const vkl_node *n = &c->g->nodes[ni];
        if (one_of(ni, m, M_N)) continue;
        const bool reads_a = c->fused[k].kind == VKL_VK_FUSE_ADD || c->fused[k].kind == VKL_VK_FUSE_GLU;
        for (uint32_t j = 0; j < n->n_inputs + n->n_outputs + reads_a; j++) {
            const uint32_t t = j < n->n_inputs                ? n->inputs[j]
                               : j < n->n_inputs + n->n_outputs ? n->outputs[j - n->n_inputs]
                                                                : c->g->nodes[c->fused[k].qmm].inputs[0];
            vkl_vk_tensor v;
            if (t == VKL_NONE) continue;
            if (bind(c, t, &v) || vkl_vk_overlaps(&v.at, at)) return false;
        }
    }
    return true;
}

static uint32_t runs_at(const fuse_ctx *c, uint32_t ni);

#define VIEW_CHAIN 4 /* views given their input's memory, passed on the way to a tensor's maker */

/* The node whose work writes tensor t's bytes: its producer, or where that
 * is a view given its input's memory (it records no dispatch) the maker of
 * that input, the views passed added to skip[*n_skip..]. */
static uint32_t maker_of(const fuse_ctx *c, uint32_t t, uint32_t *skip, uint32_t *n_skip) {
    for (uint32_t hops = 0;; hops++) {
        const uint32_t p = c->g->tensors[t].producer;
        if (p == VKL_NONE || hops == VIEW_CHAIN) return p;
        const uint32_t src = vkl_node_view_input(c->dev->ctx, c->g, p, c->b->values, c->b->count);
        vkl_vk_tensor in, out;
        if (src == VKL_NONE || bind(c, src, &in) || bind(c, t, &out) || in.at.buffer != out.at.buffer ||
            in.at.offset != out.at.offset || in.at.range != out.at.range)
            return p;
        skip[(*n_skip)++] = p;
        t = src;
    }
}

/* Input `view` of a member at position r read by a dispatch at position
 * `at` instead: late (r < at), no other node may write its bytes meanwhile;
 * early (r > at), it must be made before `at` (where its maker's work runs:
 * a Q/K/V matvec makes K and V at Q's position) and not written after. */
static bool input_ready(const fuse_ctx *c, uint32_t at, uint32_t r, const uint32_t m[M_N], const vkl_vk_tensor *view) {
    if (r <= at) return untouched_between(c, r, at, m, M_N, view);
    uint32_t skip[M_N + VIEW_CHAIN + 1], n_skip = M_N;
    memcpy(skip, m, M_N * sizeof(m[0]));
    const uint32_t made = maker_of(c, view->id, skip, &n_skip);
    const uint32_t p = made != VKL_NONE ? runs_at(c, made) : VKL_NONE;
    if (p != VKL_NONE && p >= at) return false;
    if (p != VKL_NONE && p != c->pos[made]) skip[n_skip++] = made; /* its own position writes nothing now */
    return untouched_between(c, at, r, skip, n_skip, view);
}

/* Whether the members m fuse into one dispatch at position `at` (one of
 * theirs): NULL, or why not (*fits false: the kernel does not take them;
 * true: the memory map keeps them apart). Each member's reads and writes
 * move from its own position to `at`, so no other node in between may see
 * or change the bytes concerned. */
static const char *rope_kv_check(const fuse_ctx *c, const uint32_t m[M_N], uint32_t at, bool *fits) {
    enum { N = VKL_VK_ROPE_KV_IN + VKL_VK_ROPE_KV_OUT, POS = 3, K_STATE = 4, V_STATE = 6 };
    uint32_t ids[N], by_pos[N];
    vkl_vk_tensor v[N], inter;
    rope_kv_ids(c->g, m, ids);
    /* which member reads (the inputs) or writes (the outputs) each view */
    const uint32_t by[N] = {M_ROPE_K, M_ROPE_K, M_ROPE_K, M_KV_K, M_KV_K, M_KV_V, M_KV_V, M_ROPE_Q, M_KV_K, M_KV_V,
                            M_ROPE_Q};
    *fits = false;
    for (uint32_t j = 0; j < N; j++) {
        by_pos[j] = m[by[j]] != VKL_NONE ? c->pos[m[by[j]]] : VKL_NONE;
        if (bind(c, ids[j], &v[j])) return "a tensor could not be bound";
    }
    if (bind(c, c->g->nodes[m[M_KV_K]].inputs[1], &inter)) return "a tensor could not be bound";
    const vkl_vk_fusion f = {.kind = VKL_VK_FUSE_ROPE_KV, .nodes = {m[0], m[1], m[2], m[3]}};
    const vkl_vk_node nd = {c->dev, c->g, m[M_KV_K], v, v + VKL_VK_ROPE_KV_IN, VKL_VK_ROPE_KV_IN, VKL_VK_ROPE_KV_OUT,
                            c->b, c->w, NULL, &f};
    if (inter.dtype != v[0].dtype || !same_dims(&inter, &v[0]) || !vkl_vk_rope_kv_fits(&nd)) return "not taken";
    *fits = true;
    for (uint32_t j = 0; j < VKL_VK_ROPE_KV_IN; j++) {
        if (ids[j] == VKL_NONE) continue;
        const uint32_t mv = c->move_of[ids[j]];
        if (mv != VKL_NONE && !(c->moves[mv].first <= at && at <= c->moves[mv].last))
            return "an input was moved by another fusion and is not alive there";
        if (!input_ready(c, at, by_pos[j], m, &v[j]) ||
            (j == POS && m[M_KV_V] != VKL_NONE && !input_ready(c, at, c->pos[m[M_KV_V]], m, &v[j])))
            return "an input is not ready there, or another node writes its memory meanwhile";
        for (uint32_t o = VKL_VK_ROPE_KV_IN; o < N; o++)
            if (ids[o] != VKL_NONE && vkl_vk_overlaps(&v[o].at, &v[j].at) &&
                !(j == K_STATE || j == V_STATE)) /* the states are their KvAppends' outputs, in place */
                return "an output shares memory with an input";
    }
    for (uint32_t o = VKL_VK_ROPE_KV_IN; o < N; o++) {
        if (ids[o] == VKL_NONE) continue;
        const uint32_t w = by_pos[o];
        if (!quiet_between(c, w < at ? w : at, w < at ? at : w, m, &v[o].at))
            return "another node reads or writes an output's memory between its member and the dispatch";
        for (uint32_t p = o + 1; p < N; p++)
            if (ids[p] != VKL_NONE && vkl_vk_overlaps(&v[o].at, &v[p].at)) return "two outputs share memory";
    }
    return NULL;
}

/* Position k holds a KvAppend whose x is a RoPE's output: RoPE(K) +
 * KvAppend(K) as one dispatch, with the KvAppend(V) and RoPE(Q) of the
 * Attention that reads this K cache where they fuse too (the largest set
 * of the four that passes). */
static void try_rope_kv(fuse_ctx *c, uint32_t k) {
    const vkl_graph *g = c->g;
    const uint32_t kk = c->order[k];
    const vkl_node *ka = &g->nodes[kk];
    if (ka->n_inputs != 3 || ka->n_outputs != 1 || c->fused[k].kind != VKL_VK_FUSE_NONE ||
        ka->inputs[1] == VKL_NONE || ka->outputs[0] == VKL_NONE || !single_use(g, ka->inputs[1]))
        return;
    const uint32_t rk = g->tensors[ka->inputs[1]].producer;
    if (rk == VKL_NONE || c->pos[rk] == VKL_NONE || c->fused[c->pos[rk]].kind != VKL_VK_FUSE_NONE)
        return;
    const vkl_node *rope = &g->nodes[rk];
    if (rope->op != VKL_OP_ROPE || rope->n_inputs != 3 || rope->n_outputs != 1) return;
    uint32_t m[M_N] = {rk, kk, VKL_NONE, VKL_NONE};
    for (uint32_t j = k + 1; j < c->n; j++) { /* the Attention reading this K cache */
        const vkl_node *a = &g->nodes[c->order[j]];
        if (a->op != VKL_OP_ATTENTION || a->n_inputs < 3 || a->inputs[1] != ka->outputs[0]) continue;
        const uint32_t vt = a->inputs[2], qt = a->inputs[0];
        const uint32_t vn = vt != VKL_NONE ? g->tensors[vt].producer : VKL_NONE;
        const uint32_t qn = qt != VKL_NONE ? g->tensors[qt].producer : VKL_NONE;
        if (vn != VKL_NONE && vn != kk && c->pos[vn] != VKL_NONE && c->fused[c->pos[vn]].kind == VKL_VK_FUSE_NONE &&
            g->nodes[vn].op == VKL_OP_KV_APPEND && g->nodes[vn].n_inputs == 3 && g->nodes[vn].n_outputs == 1 &&
            g->nodes[vn].inputs[2] == ka->inputs[2])
            m[M_KV_V] = vn;
        int64_t ik = 0, iq = -1;
        if (qn != VKL_NONE && qn != rk && c->pos[qn] != VKL_NONE &&
            c->fused[c->pos[qn]].kind == VKL_VK_FUSE_NONE && g->nodes[qn].op == VKL_OP_ROPE &&
            g->nodes[qn].n_inputs == 3 && g->nodes[qn].n_outputs == 1 && single_use(g, qt) &&
            g->nodes[qn].inputs[1] == rope->inputs[1] && g->nodes[qn].inputs[2] == rope->inputs[2] &&
            !vkl_op_attr_int(g, rk, "interleaved", &ik) && !vkl_op_attr_int(g, qn, "interleaved", &iq) && ik == iq)
            m[M_ROPE_Q] = qn;
        break;
    }
    /* the largest set first: V and Q, V, Q, K alone; each at its members'
     * positions, the last first */
    const char *why = NULL;
    for (uint32_t drop = 0; drop < 4; drop++) {
        uint32_t s[M_N] = {m[0], m[1], drop & 2u ? VKL_NONE : m[M_KV_V], drop & 1u ? VKL_NONE : m[M_ROPE_Q]};
        if ((drop & 2u && m[M_KV_V] == VKL_NONE) || (drop & 1u && m[M_ROPE_Q] == VKL_NONE)) continue; /* tried */
        uint32_t at[M_N], n_at = 0;
        for (uint32_t i = 0; i < M_N; i++)
            if (s[i] != VKL_NONE) at[n_at++] = c->pos[s[i]];
        for (uint32_t i = 0; i < n_at; i++) /* latest first */
            for (uint32_t j = i + 1; j < n_at; j++)
                if (at[j] > at[i]) {
                    const uint32_t t = at[i];
                    at[i] = at[j];
                    at[j] = t;
                }
        for (uint32_t i = 0; i < n_at; i++) {
            bool fits;
            const char *no = rope_kv_check(c, s, at[i], &fits);
            if (!no) {
                for (uint32_t q = 0; q < M_N; q++)
                    if (s[q] != VKL_NONE) c->fused[c->pos[s[q]]].kind = VKL_VK_FUSE_GONE;
                c->fused[at[i]] = (vkl_vk_fusion){.kind = VKL_VK_FUSE_ROPE_KV, .nodes = {s[0], s[1], s[2], s[3]}};
                if (why && (s[M_KV_V] != m[M_KV_V] || s[M_ROPE_Q] != m[M_ROPE_Q])) { /* a smaller set than the layer has */
                    char what[160];
                    c->overlapping++;
                    vkl_log(c->dev->ctx, VKL_LOG_DEBUG, "vulkan: %s fused with its RoPE(K)%s%s only: %s",
                            vkl_node_str(g, kk, what, sizeof(what)), s[M_KV_V] != VKL_NONE ? ", KvAppend(V)" : "",
                            s[M_ROPE_Q] != VKL_NONE ? ", RoPE(Q)" : "", why);
                }
                return;
            }
            if (!fits) break; /* the same at every position */
            if (!why) why = no;
        }
    }
    if (why) kept_apart(c, kk, why);
}

/* ---- QKV ----------------------------------------------------------------------------------------------- */

/* Whether a node fused elsewhere that runs at position k (what fused[k]
 * records), or the node at k itself, reads or writes bytes of `at`. The
 * node at k counts even when its work moved (GONE): a conservative check. */
static bool touched_at(const fuse_ctx *c, uint32_t k, const uint32_t *skip, uint32_t n_skip,
                       const VkDescriptorBufferInfo *at) {
    const vkl_vk_fusion *f = &c->fused[k];
    uint32_t nodes[5] = {c->order[k], VKL_NONE, VKL_NONE, VKL_NONE, VKL_NONE};
    if (f->kind == VKL_VK_FUSE_ADD || f->kind == VKL_VK_FUSE_GLU) {
        nodes[1] = f->qmm;
        nodes[2] = f->kind == VKL_VK_FUSE_GLU ? f->extra : VKL_NONE;
    } else if (f->kind == VKL_VK_FUSE_ROPE_KV || f->kind == VKL_VK_FUSE_QKV) {
        memcpy(nodes + 1, f->nodes, sizeof(f->nodes));
    }
    for (uint32_t i = 0; i < 5; i++) {
        if (nodes[i] == VKL_NONE || one_of(nodes[i], skip, n_skip)) continue;
        const vkl_node *n = &c->g->nodes[nodes[i]];
        for (uint32_t j = 0; j < n->n_inputs + n->n_outputs; j++) {
            const uint32_t t = j < n->n_inputs ? n->inputs[j] : n->outputs[j - n->n_inputs];
            vkl_vk_tensor v;
            if (t == VKL_NONE) continue;
            if (bind(c, t, &v) || vkl_vk_overlaps(&v.at, at)) return true;
        }
    }
    return false;
}

/* Where node ni's work runs: its own position, or that of the fused
 * dispatch doing it (VKL_NONE: not live). */
static uint32_t runs_at(const fuse_ctx *c, uint32_t ni) {
    const uint32_t p = c->pos[ni];
    if (p == VKL_NONE || c->fused[p].kind != VKL_VK_FUSE_GONE) return p;
    for (uint32_t k = 0; k < c->n; k++) {
        const vkl_vk_fusion *f = &c->fused[k];
        if ((f->kind == VKL_VK_FUSE_ADD && f->qmm == ni) ||
            (f->kind == VKL_VK_FUSE_GLU && (f->qmm == ni || f->extra == ni)) ||
            ((f->kind == VKL_VK_FUSE_ROPE_KV || f->kind == VKL_VK_FUSE_QKV) && one_of(ni, f->nodes, 4)))
            return k;
    }
    return p;
}

#define QKV_CHAIN 8 /* an output and the views sharing its memory (Reshape, Transpose) */

/* Whether output ot, written at position h, can have memory of its own:
 * it and every view given its memory (vk_view.c records nothing for those;
 * they move with it, chain[0..*n_chain)) are no graph outputs, nothing
 * moved them, and *last is where their last reader runs (a fused reader
 * at its dispatch's position). */
static bool qkv_movable(const fuse_ctx *c, uint32_t h, uint32_t ot, uint32_t chain[QKV_CHAIN], uint32_t *n_chain,
                        uint32_t *last) {
    const vkl_graph *g = c->g;
    vkl_vk_tensor planned, v;
    if (vkl_vk_bind_tensor(c->dev, g, c->w, c->mem, c->b, ot, &planned) || planned.pieced) return false;
    chain[0] = ot;
    *n_chain = 1;
    *last = h;
    for (uint32_t i = 0; i < *n_chain; i++) {
        const uint32_t t = chain[i];
        if (g->tensors[t].kind != VKL_TENSOR_ACTIVATION || g->tensors[t].is_output || c->moved[t].range) return false;
        for (uint32_t j = 0; j < c->n; j++) {
            const uint32_t ni = c->order[j];
            const vkl_node *n = &g->nodes[ni];
            bool reads = false;
            for (uint32_t k = 0; k < n->n_inputs; k++) reads |= n->inputs[k] == t;
            if (!reads) continue;
            if (vkl_node_view_input(c->dev->ctx, g, ni, c->b->values, c->b->count) == t && n->n_outputs == 1 &&
                n->outputs[0] != VKL_NONE) {
                if (vkl_vk_bind_tensor(c->dev, g, c->w, c->mem, c->b, n->outputs[0], &v)) return false;
                if (v.at.buffer == planned.at.buffer && v.at.offset == planned.at.offset &&
                    v.at.range == planned.at.range) {
                    if (*n_chain == QKV_CHAIN) return false;
                    chain[(*n_chain)++] = n->outputs[0];
                    continue;
                }
            }
            const uint32_t r = runs_at(c, ni);
            if (r == VKL_NONE || r < h) return false;
            if (r > *last) *last = r;
        }
    }
    return true;
}

/* Whether the QuantMatMuls m[0..n) (positions ascending, one A, on the
 * fusable matvec path, one format, K and group) run as one dispatch at
 * m[0]'s position: NULL (and the moves below made), or why not. A is read
 * there by m[0] already; each later member's output is written there
 * instead of at its own position, so no other node in between (counting
 * what the fusions so far run there) may read or write its bytes, and no
 * output may share bytes with A, a bias or another output. A later
 * member's output that would is moved to memory of its own (with the views
 * sharing its memory) where qkv_movable allows: the planner often gives V
 * the bytes of K or Q, whose lives end before v_proj's position. */
static const char *qkv_check(fuse_ctx *c, const uint32_t *m, uint32_t n) {
    vkl_vk_tensor in[3][3], y[3];
    uint32_t chain[3][QKV_CHAIN], n_chain[3] = {0}, last[3] = {0};
    const uint32_t h = c->pos[m[0]];
    bool gemm;
    for (uint32_t j = 0; j < n; j++)
        if (!fusable_qmm(c, m[j], in[j], &y[j], &gemm)) return "a tensor could not be bound";
    for (uint32_t j = 0; j < n; j++) {
        bool bad = vkl_vk_overlaps(&y[j].at, &in[0][0].at);
        for (uint32_t i = 0; i < n; i++) {
            bad |= in[i][2].id != VKL_NONE && vkl_vk_overlaps(&y[j].at, &in[i][2].at);
            bad |= i < j && !n_chain[i] && vkl_vk_overlaps(&y[j].at, &y[i].at);
        }
        for (uint32_t k = h + 1; j && !bad && k < c->pos[m[j]]; k++) bad = touched_at(c, k, m, n, &y[j].at);
        if (!bad) continue;
        if (!j) return "the first projection's output shares memory with A or a bias";
        if (!qkv_movable(c, h, c->g->nodes[m[j]].outputs[0], chain[j], &n_chain[j], &last[j]))
            return "an output shares memory with A, a bias or another output, or another node uses its memory "
                   "before its QuantMatMul's own position, and it could not be moved";
    }
    for (uint32_t j = 1; j < n; j++) {
        if (!n_chain[j]) continue;
        const VkDescriptorBufferInfo r = place_move(c, h, last[j], y[j].at.range);
        for (uint32_t i = 0; i < n_chain[j]; i++) {
            c->moved[chain[j][i]] = r;
            c->move_of[chain[j][i]] = c->n_moves - 1;
        }
    }
    return NULL;
}

/* Position k holds a QuantMatMul: fused with the later ones reading the
 * same A (the Q, K and V projections of a layer), two or three of them,
 * into one _qkv matvec at k. Run after the other patterns: only what they
 * left (NONE) is taken, and the checks see where their dispatches run. */
static void try_qkv(fuse_ctx *c, uint32_t k) {
    const vkl_graph *g = c->g;
    const uint32_t head = c->order[k];
    vkl_vk_tensor in[3], y;
    bool gemm, member_gemm;
    if (c->fused[k].kind != VKL_VK_FUSE_NONE || !fusable_qmm(c, head, in, &y, &gemm)) return;
    const uint32_t a = g->nodes[head].inputs[0];
    uint32_t m[3] = {head, VKL_NONE, VKL_NONE}, n = 1;
    for (uint32_t j = k + 1; j < c->n && n < 3; j++) {
        const uint32_t ni = c->order[j];
        const vkl_node *q = &g->nodes[ni];
        vkl_vk_tensor qi[3], qy;
        if (q->op != VKL_OP_QUANT_MAT_MUL || q->n_inputs < 2 || q->inputs[0] != a ||
            c->fused[j].kind != VKL_VK_FUSE_NONE || !fusable_qmm(c, ni, qi, &qy, &member_gemm) ||
            member_gemm != gemm)
            continue;
        if (qi[1].dtype != in[1].dtype || qi[1].group != in[1].group || qi[1].dims[1] != in[1].dims[1]) continue;
        m[n++] = ni;
    }
    if (n < 2) return;
    char what[160];
    if (!gemm && !vkl_vk_qmm_qkv_fits(c->dev)) { /* the GEMM form: a dispatch per projection */
        vkl_log(c->dev->ctx, VKL_LOG_DEBUG, "vulkan: %s and %u more QuantMatMuls of its A not fused: the device "
                "allows %u storage buffers per stage, the fused matvec binds %u",
                vkl_node_str(g, head, what, sizeof(what)), n - 1,
                c->dev->props.limits.maxPerStageDescriptorStorageBuffers, VKL_VK_QKV_BINDINGS);
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        const vkl_tensor *t = &g->tensors[g->nodes[m[i]].outputs[0]];
        if (t->kind != VKL_TENSOR_ACTIVATION || t->is_output) {
            vkl_log(c->dev->ctx, VKL_LOG_DEBUG, "vulkan: %s not fused with the QuantMatMuls of its A: an output "
                    "is a graph output", vkl_node_str(g, head, what, sizeof(what)));
            return;
        }
    }
    /* the whole set first; of three, then each pair (a pair stands at its first member) */
    static const uint8_t subsets[4][3] = {{0, 1, 2}, {0, 1, 3}, {0, 2, 3}, {1, 2, 3}};
    const char *why = NULL;
    for (uint32_t si = 0; si < (n == 3 ? 4u : 1u); si++) {
        uint32_t s[3] = {VKL_NONE, VKL_NONE, VKL_NONE}, ns = 0;
        for (uint32_t i = 0; i < 3; i++)
            if (subsets[si][i] < n) s[ns++] = m[subsets[si][i]];
        const char *no = qkv_check(c, s, ns);
        if (no) {
            if (!why) why = no;
            continue;
        }
        for (uint32_t i = 0; i < ns; i++) c->fused[c->pos[s[i]]].kind = VKL_VK_FUSE_GONE;
        c->fused[c->pos[s[0]]] = (vkl_vk_fusion){.kind = VKL_VK_FUSE_QKV, .nodes = {s[0], s[1], s[2], VKL_NONE}};
        if (why) { /* a smaller set than A's readers */
            c->overlapping++;
            vkl_log(c->dev->ctx, VKL_LOG_DEBUG, "vulkan: %s: %u of the %u QuantMatMuls of its A fused only: %s",
                    vkl_node_str(g, head, what, sizeof(what)), ns, n, why);
        }
        return;
    }
    kept_apart(c, head, why);
}

/* Whether node ri is a QuantMatMul on the integer-dot matvec reading t as
 * A (its one use of t), with codes of *steps x *chunk where `first` is
 * false (else it sets them), and A's row length into *cols. */
static bool codes_reader(const fuse_ctx *c, uint32_t ri, uint32_t t, bool first, uint32_t *steps, uint32_t *chunk,
                         int64_t *cols) {
    const vkl_node *r = &c->g->nodes[ri];
    if (r->op != VKL_OP_QUANT_MAT_MUL || r->inputs[0] != t || r->n_outputs != 1) return false;
    vkl_vk_tensor in[3], out;
    for (uint32_t i = 0; i < 3; i++)
        if (bind(c, i < r->n_inputs ? r->inputs[i] : VKL_NONE, &in[i])) return false;
    if (bind(c, r->outputs[0], &out)) return false;
    const vkl_vk_node q = {c->dev, c->g, ri, in, &out, 3, 1, c->b, c->w, NULL, NULL};
    uint32_t s, ch;
    if (!vkl_vk_qmm_reads_codes(&q, &s, &ch) || (!first && (s != *steps || ch != *chunk))) return false;
    *steps = s;
    *chunk = ch;
    *cols = in[0].dims[in[0].rank - 1];
    return true;
}

/* Whether y, written at position k, is an activation (no graph output)
 * that only later QuantMatMuls on the integer-dot matvec read, each once
 * and as A, all with codes of one shape: their steps per row and elements
 * per step, and y's row length (cols). */
static bool dot_readers(const fuse_ctx *c, uint32_t k, uint32_t y, uint32_t *steps, uint32_t *chunk, int64_t *cols) {
    if (c->g->tensors[y].kind != VKL_TENSOR_ACTIVATION || c->g->tensors[y].is_output) return false;
    uint32_t readers = 0;
    for (uint32_t j = k + 1; j < c->n; j++) {
        const vkl_node *r = &c->g->nodes[c->order[j]];
        uint32_t uses = 0;
        for (uint32_t i = 0; i < r->n_inputs; i++) uses += r->inputs[i] == y;
        if (!uses) continue;
        if (uses != 1 || !codes_reader(c, c->order[j], y, !readers, steps, chunk, cols)) return false;
        readers++;
    }
    return readers && readers == vkl_graph_use_count(c->g, y); /* else a reader not live */
}

/* GLU codes: the fused gate/up matvec at position k, when its output is
 * read only as dot_readers says (the down projection), in steps of its own
 * format's chunk that tile the output's rows: it writes their codes too
 * (the _glu_codes build), so no quantizer runs between it and them. The
 * codes are shared scratch no later node overwrites (try_norm). */
static void try_glu_codes(fuse_ctx *c, uint32_t k) {
    if (!c->dev->matvec_dot || c->fused[k].kind != VKL_VK_FUSE_GLU) return;
    const uint32_t y = c->g->nodes[c->order[k]].outputs[0];
    uint32_t steps = 0, chunk = 0;
    int64_t cols = 0;
    vkl_vk_tensor in[3], gy;
    if (!dot_readers(c, k, y, &steps, &chunk, &cols) || !fusable_qmm(c, c->fused[k].qmm, in, &gy, NULL)) return;
    const vkl_vk_node gate = {c->dev, c->g, c->fused[k].qmm, in, &gy, 3, 1, c->b, c->w, NULL, NULL};
    if (vkl_vk_qmm_glu_codes_fit(&gate, steps, chunk)) {
        c->fused[k].steps = steps;
        c->fused[k].chunk = chunk;
    }
}

/* NORM_CODES: the RMSNorm at position k, when every reader of its output
 * is a later QuantMatMul on the integer-dot matvec reading it as A (the Q,
 * K and V projections, the gate/up pair), all with codes of one shape: it
 * writes their codes instead of its output, which nothing then reads. The
 * codes are shared scratch (vk_scratch.c) no later node overwrites, so
 * nothing between the norm and its readers matters. */
static void try_norm(fuse_ctx *c, uint32_t k) {
    const uint32_t ni = c->order[k];
    const vkl_node *n = &c->g->nodes[ni];
    if (!c->dev->matvec_dot || c->fused[k].kind != VKL_VK_FUSE_NONE || n->n_inputs < 2 || n->n_outputs != 1 ||
        n->outputs[0] == VKL_NONE)
        return;
    const uint32_t y = n->outputs[0];
    uint32_t steps = 0, chunk = 0;
    int64_t cols = 0;
    if (!dot_readers(c, k, y, &steps, &chunk, &cols)) return;
    vkl_vk_tensor views[3];
    const uint32_t ids[3] = {n->inputs[0], n->inputs[1], y};
    for (uint32_t i = 0; i < 3; i++)
        if (bind(c, ids[i], &views[i])) return;
    const vkl_vk_node norm = {c->dev, c->g, ni, views, views + 2, 2, 1, c->b, c->w, NULL, NULL};
    if (vkl_vk_rms_codes_fit(&norm, cols, steps, chunk))
        c->fused[k] = (vkl_vk_fusion){VKL_VK_FUSE_NORM_CODES, VKL_NONE, VKL_NONE, steps, chunk};
}

/* ATTN_CODES: the Attention at position k, when every reader of its output
 * is a later QuantMatMul on the integer-dot matvec reading it as A (the
 * o_proj), directly or through views that record nothing (the planner gave
 * them the output's memory: a decode step's Transpose and Reshape of
 * [B, Hq, 1, Dv] to [B, 1, Hq * Dv]), all reading one tensor with codes of
 * one shape: its decode's merge writes their codes instead of its output,
 * which nothing then reads. The codes are shared scratch (vk_scratch.c) no
 * later node overwrites, so, as for NORM_CODES, nothing between the
 * Attention and its readers matters. */
#define ATTN_VIEWS 4 /* views between the Attention and its readers, at most */
static void try_attn_codes(fuse_ctx *c, uint32_t k) {
    const vkl_graph *g = c->g;
    const uint32_t ni = c->order[k];
    const vkl_node *n = &g->nodes[ni];
    if (!c->dev->matvec_dot || c->fused[k].kind != VKL_VK_FUSE_NONE || n->n_inputs > 4 || n->n_outputs != 1 ||
        n->outputs[0] == VKL_NONE)
        return;
    /* the output and the views of it sharing its memory; the one tensor the matvecs read */
    uint32_t chain[1 + ATTN_VIEWS] = {n->outputs[0]}, n_chain = 1, a = VKL_NONE, readers = 0, steps = 0, chunk = 0;
    int64_t cols = 0;
    for (uint32_t j = k + 1; j < c->n; j++) {
        const uint32_t ri = c->order[j];
        const vkl_node *r = &g->nodes[ri];
        uint32_t uses = 0, t = VKL_NONE;
        for (uint32_t i = 0; i < r->n_inputs; i++)
            if (one_of(r->inputs[i], chain, n_chain)) uses++, t = r->inputs[i];
        if (!uses) continue;
        if (uses != 1) return;
        if (vkl_node_view_input(c->dev->ctx, g, ri, c->b->values, c->b->count) == t && r->n_outputs == 1 &&
            r->outputs[0] != VKL_NONE) {
            vkl_vk_tensor from, to;
            if (n_chain == 1 + ATTN_VIEWS || bind(c, t, &from) || bind(c, r->outputs[0], &to) ||
                from.at.buffer != to.at.buffer || from.at.offset != to.at.offset || from.at.range != to.at.range)
                return; /* a view given memory of its own copies the output, which is never written */
            chain[n_chain++] = r->outputs[0];
            continue;
        }
        if ((readers && t != a) || !codes_reader(c, ri, t, !readers, &steps, &chunk, &cols)) return;
        a = t;
        readers++;
    }
    uint32_t uses = 0; /* a reader not live, or a graph output, fails the count */
    for (uint32_t i = 0; i < n_chain; i++) {
        const vkl_tensor *t = &g->tensors[chain[i]];
        if (t->kind != VKL_TENSOR_ACTIVATION || t->is_output) return;
        uses += vkl_graph_use_count(g, chain[i]);
    }
    if (!readers || uses != readers + n_chain - 1) return;
    vkl_vk_tensor views[5];
    for (uint32_t i = 0; i < n->n_inputs + 1u; i++)
        if (bind(c, i < n->n_inputs ? n->inputs[i] : n->outputs[0], &views[i])) return;
    const vkl_vk_node attn = {c->dev, g, ni, views, views + n->n_inputs, n->n_inputs, 1, c->b, c->w, NULL, NULL};
    if (vkl_vk_attn_codes_fit(&attn, cols, steps, chunk))
        c->fused[k] = (vkl_vk_fusion){VKL_VK_FUSE_ATTN_CODES, VKL_NONE, a, steps, chunk,
                                      {VKL_NONE, VKL_NONE, VKL_NONE, VKL_NONE}};
}

vkl_status vkl_vk_fuse_plan(vkl_backend_device *dev, const vkl_graph *g, const vkl_backend_weights *w,
                            const vkl_memory_map *mem, const vkl_binding *b, const uint32_t *order, uint32_t n,
                            vkl_vk_fusion *fused, VkDescriptorBufferInfo *moved, vkl_vk_buffer *moved_mem,
                            uint32_t *n_fused) {
    memset(fused, 0, (size_t)n * sizeof(*fused));
    memset(moved, 0, (size_t)g->n_tensors * sizeof(*moved));
    *n_fused = 0;
    if (!dev->fuse) return VKL_OK;
    fuse_ctx c = {dev, g, w, mem, b, order, n, NULL, fused, moved, NULL, NULL, 0, 0, 0};
    c.pos = vkl_calloc(dev->ctx, g->n_nodes ? g->n_nodes : 1, sizeof(uint32_t));
    c.moves = vkl_calloc(dev->ctx, n ? 2 * (size_t)n : 1, sizeof(move)); /* QKV: two at one position */
    c.move_of = vkl_calloc(dev->ctx, g->n_tensors ? g->n_tensors : 1, sizeof(uint32_t));
    if (!c.pos || !c.moves || !c.move_of) {
        vkl_free(dev->ctx, c.pos);
        vkl_free(dev->ctx, c.moves);
        vkl_free(dev->ctx, c.move_of);
        return VKL_ERR_OUT_OF_MEMORY;
    }
    for (uint32_t i = 0; i < g->n_nodes; i++) c.pos[i] = VKL_NONE;
    for (uint32_t t = 0; t < g->n_tensors; t++) c.move_of[t] = VKL_NONE;
    for (uint32_t k = 0; k < n; k++) c.pos[order[k]] = k;
    vkl_status st = VKL_OK;
    const uint32_t off = dev->fuse_off; /* VKL_VK_FUSE_OFF: patterns left out */
    for (uint32_t k = 0; !st && k < n; k++) {
        const uint32_t op = g->nodes[order[k]].op;
        if (op == VKL_OP_ADD && !(off & VKL_VULKAN_FUSE_ADD)) st = try_add(&c, k);
        else if (op == VKL_OP_SILU_MUL && !(off & VKL_VULKAN_FUSE_GLU)) st = try_glu(&c, k);
    }
    /* after the Adds and SiluMuls: it takes the QuantMatMuls they left and sees where they run */
    for (uint32_t k = 0; !st && k < n && !(off & VKL_VULKAN_FUSE_QKV); k++)
        if (g->nodes[order[k]].op == VKL_OP_QUANT_MAT_MUL) try_qkv(&c, k);
    /* after every move (a moved input is read only inside its move's life),
     * and after QKV: V, made at Q's position, is then ready for the layer's
     * RoPE(K) + KvAppend(K) dispatch */
    for (uint32_t k = 0; !st && k < n && !(off & VKL_VULKAN_FUSE_ROPE_KV); k++)
        if (g->nodes[order[k]].op == VKL_OP_KV_APPEND) try_rope_kv(&c, k);
    for (uint32_t k = 0; !st && k < n && !(off & VKL_VULKAN_FUSE_NORM_CODES); k++)
        if (g->nodes[order[k]].op == VKL_OP_RMS_NORM) try_norm(&c, k);
    for (uint32_t k = 0; !st && k < n && !(off & VKL_VULKAN_FUSE_GLU_CODES); k++) try_glu_codes(&c, k);
    for (uint32_t k = 0; !st && k < n && !(off & VKL_VULKAN_FUSE_ATTN_CODES); k++)
        if (g->nodes[order[k]].op == VKL_OP_ATTENTION) try_attn_codes(&c, k);
    vkl_free(dev->ctx, c.pos);
    vkl_free(dev->ctx, c.moves);
    vkl_free(dev->ctx, c.move_of);
    if (!st && c.move_bytes) st = vkl_vk_buffer_alloc(dev, VKL_BUFFER_DEVICE, (size_t)c.move_bytes, moved_mem);
    for (uint32_t t = 0; !st && t < g->n_tensors; t++)
        if (moved[t].range) moved[t].buffer = moved_mem->buf;
    uint32_t adds = 0, glus = 0, glu_codes = 0, norms = 0, attns = 0, ropes = 0, rope_nodes = 0, qkvs = 0,
             qkv_nodes = 0;
    for (uint32_t k = 0; k < n; k++) {
        adds += fused[k].kind == VKL_VK_FUSE_ADD;
        glus += fused[k].kind == VKL_VK_FUSE_GLU;
        glu_codes += fused[k].kind == VKL_VK_FUSE_GLU && fused[k].steps;
        norms += fused[k].kind == VKL_VK_FUSE_NORM_CODES;
        attns += fused[k].kind == VKL_VK_FUSE_ATTN_CODES;
        ropes += fused[k].kind == VKL_VK_FUSE_ROPE_KV;
        qkvs += fused[k].kind == VKL_VK_FUSE_QKV;
        for (uint32_t i = 0; i < 4; i++) {
            rope_nodes += fused[k].kind == VKL_VK_FUSE_ROPE_KV && fused[k].nodes[i] != VKL_NONE;
            qkv_nodes += fused[k].kind == VKL_VK_FUSE_QKV && fused[k].nodes[i] != VKL_NONE;
        }
    }
    *n_fused = adds * 2 + glus * 3 + rope_nodes + qkv_nodes;
    if (!st)
        vkl_log(dev->ctx, VKL_LOG_DEBUG,
                "vulkan: fused %u nodes into %u dispatches (%u QuantMatMul+Add, %u gate/up QuantMatMul+SiluMul, "
                "%u RoPE+KvAppend of %u nodes, %u Q/K/V QuantMatMuls of %u nodes; %u outputs moved to %llu bytes of "
                "their own); %u matches kept apart for their memory; %u RMSNorms, %u gate/up matvecs and %u "
                "Attentions write their readers' int8 codes",
                *n_fused, adds + glus + ropes + qkvs, adds, glus, ropes, rope_nodes, qkvs, qkv_nodes, c.n_moves,
                (unsigned long long)c.move_bytes, c.overlapping, norms, glu_codes, attns);
    return st;
}

/* A fused dispatch's node: tensors ids[0..n_in) its inputs and the next
 * n_out its outputs, each bound (moved where fusion moved it) into views,
 * the node standing as node index `as`. */
static vkl_status bind_fused(vkl_backend_device *dev, const vkl_graph *g, const vkl_backend_weights *w,
                             const vkl_memory_map *mem, const vkl_binding *b, const VkDescriptorBufferInfo *moved,
                             uint32_t as, const uint32_t *ids, uint32_t n_in, uint32_t n_out, vkl_vk_tensor *views,
                             vkl_vk_node *node) {
    vkl_status st = VKL_OK;
    for (uint32_t j = 0; !st && j < n_in + n_out; j++)
        st = vkl_vk_bind_moved(dev, g, w, mem, b, moved, ids[j], &views[j]);
    *node = (vkl_vk_node){dev, g, as, views, views + n_in, n_in, n_out, b, w};
    return st;
}

vkl_status vkl_vk_fuse_node(vkl_backend_device *dev, const vkl_graph *g, const vkl_backend_weights *w,
                            const vkl_memory_map *mem, const vkl_binding *b, const VkDescriptorBufferInfo *moved,
                            const vkl_vk_fusion *f, uint32_t head, vkl_vk_tensor *views, vkl_vk_node *node,
                            vkl_vk_recorder *record) {
    const vkl_node *q = &g->nodes[f->qmm], *h = &g->nodes[head];
    const uint32_t extra = f->kind == VKL_VK_FUSE_ADD ? f->extra : g->nodes[f->extra].inputs[1];
    const uint32_t ids[5] = {q->inputs[0], q->inputs[1], q->n_inputs > 2 ? q->inputs[2] : VKL_NONE, extra,
                             h->outputs[0]};
    *record = f->kind == VKL_VK_FUSE_ADD ? vkl_vk_record_qmm_add : vkl_vk_record_qmm_glu;
    return bind_fused(dev, g, w, mem, b, moved, f->qmm, ids, 4, 1, views, node);
}

vkl_status vkl_vk_fuse_rope_kv_node(vkl_backend_device *dev, const vkl_graph *g, const vkl_backend_weights *w,
                                    const vkl_memory_map *mem, const vkl_binding *b, const VkDescriptorBufferInfo *moved,
                                    const vkl_vk_fusion *f, vkl_vk_tensor *views, vkl_vk_node *node) {
    uint32_t ids[VKL_VK_ROPE_KV_IN + VKL_VK_ROPE_KV_OUT];
    rope_kv_ids(g, f->nodes, ids);
    return bind_fused(dev, g, w, mem, b, moved, f->nodes[M_KV_K], ids, VKL_VK_ROPE_KV_IN, VKL_VK_ROPE_KV_OUT, views,
                      node);
}

vkl_status vkl_vk_fuse_qkv_node(vkl_backend_device *dev, const vkl_graph *g, const vkl_backend_weights *w,
                                const vkl_memory_map *mem, const vkl_binding *b, const VkDescriptorBufferInfo *moved,
                                const vkl_vk_fusion *f, vkl_vk_tensor *views, vkl_vk_node *node) {
    uint32_t ids[VKL_VK_QKV_IN + VKL_VK_QKV_OUT];
    for (uint32_t i = 0; i < VKL_VK_QKV_IN + VKL_VK_QKV_OUT; i++) ids[i] = VKL_NONE;
    ids[0] = g->nodes[f->nodes[0]].inputs[0];
    for (uint32_t j = 0; j < 3; j++) {
        if (f->nodes[j] == VKL_NONE) continue;
        const vkl_node *q = &g->nodes[f->nodes[j]];
        ids[1 + 2 * j] = q->inputs[1];
        ids[2 + 2 * j] = q->n_inputs > 2 ? q->inputs[2] : VKL_NONE;
        ids[VKL_VK_QKV_IN + j] = q->outputs[0];
    }
    return bind_fused(dev, g, w, mem, b, moved, f->nodes[0], ids, VKL_VK_QKV_IN, VKL_VK_QKV_OUT, views, node);
}
