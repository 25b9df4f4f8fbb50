/* The Vulkan attention kernels and the KV cache write against the ref
 * backend, at model sizes the op cases do not reach:
 *  (a) Attention through the vtable, relative L2 error ||y_vk - y_ref|| /
 *      ||y_ref|| <= 1e-5 (f32 on the GPU, double in ref): decoding (S = 1
 *      and 4) at KV lengths 1000-4000 with GQA 4:1, 8:1 and MQA 20:1, head dims 64 and
 *      128, f32 / f16 / int8-key + fp8-value caches, causal, sliding window,
 *      a float mask hiding padded keys (their V rows NaN); prefill (S =
 *      40-200, past keys, window, B 2, D 72, f32 / f16 / bf16 / int8 + fp8
 *      caches, not causal); each under the device's own choices and again
 *      with split counts forced (1, 7, 64) and with the flash prefill kernel
 *      forced (the device's build, then the f32 one), so split-K decoding
 *      runs with many chunks and every kernel sees the same data. Where the
 *      matrix units' kernel runs the bound is its fp16 one (bound_of); a
 *      float mask lowering half the keys makes that kernel rescale its
 *      output lazily. (Its emulation runs here only when asked,
 *      VKL_TEST_ATTN_EMULATED=1: on lavapipe it goes wrong beyond a few
 *      hundred keys, lavapipe's defect, docs/vulkan.md says how; ctest
 *      ops.vulkan.attention-prefill-emulated runs it on the op cases);
 *  (b) two decode Attention nodes of different sizes in one graph (they
 *      share the executable's scratch buffer);
 *  (c) KvAppend rows equal ref's BYTE FOR BYTE for int8 keys (d = max|x| /
 *      127, roundf, subnormal and huge values, all-zero rows), fp8 e4m3 /
 *      e5m2 (ties, saturation, subnormals), f16, bf16 and f32, from f32, f16
 *      and bf16 x;
 *      KvAppend also with an output that is not the state's memory;
 *  (d) replays of a decode executable give identical bits; node_times
 *      answers (the time is printed, for information).
 * VKL_TEST_ATTN_BENCH=1 runs none of that but times the kernels (prefill:
 * both builds) at model sizes (bench(), for docs/vulkan.md).
 * Validation (VKL_VK_VALIDATION=1 unless the environment says 0) is on: any
 * validation message fails. No Vulkan: prints why and exits 77. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph_finish.h"
#include "test_rng.h"
#include "context.h"
#include "dtype.h"
#include "graph.h"
#include "ops.h"
#include "ops/shape_util.h"
#include "quant/quant.h"
#include "run_once.h"
#include "vulkan_start.h"
#include "../../backends/vulkan/vulkan_backend.h"

/* node_times answers only on a device opened for profiling */

#define BOUND 1e-5

/* ---- one-node graphs from host tensors ----------------------------------------------------------- */

typedef struct tensor {
    vkl_host_tensor h;
    uint32_t group;
} tensor;

static void tensor_init(tensor *t, vkl_dtype dtype, uint32_t group, uint32_t rank, const int64_t *dims) {
    memset(t, 0, sizeof(*t));
    t->h.dtype = dtype;
    t->h.rank = rank;
    t->group = group;
    int64_t n = 1;
    for (uint32_t d = 0; d < rank; d++) n *= t->h.dims[d] = dims[d];
    CHECK(vkl_tensor_bytes(dtype, group, n, &t->h.nbytes));
    t->h.data = calloc(t->h.nbytes ? t->h.nbytes : 1, 1);
}

/* op(inputs...) -> one output, every input a graph input of its own shape. */
static vkl_graph *graph1(vkl_context *ctx, vkl_op op, const tensor *in, uint32_t n_in, const vkl_attr *attrs,
                         uint32_t n_attrs) {
    vkl_graph *g = NULL;
    CHECK_OK(ctx, vkl_graph_create(ctx, &g));
    if (!g) return NULL;
    uint32_t ids[8], out = VKL_NONE;
    vkl_status st = VKL_OK;
    for (uint32_t i = 0; !st && i < n_in; i++) {
        char name[16];
        snprintf(name, sizeof(name), "in%u", i);
        vkl_shape s;
        st = vkl_shape_from_ints(g, in[i].h.dims, in[i].h.rank, &s);
        if (!st) st = vkl_graph_add_tensor(g, name, in[i].h.dtype, VKL_TENSOR_INPUT, &s, &ids[i]);
        if (!st) g->tensors[ids[i]].group = in[i].group;
        if (!st) st = vkl_graph_add_input(g, ids[i]);
    }
    if (!st) st = vkl_graph_add_tensor(g, "out", VKL_DTYPE_INVALID, VKL_TENSOR_ACTIVATION, NULL, &out);
    if (!st) st = vkl_graph_add_node(g, op, "node", ids, n_in, &out, 1, attrs, n_attrs, NULL);
    if (!st) st = vkl_graph_add_output(g, out);
    return test_graph_finish(ctx, g, st);
}

static vkl_host_tensor inputs_of(const tensor *t) { return t->h; }

/* ---- random tensors ------------------------------------------------------------------------------- */

static void fill_gauss(rng *r, float *x, int64_t n, float scale) {
    for (int64_t i = 0; i < n; i++) x[i] = scale * rnd_gauss(r);
}

