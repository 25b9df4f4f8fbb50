/* Fusion at prepare (docs/vulkan.md, "Fusion"): which live nodes the Vulkan
 * backend records as one dispatch, decided from the graph's structure and
 * the executable's memory map, in this backend only (the graph, and so ref
 * and cpu, are untouched). Two patterns, each recorded at the position of
 * its last node, where every input is ready:
 *
 *   ADD  Add(QuantMatMul(A, W[, bias]), R), either operand order, same
 *        shapes (no broadcasting): the matvec adds R as it stores the Add's
 *        output (quant_matvec.glsl's _add builds);
 *   GLU  SiluMul(QuantMatMul(A, Wg), QuantMatMul(A, Wu)) with one A, no
 *        bias, Wg and Wu of one format, shape and group: one matvec of both
 *        rows stores silu(gate) * up (the _glu builds);
 *   NORM_CODES  an RMSNorm whose output only integer-dot matvecs read: it
 *        writes their int8 codes (norm.comp's _codes builds) in place of
 *        its output and of their activation quantizer (try_norm).
 *
 * Each QuantMatMul output must have that one consumer and be no graph
 * output, and the QuantMatMul must run the one-dispatch matvec
 * (vkl_vk_qmm_fusable: decode; prefill's GEMM keeps its Add). Memory: the
 * fused dispatch reads A later than the QuantMatMul would have, so no node
 * between them may write A's bytes (the planner may hand A's memory on once
 * the QuantMatMul is its last reader), and the output must not share bytes
 * with A or R (one dispatch reads and writes them). An output the planner
 * placed there (A's memory is free again after the QuantMatMul, so a decode
 * step's o_proj + residual Add lands on it) is moved into a buffer of the
 * executable's own when all its readers can follow (try_move). A pattern
 * that fails any of this is recorded unfused. Views between the nodes (Reshape,
 * Transpose: vk_view.c) make the QuantMatMul's consumer the view, not the
 * Add, so such patterns are not matched. */
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
    move *moves;             /* the moves so far, n_moves of them (at most one per position) */
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
 * path; false (and no error) otherwise. */
static bool fusable_qmm(const fuse_ctx *c, uint32_t qn, vkl_vk_tensor in[3], vkl_vk_tensor *y) {
    const vkl_node *n = &c->g->nodes[qn];
    if (n->op != VKL_OP_QUANT_MAT_MUL || n->n_inputs < 2 || n->n_outputs != 1) return false;
    for (uint32_t j = 0; j < 3; j++)
        if (bind(c, j < n->n_inputs ? n->inputs[j] : VKL_NONE, &in[j])) return false;
    if (bind(c, n->outputs[0], y)) return false;
    const vkl_vk_node node = {c->dev, c->g, qn, in, y, 3, 1, c->b, c->w};
    return vkl_vk_qmm_fusable(&node); /* a node it refuses is refused again, unfused, by its recorder */
}

/* No node at positions (from, to) other than skip writes bytes of A. A view
 * given its input's memory (what prepare records no dispatch for) writes
 * nothing. */
