/* .vkm writer: serializes a graph, its metadata and its weights, then
 * publishes the file atomically (engine/atomic_file.c). */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "atomic_file.h"
#include "ops.h"
#include "vkm.h"

#define N_SECTIONS 4u

/* Growable byte buffer with a sticky failure, so that record encoders read
 * as a flat list of fields and the status is checked once per record. */
typedef struct wbuf {
    vkl_context *ctx;
    uint8_t *p;
    size_t len, cap;
    vkl_status st;
} wbuf;

static uint8_t *wb_grow(wbuf *b, size_t n) {
    if (b->st) return NULL;
    size_t need;
    if (!vkl_add_size(b->len, n, &need)) {
        b->st = vkl_fail(b->ctx, VKL_ERR_OVERFLOW, "model file section exceeds the address space");
        return NULL;
    }
    if (need > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
        uint8_t *p = vkl_realloc(b->ctx, b->p, cap);
        if (!p) {
            b->st = VKL_ERR_OUT_OF_MEMORY;
            return NULL;
        }
        b->p = p;
        b->cap = cap;
    }
    uint8_t *at = b->p + b->len;
    b->len = need;
    return at;
}

static void put_bytes(wbuf *b, const void *src, size_t n) {
    uint8_t *d = wb_grow(b, n);
    if (d && n) memcpy(d, src, n);
}

static void le32(uint8_t *d, uint32_t v) {
    for (int i = 0; i < 4; i++) d[i] = (uint8_t)(v >> (8 * i));
}

static void le64(uint8_t *d, uint64_t v) {
    for (int i = 0; i < 8; i++) d[i] = (uint8_t)(v >> (8 * i));
}

static void put_u32(wbuf *b, uint32_t v) {
    uint8_t *d = wb_grow(b, 4);
    if (d) le32(d, v);
}

static void put_u64(wbuf *b, uint64_t v) {
    uint8_t *d = wb_grow(b, 8);
    if (d) le64(d, v);
}

static void put_f32(wbuf *b, float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    put_u32(b, u);
}

static void put_zeros(wbuf *b, size_t n) {
    uint8_t *d = wb_grow(b, n);
    if (d && n) memset(d, 0, n);
}

/* u32 length, the bytes, a NUL: the reader hands out in-file pointers. */
static void put_str(wbuf *b, const char *s, const char *what) {
    if (b->st) return;
    size_t n = strlen(s);
    if (n > VKL_VKM_MAX_STRING) {
        b->st = vkl_fail(b->ctx, VKL_ERR_INVALID_ARGUMENT, "%s is %zu bytes long; a .vkm string holds at most %u",
                         what, n, VKL_VKM_MAX_STRING);
        return;
    }
    put_u32(b, (uint32_t)n);
    put_bytes(b, s, n + 1);
}

static void put_expr(wbuf *b, const vkl_symtab *syms, vkl_expr e, const char *what) {
    if (b->st) return;
    char small[256];
    size_t n = vkl_expr_print(syms, e, small, sizeof(small));
    if (n < sizeof(small)) {
        put_str(b, small, what);
        return;
    }
    if (n >= VKL_VKM_MAX_STRING) {
        b->st = vkl_fail(b->ctx, VKL_ERR_INVALID_ARGUMENT, "%s: expression text is %zu bytes; at most %u", what,
                         n, VKL_VKM_MAX_STRING);
        return;
    }
    char *big = vkl_malloc(b->ctx, n + 1);
    if (!big) {
        b->st = VKL_ERR_OUT_OF_MEMORY;
        return;
    }
    vkl_expr_print(syms, e, big, n + 1);
    put_str(b, big, what);
    vkl_free(b->ctx, big);
}

static size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

/* Fails unless v rounded up to a fits. */
static bool align_checked(size_t v, size_t a, size_t *out) {
    size_t t;
    if (!vkl_add_size(v, a - 1, &t)) return false;
    *out = t / a * a;
    return true;
}

static size_t tensor_align(size_t nbytes) {
    return nbytes >= VKL_VKM_LARGE_TENSOR ? VKL_VKM_PAGE_ALIGN : VKL_VKM_ALIGN;
}

/* ---- section encoders ---------------------------------------------------- */

static vkl_status encode_meta(wbuf *b, const vkl_vkm_meta *meta, size_t n_meta) {
    if (n_meta > UINT32_MAX) return vkl_fail(b->ctx, VKL_ERR_INVALID_ARGUMENT, "too many metadata entries");
    put_u32(b, (uint32_t)n_meta);
    for (size_t i = 0; i < n_meta && !b->st; i++) {
        put_str(b, meta[i].key, "metadata key");
        put_u64(b, meta[i].size);
        /* Sections start 64-aligned, so aligning within the section aligns
         * the value in the file. */
        put_zeros(b, align_up(b->len, VKL_VKM_META_ALIGN) - b->len);
        put_bytes(b, meta[i].data, meta[i].size);
    }
    return b->st;
}