/* A KV cache tensor [T, B, H, D] (kv_layout 1) of dtype dt holding random
 * values, through engine/quant's encoders. */
static void kv_fill(vkl_context *ctx, rng *r, tensor *t, vkl_dtype dt, const int64_t dims[4], float scale) {
    const int64_t rows = dims[0] * dims[1] * dims[2], D = dims[3], n = rows * D;
    tensor_init(t, dt, dt == VKL_DTYPE_Q_INT8 ? (uint32_t)D : 0, 4, dims);
    float *x = malloc((size_t)n * sizeof(float));
    fill_gauss(r, x, n, scale);
    switch (dt) {
    case VKL_DTYPE_F32: memcpy(t->h.data, x, (size_t)n * 4); break;
    case VKL_DTYPE_F16:
        for (int64_t i = 0; i < n; i++) ((uint16_t *)t->h.data)[i] = vkl_f32_to_f16(x[i]);
        break;
    case VKL_DTYPE_BF16:
        for (int64_t i = 0; i < n; i++) ((uint16_t *)t->h.data)[i] = vkl_f32_to_bf16(x[i]);
        break;
    case VKL_DTYPE_Q_INT8: CHECK_OK(ctx, vkl_kv_quantize_keys(ctx, x, rows, 1, D, t->h.data, t->h.nbytes)); break;
    default: CHECK_OK(ctx, vkl_kv_quantize_values(ctx, dt, x, (size_t)n, t->h.data)); break;
    }
    free(x);
}

/* NaN in every element of a float V cache's positions >= from (kv_layout
 * 1: position first): the V rows of keys a mask hides may hold anything,
 * padding included, and must not reach the output. (K is left finite: the
 * f32 kernels add the mask to the dot product, and NaN + -inf is NaN, where
 * ref tests the mask first.) Coded caches are left as they are. */
static void kv_poison_from(tensor *t, int64_t from) {
    const int64_t row = t->h.dims[1] * t->h.dims[2] * t->h.dims[3], n = t->h.dims[0] * row;
    for (int64_t i = from * row; i < n; i++) {
        if (t->h.dtype == VKL_DTYPE_F32) ((float *)t->h.data)[i] = NAN;
        else if (t->h.dtype == VKL_DTYPE_F16) ((uint16_t *)t->h.data)[i] = 0x7e00;
        else if (t->h.dtype == VKL_DTYPE_BF16) ((uint16_t *)t->h.data)[i] = 0x7fc0;
    }
}

static double rel_l2(const float *got, const float *want, int64_t n) {
    double e = 0, w = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = (double)got[i] - want[i];
        e += d * d;
        w += (double)want[i] * want[i];
    }
    return w > 0 ? sqrt(e / w) : sqrt(e);
}

/* ---- (a) attention ---------------------------------------------------------------------------------- */

typedef struct attn_case {
    const char *what;
    int64_t B, Hq, Hkv, S, T, D;
    vkl_dtype kdt, vdt;
    int64_t causal, window;
    int64_t valid; /* > 0: a float mask [B, 1, S, T] hides keys >= valid (padded decode) */
    float penalty; /* > 0: that float mask adds -penalty to the first T / 2 keys: a row's max then jumps by about
                    * that much (the matrix units' kernel rescales O lazily, only where it jumps by 8 or more) */
} attn_case;

static const attn_case attn_cases[] = {
    {"decode GQA 4:1, D 64, T 1000, f32", 1, 8, 2, 1, 1000, 64, VKL_DTYPE_F32, VKL_DTYPE_F32, 1, 0, 0},
    {"decode GQA 4:1, D 128, T 4000, int8 K, e4m3 V", 1, 32, 8, 1, 4000, 128, VKL_DTYPE_Q_INT8, VKL_DTYPE_FP8_E4M3, 1,
     0, 0},
    {"decode GQA 8:1, D 128, T 2048 padded to 1987, f16, window 512", 1, 16, 2, 1, 2048, 128, VKL_DTYPE_F16,
     VKL_DTYPE_F16, 1, 512, 1987},
    {"decode S 4, GQA 4:1, D 64, T 1500, int8 K, e5m2 V, B 2", 2, 8, 2, 4, 1500, 64, VKL_DTYPE_Q_INT8,
     VKL_DTYPE_FP8_E5M2, 1, 0, 0},
    {"decode MQA 20:1, S 2 (40 rows: 3 blocks), D 64, T 1200, f16", 1, 20, 1, 2, 1200, 64, VKL_DTYPE_F16,
     VKL_DTYPE_F16, 1, 0, 0},
    {"prefill S 128, GQA 4:1, D 64, causal", 1, 8, 2, 128, 128, 64, VKL_DTYPE_F32, VKL_DTYPE_F32, 1, 0, 0},
    {"prefill S 96 after 204, D 128, int8 K, e4m3 V, window 64", 1, 4, 2, 96, 300, 128, VKL_DTYPE_Q_INT8,
     VKL_DTYPE_FP8_E4M3, 1, 64, 0},
    {"prefill S 200, GQA 4:1, D 128, f16, causal", 1, 8, 2, 200, 200, 128, VKL_DTYPE_F16, VKL_DTYPE_F16, 1, 0, 0},
    {"prefill S 160 after 96, D 64, f16, causal, keys < 128 less 12", 1, 8, 2, 160, 256, 64, VKL_DTYPE_F16,
     VKL_DTYPE_F16, 1, 0, 0, 12.0f},
    {"prefill S 77 after 50, D 64, bf16, window 40, NaN V rows >= 120 masked", 1, 4, 1, 77, 127, 64, VKL_DTYPE_BF16,
     VKL_DTYPE_BF16, 1, 40, 120},
    {"prefill S 40, T 90, B 2, D 72, f32, not causal", 2, 4, 2, 40, 90, 72, VKL_DTYPE_F32, VKL_DTYPE_F32, 0, 0, 0},
};

