/* Broadcast rows, dtype <-> compute-domain chunk conversion and the map
 * driver shared by the elementwise ref kernels (elementwise.h). */
#include <stdio.h>
#include <string.h>

#include "elementwise.h"

/* Elements converted per step: small enough for the stack and L1. */
#define CHUNK 256

bool vkl_ref_ew_domain_of(vkl_dtype t, vkl_ref_ew_domain *out) {
    switch (t) {
    case VKL_DTYPE_F32: case VKL_DTYPE_F16: case VKL_DTYPE_BF16: *out = VKL_REF_EW_D_F32; return true;
    case VKL_DTYPE_F64: *out = VKL_REF_EW_D_F64; return true;
    case VKL_DTYPE_I64: case VKL_DTYPE_I32: case VKL_DTYPE_I16: case VKL_DTYPE_I8:
    case VKL_DTYPE_U64: case VKL_DTYPE_U32: case VKL_DTYPE_U16: case VKL_DTYPE_U8:
    case VKL_DTYPE_BOOL: *out = VKL_REF_EW_D_I64; return true;
    default: return false;
    }
}

static const char *op_name(const vkl_ref_args *a) {
    const vkl_op_info *info = vkl_op_info_get((vkl_op)a->g->nodes[a->node].op);
    return info ? info->name : "?";
}

vkl_status vkl_ref_ew_unsupported(const vkl_ref_args *a, vkl_dtype t) {
    return vkl_fail(a->ctx, VKL_ERR_UNSUPPORTED, "%s does not support dtype %s", op_name(a), vkl_dtype_name(t));
}

const vkl_ref_tensor *vkl_ref_ew_in(const vkl_ref_args *a, uint32_t k) {
    return k < a->n_in && a->in[k].data ? &a->in[k] : NULL;
}

vkl_status vkl_ref_ew_check_scalar(const vkl_ref_args *a, uint32_t k, const char *what) {
    const vkl_ref_tensor *t = vkl_ref_ew_in(a, k);
    vkl_ref_ew_domain d;
    if (!t) return VKL_OK;
    if (!vkl_ref_ew_domain_of(t->dtype, &d)) return vkl_ref_ew_unsupported(a, t->dtype);
    if (t->count == 1) return VKL_OK;
    return vkl_fail(a->ctx, VKL_ERR_SHAPE, "%s: input %u (%s) must hold one element; it holds %lld", op_name(a), k,
                    what, (long long)t->count);
}

static const char *dims_str(const vkl_ref_tensor *t, char *buf, size_t cap) {
    size_t used = (size_t)snprintf(buf, cap, "[");
    for (uint32_t d = 0; d < t->rank && used < cap; d++)
        used += (size_t)snprintf(buf + used, cap - used, d ? ", %lld" : "%lld", (long long)t->dims[d]);
    if (used < cap) snprintf(buf + used, cap - used, "]");
    return buf;
}

/* Does operand t (right-aligned against out) stay on one element along
 * output dim d? It does where it lacks the dim or has size 1 there. */
static bool stays(const vkl_ref_tensor *t, const vkl_ref_tensor *out, uint32_t d) {
    int32_t td = (int32_t)d - (int32_t)(out->rank - t->rank);
    return td < 0 || t->dims[td] == 1;
}

/* numpy broadcasting, checked on run-time dims. */
static bool broadcasts_to(const vkl_ref_tensor *t, const vkl_ref_tensor *out) {
    if (t->rank > out->rank) return false;
    for (uint32_t d = 0; d < out->rank; d++)
        if (!stays(t, out, d) && t->dims[d - (out->rank - t->rank)] != out->dims[d]) return false;
    return true;
}

