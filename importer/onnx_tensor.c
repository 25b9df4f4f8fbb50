/* TensorProto payloads -> canonical weight bytes: ONNX element types,
 * raw_data (borrowed from the unpacked message), typed fields (converted to
 * little-endian bytes) and external data files (mapped, then borrowed). */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* mmap, O_CLOEXEC */
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

/* Typed fields and borrowed raw_data are taken as they are: the canonical
 * layout is little-endian, like the protobuf wire format. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the ONNX reader assumes a little-endian host"
#endif

static const struct {
    int32_t onnx;
    vkl_dtype vkl; /* VKL_DTYPE_INVALID: not supported */
    const char *name;
} dtypes[] = {
    {0, VKL_DTYPE_INVALID, "UNDEFINED"},
    {1, VKL_DTYPE_F32, "FLOAT"},
    {2, VKL_DTYPE_U8, "UINT8"},
    {3, VKL_DTYPE_I8, "INT8"},
    {4, VKL_DTYPE_U16, "UINT16"},
    {5, VKL_DTYPE_I16, "INT16"},
    {6, VKL_DTYPE_I32, "INT32"},
    {7, VKL_DTYPE_I64, "INT64"},
    {8, VKL_DTYPE_INVALID, "STRING"},
    {9, VKL_DTYPE_BOOL, "BOOL"},
    {10, VKL_DTYPE_F16, "FLOAT16"},
    {11, VKL_DTYPE_F64, "DOUBLE"},
    {12, VKL_DTYPE_U32, "UINT32"},
    {13, VKL_DTYPE_U64, "UINT64"},
    {14, VKL_DTYPE_INVALID, "COMPLEX64"},
    {15, VKL_DTYPE_INVALID, "COMPLEX128"},
    {16, VKL_DTYPE_BF16, "BFLOAT16"},
    {ONNX_DT_FLOAT8E4M3FN, VKL_DTYPE_FP8_E4M3, "FLOAT8E4M3FN"},
    {ONNX_DT_FLOAT8E4M3FNUZ, VKL_DTYPE_INVALID, "FLOAT8E4M3FNUZ"},
    {ONNX_DT_FLOAT8E5M2, VKL_DTYPE_FP8_E5M2, "FLOAT8E5M2"},
    {ONNX_DT_FLOAT8E5M2FNUZ, VKL_DTYPE_INVALID, "FLOAT8E5M2FNUZ"},
    {ONNX_DT_UINT4, VKL_DTYPE_INVALID, "UINT4"},
    {ONNX_DT_INT4, VKL_DTYPE_INVALID, "INT4"},
    {ONNX_DT_FLOAT4E2M1, VKL_DTYPE_INVALID, "FLOAT4E2M1"},
    {24, VKL_DTYPE_INVALID, "FLOAT8E8M0"},
    {25, VKL_DTYPE_INVALID, "UINT2"},
    {26, VKL_DTYPE_INVALID, "INT2"},
};

bool onnx_dtype_to_vkl(int32_t onnx_type, vkl_dtype *out) {
    for (size_t i = 0; i < VKL_ARRAY_LEN(dtypes); i++) {
        if (dtypes[i].onnx != onnx_type) continue;
        *out = dtypes[i].vkl;
        return dtypes[i].vkl != VKL_DTYPE_INVALID;
    }
    return false;
}

const char *onnx_dtype_name(int32_t onnx_type) {
    for (size_t i = 0; i < VKL_ARRAY_LEN(dtypes); i++)
        if (dtypes[i].onnx == onnx_type) return dtypes[i].name;
    return "unknown";
}

/* ---- shape and size ---------------------------------------------------- */

static vkl_status tensor_shape(onnx_builder *b, const Onnx__TensorProto *tp, const char *what, const char *name,
                               vkl_shape *shape, int64_t *elements) {
    if (tp->n_dims > VKL_MAX_RANK)
        return vkl_fail(b->ctx, VKL_ERR_UNSUPPORTED, "%s '%s' has rank %zu; at most %d is supported", what, name,
                        tp->n_dims, VKL_MAX_RANK);
    memset(shape, 0, sizeof(*shape));
    shape->rank = (uint32_t)tp->n_dims;
    int64_t n = 1;
    for (size_t d = 0; d < tp->n_dims; d++) {
        if (tp->dims[d] < 0)
            return vkl_fail(b->ctx, VKL_ERR_FORMAT, "%s '%s' has a negative dim %lld", what, name,
                            (long long)tp->dims[d]);
        if (!vkl_mul_i64(n, tp->dims[d], &n))
            return vkl_fail(b->ctx, VKL_ERR_OVERFLOW, "%s '%s': element count overflows", what, name);
        vkl_status st = vkl_expr_const(b->g->syms, tp->dims[d], &shape->dims[d]);
        if (st) return st;
    }
    *elements = n;
    return VKL_OK;
}

