/* The Vulkan backend's vtable. prepare turns a graph and one binding into
 * one recorded command buffer: every live node's dispatches with their
 * descriptor sets bound, a conservative barrier after each, a timestamp
 * after each node; execute submits it with a fence (asynchronous), wait
 * waits on the fence, node_times reads the timestamps. Ops without a
 * Vulkan kernel are refused at prepare (VKL_ERR_UNSUPPORTED naming the node).
 *
 * A node's dispatches may share intermediate results through the
 * executable's scratch buffer (vkl_vk_scratch in vk_internal.h). In-place
 * outputs (KvAppend's state) need nothing here: the executor gives the
 * output its input's memory.
 *
 * Still to come, in this shape: replaying an executable for a true length
 * inside its padded bucket (execute refuses other symbol values for now; the
 * values would go to a small uniform buffer read by the shaders, since push
 * constants are recorded into the command buffer), barriers only on real
 * dependencies, shape-value tensors.
 *
 * Threads: each vtable call but open/close/probe/caps enters the device (its
 * lock, dev->ctx = the caller's context) and leaves it before returning;
 * vk_wait waits for the executable's fence outside it (vk_internal.h). */
#include <string.h>

#include "../../engine/ops.h"
#include "vk_internal.h"
#include "vulkan_backend.h"

struct vkl_backend_exec {
    const vkl_graph *g;
    VkCommandBuffer cmd;
    VkFence fence;
    VkDescriptorPool pool;
    VkQueryPool queries;   /* n_nodes + 1 timestamps; VK_NULL_HANDLE without */
    uint64_t *ticks;       /* node_times' scratch, n_nodes + 1 */
    uint32_t *nodes;       /* live nodes, in recorded order */
    uint32_t n_nodes;
    int64_t *binding;      /* the symbol values prepared for */
    size_t n_binding;
    /* shape-value tensors (a value, no producer), recorded as buffer updates
     * at the start of the command buffer: written at every execute */
    uint32_t *value_ids;
    uint32_t n_values;
    /* the memory map's uploads and downloads as recorded copies */
    VkBuffer *io_buf;
    VkBufferCopy *io_region;
    size_t n_up, n_down;
    uint64_t down_bytes; /* the downloads' total */
    uint32_t n_dispatches, n_barriers; /* recorded (barriers between dispatches) */
    uint32_t n_fused;      /* nodes recorded inside another's dispatch (vk_fuse.c) */
    uint32_t n_rope_kv;    /* of the dispatches, fused RoPE + KvAppend ones */
    uint32_t n_rope_kv_all; /* of those, ones with KvAppend(V) and RoPE(Q) too */
    uint32_t n_qkv;        /* of the dispatches, fused Q/K/V matvecs */
    uint32_t n_glu_codes;  /* of the dispatches, fused gate/up matvecs writing their readers' codes */
    uint32_t n_attn_codes; /* of the nodes, Attentions writing their readers' codes */
    vkl_vk_buffer scratch; /* vkl_vk_scratch ranges of every node (vk_internal.h) */
    vkl_vk_buffer moved;   /* fused outputs moved off their planned memory (vk_fuse.c) */
    bool pending;          /* submitted, not yet waited for */
    bool ran;              /* an execute has completed: timestamps are valid */
};

/* ---- open, close, buffers ----------------------------------------------------------------------- */

static vkl_status vk_probe(vkl_context *ctx, const vkl_backend_options *opt, vkl_backend_caps *out) {
    return vkl_vk_probe(ctx, opt, out);
}

static void vk_close(vkl_backend_device *dev) {
    if (!dev) return;
    vkl_vk_device_destroy(dev);
    if (dev->lock_made) pthread_mutex_destroy(&dev->lock);
    vkl_free(dev->own_ctx, dev);
}

static void vk_caps(vkl_backend_device *dev, vkl_backend_caps *out) { *out = dev->caps; }

static vkl_status vk_open(vkl_context *ctx, const vkl_backend_options *opt, vkl_backend_device **out) {
    *out = NULL;
    vkl_backend_device *dev = vkl_calloc(ctx, 1, sizeof(*dev));
    if (!dev) return VKL_ERR_OUT_OF_MEMORY;
    dev->ctx = dev->own_ctx = ctx;
    if (pthread_mutex_init(&dev->lock, NULL)) {
        vkl_free(ctx, dev);
        return vkl_fail(ctx, VKL_ERR_INTERNAL, "vulkan: pthread_mutex_init failed for the device lock");
    }
    dev->lock_made = true;
    vkl_status st = vkl_vk_device_create(ctx, opt, dev);
    if (st) {
        vk_close(dev);
        return st;
    }
    char gemm[160];
    vkl_vk_gemm_describe(dev, gemm, sizeof(gemm));
    vkl_log(ctx, VKL_LOG_INFO,
            "vulkan: %s (%s)%s, subgroup %u%s, timestamps %s, %s matvec math, GEMM %s, priority %s",
            dev->caps.device_name, dev->caps.driver, dev->external ? ", the app's device" : "", dev->subgroup_size,
            dev->subgroup_arith ? " with arithmetic" : "", dev->timestamp_bits ? "on" : "off",
            dev->matvec_dot ? "int8-dot" : dev->f16_math ? "f16" : "f32", gemm, dev->priority);
    vkl_log(ctx, VKL_LOG_INFO, "vulkan: bindings of at most %llu bytes (%s), allocations of %llu; memory budget from %s",
            (unsigned long long)dev->bind_limit, vkl_vk_bind_limit_name(dev), (unsigned long long)dev->alloc_limit,
            dev->has_memory_budget ? "VK_EXT_memory_budget" : "the heap's size");
    *out = dev;
    return VKL_OK;
}

static vkl_status buffer_create(vkl_backend_device *dev, vkl_buffer_usage usage, size_t bytes,
                                vkl_backend_buffer **out) {
    *out = NULL;
    /* a session's arena: refused with the budget's numbers, not the driver's out-of-memory */
    vkl_status st = usage == VKL_BUFFER_DEVICE ? vkl_vk_budget_check(dev, bytes, "a session's arena (device buffer)")
                                               : VKL_OK;
    if (st) return st;
    if (bytes > dev->alloc_limit)
        return vkl_fail(dev->ctx, VKL_ERR_UNSUPPORTED,
                        "vulkan: a buffer of %zu bytes is over the device's maxMemoryAllocationSize (%llu bytes)", bytes,
                        (unsigned long long)dev->alloc_limit);
    vkl_backend_buffer *b = vkl_calloc(dev->ctx, 1, sizeof(*b));
    if (!b) return VKL_ERR_OUT_OF_MEMORY;
    st = vkl_vk_buffer_alloc(dev, usage, bytes, &b->b);
    if (st) {
        vkl_free(dev->ctx, b);
        return st;
    }
    b->usage = usage;
    *out = b;
    return VKL_OK;
}