vkl_status vkl_ref_ew_rows_init(const vkl_ref_args *a, const vkl_ref_tensor *out, const vkl_ref_tensor *const *in,
                                uint32_t n, vkl_ref_ew_rows *r) {
    memset(r, 0, sizeof(*r));
    r->n = n;
    for (uint32_t k = 0; k < n; k++) {
        if (broadcasts_to(in[k], out)) continue;
        char s1[128], s2[128];
        return vkl_fail(a->ctx, VKL_ERR_SHAPE, "%s: input %u of shape %s does not broadcast to the output shape %s",
                        op_name(a), k, dims_str(in[k], s1, sizeof(s1)), dims_str(out, s2, sizeof(s2)));
    }
    /* The run: the longest suffix of output dims along which each operand
     * either always advances or always stays (dims of size 1 fit both). */
    int mode[VKL_REF_EW_MAX_IN] = {0}; /* 0 undecided, 1 advances, 2 stays */
    uint32_t split = out->rank;
    r->run = 1;
    for (; split > 0; split--) {
        uint32_t d = split - 1;
        int m[VKL_REF_EW_MAX_IN];
        bool fits = true;
        for (uint32_t k = 0; k < n; k++) {
            m[k] = out->dims[d] == 1 ? mode[k] : stays(in[k], out, d) ? 2 : 1;
            if (mode[k] && m[k] != mode[k]) fits = false;
        }
        if (!fits) break;
        memcpy(mode, m, n * sizeof(int));
        r->run *= out->dims[d];
    }
    for (uint32_t k = 0; k < n; k++) {
        int64_t strides[VKL_MAX_RANK];
        vkl_ref_strides(in[k], strides);
        r->step[k] = mode[k] == 1;
        for (uint32_t d = 0; d < split; d++)
            r->outer_stride[k][d] = stays(in[k], out, d) ? 0 : strides[d - (out->rank - in[k]->rank)];
    }
    r->outer_rank = split;
    r->rows = r->run ? 1 : 0;
    for (uint32_t d = 0; d < split; d++) {
        r->outer_dims[d] = out->dims[d];
        r->rows *= out->dims[d];
    }
    return VKL_OK;
}

void vkl_ref_ew_rows_offsets(const vkl_ref_ew_rows *r, int64_t row, int64_t *offsets) {
    for (uint32_t k = 0; k < r->n; k++) offsets[k] = 0;
    for (int32_t d = (int32_t)r->outer_rank - 1; d >= 0; d--) {
        int64_t idx = row % r->outer_dims[d];
        row /= r->outer_dims[d];
        for (uint32_t k = 0; k < r->n; k++) offsets[k] += idx * r->outer_stride[k][d];
    }
}

/* n elements of t from element off, stepping by step (0 or 1), into buf as
 * the domain's C type. */
static void load(const vkl_ref_tensor *t, int64_t off, int64_t step, int64_t n, vkl_ref_ew_domain d, void *buf) {
    const unsigned char *p = t->data;
    int64_t m = step ? n : 1; /* broadcast: convert one, then repeat it */
    if (d == VKL_REF_EW_D_F32) {
        float *o = buf;
        if (t->dtype == VKL_DTYPE_F32) memcpy(o, p + off * 4, (size_t)m * 4);
        else if (t->dtype == VKL_DTYPE_F16)
            for (int64_t i = 0; i < m; i++) {
                uint16_t h;
                memcpy(&h, p + (off + i) * 2, 2);
                o[i] = vkl_f16_to_f32(h);
            }
        else if (t->dtype == VKL_DTYPE_BF16)
            for (int64_t i = 0; i < m; i++) {
                uint16_t h;
                memcpy(&h, p + (off + i) * 2, 2);
                o[i] = vkl_bf16_to_f32(h);
            }
        else
            for (int64_t i = 0; i < m; i++) o[i] = (float)vkl_ref_get_f(t, off + i);
        for (int64_t i = m; i < n; i++) o[i] = o[0];
    } else if (d == VKL_REF_EW_D_F64) {
        double *o = buf;
        if (t->dtype == VKL_DTYPE_F64) memcpy(o, p + off * 8, (size_t)m * 8);
        else
            for (int64_t i = 0; i < m; i++) o[i] = vkl_ref_get_f(t, off + i);
        for (int64_t i = m; i < n; i++) o[i] = o[0];
    } else {
        int64_t *o = buf;
        if (t->dtype == VKL_DTYPE_I64 || t->dtype == VKL_DTYPE_U64) memcpy(o, p + off * 8, (size_t)m * 8);
        else
            for (int64_t i = 0; i < m; i++) o[i] = vkl_ref_get_i(t, off + i);
        for (int64_t i = m; i < n; i++) o[i] = o[0];
    }
}

/* n domain values from buf into t at element off, rounded/wrapped to t's
 * dtype. */
