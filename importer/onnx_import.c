/* The ONNX reader's entry points: map the file, unpack the ModelProto with
 * protobuf-c through the context's allocator, build the graph (weights,
 * inputs, nodes, outputs), validate it and infer its shapes. */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* mmap, madvise */
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file_open.h"
#include "onnx_internal.h"

/* The newest ai.onnx opset whose differences from older ones we know. */
#define ONNX_OPSET_NEWEST_KNOWN 21
/* While unpacking a mapped file, drop its pages from our address space after
 * every this many bytes of allocation: protobuf-c copies raw_data out of the
 * file, and without this the mapping's touched pages plus the copies would
 * make the peak RSS twice the file size. */
#define DROP_PAGES_EVERY ((size_t)64 << 20)
/* A cap on what one unpack may allocate, relative to the input: protobuf-c
 * turns a few bytes into a whole message struct, and a hostile file could
 * otherwise ask for far more memory than any real model needs. */
#define UNPACK_EXPANSION 64
#define UNPACK_SLACK ((size_t)64 << 20)

typedef struct pb_alloc_state {
    vkl_context *ctx;
    bool unpacking;
    const uint8_t *map; /* our own file mapping, or NULL */
    size_t map_size;
    size_t since_drop, total, limit;
    bool over_limit, out_of_memory;
} pb_alloc_state;

struct vkl_onnx_model {
    vkl_context *ctx;
    vkl_graph *graph;
    Onnx__ModelProto *proto;
    pb_alloc_state pb_state;
    ProtobufCAllocator pb;
    onnx_extfile *extfiles;
    vkl_onnx_stats stats;
};

/* ---- protobuf-c allocator ------------------------------------------------- */

static void *pb_alloc(void *user, size_t size) {
    pb_alloc_state *s = user;
    if (s->unpacking) {
        if (size > s->limit - s->total) {
            s->over_limit = true;
            return NULL;
        }
        s->total += size;
        s->since_drop += size;
#ifdef MADV_DONTNEED
        /* Private read-only file pages refault from the file: dropping them
         * is always safe, including pages not parsed yet. */
        if (s->map && s->since_drop >= DROP_PAGES_EVERY) {
            madvise((void *)s->map, s->map_size, MADV_DONTNEED);
            s->since_drop = 0;
        }
#endif
    }
    void *p = vkl_malloc(s->ctx, size);
    if (!p) s->out_of_memory = true;
    return p;
}

static void pb_free(void *user, void *ptr) {
    pb_alloc_state *s = user;
    vkl_free(s->ctx, ptr);
}

/* ---- graph building ---------------------------------------------------------- */

static vkl_status add_initializers(onnx_builder *b, const Onnx__GraphProto *gp) {
    for (size_t i = 0; i < gp->n_initializer; i++) {
        Onnx__TensorProto *tp = gp->initializer[i];
        const char *name = onnx_str(tp->name);
        if (!*name) return vkl_fail(b->ctx, VKL_ERR_FORMAT, "initializer %zu has no name", i);
        vkl_dtype dt;
        vkl_shape s;
        const void *data;
        size_t nbytes;
        uint32_t id;
        vkl_status st = onnx_tensor_payload(b, tp, "initializer", name, &dt, &s, &data, &nbytes);
        if (!st) st = onnx_add_weight(b, name, NULL, dt, &s, data, nbytes, false, &id);
        if (st) return st;
        b->stats->initializer_bytes += nbytes;
    }
    if (gp->n_sparse_initializer)
        return vkl_fail(b->ctx, VKL_ERR_UNSUPPORTED, "the graph has %zu sparse initializers, which are not supported",
                        gp->n_sparse_initializer);
    return VKL_OK;
}

/* Inputs that are also initializers (older exporters list every weight as
 * an input) stay weights. */
static vkl_status add_inputs(onnx_builder *b, const Onnx__GraphProto *gp) {
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        const char *name = onnx_str(vi->name);
        uint32_t id;
        if (!*name) return vkl_fail(b->ctx, VKL_ERR_FORMAT, "graph input %zu has no name", i);
        if (onnx_names_get(b, name, &id)) {
            if (b->g->tensors[id].kind == VKL_TENSOR_WEIGHT) continue;
            return vkl_fail(b->ctx, VKL_ERR_FORMAT, "graph input '%s' is listed twice", name);
        }
        vkl_dtype dt;
        vkl_shape s;
        vkl_status st = onnx_value_info_type(b, vi, &dt, &s);
        if (!st) st = onnx_add_tensor(b, name, dt, VKL_TENSOR_INPUT, &s, &id);
        if (!st) st = vkl_graph_add_input(b->g, id);
        if (st) return st;
    }
    return VKL_OK;
}

