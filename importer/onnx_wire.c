/* Where a protobuf that protobuf-c rejected goes wrong: a walk over the
 * wire format of ModelProto, its graph and the graph's nodes/tensors that
 * names the byte offset of the first field that does not fit (truncated
 * downloads are the common case). Only reached on the error path. */
#include <stdio.h>
#include <string.h>

#include "onnx_internal.h"

static bool read_varint(const uint8_t *d, size_t *p, size_t end, uint64_t *out) {
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        if (*p >= end) return false;
        uint8_t byte = d[(*p)++];
        if (shift == 63 && byte > 1) return false;
        v |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

/* GraphProto fields holding messages worth descending into. */
static const char *graph_field_name(uint64_t field) {
    switch (field) {
    case 1: return "node";
    case 5: return "initializer";
    case 11: return "input";
    case 12: return "output";
    case 13: return "value_info";
    case 15: return "sparse_initializer";
    default: return NULL;
    }
}

static vkl_status walk(vkl_context *ctx, const uint8_t *d, size_t begin, size_t end, const char *where, int depth);

static vkl_status descend(vkl_context *ctx, const uint8_t *d, size_t begin, size_t end, int depth, uint64_t field,
                          uint32_t *counts, const char *where) {
    char sub[160];
    if (depth == 0 && field == 7) return walk(ctx, d, begin, end, "graph", 1);
    const char *fname = depth == 1 ? graph_field_name(field) : NULL;
    if (!fname) return VKL_OK;
    snprintf(sub, sizeof(sub), "%s.%s[%u]", where, fname, counts[field]++);
    return walk(ctx, d, begin, end, sub, 2);
}

static vkl_status walk(vkl_context *ctx, const uint8_t *d, size_t begin, size_t end, const char *where, int depth) {
    uint32_t counts[16] = {0};
    size_t p = begin;
    while (p < end) {
        size_t at = p;
        uint64_t key = 0, v = 0;
        if (!read_varint(d, &p, end, &key))
            return vkl_fail(ctx, VKL_ERR_FORMAT, "malformed protobuf: truncated field key at byte offset %zu (in %s)",
                            at, where);
        uint64_t field = key >> 3;
        unsigned wt = (unsigned)(key & 7);
        if (field == 0 || wt == 3 || wt == 4 || wt > 5)
            return vkl_fail(ctx, VKL_ERR_FORMAT,
                            "malformed protobuf: invalid field %llu / wire type %u at byte offset %zu (in %s)",
                            (unsigned long long)field, wt, at, where);
        bool ok = true;
        if (wt == 0) ok = read_varint(d, &p, end, &v);
        else if (wt == 1) ok = end - p >= 8 && (p += 8, true);
        else if (wt == 5) ok = end - p >= 4 && (p += 4, true);
        if (!ok)
            return vkl_fail(ctx, VKL_ERR_FORMAT,
                            "malformed protobuf: field %llu at byte offset %zu runs past the end of %s",
                            (unsigned long long)field, at, where);
        if (wt != 2) continue;
        if (!read_varint(d, &p, end, &v) || v > end - p)
            return vkl_fail(ctx, VKL_ERR_FORMAT,
                            "malformed protobuf: field %llu at byte offset %zu declares %llu bytes but %s ends %zu "
                            "bytes later (truncated file?)",
                            (unsigned long long)field, at, (unsigned long long)v, where, end - p);
        vkl_status st = field < 16 ? descend(ctx, d, p, p + (size_t)v, depth, field, counts, where) : VKL_OK;
        if (st) return st;
        p += (size_t)v;
    }
    return VKL_OK;
}

vkl_status onnx_wire_diagnose(vkl_context *ctx, const uint8_t *data, size_t size) {
    vkl_status st = walk(ctx, data, 0, size, "model", 0);
    if (st) return st;
    return vkl_fail(ctx, VKL_ERR_FORMAT,
                    "malformed protobuf: %zu bytes are not an ONNX ModelProto (a field has the wrong type or an "
                    "invalid value)",
                    size);
}
