/* MatMul and Gemm on Vulkan, and the one product recorder they and
 * QuantMatMul's general path share (vkl_vk_record_mm): float products
 * with M = 1 (decode) or a quantized B run in matvec.comp, other float
 * products in the tiled matmul.comp, integer ones in matmul_int.comp.
 * Semantics are the ref kernels' (backends/ref/linalg.c): numpy matmul
 * with batch broadcasting, Gemm's transposes, alpha, beta and broadcast C;
 * shapes the shape rule could not compare fail here as ref fails
 * (VKL_ERR_SHAPE).
 *
 * A 2-D weight B over the binding limit is stored in row pieces (ranges of
 * K, vk_weights.c): MatMul then runs one product per piece over A's matching
 * columns, the first writing Y and each later one adding Y's values as C
 * (beta = 1), every output read and written by the same invocation. */
#include <string.h>

#include "../../engine/ops.h"
#include "vk_internal.h"

static const vkl_vk_variants matvec_shader = {"matvec", "matvec_sg", "matvec_f64"};
static const vkl_vk_variants matmul_shader = {"matmul", NULL, "matmul_f64"};

#define MM_BATCH_RANK 4 /* merged batch dims matmul_common.glsl takes */
#define MM_TILE 64      /* matmul.comp's BM = BN */
#define MM_TILE_K 16

static bool is_int_dtype(vkl_dtype t) { return t == VKL_DTYPE_I32 || t == VKL_DTYPE_U32 || t == VKL_DTYPE_I64; }

static vkl_status check_index(const vkl_vk_node *nd, const vkl_vk_tensor *t, const char *what) {
    if (!t || t->id == VKL_NONE || (t->count < (1ll << 31) && t->bytes / 4 < (1ull << 32))) return VKL_OK;
    return vkl_vk_node_unsupported(nd, "%s has %lld elements: beyond the kernels' 32-bit indexing", what,
                                   (long long)t->count);
}

static void fill_push(const vkl_vk_mm *mm, vkl_vk_dispatch *d) {
    uint32_t *p = d->push, n = 0;
    p[n++] = (uint32_t)mm->M;
    p[n++] = (uint32_t)mm->N;
    p[n++] = (uint32_t)mm->K;
    p[n++] = (uint32_t)mm->a_rs;
    p[n++] = (uint32_t)mm->a_cs;
    p[n++] = (uint32_t)mm->b_rs;
    p[n++] = (uint32_t)mm->b_cs;
    p[n++] = vkl_vk_f32_bits(mm->alpha);
    p[n++] = vkl_vk_f32_bits(mm->beta);
    p[n++] = (uint32_t)mm->c_rs;
    p[n++] = (uint32_t)mm->c_cs;
    p[n++] = mm->q_row_bytes;
    p[n++] = mm->q_group;
    p[n++] = (uint32_t)mm->batches;
    p[n++] = mm->batch_rank;
    for (uint32_t i = 0; i < MM_BATCH_RANK; i++) p[n++] = i < mm->batch_rank ? (uint32_t)mm->bdims[i] : 1;
    for (uint32_t i = 0; i < MM_BATCH_RANK; i++) p[n++] = i < mm->batch_rank ? (uint32_t)mm->a_bs[i] : 0;
    for (uint32_t i = 0; i < MM_BATCH_RANK; i++) p[n++] = i < mm->batch_rank ? (uint32_t)mm->b_bs[i] : 0;
    p[n++] = (uint32_t)mm->a_base;
    d->n_push = n;
}