static vkl_status vk_buffer_create(vkl_backend_device *dev, vkl_context *ctx, vkl_buffer_usage usage, size_t bytes,
                                   vkl_backend_buffer **out) {
    vkl_vk_enter(dev, ctx);
    return vkl_vk_leave(dev, vkl_vk_validation_status(dev, buffer_create(dev, usage, bytes, out), "buffer_create"));
}

static void vk_buffer_destroy(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_buffer *b) {
    if (!b) return;
    vkl_vk_enter(dev, ctx);
    vkl_vk_buffer_free(dev, &b->b);
    vkl_free(dev->ctx, b);
    vkl_vk_leave(dev, VKL_OK);
}

static vkl_status vk_buffer_write(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_buffer *b, size_t offset,
                                  const void *src, size_t bytes) {
    vkl_vk_enter(dev, ctx);
    vkl_status st = vkl_vk_buffer_upload(dev, &b->b, offset, src, bytes);
    return vkl_vk_leave(dev, vkl_vk_validation_status(dev, st, "buffer_write"));
}

static vkl_status vk_buffer_read(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_buffer *b, size_t offset,
                                 void *dst, size_t bytes) {
    vkl_vk_enter(dev, ctx);
    vkl_status st = vkl_vk_buffer_download(dev, &b->b, offset, dst, bytes);
    if (!st && b->usage != VKL_BUFFER_READBACK) dev->work.downloaded += bytes;
    return vkl_vk_leave(dev, vkl_vk_validation_status(dev, st, "buffer_read"));
}

static vkl_status vk_weights_load(vkl_backend_device *dev, const vkl_graph *g, vkl_backend_weights **out) {
    vkl_vk_enter(dev, dev->own_ctx);
    return vkl_vk_leave(dev, vkl_vk_validation_status(dev, vkl_vk_weights_load(dev, g, out), "weights_load"));
}

static void vk_weights_release(vkl_backend_device *dev, vkl_backend_weights *w) {
    vkl_vk_enter(dev, dev->own_ctx);
    vkl_vk_weights_release(dev, w);
    vkl_vk_leave(dev, VKL_OK);
}

/* ---- prepare -------------------------------------------------------------------------------------- */

static void exec_free(vkl_backend_device *dev, vkl_backend_exec *e) {
    if (!e) return;
    if (e->pending) dev->vk.vkWaitForFences(dev->device, 1, &e->fence, VK_TRUE, VKL_VK_WAIT_NS);
    if (e->fence) dev->vk.vkDestroyFence(dev->device, e->fence, NULL);
    if (e->cmd) dev->vk.vkFreeCommandBuffers(dev->device, dev->pool, 1, &e->cmd);
    if (e->pool) dev->vk.vkDestroyDescriptorPool(dev->device, e->pool, NULL);
    if (e->queries) dev->vk.vkDestroyQueryPool(dev->device, e->queries, NULL);
    vkl_free(dev->ctx, e->ticks);
    vkl_free(dev->ctx, e->nodes);
    vkl_free(dev->ctx, e->binding);
    vkl_free(dev->ctx, e->value_ids);
    vkl_free(dev->ctx, e->io_buf);
    vkl_free(dev->ctx, e->io_region);
    vkl_vk_buffer_free(dev, &e->scratch);
    vkl_vk_buffer_free(dev, &e->moved);
    vkl_free(dev->ctx, e);
}

static void vk_exec_release(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_exec *e) {
    if (!e) return;
    vkl_vk_enter(dev, ctx);
    exec_free(dev, e);
    vkl_vk_leave(dev, VKL_OK);
}

/* Tensor t as node inputs/outputs see it: concrete shape, device range. */
vkl_status vkl_vk_bind_tensor(vkl_backend_device *dev, const vkl_graph *g, const vkl_backend_weights *w,
                              const vkl_memory_map *mem, const vkl_binding *b, uint32_t t, vkl_vk_tensor *v) {
    memset(v, 0, sizeof(*v));
    v->id = t;
    if (t == VKL_NONE) return VKL_OK;
    const vkl_tensor *tt = &g->tensors[t];
    v->dtype = tt->dtype;
    v->group = tt->group;
    v->rank = tt->shape.rank;
    vkl_status st = vkl_tensor_eval(dev->ctx, g, t, b->values, b->count, v->dims, &v->count, &v->bytes);
    if (st) return vkl_fail_prefix(dev->ctx, st, "vulkan");
    if (tt->kind == VKL_TENSOR_WEIGHT) {
        /* weights_load skips empty weights (a Reshape to a scalar's shape
         * []): no range, and no recorder binds an empty tensor */
        if (!v->bytes) return VKL_OK;
        if (t >= w->n || !w->w[t].n_pieces)
            return vkl_fail(dev->ctx, VKL_ERR_STATE, "vulkan: weight '%s' was not loaded", tt->name);
        v->weight = &w->w[t];
        v->at = w->w[t].piece[0].qs;
        v->pieced = w->w[t].n_pieces > 1;
        return VKL_OK;
    }
    size_t off = t < mem->n_offsets ? mem->offsets[t] : VKL_NO_OFFSET, end;
    if (!mem->arena || off == VKL_NO_OFFSET)
        return vkl_fail(dev->ctx, VKL_ERR_INVALID_ARGUMENT, "vulkan: tensor '%s' has no memory", tt->name);
    if (!vkl_add_size(off, v->bytes, &end) || end > mem->arena->b.size)
        return vkl_fail(dev->ctx, VKL_ERR_INVALID_ARGUMENT,
                        "vulkan: tensor '%s' [%zu, +%zu) is outside the %zu-byte arena", tt->name, off, v->bytes,
                        (size_t)mem->arena->b.size);
    if (off % dev->props.limits.minStorageBufferOffsetAlignment)
        return vkl_fail(dev->ctx, VKL_ERR_UNSUPPORTED,
                        "vulkan: tensor '%s' at arena offset %zu; this device binds buffers at multiples of %llu",
                        tt->name, off, (unsigned long long)dev->props.limits.minStorageBufferOffsetAlignment);
    /* over the limit: only recorders that bind pieces of it see it (plan_nodes) */
    v->pieced = v->bytes > dev->bind_limit;
    /* An empty tensor still needs a valid range; nothing reads it. Ranges
     * are whole words (shaders/vulkan/tensor.glsl): the arena's 64-byte
     * placement leaves the rounded-up tail as padding. */
    const size_t words = (v->bytes + 3) & ~(size_t)3;
    if (v->bytes && off + words > mem->arena->b.size)
        return vkl_fail(dev->ctx, VKL_ERR_INVALID_ARGUMENT, "vulkan: tensor '%s' ends within the arena's last word",
                        tt->name);
    v->at = (VkDescriptorBufferInfo){mem->arena->b.buf, v->bytes ? off : 0, v->bytes ? words : 4};
    return VKL_OK;
}

