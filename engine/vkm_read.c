/* .vkm reader: maps a model file, validates every byte it uses against the
 * file's length and checksums, and builds a graph whose weights point into
 * the mapping. Nothing read from the file is trusted before it is checked. */
#define _DEFAULT_SOURCE /* madvise */

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "file_open.h"
#include "ops.h"
#include "vkm.h"

/* Under VKL_FUZZING (the fuzz build) checksum mismatches are computed but
 * ignored, so that mutated inputs reach the parsers behind them. */
#ifdef VKL_FUZZING
#define CHECKSUMS_ENFORCED 0
#else
#define CHECKSUMS_ENFORCED 1
#endif

struct vkl_vkm {
    vkl_context *ctx;
    vkl_graph *graph;
    const uint8_t *base;
    size_t size;
    void *map; /* NULL for open_memory */
    vkl_vkm_meta *meta;
    size_t n_meta;
    size_t data_off, data_size;
    uint64_t data_sum;
    uint32_t version_major, version_minor; /* as the header declares them */
    char *path; /* for messages */
};

/* Known sections, in the order the reader parses them. */
enum { S_META, S_TENSORS, S_GRAPH, S_DATA, S_KNOWN };
static const char *const section_names[S_KNOWN] = {"metadata", "tensor table", "graph", "data"};

typedef struct section {
    uint32_t id;
    size_t off, size;
    uint64_t sum;
    char name[24];
} section;

/* Parsing state. `section`, `item` and the cursor [pos, end) say where we
 * are, and every message names them. */
typedef struct reader {
    vkl_context *ctx;
    const char *path;
    const uint8_t *base;
    size_t size;
    const char *section;
    char item[112]; /* "tensor 3 'name'"; empty outside an entry */
    size_t pos, end;
    vkl_arena scratch;
} reader;

