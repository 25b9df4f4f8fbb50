/* QuantMatMul on the cpu backend against ref, for weights as the importer
 * writes them (engine/quant: E0M4 with n = 1 and 2, int4, int8 per group
 * and per channel) and float W, at decode (M = 1) and prefill-like M, with
 * N not a multiple of the 4-row tiles and a bias:
 *  - the kernels chosen here (AVX2 and AMX; NEON i8mm), those left with
 *    i8mm and amx masked off (AVX2, NEON sdot) and the portable ones give the same bits (the
 *    int32 sums are exact and the f32 epilogue is shared);
 *  - both stay within the A8 tolerance of ref (run_op_cases' A8_RTOL):
 *    activations are quantized to int8 per weight group;
 *  - with the int8-dot feature masked off, quantized W gives ref's bits;
 *  - the kill switches choose the kernels they say: dotprod off is the
 *    portable code, the cooperative-matrix feature off is i8mm and amx off;
 *  - the prefill GEMM (4-bit W, M >= the tile's rows: panels of rows, the
 *    rest by the row kernel) gives every row the bits it gets alone
 *    (M = 1), at M 4..37: below one panel, exactly one and two panels (6
 *    and 12 rows for the 256-bit tiles, 12 and 24 for AVX-512 VNNI's) and
 *    odd tails, groups of 1, 2, 4 and 8 tiles, K in one slice and
 *    cut into two (even and not), with 1 and 2 threads on the default
 *    tile (AVX-512 VNNI's where the CPU has it), with 2 on AVX-VNNI's and
 *    AVX2's (each where present), and on portable C with 3;
 *  - where the CPU has AMX, its GEMM (M >= 32, groups of 64 codes and more)
 *    the same at M 32..100: one pair of 16-row panels and partial ones, N
 *    not a multiple of its 32-row blocks, a short last group, K cut into
 *    slices (cpu_gemm_amx.c's SLICE_BYTES). Without AMX that part is
 *    skipped, saying so. */
#include <math.h>

#include "backend.h"
#include "check.h"
#include "ops.h"
#include "ops/shape_util.h"
#include "quant/quant.h"
#include "run_once.h"

#define A8_RTOL 2e-2

typedef struct mm_case {
    vkl_dtype dtype;
    uint32_t group, e0m4_n;
    int64_t M, N, K;
    float a_scale; /* A's values times this (0: 1); 1e-38: groups too small to quantize */
} mm_case;

static float frand(uint64_t *s) {
    *s = *s * 6364136223846793005u + 1442695040888963407u;
    return (float)((*s >> 40) & 0xFFFF) / 32768.0f - 1.0f;
}

/* Y = QuantMatMul(A, W, bias) on one device. */
static vkl_status run(vkl_context *ctx, const vkl_backend_vtable *be, vkl_backend_device *dev, const mm_case *c,
                      const void *w, size_t w_bytes, const float *bias, const float *a, vkl_host_tensor *y) {
    vkl_graph *g;
    vkl_status st = vkl_graph_create(ctx, &g);
    if (st) return st;
    uint32_t in[3], out;
    vkl_shape sa, sw, sb;
    const int64_t da[2] = {c->M, c->K}, dw[2] = {c->N, c->K}, db[1] = {c->N};
    st = vkl_shape_from_ints(g, da, 2, &sa);
    if (!st) st = vkl_shape_from_ints(g, dw, 2, &sw);
    if (!st) st = vkl_shape_from_ints(g, db, 1, &sb);
    if (!st) st = vkl_graph_add_tensor(g, "a", VKL_DTYPE_F32, VKL_TENSOR_INPUT, &sa, &in[0]);
    if (!st) st = vkl_graph_add_tensor(g, "w", c->dtype, VKL_TENSOR_WEIGHT, &sw, &in[1]);
    if (!st) g->tensors[in[1]].group = vkl_dtype_is_quantized(c->dtype) ? c->group : 0;
    if (!st) st = vkl_graph_set_data(g, in[1], w, w_bytes, true);
    if (!st) st = vkl_graph_add_tensor(g, "bias", VKL_DTYPE_F32, VKL_TENSOR_WEIGHT, &sb, &in[2]);
    if (!st) st = vkl_graph_set_data(g, in[2], bias, (size_t)c->N * 4, true);
    if (!st) st = vkl_graph_add_input(g, in[0]);
    if (!st) st = vkl_graph_add_tensor(g, "y", VKL_DTYPE_INVALID, VKL_TENSOR_ACTIVATION, NULL, &out);
    if (!st) st = vkl_graph_add_output(g, out);
    if (!st) st = vkl_graph_add_node(g, VKL_OP_QUANT_MAT_MUL, "mm", in, 3, &out, 1, NULL, 0, NULL);
    if (!st) st = vkl_graph_validate(g);
    if (!st) st = vkl_graph_infer_shapes(g);
    vkl_host_tensor hin = {VKL_DTYPE_F32, 2, {c->M, c->K}, (void *)a, (size_t)(c->M * c->K) * 4};
    if (!st) st = vkl_run_once_on(ctx, be, dev, g, &hin, y);
    vkl_graph_destroy(g);
    return st;
}

