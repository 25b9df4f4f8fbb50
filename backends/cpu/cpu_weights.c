/* Weights into the kernels' layout, once at load: quantized QuantMatMul
 * weights into 4-row tiles (engine/quant's CPU layout, hp = 4, lp = 32),
 * MatMul's float B [K, N] transposed to [N, K] rows. Everything else (and
 * every weight a kernel here cannot take) is read in place by ref's
 * kernels. The .vkm bytes are never written. */
#include <string.h>

#include "cpu_backend.h"

static bool const_dims(const vkl_graph *g, const vkl_tensor *t, int64_t *rows, int64_t *cols) {
    return t->kind == VKL_TENSOR_WEIGHT && t->data && t->shape.rank == 2 &&
           vkl_expr_is_const(g->syms, t->shape.dims[0], rows) && vkl_expr_is_const(g->syms, t->shape.dims[1], cols) &&
           *rows > 0 && *cols > 0;
}

static bool is_float(vkl_dtype t) { return t == VKL_DTYPE_F32 || t == VKL_DTYPE_F16 || t == VKL_DTYPE_BF16; }

/* 64-byte aligned bytes for the kernels' vector loads. */
static uint8_t *alloc_aligned(vkl_context *ctx, size_t bytes, void **owned) {
    size_t total;
    if (!vkl_add_size(bytes, 64, &total) || !(*owned = vkl_malloc(ctx, total))) return NULL;
    return (uint8_t *)(((uintptr_t)*owned + 63) & ~(uintptr_t)63);
}

static vkl_status pack_quant(vkl_context *ctx, const vkl_tensor *t, int64_t N, int64_t K, vkl_cpu_weight *w) {
    vkl_status st = vkl_quant_cpu_layout_make(ctx, t->dtype, t->group, N, K, VKL_CPU_HP, VKL_CPU_LP, &w->lay);
    uint8_t *dst = st ? NULL : alloc_aligned(ctx, w->lay.total_bytes, &w->owned);
    if (!st && !dst) st = VKL_ERR_OUT_OF_MEMORY;
    if (!st) st = vkl_quant_pack_cpu(ctx, &w->lay, t->data, t->nbytes, dst, w->lay.total_bytes);
    w->data = dst;
    return st ? vkl_fail_prefix(ctx, st, "cpu: weight '%s'", t->name) : VKL_OK;
}

/* B [K, N] -> [N, K], element bytes moved as they are. */
static vkl_status transpose(vkl_context *ctx, const vkl_tensor *t, int64_t K, int64_t N, vkl_cpu_weight *w) {
    const size_t es = vkl_dtype_size(t->dtype);
    size_t bytes;
    if (!vkl_mul_size((size_t)K * (size_t)N, es, &bytes) || bytes != t->nbytes)
        return vkl_fail(ctx, VKL_ERR_FORMAT, "cpu: weight '%s' has %zu bytes, not %lld x %lld of %zu", t->name,
                        t->nbytes, (long long)K, (long long)N, es);
    uint8_t *dst = alloc_aligned(ctx, bytes, &w->owned);
    if (!dst) return VKL_ERR_OUT_OF_MEMORY;
    const uint8_t *src = t->data;
    for (int64_t k = 0; k < K; k++)
        for (int64_t n = 0; n < N; n++)
            memcpy(dst + ((size_t)n * (size_t)K + (size_t)k) * es, src + ((size_t)k * (size_t)N + (size_t)n) * es, es);
    w->data = dst;
    return VKL_OK;
}

/* Whether every E0M4 block shares the first's exponent n, as the importer
 * writes them: the CPU layout keeps one n per tensor. (Other weights, and
 * headers pack_quant will refuse, answer true.) */