/* knob settings the attention cases run under (read at open): VKL_VK_ATTN,
 * VKL_VK_ATTN_SPLITS, VKL_VK_ATTN_PREFILL, VKL_VK_ATTN_SG_FROM (auto's
 * choice of decode kernel by key count: 1 the subgroup kernel wherever it
 * runs, 1000000 the workgroup one at every length here), and the workgroup
 * decode kernel's latency knobs as "FOLD/PRELOAD/VB/PARTS"
 * (VKL_VK_ATTN_WG_*; "" leaves them unset: no fold, loads where used, 8 V
 * rows at once, max and sum in 8 strips): its fold to 64 chunks, to 16 with
 * both early loads and 16 V rows at once, the serial max and sum, and odd
 * values (K loads early, V late, 3 V rows, 64 strips). */
typedef struct setting {
    const char *kernel, *splits, *prefill, *sg_from, *wg;
} setting;

static const setting settings[] = {
    {"", "", "", "", ""},          {"", "1", "", "", ""},          {"", "7", "", "", ""},
    {"", "64", "", "", ""},        {"decode-wg", "", "", "", ""},  {"decode-wg", "7", "", "", ""},
    {"prefill", "", "", "", ""},   {"prefill", "", "scalar", "", ""}, {"", "", "", "1", ""},
    {"", "", "", "1000000", ""},   {"decode-wg", "64", "", "", "1///"}, {"decode-wg", "7", "", "", "0/0/8/1"},
    {"decode-wg", "", "", "", "//3/64"}, {"decode-wg", "1", "", "", "/2//"}, {"decode-wg", "", "", "", "2/3/16/"}};

/* VKL_TEST_ATTN_EMULATED=1 adds the matrix units' kernel emulated (its
 * _emu build, plain f32 fragments) on every case: for a GPU, where it can be
 * told apart from lavapipe's defect (docs/vulkan.md, "Prefill attention on
 * the matrix units"). */
static const setting emulated = {"prefill", "", "emulated", "", ""};

static void set_env(const char *name, const char *v) {
    if (*v) setenv(name, v, 1);
    else unsetenv(name);
}

static void set_knobs(const setting *s) {
    set_env("VKL_VK_ATTN", s->kernel);
    set_env("VKL_VK_ATTN_SPLITS", s->splits);
    set_env("VKL_VK_ATTN_PREFILL", s->prefill);
    set_env("VKL_VK_ATTN_SG_FROM", s->sg_from);
    static const char *const wg[] = {"VKL_VK_ATTN_WG_FOLD", "VKL_VK_ATTN_WG_PRELOAD", "VKL_VK_ATTN_WG_VB",
                                     "VKL_VK_ATTN_WG_PARTS"};
    const char *p = s->wg;
    for (size_t i = 0; i < VKL_ARRAY_LEN(wg); i++) {
        char v[16] = {0};
        const size_t n = strcspn(p, "/");
        if (n < sizeof(v)) memcpy(v, p, n);
        set_env(wg[i], v);
        p += n + (p[n] == '/');
    }
}

/* The error bound of case c under setting s on dev: BOUND (f32 arithmetic
 * throughout), or, where the prefill on the matrix units runs (the device
 * says whether it runs it or its emulation; float caches only, the others
 * keep the f32 kernel), the bound of fp16 operands (docs/vulkan.md,
 * "Prefill attention on the matrix units", says why): Q * scale and the
 * weights P rounded to fp16, and K and V too for an f32 cache (fp16 holds
 * an f16 cache exactly, and a bf16 one too but for values below 2^-14). */
#define CM_BOUND_F16_CACHE 2e-3
#define CM_BOUND_F32_CACHE 3e-3
static double bound_of(const attn_case *c, const setting *s, vkl_backend_device *dev) {
    const bool coded = c->kdt != VKL_DTYPE_F32 && c->kdt != VKL_DTYPE_F16 && c->kdt != VKL_DTYPE_BF16;
    const bool prefill = !strcmp(s->kernel, "prefill") || (c->S > 4 && !*s->kernel);
    if (!vkl_vk_attention_coopmat(dev) || coded || !prefill) return BOUND;
    return c->kdt == VKL_DTYPE_F32 || c->vdt == VKL_DTYPE_F32 ? CM_BOUND_F32_CACHE : CM_BOUND_F16_CACHE;
}