/* The tensor section; *offset_at[i] gets the position of tensor i's data
 * offset field (or SIZE_MAX), patched once the data section is placed. */
static vkl_status encode_tensors(wbuf *b, const vkl_graph *g, size_t *offset_at) {
    char what[128];
    size_t n_syms = vkl_symtab_symbol_count(g->syms);
    if (n_syms > UINT32_MAX) return vkl_fail(b->ctx, VKL_ERR_INVALID_ARGUMENT, "too many symbols");
    put_u32(b, (uint32_t)n_syms);
    for (size_t i = 0; i < n_syms; i++) put_str(b, vkl_symtab_symbol_name(g->syms, i), "symbol name");
    put_u32(b, g->n_tensors);
    for (uint32_t i = 0; i < g->n_tensors && !b->st; i++) {
        const vkl_tensor *t = &g->tensors[i];
        if (t->nbytes && !t->data)
            return vkl_fail(b->ctx, VKL_ERR_INVALID_ARGUMENT, "tensor '%s' has %zu bytes but no data", t->name,
                            t->nbytes);
        snprintf(what, sizeof(what), "tensor '%.64s'", t->name);
        uint32_t flags = (t->data ? VKL_VKM_TENSOR_HAS_DATA : 0u) | (t->value ? VKL_VKM_TENSOR_HAS_VALUE : 0u) |
                         (vkl_vkm_short_group(g, t->dtype, t->group, &t->shape) ? VKL_VKM_TENSOR_SHORT_GROUP : 0u);
        put_str(b, t->name, "tensor name");
        put_u32(b, (uint32_t)t->dtype);
        put_u32(b, (uint32_t)t->kind);
        put_u32(b, t->group);
        put_u32(b, flags);
        put_u32(b, t->shape.rank);
        for (uint32_t d = 0; d < t->shape.rank; d++) put_expr(b, g->syms, t->shape.dims[d], what);
        offset_at[i] = SIZE_MAX;
        if (t->data) {
            offset_at[i] = b->len;
            put_u64(b, 0);
            put_u64(b, t->nbytes);
        }
        if (t->value) {
            put_u32(b, t->value_count);
            for (uint32_t k = 0; k < t->value_count; k++) put_expr(b, g->syms, t->value[k], what);
        }
    }
    return b->st;
}

static vkl_status encode_attr(wbuf *b, const vkl_attr *a, const char *node) {
    put_str(b, a->name, "attribute name");
    put_u32(b, (uint32_t)a->kind);
    switch (a->kind) {
    case VKL_ATTR_NONE: break;
    case VKL_ATTR_INT: put_u64(b, (uint64_t)a->i); break;
    case VKL_ATTR_FLOAT: put_f32(b, a->f); break;
    case VKL_ATTR_STRING: put_str(b, a->s ? a->s : "", "attribute string"); break;
    case VKL_ATTR_INTS:
        put_u32(b, a->count);
        for (uint32_t k = 0; k < a->count; k++) put_u64(b, (uint64_t)a->ints[k]);
        break;
    case VKL_ATTR_FLOATS:
        put_u32(b, a->count);
        for (uint32_t k = 0; k < a->count; k++) put_f32(b, a->floats[k]);
        break;
    case VKL_ATTR_TENSOR:
        /* vkl_graph_validate has checked it names a tensor. */
        put_u32(b, (uint32_t)a->i);
        break;
    default:
        return vkl_fail(b->ctx, VKL_ERR_INVALID_ARGUMENT, "%s: attribute '%s' has unknown kind %d", node, a->name,
                        (int)a->kind);
    }
    return b->st;
}

static vkl_status encode_graph(wbuf *b, const vkl_graph *g) {
    uint32_t live = 0;
    for (uint32_t i = 0; i < g->n_nodes; i++) live += !g->nodes[i].dead;
    put_u32(b, live);
    char buf[160];
    for (uint32_t i = 0; i < g->n_nodes && !b->st; i++) {
        const vkl_node *n = &g->nodes[i];
        if (n->dead) continue;
        const vkl_op_info *info = vkl_op_info_get((vkl_op)n->op);
        vkl_node_str(g, i, buf, sizeof(buf));
        if (!info) return vkl_fail(b->ctx, VKL_ERR_INVALID_ARGUMENT, "%s has unknown op %u", buf, n->op);
        put_str(b, info->domain, "op domain");
        put_str(b, info->name, "op name");
        put_str(b, n->name ? n->name : "", "node name");
        put_u32(b, n->n_inputs);
        for (uint32_t k = 0; k < n->n_inputs; k++) put_u32(b, n->inputs[k]);
        put_u32(b, n->n_outputs);
        for (uint32_t k = 0; k < n->n_outputs; k++) put_u32(b, n->outputs[k]);
        put_u32(b, n->n_attrs);
        for (uint32_t k = 0; k < n->n_attrs && !b->st; k++) {
            vkl_status st = encode_attr(b, &n->attrs[k], buf);
            if (st) return st;
        }
    }
    put_u32(b, g->n_inputs);
    for (uint32_t i = 0; i < g->n_inputs; i++) put_u32(b, g->inputs[i]);
    put_u32(b, g->n_outputs);
    for (uint32_t i = 0; i < g->n_outputs; i++) put_u32(b, g->outputs[i]);
    return b->st;
}