/* ---- typed fields -------------------------------------------------------- */

/* Gives a converted typed array back early: weights hold the converted copy,
 * and large old-style (float_data era) models would otherwise keep both. */
static void release_array(onnx_builder *b, void **arr, size_t *n) {
    if (b->pb_alloc && *arr) b->pb_alloc->free(b->pb_alloc->allocator_data, *arr);
    *arr = NULL;
    *n = 0;
}

/* int32_data carries 8- and 16-bit types one element per int32 (halves and
 * fp8 as their bit patterns). */
static void narrow_int32(const int32_t *src, size_t n, vkl_dtype dtype, uint8_t *dst) {
    for (size_t i = 0; i < n; i++) {
        uint32_t v = (uint32_t)src[i];
        switch (vkl_dtype_size(dtype)) {
        case 1: dst[i] = dtype == VKL_DTYPE_BOOL ? (uint8_t)(v != 0) : (uint8_t)v; break;
        default: {
            uint16_t h = (uint16_t)v;
            memcpy(dst + 2 * i, &h, 2);
        }
        }
    }
}

static vkl_status typed_payload(onnx_builder *b, Onnx__TensorProto *tp, const char *what, const char *name,
                                vkl_dtype dtype, int64_t elements, size_t nbytes, const void **data) {
    const char *field;
    size_t count;
    switch (dtype) {
    case VKL_DTYPE_F32: field = "float_data", count = tp->n_float_data; break;
    case VKL_DTYPE_I64: field = "int64_data", count = tp->n_int64_data; break;
    case VKL_DTYPE_F64: field = "double_data", count = tp->n_double_data; break;
    case VKL_DTYPE_U32:
    case VKL_DTYPE_U64: field = "uint64_data", count = tp->n_uint64_data; break;
    default: field = "int32_data", count = tp->n_int32_data; break;
    }
    *data = NULL;
    if (count == 0 && elements == 0) return VKL_OK;
    if (count == 0)
        return vkl_fail(b->ctx, VKL_ERR_FORMAT, "%s '%s' has no data (%lld %s elements expected in raw_data or %s)",
                        what, name, (long long)elements, vkl_dtype_name(dtype), field);
    if ((uint64_t)count != (uint64_t)elements)
        return vkl_fail(b->ctx, VKL_ERR_FORMAT, "%s '%s': %s holds %zu values; its dims need %lld", what, name, field,
                        count, (long long)elements);
    switch (dtype) { /* same layout: borrow */
    case VKL_DTYPE_F32: *data = tp->float_data; return VKL_OK;
    case VKL_DTYPE_I64: *data = tp->int64_data; return VKL_OK;
    case VKL_DTYPE_F64: *data = tp->double_data; return VKL_OK;
    case VKL_DTYPE_U64: *data = tp->uint64_data; return VKL_OK;
    case VKL_DTYPE_I32: *data = tp->int32_data; return VKL_OK;
    default: break;
    }
    uint8_t *dst = vkl_arena_alloc(&b->g->arena, nbytes);
    if (!dst) return VKL_ERR_OUT_OF_MEMORY;
    if (dtype == VKL_DTYPE_U32) {
        for (size_t i = 0; i < count; i++) {
            uint32_t v = (uint32_t)tp->uint64_data[i];
            memcpy(dst + 4 * i, &v, 4);
        }
        release_array(b, (void **)&tp->uint64_data, &tp->n_uint64_data);
    } else {
        narrow_int32(tp->int32_data, count, dtype, dst);
        release_array(b, (void **)&tp->int32_data, &tp->n_int32_data);
    }
    *data = dst;
    return VKL_OK;
}

/* ---- external data -------------------------------------------------------- */

/* Relative, and no ".." component: a model must not read files outside its
 * own directory. */
static bool location_is_safe(const char *loc) {
    bool drive = ((loc[0] >= 'a' && loc[0] <= 'z') || (loc[0] >= 'A' && loc[0] <= 'Z')) && loc[1] == ':';
    if (!*loc || loc[0] == '/' || loc[0] == '\\' || drive) return false;
    const char *p = loc;
    while (*p) {
        size_t len = strcspn(p, "/\\");
        if (len == 2 && p[0] == '.' && p[1] == '.') return false;
        p += len;
        if (*p) p++;
    }
    return true;
}