vkl_status vkl_vk_bind_moved(vkl_backend_device *dev, const vkl_graph *g, const vkl_backend_weights *w,
                             const vkl_memory_map *mem, const vkl_binding *b, const VkDescriptorBufferInfo *moved,
                             uint32_t t, vkl_vk_tensor *v) {
    vkl_status st = vkl_vk_bind_tensor(dev, g, w, mem, b, t, v);
    if (!st && t != VKL_NONE && moved[t].range) v->at = moved[t];
    return st;
}

static bool same_range(const VkDescriptorBufferInfo *a, const VkDescriptorBufferInfo *b) {
    return a->buffer == b->buffer && a->offset == b->offset && a->range == b->range;
}

/* Whether binding b lies in tensor t: its range, a piece of it (a sub-range
 * of an arena tensor, its start rounded down to the binding alignment), or
 * one of its weight pieces. */
static bool binds_tensor(const vkl_backend_device *dev, const vkl_vk_tensor *t, const VkDescriptorBufferInfo *b) {
    if (t->id == VKL_NONE) return false;
    for (uint32_t i = 0; t->weight && i < t->weight->n_pieces; i++)
        if (b->buffer == t->weight->piece[i].buf.buf) return true;
    if (b->buffer != t->at.buffer) return false;
    if (same_range(&t->at, b)) return true;
    const VkDeviceSize align = dev->props.limits.minStorageBufferOffsetAlignment;
    return b->offset >= t->at.offset / align * align && b->offset + b->range <= t->at.offset + t->at.range + 3;
}

/* Which of a dispatch's bindings it writes: those bound to an output of its
 * node (an in-place output is its input's range: written), and anything
 * that is no input (scratch) unless the recorder marked it read-only
 * (d->reads). Inputs alone are read. Recorders need not
 * say: the barriers follow from what they bind. */
static uint32_t written_bindings(const vkl_vk_node *nd, const vkl_vk_dispatch *d) {
    uint32_t mask = 0;
    for (uint32_t j = 0; j < d->n_bind; j++) {
        bool out = false, in = false;
        for (uint32_t o = 0; o < nd->n_out && !out; o++) out = binds_tensor(nd->dev, &nd->out[o], &d->bind[j]);
        for (uint32_t i = 0; i < nd->n_in && !in; i++) in = binds_tensor(nd->dev, &nd->in[i], &d->bind[j]);
        if (out || (!in && !(d->reads >> j & 1u))) mask |= 1u << j;
    }
    return mask;
}

/* Ranges touched since the last barrier: a dispatch that reads or writes
 * what an earlier one wrote (RAW, WAW), or writes what one read (WAR), needs
 * a barrier first; independent dispatches (the Q, K and V projections of
 * one input) run without. */
typedef struct touched {
    VkDescriptorBufferInfo *r;
    bool *written;
    size_t n, cap;
} touched;

bool vkl_vk_overlaps(const VkDescriptorBufferInfo *a, const VkDescriptorBufferInfo *b) {
    return a->buffer == b->buffer && a->offset < b->offset + b->range && b->offset < a->offset + a->range;
}

static bool needs_barrier(const touched *t, const vkl_vk_dispatch *d, uint32_t writes) {
    for (uint32_t j = 0; j < d->n_bind; j++)
        for (size_t k = 0; k < t->n; k++)
            if ((t->written[k] || (writes >> j & 1u)) && vkl_vk_overlaps(&t->r[k], &d->bind[j])) return true;
    return false;
}

/* What prepare builds before recording: each node's dispatches. */
typedef struct plan {
    vkl_vk_dispatch *d;    /* every node's dispatches, in order (n of cap) */
    uint32_t *writes;      /* per dispatch: bit j set = binding j is written */
    size_t n, cap;
    size_t *first;         /* per node: its first dispatch */
    uint32_t *count;       /* dispatches per node */
    VkPipeline *pipe;      /* per dispatch */
    VkDescriptorSet *set;  /* per dispatch */
    vkl_vk_tensor *views;  /* scratch: one node's inputs then outputs */
    vkl_vk_dispatch *tmp;  /* scratch: VKL_VK_MAX_DISPATCHES, one node's as its recorder writes them */
    vkl_vk_fusion *fused;  /* per node: what its position records (vk_fuse.c) */
    VkDescriptorBufferInfo *moved; /* per tensor: where fusion moved it (vkl_vk_fuse_plan) */
    vkl_vk_scratch_book book; /* scratch ranges handed to the recorders (vk_scratch.c) */
} plan;

static void plan_free(vkl_context *ctx, plan *p) {
    vkl_free(ctx, p->d);
    vkl_free(ctx, p->first);
    vkl_free(ctx, p->tmp);
    vkl_free(ctx, p->count);
    vkl_free(ctx, p->pipe);
    vkl_free(ctx, p->set);
    vkl_free(ctx, p->views);
    vkl_free(ctx, p->writes);
    vkl_free(ctx, p->fused);
    vkl_free(ctx, p->moved);
    vkl_vk_scratch_book_free(ctx, &p->book);
}

/* Every live node has a recorder, or the graph is refused before anything is made. */
static vkl_status check_ops(vkl_backend_device *dev, const vkl_graph *g, const uint32_t *order, uint32_t n) {
    for (uint32_t k = 0; k < n; k++) {
        if (vkl_vk_recorder_for(g->nodes[order[k]].op)) continue;
        char what[160];
        return vkl_fail(dev->ctx, VKL_ERR_UNSUPPORTED, "vulkan: no kernel for %s",
                        vkl_node_str(g, order[k], what, sizeof(what)));
    }
    return VKL_OK;
}