vkl_status vkl_vk_record_mm(const vkl_vk_node *nd, const vkl_vk_mm *mm, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_backend_device *dev = nd->dev;
    const uint32_t *lim = dev->props.limits.maxComputeWorkGroupCount;
    *count = 0;
    vkl_status st = check_index(nd, mm->A, "A");
    if (!st) st = check_index(nd, mm->B, "B");
    if (!st) st = check_index(nd, mm->C, "C");
    if (!st) st = check_index(nd, mm->Y, "Y");
    if (st) return st;
    if (!mm->batches || !mm->M || !mm->N) return VKL_OK; /* nothing to write */
    const bool quant = vkl_dtype_is_quantized(mm->b_dtype);
    vkl_vk_dispatch *d = &out[0];
    d->bind[0] = mm->A->at;
    d->bind[1] = mm->b_at;
    d->bind[2] = quant ? mm->p_at : mm->b_at;
    d->bind[3] = mm->C ? mm->C->at : mm->A->at;
    d->bind[4] = mm->Y->at;
    d->n_bind = 5;
    fill_push(mm, d);
    if (is_int_dtype(mm->Y->dtype)) {
        const uint32_t wg = 64;
        const uint64_t total = (uint64_t)mm->batches * (uint64_t)(mm->M * mm->N);
        if ((st = vkl_vk_grid(nd, total, wg, d->groups))) return st;
        d->shader = "matmul_int";
        d->spec[0] = wg;
        d->spec[1] = mm->Y->dtype;
        d->n_spec = 2;
        d->bind[2] = mm->Y->at;
        d->n_bind = 3;
        *count = 1;
        return VKL_OK;
    }
    const bool f64 = vkl_vk_node_has_f64(nd);
    if (mm->batches > lim[2] || mm->M > lim[1])
        return vkl_vk_node_unsupported(nd, "%lld batches of %lld rows exceed the device's workgroup grid",
                                       (long long)mm->batches, (long long)mm->M);
    if (mm->M == 1 || quant) {
        /* n contiguous in B: columns per workgroup; else k is (or nothing
         * is, N = 1): reduction per output across the workgroup */
        const uint32_t mode = mm->b_cs == 1 && mm->b_rs != 1 ? 1 : 0, rows = 8;
        /* about 16 k per invocation and row block: enough work between the barriers */
        const uint32_t wg = mode ? 128 : vkl_vk_wg_size(nd, mm->K / 4);
        const int64_t blocks = mode ? (mm->N + 31) / 32 : (mm->N + rows - 1) / rows;
        if (blocks > lim[0]) return vkl_vk_node_unsupported(nd, "N = %lld exceeds the device's workgroup grid",
                                                            (long long)mm->N);
        if ((st = vkl_vk_pick(nd, f64, &matvec_shader, &d->shader))) return st;
        const uint32_t spec[] = {wg, mode, rows, mm->A->dtype, mm->b_dtype, mm->Y->dtype,
                                 mm->C ? mm->C->dtype : VKL_DTYPE_F32, mm->C != NULL};
        memcpy(d->spec, spec, sizeof(spec));
        d->n_spec = 8;
        d->groups[0] = (uint32_t)blocks;
        d->groups[1] = (uint32_t)mm->M;
    } else {
        if (dev->props.limits.maxComputeWorkGroupInvocations < 256)
            return vkl_vk_node_unsupported(nd, "the tiled matmul runs 256 invocations per workgroup; the device takes %u",
                                           dev->props.limits.maxComputeWorkGroupInvocations);
        const size_t shared = (size_t)MM_TILE_K * (2 * MM_TILE + 1) * (f64 ? 8 : 4);
        if (shared > dev->props.limits.maxComputeSharedMemorySize)
            return vkl_vk_node_unsupported(nd, "the tiled matmul needs %zu bytes of shared memory; the device has %u",
                                           shared, dev->props.limits.maxComputeSharedMemorySize);
        const int64_t blocks = (mm->N + MM_TILE - 1) / MM_TILE;
        if (blocks > lim[0]) return vkl_vk_node_unsupported(nd, "N = %lld exceeds the device's workgroup grid",
                                                            (long long)mm->N);
        if ((st = vkl_vk_pick(nd, f64, &matmul_shader, &d->shader))) return st;
        const uint32_t spec[] = {mm->A->dtype, mm->b_dtype, mm->Y->dtype, mm->C ? mm->C->dtype : VKL_DTYPE_F32,
                                 mm->C != NULL};
        memcpy(d->spec, spec, sizeof(spec));
        d->n_spec = 5;
        d->groups[0] = (uint32_t)blocks;
        d->groups[1] = (uint32_t)((mm->M + MM_TILE - 1) / MM_TILE);
    }
    d->groups[2] = (uint32_t)mm->batches;
    *count = 1;
    return VKL_OK;
}

/* MatMul's batch dims: Y's first nb dims, A's and B's own (right-aligned,
 * 1 broadcasts) with their matrix sizes as unit strides, merged. */
static vkl_status batch_dims(const vkl_vk_node *nd, uint32_t nb, const int64_t *ydims, const vkl_vk_tensor *t,
                             int64_t mat, int64_t *strides, const char *what) {
    const uint32_t tb = t->rank > 2 ? t->rank - 2 : 0;
    if (tb > nb) return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "%s has more batch dims than Y", what);
    int64_t s = mat;
    for (int32_t d = (int32_t)nb - 1; d >= 0; d--) {
        const int32_t td = d - (int32_t)(nb - tb);
        if (td < 0) {
            strides[d] = 0;
            continue;
        }
        const int64_t n = t->dims[td];
        if (n != 1 && n != ydims[d])
            return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "%s's batch dim %d (%lld) does not broadcast to %lld", what, td,
                                    (long long)n, (long long)ydims[d]);
        strides[d] = n == 1 ? 0 : s;
        s *= n;
    }
    return VKL_OK;
}

