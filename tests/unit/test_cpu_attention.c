/* Attention on the cpu backend against ref with the additive float masks
 * exporters write: a causal mask of -inf or of the lowest float
 * (torch.finfo(float32).min, Hugging Face's), with and without past keys,
 * a masked key inside the visible span, and GQA (4 query heads on 2 KV
 * heads). The cpu backend drops a row's trailing fully masked keys before the
 * products and runs blocks of 4 query rows of a KV head over their keys'
 * union (cpu_attention.c): blocks across the causal diagonal, partial
 * blocks at a KV head's end, 1..4 query heads a KV head, a row that sees
 * nothing beside rows that do, head sizes off the vector widths, decode;
 * the in-place cache's layout, its heads packed into contiguous rows for a
 * prompt.
 * Every output must stay within f32 rounding of ref (double arithmetic), on
 * the chosen kernels with 2 threads and on portable C with 3. */
#include <float.h>
#include <math.h>

#include "backend.h"
#include "check.h"
#include "ops.h"
#include "ops/shape_util.h"
#include "run_once.h"

typedef struct attn_case {
    int64_t hq, hkv, S, T, D;
    float masked;   /* the mask's value for a hidden key */
    int64_t hole;   /* a key hidden for every row, inside the visible span (-1: none) */
    bool per_head;  /* a mask [1, Hq, S, T], head h's hole at hole + h; else [1, 1, S, T] */
    int64_t layout; /* kv_layout: 0 K [1, Hkv, T, D]; 1 K [T, 1, Hkv, D], the in-place cache */
} attn_case;

static float frand(uint64_t *s) {
    *s = *s * 6364136223846793005u + 1442695040888963407u;
    return (float)((*s >> 40) & 0xFFFF) / 32768.0f - 1.0f;
}

/* Y = Attention(q, k, v, mask): q the input, k, v and the mask weights. */
static vkl_status run(vkl_context *ctx, const vkl_backend_vtable *be, vkl_backend_device *dev, const attn_case *c,
                      const float *q, const float *k, const float *v, const float *mask, vkl_host_tensor *y) {
    vkl_graph *g;
    vkl_status st = vkl_graph_create(ctx, &g);
    if (st) return st;
    uint32_t in[4], out;
    vkl_shape sq, sk, sm;
    const int64_t dq[4] = {1, c->hq, c->S, c->D}, dk0[4] = {1, c->hkv, c->T, c->D}, dk1[4] = {c->T, 1, c->hkv, c->D},
                  *dk = c->layout ? dk1 : dk0, dm[4] = {1, c->per_head ? c->hq : 1, c->S, c->T};
    const size_t kv_bytes = (size_t)(c->hkv * c->T * c->D) * 4;
    st = vkl_shape_from_ints(g, dq, 4, &sq);
    if (!st) st = vkl_shape_from_ints(g, dk, 4, &sk);
    if (!st) st = vkl_shape_from_ints(g, dm, 4, &sm);
    if (!st) st = vkl_graph_add_tensor(g, "q", VKL_DTYPE_F32, VKL_TENSOR_INPUT, &sq, &in[0]);
    if (!st) st = vkl_graph_add_tensor(g, "k", VKL_DTYPE_F32, VKL_TENSOR_WEIGHT, &sk, &in[1]);
    if (!st) st = vkl_graph_set_data(g, in[1], k, kv_bytes, true);
    if (!st) st = vkl_graph_add_tensor(g, "v", VKL_DTYPE_F32, VKL_TENSOR_WEIGHT, &sk, &in[2]);
    if (!st) st = vkl_graph_set_data(g, in[2], v, kv_bytes, true);
    if (!st) st = vkl_graph_add_tensor(g, "mask", VKL_DTYPE_F32, VKL_TENSOR_WEIGHT, &sm, &in[3]);
    if (!st) st = vkl_graph_set_data(g, in[3], mask, (size_t)(dm[1] * c->S * c->T) * 4, true);
    if (!st) st = vkl_graph_add_input(g, in[0]);
    if (!st) st = vkl_graph_add_tensor(g, "y", VKL_DTYPE_INVALID, VKL_TENSOR_ACTIVATION, NULL, &out);
    if (!st) st = vkl_graph_add_output(g, out);
    const vkl_attr layout = {.name = "kv_layout", .kind = VKL_ATTR_INT, .i = c->layout};
    if (!st) st = vkl_graph_add_node(g, VKL_OP_ATTENTION, "attn", in, 4, &out, 1, &layout, 1, NULL);
    if (!st) st = vkl_graph_validate(g);
    if (!st) st = vkl_graph_infer_shapes(g);
    vkl_host_tensor hin = {VKL_DTYPE_F32, 4, {1, c->hq, c->S, c->D}, (void *)q, (size_t)(c->hq * c->S * c->D) * 4};
    if (!st) st = vkl_run_once_on(ctx, be, dev, g, &hin, y);
    vkl_graph_destroy(g);
    return st;
}