/* Declared output shapes are not trusted (shape inference derives them). */
static vkl_status add_outputs(onnx_builder *b, const Onnx__GraphProto *gp) {
    if (!gp->n_output) return vkl_fail(b->ctx, VKL_ERR_FORMAT, "the graph has no outputs");
    for (size_t i = 0; i < gp->n_output; i++) {
        const char *name = onnx_str(gp->output[i]->name);
        uint32_t id;
        if (!*name) return vkl_fail(b->ctx, VKL_ERR_FORMAT, "graph output %zu has no name", i);
        if (!onnx_names_get(b, name, &id))
            return vkl_fail(b->ctx, VKL_ERR_FORMAT, "graph output '%s' is not a node output, initializer or input",
                            name);
        if (b->g->tensors[id].is_output)
            return vkl_fail(b->ctx, VKL_ERR_FORMAT, "graph output '%s' is listed twice", name);
        vkl_status st = vkl_graph_add_output(b->g, id);
        if (st) return st;
    }
    return VKL_OK;
}

/* Constants first (they are weights), then every other node's outputs, so
 * that nodes can be converted in any order and names made by the reader
 * never take a name the model uses. */
static vkl_status add_nodes(onnx_builder *b, const Onnx__GraphProto *gp) {
    vkl_status st = VKL_OK;
    for (size_t i = 0; !st && i < gp->n_node; i++)
        if (onnx_is_constant(gp->node[i])) st = onnx_convert_constant(b, (uint32_t)i, gp->node[i]);
    for (size_t i = 0; !st && i < gp->n_node; i++)
        if (!onnx_is_constant(gp->node[i])) st = onnx_register_outputs(b, (uint32_t)i, gp->node[i]);
    for (size_t i = 0; !st && i < gp->n_node; i++)
        if (!onnx_is_constant(gp->node[i])) st = onnx_convert_node(b, (uint32_t)i, gp->node[i]);
    return st;
}

/* vkl_graph_infer_shapes, but errors name the ONNX node (its index in the
 * file, op_type, domain, opset) rather than the graph's renumbered node. */
static vkl_status infer_shapes(onnx_builder *b) {
    vkl_graph *g = b->g;
    uint32_t *order = vkl_calloc(b->ctx, g->n_nodes ? g->n_nodes : 1, sizeof(uint32_t));
    if (!order) return VKL_ERR_OUT_OF_MEMORY;
    uint32_t count = 0;
    vkl_status st = vkl_graph_topo_order(g->ctx, g, order, &count);
    for (uint32_t i = 0; !st && i < count; i++) {
        const vkl_op_info *info = vkl_op_info_get((vkl_op)g->nodes[order[i]].op);
        st = info->infer(g, order[i]);
        if (st) {
            char who[512];
            vkl_fail_prefix(b->ctx, st, "%s: shape inference",
                            onnx_node_str(b, b->onnx_index[order[i]], who, sizeof(who)));
        }
    }
    vkl_free(b->ctx, order);
    return st;
}

/* A declared output dim that is a number and disagrees with the derived
 * one (a symbol is no disagreement: exporters name dims the graph fixes). */
static bool dims_disagree(const vkl_graph *g, const vkl_tensor *t, const Onnx__TensorShapeProto *sp) {
    if (sp->n_dim != t->shape.rank) return true;
    for (uint32_t d = 0; d < t->shape.rank; d++) {
        const Onnx__TensorShapeProto__Dimension *dim = sp->dim[d];
        int64_t v;
        if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && dim->dim_value >= 0 &&
            vkl_expr_is_const(g->syms, t->shape.dims[d], &v) && v != dim->dim_value)
            return true;
    }
    return false;
}

/* The declared output types are a cross-check of the shape rules, reported
 * but not enforced. */
static void check_declared_outputs(onnx_builder *b, const Onnx__GraphProto *gp) {
    for (size_t i = 0; i < gp->n_output && i < b->g->n_outputs; i++) {
        const Onnx__TypeProto *tp = gp->output[i]->type;
        const vkl_tensor *t = &b->g->tensors[b->g->outputs[i]];
        if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type) continue;
        vkl_dtype want;
        if (onnx_dtype_to_vkl(tp->tensor_type->elem_type, &want) && t->dtype != want)
            vkl_log(b->ctx, VKL_LOG_WARN, "graph output '%s' is declared %s but its producer gives %s", t->name,
                    vkl_dtype_name(want), vkl_dtype_name(t->dtype));
        if (tp->tensor_type->shape && dims_disagree(b->g, t, tp->tensor_type->shape)) {
            char buf[256];
            vkl_log(b->ctx, VKL_LOG_WARN, "graph output '%s' has shape %s, unlike its declared shape", t->name,
                    vkl_shape_str(b->g, &t->shape, buf, sizeof(buf)));
        }
    }
}

