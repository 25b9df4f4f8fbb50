/* Ref kernels for matrix products: MatMul and Gemm. f32 runs on float
 * pointers in a cache-friendly order (fast enough for small LLMs on the
 * ref backend); other floats accumulate in double, integers exactly. */
#include "nn_util.h"
#include "ref_ops.h"

/* A matrix view: element (r, c) is t's element off + r * rs + c * cs. */
typedef struct mat {
    const vkl_ref_tensor *t;
    int64_t off, rs, cs;
} mat;

/* Gemm's epilogue: y = alpha * (A B) + beta * C[broadcast], or NULL for MatMul. */
typedef struct epilogue {
    double alpha, beta;
    const vkl_ref_tensor *c; /* broadcast to [M, N], or NULL */
    int64_t mn[2];
} epilogue;

static double finish(const epilogue *e, int64_t i, int64_t j, double ab) {
    if (!e) return ab;
    double v = e->alpha * ab;
    if (e->c) v += e->beta * vkl_ref_get_f(e->c, vkl_ref_nn_broadcast_flat(e->c, e->mn, 2, i * e->mn[1] + j));
    return v;
}

/* Row i of an f32 product: y[j] = sum over k = 0..K-1 of A(i,k) * B(k,j),
 * accumulated in float in that order. With B's rows contiguous the loop is
 * i-k-j (streams B row by row); with B transposed, per-output dot products
 * over contiguous rows of B^T. */
static void row_f32(mat a, int64_t i, mat b, int64_t K, int64_t N, float *y) {
    const float *ap = (const float *)a.t->data + a.off + i * a.rs, *bp = (const float *)b.t->data + b.off;
    if (b.cs == 1) {
        for (int64_t j = 0; j < N; j++) y[j] = 0;
        for (int64_t k = 0; k < K; k++) {
            float av = ap[k * a.cs];
            const float *brow = bp + k * b.rs;
            for (int64_t j = 0; j < N; j++) y[j] += av * brow[j];
        }
    } else {
        for (int64_t j = 0; j < N; j++) {
            float s = 0;
            for (int64_t k = 0; k < K; k++) s += ap[k * a.cs] * bp[k * b.rs + j * b.cs];
            y[j] = s;
        }
    }
}

/* Row i of a product in any other float type: double accumulation, k ascending. */
static void row_f64(mat a, int64_t i, mat b, int64_t K, int64_t N, double *acc) {
    for (int64_t j = 0; j < N; j++) acc[j] = 0;
    for (int64_t k = 0; k < K; k++) {
        double av = vkl_ref_get_f(a.t, a.off + i * a.rs + k * a.cs);
        for (int64_t j = 0; j < N; j++) acc[j] += av * vkl_ref_get_f(b.t, b.off + k * b.rs + j * b.cs);
    }
}

/* Row i of an integer product: exact, wrapping (uint64 arithmetic). */
static void row_int(mat a, int64_t i, mat b, int64_t K, int64_t N, uint64_t *acc) {
    for (int64_t j = 0; j < N; j++) acc[j] = 0;
    for (int64_t k = 0; k < K; k++) {
        uint64_t av = (uint64_t)vkl_ref_get_i(a.t, a.off + i * a.rs + k * a.cs);
        for (int64_t j = 0; j < N; j++) acc[j] += av * (uint64_t)vkl_ref_get_i(b.t, b.off + k * b.rs + j * b.cs);
    }
}

/* Y[y_off .. + M*N) (row-major [M, N]) = finish(A [M, K] @ B [K, N]).
 * scratch holds N doubles (unused for f32). */
static void matmul_block(mat a, mat b, vkl_ref_tensor *y, int64_t y_off, int64_t M, int64_t K, int64_t N,
                         const epilogue *e, void *scratch) {
    for (int64_t i = 0; i < M; i++) {
        int64_t yi = y_off + i * N;
        if (y->dtype == VKL_DTYPE_F32) {
            float *yr = (float *)y->data + yi;
            row_f32(a, i, b, K, N, yr);
            for (int64_t j = 0; e && j < N; j++) yr[j] = (float)finish(e, i, j, yr[j]);
        } else if (vkl_ref_nn_is_float(y->dtype)) {
            double *acc = scratch;
            row_f64(a, i, b, K, N, acc);
            for (int64_t j = 0; j < N; j++) vkl_ref_set_f(y, yi + j, finish(e, i, j, acc[j]));
        } else {
            uint64_t *acc = scratch;
            row_int(a, i, b, K, N, acc);
            for (int64_t j = 0; j < N; j++) vkl_ref_set_i(y, yi + j, (int64_t)acc[j]);
        }
    }
}

static bool matmul_dtype(vkl_dtype t) {
    return vkl_ref_nn_is_float(t) || t == VKL_DTYPE_I32 || t == VKL_DTYPE_I64 || t == VKL_DTYPE_U32 ||
           t == VKL_DTYPE_U64;
}