/* A tensor over the binding limit reaches only the recorders that bind it
 * in pieces; anywhere else the node is refused, naming the tensor. */
static vkl_status check_pieces(const vkl_vk_node *nd, uint32_t op) {
    if (vkl_vk_takes_pieces(op)) return VKL_OK;
    for (uint32_t j = 0; j < nd->n_in + nd->n_out; j++) {
        const vkl_vk_tensor *t = j < nd->n_in ? &nd->in[j] : &nd->out[j - nd->n_in];
        if (t->id == VKL_NONE || !t->pieced) continue;
        return vkl_vk_node_unsupported(nd, "%s '%s' of %zu bytes is over the binding limit (%s, %llu bytes), and this "
                                       "op takes no pieces (those that do: QuantMatMul, MatMul, Gather)",
                                       j < nd->n_in ? "input" : "output", nd->g->tensors[t->id].name, t->bytes,
                                       vkl_vk_bind_limit_name(nd->dev), (unsigned long long)nd->dev->bind_limit);
    }
    return VKL_OK;
}

static vkl_status plan_nodes(vkl_backend_device *dev, const vkl_graph *g, const vkl_backend_weights *w,
                             const vkl_memory_map *mem, const vkl_binding *b, vkl_backend_exec *e, plan *p) {
    vkl_context *ctx = dev->ctx;
    /* the widest fused node (a matvec's: 5) */
    uint32_t max_io = VKL_VK_ROPE_KV_IN + VKL_VK_ROPE_KV_OUT > VKL_VK_QKV_IN + VKL_VK_QKV_OUT
                          ? VKL_VK_ROPE_KV_IN + VKL_VK_ROPE_KV_OUT
                          : VKL_VK_QKV_IN + VKL_VK_QKV_OUT;
    for (uint32_t k = 0; k < e->n_nodes; k++) {
        const vkl_node *n = &g->nodes[e->nodes[k]];
        if (n->n_inputs + n->n_outputs > max_io) max_io = n->n_inputs + n->n_outputs;
    }
    const size_t nodes = e->n_nodes ? e->n_nodes : 1;
    p->first = vkl_calloc(ctx, nodes, sizeof(*p->first));
    p->count = vkl_calloc(ctx, nodes, sizeof(*p->count));
    p->views = vkl_calloc(ctx, max_io, sizeof(*p->views));
    p->tmp = vkl_calloc(ctx, VKL_VK_MAX_DISPATCHES, sizeof(*p->tmp));
    p->fused = vkl_calloc(ctx, nodes, sizeof(*p->fused));
    p->moved = vkl_calloc(ctx, g->n_tensors ? g->n_tensors : 1, sizeof(*p->moved));
    if (!p->first || !p->count || !p->views || !p->tmp || !p->fused || !p->moved) return VKL_ERR_OUT_OF_MEMORY;
    vkl_status st =
        vkl_vk_fuse_plan(dev, g, w, mem, b, e->nodes, e->n_nodes, p->fused, p->moved, &e->moved, &e->n_fused);
    for (uint32_t k = 0; !st && k < e->n_nodes; k++) {
        e->n_rope_kv += p->fused[k].kind == VKL_VK_FUSE_ROPE_KV;
        e->n_rope_kv_all += p->fused[k].kind == VKL_VK_FUSE_ROPE_KV && p->fused[k].nodes[2] != VKL_NONE &&
                            p->fused[k].nodes[3] != VKL_NONE; /* vk_fuse.c's members: KvAppend(V), RoPE(Q) */
        e->n_qkv += p->fused[k].kind == VKL_VK_FUSE_QKV;
        e->n_glu_codes += p->fused[k].kind == VKL_VK_FUSE_GLU && p->fused[k].steps;
        e->n_attn_codes += p->fused[k].kind == VKL_VK_FUSE_ATTN_CODES;
    }
    for (uint32_t k = 0; !st && k < e->n_nodes; k++) {
        const vkl_node *n = &g->nodes[e->nodes[k]];
        const vkl_vk_fusion *f = &p->fused[k];
        vkl_vk_node node = {dev, g, e->nodes[k], p->views, p->views, 0, 0, b, w};
        vkl_vk_recorder record = NULL;
        bool viewed = false;
        if (f->kind == VKL_VK_FUSE_ADD || f->kind == VKL_VK_FUSE_GLU) {
            st = vkl_vk_fuse_node(dev, g, w, mem, b, p->moved, f, e->nodes[k], p->views, &node, &record);
        } else if (f->kind == VKL_VK_FUSE_ROPE_KV) {
            st = vkl_vk_fuse_rope_kv_node(dev, g, w, mem, b, p->moved, f, p->views, &node);
            record = vkl_vk_record_rope_kv;
        } else if (f->kind == VKL_VK_FUSE_QKV) {
            st = vkl_vk_fuse_qkv_node(dev, g, w, mem, b, p->moved, f, p->views, &node);
            record = vkl_vk_record_qmm_qkv;
        } else if (f->kind == VKL_VK_FUSE_NONE || f->kind == VKL_VK_FUSE_NORM_CODES ||
                   f->kind == VKL_VK_FUSE_ATTN_CODES) {
            for (uint32_t j = 0; !st && j < n->n_inputs + n->n_outputs; j++)
                st = vkl_vk_bind_moved(dev, g, w, mem, b, p->moved,
                                       j < n->n_inputs ? n->inputs[j] : n->outputs[j - n->n_inputs], &p->views[j]);
            node = (vkl_vk_node){dev, g, e->nodes[k], p->views, p->views + n->n_inputs, n->n_inputs, n->n_outputs,
                                 b, w};
            if (!st) st = check_pieces(&node, n->op);
            /* a view the planner gave its input's memory: nothing to dispatch */
            viewed = !st && n->n_outputs && same_range(&p->views[0].at, &p->views[n->n_inputs].at) &&
                     vkl_node_view_input(dev->ctx, g, e->nodes[k], b->values, b->count) != VKL_NONE;
            record = f->kind == VKL_VK_FUSE_NORM_CODES   ? vkl_vk_record_rms_codes
                     : f->kind == VKL_VK_FUSE_ATTN_CODES ? vkl_vk_record_attention_codes
                                                         : vkl_vk_recorder_for(n->op);
        } /* VKL_VK_FUSE_GONE: another position's dispatch computes it */
        node.book = &p->book;
        node.fusion = f;
        if (!st && record && !viewed) st = record(&node, p->tmp, &p->count[k]);
        if (!st && p->n + p->count[k] > p->cap) {
            const size_t cap = (p->n + p->count[k]) * 2 + 64;
            vkl_vk_dispatch *d = vkl_realloc_array(ctx, p->d, cap, sizeof(*d));
            if (d) p->d = d;
            uint32_t *wr = d ? vkl_realloc_array(ctx, p->writes, cap, sizeof(*wr)) : NULL;
            if (wr) p->writes = wr;
            if (!d || !wr) st = VKL_ERR_OUT_OF_MEMORY;
            else p->cap = cap;
        }
        if (st) break;
        p->first[k] = p->n;
        for (uint32_t i = 0; i < p->count[k]; i++) {
            p->d[p->n] = p->tmp[i];
            p->writes[p->n++] = written_bindings(&node, &p->tmp[i]);
        }
        /* recorders count on zeroed fields they do not set (and may have
         * written slots they did not count) */
        memset(p->tmp, 0, VKL_VK_MAX_DISPATCHES * sizeof(*p->tmp));
    }
    p->pipe = st ? NULL : vkl_calloc(ctx, p->n ? p->n : 1, sizeof(*p->pipe));
    p->set = st ? NULL : vkl_calloc(ctx, p->n ? p->n : 1, sizeof(*p->set));
    if (!st && (!p->pipe || !p->set)) st = VKL_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; !st && i < p->n; i++) {
        const vkl_vk_pipeline *pl;
        st = vkl_vk_pipeline_get(dev, p->d[i].shader, p->d[i].n_bind, p->d[i].spec, p->d[i].n_spec, &pl);
        if (!st) p->pipe[i] = pl->pipeline;
    }
    return st;
}