static vkl_status merge_batches(const vkl_vk_node *nd, uint32_t nb, const int64_t *ydims,
                                const int64_t (*strides)[VKL_MAX_RANK], vkl_vk_mm *mm) {
    vkl_vk_view v;
    vkl_status st = vkl_vk_view_make(nd, nb, ydims, 2, strides, &v);
    if (st) return st;
    mm->batches = v.count;
    const uint32_t skip = VKL_VK_VIEW_RANK - MM_BATCH_RANK;
    for (uint32_t d = 0; d < skip; d++)
        if (v.dims[d] != 1)
            return vkl_vk_node_unsupported(nd, "more than %d batch dims remain after merging", MM_BATCH_RANK);
    mm->batch_rank = MM_BATCH_RANK;
    for (uint32_t d = 0; d < MM_BATCH_RANK; d++) {
        mm->bdims[d] = v.dims[skip + d];
        mm->a_bs[d] = v.strides[0][skip + d];
        mm->b_bs[d] = v.strides[1][skip + d];
    }
    return VKL_OK;
}

/* Y = A B with B a 2-D float weight in row pieces: Y = sum over pieces p of
 * A[:, Kp] B[Kp, :], A's batch dims merged into its rows (B has none). */
static vkl_status mat_mul_pieces(const vkl_vk_node *nd, vkl_vk_mm *mm, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_vk_tensor *A = mm->A, *B = mm->B, *Y = mm->Y;
    const vkl_vk_weight *w = B->weight;
    if (!w || B->rank != 2 || A->pieced || Y->pieced || !vkl_vk_dtype_float(A->dtype))
        return vkl_vk_node_unsupported(nd, "a tensor is over the binding limit (%s, %llu bytes); MatMul takes only a "
                                       "2-D float weight B in pieces", vkl_vk_bind_limit_name(nd->dev),
                                       (unsigned long long)nd->dev->bind_limit);
    if (w->n_pieces > VKL_VK_MAX_DISPATCHES)
        return vkl_vk_node_unsupported(nd, "B in %u pieces needs more than %u dispatches", w->n_pieces,
                                       VKL_VK_MAX_DISPATCHES);
    mm->M = A->count / mm->K;
    mm->batches = 1;
    for (uint32_t d = 0; d < MM_BATCH_RANK; d++) {
        mm->bdims[d] = 1;
        mm->a_bs[d] = mm->b_bs[d] = 0;
    }
    mm->c_rs = mm->N;
    mm->c_cs = 1;
    *count = 0;
    for (uint32_t i = 0; i < w->n_pieces; i++) {
        const vkl_vk_piece *p = &w->piece[i];
        vkl_vk_mm piece = *mm;
        piece.K = p->rows;
        piece.b_at = p->qs;
        piece.a_base = p->row0 * mm->a_cs;
        piece.C = i ? Y : NULL;
        piece.beta = i ? 1.0f : 0.0f;
        uint32_t n = 0;
        vkl_status st = vkl_vk_record_mm(nd, &piece, &out[*count], &n);
        if (st) return st;
        *count += n;
    }
    return VKL_OK;
}

