/* .npy parsing: magic, version, header length, then a Python dict literal
 * with 'descr', 'fortran_order' and 'shape', then the raw array. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npy.h"

static const struct {
    const char *descr;
    vkl_dtype dtype;
} descrs[] = {
    {"<f4", VKL_DTYPE_F32}, {"<f8", VKL_DTYPE_F64}, {"<f2", VKL_DTYPE_F16}, {"<i8", VKL_DTYPE_I64},
    {"<i4", VKL_DTYPE_I32}, {"<i2", VKL_DTYPE_I16}, {"|i1", VKL_DTYPE_I8},  {"|u1", VKL_DTYPE_U8},
    {"|b1", VKL_DTYPE_BOOL}, {"<u2", VKL_DTYPE_U16}, {"<u4", VKL_DTYPE_U32}, {"<u8", VKL_DTYPE_U64},
};

/* The value text after 'key': in the header dict, or NULL. */
static const char *dict_value(const char *h, size_t n, const char *key) {
    size_t kl = strlen(key);
    for (size_t i = 0; i + kl + 2 < n; i++) {
        if ((h[i] != '\'' && h[i] != '"') || memcmp(h + i + 1, key, kl) || h[i + 1 + kl] != h[i]) continue;
        size_t j = i + kl + 2;
        while (j < n && (h[j] == ' ' || h[j] == ':')) j++;
        return j < n ? h + j : NULL;
    }
    return NULL;
}

vkl_status vkl_npy_parse(vkl_context *ctx, const char *name, const void *bytes, size_t size, vkl_host_tensor *t) {
    const unsigned char *b = bytes;
    memset(t, 0, sizeof(*t));
    if (size < 10 || memcmp(b, "\x93NUMPY", 6))
        return vkl_fail(ctx, VKL_ERR_FORMAT, "%s: not a .npy file (bad magic)", name);
    size_t hlen, hstart;
    if (b[6] == 1) {
        hlen = (size_t)b[8] | (size_t)b[9] << 8;
        hstart = 10;
    } else if (b[6] == 2 || b[6] == 3) {
        if (size < 12) return vkl_fail(ctx, VKL_ERR_FORMAT, "%s: truncated header", name);
        hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        hstart = 12;
    } else {
        return vkl_fail(ctx, VKL_ERR_UNSUPPORTED, "%s: .npy version %u not supported", name, b[6]);
    }
    if (hlen > size - hstart) return vkl_fail(ctx, VKL_ERR_FORMAT, "%s: header runs past the end of the file", name);
    const char *h = (const char *)b + hstart;
    const char *descr = dict_value(h, hlen, "descr");
    const char *order = dict_value(h, hlen, "fortran_order");
    const char *shape = dict_value(h, hlen, "shape");
    if (!descr || !order || !shape) return vkl_fail(ctx, VKL_ERR_FORMAT, "%s: header lacks descr/fortran_order/shape", name);
    if (!strncmp(order, "True", 4)) return vkl_fail(ctx, VKL_ERR_UNSUPPORTED, "%s: Fortran order not supported", name);
    t->dtype = VKL_DTYPE_INVALID;
    for (size_t i = 0; i < sizeof(descrs) / sizeof(descrs[0]); i++)
        if ((size_t)(h + hlen - descr) > 4 && !strncmp(descr + 1, descrs[i].descr, 3)) t->dtype = descrs[i].dtype;
    if (t->dtype == VKL_DTYPE_INVALID) return vkl_fail(ctx, VKL_ERR_UNSUPPORTED, "%s: dtype %.5s not supported", name, descr);
    if (*shape != '(') return vkl_fail(ctx, VKL_ERR_FORMAT, "%s: shape is not a tuple", name);
    const char *p = shape + 1, *end = h + hlen;
    int64_t count = 1;
    while (p < end && *p != ')') {
        if (*p == ' ' || *p == ',') {
            p++;
            continue;
        }
        if (*p < '0' || *p > '9') return vkl_fail(ctx, VKL_ERR_FORMAT, "%s: bad character in shape", name);
        if (t->rank == VKL_MAX_RANK) return vkl_fail(ctx, VKL_ERR_UNSUPPORTED, "%s: rank above %d", name, VKL_MAX_RANK);
        int64_t d = 0;
        while (p < end && *p >= '0' && *p <= '9') {
            if (!vkl_mul_i64(d, 10, &d) || !vkl_add_i64(d, *p - '0', &d))
                return vkl_fail(ctx, VKL_ERR_FORMAT, "%s: dim overflows", name);
            p++;
        }
        t->dims[t->rank++] = d;
        if (!vkl_mul_i64(count, d, &count)) return vkl_fail(ctx, VKL_ERR_FORMAT, "%s: element count overflows", name);
    }
    if (p >= end) return vkl_fail(ctx, VKL_ERR_FORMAT, "%s: unterminated shape", name);
    if (!vkl_tensor_bytes(t->dtype, 0, count, &t->nbytes) || t->nbytes != size - hstart - hlen)
        return vkl_fail(ctx, VKL_ERR_FORMAT, "%s: %zu data bytes, shape and dtype need %zu", name, size - hstart - hlen,
                        t->nbytes);
    t->data = vkl_malloc(ctx, t->nbytes);
    if (!t->data) return VKL_ERR_OUT_OF_MEMORY;
    if (t->nbytes) memcpy(t->data, b + hstart + hlen, t->nbytes);
    return VKL_OK;
}

vkl_status vkl_npy_read(vkl_context *ctx, const char *path, vkl_host_tensor *t) {
    memset(t, 0, sizeof(*t));
    FILE *f = fopen(path, "rb");
    if (!f) return vkl_fail(ctx, VKL_ERR_IO, "%s: cannot open", path);
    vkl_status st = VKL_OK;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0) n = ftell(f);
    unsigned char *buf = n >= 0 ? vkl_malloc(ctx, (size_t)n) : NULL;
    if (n < 0) st = vkl_fail(ctx, VKL_ERR_IO, "%s: cannot size", path);
    else if (!buf) st = VKL_ERR_OUT_OF_MEMORY;
    else if (fseek(f, 0, SEEK_SET) || fread(buf, 1, (size_t)n, f) != (size_t)n)
        st = vkl_fail(ctx, VKL_ERR_IO, "%s: read failed", path);
    fclose(f);
    if (!st) st = vkl_npy_parse(ctx, path, buf, (size_t)n, t);
    vkl_free(ctx, buf);
    return st;
}
