/* The ref kernel table (one entry per op, named vkl_ref_<op> and defined in
 * backends/ref/<family>.c) and the element access helpers kernels share. */
#include <math.h>
#include <string.h>

#include "../../engine/op_list.h"
#include "ref_kernels.h"

/* Weak while the families are being filled in: a missing kernel is NULL and
 * prepare() reports the op as unsupported. */
#define VKL_DECLARE_KERNEL(E, n) vkl_status vkl_ref_##n(const vkl_ref_args *a);
VKL_OP_LIST(VKL_DECLARE_KERNEL)

#define VKL_KERNEL_ENTRY(E, n) [VKL_OP_##E] = vkl_ref_##n,
const vkl_ref_kernel vkl_ref_kernels[VKL_OP_COUNT_] = {VKL_OP_LIST(VKL_KERNEL_ENTRY)};

void *vkl_ref_scratch_get(const vkl_ref_args *a, size_t bytes) {
    vkl_ref_scratch *s = a->scratch;
    if (s->size < bytes) {
        void *p = vkl_realloc(a->ctx, s->data, bytes);
        if (!p) return NULL;
        s->data = p;
        s->size = bytes;
    }
    return s->data;
}

double vkl_ref_get_f(const vkl_ref_tensor *t, int64_t i) {
    const unsigned char *p = t->data;
    switch (t->dtype) {
    case VKL_DTYPE_F32: { float x; memcpy(&x, p + i * 4, 4); return x; }
    case VKL_DTYPE_F64: { double x; memcpy(&x, p + i * 8, 8); return x; }
    case VKL_DTYPE_F16: { uint16_t x; memcpy(&x, p + i * 2, 2); return vkl_f16_to_f32(x); }
    case VKL_DTYPE_BF16: { uint16_t x; memcpy(&x, p + i * 2, 2); return vkl_bf16_to_f32(x); }
    case VKL_DTYPE_I64: case VKL_DTYPE_U64: case VKL_DTYPE_I32: case VKL_DTYPE_U32: case VKL_DTYPE_I16:
    case VKL_DTYPE_U16: case VKL_DTYPE_I8: case VKL_DTYPE_U8: case VKL_DTYPE_BOOL:
        return (double)vkl_ref_get_i(t, i);
    default: return NAN; /* fp8 and block formats: kernels convert those themselves */
    }
}

int64_t vkl_ref_get_i(const vkl_ref_tensor *t, int64_t i) {
    const unsigned char *p = t->data;
    switch (t->dtype) {
    case VKL_DTYPE_I64: { int64_t x; memcpy(&x, p + i * 8, 8); return x; }
    case VKL_DTYPE_U64: { uint64_t x; memcpy(&x, p + i * 8, 8); return (int64_t)x; }
    case VKL_DTYPE_I32: { int32_t x; memcpy(&x, p + i * 4, 4); return x; }
    case VKL_DTYPE_U32: { uint32_t x; memcpy(&x, p + i * 4, 4); return x; }
    case VKL_DTYPE_I16: { int16_t x; memcpy(&x, p + i * 2, 2); return x; }
    case VKL_DTYPE_U16: { uint16_t x; memcpy(&x, p + i * 2, 2); return x; }
    case VKL_DTYPE_I8: return (int8_t)p[i];
    case VKL_DTYPE_U8: case VKL_DTYPE_BOOL: return p[i];
    case VKL_DTYPE_F32: case VKL_DTYPE_F64: case VKL_DTYPE_F16: case VKL_DTYPE_BF16: {
        double d = vkl_ref_get_f(t, i);
        /* C casts of NaN/out-of-range floats are undefined: saturate. */
        if (d != d) return 0;
        if (d >= 9.2233720368547758e18) return INT64_MAX;
        if (d <= -9.2233720368547758e18) return INT64_MIN;
        return (int64_t)d;
    }
    default: return 0; /* fp8 and block formats: kernels convert those themselves */
    }
}

void vkl_ref_set_f(vkl_ref_tensor *t, int64_t i, double v) {
    unsigned char *p = t->data;
    switch (t->dtype) {
    case VKL_DTYPE_F32: { float x = (float)v; memcpy(p + i * 4, &x, 4); return; }
    case VKL_DTYPE_F64: memcpy(p + i * 8, &v, 8); return;
    case VKL_DTYPE_F16: { uint16_t x = vkl_f32_to_f16((float)v); memcpy(p + i * 2, &x, 2); return; }
    case VKL_DTYPE_BF16: { uint16_t x = vkl_f32_to_bf16((float)v); memcpy(p + i * 2, &x, 2); return; }
    case VKL_DTYPE_BOOL: p[i] = v != 0; return;
    case VKL_DTYPE_I64: case VKL_DTYPE_U64: case VKL_DTYPE_I32: case VKL_DTYPE_U32: case VKL_DTYPE_I16:
    case VKL_DTYPE_U16: case VKL_DTYPE_I8: case VKL_DTYPE_U8: {
        int64_t x;
        if (v != v) x = 0;
        else if (v >= 9.2233720368547758e18) x = INT64_MAX;
        else if (v <= -9.2233720368547758e18) x = INT64_MIN;
        else x = (int64_t)v;
        vkl_ref_set_i(t, i, x);
        return;
    }
    default: return; /* fp8 and block formats: kernels convert those themselves */
    }
}

void vkl_ref_set_i(vkl_ref_tensor *t, int64_t i, int64_t v) {
    unsigned char *p = t->data;
    switch (t->dtype) {
    case VKL_DTYPE_I64: case VKL_DTYPE_U64: memcpy(p + i * 8, &v, 8); return;
    case VKL_DTYPE_I32: case VKL_DTYPE_U32: { uint32_t x = (uint32_t)v; memcpy(p + i * 4, &x, 4); return; }
    case VKL_DTYPE_I16: case VKL_DTYPE_U16: { uint16_t x = (uint16_t)v; memcpy(p + i * 2, &x, 2); return; }
    case VKL_DTYPE_I8: case VKL_DTYPE_U8: p[i] = (unsigned char)v; return;
    case VKL_DTYPE_BOOL: p[i] = v != 0; return;
    case VKL_DTYPE_F32: case VKL_DTYPE_F64: case VKL_DTYPE_F16: case VKL_DTYPE_BF16:
        vkl_ref_set_f(t, i, (double)v);
        return;
    default: return; /* fp8 and block formats: kernels convert those themselves */
    }
}

void vkl_ref_strides(const vkl_ref_tensor *t, int64_t *strides) {
    int64_t s = 1;
    for (int32_t d = (int32_t)t->rank - 1; d >= 0; d--) {
        strides[d] = s;
        s *= t->dims[d];
    }
}

int64_t vkl_ref_broadcast_offset(const vkl_ref_tensor *src, const int64_t *idx, uint32_t out_rank) {
    int64_t off = 0, stride = 1;
    for (int32_t d = (int32_t)src->rank - 1; d >= 0; d--) {
        int32_t od = (int32_t)out_rank - (int32_t)src->rank + d;
        int64_t i = src->dims[d] == 1 ? 0 : idx[od];
        off += i * stride;
        stride *= src->dims[d];
    }
    return off;
}

bool vkl_ref_axis(int64_t axis, uint32_t rank, uint32_t *out) {
    if (axis < -(int64_t)rank || axis >= (int64_t)rank) return false;
    *out = (uint32_t)(axis < 0 ? axis + (int64_t)rank : axis);
    return true;
}