/* The executable's scratch buffer: as large as the furthest end of any
 * vkl_vk_scratch range its dispatches bind, bound in place of the markers. */
static vkl_status scratch_bind(vkl_backend_device *dev, vkl_backend_exec *e, plan *p) {
    VkDeviceSize need = 0;
    for (uint32_t k = 0; k < e->n_nodes; k++)
        for (uint32_t i = 0; i < p->count[k]; i++) {
            const vkl_vk_dispatch *d = &p->d[p->first[k] + i];
            for (uint32_t j = 0; j < d->n_bind; j++) {
                const VkDescriptorBufferInfo *b = &d->bind[j];
                if (b->buffer != VK_NULL_HANDLE) continue;
                if (!b->range || b->range > dev->bind_limit ||
                    b->offset % dev->props.limits.minStorageBufferOffsetAlignment)
                    return vkl_fail(dev->ctx, VKL_ERR_INVALID_ARGUMENT,
                                    "vulkan: node %u asks for scratch [%llu, +%llu): not a range this device binds",
                                    e->nodes[k], (unsigned long long)b->offset, (unsigned long long)b->range);
                if (b->offset + b->range > need) need = b->offset + b->range;
            }
        }
    if (!need) return VKL_OK;
    vkl_status st = vkl_vk_buffer_alloc(dev, VKL_BUFFER_DEVICE, (size_t)need, &e->scratch);
    /* zeroed once where counters are used: the decode attention merging
     * its own chunks (attn_fold: attn_decode_sg.comp; attn_wg_fold:
     * attn_decode.comp; vk_attention.c) and
     * the gate/up matvecs writing their readers' codes (the _glu_codes
     * builds) count into them from 0; nothing else reads scratch before
     * writing it */
    VkCommandBuffer cmd;
    if (!st && (dev->attn_fold || dev->attn_wg_fold || e->n_glu_codes) && !(st = vkl_vk_once_begin(dev, &cmd))) {
        dev->vk.vkCmdFillBuffer(cmd, e->scratch.buf, 0, VK_WHOLE_SIZE, 0);
        st = vkl_vk_once_end(dev);
    }
    for (uint32_t k = 0; !st && k < e->n_nodes; k++)
        for (uint32_t i = 0; i < p->count[k]; i++) {
            vkl_vk_dispatch *d = &p->d[p->first[k] + i];
            for (uint32_t j = 0; j < d->n_bind; j++)
                if (d->bind[j].buffer == VK_NULL_HANDLE) d->bind[j].buffer = e->scratch.buf;
        }
    return st;
}

/* One descriptor pool sized for this executable; one set per dispatch. */
static vkl_status descriptors(vkl_backend_device *dev, vkl_backend_exec *e, plan *p) {
    uint32_t sets = 0, buffers = 0;
    for (uint32_t k = 0; k < e->n_nodes; k++)
        for (uint32_t i = 0; i < p->count[k]; i++) {
            sets++;
            buffers += p->d[p->first[k] + i].n_bind;
        }
    if (!sets) return VKL_OK;
    VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, buffers ? buffers : 1};
    VkDescriptorPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                     .maxSets = sets,
                                     .poolSizeCount = 1,
                                     .pPoolSizes = &size};
    vkl_status st = VKL_VKD(dev, vkCreateDescriptorPool, (dev->device, &pi, NULL, &e->pool));
    for (uint32_t k = 0; !st && k < e->n_nodes; k++)
        for (uint32_t i = 0; !st && i < p->count[k]; i++) {
            size_t s = p->first[k] + i;
            const vkl_vk_dispatch *d = &p->d[s];
            VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                              .descriptorPool = e->pool,
                                              .descriptorSetCount = 1,
                                              .pSetLayouts = &dev->set_layout[d->n_bind]};
            st = VKL_VKD(dev, vkAllocateDescriptorSets, (dev->device, &ai, &p->set[s]));
            VkWriteDescriptorSet wr[VKL_VK_MAX_BINDINGS];
            for (uint32_t j = 0; !st && j < d->n_bind; j++)
                wr[j] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                               .dstSet = p->set[s],
                                               .dstBinding = j,
                                               .descriptorCount = 1,
                                               .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                               .pBufferInfo = &d->bind[j]};
            if (!st) dev->vk.vkUpdateDescriptorSets(dev->device, d->n_bind, wr, 0, NULL);
            dev->work.descriptor_writes++;
        }
    return st;
}