static vkl_status build(onnx_builder *b, const vkl_onnx_options *opts) {
    const Onnx__ModelProto *m = b->proto;
    const Onnx__GraphProto *gp = m->graph;
    if (!gp) return vkl_fail(b->ctx, VKL_ERR_FORMAT, "the model has no graph");
    b->opset = onnx_opset_of(b, "");
    b->stats->opset = b->opset;
    b->stats->ir_version = m->ir_version;
    b->stats->nodes = (uint32_t)gp->n_node;
    b->stats->initializers = (uint32_t)gp->n_initializer;
    if (gp->n_node > UINT32_MAX / 4 || gp->n_initializer > UINT32_MAX / 4)
        return vkl_fail(b->ctx, VKL_ERR_UNSUPPORTED, "the graph is too large");
    if (b->opset > ONNX_OPSET_NEWEST_KNOWN)
        vkl_log(b->ctx, VKL_LOG_INFO, "ai.onnx opset %lld is newer than %d; ops are read with their opset-%d meaning",
                (long long)b->opset, ONNX_OPSET_NEWEST_KNOWN, ONNX_OPSET_NEWEST_KNOWN);
    vkl_status st = add_initializers(b, gp);
    if (!st) st = add_inputs(b, gp);
    if (!st) st = add_nodes(b, gp);
    if (!st) st = add_outputs(b, gp);
    if (!st) st = onnx_check_inputs_defined(b);
    if (!st && (st = vkl_graph_validate(b->g))) vkl_fail_prefix(b->ctx, st, "the imported graph is invalid");
    if (!st && !(opts && opts->skip_shape_inference)) {
        st = infer_shapes(b);
        if (!st) check_declared_outputs(b, gp);
    }
    return st;
}

/* ---- entry points ---------------------------------------------------------------- */

static vkl_status unpack(vkl_onnx_model *m, const uint8_t *data, size_t size, bool own_mapping) {
    pb_alloc_state *s = &m->pb_state;
    s->ctx = m->ctx;
    bool huge = size > (SIZE_MAX - UNPACK_SLACK) / UNPACK_EXPANSION;
    s->limit = huge ? SIZE_MAX : size * UNPACK_EXPANSION + UNPACK_SLACK;
    s->map = own_mapping ? data : NULL;
    s->map_size = size;
    s->unpacking = true;
    m->pb = (ProtobufCAllocator){pb_alloc, pb_free, s};
    m->proto = onnx__model_proto__unpack(&m->pb, size, data);
    s->unpacking = false;
    s->map = NULL;
    if (m->proto) return VKL_OK;
    if (s->out_of_memory)
        return vkl_fail(m->ctx, VKL_ERR_OUT_OF_MEMORY, "out of memory unpacking the %zu-byte model", size);
    if (s->over_limit)
        return vkl_fail(m->ctx, VKL_ERR_OUT_OF_MEMORY,
                        "unpacking the %zu-byte model would take more than %zu bytes of memory", size, s->limit);
    return onnx_wire_diagnose(m->ctx, data, size);
}

static vkl_status open_bytes(vkl_context *ctx, const uint8_t *data, size_t size, const char *base_dir,
                             const vkl_onnx_options *opts, bool own_mapping, vkl_onnx_model **out) {
    vkl_onnx_model *m = vkl_calloc(ctx, 1, sizeof(*m));
    if (!m) return VKL_ERR_OUT_OF_MEMORY;
    m->ctx = ctx;
    vkl_status st = unpack(m, data, size, own_mapping);
    if (!st) st = vkl_graph_create(ctx, &m->graph);
    if (!st) {
        onnx_builder b = {.ctx = ctx,
                          .g = m->graph,
                          .proto = m->proto,
                          .pb_alloc = &m->pb,
                          .base_dir = base_dir,
                          .extfiles = &m->extfiles,
                          .stats = &m->stats};
        st = build(&b, opts);
        vkl_free(ctx, b.onnx_index);
    }
    if (st) {
        vkl_onnx_close(m);
        return st;
    }
    *out = m;
    return VKL_OK;
}

vkl_status vkl_onnx_open_memory_opts(vkl_context *ctx, const void *data, size_t size, const char *base_dir,
                                     const vkl_onnx_options *opts, vkl_onnx_model **out) {
    if (!ctx || !out || (!data && size))
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "vkl_onnx_open_memory: bad arguments");
    *out = NULL;
    return open_bytes(ctx, data, size, base_dir, opts, false, out);
}

