/* The cpu backend's elementwise ops and RoPE, which run ref's kernels on
 * slices spread over the pool (backends/cpu/cpu_split.c): at sizes that are
 * split (slices that do not divide them evenly, f16 as well as f32, cos and
 * sin per batch or shared), on 2 and 3 threads, the output is ref's, bit
 * for bit; so it is where the op goes to ref whole (a broadcast, a decode
 * step's size); and input that is rejected gets the same status on cpu as
 * on ref. f32 SiluMul, where the CPU has AVX2, runs the backend's vector
 * kernel (exp by polynomial): within SILU_ULPS of ref's element, and ref's
 * NaN, infinities and signed zeros at the edges of exp's range. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "check.h"
#include "ops.h"
#include "ops/shape_util.h"
#include "run_once.h"
#include "../../backends/cpu/cpu_dot.h"

#define MAX_IN 3
/* The vector SiluMul against ref's x / (1 + expf(-x)) * y: the worst
 * measured over 2^25 values in [-88.3, 88.3] was 5 ulps (at x = -16.8,
 * where the output's error is exp's), 4 on this file's random cases. */
#define SILU_ULPS 8

typedef struct split_case {
    const char *what;
    vkl_op op;
    uint32_t n_in;
    vkl_dtype dtype[MAX_IN];
    uint32_t rank[MAX_IN];
    int64_t dims[MAX_IN][4];
    int64_t interleaved; /* RoPE's attribute; -1: none */
    vkl_status want;     /* ref's status: VKL_OK, or the error both must give */
    bool own_f32;        /* the cpu backend's own f32 kernel where the CPU has one: SILU_ULPS, not bits */
} split_case;