vkl_status vkl_vk_record_mat_mul(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_vk_tensor *A = &nd->in[0], *B = &nd->in[1], *Y = &nd->out[0];
    *count = 0;
    if (A->dtype != B->dtype || Y->dtype != A->dtype)
        return vkl_vk_node_unsupported(nd, "A %s, B %s, Y %s: one dtype expected", vkl_dtype_name(A->dtype),
                                       vkl_dtype_name(B->dtype), vkl_dtype_name(Y->dtype));
    if (!vkl_vk_dtype_float(A->dtype) && !is_int_dtype(A->dtype))
        return vkl_vk_node_unsupported(nd, "dtype %s is not supported (f32, f16, bf16, f64, i32, u32, i64)",
                                       vkl_dtype_name(A->dtype));
    if (A->rank < 1 || B->rank < 1) return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "a scalar operand");
    vkl_vk_mm mm = {0};
    mm.A = A;
    mm.B = B;
    mm.Y = Y;
    mm.b_dtype = B->dtype;
    mm.b_at = B->at;
    mm.alpha = 1.0f;
    mm.M = A->rank > 1 ? A->dims[A->rank - 2] : 1;
    mm.K = A->dims[A->rank - 1];
    mm.N = B->rank > 1 ? B->dims[B->rank - 1] : 1;
    const int64_t Kb = B->rank > 1 ? B->dims[B->rank - 2] : B->dims[0];
    if (Kb != mm.K)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "A's columns and B's rows differ (%lld vs %lld)", (long long)mm.K,
                                (long long)Kb);
    mm.a_rs = mm.K;
    mm.a_cs = 1;
    mm.b_rs = B->rank > 1 ? mm.N : 1;
    mm.b_cs = B->rank > 1 ? 1 : 0;
    const uint32_t nb = Y->rank - (A->rank > 1) - (B->rank > 1);
    if (Y->rank < (uint32_t)(A->rank > 1) + (B->rank > 1))
        return vkl_vk_node_unsupported(nd, "Y of rank %u for A of rank %u and B of rank %u", Y->rank, A->rank, B->rank);
    int64_t strides[2][VKL_MAX_RANK];
    vkl_status st = batch_dims(nd, nb, Y->dims, A, mm.M * mm.K, strides[0], "A");
    if (!st) st = batch_dims(nd, nb, Y->dims, B, mm.K * mm.N, strides[1], "B");
    if (!st) st = merge_batches(nd, nb, Y->dims, (const int64_t (*)[VKL_MAX_RANK])strides, &mm);
    if (st) return st;
    if (mm.batches * mm.M * mm.N != Y->count)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "Y has %lld elements, want %lld", (long long)Y->count,
                                (long long)(mm.batches * mm.M * mm.N));
    if (A->pieced || B->pieced || Y->pieced) return mat_mul_pieces(nd, &mm, out, count);
    return vkl_vk_record_mm(nd, &mm, out, count);
}

vkl_status vkl_vk_record_gemm(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_vk_tensor *A = &nd->in[0], *B = &nd->in[1], *Y = &nd->out[0];
    const vkl_vk_tensor *C = nd->n_in > 2 && nd->in[2].id != VKL_NONE ? &nd->in[2] : NULL;
    int64_t ta, tb;
    vkl_vk_mm mm = {0};
    *count = 0;
    if (!vkl_vk_dtype_float(A->dtype) || B->dtype != A->dtype || Y->dtype != A->dtype)
        return vkl_vk_node_unsupported(nd, "A %s, B %s: one float dtype expected", vkl_dtype_name(A->dtype),
                                       vkl_dtype_name(B->dtype));
    if (C && !vkl_vk_dtype_float(C->dtype))
        return vkl_vk_node_unsupported(nd, "C dtype %s is not supported", vkl_dtype_name(C->dtype));
    if (A->rank != 2 || B->rank != 2) return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "A and B must be 2-D");
    vkl_status st = vkl_op_attr_int(nd->g, nd->index, "transA", &ta);
    if (!st) st = vkl_op_attr_int(nd->g, nd->index, "transB", &tb);
    if (!st) st = vkl_op_attr_float(nd->g, nd->index, "alpha", &mm.alpha);
    if (!st) st = vkl_op_attr_float(nd->g, nd->index, "beta", &mm.beta);
    if (st) return st;
    mm.A = A;
    mm.B = B;
    mm.C = C;
    mm.Y = Y;
    mm.b_dtype = B->dtype;
    mm.b_at = B->at;
    mm.batches = 1;
    mm.M = A->dims[ta ? 1 : 0];
    mm.K = A->dims[ta ? 0 : 1];
    mm.N = B->dims[tb ? 0 : 1];
    if (B->dims[tb ? 1 : 0] != mm.K)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "the inner dims of A' and B' differ (%lld vs %lld)", (long long)mm.K,
                                (long long)B->dims[tb ? 1 : 0]);
    /* A' (i, k) and B' (k, j) as strided views of the stored matrices */
    mm.a_rs = ta ? 1 : A->dims[1];
    mm.a_cs = ta ? A->dims[1] : 1;
    mm.b_rs = tb ? 1 : B->dims[1];
    mm.b_cs = tb ? B->dims[1] : 1;
    if (C) {
        const int64_t mn[2] = {mm.M, mm.N};
        int64_t cs[VKL_MAX_RANK];
        bool ok = C->rank <= 2;
        for (uint32_t d = 0; ok && d < C->rank; d++) ok = C->dims[d] == 1 || C->dims[d] == mn[2 - C->rank + d];
        if (!ok) return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "C of rank %u does not broadcast to [M, N]", C->rank);
        if ((st = vkl_vk_broadcast_strides(nd, C, 2, mn, cs))) return st;
        mm.c_rs = cs[0];
        mm.c_cs = cs[1];
    }
    if (Y->count != mm.M * mm.N)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "Y has %lld elements, want %lld", (long long)Y->count,
                                (long long)(mm.M * mm.N));
    return vkl_vk_record_mm(nd, &mm, out, count);
}