/* Q, K, V (and a mask) for case c; returns the number of inputs. */
static uint32_t attn_inputs(vkl_context *ctx, rng *r, const attn_case *c, tensor *in) {
    const int64_t qd[4] = {c->B, c->Hq, c->S, c->D}, kd[4] = {c->T, c->B, c->Hkv, c->D};
    tensor_init(&in[0], VKL_DTYPE_F32, 0, 4, qd);
    fill_gauss(r, in[0].h.data, c->B * c->Hq * c->S * c->D, 1.0f);
    kv_fill(ctx, r, &in[1], c->kdt, kd, 1.0f);
    kv_fill(ctx, r, &in[2], c->vdt, kd, 1.0f);
    if (c->valid <= 0 && c->penalty <= 0) return 3;
    if (c->valid > 0) kv_poison_from(&in[2], c->valid);
    const int64_t md[4] = {c->B, 1, c->S, c->T};
    tensor_init(&in[3], VKL_DTYPE_F32, 0, 4, md);
    float *m = in[3].h.data;
    for (int64_t i = 0; i < c->B * c->S * c->T; i++)
        m[i] = c->valid > 0 && i % c->T >= c->valid ? -INFINITY : i % c->T < c->T / 2 ? -c->penalty : 0.0f;
    return 4;
}

static void test_attention(vkl_context *ctx, const vkl_backend_vtable *ref, vkl_backend_device *ref_dev,
                           const vkl_backend_vtable *vk, rng *r) {
    for (size_t k = 0; k < VKL_ARRAY_LEN(attn_cases); k++) {
        const attn_case *c = &attn_cases[k];
        tensor in[4];
        const uint32_t n_in = attn_inputs(ctx, r, c, in);
        const vkl_attr attrs[3] = {{.name = "kv_layout", .kind = VKL_ATTR_INT, .i = 1},
                                   {.name = "causal", .kind = VKL_ATTR_INT, .i = c->causal},
                                   {.name = "window", .kind = VKL_ATTR_INT, .i = c->window}};
        vkl_graph *g = graph1(ctx, VKL_OP_ATTENTION, in, n_in, attrs, 3);
        vkl_host_tensor hin[4], want = {0};
        for (uint32_t i = 0; i < n_in; i++) hin[i] = inputs_of(&in[i]);
        if (g) CHECK_OK(ctx, vkl_run_once_on(ctx, ref, ref_dev, g, hin, &want));
        const int64_t n = c->B * c->Hq * c->S * c->D;
        printf(" %-64s", c->what);
        const char *emu_env = getenv("VKL_TEST_ATTN_EMULATED");
        const bool emu = emu_env && strcmp(emu_env, "0");
        for (size_t s = 0; g && want.data && s < VKL_ARRAY_LEN(settings) + emu; s++) {
            const setting *st = s < VKL_ARRAY_LEN(settings) ? &settings[s] : &emulated;
            set_knobs(st);
            vkl_backend_device *dev = NULL;
            vkl_host_tensor got = {0};
            CHECK_OK(ctx, test_open_env(ctx, vk, 0, false, &dev));
            if (dev) CHECK_OK(ctx, vkl_run_once_on(ctx, vk, dev, g, hin, &got));
            if (got.data) {
                const double e = rel_l2(got.data, want.data, n), bound = bound_of(c, st, dev);
                printf(" %s%s%s%s%s%s%s%s%s %.1e", st->kernel, *st->splits ? "splits=" : "",
                       *st->kernel || *st->splits ? st->splits : "auto",
                       *st->prefill ? "/" : "", st->prefill, *st->sg_from ? "/sg_from=" : "",
                       st->sg_from, *st->wg ? "/wg=" : "", st->wg, e);
                CHECKF(e <= bound, "%s, VKL_VK_ATTN='%s' VKL_VK_ATTN_SPLITS='%s' VKL_VK_ATTN_PREFILL='%s' "
                       "VKL_VK_ATTN_SG_FROM='%s' VKL_VK_ATTN_WG_* (FOLD/PRELOAD/VB/PARTS)='%s': relative L2 error "
                       "%.3g > %g", c->what, st->kernel, st->splits, st->prefill,
                       st->sg_from, st->wg, e, bound);
            }
            vkl_free(ctx, got.data);
            if (dev) vk->close(dev);
        }
        printf("\n");
        set_knobs(&settings[0]);
        vkl_free(ctx, want.data);
        vkl_graph_destroy(g);
        for (uint32_t i = 0; i < n_in; i++) free(in[i].h.data);
    }
}

/* ---- (b) two attention nodes, one scratch ----------------------------------------------------------- */