/* The shape-value tensors live nodes read: each written by a buffer update
 * recorded first (so every replay rewrites them, as ref writes them at
 * every execute), from the values the executable was prepared for. */
static vkl_status collect_values(vkl_backend_device *dev, const vkl_graph *g, vkl_backend_exec *e) {
    e->value_ids = vkl_calloc(dev->ctx, g->n_tensors ? g->n_tensors : 1, sizeof(uint32_t));
    if (!e->value_ids) return VKL_ERR_OUT_OF_MEMORY;
    for (uint32_t k = 0; k < e->n_nodes; k++) {
        const vkl_node *n = &g->nodes[e->nodes[k]];
        for (uint32_t j = 0; j < n->n_inputs; j++) {
            uint32_t t = n->inputs[j];
            if (t == VKL_NONE || !g->tensors[t].value || g->tensors[t].producer != VKL_NONE ||
                g->tensors[t].kind == VKL_TENSOR_WEIGHT)
                continue;
            bool seen = false;
            for (uint32_t i = 0; i < e->n_values && !seen; i++) seen = e->value_ids[i] == t;
            if (!seen) e->value_ids[e->n_values++] = t;
        }
    }
    return VKL_OK;
}

/* The map's io copies as buffer copies, each range checked against its
 * buffer and its tensor's arena bytes. */
static vkl_status collect_io(vkl_backend_device *dev, const vkl_graph *g, const vkl_memory_map *mem,
                             const vkl_binding *b, vkl_backend_exec *e) {
    size_t n = mem->n_uploads + mem->n_downloads;
    if (!n) return VKL_OK;
    e->io_buf = vkl_calloc(dev->ctx, n, sizeof(*e->io_buf));
    e->io_region = vkl_calloc(dev->ctx, n, sizeof(*e->io_region));
    if (!e->io_buf || !e->io_region) return VKL_ERR_OUT_OF_MEMORY;
    for (size_t k = 0; k < n; k++) {
        const bool up = k < mem->n_uploads;
        const vkl_io_copy *c = up ? &mem->uploads[k] : &mem->downloads[k - mem->n_uploads];
        int64_t dims[VKL_MAX_RANK], count;
        size_t tbytes = 0, end_t, end_b, off;
        bool ok = c->buffer && c->tensor < g->n_tensors && mem->arena && c->tensor < mem->n_offsets &&
                  (off = mem->offsets[c->tensor]) != VKL_NO_OFFSET &&
                  !vkl_tensor_eval(dev->ctx, g, c->tensor, b->values, b->count, dims, &count, &tbytes) &&
                  vkl_add_size(c->tensor_offset, c->bytes, &end_t) && end_t <= tbytes &&
                  vkl_add_size(c->buffer_offset, c->bytes, &end_b) && end_b <= c->buffer->b.size;
        if (!ok)
            return vkl_fail(dev->ctx, VKL_ERR_INVALID_ARGUMENT,
                            "vulkan: io copy %zu (%zu bytes of tensor %u at +%zu, buffer +%zu) is out of range", k,
                            c->bytes, c->tensor, c->tensor_offset, c->buffer_offset);
        const VkDeviceSize at = off + c->tensor_offset;
        e->io_buf[k] = c->buffer->b.buf;
        e->io_region[k] = up ? (VkBufferCopy){c->buffer_offset, at, c->bytes}
                             : (VkBufferCopy){at, c->buffer_offset, c->bytes};
        if (!up) e->down_bytes += c->bytes;
    }
    e->n_up = mem->n_uploads;
    e->n_down = mem->n_downloads;
    return VKL_OK;
}

static void record_io(vkl_backend_device *dev, vkl_backend_exec *e, VkBuffer arena, bool downloads,
                      VkCommandBuffer cmd) {
    for (size_t k = downloads ? e->n_up : 0; k < (downloads ? e->n_up + e->n_down : e->n_up); k++)
        if (e->io_region[k].size)
            dev->vk.vkCmdCopyBuffer(cmd, downloads ? arena : e->io_buf[k], downloads ? e->io_buf[k] : arena, 1,
                                    &e->io_region[k]);
}

static vkl_status record_values(vkl_backend_device *dev, vkl_backend_exec *e, const vkl_memory_map *mem,
                                const vkl_binding *b, VkCommandBuffer cmd) {
    uint64_t data[512]; /* vkCmdUpdateBuffer takes at most 65536 bytes; shape values are a few */
    for (uint32_t i = 0; i < e->n_values; i++) {
        uint32_t t = e->value_ids[i];
        size_t bytes;
        memset(data, 0, sizeof(data));
        vkl_status st = vkl_tensor_value_bytes(dev->ctx, e->g, t, b->values, b->count, data, sizeof(data), &bytes);
        if (st) return vkl_fail_prefix(dev->ctx, st, "vulkan");
        size_t off = mem->offsets[t];
        /* sizes are whole words: the arena places tensors 64-byte aligned, so
         * the rounded-up tail is padding nothing else owns */
        if (bytes) dev->vk.vkCmdUpdateBuffer(cmd, mem->arena->b.buf, off, (bytes + 3) & ~(size_t)3, data);
    }
    return VKL_OK;
}