static void test_case(vkl_context *ctx, const vkl_backend_vtable *ref, vkl_backend_device *dref,
                      const vkl_backend_vtable *cpu, vkl_backend_device *const *dcpu, int n_cpu, const mm_case *c) {
    uint64_t seed = (uint64_t)(c->M * 7919 + c->N * 131 + c->K + c->group + c->dtype * 17);
    const size_t nw = (size_t)(c->N * c->K);
    float *wf = malloc(nw * 4), *a = malloc((size_t)(c->M * c->K) * 4), *bias = malloc((size_t)c->N * 4);
    size_t w_bytes = nw * 4;
    void *w = wf;
    for (size_t i = 0; i < nw; i++) wf[i] = frand(&seed) * 0.1f;
    for (int64_t i = 0; i < c->M * c->K; i++) a[i] = frand(&seed) * (c->a_scale != 0 ? c->a_scale : 1.0f);
    for (int64_t i = 0; i < c->N; i++) bias[i] = frand(&seed);
    if (vkl_dtype_is_quantized(c->dtype)) {
        vkl_quant_spec spec;
        vkl_quant_spec_init(&spec, c->dtype);
        spec.group = c->group;
        spec.e0m4_n = c->e0m4_n;
        CHECK_OK(ctx, vkl_quant_canonical_bytes(ctx, c->dtype, c->group, c->N, c->K, &w_bytes));
        w = malloc(w_bytes);
        CHECK_OK(ctx, vkl_quant_quantize(ctx, &spec, wf, c->N, c->K, w, w_bytes));
    } else if (c->dtype != VKL_DTYPE_F32) {
        w_bytes = nw * 2;
        w = malloc(w_bytes);
        CHECK_OK(ctx, c->dtype == VKL_DTYPE_F16 ? vkl_quant_f32_to_f16(ctx, wf, nw, w) : vkl_quant_f32_to_bf16(ctx, wf, nw, w));
    }
    vkl_host_tensor want = {0}, got[4] = {{0}};
    CHECK_OK(ctx, run(ctx, ref, dref, c, w, w_bytes, bias, a, &want));
    for (int d = 0; d < n_cpu; d++) CHECK_OK(ctx, run(ctx, cpu, dcpu[d], c, w, w_bytes, bias, a, &got[d]));
    if (want.data && got[0].data) {
        const float *y = want.data, *z = got[0].data;
        double err = 0, mag = 0;
        for (int64_t i = 0; i < c->M * c->N; i++) {
            err = fmax(err, fabs((double)z[i] - y[i]));
            mag = fmax(mag, fabs((double)y[i]));
        }
        const double rtol = vkl_dtype_is_quantized(c->dtype) ? A8_RTOL : 1e-5;
        CHECKF(err <= rtol * mag + 1e-5, "%s group %u M %lld N %lld K %lld: error %.3g of %.3g", vkl_dtype_name(c->dtype),
               c->group, (long long)c->M, (long long)c->N, (long long)c->K, err, mag);
        printf("%-6s group %3u n %u  M %2lld N %3lld K %4lld: max error %.2e of max |y| %.2e\n", vkl_dtype_name(c->dtype),
               c->group, c->e0m4_n, (long long)c->M, (long long)c->N, (long long)c->K, err, mag);
        for (int d = 0; d < n_cpu; d += 3)
            if (got[d].data && got[1].data && vkl_dtype_is_quantized(c->dtype))
                CHECKF(!memcmp(got[d].data, got[1].data, (size_t)(c->M * c->N) * 4), "%s: %s and portable bits differ",
                       vkl_dtype_name(c->dtype), d ? "i8mm masked" : "chosen kernels");
        if (got[2].data && vkl_dtype_is_quantized(c->dtype))
            CHECKF(!memcmp(got[2].data, want.data, (size_t)(c->M * c->N) * 4), "%s: int8 dot masked off, not ref's bits",
                   vkl_dtype_name(c->dtype));
    }
    vkl_free(ctx, want.data);
    for (int d = 0; d < n_cpu; d++) vkl_free(ctx, got[d].data);
    if (w != wf) free(w);
    free(wf);
    free(a);
    free(bias);
}