static void test_two_nodes(vkl_context *ctx, const vkl_backend_vtable *ref, vkl_backend_device *ref_dev,
                           const vkl_backend_vtable *vk, vkl_backend_device *dev, rng *r) {
    /* y1 = Attention(q, k1, v1) (T 700, GQA 4:1), y2 = Attention(y1, k2, v2) (T 2500, GQA 2:1) */
    const int64_t qd[4] = {1, 8, 1, 64}, k1d[4] = {700, 1, 2, 64}, k2d[4] = {2500, 1, 4, 64};
    tensor in[5];
    tensor_init(&in[0], VKL_DTYPE_F32, 0, 4, qd);
    fill_gauss(r, in[0].h.data, 8 * 64, 1.0f);
    kv_fill(ctx, r, &in[1], VKL_DTYPE_F16, k1d, 1.0f);
    kv_fill(ctx, r, &in[2], VKL_DTYPE_F16, k1d, 1.0f);
    kv_fill(ctx, r, &in[3], VKL_DTYPE_Q_INT8, k2d, 1.0f);
    kv_fill(ctx, r, &in[4], VKL_DTYPE_FP8_E4M3, k2d, 1.0f);
    vkl_graph *g = NULL;
    CHECK_OK(ctx, vkl_graph_create(ctx, &g));
    uint32_t ids[5], y1 = VKL_NONE, y2 = VKL_NONE;
    vkl_status st = g ? VKL_OK : VKL_ERR_OUT_OF_MEMORY;
    for (uint32_t i = 0; !st && i < 5; i++) {
        char name[16];
        snprintf(name, sizeof(name), "in%u", i);
        vkl_shape s;
        st = vkl_shape_from_ints(g, in[i].h.dims, 4, &s);
        if (!st) st = vkl_graph_add_tensor(g, name, in[i].h.dtype, VKL_TENSOR_INPUT, &s, &ids[i]);
        if (!st) g->tensors[ids[i]].group = in[i].group;
        if (!st) st = vkl_graph_add_input(g, ids[i]);
    }
    const vkl_attr attrs[2] = {{.name = "kv_layout", .kind = VKL_ATTR_INT, .i = 1},
                               {.name = "causal", .kind = VKL_ATTR_INT, .i = 1}};
    if (!st) st = vkl_graph_add_tensor(g, "y1", VKL_DTYPE_INVALID, VKL_TENSOR_ACTIVATION, NULL, &y1);
    if (!st) st = vkl_graph_add_tensor(g, "y2", VKL_DTYPE_INVALID, VKL_TENSOR_ACTIVATION, NULL, &y2);
    const uint32_t a1[3] = {ids[0], ids[1], ids[2]};
    if (!st) st = vkl_graph_add_node(g, VKL_OP_ATTENTION, "attn1", a1, 3, &y1, 1, attrs, 2, NULL);
    const uint32_t a2[3] = {y1, ids[3], ids[4]};
    if (!st) st = vkl_graph_add_node(g, VKL_OP_ATTENTION, "attn2", a2, 3, &y2, 1, attrs, 2, NULL);
    if (!st) st = vkl_graph_add_output(g, y2);
    if (!st) st = vkl_graph_validate(g);
    if (!st) st = vkl_graph_infer_shapes(g);
    CHECK_OK(ctx, st);
    vkl_host_tensor hin[5], want = {0}, got = {0};
    for (uint32_t i = 0; i < 5; i++) hin[i] = inputs_of(&in[i]);
    if (!st) CHECK_OK(ctx, vkl_run_once_on(ctx, ref, ref_dev, g, hin, &want));
    if (!st) CHECK_OK(ctx, vkl_run_once_on(ctx, vk, dev, g, hin, &got));
    if (want.data && got.data) {
        const double e = rel_l2(got.data, want.data, 8 * 64);
        printf(" two decode nodes (T 700 then 2500) sharing the scratch: %.1e\n", e);
        CHECKF(e <= BOUND, "two attention nodes: relative L2 error %.3g > %g", e, BOUND);
    }
    vkl_free(ctx, want.data);
    vkl_free(ctx, got.data);
    vkl_graph_destroy(g);
    for (uint32_t i = 0; i < 5; i++) free(in[i].h.data);
}

/* ---- running by hand ---------------------------------------------------------------------------- */

/* Runs g by hand (so the executable can be replayed and timed, and so
 * every tensor gets its own memory: an in-place output is NOT aliased to
 * its input here): 256-byte aligned slots poisoned with 0xFF, inputs
 * written, `reps` executes that must give the same bits. *out (malloc'ed,
 * the first output's bytes) and *ms (the best time of node 0; -1 without
 * timestamps) when not NULL. */
static vkl_status run_manual(vkl_context *ctx, const vkl_backend_vtable *be, vkl_backend_device *dev,
                             const vkl_graph *g, const vkl_host_tensor *in, int reps, unsigned char **out,
                             double *ms) {
    vkl_backend_weights *w = NULL;
    vkl_backend_buffer *arena = NULL;
    vkl_backend_exec *e = NULL;
    size_t *offsets = calloc(g->n_tensors, sizeof(size_t)), total = 0, out_bytes = 0;
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        int64_t dims[VKL_MAX_RANK], n;
        size_t bytes = 0;
        CHECK_OK(ctx, vkl_tensor_eval(ctx, g, t, NULL, 0, dims, &n, &bytes));
        offsets[t] = total;
        total += (bytes + 255) / 256 * 256;
        if (t == g->outputs[0]) out_bytes = bytes;
    }
    unsigned char *poison = malloc(total), *y = malloc(out_bytes + 1), *again = malloc(out_bytes + 1);
    memset(poison, 0xFF, total);
    vkl_memory_map mem = {NULL, offsets, g->n_tensors};
    vkl_binding b = {NULL, 0};
    vkl_status st = be->weights_load(dev, g, &w);
    if (!st) st = be->buffer_create(dev, ctx, VKL_BUFFER_DEVICE, total, &arena);
    if (!st) st = be->buffer_write(dev, ctx, arena, 0, poison, total);
    for (uint32_t k = 0; !st && k < g->n_inputs; k++)
        st = be->buffer_write(dev, ctx, arena, offsets[g->inputs[k]], in[k].data, in[k].nbytes);
    mem.arena = arena;
    if (!st) st = be->prepare(dev, ctx, g, w, &mem, &b, &e);
    vkl_backend_caps dc;
    be->caps(dev, &dc);
    const bool timed = (dc.features & VKL_FEATURE_TIMESTAMPS) != 0; /* none under VKL_VK_DISABLE=timestamps */
    double best = 1e30;
    for (int rep = 0; !st && rep < reps; rep++) {
        st = be->execute(dev, ctx, e, &b);
        if (!st) st = be->wait(dev, ctx, e);
        if (!st) st = be->buffer_read(dev, ctx, arena, offsets[g->outputs[0]], rep ? again : y, out_bytes);
        if (!st && rep) CHECKF(!memcmp(y, again, out_bytes), "a replay gave different bits");
        double t[8];
        size_t n = 0;
        if (!st && timed) st = be->node_times(dev, ctx, e, t, 8, &n);
        if (!st && timed) CHECKF(n == g->n_nodes, "node_times: %zu entries for %u nodes", n, g->n_nodes);
        if (!st && n >= 1 && t[0] < best) best = t[0];
    }
    CHECK_OK(ctx, st);
    if (ms) *ms = timed ? best : -1;
    if (out && !st) {
        *out = y;
        y = NULL;
    }
    if (e) be->exec_release(dev, ctx, e);
    if (arena) be->buffer_destroy(dev, ctx, arena);
    if (w) be->weights_release(dev, w);
    free(offsets);
    free(poison);
    free(y);
    free(again);
    return st;
}