static vkl_status record(vkl_backend_device *dev, vkl_backend_exec *e, const plan *p, const vkl_memory_map *mem,
                         const vkl_binding *b) {
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = dev->pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    vkl_status st = VKL_VKD(dev, vkAllocateCommandBuffers, (dev->device, &ai, &e->cmd));
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if (!st) st = VKL_VKD(dev, vkCreateFence, (dev->device, &fi, NULL, &e->fence));
    if (!st && dev->profile) {
        VkQueryPoolCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                    .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                    .queryCount = e->n_nodes + 1};
        st = VKL_VKD(dev, vkCreateQueryPool, (dev->device, &qi, NULL, &e->queries));
        if (!st && !(e->ticks = vkl_calloc(dev->ctx, e->n_nodes + 1, sizeof(uint64_t)))) st = VKL_ERR_OUT_OF_MEMORY;
    }
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    if (!st) st = VKL_VKD(dev, vkBeginCommandBuffer, (e->cmd, &bi));
    dev->work.recordings++;
    if (st) return st;
    VkCommandBuffer cmd = e->cmd;
    /* BOTTOM_OF_PIPE timestamps: each waits for all earlier work, so
     * t[k + 1] - t[k] is node k (its dispatches and barriers). */
    if (e->queries) dev->vk.vkCmdResetQueryPool(cmd, e->queries, 0, e->n_nodes + 1);
    st = record_values(dev, e, mem, b, cmd);
    if (st) return st;
    record_io(dev, e, mem->arena ? mem->arena->b.buf : VK_NULL_HANDLE, false, cmd);
    vkl_vk_barrier_all(dev, cmd); /* host writes, value updates and earlier copies, then us */
    if (e->queries) dev->vk.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, e->queries, 0);
    /* Barriers only where a dispatch depends on one since the last barrier;
     * when profiling, one after every dispatch so each node's time is its own.
     * Between dispatches they order compute against compute only: host and
     * transfer access in these barriers made NVIDIA's driver wait for more
     * than the previous dispatch (docs/vulkan.md); the barriers around the
     * io copies, before and after the dispatches, cover those. */
    touched t = {0};
    for (uint32_t k = 0; k < e->n_nodes; k++) t.cap += (size_t)p->count[k] * VKL_VK_MAX_BINDINGS;
    t.r = vkl_calloc(dev->ctx, t.cap ? t.cap : 1, sizeof(*t.r));
    t.written = vkl_calloc(dev->ctx, t.cap ? t.cap : 1, sizeof(*t.written));
    if (!t.r || !t.written) st = VKL_ERR_OUT_OF_MEMORY;
    e->n_dispatches = e->n_barriers = 0;
    for (uint32_t k = 0; !st && k < e->n_nodes; k++) {
        for (uint32_t i = 0; i < p->count[k]; i++) {
            size_t s = p->first[k] + i;
            const vkl_vk_dispatch *d = &p->d[s];
            if (needs_barrier(&t, d, p->writes[s])) {
                vkl_vk_barrier_compute(dev, cmd);
                e->n_barriers++;
                t.n = 0;
            }
            vkl_vk_cmd_dispatch(dev, cmd, p->pipe[s], d->n_bind, p->set[s], d->push, d->n_push, d->groups);
            e->n_dispatches++;
            for (uint32_t j = 0; j < d->n_bind; j++) {
                t.r[t.n] = d->bind[j];
                t.written[t.n++] = (p->writes[s] >> j & 1u) != 0;
            }
            if (e->queries) {
                vkl_vk_barrier_compute(dev, cmd);
                t.n = 0;
            }
        }
        if (e->queries) dev->vk.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, e->queries, k + 1);
    }
    vkl_free(dev->ctx, t.r);
    vkl_free(dev->ctx, t.written);
    if (st) return st;
    /* the last kernels' writes, then the downloads, then what the host and
     * the next submission read */
    vkl_vk_barrier_all(dev, cmd);
    if (e->n_down) {
        record_io(dev, e, mem->arena->b.buf, true, cmd);
        vkl_vk_barrier_all(dev, cmd);
    }
    vkl_log(dev->ctx, VKL_LOG_DEBUG,
            "vulkan: executable of %u nodes: %u dispatches, %u barriers between them, %u nodes fused into others",
            e->n_nodes, e->n_dispatches, e->n_barriers, e->n_fused);
    return VKL_VKD(dev, vkEndCommandBuffer, (cmd));
}

static vkl_status prepare(vkl_backend_device *dev, const vkl_graph *g, vkl_backend_weights *w,
                          const vkl_memory_map *mem, const vkl_binding *b, vkl_backend_exec **out) {
    *out = NULL;
    vkl_context *ctx = dev->ctx;
    if (!w || w->g != vkl_graph_weight_source(g))
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "vulkan: prepare needs the graph's own weights");
    vkl_backend_exec *e = vkl_calloc(ctx, 1, sizeof(*e));
    if (!e) return VKL_ERR_OUT_OF_MEMORY;
    e->g = g;
    e->nodes = vkl_calloc(ctx, g->n_nodes ? g->n_nodes : 1, sizeof(uint32_t));
    e->n_binding = b->count;
    e->binding = vkl_calloc(ctx, b->count ? b->count : 1, sizeof(int64_t));
    vkl_status st = e->nodes && e->binding ? VKL_OK : VKL_ERR_OUT_OF_MEMORY;
    if (!st && b->count) memcpy(e->binding, b->values, b->count * sizeof(int64_t));
    if (!st) st = vkl_graph_topo_order(ctx, g, e->nodes, &e->n_nodes);
    if (!st) st = check_ops(dev, g, e->nodes, e->n_nodes);
    plan p = {0};
    if (!st) st = plan_nodes(dev, g, w, mem, b, e, &p);
    if (!st) st = scratch_bind(dev, e, &p);
    if (!st) st = descriptors(dev, e, &p);
    if (!st) st = collect_values(dev, g, e);
    if (!st) st = collect_io(dev, g, mem, b, e);
    if (!st) st = record(dev, e, &p, mem, b);
    plan_free(ctx, &p);
    if (st) {
        exec_free(dev, e);
        return st;
    }
    *out = e;
    return VKL_OK;
}

static vkl_status vk_prepare(vkl_backend_device *dev, vkl_context *ctx, const vkl_graph *g, vkl_backend_weights *w,
                             const vkl_memory_map *mem, const vkl_binding *b, vkl_backend_exec **out) {
    vkl_vk_enter(dev, ctx);
    vkl_status st = vkl_vk_validation_status(dev, prepare(dev, g, w, mem, b, out), "prepare");
    if (st && *out) {
        exec_free(dev, *out);
        *out = NULL;
    }
    return vkl_vk_leave(dev, st);
}

/* ---- execute, wait, timing ---------------------------------------------------------------------- */

/* Reports to ctx, not dev->ctx: vk_wait calls it outside the device lock. */
static vkl_status wait_exec(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_exec *e, bool counted) {
    if (!e->pending) return VKL_OK;
    vkl_status st = vkl_vk_check(ctx, dev->vk.vkWaitForFences(dev->device, 1, &e->fence, VK_TRUE, VKL_VK_WAIT_NS),
                                 "vkWaitForFences");
    /* counted by the caller under the device lock (vk_wait: after entering) */
    if (counted) dev->work.waits++;
    if (!st) {
        e->pending = false;
        e->ran = true;
    }
    return st;
}