static float frand(uint64_t *s) {
    *s = *s * 6364136223846793005u + 1442695040888963407u;
    return (float)((double)(*s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* ulps between two floats; 0 for bit-equal, and for ±0; INT64_MAX when one is
 * NaN or infinite and the other not the same. */
static int64_t ulps(float a, float b) {
    if (a == b || (isnan(a) && isnan(b))) return 0;
    if (!isfinite(a) || !isfinite(b)) return INT64_MAX;
    int32_t ia, ib;
    memcpy(&ia, &a, 4);
    memcpy(&ib, &b, 4);
    const int64_t ka = ia < 0 ? (int64_t)INT32_MIN - ia : ia, kb = ib < 0 ? (int64_t)INT32_MIN - ib : ib;
    return ka > kb ? ka - kb : kb - ka;
}

static int64_t max_ulps(const float *a, const float *b, size_t n) {
    int64_t m = 0;
    for (size_t i = 0; i < n; i++) {
        const int64_t u = ulps(a[i], b[i]);
        if (u > m) m = u;
    }
    return m;
}

static int64_t count(const split_case *c, uint32_t k) {
    int64_t n = 1;
    for (uint32_t d = 0; d < c->rank[k]; d++) n *= c->dims[k][d];
    return n;
}

static vkl_status run(vkl_context *ctx, const vkl_backend_vtable *be, vkl_backend_device *dev, const split_case *c,
                      void *const *data, vkl_host_tensor *y) {
    vkl_graph *g;
    vkl_status st = vkl_graph_create(ctx, &g);
    if (st) return st;
    uint32_t in[MAX_IN], out;
    vkl_host_tensor hin[MAX_IN];
    for (uint32_t k = 0; k < c->n_in && !st; k++) {
        vkl_shape s;
        const char name[2] = {(char)('a' + k), 0};
        st = vkl_shape_from_ints(g, c->dims[k], c->rank[k], &s);
        if (!st) st = vkl_graph_add_tensor(g, name, c->dtype[k], VKL_TENSOR_INPUT, &s, &in[k]);
        if (!st) st = vkl_graph_add_input(g, in[k]);
        hin[k] = (vkl_host_tensor){c->dtype[k], c->rank[k], {0}, data[k], (size_t)count(c, k) * vkl_dtype_size(c->dtype[k])};
        memcpy(hin[k].dims, c->dims[k], sizeof(c->dims[k]));
    }
    const vkl_attr attr = {.name = "interleaved", .kind = VKL_ATTR_INT, .i = c->interleaved};
    if (!st) st = vkl_graph_add_tensor(g, "y", VKL_DTYPE_INVALID, VKL_TENSOR_ACTIVATION, NULL, &out);
    if (!st) st = vkl_graph_add_output(g, out);
    if (!st) st = vkl_graph_add_node(g, c->op, "op", in, c->n_in, &out, 1, &attr, c->interleaved >= 0, NULL);
    if (!st) st = vkl_graph_validate(g);
    if (!st) st = vkl_graph_infer_shapes(g);
    if (!st) st = vkl_run_once_on(ctx, be, dev, g, hin, y);
    vkl_graph_destroy(g);
    return st;
}

static void test_case(vkl_context *ctx, const vkl_backend_vtable *ref, vkl_backend_device *dref,
                      const vkl_backend_vtable *cpu, vkl_backend_device *const *dcpu, int n_cpu, const split_case *c) {
    uint64_t seed = (uint64_t)c->op * 7919 + (uint64_t)count(c, 0);
    void *data[MAX_IN];
    for (uint32_t k = 0; k < c->n_in; k++) {
        const int64_t n = count(c, k);
        data[k] = malloc((size_t)n * 4);
        for (int64_t i = 0; i < n; i++) {
            const float v = frand(&seed) * 4.0f;
            if (c->dtype[k] == VKL_DTYPE_F32) ((float *)data[k])[i] = v;
            else ((uint16_t *)data[k])[i] = (uint16_t)(0x3c00 + (i % 512)); /* f16 values near 1 */
        }
    }
    vkl_host_tensor want = {0}, got = {0};
    int64_t worst = 0; /* own_f32: the most ulps from ref's */
    const vkl_status st_ref = run(ctx, ref, dref, c, data, &want);
    CHECKF(st_ref == c->want, "%s: ref gives %s, the case expects %s", c->what, vkl_status_name(st_ref),
           vkl_status_name(c->want));
    for (int d = 0; d < n_cpu; d++) {
        const vkl_status st = run(ctx, cpu, dcpu[d], c, data, &got);
        CHECKF(st == st_ref, "%s: cpu device %d gives %s, ref %s", c->what, d, vkl_status_name(st), vkl_status_name(st_ref));
        if (!st && !st_ref && c->own_f32 && vkl_cpu_has_avx2()) {
            const int64_t u = got.nbytes == want.nbytes ? max_ulps(got.data, want.data, want.nbytes / 4) : INT64_MAX;
            CHECKF(u <= SILU_ULPS, "%s: cpu device %d's output is %lld ulps from ref's (bound %d)", c->what, d,
                   (long long)u, SILU_ULPS);
            if (u > worst) worst = u;
        } else if (!st && !st_ref)
            CHECKF(got.nbytes == want.nbytes && !memcmp(got.data, want.data, want.nbytes),
                   "%s: cpu device %d's output is not ref's bits", c->what, d);
        vkl_free(ctx, got.data);
        got.data = NULL;
    }
    if (!st_ref && c->own_f32 && vkl_cpu_has_avx2())
        printf("%-36s %8lld elements: within %lld ulps of ref's on %d cpu devices\n", c->what, (long long)count(c, 0),
               (long long)worst, n_cpu);
    else if (!st_ref) printf("%-36s %8lld elements: ref's bits on %d cpu devices\n", c->what, (long long)count(c, 0), n_cpu);
    else printf("%-36s: %s on ref and cpu\n", c->what, vkl_status_name(st_ref));
    vkl_free(ctx, want.data);
    for (uint32_t k = 0; k < c->n_in; k++) free(data[k]);
}

/* The vector SiluMul at the edges of exp's range and on special values, and
 * on a tail shorter than a vector, against ref's formula per element. */
static void test_silu_edges(void) {
#ifdef VKL_CPU_HAVE_AVX2
    if (!vkl_cpu_has_avx2()) {
        printf("SiluMul edges: skipped, this CPU has no AVX2 (the portable path is ref's kernel)\n");
        return;
    }
    const float x[] = {0.0f, -0.0f, 1.0f, -1.0f, 1e-30f, -1e-30f, 1e-40f, -1e-40f, 20.0f, -20.0f, 87.0f, -87.0f,
                       87.5f, -87.5f, 88.3f, -88.3f, 88.5f, -88.5f, 88.72f, -88.72f, 88.8f, -88.8f, 100.0f, -100.0f,
                       1e30f, -1e30f, INFINITY, -INFINITY, NAN, 3.0f, -3.0f};
    enum { N = sizeof(x) / sizeof(x[0]) };
    float y[N], got[N], want[N];
    int64_t worst = 0;
    for (int i = 0; i < N; i++) y[i] = i % 3 ? 1.5f : -0.75f;
    vkl_cpu_silu_mul_avx2(x, y, got, N);
    for (int i = 0; i < N; i++) {
        volatile float e = expf(-x[i]), q = x[i] / (1 + e);
        want[i] = q * y[i];
        const int64_t u = ulps(got[i], want[i]);
        CHECKF(u <= SILU_ULPS && signbit(got[i]) == signbit(want[i]), "SiluMul(%g, %g): %g, ref's formula %g", x[i], y[i],
               got[i], want[i]);
        if (u > worst) worst = u;
    }
    printf("SiluMul edges, %d values (a tail of %d): within %lld ulps of ref's, signs and specials alike\n", N, N % 8,
           (long long)worst);
#endif
}

int main(void) {
    vkl_context *ctx;
    CHECK(vkl_context_create(NULL, &ctx) == VKL_OK);
    const vkl_backend_vtable *ref = vkl_backend_find("ref"), *cpu = vkl_backend_find("cpu");
    vkl_backend_device *dref, *dcpu[2];
    const vkl_backend_options two = {.threads = 2}, three = {.threads = 3};
    CHECK_OK(ctx, ref->open(ctx, NULL, &dref));
    CHECK_OK(ctx, cpu->open(ctx, &two, &dcpu[0]));
    CHECK_OK(ctx, cpu->open(ctx, &three, &dcpu[1]));
    const vkl_dtype F = VKL_DTYPE_F32, H = VKL_DTYPE_F16;
    const split_case cases[] = {
        /* 2 x 37 x 1003 = 74222 elements: 4 slices of 18556 (the last shorter) on 2 threads */
        {"Add [2, 37, 1003]", VKL_OP_ADD, 2, {F, F}, {3, 3}, {{2, 37, 1003}, {2, 37, 1003}}, -1, VKL_OK},
        {"Sub", VKL_OP_SUB, 2, {F, F}, {3, 3}, {{2, 37, 1003}, {2, 37, 1003}}, -1, VKL_OK},
        {"Mul", VKL_OP_MUL, 2, {F, F}, {2, 2}, {{129, 513}, {129, 513}}, -1, VKL_OK},
        {"Div", VKL_OP_DIV, 2, {F, F}, {2, 2}, {{129, 513}, {129, 513}}, -1, VKL_OK},
        {"SiluMul", VKL_OP_SILU_MUL, 2, {F, F}, {2, 2}, {{64, 2000}, {64, 2000}}, -1, VKL_OK, true},
        {"SiluMul below the split size", VKL_OP_SILU_MUL, 2, {F, F}, {2, 2}, {{1, 2051}, {1, 2051}}, -1, VKL_OK, true},
        {"Add f16", VKL_OP_ADD, 2, {H, H}, {2, 2}, {{64, 2000}, {64, 2000}}, -1, VKL_OK},
        {"Add, broadcast (ref whole)", VKL_OP_ADD, 2, {F, F}, {2, 1}, {{64, 2000}, {2000}}, -1, VKL_OK},
        {"Add below the split size", VKL_OP_ADD, 2, {F, F}, {2, 2}, {{1, 2048}, {1, 2048}}, -1, VKL_OK},
        {"Add f32 + f16 (rejected)", VKL_OP_ADD, 2, {F, H}, {2, 2}, {{64, 2000}, {64, 2000}}, -1, VKL_ERR_SHAPE},
        {"RoPE cos of 3 batches, X of 2", VKL_OP_ROPE, 3, {F, F, F}, {4, 3, 3},
         {{2, 6, 50, 64}, {3, 50, 32}, {3, 50, 32}}, 0, VKL_ERR_SHAPE},
        {"RoPE rotary width 66 > D 64", VKL_OP_ROPE, 3, {F, F, F}, {4, 2, 2}, {{2, 6, 50, 64}, {50, 66}, {50, 66}}, 0,
         VKL_ERR_SHAPE},
        {"RoPE cos [S, D]", VKL_OP_ROPE, 3, {F, F, F}, {4, 2, 2}, {{2, 6, 50, 64}, {50, 64}, {50, 64}}, 0, VKL_OK},
        {"RoPE cos [B, S, R], interleaved", VKL_OP_ROPE, 3, {F, F, F}, {4, 3, 3},
         {{2, 6, 50, 64}, {2, 50, 32}, {2, 50, 32}}, 1, VKL_OK},
        {"RoPE cos [1, S, R]", VKL_OP_ROPE, 3, {F, F, F}, {4, 3, 3}, {{3, 5, 41, 72}, {1, 41, 40}, {1, 41, 40}}, 0,
         VKL_OK},
        {"RoPE decode (ref whole)", VKL_OP_ROPE, 3, {F, F, F}, {4, 2, 2}, {{1, 32, 1, 64}, {1, 64}, {1, 64}}, 0,
         VKL_OK},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) test_case(ctx, ref, dref, cpu, dcpu, 2, &cases[i]);
    test_silu_edges();
    ref->close(dref);
    cpu->close(dcpu[0]);
    cpu->close(dcpu[1]);
    vkl_context_destroy(ctx);
    printf("%d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