static vkl_status VKL_PRINTF(4, 5) rfail(reader *r, vkl_status st, size_t off, const char *fmt, ...) {
    char msg[VKL_ERROR_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (r->item[0])
        return vkl_fail(r->ctx, st, "%s: %s: %s at offset 0x%zx: %s", r->path, r->section, r->item, off, msg);
    return vkl_fail(r->ctx, st, "%s: %s: at offset 0x%zx: %s", r->path, r->section, off, msg);
}

/* Wraps the message a callee (sym, graph) left in the context. */
static vkl_status rwrap(reader *r, vkl_status st, size_t off, const char *what) {
    if (st == VKL_ERR_OUT_OF_MEMORY) return st;
    char inner[VKL_ERROR_CAP];
    snprintf(inner, sizeof(inner), "%s", vkl_context_error(r->ctx));
    return rfail(r, st == VKL_ERR_UNSUPPORTED ? st : VKL_ERR_FORMAT, off, "%s: %s", what, inner);
}

#define TRY(expr)                               \
    do {                                        \
        vkl_status try_st_ = (expr);            \
        if (try_st_ != VKL_OK) return try_st_;  \
    } while (0)

/* ---- little-endian field access ------------------------------------------ */

static uint32_t ld32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t ld64(const uint8_t *p) { return (uint64_t)ld32(p) | (uint64_t)ld32(p + 4) << 32; }

static vkl_status need(reader *r, size_t n, const char *what) {
    if (r->end - r->pos < n)
        return rfail(r, VKL_ERR_FORMAT, r->pos, "%s runs past the end of the section (needs %zu bytes, %zu left)",
                     what, n, r->end - r->pos);
    return VKL_OK;
}

/* Out-parameters are always set, so that no path reads them uninitialized. */
static vkl_status get_u32(reader *r, const char *what, uint32_t *v) {
    *v = 0;
    TRY(need(r, 4, what));
    *v = ld32(r->base + r->pos);
    r->pos += 4;
    return VKL_OK;
}

static vkl_status get_u64(reader *r, const char *what, uint64_t *v) {
    *v = 0;
    TRY(need(r, 8, what));
    *v = ld64(r->base + r->pos);
    r->pos += 8;
    return VKL_OK;
}

/* A count of records that each take at least `min_bytes`: bounding it by the
 * bytes left keeps a forged count from driving a huge allocation or loop. */
static vkl_status get_count(reader *r, const char *what, size_t min_bytes, uint32_t *n) {
    size_t at = r->pos;
    TRY(get_u32(r, what, n));
    if (*n > (r->end - r->pos) / min_bytes)
        return rfail(r, VKL_ERR_FORMAT, at, "%s %u cannot fit in the %zu bytes left in the section", what, *n,
                     r->end - r->pos);
    return VKL_OK;
}

/* u32 length, bytes, NUL. Returns a pointer into the file. */
static vkl_status get_str(reader *r, const char *what, bool nonempty, const char **s) {
    *s = "";
    size_t at = r->pos;
    uint32_t len;
    TRY(get_u32(r, what, &len));
    if (len > VKL_VKM_MAX_STRING)
        return rfail(r, VKL_ERR_FORMAT, at, "%s is %u bytes long; at most %u allowed", what, len, VKL_VKM_MAX_STRING);
    TRY(need(r, (size_t)len + 1, what));
    const char *p = (const char *)r->base + r->pos;
    if (p[len] != 0) return rfail(r, VKL_ERR_FORMAT, at, "%s is not NUL-terminated", what);
    if (memchr(p, 0, len)) return rfail(r, VKL_ERR_FORMAT, at, "%s contains a NUL byte", what);
    if (nonempty && !len) return rfail(r, VKL_ERR_FORMAT, at, "%s is empty", what);
    r->pos += (size_t)len + 1;
    *s = p;
    return VKL_OK;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The first name appearing twice, or NULL. Sorting keeps a forged file with
 * many names from costing quadratic time. */
static vkl_status find_duplicate(reader *r, const char **names, size_t n, const char **dup) {
    *dup = NULL;
    if (n < 2) return VKL_OK;
    const char **sorted = vkl_arena_memdup(&r->scratch, names, n * sizeof(*names));
    if (!sorted) return VKL_ERR_OUT_OF_MEMORY;
    qsort(sorted, n, sizeof(*sorted), cmp_str);
    for (size_t i = 1; i < n && !*dup; i++)
        if (!strcmp(sorted[i - 1], sorted[i])) *dup = sorted[i];
    return VKL_OK;
}

static bool checksum_ok(uint64_t stored, uint64_t computed) {
    return stored == computed || !CHECKSUMS_ENFORCED;
}

/* ---- header and section table ------------------------------------------- */

static vkl_status truncated(reader *r, const char *name, size_t end) {
    return vkl_fail(r->ctx, VKL_ERR_FORMAT,
                    "%s: %s: file is truncated: section '%s' ends at offset %zu (0x%zx) but the file has %zu bytes",
                    r->path, name, name, end, end, r->size);
}

static vkl_status read_header(reader *r, size_t *file_size, size_t *table_off, uint32_t *count,
                              uint64_t *table_sum) {
    r->section = "header";
    const uint8_t *h = r->base;
    if (r->size == 0)
        return vkl_fail(r->ctx, VKL_ERR_FORMAT, "%s: header: the file is empty (0 bytes); a .vkm file starts with a %u-byte header",
                        r->path, VKL_VKM_HEADER_SIZE);
    size_t magic_n = r->size < 8 ? r->size : 8;
    if (memcmp(h, VKL_VKM_MAGIC, magic_n))
        return rfail(r, VKL_ERR_FORMAT, 0, "bad magic: this is not a .vkm model file");
    if (r->size < VKL_VKM_HEADER_SIZE) return truncated(r, "header", VKL_VKM_HEADER_SIZE);
    uint32_t order = ld32(h + 16);
    if (order == 0x04030201u)
        return rfail(r, VKL_ERR_FORMAT, 16, "the file is big-endian; .vkm files are little-endian only");
    if (order != VKL_VKM_BYTE_ORDER) return rfail(r, VKL_ERR_FORMAT, 16, "bad byte-order mark 0x%08x", order);
    uint32_t major = ld32(h + 8), minor = ld32(h + 12);
    if (major != VKL_VKM_VERSION_MAJOR)
        return rfail(r, VKL_ERR_UNSUPPORTED, 8, "format version %u.%u is not supported; this build reads %u.x", major,
                     minor, VKL_VKM_VERSION_MAJOR);
    uint64_t stored = ld64(h + 56), computed = XXH3_64bits(h, 56);
    if (!checksum_ok(stored, computed))
        return rfail(r, VKL_ERR_FORMAT, 56, "checksum mismatch (stored 0x%016llx, computed 0x%016llx): the file is corrupt",
                     (unsigned long long)stored, (unsigned long long)computed);
    uint32_t header_size = ld32(h + 20), flags = ld32(h + 44);
    if (header_size != VKL_VKM_HEADER_SIZE)
        return rfail(r, VKL_ERR_FORMAT, 20, "header size is %u; version %u.x has %u", header_size, major,
                     VKL_VKM_HEADER_SIZE);
    if (flags) return rfail(r, VKL_ERR_FORMAT, 44, "unknown flags 0x%x", flags);
    uint64_t fsize = ld64(h + 24), toff = ld64(h + 32);
    *count = ld32(h + 40);
    *table_sum = ld64(h + 48);
    if ((uint64_t)(size_t)fsize != fsize)
        return rfail(r, VKL_ERR_FORMAT, 24, "file size %llu in the header exceeds the address space",
                     (unsigned long long)fsize);
    /* A larger stated size is a truncated file: read_sections names the
     * section the file ends in, once the section table is known. */
    if (fsize < r->size)
        return rfail(r, VKL_ERR_FORMAT, 24, "the header records %llu bytes but the file has %zu (trailing bytes)",
                     (unsigned long long)fsize, r->size);
    if (*count == 0 || *count > VKL_VKM_MAX_SECTIONS)
        return rfail(r, VKL_ERR_FORMAT, 40, "section count %u is not in 1..%u", *count, VKL_VKM_MAX_SECTIONS);
    if (toff < VKL_VKM_HEADER_SIZE || toff % 8 || toff > fsize)
        return rfail(r, VKL_ERR_FORMAT, 32, "section table offset %llu is invalid", (unsigned long long)toff);
    uint64_t tend = toff + (uint64_t)*count * VKL_VKM_SECTION_ENTRY_SIZE; /* toff <= fsize: no overflow */
    if (tend > fsize)
        return rfail(r, VKL_ERR_FORMAT, 32, "section table [%llu, %llu) extends past the file size %llu in the header",
                     (unsigned long long)toff, (unsigned long long)tend, (unsigned long long)fsize);
    if (tend > r->size) return truncated(r, "section table", (size_t)tend);
    *file_size = (size_t)fsize;
    *table_off = (size_t)toff;
    return VKL_OK;
}

static const char *section_name(uint32_t id) {
    return id >= 1 && id <= S_KNOWN ? section_names[id - 1] : NULL;
}

/* Reads and checks the section table: bounds, alignment, no overlap, zero
 * padding between sections, required sections present, checksums. */
static vkl_status read_sections(reader *r, size_t stated_size, size_t table_off, uint32_t count, uint64_t table_sum,
                                section *secs, section *known[S_KNOWN]) {
    r->section = "section table";
    size_t tlen = (size_t)count * VKL_VKM_SECTION_ENTRY_SIZE;
    uint64_t computed = XXH3_64bits(r->base + table_off, tlen);
    if (!checksum_ok(table_sum, computed))
        return rfail(r, VKL_ERR_FORMAT, table_off,
                     "checksum mismatch (stored 0x%016llx, computed 0x%016llx): the file is corrupt",
                     (unsigned long long)table_sum, (unsigned long long)computed);
    size_t table_end = table_off + tlen;
    for (uint32_t i = 0; i < count; i++) {
        const uint8_t *e = r->base + table_off + (size_t)i * VKL_VKM_SECTION_ENTRY_SIZE;
        size_t at = (size_t)(e - r->base);
        section *s = &secs[i];
        s->id = ld32(e);
        uint32_t flags = ld32(e + 4);
        uint64_t off = ld64(e + 8), size = ld64(e + 16);
        s->sum = ld64(e + 24);
        const char *known_name = section_name(s->id);
        if (known_name) snprintf(s->name, sizeof(s->name), "%s", known_name);
        else snprintf(s->name, sizeof(s->name), "section %u", s->id);
        if (flags) return rfail(r, VKL_ERR_FORMAT, at + 4, "section '%s' has unknown flags 0x%x", s->name, flags);
        if (off % VKL_VKM_ALIGN || off < table_end || off > stated_size || size > stated_size - off)
            return rfail(r, VKL_ERR_FORMAT, at + 8,
                         "section '%s' at offset %llu with %llu bytes is misaligned or lies outside the file (%zu bytes in the header)",
                         s->name, (unsigned long long)off, (unsigned long long)size, stated_size);
        s->off = (size_t)off;
        s->size = (size_t)size;
        if (known_name) {
            if (known[s->id - 1])
                return rfail(r, VKL_ERR_FORMAT, at, "section '%s' appears twice", s->name);
            known[s->id - 1] = s;
        }
    }
    for (unsigned k = 0; k < S_KNOWN; k++)
        if (!known[k]) return rfail(r, VKL_ERR_FORMAT, table_off, "the file has no '%s' section", section_names[k]);

    /* File order, for the truncation message, the overlap check and the
     * padding check (count <= 64: insertion sort). */
    section *order[VKL_VKM_MAX_SECTIONS];
    for (uint32_t i = 0; i < count; i++) {
        uint32_t j = i;
        while (j && (order[j - 1]->off > secs[i].off ||
                     (order[j - 1]->off == secs[i].off && order[j - 1]->size > secs[i].size))) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = &secs[i];
    }
    if (order[count - 1]->off + order[count - 1]->size != stated_size)
        return rfail(r, VKL_ERR_FORMAT, table_off, "the last section ends at offset %zu but the header records %zu bytes",
                     order[count - 1]->off + order[count - 1]->size, stated_size);
    if (stated_size > r->size) {
        for (uint32_t i = 0; i < count; i++)
            if (order[i]->off + order[i]->size > r->size) return truncated(r, order[i]->name, order[i]->off + order[i]->size);
    }
    size_t prev_end = table_end;
    for (uint32_t i = 0; i < count; i++) {
        const section *s = order[i];
        if (s->off < prev_end)
            return rfail(r, VKL_ERR_FORMAT, s->off, "section '%s' overlaps the section before it", s->name);
        for (size_t p = prev_end; p < s->off; p++)
            if (r->base[p])
                return vkl_fail(r->ctx, VKL_ERR_FORMAT,
                                "%s: %s: the padding at offset 0x%zx before section '%s' is not zero: the file is corrupt",
                                r->path, s->name, p, s->name);
        prev_end = s->off + s->size;
    }
    /* The data section is hashed after parsing (vkl_vkm_verify_data), unless
     * the caller opted out. */
    for (uint32_t i = 0; i < count; i++) {
        const section *s = &secs[i];
        if (s->id == VKL_VKM_SECTION_DATA) continue;
        uint64_t sum = XXH3_64bits(r->base + s->off, s->size);
        if (!checksum_ok(s->sum, sum))
            return vkl_fail(r->ctx, VKL_ERR_FORMAT,
                            "%s: %s: checksum mismatch over offsets [0x%zx, 0x%zx) (stored 0x%016llx, computed 0x%016llx): the file is corrupt",
                            r->path, s->name, s->off, s->off + s->size, (unsigned long long)s->sum,
                            (unsigned long long)sum);
    }
    return VKL_OK;
}

static void enter(reader *r, const section *s) {
    r->section = s->name;
    r->item[0] = 0;
    r->pos = s->off;
    r->end = s->off + s->size;
}

static vkl_status expect_end(reader *r) {
    r->item[0] = 0;
    if (r->pos != r->end)
        return rfail(r, VKL_ERR_FORMAT, r->pos, "%zu unexpected bytes after the last entry", r->end - r->pos);
    return VKL_OK;
}

/* ---- metadata ------------------------------------------------------------- */

static vkl_status read_meta(reader *r, vkl_vkm *m, const section *s) {
    enter(r, s);
    uint32_t n;
    /* key (4 + 1 + at least 1) + size (8) */
    TRY(get_count(r, "metadata entry count", 14, &n));
    m->meta = vkl_calloc(r->ctx, n ? n : 1, sizeof(vkl_vkm_meta));
    if (!m->meta) return VKL_ERR_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < n; i++) {
        snprintf(r->item, sizeof(r->item), "entry %u", i);
        const char *key;
        uint64_t size;
        TRY(get_str(r, "key", true, &key));
        snprintf(r->item, sizeof(r->item), "entry %u '%.64s'", i, key);
        TRY(get_u64(r, "value size", &size));
        size_t pad = (VKL_VKM_META_ALIGN - r->pos % VKL_VKM_META_ALIGN) % VKL_VKM_META_ALIGN;
        TRY(need(r, pad, "padding"));
        r->pos += pad;
        if (size > r->end - r->pos)
            return rfail(r, VKL_ERR_FORMAT, r->pos, "value of %llu bytes runs past the end of the section (%zu left)",
                         (unsigned long long)size, r->end - r->pos);
        m->meta[i] = (vkl_vkm_meta){key, r->base + r->pos, (size_t)size};
        r->pos += (size_t)size;
        m->n_meta = i + 1;
    }
    const char **keys = vkl_arena_alloc(&r->scratch, (n ? n : 1) * sizeof(char *));
    if (!keys) return VKL_ERR_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < n; i++) keys[i] = m->meta[i].key;
    const char *dup;
    TRY(find_duplicate(r, keys, n, &dup));
    r->item[0] = 0;
    if (dup) return rfail(r, VKL_ERR_FORMAT, s->off, "key '%.64s' appears twice", dup);
    return expect_end(r);
}