static vkl_status execute(vkl_backend_device *dev, vkl_backend_exec *e, const vkl_binding *actual) {
    /* Until replay with a true length lands, only the prepared values run. */
    for (size_t i = 0; actual && i < actual->count && i < e->n_binding; i++)
        if (actual->values[i] != e->binding[i] && e->binding[i] != VKL_SYM_UNBOUND)
            return vkl_fail(dev->ctx, VKL_ERR_UNSUPPORTED,
                            "vulkan: execute with symbol %zu = %lld, prepared for %lld: running other values than "
                            "the prepared ones is not supported yet",
                            i, (long long)actual->values[i], (long long)e->binding[i]);
    vkl_status st = wait_exec(dev, dev->ctx, e, true); /* a command buffer is submitted once at a time */
    if (!st) st = VKL_VKD(dev, vkResetFences, (dev->device, 1, &e->fence));
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &e->cmd};
    if (!st) st = vkl_vk_submit(dev, &si, e->fence);
    dev->work.submits++;
    if (!st) dev->work.downloaded += e->down_bytes;
    if (!st) e->pending = true;
    return st;
}

static vkl_status vk_execute(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_exec *e,
                             const vkl_binding *actual) {
    vkl_vk_enter(dev, ctx);
    return vkl_vk_leave(dev, vkl_vk_validation_status(dev, execute(dev, e, actual), "execute"));
}

/* The fence is the executable's own, and a fence wait needs no external
 * synchronization: other sessions keep recording and submitting meanwhile. */
static vkl_status vk_wait(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_exec *e) {
    const bool waits = e->pending;
    vkl_status st = wait_exec(dev, ctx, e, false);
    vkl_vk_enter(dev, ctx);
    if (waits) dev->work.waits++;
    return vkl_vk_leave(dev, vkl_vk_validation_status(dev, st, "wait"));
}

static vkl_status node_times(vkl_backend_device *dev, vkl_backend_exec *e, double *ms, size_t cap, size_t *count) {
    *count = 0;
    if (!e->queries)
        return vkl_fail(dev->ctx, VKL_ERR_UNSUPPORTED,
                        "vulkan: no per-node timestamps: %s", dev->timestamp_bits ? "the device was opened without "
                        "profiling (vkl_backend_options.profile)" : "the device has none, or an option turned them off");
    vkl_status st = wait_exec(dev, dev->ctx, e, true);
    if (st) return st;
    if (!e->ran) return vkl_fail(dev->ctx, VKL_ERR_STATE, "vulkan: node_times before any execute completed");
    st = VKL_VKD(dev, vkGetQueryPoolResults,
                 (dev->device, e->queries, 0, e->n_nodes + 1, (e->n_nodes + 1) * sizeof(uint64_t), e->ticks,
                  sizeof(uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
    if (st) return st;
    const uint64_t mask = dev->timestamp_bits >= 64 ? ~0ull : (1ull << dev->timestamp_bits) - 1;
    const double ns = dev->props.limits.timestampPeriod;
    for (uint32_t k = 0; k < e->n_nodes && k < cap; k++) {
        ms[k] = (double)((e->ticks[k + 1] - e->ticks[k]) & mask) * ns * 1e-6;
        (*count)++;
    }
    return VKL_OK;
}

static vkl_status vk_node_times(vkl_backend_device *dev, vkl_context *ctx, vkl_backend_exec *e, double *ms,
                                size_t cap, size_t *count) {
    vkl_vk_enter(dev, ctx);
    return vkl_vk_leave(dev, vkl_vk_validation_status(dev, node_times(dev, e, ms, cap, count), "node_times"));
}

static vkl_status vk_copy_bandwidth(vkl_backend_device *dev, vkl_context *ctx, size_t bytes,
                                    double *bytes_per_second) {
    vkl_vk_enter(dev, ctx);
    vkl_status st = vkl_vk_copy_bandwidth(dev, bytes, bytes_per_second);
    return vkl_vk_leave(dev, vkl_vk_validation_status(dev, st, "copy_bandwidth"));
}

static vkl_status vk_compute_peaks(vkl_backend_device *dev, vkl_context *ctx, vkl_compute_peaks *out) {
    vkl_vk_enter(dev, ctx);
    vkl_status st = vkl_vk_compute_peaks(dev, out);
    return vkl_vk_leave(dev, vkl_vk_validation_status(dev, st, "compute_peaks"));
}

uint32_t vkl_vk_validation_messages(const vkl_backend_device *dev) {
    if (!dev || !dev->msgs) return 0;
    pthread_mutex_lock(&dev->msgs->lock);
    uint32_t n = dev->msgs->count;
    pthread_mutex_unlock(&dev->msgs->lock);
    return n;
}

bool vkl_vk_f16_math(const vkl_backend_device *dev) { return dev && dev->f16_math; }

bool vkl_vk_matvec_dot(const vkl_backend_device *dev) { return dev && dev->matvec_dot; }

int vkl_vk_attention_coopmat(const vkl_backend_device *dev) { return dev ? (int)dev->attn_cm : 0; }

void vkl_vk_exec_stats_get(const vkl_backend_exec *e, vkl_vk_exec_stats *out) {
    *out = (vkl_vk_exec_stats){e->n_dispatches, e->n_barriers, e->n_fused, e->n_rope_kv,
                               e->n_qkv, e->n_rope_kv_all, e->n_glu_codes, e->n_attn_codes};
}

void vkl_vk_get_host_work(const vkl_backend_device *dev, vkl_vk_host_work *out) {
    if (dev) {
        /* counted under the device lock by calls on other threads */
        pthread_mutex_lock((pthread_mutex_t *)&dev->lock);
        *out = dev->work;
        pthread_mutex_unlock((pthread_mutex_t *)&dev->lock);
    } else
        memset(out, 0, sizeof(*out));
}

const vkl_backend_vtable vkl_backend_vulkan = {
    .name = "vulkan",
    .probe = vk_probe,
    .open = vk_open,
    .close = vk_close,
    .caps = vk_caps,
    .buffer_create = vk_buffer_create,
    .buffer_destroy = vk_buffer_destroy,
    .buffer_write = vk_buffer_write,
    .buffer_read = vk_buffer_read,
    .weights_load = vk_weights_load,
    .weights_release = vk_weights_release,
    .prepare = vk_prepare,
    .exec_release = vk_exec_release,
    .execute = vk_execute,
    .wait = vk_wait,
    .node_times = vk_node_times,
    .state_traffic = NULL,
    .copy_bandwidth = vk_copy_bandwidth,
    .compute_peaks = vk_compute_peaks,
};