static bool untouched_between(const fuse_ctx *c, uint32_t from, uint32_t to, uint32_t skip,
                              const vkl_vk_tensor *A) {
    for (uint32_t k = from + 1; k < to; k++) {
        const uint32_t ni = c->order[k];
        const vkl_node *n = &c->g->nodes[ni];
        if (ni == skip) continue;
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
    const VkDeviceSize align = c->dev->props.limits.minStorageBufferOffsetAlignment > 64
                                   ? c->dev->props.limits.minStorageBufferOffsetAlignment
                                   : 64;
    const VkDeviceSize bytes = out->at.range;
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
    c->moved[ot] = r;
    if (at + bytes > c->move_bytes) c->move_bytes = at + bytes;
    return true;
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
        if (!fusable_qmm(c, qn, in, &y)) continue;
        vkl_status st = bind(c, rt, &r);
        if (!st) st = bind(c, add->outputs[0], &out);
        if (st) return st;
        if (r.dtype != VKL_DTYPE_F32 || out.dtype != VKL_DTYPE_F32 || r.pieced || out.pieced || !same_dims(&r, &y) ||
            !same_dims(&out, &y))
            continue;
        const char *why = !untouched_between(c, c->pos[qn], k, VKL_NONE, &in[0])
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
    if (!vkl_vk_qmm_glu_fits(c->dev) || !fusable_qmm(c, gn, gin, &gy) || !fusable_qmm(c, un, uin, &uy))
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
    const char *why = !untouched_between(c, first, k, other, &gin[0])
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
    if (c->g->tensors[y].kind != VKL_TENSOR_ACTIVATION || c->g->tensors[y].is_output) return;
    uint32_t readers = 0, steps = 0, chunk = 0;
    int64_t cols = 0;
    for (uint32_t j = k + 1; j < c->n; j++) {
        const vkl_node *r = &c->g->nodes[c->order[j]];
        uint32_t uses = 0;
        for (uint32_t i = 0; i < r->n_inputs; i++) uses += r->inputs[i] == y;
        if (!uses) continue;
        if (uses != 1 || r->op != VKL_OP_QUANT_MAT_MUL || r->inputs[0] != y || r->n_outputs != 1) return;
        vkl_vk_tensor in[3], out;
        for (uint32_t i = 0; i < 3; i++)
            if (bind(c, i < r->n_inputs ? r->inputs[i] : VKL_NONE, &in[i])) return;
        if (bind(c, r->outputs[0], &out)) return;
        const vkl_vk_node q = {c->dev, c->g, c->order[j], in, &out, 3, 1, c->b, c->w, NULL, NULL};
        uint32_t s, ch;
        if (!vkl_vk_qmm_reads_codes(&q, &s, &ch) || (readers && (s != steps || ch != chunk))) return;
        steps = s;
        chunk = ch;
        cols = in[0].dims[in[0].rank - 1];
        readers++;
    }
    if (!readers || readers != vkl_graph_use_count(c->g, y)) return; /* a reader not live, or a graph output */
    vkl_vk_tensor views[3];
    const uint32_t ids[3] = {n->inputs[0], n->inputs[1], y};
    for (uint32_t i = 0; i < 3; i++)
        if (bind(c, ids[i], &views[i])) return;
    const vkl_vk_node norm = {c->dev, c->g, ni, views, views + 2, 2, 1, c->b, c->w, NULL, NULL};
    if (vkl_vk_rms_codes_fit(&norm, cols, steps, chunk))
        c->fused[k] = (vkl_vk_fusion){VKL_VK_FUSE_NORM_CODES, VKL_NONE, VKL_NONE, steps, chunk};
}

vkl_status vkl_vk_fuse_plan(vkl_backend_device *dev, const vkl_graph *g, const vkl_backend_weights *w,
                            const vkl_memory_map *mem, const vkl_binding *b, const uint32_t *order, uint32_t n,
                            vkl_vk_fusion *fused, VkDescriptorBufferInfo *moved, vkl_vk_buffer *moved_mem,
                            uint32_t *n_fused) {
    memset(fused, 0, (size_t)n * sizeof(*fused));
    memset(moved, 0, (size_t)g->n_tensors * sizeof(*moved));
    *n_fused = 0;
    if (!dev->fuse) return VKL_OK;
    fuse_ctx c = {dev, g, w, mem, b, order, n, NULL, fused, moved, NULL, 0, 0, 0};
    c.pos = vkl_calloc(dev->ctx, g->n_nodes ? g->n_nodes : 1, sizeof(uint32_t));
    c.moves = vkl_calloc(dev->ctx, n ? n : 1, sizeof(move));
    if (!c.pos || !c.moves) {
        vkl_free(dev->ctx, c.pos);
        vkl_free(dev->ctx, c.moves);
        return VKL_ERR_OUT_OF_MEMORY;
    }
    for (uint32_t i = 0; i < g->n_nodes; i++) c.pos[i] = VKL_NONE;
    for (uint32_t k = 0; k < n; k++) c.pos[order[k]] = k;
    vkl_status st = VKL_OK;
    for (uint32_t k = 0; !st && k < n; k++) {
        const uint32_t op = g->nodes[order[k]].op;
        if (op == VKL_OP_ADD) st = try_add(&c, k);
        else if (op == VKL_OP_SILU_MUL) st = try_glu(&c, k);
    }
    for (uint32_t k = 0; !st && k < n; k++)
        if (g->nodes[order[k]].op == VKL_OP_RMS_NORM) try_norm(&c, k);
    vkl_free(dev->ctx, c.pos);
    vkl_free(dev->ctx, c.moves);
    if (!st && c.move_bytes) st = vkl_vk_buffer_alloc(dev, VKL_BUFFER_DEVICE, (size_t)c.move_bytes, moved_mem);
    for (uint32_t t = 0; !st && t < g->n_tensors; t++)
        if (moved[t].range) moved[t].buffer = moved_mem->buf;
    uint32_t adds = 0, glus = 0, norms = 0;
    for (uint32_t k = 0; k < n; k++) {
        adds += fused[k].kind == VKL_VK_FUSE_ADD;
        glus += fused[k].kind == VKL_VK_FUSE_GLU;
        norms += fused[k].kind == VKL_VK_FUSE_NORM_CODES;
    }
    *n_fused = adds * 2 + glus * 3;
    if (!st)
        vkl_log(dev->ctx, VKL_LOG_DEBUG,
                "vulkan: fused %u nodes into %u dispatches (%u QuantMatMul+Add, %u gate/up QuantMatMul+SiluMul; "
                "%u outputs moved to %llu bytes of their own); %u matches kept apart for their memory; %u RMSNorms "
                "write their readers' int8 codes", *n_fused, adds + glus, adds, glus, c.n_moves,
                (unsigned long long)c.move_bytes, c.overlapping, norms);
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
    vkl_status st = VKL_OK;
    for (uint32_t j = 0; !st && j < 5; j++) st = vkl_vk_bind_moved(dev, g, w, mem, b, moved, ids[j], &views[j]);
    *node = (vkl_vk_node){dev, g, f->qmm, views, views + 4, 4, 1, b, w};
    *record = f->kind == VKL_VK_FUSE_ADD ? vkl_vk_record_qmm_add : vkl_vk_record_qmm_glu;
    return st;
}
