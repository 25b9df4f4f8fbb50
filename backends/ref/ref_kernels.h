/* The ref backend's kernel interface: one portable C function per op, on
 * contiguous row-major tensors with concrete shapes. These functions are the
 * executable definition of each op's semantics: short, shape-annotated,
 * obviously right, in fp32 (f64 for f64 tensors), integers exact. */
#ifndef VKL_REF_KERNELS_H
#define VKL_REF_KERNELS_H

#include <stdbool.h>
#include <stdint.h>

#include "../../engine/graph.h"
#include "../../engine/ops.h"

typedef struct vkl_ref_tensor {
    void *data;         /* NULL for an absent optional input/output */
    vkl_dtype dtype;
    uint32_t rank;
    int64_t dims[VKL_MAX_RANK];
    int64_t count;      /* product of dims */
    uint32_t group;     /* quantization group (quantized weights) */
} vkl_ref_tensor;

/* Scratch memory owned by a prepared executable: it grows on first use and
 * is reused by every replay, so steady-state execution allocates nothing. */
typedef struct vkl_ref_scratch {
    void *data;
    size_t size;
} vkl_ref_scratch;

typedef struct vkl_ref_args {
    vkl_context *ctx;
    vkl_ref_scratch *scratch;
    const vkl_graph *g;
    uint32_t node;               /* for attributes: vkl_op_attr_*(g, node, ...) */
    const vkl_ref_tensor *in;    /* n_in entries, node input order */
    uint32_t n_in;
    vkl_ref_tensor *out;         /* n_out entries; shapes already set, data allocated */
    uint32_t n_out;
    void *backend;               /* the running backend's state for its own kernels (ref: NULL) */
} vkl_ref_args;

/* Outputs are fully written by the kernel (the harness poisons them first).
 * Errors (unsupported dtype, out-of-range index in data) via vkl_fail. */
typedef vkl_status (*vkl_ref_kernel)(const vkl_ref_args *a);

/* Indexed by vkl_op; defined in ref_kernels.c. Every op has an entry. */
extern const vkl_ref_kernel vkl_ref_kernels[VKL_OP_COUNT_];

/* At least `bytes` of 64-byte aligned scratch, valid until the kernel
 * returns (one buffer per call: split it for several). NULL (error set) when
 * out of memory. */
void *vkl_ref_scratch_get(const vkl_ref_args *a, size_t bytes);

/* Element access shared by kernels: read any plain dtype as double / int64,
 * write from double / int64 (float->int truncates toward zero as C casts,
 * bool stores v != 0). */
double vkl_ref_get_f(const vkl_ref_tensor *t, int64_t i);
int64_t vkl_ref_get_i(const vkl_ref_tensor *t, int64_t i);
void vkl_ref_set_f(vkl_ref_tensor *t, int64_t i, double v);
void vkl_ref_set_i(vkl_ref_tensor *t, int64_t i, int64_t v);

/* The first NaN or infinity in a floating-point tensor (f32, f64, f16,
 * bf16, fp8): true with its index and value; false for other dtypes (integers
 * cannot hold one; block formats keep their scales to themselves). */
bool vkl_ref_first_nonfinite(const vkl_ref_tensor *t, int64_t *index, double *value);

/* Row-major strides of a tensor (elements). */
void vkl_ref_strides(const vkl_ref_tensor *t, int64_t *strides);
/* For numpy broadcasting: offset in `src` of the element at multi-index
 * `idx` of an output of rank `out_rank` (src right-aligned, size-1 dims
 * broadcast). */
int64_t vkl_ref_broadcast_offset(const vkl_ref_tensor *src, const int64_t *idx, uint32_t out_rank);
/* Normalize a possibly negative axis against rank; false if out of range. */
bool vkl_ref_axis(int64_t axis, uint32_t rank, uint32_t *out);

#endif