vkl_status vkl_onnx_open_memory(vkl_context *ctx, const void *data, size_t size, const char *base_dir,
                                vkl_onnx_model **out) {
    return vkl_onnx_open_memory_opts(ctx, data, size, base_dir, NULL, out);
}

/* The directory part of path ("." when there is none). */
static char *dir_of(vkl_context *ctx, const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return vkl_strdup(ctx, ".");
    size_t len = slash == path ? 1 : (size_t)(slash - path);
    char *dir = vkl_malloc(ctx, len + 1);
    if (dir) {
        memcpy(dir, path, len);
        dir[len] = 0;
    }
    return dir;
}

static vkl_status map_file(vkl_context *ctx, const char *path, const uint8_t **map, size_t *size) {
    int fd;
    struct stat sb;
    vkl_status st = vkl_open_regular(ctx, path, "ONNX model", &fd, &sb);
    if (st) return st;
    if (sb.st_size == 0) st = vkl_fail(ctx, VKL_ERR_FORMAT, "'%s' is empty", path);
    else if ((uint64_t)sb.st_size > SIZE_MAX) st = vkl_fail(ctx, VKL_ERR_UNSUPPORTED, "'%s' is too large", path);
    void *p = MAP_FAILED;
    if (!st) {
        p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) st = vkl_fail(ctx, VKL_ERR_IO, "cannot map '%s': %s", path, strerror(errno));
    }
    close(fd);
    if (st) return st;
    *map = p;
    *size = (size_t)sb.st_size;
    return VKL_OK;
}

vkl_status vkl_onnx_open_opts(vkl_context *ctx, const char *path, const vkl_onnx_options *opts,
                              vkl_onnx_model **out) {
    if (!ctx || !path || !out) return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "vkl_onnx_open: bad arguments");
    *out = NULL;
    const uint8_t *map = NULL;
    size_t size = 0;
    vkl_status st = map_file(ctx, path, &map, &size);
    if (st) return st;
#ifdef MADV_SEQUENTIAL
    madvise((void *)map, size, MADV_SEQUENTIAL);
#endif
    char *dir = dir_of(ctx, path);
    st = dir ? open_bytes(ctx, map, size, dir, opts, true, out) : VKL_ERR_OUT_OF_MEMORY;
    /* protobuf-c copied every field: nothing points into the file any more */
    munmap((void *)map, size);
    vkl_free(ctx, dir);
    if (st) vkl_fail_prefix(ctx, st, "%s", path);
    return st;
}

vkl_status vkl_onnx_open(vkl_context *ctx, const char *path, vkl_onnx_model **out) {
    return vkl_onnx_open_opts(ctx, path, NULL, out);
}

vkl_graph *vkl_onnx_graph(vkl_onnx_model *m) { return m ? m->graph : NULL; }

bool vkl_onnx_read(const vkl_onnx_model *m, const void *data, size_t bytes, void *dst) {
    if (!m || !data || !dst) return false;
    uintptr_t lo = (uintptr_t)data, hi = lo + bytes;
    for (const onnx_extfile *f = m->extfiles; f; f = f->next) {
        uintptr_t base = (uintptr_t)f->map;
        if (!f->map || f->fd < 0 || lo < base || hi > base + f->size) continue;
        size_t done = 0;
        while (done < bytes) {
            ssize_t n = pread(f->fd, (char *)dst + done, bytes - done, (off_t)(lo - base + done));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return false; /* the caller reads the mapping instead */
            done += (size_t)n;
        }
        return true;
    }
    return false;
}

void vkl_onnx_release(vkl_onnx_model *m, const void *data, size_t bytes) {
    if (!m || !data || !bytes) return;
    uintptr_t lo = (uintptr_t)data, hi = lo + bytes;
    for (const onnx_extfile *f = m->extfiles; f; f = f->next) {
        uintptr_t base = (uintptr_t)f->map;
        if (!f->map || lo < base || hi > base + f->size) continue;
        /* whole pages only: a partial page may hold bytes still to be read */
        const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
        uintptr_t a = (lo + page - 1) / page * page, b = hi / page * page;
#ifdef MADV_DONTNEED
        /* Private, read-only and never written: dropped pages refault from
         * the file with the same bytes. */
        if (a < b) madvise((void *)a, b - a, MADV_DONTNEED);
#endif
        return;
    }
}

const vkl_onnx_stats *vkl_onnx_stats_get(const vkl_onnx_model *m) { return m ? &m->stats : NULL; }

void vkl_onnx_close(vkl_onnx_model *m) {
    if (!m) return;
    vkl_context *ctx = m->ctx;
    vkl_graph_destroy(m->graph);
    if (m->proto) onnx__model_proto__free_unpacked(m->proto, &m->pb);
    onnx_extfiles_close(ctx, m->extfiles);
    vkl_free(ctx, m);
}