/* ---- (c) KvAppend, byte for byte ---------------------------------------------------------------------- */

/* x values that stress the encoders: Gaussian rows at scales from 1e-40 to
 * 1e6 (subnormal f32 included), exact ties of the int8 step, fp8 ties and
 * values beyond fp8's range, all-zero rows, negative zeros. */
static void fill_x(rng *r, float *x, int64_t rows, int64_t D) {
    static const float scales[] = {1.0f, 1e-3f, 1e3f, 3e-38f, 1e-40f, 1e6f, 0.02f, 500.0f};
    for (int64_t i = 0; i < rows; i++) {
        float *row = x + i * D;
        const uint32_t kind = rnd_u32(r) % 12;
        const float sc = scales[rnd_u32(r) % VKL_ARRAY_LEN(scales)];
        for (int64_t d = 0; d < D; d++) {
            float v = sc * rnd_gauss(r);
            if (kind == 0) v = d % 5 == 0 ? -0.0f : 0.0f;
            if (kind == 1) v = (float)((int)(rnd_u32(r) % 255) - 127) * 0.5f; /* halves: d = 0.5 or less, ties */
            if (kind == 2) v = (float)(rnd_u32(r) % 64) * 0.0625f + 1.0f;      /* fp8 ties between codes */
            row[d] = v;
        }
    }
}

static void test_kv_append(vkl_context *ctx, const vkl_backend_vtable *ref, vkl_backend_device *ref_dev,
                           const vkl_backend_vtable *vk, vkl_backend_device *dev, rng *r) {
    static const vkl_dtype states[] = {VKL_DTYPE_Q_INT8, VKL_DTYPE_FP8_E4M3, VKL_DTYPE_FP8_E5M2, VKL_DTYPE_F16,
                                       VKL_DTYPE_BF16, VKL_DTYPE_F32};
    static const vkl_dtype xs[] = {VKL_DTYPE_F32, VKL_DTYPE_F16, VKL_DTYPE_BF16};
    const int64_t T = 40, B = 2, H = 4, S = 16, D = 128;
    int bad = 0, runs = 0;
    for (size_t si = 0; si < VKL_ARRAY_LEN(states); si++)
        for (size_t xi = 0; xi < VKL_ARRAY_LEN(xs); xi++) {
            const int64_t sd[4] = {T, B, H, D}, xd[4] = {B, H, S, D}, pd[2] = {B, S};
            tensor in[3];
            kv_fill(ctx, r, &in[0], states[si], sd, 1.0f);
            tensor_init(&in[1], xs[xi], 0, 4, xd);
            tensor_init(&in[2], VKL_DTYPE_I64, 0, 2, pd);
            float *x = malloc((size_t)(B * H * S * D) * sizeof(float));
            fill_x(r, x, B * H * S, D);
            for (int64_t i = 0; i < B * H * S * D; i++) {
                if (xs[xi] == VKL_DTYPE_F32) ((float *)in[1].h.data)[i] = x[i];
                else if (xs[xi] == VKL_DTYPE_F16) /* within f16's range: an inf is refused by ref (int8) */
                    ((uint16_t *)in[1].h.data)[i] = vkl_f32_to_f16(fmaxf(-60000.0f, fminf(60000.0f, x[i])));
                else ((uint16_t *)in[1].h.data)[i] = vkl_f32_to_bf16(x[i]);
            }
            /* distinct positions per batch: a shuffled prefix of [0, T) */
            for (int64_t b = 0; b < B; b++) {
                int64_t perm[40];
                for (int64_t t = 0; t < T; t++) perm[t] = t;
                for (int64_t t = T - 1; t > 0; t--) {
                    int64_t j = rnd_u32(r) % (uint32_t)(t + 1), tmp = perm[t];
                    perm[t] = perm[j];
                    perm[j] = tmp;
                }
                for (int64_t s = 0; s < S; s++) ((int64_t *)in[2].h.data)[b * S + s] = perm[s];
            }
            vkl_graph *g = graph1(ctx, VKL_OP_KV_APPEND, in, 3, NULL, 0);
            vkl_host_tensor hin[3] = {in[0].h, in[1].h, in[2].h}, want = {0}, got = {0};
            if (g) CHECK_OK(ctx, vkl_run_once_on(ctx, ref, ref_dev, g, hin, &want));
            if (g) CHECK_OK(ctx, vkl_run_once_on(ctx, vk, dev, g, hin, &got));
            if (g && want.data && si == 0 && xi == 0) {
                /* the output in its own memory: the state is copied first, then the rows written */
                unsigned char *own = NULL;
                if (!run_manual(ctx, vk, dev, g, hin, 2, &own, NULL))
                    CHECKF(!memcmp(own, want.data, want.nbytes), "KvAppend to a separate output: bytes differ");
                free(own);
            }
            if (want.data && got.data) {
                runs++;
                CHECKF(want.nbytes == got.nbytes && !memcmp(want.data, got.data, want.nbytes),
                       "KvAppend into %s from %s: the bytes differ from ref", vkl_dtype_name(states[si]),
                       vkl_dtype_name(xs[xi]));
                bad += want.nbytes != got.nbytes || memcmp(want.data, got.data, want.nbytes);
            }
            vkl_free(ctx, want.data);
            vkl_free(ctx, got.data);
            vkl_graph_destroy(g);
            free(x);
            for (int i = 0; i < 3; i++) free(in[i].h.data);
        }
    printf(" KvAppend, %d state/x dtype pairs, %lld rows of %lld each: %d differ from ref's bytes\n", runs,
           (long long)(B * S * H), (long long)D, bad);
}