static void store(vkl_ref_tensor *t, int64_t off, int64_t n, vkl_ref_ew_domain d, const void *buf) {
    unsigned char *p = t->data;
    if (d == VKL_REF_EW_D_F32) {
        const float *v = buf;
        if (t->dtype == VKL_DTYPE_F32) memcpy(p + off * 4, v, (size_t)n * 4);
        else if (t->dtype == VKL_DTYPE_F16)
            for (int64_t i = 0; i < n; i++) {
                uint16_t h = vkl_f32_to_f16(v[i]);
                memcpy(p + (off + i) * 2, &h, 2);
            }
        else if (t->dtype == VKL_DTYPE_BF16)
            for (int64_t i = 0; i < n; i++) {
                uint16_t h = vkl_f32_to_bf16(v[i]);
                memcpy(p + (off + i) * 2, &h, 2);
            }
        else
            for (int64_t i = 0; i < n; i++) vkl_ref_set_f(t, off + i, v[i]);
    } else if (d == VKL_REF_EW_D_F64) {
        const double *v = buf;
        if (t->dtype == VKL_DTYPE_F64) memcpy(p + off * 8, v, (size_t)n * 8);
        else
            for (int64_t i = 0; i < n; i++) vkl_ref_set_f(t, off + i, v[i]);
    } else {
        const int64_t *v = buf;
        if (t->dtype == VKL_DTYPE_I64 || t->dtype == VKL_DTYPE_U64) memcpy(p + off * 8, v, (size_t)n * 8);
        else
            for (int64_t i = 0; i < n; i++) vkl_ref_set_i(t, off + i, v[i]);
    }
}

/* Does t hold the domain's own C type, aligned, so chunks can be used in
 * place without conversion? (u64 bits are the int64 domain's bits.) */
static bool native(const vkl_ref_tensor *t, vkl_ref_ew_domain d) {
    size_t align = d == VKL_REF_EW_D_F32 ? _Alignof(float) : d == VKL_REF_EW_D_F64 ? _Alignof(double) : _Alignof(int64_t);
    bool same = d == VKL_REF_EW_D_F32   ? t->dtype == VKL_DTYPE_F32
                : d == VKL_REF_EW_D_F64 ? t->dtype == VKL_DTYPE_F64
                                         : t->dtype == VKL_DTYPE_I64 || t->dtype == VKL_DTYPE_U64;
    return same && (uintptr_t)t->data % align == 0;
}

vkl_status vkl_ref_ew_map(const vkl_ref_args *a, vkl_ref_ew_domain d, const vkl_ref_tensor *const *in, uint32_t n_in,
                          vkl_ref_tensor *out, vkl_ref_ew_fn fn, const void *user) {
    union chunk {
        float f32[CHUNK];
        double f64[CHUNK];
        int64_t i64[CHUNK];
    } bufs[VKL_REF_EW_MAX_IN + 1];
    vkl_ref_ew_rows r;
    vkl_status st = vkl_ref_ew_rows_init(a, out, in, n_in, &r);
    if (st) return st;
    /* Operands that advance and are native are read in place; the others
     * (conversions, broadcast scalars) go through a chunk buffer. */
    size_t es = d == VKL_REF_EW_D_F32 ? sizeof(float) : sizeof(int64_t);
    bool in_place[VKL_REF_EW_MAX_IN], out_in_place = native(out, d);
    for (uint32_t k = 0; k < n_in; k++) in_place[k] = r.step[k] && native(in[k], d);
    const void *src[VKL_REF_EW_MAX_IN];
    int64_t off[VKL_REF_EW_MAX_IN];
    for (int64_t row = 0; row < r.rows; row++) {
        int64_t base = row * r.run;
        vkl_ref_ew_rows_offsets(&r, row, off);
        for (int64_t c = 0; c < r.run; c += CHUNK) {
            int64_t n = r.run - c < CHUNK ? r.run - c : CHUNK;
            for (uint32_t k = 0; k < n_in; k++) {
                int64_t at = off[k] + c * r.step[k];
                if (in_place[k]) {
                    src[k] = (const unsigned char *)in[k]->data + at * (int64_t)es;
                } else {
                    load(in[k], at, r.step[k], n, d, &bufs[k]);
                    src[k] = &bufs[k];
                }
            }
            void *dst = out_in_place ? (unsigned char *)out->data + (base + c) * (int64_t)es : (void *)&bufs[n_in];
            if ((st = fn(user, src, dst, n))) return st;
            if (!out_in_place) store(out, base + c, n, d, &bufs[n_in]);
        }
    }
    return VKL_OK;
}