/* ---- tensor table --------------------------------------------------------- */

/* Parses one expression; it may mention only the symbols the file listed. */
static vkl_status get_expr(reader *r, vkl_graph *g, const char *what, vkl_expr *e) {
    size_t at = r->pos;
    const char *text;
    TRY(get_str(r, what, true, &text));
    size_t before = vkl_symtab_symbol_count(g->syms);
    vkl_status st = vkl_expr_parse(g->syms, text, e);
    if (st) {
        char label[160];
        snprintf(label, sizeof(label), "%s '%.64s'", what, text);
        return rwrap(r, st, at, label);
    }
    if (vkl_symtab_symbol_count(g->syms) != before)
        return rfail(r, VKL_ERR_FORMAT, at, "%s '%.64s' names a symbol missing from the symbol list", what, text);
    return VKL_OK;
}

static vkl_status read_symbols(reader *r, vkl_graph *g) {
    uint32_t n;
    TRY(get_count(r, "symbol count", 6, &n));
    for (uint32_t i = 0; i < n; i++) {
        snprintf(r->item, sizeof(r->item), "symbol %u", i);
        size_t at = r->pos;
        const char *name;
        vkl_expr e;
        TRY(get_str(r, "name", true, &name));
        vkl_status st = vkl_expr_symbol(g->syms, name, &e);
        if (st) return rwrap(r, st, at, "symbol name");
        /* Re-creating them in file order keeps symbol numbers, which index
         * binding arrays, identical to the writer's. */
        if (vkl_symtab_symbol_count(g->syms) != (size_t)i + 1)
            return rfail(r, VKL_ERR_FORMAT, at, "symbol '%.64s' is listed twice", name);
    }
    r->item[0] = 0;
    return VKL_OK;
}