static bool parse_u64(const char *s, uint64_t *out) {
    uint64_t v = 0;
    if (!s || !*s) return false;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return false;
        if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10) return false;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return true;
}

void onnx_extfiles_close(vkl_context *ctx, onnx_extfile *list) {
    while (list) {
        onnx_extfile *next = list->next;
        if (list->map) munmap((void *)list->map, list->size);
        if (list->fd >= 0) close(list->fd);
        vkl_free(ctx, list->location);
        vkl_free(ctx, list);
        list = next;
    }
}

#define EXTFILE_KEEP_FDS 256

static vkl_status open_extfile(onnx_builder *b, const char *location, const char *path, onnx_extfile *f) {
    int fd;
    struct stat sb;
    vkl_status st = vkl_open_regular(b->ctx, path, "external data file", &fd, &sb);
    if (st) return st;
    if ((uint64_t)sb.st_size > SIZE_MAX)
        st = vkl_fail(b->ctx, VKL_ERR_UNSUPPORTED, "external data file '%s' is too large for this host", path);
    if (!st && sb.st_size > 0) {
        void *map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED)
            st = vkl_fail(b->ctx, VKL_ERR_IO, "cannot map external data file '%s': %s", path, strerror(errno));
        else
            f->map = map;
    }
    /* Kept for vkl_onnx_read (pread, without mapping the weights), up to a
     * bound: exporters may write a file per tensor, and the descriptors are
     * a limited resource; past it, reads go through the mapping. */
    unsigned kept = 0;
    for (const onnx_extfile *e = *b->extfiles; e; e = e->next) kept += e->fd >= 0;
    if (st || kept >= EXTFILE_KEEP_FDS) close(fd);
    if (st) return st;
    f->fd = kept < EXTFILE_KEEP_FDS ? fd : -1;
    f->size = (size_t)sb.st_size;
    f->location = vkl_strdup(b->ctx, location);
    return f->location ? VKL_OK : VKL_ERR_OUT_OF_MEMORY;
}

/* One mapping per file, however many tensors it holds. */
static vkl_status get_extfile(onnx_builder *b, const char *location, onnx_extfile **out) {
    for (onnx_extfile *f = *b->extfiles; f; f = f->next) {
        if (!strcmp(f->location, location)) {
            *out = f;
            return VKL_OK;
        }
    }
    size_t len = strlen(b->base_dir) + strlen(location) + 2;
    char *path = vkl_malloc(b->ctx, len);
    onnx_extfile *f = vkl_calloc(b->ctx, 1, sizeof(*f));
    if (f) f->fd = -1;
    vkl_status st = path && f ? VKL_OK : VKL_ERR_OUT_OF_MEMORY;
    if (!st) {
        snprintf(path, len, "%s/%s", b->base_dir, location);
        st = open_extfile(b, location, path, f);
    }
    vkl_free(b->ctx, path);
    if (st) {
        onnx_extfiles_close(b->ctx, f);
        return st;
    }
    f->next = *b->extfiles;
    *b->extfiles = f;
    *out = f;
    return VKL_OK;
}

typedef struct ext_ref {
    const char *location;
    uint64_t offset, length;
    bool has_length;
} ext_ref;

static vkl_status parse_ext_ref(onnx_builder *b, const Onnx__TensorProto *tp, const char *what, const char *name,
                                ext_ref *r) {
    memset(r, 0, sizeof(*r));
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = tp->external_data[i];
        const char *key = onnx_str(e->key), *value = onnx_str(e->value);
        bool ok = true;
        if (!strcmp(key, "location")) r->location = value;
        else if (!strcmp(key, "offset")) ok = parse_u64(value, &r->offset);
        else if (!strcmp(key, "length")) ok = r->has_length = parse_u64(value, &r->length);
        /* "checksum" and unknown keys carry nothing we need */
        if (!ok)
            return vkl_fail(b->ctx, VKL_ERR_FORMAT, "%s '%s': external data %s '%s' is not a byte count", what, name,
                            key, value);
    }
    if (!r->location || !*r->location)
        return vkl_fail(b->ctx, VKL_ERR_FORMAT, "%s '%s' has external data without a location", what, name);
    if (!location_is_safe(r->location))
        return vkl_fail(b->ctx, VKL_ERR_FORMAT,
                        "%s '%s': external data location '%s' is absolute or leaves the model's directory", what,
                        name, r->location);
    if (!b->base_dir)
        return vkl_fail(b->ctx, VKL_ERR_INVALID_ARGUMENT,
                        "%s '%s' has external data ('%s') but the model was read from memory without a directory",
                        what, name, r->location);
    return VKL_OK;
}