/* ---- (d) replay and timing ------------------------------------------------------------------------------ */

/* One attention configuration timed on a fresh device with VKL_VK_ATTN =
 * kernel (the knob is read at open): the best of `reps` node times; the
 * replays must give identical bits (run_manual). */
static double time_attention(vkl_context *ctx, const vkl_backend_vtable *vk, rng *r, const attn_case *c,
                             const char *kernel, int reps) {
    tensor in[4];
    const uint32_t n_in = attn_inputs(ctx, r, c, in);
    const vkl_attr attrs[2] = {{.name = "kv_layout", .kind = VKL_ATTR_INT, .i = 1},
                               {.name = "causal", .kind = VKL_ATTR_INT, .i = c->causal}};
    vkl_graph *g = graph1(ctx, VKL_OP_ATTENTION, in, n_in, attrs, 2);
    vkl_host_tensor hin[4];
    for (uint32_t i = 0; i < n_in; i++) hin[i] = inputs_of(&in[i]);
    setenv("VKL_VK_ATTN", kernel, 1);
    vkl_backend_device *dev = NULL;
    double ms = -1;
    if (g) CHECK_OK(ctx, test_open_env(ctx, vk, 0, true, &dev));
    if (dev && run_manual(ctx, vk, dev, g, hin, reps, NULL, &ms)) ms = -1;
    if (dev) vk->close(dev);
    unsetenv("VKL_VK_ATTN");
    vkl_graph_destroy(g);
    for (uint32_t i = 0; i < n_in; i++) free(in[i].h.data);
    return ms;
}

static void test_replay(vkl_context *ctx, const vkl_backend_vtable *vk, rng *r) {
    const attn_case *c = &attn_cases[1]; /* decode, T 4000, int8 K, e4m3 V */
    const double ms = time_attention(ctx, vk, r, c, "decode", 3);
    if (ms >= 0) printf(" %s, split-K decode kernel, 3 replays: %.3f ms (informative)\n", c->what, ms);
}

/* VKL_TEST_ATTN_BENCH=1: the kernels at model sizes (Llama-3-8B's heads),
 * timed, for docs/vulkan.md; not part of the test. Decode rows report the
 * K and V bytes read per second, prefill rows the attention FLOP rate (2 *
 * 2 * D per visible (query, key) pair and head). */