/* Bytes a weight of this dtype/group/shape must hold. */
static vkl_status weight_bytes(reader *r, const vkl_graph *g, size_t at, vkl_dtype dtype, uint32_t group,
                               const vkl_shape *shape, size_t *bytes) {
    *bytes = 0;
    int64_t elements = 1, last = 1;
    for (uint32_t d = 0; d < shape->rank; d++) {
        if (!vkl_expr_is_const(g->syms, shape->dims[d], &last))
            return rfail(r, VKL_ERR_FORMAT, at, "a weight's dim %u is not a constant", d);
        if (!vkl_mul_i64(elements, last, &elements))
            return rfail(r, VKL_ERR_FORMAT, at, "element count overflows");
    }
    if (!vkl_tensor_bytes_shaped(dtype, group, elements, last, bytes))
        return rfail(r, VKL_ERR_FORMAT, at, "%lld elements of %s with group %u have no valid byte size",
                     (long long)elements, vkl_dtype_name(dtype), group);
    return VKL_OK;
}

static vkl_status read_tensor(reader *r, vkl_graph *g, uint32_t i, const section *data) {
    size_t entry_at = r->pos;
    snprintf(r->item, sizeof(r->item), "tensor %u", i);
    const char *name;
    uint32_t dtype, kind, group, flags, rank;
    TRY(get_str(r, "name", true, &name));
    snprintf(r->item, sizeof(r->item), "tensor %u '%.64s'", i, name);
    size_t at = r->pos;
    TRY(get_u32(r, "dtype", &dtype));
    TRY(get_u32(r, "kind", &kind));
    TRY(get_u32(r, "group", &group));
    TRY(get_u32(r, "flags", &flags));
    TRY(get_u32(r, "rank", &rank));
    if (!vkl_dtype_valid((vkl_dtype)dtype)) return rfail(r, VKL_ERR_FORMAT, at, "invalid dtype %u", dtype);
    if (kind > VKL_TENSOR_STATE) return rfail(r, VKL_ERR_FORMAT, at + 4, "invalid kind %u", kind);
    if (vkl_dtype_is_quantized((vkl_dtype)dtype) ? group == 0 : group != 0)
        return rfail(r, VKL_ERR_FORMAT, at + 8, "group %u is invalid for dtype %s", group,
                     vkl_dtype_name((vkl_dtype)dtype));
    if (flags & ~(VKL_VKM_TENSOR_HAS_DATA | VKL_VKM_TENSOR_HAS_VALUE | VKL_VKM_TENSOR_SHORT_GROUP))
        return rfail(r, VKL_ERR_FORMAT, at + 12, "unknown flags 0x%x", flags);
    if (rank > VKL_MAX_RANK) return rfail(r, VKL_ERR_FORMAT, at + 16, "rank %u exceeds %d", rank, VKL_MAX_RANK);
    vkl_shape shape = {.rank = rank};
    for (uint32_t d = 0; d < rank; d++) {
        int64_t v;
        size_t dim_at = r->pos;
        char label[32];
        snprintf(label, sizeof(label), "dim %u", d);
        TRY(get_expr(r, g, label, &shape.dims[d]));
        if (vkl_expr_is_const(g->syms, shape.dims[d], &v) && v < 0)
            return rfail(r, VKL_ERR_FORMAT, dim_at, "dim %u is negative (%lld)", d, (long long)v);
    }
    if (!(flags & VKL_VKM_TENSOR_SHORT_GROUP) != !vkl_vkm_short_group(g, (vkl_dtype)dtype, group, &shape))
        return rfail(r, VKL_ERR_FORMAT, at + 12, "flag 0x%x (short last group) is %s, but the last dim of this %s "
                     "tensor with group %u %s", VKL_VKM_TENSOR_SHORT_GROUP,
                     flags & VKL_VKM_TENSOR_SHORT_GROUP ? "set" : "clear", vkl_dtype_name((vkl_dtype)dtype), group,
                     flags & VKL_VKM_TENSOR_SHORT_GROUP ? "is whole groups (or not a constant)"
                                                        : "is not a multiple of it");
    const void *bytes = NULL;
    size_t nbytes = 0;
    if (flags & VKL_VKM_TENSOR_HAS_DATA) {
        uint64_t off, size;
        size_t off_at = r->pos;
        TRY(get_u64(r, "data offset", &off));
        TRY(get_u64(r, "data size", &size));
        if (off > data->size || size > data->size - off)
            return rfail(r, VKL_ERR_FORMAT, off_at, "data [%llu, +%llu) lies outside the %zu-byte data section",
                         (unsigned long long)off, (unsigned long long)size, data->size);
        size_t abs = data->off + (size_t)off;
        size_t align = size >= VKL_VKM_LARGE_TENSOR ? VKL_VKM_PAGE_ALIGN : VKL_VKM_ALIGN;
        if (abs % align)
            return rfail(r, VKL_ERR_FORMAT, off_at, "data at file offset 0x%zx is not aligned to %zu bytes", abs, align);
        bytes = r->base + abs;
        nbytes = (size_t)size;
    }
    if (kind == VKL_TENSOR_WEIGHT) {
        size_t expect;
        TRY(weight_bytes(r, g, entry_at, (vkl_dtype)dtype, group, &shape, &expect));
        if (expect != nbytes)
            return rfail(r, VKL_ERR_FORMAT, entry_at, "weight holds %zu bytes; %s with this shape needs %zu", nbytes,
                         vkl_dtype_name((vkl_dtype)dtype), expect);
    }
    vkl_expr value[VKL_MAX_VALUE_ELEMS];
    uint32_t value_count = 0;
    if (flags & VKL_VKM_TENSOR_HAS_VALUE) {
        size_t count_at = r->pos;
        TRY(get_u32(r, "value count", &value_count));
        if (value_count > VKL_MAX_VALUE_ELEMS)
            return rfail(r, VKL_ERR_FORMAT, count_at, "symbolic value has %u elements; at most %d", value_count,
                         VKL_MAX_VALUE_ELEMS);
        for (uint32_t k = 0; k < value_count; k++) {
            char label[32];
            snprintf(label, sizeof(label), "value element %u", k);
            TRY(get_expr(r, g, label, &value[k]));
        }
    }
    uint32_t id;
    vkl_status st = vkl_graph_add_tensor(g, name, (vkl_dtype)dtype, (vkl_tensor_kind)kind, &shape, &id);
    if (st) return rwrap(r, st, entry_at, "cannot add tensor");
    g->tensors[id].group = group;
    if (bytes && (st = vkl_graph_set_data(g, id, bytes, nbytes, false))) return rwrap(r, st, entry_at, "data");
    if ((flags & VKL_VKM_TENSOR_HAS_VALUE) && (st = vkl_graph_set_value(g, id, value, value_count)))
        return rwrap(r, st, entry_at, "value");
    return VKL_OK;
}