static bool one_e0m4_exponent(const vkl_tensor *t) {
    const size_t block = vkl_quant_block_bytes(t->dtype, t->group);
    if (t->dtype != VKL_DTYPE_Q_E0M4 || !block || t->nbytes < block) return true;
    const uint8_t *p = t->data;
    const uint16_t exp = vkl_quant_rd16(p + 2) & 0xFC00;
    for (size_t off = block; off + block <= t->nbytes; off += block)
        if ((vkl_quant_rd16(p + off + 2) & 0xFC00) != exp) return false;
    return true;
}

/* The repacked form node's weight input gets, if any: false to leave it to ref. */
static bool wanted(const vkl_graph *g, const vkl_node *n, bool int8_dot, int64_t *N, int64_t *K, bool *quant) {
    if (n->n_inputs < 2 || n->inputs[1] == VKL_NONE) return false;
    const vkl_tensor *t = &g->tensors[n->inputs[1]];
    int64_t r, c;
    if (!const_dims(g, t, &r, &c)) return false;
    if (n->op == VKL_OP_QUANT_MAT_MUL) {
        *N = r, *K = c;
        *quant = t->dtype == VKL_DTYPE_Q_E0M4 || t->dtype == VKL_DTYPE_Q_INT4 || t->dtype == VKL_DTYPE_Q_INT8;
        /* float W is used in place; a quantized one needs whole tiles in a
         * group (a short last group is stored whole: cpu_gemm.c), and int8
         * dot products not masked off (else ref's exact f32 kernel) */
        return *quant ? int8_dot && t->group % VKL_CPU_LP == 0 && one_e0m4_exponent(t)
                      : is_float(t->dtype);
    }
    *K = r, *N = c, *quant = false;
    return n->op == VKL_OP_MAT_MUL && t->dtype == VKL_DTYPE_F32; /* MatMul takes A of B's dtype: f32 A only here */
}

vkl_status vkl_cpu_weights_load(vkl_backend_device *dev, const vkl_graph *g, vkl_backend_weights **out) {
    vkl_context *ctx = dev->ctx;
    const bool int8_dot = !(dev->disable_features & VKL_FEATURE_INT8_DOT);
    *out = NULL;
    vkl_backend_weights *w = vkl_calloc(ctx, 1, sizeof(*w));
    if (!w) return VKL_ERR_OUT_OF_MEMORY;
    w->dev = dev;
    w->g = g;
    w->by_tensor = vkl_calloc(ctx, g->n_tensors ? g->n_tensors : 1, sizeof(*w->by_tensor));
    w->list = vkl_calloc(ctx, g->n_nodes ? g->n_nodes : 1, sizeof(*w->list));
    vkl_status st = w->by_tensor && w->list ? VKL_OK : VKL_ERR_OUT_OF_MEMORY;
    for (uint32_t i = 0; !st && i < g->n_nodes; i++) {
        const vkl_node *n = &g->nodes[i];
        int64_t N, K;
        bool quant;
        if (!wanted(g, n, int8_dot, &N, &K, &quant) || w->by_tensor[n->inputs[1]]) continue;
        const vkl_tensor *t = &g->tensors[n->inputs[1]];
        vkl_cpu_weight *cw = &w->list[w->n++];
        *cw = (vkl_cpu_weight){.N = N, .K = K, .dtype = t->dtype};
        if (quant) st = pack_quant(ctx, t, N, K, cw);
        else if (n->op == VKL_OP_MAT_MUL) st = transpose(ctx, t, K, N, cw);
        else cw->data = t->data;
        w->by_tensor[n->inputs[1]] = cw;
    }
    if (st) {
        vkl_cpu_weights_release(dev, w);
        return st;
    }
    *out = w;
    return VKL_OK;
}

void vkl_cpu_weights_release(vkl_backend_device *dev, vkl_backend_weights *w) {
    if (!w) return;
    for (size_t i = 0; w->list && i < w->n; i++) vkl_free(dev->ctx, w->list[i].owned);
    vkl_free(dev->ctx, w->list);
    vkl_free(dev->ctx, w->by_tensor);
    vkl_free(dev->ctx, w);
}