/* ---- file output ------------------------------------------------------- */

static const uint8_t zeros[VKL_VKM_PAGE_ALIGN];

static vkl_status pad_to(vkl_atomic_file *f, size_t offset) {
    vkl_status st = VKL_OK;
    while (!st && f->written < offset) {
        size_t n = offset - f->written;
        st = vkl_atomic_file_write(f, zeros, n < sizeof(zeros) ? n : sizeof(zeros));
    }
    return st;
}

/* ---- the writer -------------------------------------------------------- */

typedef struct layout {
    size_t table_off, off[N_SECTIONS], size[N_SECTIONS];
    uint64_t sum[N_SECTIONS];
    size_t file_size;
} layout;

static const uint32_t section_ids[N_SECTIONS] = {VKL_VKM_SECTION_META, VKL_VKM_SECTION_TENSORS,
                                                 VKL_VKM_SECTION_GRAPH, VKL_VKM_SECTION_DATA};

static vkl_status check_args(vkl_context *ctx, const vkl_graph *g, const vkl_vkm_meta *meta, size_t n_meta,
                             const char *path) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
    (void)g, (void)meta, (void)n_meta;
    return vkl_fail(ctx, VKL_ERR_UNSUPPORTED, "cannot write '%s': .vkm files are little-endian and this host is not",
                    path ? path : "");
#else
    if (!g || !path || !*path || (n_meta && !meta))
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "vkl_vkm_write: graph, path and metadata must be given");
    for (size_t i = 0; i < n_meta; i++) {
        if (!meta[i].key || !*meta[i].key || (meta[i].size && !meta[i].data))
            return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "cannot write '%s': metadata entry %zu has no key or no data",
                            path, i);
        for (size_t k = 0; k < i; k++)
            if (!strcmp(meta[k].key, meta[i].key))
                return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "cannot write '%s': metadata key '%s' given twice", path,
                                meta[i].key);
    }
    /* Never write a file the reader would reject. The graph reports through
     * its own context, which may differ from ctx. */
    vkl_status st = vkl_graph_validate(g);
    if (st) {
        char msg[VKL_ERROR_CAP];
        snprintf(msg, sizeof(msg), "%s", vkl_context_error(g->ctx));
        return vkl_fail(ctx, st == VKL_ERR_OUT_OF_MEMORY ? st : VKL_ERR_INVALID_ARGUMENT,
                        "cannot write '%s': the graph is invalid: %s", path, msg);
    }
    return VKL_OK;
#endif
}

/* Places the sections and the tensors' data; patches data offsets into the
 * tensor section and hashes the data section as it will be written. */
static vkl_status plan(vkl_context *ctx, const vkl_graph *g, wbuf *sec, const size_t *offset_at, layout *L) {
    L->table_off = VKL_VKM_HEADER_SIZE;
    size_t pos = L->table_off + N_SECTIONS * VKL_VKM_SECTION_ENTRY_SIZE;
    for (unsigned s = 0; s < 3; s++) {
        if (!align_checked(pos, VKL_VKM_ALIGN, &L->off[s]) || !vkl_add_size(L->off[s], sec[s].len, &pos))
            return vkl_fail(ctx, VKL_ERR_OVERFLOW, "model file exceeds the address space");
        L->size[s] = sec[s].len;
    }
    size_t data_off;
    if (!align_checked(pos, VKL_VKM_ALIGN, &data_off))
        return vkl_fail(ctx, VKL_ERR_OVERFLOW, "model file exceeds the address space");
    XXH3_state_t hs;
    XXH3_INITSTATE(&hs);
    XXH3_64bits_reset(&hs);
    size_t end = data_off; /* absolute: large tensors are page-aligned in the file */
    for (uint32_t i = 0; i < g->n_tensors; i++) {
        const vkl_tensor *t = &g->tensors[i];
        if (offset_at[i] == SIZE_MAX) continue;
        size_t at;
        if (!align_checked(end, tensor_align(t->nbytes), &at))
            return vkl_fail(ctx, VKL_ERR_OVERFLOW, "model file exceeds the address space");
        XXH3_64bits_update(&hs, zeros, at - end); /* the gap is below one page */
        if (!vkl_add_size(at, t->nbytes, &end))
            return vkl_fail(ctx, VKL_ERR_OVERFLOW, "model file exceeds the address space");
        XXH3_64bits_update(&hs, t->data, t->nbytes);
        le64(sec[1].p + offset_at[i], (uint64_t)(at - data_off));
    }
    L->off[3] = data_off;
    L->size[3] = end - data_off;
    L->sum[3] = XXH3_64bits_digest(&hs);
    for (unsigned s = 0; s < 3; s++) L->sum[s] = XXH3_64bits(sec[s].p, sec[s].len);
    L->file_size = end;
    return VKL_OK;
}