static vkl_status read_tensors(reader *r, vkl_graph *g, const section *s, const section *data) {
    enter(r, s);
    TRY(read_symbols(r, g));
    uint32_t n;
    /* name (6) + five u32 fields */
    TRY(get_count(r, "tensor count", 26, &n));
    for (uint32_t i = 0; i < n; i++) TRY(read_tensor(r, g, i, data));
    return expect_end(r);
}

/* ---- graph ---------------------------------------------------------------- */

static vkl_status get_index(reader *r, const vkl_graph *g, const char *what, uint32_t k, bool allow_none,
                            uint32_t *t) {
    size_t at = r->pos;
    TRY(get_u32(r, what, t));
    if ((*t == VKL_NONE && allow_none) || *t < g->n_tensors) return VKL_OK;
    return rfail(r, VKL_ERR_FORMAT, at, "%s %u is tensor %u; the file has %u tensors", what, k, *t, g->n_tensors);
}

static vkl_status get_indexes(reader *r, const vkl_graph *g, const char *what, uint32_t **ids, uint32_t *n) {
    char label[48];
    snprintf(label, sizeof(label), "%s count", what);
    TRY(get_count(r, label, 4, n));
    *ids = vkl_arena_alloc(&r->scratch, (size_t)(*n ? *n : 1) * sizeof(uint32_t));
    if (!*ids) return VKL_ERR_OUT_OF_MEMORY;
    for (uint32_t k = 0; k < *n; k++) TRY(get_index(r, g, what, k, true, &(*ids)[k]));
    return VKL_OK;
}