/* The batch dims of a MatMul operand: all but its last two (none for 1-D). */
static vkl_ref_tensor batch_view(const vkl_ref_tensor *t) {
    vkl_ref_tensor v = {0};
    v.rank = t->rank > 2 ? t->rank - 2 : 0;
    for (uint32_t d = 0; d < v.rank; d++) v.dims[d] = t->dims[d];
    return v;
}

/* MatMul-13 (numpy matmul): A [..., M, K] @ B [..., K, N] -> Y [..., M, N];
 * a 1-D A is [1, K] and a 1-D B is [K, 1] with that dim dropped from Y;
 * batch dims broadcast. */
vkl_status vkl_ref_mat_mul(const vkl_ref_args *a) {
    const vkl_ref_tensor *A = &a->in[0], *B = &a->in[1];
    vkl_ref_tensor *Y = &a->out[0];
    if (!matmul_dtype(A->dtype) || A->dtype != B->dtype) return vkl_ref_nn_bad_dtype(a, "MatMul", "A/B", B->dtype);
    if (A->rank < 1 || B->rank < 1) return vkl_fail(a->ctx, VKL_ERR_SHAPE, "MatMul: a scalar operand");
    int64_t M = A->rank > 1 ? A->dims[A->rank - 2] : 1, K = A->dims[A->rank - 1];
    int64_t Kb = B->rank > 1 ? B->dims[B->rank - 2] : B->dims[0], N = B->rank > 1 ? B->dims[B->rank - 1] : 1;
    uint32_t nb = Y->rank - (A->rank > 1) - (B->rank > 1);
    vkl_ref_tensor ab = batch_view(A), bb = batch_view(B);
    vkl_status st = vkl_ref_nn_dim_eq(a, "MatMul", K, Kb, "A's columns and B's rows");
    if (!st) st = vkl_ref_nn_broadcast_to(a, "MatMul", &ab, Y->dims, nb, "A (batch dims)");
    if (!st) st = vkl_ref_nn_broadcast_to(a, "MatMul", &bb, Y->dims, nb, "B (batch dims)");
    if (st) return st;
    void *scratch = vkl_ref_scratch_get(a, (size_t)(N + 1) * sizeof(double));
    if (!scratch) return VKL_ERR_OUT_OF_MEMORY;
    int64_t batches = vkl_ref_nn_prod(Y->dims, 0, nb);
    for (int64_t bi = 0; bi < batches; bi++) {
        mat am = {A, vkl_ref_nn_broadcast_flat(&ab, Y->dims, nb, bi) * M * K, K, 1};
        mat bm = {B, vkl_ref_nn_broadcast_flat(&bb, Y->dims, nb, bi) * K * N, N, 1};
        matmul_block(am, bm, Y, bi * M * N, M, K, N, NULL, scratch);
    }
    return VKL_OK;
}

/* Gemm-13: Y [M, N] = alpha * A' B' + beta * C, where A' = A^T when transA
 * (B' likewise) and C (optional) broadcasts to [M, N]. */
vkl_status vkl_ref_gemm(const vkl_ref_args *a) {
    const vkl_ref_tensor *A = &a->in[0], *B = &a->in[1];
    vkl_ref_tensor *Y = &a->out[0];
    int64_t ta, tb;
    float alpha, beta;
    if (!vkl_ref_nn_is_float(A->dtype) || A->dtype != B->dtype) return vkl_ref_nn_bad_dtype(a, "Gemm", "A/B", B->dtype);
    if (A->rank != 2 || B->rank != 2) return vkl_fail(a->ctx, VKL_ERR_SHAPE, "Gemm: A and B must be 2-D");
    vkl_status st = vkl_ref_nn_attr(a, "transA", &ta);
    if (!st) st = vkl_ref_nn_attr(a, "transB", &tb);
    if (!st) st = vkl_op_attr_float(a->g, a->node, "alpha", &alpha);
    if (!st) st = vkl_op_attr_float(a->g, a->node, "beta", &beta);
    if (st) return st;
    int64_t M = A->dims[ta ? 1 : 0], K = A->dims[ta ? 0 : 1], Kb = B->dims[tb ? 1 : 0], N = B->dims[tb ? 0 : 1];
    epilogue e = {alpha, beta, a->n_in > 2 && a->in[2].data ? &a->in[2] : NULL, {M, N}};
    st = vkl_ref_nn_dim_eq(a, "Gemm", K, Kb, "the inner dims of A' and B'");
    if (!st && e.c) st = vkl_ref_nn_broadcast_to(a, "Gemm", e.c, e.mn, 2, "C");
    if (st) return st;
    void *scratch = vkl_ref_scratch_get(a, (size_t)(N + 1) * sizeof(double));
    if (!scratch) return VKL_ERR_OUT_OF_MEMORY;
    /* A' (i, k) and B' (k, j) as strided views of the stored matrices. */
    mat am = {A, 0, ta ? 1 : K, ta ? M : 1}, bm = {B, 0, tb ? 1 : N, tb ? K : 1};
    matmul_block(am, bm, Y, 0, M, K, N, &e, scratch);
    return VKL_OK;
}