static vkl_status external_payload(onnx_builder *b, const Onnx__TensorProto *tp, const char *what,
                                   const char *name, vkl_dtype dtype, size_t nbytes, const void **data) {
    ext_ref r;
    vkl_status st = parse_ext_ref(b, tp, what, name, &r);
    if (st) return st;
    if (r.has_length && r.length != nbytes)
        return vkl_fail(b->ctx, VKL_ERR_FORMAT, "%s '%s': external data length %llu, but its dtype and dims need %zu",
                        what, name, (unsigned long long)r.length, nbytes);
    onnx_extfile *f;
    if ((st = get_extfile(b, r.location, &f))) return vkl_fail_prefix(b->ctx, st, "%s '%s'", what, name);
    if (r.offset > f->size || nbytes > f->size - r.offset)
        return vkl_fail(b->ctx, VKL_ERR_FORMAT,
                        "%s '%s': external data bytes [%llu, %llu + %zu) lie outside '%s' (%zu bytes)", what, name,
                        (unsigned long long)r.offset, (unsigned long long)r.offset, nbytes, r.location, f->size);
    *data = NULL;
    if (!nbytes) return VKL_OK;
    const uint8_t *p = f->map + r.offset;
    /* Kernels read elements in place: a misaligned tensor gets copied. */
    if ((uintptr_t)p % vkl_dtype_size(dtype)) {
        p = vkl_arena_memdup(&b->g->arena, p, nbytes);
        if (!p) return VKL_ERR_OUT_OF_MEMORY;
    }
    *data = p;
    return VKL_OK;
}

/* ---- whole tensors ----------------------------------------------------------- */

vkl_status onnx_tensor_payload(onnx_builder *b, Onnx__TensorProto *tp, const char *what, const char *name,
                               vkl_dtype *dtype, vkl_shape *shape, const void **data, size_t *nbytes) {
    if (!tp->has_data_type || !onnx_dtype_to_vkl(tp->data_type, dtype))
        return vkl_fail(b->ctx, VKL_ERR_UNSUPPORTED, "%s '%s' has element type %s (%d), which is not supported",
                        what, name, onnx_dtype_name(tp->data_type), (int)tp->data_type);
    if (tp->segment)
        return vkl_fail(b->ctx, VKL_ERR_UNSUPPORTED, "%s '%s' is a segment of a larger tensor", what, name);
    int64_t elements = 0;
    vkl_status st = tensor_shape(b, tp, what, name, shape, &elements);
    if (st) return st;
    if (!vkl_tensor_bytes(*dtype, 0, elements, nbytes))
        return vkl_fail(b->ctx, VKL_ERR_OVERFLOW, "%s '%s': byte size overflows", what, name);
    if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return external_payload(b, tp, what, name, *dtype, *nbytes, data);
    if (tp->has_data_location && tp->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__DEFAULT)
        return vkl_fail(b->ctx, VKL_ERR_FORMAT, "%s '%s' has unknown data_location %d", what, name,
                        (int)tp->data_location);
    if (!tp->has_raw_data) return typed_payload(b, tp, what, name, *dtype, elements, *nbytes, data);
    if (tp->raw_data.len != *nbytes)
        return vkl_fail(b->ctx, VKL_ERR_FORMAT, "%s '%s': raw_data holds %zu bytes; %lld %s elements need %zu", what,
                        name, tp->raw_data.len, (long long)elements, vkl_dtype_name(*dtype), *nbytes);
    *data = *nbytes ? tp->raw_data.data : NULL;
    return VKL_OK;
}

vkl_status onnx_tensor_to_weight(onnx_builder *b, Onnx__TensorProto *tp, const char *what, const char *base,
                                 const char *suffix, uint32_t *id) {
    vkl_dtype dtype;
    vkl_shape shape;
    const void *data;
    size_t nbytes;
    vkl_status st = onnx_tensor_payload(b, tp, what, base, &dtype, &shape, &data, &nbytes);
    if (st) return st;
    return onnx_add_weight(b, base, suffix, dtype, &shape, data, nbytes, false, id);
}