static vkl_status read_attr(reader *r, const vkl_graph *g, vkl_attr *a) {
    size_t at = r->pos;
    uint32_t kind;
    TRY(get_str(r, "attribute name", true, &a->name));
    TRY(get_u32(r, "attribute kind", &kind));
    a->kind = (vkl_attr_kind)kind;
    switch (kind) {
    case VKL_ATTR_NONE: return VKL_OK;
    case VKL_ATTR_INT: {
        uint64_t v;
        TRY(get_u64(r, "int attribute", &v));
        a->i = (int64_t)v;
        return VKL_OK;
    }
    case VKL_ATTR_FLOAT: {
        uint32_t u;
        TRY(get_u32(r, "float attribute", &u));
        memcpy(&a->f, &u, 4);
        return VKL_OK;
    }
    case VKL_ATTR_STRING: return get_str(r, "string attribute", false, &a->s);
    case VKL_ATTR_INTS: {
        TRY(get_count(r, "ints count", 8, &a->count));
        int64_t *v = vkl_arena_alloc(&r->scratch, (size_t)(a->count ? a->count : 1) * sizeof(int64_t));
        if (!v) return VKL_ERR_OUT_OF_MEMORY;
        for (uint32_t k = 0; k < a->count; k++) v[k] = (int64_t)ld64(r->base + r->pos + 8 * (size_t)k);
        r->pos += 8 * (size_t)a->count;
        a->ints = v;
        return VKL_OK;
    }
    case VKL_ATTR_FLOATS: {
        TRY(get_count(r, "floats count", 4, &a->count));
        float *v = vkl_arena_alloc(&r->scratch, (size_t)(a->count ? a->count : 1) * sizeof(float));
        if (!v) return VKL_ERR_OUT_OF_MEMORY;
        for (uint32_t k = 0; k < a->count; k++) {
            uint32_t u = ld32(r->base + r->pos + 4 * (size_t)k);
            memcpy(&v[k], &u, 4);
        }
        r->pos += 4 * (size_t)a->count;
        a->floats = v;
        return VKL_OK;
    }
    case VKL_ATTR_TENSOR: {
        uint32_t t;
        size_t t_at = r->pos;
        TRY(get_u32(r, "tensor attribute", &t));
        if (t >= g->n_tensors)
            return rfail(r, VKL_ERR_FORMAT, t_at, "attribute '%.64s' names tensor %u; the file has %u tensors", a->name,
                         t, g->n_tensors);
        a->i = t;
        return VKL_OK;
    }
    default:
        return rfail(r, VKL_ERR_FORMAT, at, "attribute '%.64s' has unknown kind %u", a->name, kind);
    }
}

static vkl_status read_node(reader *r, vkl_graph *g, uint32_t i) {
    size_t entry_at = r->pos;
    snprintf(r->item, sizeof(r->item), "node %u", i);
    const char *domain, *op_name, *name;
    TRY(get_str(r, "op domain", false, &domain));
    TRY(get_str(r, "op name", true, &op_name));
    TRY(get_str(r, "node name", false, &name));
    snprintf(r->item, sizeof(r->item), "node %u '%.64s'", i, name);
    vkl_op op;
    if (!vkl_op_find(domain, op_name, &op))
        return rfail(r, VKL_ERR_UNSUPPORTED, entry_at, "unknown op '%.64s%s%.64s': this build of vkllm does not implement it",
                     domain, *domain ? "::" : "", op_name);
    uint32_t *inputs, *outputs, n_in, n_out, n_attrs;
    TRY(get_indexes(r, g, "input", &inputs, &n_in));
    TRY(get_indexes(r, g, "output", &outputs, &n_out));
    /* name (6) + kind (4) */
    TRY(get_count(r, "attribute count", 10, &n_attrs));
    vkl_attr *attrs = vkl_arena_alloc(&r->scratch, (size_t)(n_attrs ? n_attrs : 1) * sizeof(vkl_attr));
    const char **names = vkl_arena_alloc(&r->scratch, (size_t)(n_attrs ? n_attrs : 1) * sizeof(char *));
    if (!attrs || !names) return VKL_ERR_OUT_OF_MEMORY;
    for (uint32_t k = 0; k < n_attrs; k++) {
        memset(&attrs[k], 0, sizeof(attrs[k]));
        TRY(read_attr(r, g, &attrs[k]));
        names[k] = attrs[k].name;
    }
    const char *dup;
    TRY(find_duplicate(r, names, n_attrs, &dup));
    if (dup) return rfail(r, VKL_ERR_FORMAT, entry_at, "attribute '%.64s' appears twice", dup);
    vkl_status st = vkl_graph_add_node(g, (uint32_t)op, name, inputs, n_in, outputs, n_out, attrs, n_attrs, NULL);
    if (st) return rwrap(r, st, entry_at, "cannot add node");
    return VKL_OK;
}