/* The kernels each device runs, by the name its caps give ("host CPU, N
 * threads, <kernels> kernels"). */
static const char *kernels(const vkl_backend_vtable *cpu, vkl_backend_device *dev, vkl_backend_caps *caps) {
    cpu->caps(dev, caps);
    const char *k = strrchr(caps->device_name, ',');
    return k ? k + 2 : caps->device_name;
}

/* dotprod off leaves the portable code (i8mm's table needs sdot), the
 * cooperative-matrix feature off is i8mm and amx off; every device says which. */
static void test_switches(vkl_context *ctx, const vkl_backend_vtable *cpu, vkl_backend_device *const *dcpu) {
    const vkl_backend_options no_sdot = {.threads = 2, .disable_isa = VKL_ISA_DOTPROD | VKL_ISA_AVX2};
    const vkl_backend_options no_coopmat = {.threads = 2, .disable_features = VKL_FEATURE_COOPMAT};
    vkl_backend_device *d1, *d2;
    vkl_backend_caps c[5];
    CHECK_OK(ctx, cpu->open(ctx, &no_sdot, &d1));
    CHECK_OK(ctx, cpu->open(ctx, &no_coopmat, &d2));
    const char *chosen = kernels(cpu, dcpu[0], &c[0]), *sdot = kernels(cpu, dcpu[3], &c[1]),
               *plain = kernels(cpu, dcpu[1], &c[2]);
    printf("kernels: default %s, i8mm and amx off %s, all off %s\n", chosen, sdot, plain);
    CHECKF(!strcmp(plain, "portable kernels"), "all off: %s", c[2].device_name);
    CHECKF(!strcmp(kernels(cpu, d1, &c[3]), plain), "dotprod and avx2 off: %s", c[3].device_name);
    CHECKF(!strcmp(kernels(cpu, d2, &c[4]), sdot), "coopmat off: %s", c[4].device_name);
    cpu->close(d1);
    cpu->close(d2);
}

/* Each row of a GEMM against the same row run alone, on every device. */
static void test_gemm_rows(vkl_context *ctx, const vkl_backend_vtable *cpu, vkl_backend_device *const *devs, int n_devs,
                           const mm_case *c) {
    uint64_t seed = (uint64_t)(c->M * 31 + c->N * 7 + c->K + c->group);
    const size_t nw = (size_t)(c->N * c->K);
    float *wf = malloc(nw * 4), *a = malloc((size_t)(c->M * c->K) * 4), *bias = malloc((size_t)c->N * 4);
    for (size_t i = 0; i < nw; i++) wf[i] = frand(&seed) * 0.1f;
    for (int64_t i = 0; i < c->M * c->K; i++) a[i] = frand(&seed);
    for (int64_t i = 0; i < c->N; i++) bias[i] = frand(&seed);
    vkl_quant_spec spec;
    vkl_quant_spec_init(&spec, c->dtype);
    spec.group = c->group;
    spec.e0m4_n = c->e0m4_n;
    size_t w_bytes = 0;
    CHECK_OK(ctx, vkl_quant_canonical_bytes(ctx, c->dtype, c->group, c->N, c->K, &w_bytes));
    void *w = malloc(w_bytes);
    CHECK_OK(ctx, vkl_quant_quantize(ctx, &spec, wf, c->N, c->K, w, w_bytes));
    int same = 1;
    for (int d = 0; d < n_devs; d++) {
        vkl_host_tensor all = {0};
        CHECK_OK(ctx, run(ctx, cpu, devs[d], c, w, w_bytes, bias, a, &all));
        for (int64_t m = 0; m < c->M && all.data; m++) {
            mm_case one = *c;
            one.M = 1;
            vkl_host_tensor row = {0};
            CHECK_OK(ctx, run(ctx, cpu, devs[d], &one, w, w_bytes, bias, a + m * c->K, &row));
            if (row.data && memcmp(row.data, (const float *)all.data + m * c->N, (size_t)c->N * 4)) same = 0;
            vkl_free(ctx, row.data);
        }
        vkl_free(ctx, all.data);
    }
    CHECKF(same, "%s group %u M %lld N %lld K %lld: a GEMM row differs from the row alone", vkl_dtype_name(c->dtype),
           c->group, (long long)c->M, (long long)c->N, (long long)c->K);
    if (same)
        printf("GEMM %-6s group %3u M %2lld N %3lld K %4lld: every row's bits = the row alone, on %d devices\n",
               vkl_dtype_name(c->dtype), c->group, (long long)c->M, (long long)c->N, (long long)c->K, n_devs);
    free(w);
    free(wf);
    free(a);
    free(bias);
}