static vkl_status emit(vkl_atomic_file *f, const vkl_graph *g, const wbuf *sec, const size_t *offset_at, const layout *L) {
    uint8_t table[N_SECTIONS * VKL_VKM_SECTION_ENTRY_SIZE];
    for (unsigned s = 0; s < N_SECTIONS; s++) {
        uint8_t *e = table + s * VKL_VKM_SECTION_ENTRY_SIZE;
        le32(e, section_ids[s]);
        le32(e + 4, 0);
        le64(e + 8, L->off[s]);
        le64(e + 16, L->size[s]);
        le64(e + 24, L->sum[s]);
    }
    uint8_t h[VKL_VKM_HEADER_SIZE] = {0};
    memcpy(h, VKL_VKM_MAGIC, 8);
    le32(h + 8, VKL_VKM_VERSION_MAJOR);
    le32(h + 12, VKL_VKM_VERSION_MINOR);
    le32(h + 16, VKL_VKM_BYTE_ORDER);
    le32(h + 20, VKL_VKM_HEADER_SIZE);
    le64(h + 24, L->file_size);
    le64(h + 32, L->table_off);
    le32(h + 40, N_SECTIONS);
    le32(h + 44, 0); /* flags */
    le64(h + 48, XXH3_64bits(table, sizeof(table)));
    le64(h + 56, XXH3_64bits(h, 56));

    vkl_status st = vkl_atomic_file_write(f, h, sizeof(h));
    if (!st) st = pad_to(f, L->table_off);
    if (!st) st = vkl_atomic_file_write(f, table, sizeof(table));
    for (unsigned s = 0; s < 3 && !st; s++) {
        st = pad_to(f, L->off[s]);
        if (!st) st = vkl_atomic_file_write(f, sec[s].p, sec[s].len);
    }
    if (!st) st = pad_to(f, L->off[3]);
    for (uint32_t i = 0; i < g->n_tensors && !st; i++) {
        if (offset_at[i] == SIZE_MAX) continue;
        const vkl_tensor *t = &g->tensors[i];
        size_t rel = 0;
        for (int k = 0; k < 8; k++) rel |= (size_t)sec[1].p[offset_at[i] + (size_t)k] << (8 * k);
        st = pad_to(f, L->off[3] + rel);
        if (!st) st = vkl_atomic_file_write(f, t->data, t->nbytes);
    }
    return st;
}

vkl_status vkl_vkm_write(vkl_context *ctx, const vkl_graph *g, const vkl_vkm_meta *meta, size_t n_meta,
                         const char *path) {
    if (!ctx) return VKL_ERR_INVALID_ARGUMENT;
    vkl_status st = check_args(ctx, g, meta, n_meta, path);
    if (st) return st;

    wbuf sec[3] = {{ctx, NULL, 0, 0, VKL_OK}, {ctx, NULL, 0, 0, VKL_OK}, {ctx, NULL, 0, 0, VKL_OK}};
    size_t *offset_at = vkl_calloc(ctx, g->n_tensors ? g->n_tensors : 1, sizeof(size_t));
    vkl_atomic_file f;
    layout L = {0};
    if (!offset_at) st = VKL_ERR_OUT_OF_MEMORY;
    if (!st) st = encode_meta(&sec[0], meta, n_meta);
    if (!st) st = encode_tensors(&sec[1], g, offset_at);
    if (!st) st = encode_graph(&sec[2], g);
    /* The encoders' messages lack the path. */
    if (st && st != VKL_ERR_OUT_OF_MEMORY) vkl_fail_prefix(ctx, st, "cannot write '%s'", path);
    if (!st) st = plan(ctx, g, sec, offset_at, &L);
    if (!st) st = vkl_atomic_file_open(ctx, path, &f);
    if (!st) {
        st = emit(&f, g, sec, offset_at, &L);
        if (!st) st = vkl_atomic_file_commit(&f);
        else vkl_atomic_file_abort(&f);
    }
    vkl_free(ctx, offset_at);
    for (unsigned s = 0; s < 3; s++) vkl_free(ctx, sec[s].p);
    return st;
}