static vkl_status read_graph(reader *r, vkl_graph *g, const section *s) {
    enter(r, s);
    uint32_t n, *ids, count;
    /* domain (5) + op (6) + name (5) + three counts */
    TRY(get_count(r, "node count", 28, &n));
    for (uint32_t i = 0; i < n; i++) TRY(read_node(r, g, i));
    r->item[0] = 0;
    size_t at = r->pos;
    TRY(get_indexes(r, g, "graph input", &ids, &count));
    for (uint32_t k = 0; k < count; k++) {
        if (ids[k] == VKL_NONE) return rfail(r, VKL_ERR_FORMAT, at, "graph input %u is absent (VKL_NONE)", k);
        TRY(vkl_graph_add_input(g, ids[k]));
    }
    at = r->pos;
    TRY(get_indexes(r, g, "graph output", &ids, &count));
    for (uint32_t k = 0; k < count; k++) {
        if (ids[k] == VKL_NONE) return rfail(r, VKL_ERR_FORMAT, at, "graph output %u is absent (VKL_NONE)", k);
        TRY(vkl_graph_add_output(g, ids[k]));
    }
    TRY(expect_end(r));
    vkl_status st = vkl_graph_validate(g);
    if (st) {
        r->item[0] = 0;
        return rwrap(r, st, s->off, "the graph is invalid");
    }
    return VKL_OK;
}

/* ---- open / close --------------------------------------------------------- */

static vkl_status open_common(vkl_context *ctx, const char *path, const uint8_t *base, size_t size, void *map,
                              uint32_t flags, vkl_vkm **out) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
    (void)base, (void)size, (void)map, (void)flags, (void)out;
    return vkl_fail(ctx, VKL_ERR_UNSUPPORTED, "%s: .vkm files are little-endian and this host is not", path);
#else
    vkl_vkm *m = vkl_calloc(ctx, 1, sizeof(*m));
    if (!m) return VKL_ERR_OUT_OF_MEMORY;
    m->ctx = ctx;
    m->base = base;
    m->size = size;
    m->map = map;
    m->path = vkl_strdup(ctx, path);
    reader r = {.ctx = ctx, .path = path, .base = base, .size = size, .section = "header"};
    vkl_arena_init(&r.scratch, ctx);
    section secs[VKL_VKM_MAX_SECTIONS];
    section *known[S_KNOWN] = {NULL};
    size_t file_size = 0, table_off = 0;
    uint32_t count = 0;
    uint64_t table_sum = 0;
    vkl_status st = m->path ? VKL_OK : VKL_ERR_OUT_OF_MEMORY;
    if (!st) st = read_header(&r, &file_size, &table_off, &count, &table_sum);
    if (!st) st = read_sections(&r, file_size, table_off, count, table_sum, secs, known);
    if (!st) st = read_meta(&r, m, known[S_META]);
    if (!st) st = vkl_graph_create(ctx, &m->graph);
    if (!st) st = read_tensors(&r, m->graph, known[S_TENSORS], known[S_DATA]);
    if (!st) st = read_graph(&r, m->graph, known[S_GRAPH]);
    vkl_arena_release(&r.scratch);
    if (!st) {
        m->data_off = known[S_DATA]->off;
        m->data_size = known[S_DATA]->size;
        m->data_sum = known[S_DATA]->sum;
        if (!(flags & VKL_VKM_NO_DATA_CHECK)) st = vkl_vkm_verify_data(m);
    }
    if (st) {
        m->map = NULL; /* the caller unmaps */
        vkl_vkm_close(m);
        return st;
    }
    m->version_major = ld32(m->base + 8); /* read_header checked them */
    m->version_minor = ld32(m->base + 12);
    *out = m;
    return VKL_OK;
#endif
}

vkl_status vkl_vkm_open_memory_flags(vkl_context *ctx, const void *data, size_t size, uint32_t flags,
                                     vkl_vkm **out) {
    if (!ctx) return VKL_ERR_INVALID_ARGUMENT;
    if (!out || (!data && size)) return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "vkl_vkm_open_memory: no buffer");
    *out = NULL;
    static const uint8_t empty[1] = {0};
    return open_common(ctx, "<memory>", data ? data : empty, size, NULL, flags, out);
}

vkl_status vkl_vkm_open_memory(vkl_context *ctx, const void *data, size_t size, vkl_vkm **out) {
    return vkl_vkm_open_memory_flags(ctx, data, size, 0, out);
}

