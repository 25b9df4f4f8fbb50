/* Ops ref runs on one thread, spread over the pool by calling ref's own
 * kernel on slices of the tensors, so the bits and the checks stay ref's:
 *  - float Add, Sub, Mul, Div and SiluMul whose inputs all have the output's
 *    dims (a model's residual adds and gated FFN), as flat runs;
 *  - RoPE, one (batch, head) of X a slice.
 * On the 1B model these were ~4% of a 512-token prefill's CPU time, all on
 * one of the two threads. SiluMul on f32 runs this backend's vector kernel
 * instead where the CPU has one (x86/cpu_silu_avx2.c: exp by polynomial,
 * within a few ulp of ref, not its bits), at every size. The first slice
 * runs alone on the calling thread: any error about shapes, dtypes or
 * attributes is found there, with its message on the context, before
 * another thread starts; the other slices have the same shapes and dtypes
 * and compute in float, where ref's kernels do not fail. Small tensors (a
 * decode step's) go to ref whole (or to that SiluMul, on this thread). */
#include <string.h>

#include "../ref/elementwise.h"
#include "cpu_backend.h"

#define MIN_SLICE (16 * 1024) /* elements: below this the pool's hand-off costs more than the slice */
#define SLICES_PER_THREAD 4
#define MAX_IN 3

/* A float-only flat kernel of this backend (same-shape f32 operands). */
typedef void (*f32_binary_fn)(const float *x, const float *y, float *o, int64_t n);

typedef struct split_job {
    const vkl_ref_args *a;
    vkl_ref_kernel kernel;
    f32_binary_fn f32; /* instead of kernel, where set */
    bool rope;
    int64_t per, total; /* flat: elements a slice, and in all */
} split_job;

static vkl_ref_tensor flat_slice(const vkl_ref_tensor *t, int64_t start, int64_t n) {
    vkl_ref_tensor s = *t;
    s.data = (unsigned char *)t->data + (size_t)start * vkl_dtype_size(t->dtype);
    s.rank = 1;
    s.dims[0] = s.count = n;
    return s;
}

/* Slice i = (b, h) of X [B, H, S, D] as [1, 1, S, D]; cos / sin [B, S, R]
 * cut to batch b where they have one per batch. */
static vkl_ref_tensor rope_slice(const vkl_ref_tensor *t, const vkl_ref_tensor *x, int64_t i, bool is_x) {
    vkl_ref_tensor s = *t;
    const int64_t H = x->dims[1], b = i / H;
    if (is_x) {
        s.dims[0] = s.dims[1] = 1;
        s.count = t->dims[2] * t->dims[3];
        s.data = (unsigned char *)t->data + (size_t)(i * s.count) * vkl_dtype_size(t->dtype);
    } else if (t->rank == 3 && t->dims[0] != 1) {
        s.dims[0] = 1;
        s.count = t->dims[1] * t->dims[2];
        s.data = (unsigned char *)t->data + (size_t)(b * s.count) * vkl_dtype_size(t->dtype);
    }
    return s;
}

static vkl_status run_slice(const split_job *j, int64_t i) {
    const vkl_ref_args *a = j->a;
    vkl_ref_tensor in[MAX_IN], out;
    for (uint32_t k = 0; k < a->n_in; k++) {
        if (j->rope) in[k] = rope_slice(&a->in[k], &a->in[0], i, k == 0);
        else {
            const int64_t start = i * j->per;
            in[k] = flat_slice(&a->in[k], start, j->total - start < j->per ? j->total - start : j->per);
        }
    }
    out = j->rope ? rope_slice(&a->out[0], &a->in[0], i, true) : flat_slice(&a->out[0], i * j->per, in[0].count);
    if (j->f32) {
        j->f32(in[0].data, in[1].data, out.data, out.count);
        return VKL_OK;
    }
    vkl_ref_args s = *a;
    s.in = in;
    s.out = &out;
    return j->kernel(&s);
}

static void slice_task(void *user, size_t task, unsigned worker) {
    (void)worker;
    /* slice 0 ran first on the calling thread; float slices of its shapes cannot fail (above) */
    (void)run_slice(user, (int64_t)task + 1);
}

static vkl_status run_split(const vkl_ref_args *a, split_job *j, int64_t slices) {
    vkl_status st = run_slice(j, 0);
    if (!st && slices > 1) vkl_pool_run(((const vkl_backend_weights *)a->backend)->dev->pool, (size_t)(slices - 1),
                                        slice_task, j);
    return st;
}

