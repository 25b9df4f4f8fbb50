/* QuantMatMul and MatMul with a repacked weight on f32 activations:
 * vkl_cpu_gemm. Everything else (f16/bf16 activations, a weight left in
 * place, a shape ref would refuse) goes to ref's kernel, which also writes
 * the error message. */
#include "../ref/ref_ops.h"
#include "cpu_backend.h"

static const vkl_cpu_weight *weight_of(const vkl_ref_args *a) {
    const vkl_backend_weights *w = a->backend;
    const uint32_t t = a->g->nodes[a->node].inputs[1];
    return t < w->g->n_tensors ? w->by_tensor[t] : NULL; /* the graph it was loaded from: a derived one has more */
}

/* A [..., K] f32 against W (K, N) -> Y [..., N] f32, every count matching. */
static bool fits(const vkl_ref_args *a, const vkl_cpu_weight *w, int64_t *M) {
    const vkl_ref_tensor *A = &a->in[0], *Y = &a->out[0];
    if (!w || A->dtype != VKL_DTYPE_F32 || Y->dtype != VKL_DTYPE_F32 || A->rank < 1 || Y->rank < 1) return false;
    if (A->dims[A->rank - 1] != w->K || Y->dims[Y->rank - 1] != w->N) return false;
    *M = A->count / w->K;
    return Y->count == *M * w->N;
}

vkl_status vkl_cpu_quant_mat_mul(const vkl_ref_args *a) {
    const vkl_cpu_weight *w = weight_of(a);
    const vkl_ref_tensor *bias = a->n_in > 2 && a->in[2].data ? &a->in[2] : NULL;
    int64_t M;
    if (!fits(a, w, &M) || (bias && (bias->dtype != VKL_DTYPE_F32 || bias->count != w->N)))
        return vkl_ref_quant_mat_mul(a);
    return vkl_cpu_gemm(a, w, a->in[0].data, M, bias ? bias->data : NULL, a->out[0].data);
}

vkl_status vkl_cpu_mat_mul(const vkl_ref_args *a) {
    const vkl_cpu_weight *w = weight_of(a);
    int64_t M;
    /* B a weight [K, N]: A's leading dims are all batch rows */
    if (a->in[1].rank != 2 || !fits(a, w, &M)) return vkl_ref_mat_mul(a);
    return vkl_cpu_gemm(a, w, a->in[0].data, M, NULL, a->out[0].data);
}