static void bench(vkl_context *ctx, const vkl_backend_vtable *vk, rng *r) {
    static const attn_case cases[] = {
        /* the 1B shape's heads (D 64) over the context lengths a chat
         * reaches: where the workgroup kernel overtakes the subgroup one */
        {"decode T 64, f16 cache, D 64", 1, 32, 8, 1, 64, 64, VKL_DTYPE_F16, VKL_DTYPE_F16, 1, 0, 0},
        {"decode T 256, f16 cache, D 64", 1, 32, 8, 1, 256, 64, VKL_DTYPE_F16, VKL_DTYPE_F16, 1, 0, 0},
        {"decode T 640, f16 cache, D 64", 1, 32, 8, 1, 640, 64, VKL_DTYPE_F16, VKL_DTYPE_F16, 1, 0, 0},
        {"decode T 1024, f16 cache, D 64", 1, 32, 8, 1, 1024, 64, VKL_DTYPE_F16, VKL_DTYPE_F16, 1, 0, 0},
        {"decode T 2048, f16 cache, D 64", 1, 32, 8, 1, 2048, 64, VKL_DTYPE_F16, VKL_DTYPE_F16, 1, 0, 0},
        {"decode T 4096, f16 cache, D 64", 1, 32, 8, 1, 4096, 64, VKL_DTYPE_F16, VKL_DTYPE_F16, 1, 0, 0},
        {"decode T 640, f16 cache", 1, 32, 8, 1, 640, 128, VKL_DTYPE_F16, VKL_DTYPE_F16, 1, 0, 0},
        {"decode T 2048, f16 cache", 1, 32, 8, 1, 2048, 128, VKL_DTYPE_F16, VKL_DTYPE_F16, 1, 0, 0},
        {"decode T 4096, f16 cache", 1, 32, 8, 1, 4096, 128, VKL_DTYPE_F16, VKL_DTYPE_F16, 1, 0, 0},
        {"decode T 4096, int8 K / e4m3 V", 1, 32, 8, 1, 4096, 128, VKL_DTYPE_Q_INT8, VKL_DTYPE_FP8_E4M3, 1, 0, 0},
        {"decode T 16384, f16 cache", 1, 32, 8, 1, 16384, 128, VKL_DTYPE_F16, VKL_DTYPE_F16, 1, 0, 0},
        {"decode T 16384, int8 K / e4m3 V", 1, 32, 8, 1, 16384, 128, VKL_DTYPE_Q_INT8, VKL_DTYPE_FP8_E4M3, 1, 0, 0},
        {"prefill S 512, T 512, f16 cache, causal", 1, 32, 8, 512, 512, 128, VKL_DTYPE_F16, VKL_DTYPE_F16, 1, 0, 0},
        {"prefill S 512, T 512, f16 cache, causal, D 64", 1, 32, 8, 512, 512, 64, VKL_DTYPE_F16, VKL_DTYPE_F16, 1, 0,
         0},
        {"prefill S 2048, T 2048, f16 cache, causal", 1, 32, 8, 2048, 2048, 128, VKL_DTYPE_F16, VKL_DTYPE_F16, 1, 0,
         0},
    };
    /* VKL_VK_ATTN, then for prefill VKL_VK_ATTN_PREFILL (auto: the matrix
     * units' kernel where the device has it); VKL_VK_ATTN_FOLD applies as set */
    static const char *const kernels[] = {"decode", "decode-wg", "prefill", "prefill"};
    static const char *const builds[] = {"", "", "", "scalar"};
    printf(" bench (Hq 32, Hkv 8, D 128 unless named; best of 20):\n");
    for (size_t k = 0; k < VKL_ARRAY_LEN(cases); k++) {
        const attn_case *c = &cases[k];
        for (size_t j = 0; j < VKL_ARRAY_LEN(kernels); j++) {
            if (c->S > 4 && j < 2) continue; /* decode takes at most 16 rows per KV head */
            set_env("VKL_VK_ATTN_PREFILL", builds[j]);
            const double ms = time_attention(ctx, vk, r, c, kernels[j], 20);
            unsetenv("VKL_VK_ATTN_PREFILL");
            if (ms < 0) continue;
            size_t kb = 0, vb = 0;
            vkl_tensor_bytes(c->kdt, c->kdt == VKL_DTYPE_Q_INT8 ? (uint32_t)c->D : 0, c->T * c->Hkv * c->D, &kb);
            vkl_tensor_bytes(c->vdt, 0, c->T * c->Hkv * c->D, &vb);
            const double pairs = c->causal ? c->S * (c->T - c->S) + c->S * (c->S + 1) / 2.0 : (double)c->S * c->T;
            if (c->S <= 4)
                printf("  %-44s %-9s kernel %9.3f ms  %7.1f GB/s of K+V\n", c->what, kernels[j], ms,
                       (double)(kb + vb) / (ms * 1e6));
            else
                printf("  %-44s %-9s kernel %-7s %9.3f ms  %7.2f TFLOP/s\n", c->what, kernels[j],
                       *builds[j] ? builds[j] : "auto", ms,
                       4.0 * c->D * pairs * c->Hq / (ms * 1e9));
        }
    }
}

int main(void) {
    vkl_context *ctx;
    const vkl_backend_vtable *vk;
    const vkl_backend_vtable *ref = vkl_backend_find("ref");
    vkl_backend_caps caps;
    vkl_status st;
    const int early = test_vulkan_main_start("test_vk_attention", &ctx, &vk, NULL, &caps, &st);
    if (early >= 0) return early;
    CHECK_OK(ctx, st);
    const char *val = getenv("VKL_VK_VALIDATION");
    if (!st)
        printf("test_vk_attention: %s (%s), validation %s\n", caps.device_name, caps.driver,
               val && strcmp(val, "0") ? "on" : "off");
    rng r = {0x2545F4914F6CDD1Dull ^ (getenv("VKL_TEST_SEED") ? strtoull(getenv("VKL_TEST_SEED"), NULL, 10) : 0)};
    vkl_backend_device *ref_dev = NULL, *dev = NULL;
    if (!st) CHECK_OK(ctx, test_open_env(ctx, ref, 0, false, &ref_dev));
    if (!st) CHECK_OK(ctx, test_open_env(ctx, vk, 0, true, &dev));
    const char *b = getenv("VKL_TEST_ATTN_BENCH");
    if (dev && b && strcmp(b, "0")) bench(ctx, vk, &r);
    else if (ref_dev && dev) {
        test_attention(ctx, ref, ref_dev, vk, &r);
        test_two_nodes(ctx, ref, ref_dev, vk, dev, &r);
        test_kv_append(ctx, ref, ref_dev, vk, dev, &r);
        test_replay(ctx, vk, &r);
    }
    if (dev) vk->close(dev);
    if (ref_dev) ref->close(ref_dev);
    CHECKF(validation_messages == 0, "%d validation message(s)", validation_messages);
    vkl_context_destroy(ctx);
    return check_finish("test_vk_attention");
}