static bool is_float(vkl_dtype t) {
    vkl_ref_ew_domain d;
    return vkl_ref_ew_domain_of(t, &d) && d != VKL_REF_EW_D_I64;
}

static int64_t slice_count(const vkl_ref_args *a, int64_t elements) {
    const int64_t most = (int64_t)vkl_pool_threads(((const vkl_backend_weights *)a->backend)->dev->pool) *
                         SLICES_PER_THREAD;
    const int64_t by_size = elements / MIN_SLICE;
    return by_size < most ? by_size : most;
}

/* This backend's own flat kernel for op on all-f32 operands, if it has one
 * on this CPU (NULL: ref's). */
static f32_binary_fn own_f32(const vkl_ref_args *a, vkl_op op) {
#ifdef VKL_CPU_HAVE_AVX2
    if (op == VKL_OP_SILU_MUL && (((const vkl_backend_weights *)a->backend)->dev->isa & VKL_ISA_AVX2))
        return vkl_cpu_silu_mul_avx2;
#endif
    (void)a, (void)op;
    return NULL;
}

static vkl_status binary(const vkl_ref_args *a, vkl_op op) {
    const vkl_ref_kernel kernel = vkl_ref_kernels[op];
    const vkl_ref_tensor *y = &a->out[0];
    bool same = a->n_in == 2 && a->n_out == 1 && is_float(y->dtype), all_f32 = same && y->dtype == VKL_DTYPE_F32;
    for (uint32_t k = 0; same && k < a->n_in; k++) {
        same = a->in[k].data && is_float(a->in[k].dtype) && a->in[k].rank == y->rank &&
               !memcmp(a->in[k].dims, y->dims, y->rank * sizeof(int64_t));
        all_f32 = all_f32 && a->in[k].dtype == VKL_DTYPE_F32;
    }
    const f32_binary_fn f32 = same && all_f32 && y->data ? own_f32(a, op) : NULL;
    const int64_t slices = same ? slice_count(a, y->count) : 0;
    if (slices < 2 && f32) { /* small (a decode step's): whole, here */
        f32(a->in[0].data, a->in[1].data, y->data, y->count);
        return VKL_OK;
    }
    if (slices < 2) return kernel(a);
    split_job j = {a, kernel, f32, false, (y->count + slices - 1) / slices, y->count};
    return run_split(a, &j, (y->count + j.per - 1) / j.per);
}

vkl_status vkl_cpu_add(const vkl_ref_args *a) { return binary(a, VKL_OP_ADD); }
vkl_status vkl_cpu_sub(const vkl_ref_args *a) { return binary(a, VKL_OP_SUB); }
vkl_status vkl_cpu_mul(const vkl_ref_args *a) { return binary(a, VKL_OP_MUL); }
vkl_status vkl_cpu_div(const vkl_ref_args *a) { return binary(a, VKL_OP_DIV); }
vkl_status vkl_cpu_silu_mul(const vkl_ref_args *a) { return binary(a, VKL_OP_SILU_MUL); }

vkl_status vkl_cpu_rope(const vkl_ref_args *a) {
    const vkl_ref_kernel kernel = vkl_ref_kernels[VKL_OP_ROPE];
    const vkl_ref_tensor *x = &a->in[0];
    const bool plain = a->n_in == 3 && a->n_out == 1 && x->rank == 4 && a->out[0].rank == 4 &&
                       !memcmp(x->dims, a->out[0].dims, 4 * sizeof(int64_t)) && is_float(x->dtype) &&
                       is_float(a->out[0].dtype) && a->in[1].data && a->in[2].data &&
                       /* cos and sin alike and cut alike: a mismatch ref reports whole */
                       a->in[1].rank == a->in[2].rank && !memcmp(a->in[1].dims, a->in[2].dims, a->in[1].rank * sizeof(int64_t)) &&
                       (a->in[1].rank != 3 || a->in[1].dims[0] == 1 || a->in[1].dims[0] == x->dims[0]);
    const int64_t heads = plain ? x->dims[0] * x->dims[1] : 0;
    if (heads < 2 || slice_count(a, x->count) < 2) return kernel(a);
    split_job j = {a, kernel, NULL, true, 0, 0};
    return run_split(a, &j, heads);
}