vkl_status vkl_vkm_open(vkl_context *ctx, const char *path, vkl_vkm **out) {
    return vkl_vkm_open_flags(ctx, path, 0, out);
}

vkl_status vkl_vkm_open_flags(vkl_context *ctx, const char *path, uint32_t flags, vkl_vkm **out) {
    if (!ctx) return VKL_ERR_INVALID_ARGUMENT;
    if (!out || !path) return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "vkl_vkm_open: no path");
    *out = NULL;
    int fd;
    struct stat sb;
    vkl_status opened = vkl_open_regular(ctx, path, "model file", &fd, &sb);
    if (opened) return opened == VKL_ERR_OUT_OF_MEMORY ? opened : VKL_ERR_IO; /* a missing file too, as documented */
    if ((uintmax_t)sb.st_size > (uintmax_t)SIZE_MAX) {
        close(fd);
        return vkl_fail(ctx, VKL_ERR_IO, "%s: %jd bytes do not fit in the address space", path, (intmax_t)sb.st_size);
    }
    size_t size = (size_t)sb.st_size;
    void *map = NULL;
    if (size) {
        map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            vkl_status st = vkl_fail(ctx, VKL_ERR_IO, "%s: cannot mmap %zu bytes: %s", path, size, strerror(errno));
            close(fd);
            return st;
        }
    }
    close(fd); /* the mapping keeps the file alive */
    static const uint8_t empty[1] = {0};
    vkl_status st = open_common(ctx, path, map ? map : empty, size, map, flags, out);
    if (st && map) munmap(map, size);
    return st;
}

void vkl_vkm_close(vkl_vkm *m) {
    if (!m) return;
    vkl_context *ctx = m->ctx;
    vkl_graph_destroy(m->graph);
    if (m->map) munmap(m->map, m->size);
    vkl_free(ctx, m->meta);
    vkl_free(ctx, m->path);
    vkl_free(ctx, m);
}

/* XXH3 of the data section. Over a mapping, page faults cost as much as the
 * hash: each chunk's page tables are filled by one madvise first (measured:
 * 0.40 -> 0.34 s for 1.3 GB on a busy machine), a hint whose failure (an
 * older kernel) only costs the faults. */
static uint64_t hash_data(const vkl_vkm *m) {
    const uint8_t *p = m->base + m->data_off;
    if (!m->map) return XXH3_64bits(p, m->data_size);
    XXH3_state_t hs;
    XXH3_INITSTATE(&hs);
    XXH3_64bits_reset(&hs);
    const size_t chunk = (size_t)64 << 20;
    for (size_t done = 0; done < m->data_size;) {
        size_t n = m->data_size - done < chunk ? m->data_size - done : chunk;
#ifdef MADV_POPULATE_READ
        uintptr_t lo = (uintptr_t)(p + done) & ~(uintptr_t)(VKL_VKM_PAGE_ALIGN - 1);
        madvise((void *)lo, (uintptr_t)(p + done + n) - lo, MADV_POPULATE_READ);
#endif
        XXH3_64bits_update(&hs, p + done, n);
        done += n;
    }
    return XXH3_64bits_digest(&hs);
}

vkl_status vkl_vkm_verify_data(const vkl_vkm *m) {
    if (!m) return VKL_ERR_INVALID_ARGUMENT;
    uint64_t sum = hash_data(m);
    if (!checksum_ok(m->data_sum, sum))
        return vkl_fail(m->ctx, VKL_ERR_FORMAT,
                        "%s: data: checksum mismatch over offsets [0x%zx, 0x%zx) (stored 0x%016llx, computed 0x%016llx): the file is corrupt: its weights are not the bytes that were written",
                        m->path, m->data_off, m->data_off + m->data_size, (unsigned long long)m->data_sum,
                        (unsigned long long)sum);
    return VKL_OK;
}

size_t vkl_vkm_data_bytes(const vkl_vkm *m) { return m ? m->data_size : 0; }

const vkl_graph *vkl_vkm_graph(const vkl_vkm *m) { return m ? m->graph : NULL; }

bool vkl_vkm_short_group(const vkl_graph *g, vkl_dtype dtype, uint32_t group, const vkl_shape *shape) {
    int64_t last;
    return vkl_dtype_is_quantized(dtype) && group && shape->rank &&
           vkl_expr_is_const(g->syms, shape->dims[shape->rank - 1], &last) && last % group != 0;
}

void vkl_vkm_version(const vkl_vkm *m, uint32_t *major, uint32_t *minor) {
    *major = m ? m->version_major : 0;
    *minor = m ? m->version_minor : 0;
}

const void *vkl_vkm_bytes(const vkl_vkm *m, size_t *size) {
    if (size) *size = m ? m->size : 0;
    return m ? m->base : NULL;
}

bool vkl_vkm_meta_get(const vkl_vkm *m, const char *key, const void **data, size_t *size) {
    if (!m || !key) return false;
    for (size_t i = 0; i < m->n_meta; i++) {
        if (strcmp(m->meta[i].key, key)) continue;
        if (data) *data = m->meta[i].data;
        if (size) *size = m->meta[i].size;
        return true;
    }
    return false;
}

size_t vkl_vkm_meta_count(const vkl_vkm *m) { return m ? m->n_meta : 0; }

bool vkl_vkm_meta_at(const vkl_vkm *m, size_t i, vkl_vkm_meta *out) {
    if (!m || i >= m->n_meta) return false;
    *out = m->meta[i];
    return true;
}