static void test_case(vkl_context *ctx, const vkl_backend_vtable *ref, vkl_backend_device *dref,
                      const vkl_backend_vtable *cpu, vkl_backend_device *const *dcpu, int n_cpu, const attn_case *c) {
    uint64_t seed = (uint64_t)(c->S * 7919 + c->T * 131 + c->D + c->hq);
    const size_t nq = (size_t)(c->hq * c->S * c->D), nk = (size_t)(c->hkv * c->T * c->D), nm = (size_t)((c->per_head ? c->hq : 1) * c->S * c->T);
    float *q = malloc(nq * 4), *k = malloc(nk * 4), *v = malloc(nk * 4), *mask = malloc(nm * 4);
    for (size_t i = 0; i < nq; i++) q[i] = frand(&seed) * 2.0f;
    for (size_t i = 0; i < nk; i++) k[i] = frand(&seed) * 2.0f;
    for (size_t i = 0; i < nk; i++) v[i] = frand(&seed);
    /* query i sits at position i + T - S and sees the keys up to it */
    for (int64_t h = 0; h < (c->per_head ? c->hq : 1); h++)
        for (int64_t i = 0; i < c->S; i++)
            for (int64_t j = 0; j < c->T; j++)
                mask[(h * c->S + i) * c->T + j] = j > i + c->T - c->S || (c->hole >= 0 && j == c->hole + h)
                                                      ? c->masked
                                                      : 0.0f;
    vkl_host_tensor want = {0}, got = {0};
    CHECK_OK(ctx, run(ctx, ref, dref, c, q, k, v, mask, &want));
    for (int d = 0; d < n_cpu; d++) {
        CHECK_OK(ctx, run(ctx, cpu, dcpu[d], c, q, k, v, mask, &got));
        if (!want.data || !got.data) continue;
        const float *y = want.data, *z = got.data;
        double err = 0;
        for (size_t i = 0; i < nq; i++) err = fmax(err, fabs((double)z[i] - y[i]));
        CHECKF(err <= 1e-5, "hq %lld S %lld T %lld layout %lld mask %g hole %lld%s, device %d: error %.3g",
               (long long)c->hq, (long long)c->S, (long long)c->T, (long long)c->layout, c->masked, (long long)c->hole,
               c->per_head ? " per head" : "", d, err);
        printf("hq %lld hkv %lld S %2lld T %2lld D %2lld layout %lld mask %-14g hole %2lld%s: max error %.2e (device "
               "%d)\n",
               (long long)c->hq, (long long)c->hkv, (long long)c->S, (long long)c->T, (long long)c->D,
               (long long)c->layout, c->masked, (long long)c->hole, c->per_head ? " per head" : "", err, d);
        vkl_free(ctx, got.data);
        got.data = NULL;
    }
    vkl_free(ctx, want.data);
    free(q);
    free(k);
    free(v);
    free(mask);
}

int main(void) {
    vkl_context *ctx;
    CHECK(vkl_context_create(NULL, &ctx) == VKL_OK);
    const vkl_backend_vtable *ref = vkl_backend_find("ref"), *cpu = vkl_backend_find("cpu");
    vkl_backend_device *dref, *dcpu[2];
    const vkl_backend_options chosen = {.threads = 2}, portable = {.threads = 3, .disable_isa = ~0u};
    CHECK_OK(ctx, ref->open(ctx, NULL, &dref));
    CHECK_OK(ctx, cpu->open(ctx, &chosen, &dcpu[0]));
    CHECK_OK(ctx, cpu->open(ctx, &portable, &dcpu[1]));
    const attn_case cases[] = {
        {4, 2, 37, 37, 64, -FLT_MAX, -1},  /* a prompt, Hugging Face's mask */
        {4, 2, 37, 37, 64, -INFINITY, -1}, /* the same with -inf */
        {2, 2, 5, 40, 16, -FLT_MAX, -1},   /* 35 past keys, then 5 new rows */
        {4, 1, 19, 19, 8, -FLT_MAX, 3},    /* a hidden key inside every row's span */
        {4, 1, 19, 19, 8, -INFINITY, 0},   /* the first key hidden: row 0 sees nothing */
        /* blocks of 4 query rows (cpu_attention.c): */
        {4, 4, 23, 23, 20, -FLT_MAX, -1},  /* no GQA: 4 positions a block across the diagonal, 3 at the end; D % 8 */
        {6, 3, 9, 13, 24, -INFINITY, 6},   /* 2 heads x 2 positions a block, 2 at the end; D % 16; past keys */
        {3, 1, 7, 7, 33, -FLT_MAX, 2},     /* 3 heads a KV head: blocks across heads and positions */
        {4, 4, 11, 11, 12, -INFINITY, 0},  /* row 0, which sees nothing, in a block with rows that do */
        {8, 2, 1, 30, 64, -FLT_MAX, 5},    /* decode: one position, 4 heads a block */
        {8, 2, 6, 70, 72, -FLT_MAX, 40},   /* 64 past keys, D above wsum's 64 floats a pass */
        {8, 2, 13, 13, 16, -FLT_MAX, 0, true}, /* a mask per head: the heads of a block differ (head 0's row 0 blind) */
        {4, 4, 9, 9, 8, -INFINITY, 5, true},   /* the same without GQA */
        /* the in-place cache's layout; from 16 positions its heads are packed first */
        {8, 2, 37, 37, 64, -FLT_MAX, -1, false, 1},
        {8, 2, 20, 29, 24, -INFINITY, 7, true, 1},
        {3, 3, 16, 16, 20, -FLT_MAX, 0, false, 1}, /* no GQA, D % 8, row 0 blind */
        {8, 2, 15, 40, 64, -FLT_MAX, 3, false, 1}, /* below 16 positions: read in place */
        {8, 2, 1, 40, 64, -FLT_MAX, 3, false, 1},  /* decode */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) test_case(ctx, ref, dref, cpu, dcpu, 2, &cases[i]);
    ref->close(dref);
    cpu->close(dcpu[0]);
    cpu->close(dcpu[1]);
    vkl_context_destroy(ctx);
    printf("%d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