int main(void) {
    vkl_context *ctx;
    CHECK(vkl_context_create(NULL, &ctx) == VKL_OK);
    const vkl_backend_vtable *ref = vkl_backend_find("ref"), *cpu = vkl_backend_find("cpu");
    vkl_backend_device *dref, *dcpu[4];
    const vkl_backend_options portable = {.threads = 3, .disable_isa = ~0u};
    const vkl_backend_options no_dot = {.disable_features = VKL_FEATURE_INT8_DOT};
    /* the matrix instructions off (smmla, AMX tiles) */
    const vkl_backend_options no_mmla = {.threads = 2, .disable_isa = VKL_ISA_I8MM | VKL_ISA_AMX};
    CHECK_OK(ctx, ref->open(ctx, NULL, &dref));
    CHECK_OK(ctx, cpu->open(ctx, NULL, &dcpu[0]));
    CHECK_OK(ctx, cpu->open(ctx, &portable, &dcpu[1]));
    CHECK_OK(ctx, cpu->open(ctx, &no_dot, &dcpu[2]));
    CHECK_OK(ctx, cpu->open(ctx, &no_mmla, &dcpu[3]));
    test_switches(ctx, cpu, dcpu);
    const mm_case cases[] = {
        {VKL_DTYPE_Q_E0M4, 128, 1, 1, 13, 512},  {VKL_DTYPE_Q_E0M4, 128, 2, 7, 30, 256},
        {VKL_DTYPE_Q_E0M4, 32, 1, 3, 4, 64},     {VKL_DTYPE_Q_E0M4, 64, 1, 1, 64, 1344},
        {VKL_DTYPE_Q_INT4, 128, 0, 1, 11, 384},  {VKL_DTYPE_Q_INT4, 32, 0, 5, 9, 96},
        {VKL_DTYPE_Q_INT8, 256, 0, 1, 19, 256},  {VKL_DTYPE_Q_INT8, 32, 0, 6, 7, 160},
        {VKL_DTYPE_Q_INT8, 16, 0, 2, 5, 48},     {VKL_DTYPE_F32, 0, 0, 1, 9, 100},
        {VKL_DTYPE_F16, 0, 0, 4, 6, 72},         {VKL_DTYPE_BF16, 0, 0, 1, 10, 40},
        {VKL_DTYPE_Q_E0M4, 32, 1, 2, 8, 64, 1e-38f},
        /* K not a multiple of the group: a short last group (the bundled model's K = 688) */
        {VKL_DTYPE_Q_E0M4, 128, 1, 3, 13, 688},  {VKL_DTYPE_Q_INT4, 64, 0, 2, 9, 100},
        {VKL_DTYPE_Q_INT8, 32, 0, 5, 7, 40},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) test_case(ctx, ref, dref, cpu, dcpu, 4, &cases[i]);
    /* every GEMM tile this CPU has: the default's (AVX-512 VNNI's where
     * present), AVX-VNNI's, AVX2's */
    const vkl_backend_options one_thread = {.threads = 1}, two_threads = {.threads = 2},
                              avxvnni = {.threads = 2, .disable_isa = VKL_ISA_AVX512VNNI},
                              avx2 = {.threads = 2, .disable_isa = VKL_ISA_AVX512VNNI | VKL_ISA_AVXVNNI};
    vkl_backend_device *gemm_devs[5] = {dcpu[1], NULL, NULL, NULL, NULL};
    CHECK_OK(ctx, cpu->open(ctx, &one_thread, &gemm_devs[1]));
    CHECK_OK(ctx, cpu->open(ctx, &two_threads, &gemm_devs[2]));
    CHECK_OK(ctx, cpu->open(ctx, &avxvnni, &gemm_devs[3]));
    CHECK_OK(ctx, cpu->open(ctx, &avx2, &gemm_devs[4]));
    vkl_backend_caps tile_caps[3];
    printf("GEMM tiles: %s, %s, %s\n", kernels(cpu, gemm_devs[2], &tile_caps[0]),
           kernels(cpu, gemm_devs[3], &tile_caps[1]), kernels(cpu, gemm_devs[4], &tile_caps[2]));
    const mm_case gemm[] = {
        {VKL_DTYPE_Q_E0M4, 128, 1, 4, 13, 256}, {VKL_DTYPE_Q_E0M4, 128, 2, 13, 30, 384},
        {VKL_DTYPE_Q_INT4, 32, 0, 8, 9, 96},    {VKL_DTYPE_Q_INT4, 256, 0, 37, 21, 512},
        {VKL_DTYPE_Q_E0M4, 128, 1, 5, 130, 128}, {VKL_DTYPE_Q_E0M4, 128, 1, 6, 7, 256},
        {VKL_DTYPE_Q_INT4, 64, 0, 12, 10, 192},  {VKL_DTYPE_Q_E0M4, 128, 2, 17, 33, 640},
        /* K cut into slices (cpu_gemm.c's PANEL_SLICE_BYTES): 2 of 12 groups; 33 + 32 groups of 64 */
        {VKL_DTYPE_Q_E0M4, 128, 1, 13, 9, 3072}, {VKL_DTYPE_Q_INT4, 64, 0, 31, 6, 4160},
        /* two whole panels of 12 rows, nothing left over */
        {VKL_DTYPE_Q_E0M4, 128, 1, 24, 11, 512},
        {VKL_DTYPE_Q_E0M4, 128, 1, 9, 21, 688}, {VKL_DTYPE_Q_INT4, 32, 0, 37, 9, 688}, /* short last groups */
    };
    for (size_t i = 0; i < sizeof(gemm) / sizeof(gemm[0]); i++) test_gemm_rows(ctx, cpu, gemm_devs, 5, &gemm[i]);
    vkl_backend_caps caps;
    if (strstr(kernels(cpu, gemm_devs[2], &caps), "amx")) {
        const mm_case amx[] = {
            {VKL_DTYPE_Q_E0M4, 128, 1, 32, 13, 256}, {VKL_DTYPE_Q_INT4, 64, 0, 33, 40, 192},
            {VKL_DTYPE_Q_E0M4, 128, 2, 69, 70, 688}, {VKL_DTYPE_Q_INT4, 256, 0, 47, 33, 512},
            /* 100 rows pad to 128: 96 groups of 64 a slice, so K 6400 is two */
            {VKL_DTYPE_Q_E0M4, 64, 1, 100, 5, 6400},
            /* int8 weights: the values as they are, no zero */
            {VKL_DTYPE_Q_INT8, 128, 0, 32, 13, 256}, {VKL_DTYPE_Q_INT8, 64, 0, 69, 70, 688},
            {VKL_DTYPE_Q_INT8, 256, 0, 47, 33, 512}, {VKL_DTYPE_Q_INT8, 64, 0, 100, 5, 6400},
        };
        for (size_t i = 0; i < sizeof(amx) / sizeof(amx[0]); i++) test_gemm_rows(ctx, cpu, gemm_devs, 3, &amx[i]);
    } else {
        printf("AMX GEMM: skipped, this CPU (or its OS) has no AMX-INT8 (%s)\n", caps.device_name);
    }
    for (int d = 1; d < 5; d++) cpu->close(gemm_devs[d]);
    ref->close(dref);
    cpu->close(dcpu[0]);
    cpu->close(dcpu[1]);
    cpu->close(dcpu[2]);
    cpu->close(dcpu[3]);
    vkl_context_destroy(ctx);
    printf("%d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
