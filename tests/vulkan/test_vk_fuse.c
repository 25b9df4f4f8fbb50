/* Fusion in the Vulkan backend (backends/vulkan/vk_fuse.c) against the ref
 * backend, which never fuses:
 *  (a) Add(QuantMatMul(A, W[, bias]), R), both operand orders, and
 *  (b) SiluMul(QuantMatMul(A, Wg), QuantMatMul(A, Wu)), each for E0M4,
 *      int4 and int8 weights, N not a multiple of the matvec's rows per
 *      workgroup, M = 1 and M = 3: the fused executable (fewer dispatches,
 *      the nodes counted as fused) agrees with ref within the quantized
 *      matvec's bound (relative L2 1e-5; 1e-4 with at most 10 outputs, as
 *      in test_vk_quant), outputs poisoned with NaN first, and the same
 *      graph with VKL_VK_NO_FUSE=1 records every node on its own; all of
 *      it with the float matvecs (VKL_VK_MATVEC=float) and, where the
 *      device has integer dot products, once more with the integer-dot
 *      ones (VKL_VK_MATVEC=dot): within their bound against ref (relative
 *      L2 3e-2, test_vk_quant's DOT_L2_BOUND) and the fused outputs equal
 *      to the unfused ones bit for bit (the same sums, the same store);
 *  (c) an Add whose output the layout puts over A's memory (the planner
 *      may: A is dead after the QuantMatMul), where one dispatch would read
 *      A while writing it: fused with the output moved to memory of its
 *      own when its readers can follow, and right; not fused when the
 *      output is a graph output (it must stay where the caller reads it),
 *      and right; nor when the QuantMatMul's output has a second reader;
 *  (d) the bundled model's decode step, prepared as a session prepares it:
 *      fewer dispatches and fewer barriers with fusion than with
 *      VKL_VK_NO_FUSE=1, and some nodes fused;
 *  (e) with the integer-dot matvecs, four QuantMatMuls of one A (E0M4,
 *      int4, int8, E0M4 again: the Q, K, V projections' situation) quantize
 *      A once per step size (two quantizer dispatches, four matvecs: the
 *      codes are shared scratch, vk_scratch.c), within the dot bound of
 *      ref, and bit for bit what each gives quantizing A on its own (the
 *      same graph with an Identity copy of A per QuantMatMul);
 *  (f) with the integer-dot matvecs, an RMSNorm whose output only they read
 *      (three projections; a gate/up pair fused with its SiluMul; E0M4 at
 *      M = 1, K = 256; int8 at M = 3, K = 100: a short last group, whose
 *      codes past K are zeros)
 *      writes their codes itself (norm.comp's _codes build: one dispatch
 *      fewer, no quantizer) and gives the unfused results (VKL_VK_NO_FUSE=1)
 *      bit for bit, within the dot bound of ref; an RMSNorm whose output is
 *      also a graph output is left alone;
 *  (g) RoPE + KvAppend (each model given; --rope-kv: this alone): five
 *      decode steps from an empty cache, fused and with VKL_VK_NO_FUSE=1,
 *      the model's RoPE as it is and made interleaved: every step's logits
 *      and the KV cache bit for bit, one fused RoPE + KvAppend dispatch per
 *      layer, at least two dispatches fewer per layer, no more barriers
 *      (tests/vulkan/fused_models.sh rope-kv gives it the fixtures with f16 and
 *      int8 caches);
 *  (i) three (and two) QuantMatMuls of one A, N = 5, 33 and 130 (the
 *      second with a bias), M = 1 and 3, every format, float and dot
 *      matvecs: one fused Q/K/V dispatch, within the matvec's bound of
 *      ref, and the unfused outputs (VKL_VK_NO_FUSE=1) bit for bit;
 *  (h) Q/K/V (--qkv, on each model given: tests/vulkan/fused_models.sh qkv gives
 *      the bundled model and the fixtures imported with E0M4 and int8
 *      projections): five decode steps as in (g), fused and with
 *      VKL_VK_NO_FUSE=1, with the float matvecs and the integer-dot ones
 *      where the device has them: every step's logits and the KV cache bit
 *      for bit, one fused Q/K/V matvec per layer, fewer dispatches;
 *  (j) with the integer-dot matvecs, a gate/up pair + SiluMul read by a
 *      down QuantMatMul of the same format (E0M4, int4, int8; M = 1, N = 96
 *      and M = 3, N = 160), the matvec's workgroups of the device's rows and
 *      of 2, 24 and 20 (VKL_VK_QMV_*: steps within, across and straddling
 *      workgroups): the gate/up matvec writes the down projection's codes
 *      (the _glu_codes build: three dispatches, no quantizer of its output),
 *      and two replays of the executable on different inputs (a counter
 *      left set would keep the first one's codes) give the unfused outputs
 *      bit for bit, within the dot bound of ref; down's steps of another
 *      size (int4 -> int8, int8 -> E0M4) or a short last group (N = 100)
 *      keep their quantizer (four dispatches), with the same results; and
 *      wider: E0M4 M = 1, K = 512, N = 2048, int8 M = 2, K = 256, N = 1024;
 *  (k) GLU codes (--glu-codes, on each model given: tests/vulkan/
 *      fused_models.sh glu-codes gives the bundled model, whose down
 *      projections stay f32, and the fixtures imported with E0M4 and int8
 *      weights): five decode steps as in (g) with the integer-dot matvecs,
 *      fused and with VKL_VK_NO_FUSE=1: logits and KV cache bit for bit,
 *      each layer's gate/up matvec writing its down projection's codes
 *      (none in a model without quantized down projections; some model
 *      must have them).
 *  (l) with the integer-dot matvecs, a decode Attention (GQA, B = 1 and 2)
 *      whose output one QuantMatMul reads, through a Reshape sharing its
 *      memory (the o_proj's situation) or as it is, every format, the
 *      workgroup and subgroup kernels with the combine dispatch and the
 *      subgroup one merging its own chunks (VKL_VK_ATTN, VKL_VK_ATTN_FOLD):
 *      the merge writes the matvec's codes (no quantizer dispatch) and the
 *      outputs are the unfused ones bit for bit, within the dot bound of
 *      ref; left unfused, and right, where Dv is no whole number of steps
 *      (Dv 48 with the 4-bit formats), the Reshape copies, or the output is
 *      a graph output too.
 *  (m) the Attention writing its o_proj's codes (--attn-codes, on each model
 *      given: tests/vulkan/fused_models.sh attn-codes gives the bundled
 *      model and the fixtures imported with E0M4 and int8 projections):
 *      five decode steps as in (g) with the integer-dot matvecs, fused and
 *      with VKL_VK_NO_FUSE=1, under each decode kernel of (l): every step's
 *      logits and the KV cache bit for bit, every layer's Attention writing
 *      the codes.
 *  (n) (a), (b) and (i) on the prefill GEMM (M = 17 to 33), every build of
 *      it: tiled f32 and fp16, the cooperative-matrix body (emulated) whole
 *      and with K in 2 slices: the Add stored by the GEMM (or its split
 *      sum), the Q/K/V GEMMs side by side (as many dispatches, fewer
 *      barriers), the SiluMul left apart (gate and up side by side as a
 *      Q/K/V pair), the outputs the unfused ones bit for bit, within the
 *      GEMM's bound of ref (test_vk_quant's: 1e-5 f32, 5e-3 fp16 operands).
 *  (o) the same on whole models (--gemm, on each model given: tests/vulkan/
 *      fused_models.sh gemm gives the bundled model and the fixtures
 *      imported with E0M4 and int8 projections): a prefill of 20 tokens on
 *      the GEMM (VKL_VK_GEMM_MIN_ROWS=16), then decode steps, with every
 *      fusion and with VKL_VK_FUSE_OFF=gemm: every step's logits and the KV
 *      cache bit for bit, fewer dispatches in the prefill, its Q/K/V GEMMs
 *      side by side.
 * The bundled model's greedy text on Vulkan (fusion on) against ref is
 * vulkan.model's. Validation on (any message fails). No Vulkan: exit 77.
 * Usage: test_vk_fuse [--rope-kv | --qkv | --glu-codes | --attn-codes | --gemm] MODEL.vkm [MODEL.vkm...] */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../backends/vulkan/vulkan_backend.h"
#include "check.h"
#include "graph_finish.h"
#include "context.h"
#include "graph.h"
#include "model.h"
#include "ops.h"
#include "plan.h"
#include "quant/quant.h"
#include "run_once.h"
#include "test_rng.h"
#include "vulkan_start.h"

/* ---- small graphs ------------------------------------------------------------------------------------ */

static vkl_expr cexpr(vkl_graph *g, int64_t v) {
    vkl_expr e;
    memset(&e, 0, sizeof(e));
    CHECK_OK(g->ctx, vkl_expr_const(g->syms, v, &e));
    return e;
}

static uint32_t add_f32(vkl_graph *g, const char *name, vkl_tensor_kind kind, int64_t d0, int64_t d1,
                        vkl_status *st) {
    vkl_shape s = {.rank = 2};
    s.dims[0] = cexpr(g, d0);
    s.dims[1] = cexpr(g, d1);
    uint32_t t = VKL_NONE;
    if (!*st) *st = vkl_graph_add_tensor(g, name, VKL_DTYPE_F32, kind, kind == VKL_TENSOR_ACTIVATION ? NULL : &s, &t);
    if (!*st && kind == VKL_TENSOR_INPUT) *st = vkl_graph_add_input(g, t);
    return t;
}

typedef struct fmt {
    vkl_dtype dtype;
    const char *name;
} fmt;

static const fmt formats[] = {{VKL_DTYPE_Q_E0M4, "e0m4"}, {VKL_DTYPE_Q_INT4, "int4"}, {VKL_DTYPE_Q_INT8, "int8"}};

/* A random [N, K] weight quantized in format f, group 32, into g. */
static uint32_t add_weight(vkl_graph *g, rng *r, const fmt *f, const char *name, int64_t N, int64_t K,
                           vkl_status *st) {
    const uint32_t group = 32;
    float *w = malloc((size_t)(N * K) * sizeof(float));
    for (int64_t i = 0; i < N * K; i++) w[i] = 0.05f * rnd_gauss(r);
    size_t bytes = 0;
    uint8_t *q = NULL;
    vkl_quant_spec spec;
    vkl_quant_spec_init(&spec, f->dtype);
    spec.group = group;
    if (!*st) *st = vkl_quant_canonical_bytes(g->ctx, f->dtype, group, N, K, &bytes);
    if (!*st && !(q = malloc(bytes))) *st = VKL_ERR_OUT_OF_MEMORY;
    if (!*st) *st = vkl_quant_quantize(g->ctx, &spec, w, N, K, q, bytes);
    vkl_shape s = {.rank = 2};
    s.dims[0] = cexpr(g, N);
    s.dims[1] = cexpr(g, K);
    uint32_t t = VKL_NONE;
    if (!*st) *st = vkl_graph_add_tensor(g, name, f->dtype, VKL_TENSOR_WEIGHT, &s, &t);
    if (!*st) {
        g->tensors[t].group = group;
        *st = vkl_graph_set_data(g, t, q, bytes, true);
    }
    free(w);
    free(q);
    return t;
}

static void add_node(vkl_graph *g, vkl_op op, const char *name, const uint32_t *in, uint32_t n_in, uint32_t out,
                     vkl_status *st) {
    if (!*st) *st = vkl_graph_add_node(g, op, name, in, n_in, &out, 1, NULL, 0, NULL);
}

/* The pattern graphs. Inputs A [M, K] (and R [M, N] for the Adds). */
typedef enum pattern {
    P_ADD,        /* Add(R, QMM(A, W)) */
    P_ADD_BIAS,   /* Add(QMM(A, W, bias), R): the other operand order */
    P_GLU,        /* SiluMul(QMM(A, Wg), QMM(A, Wu)) */
    P_TWO_USES,   /* Add(R, y) and Mul(y, R), y = QMM(A, W): y has two readers */
    P_ADD_READ,   /* Mul(Add(R, QMM(A, W)), R): the Add's output is read, not a graph output */
} pattern;

static const char *const pattern_names[] = {"QuantMatMul+Add", "QuantMatMul(+bias)+Add (y, R)",
                                            "gate/up QuantMatMul+SiluMul", "QuantMatMul read twice",
                                            "QuantMatMul+Add, then Mul"};

static vkl_graph *pattern_graph(vkl_context *ctx, rng *r, pattern p, const fmt *f, int64_t M, int64_t K, int64_t N) {
    vkl_graph *g = NULL;
    vkl_status st = vkl_graph_create(ctx, &g);
    if (st) return NULL;
    const uint32_t a = add_f32(g, "A", VKL_TENSOR_INPUT, M, K, &st);
    const uint32_t res = p == P_GLU ? VKL_NONE : add_f32(g, "R", VKL_TENSOR_INPUT, M, N, &st);
    const uint32_t w = add_weight(g, r, f, "W", N, K, &st);
    const uint32_t y = add_f32(g, "y", VKL_TENSOR_ACTIVATION, 0, 0, &st);
    const uint32_t out = add_f32(g, "out", VKL_TENSOR_ACTIVATION, 0, 0, &st);
    uint32_t bias = VKL_NONE;
    if (p == P_ADD_BIAS) {
        vkl_shape s = {.rank = 1};
        s.dims[0] = cexpr(g, N);
        float *b = malloc((size_t)N * sizeof(float));
        for (int64_t i = 0; i < N; i++) b[i] = rnd_gauss(r);
        if (!st) st = vkl_graph_add_tensor(g, "bias", VKL_DTYPE_F32, VKL_TENSOR_WEIGHT, &s, &bias);
        if (!st) st = vkl_graph_set_data(g, bias, b, (size_t)N * sizeof(float), true);
        free(b);
    }
    const uint32_t qin[3] = {a, w, bias};
    add_node(g, VKL_OP_QUANT_MAT_MUL, "qmm", qin, bias == VKL_NONE ? 2 : 3, y, &st);
    if (p == P_GLU) {
        const uint32_t wu = add_weight(g, r, f, "Wu", N, K, &st);
        const uint32_t up = add_f32(g, "up", VKL_TENSOR_ACTIVATION, 0, 0, &st);
        const uint32_t uin[2] = {a, wu}, gu[2] = {y, up};
        add_node(g, VKL_OP_QUANT_MAT_MUL, "qmm_up", uin, 2, up, &st);
        add_node(g, VKL_OP_SILU_MUL, "silu_mul", gu, 2, out, &st);
    } else {
        const uint32_t ops[2] = {p == P_ADD_BIAS ? y : res, p == P_ADD_BIAS ? res : y};
        add_node(g, VKL_OP_ADD, "add", ops, 2, out, &st);
    }
    if (p == P_ADD_READ) {
        const uint32_t fin = add_f32(g, "final", VKL_TENSOR_ACTIVATION, 0, 0, &st);
        const uint32_t ops[2] = {out, res};
        add_node(g, VKL_OP_MUL, "mul", ops, 2, fin, &st);
        if (!st) st = vkl_graph_add_output(g, fin);
    } else if (!st) {
        st = vkl_graph_add_output(g, out);
    }
    if (p == P_TWO_USES) {
        const uint32_t out2 = add_f32(g, "out2", VKL_TENSOR_ACTIVATION, 0, 0, &st);
        const uint32_t ops[2] = {y, res};
        add_node(g, VKL_OP_MUL, "mul", ops, 2, out2, &st);
        if (!st) st = vkl_graph_add_output(g, out2);
    }
    return test_graph_finish(ctx, g, st);
}

/* ---- running by hand ------------------------------------------------------------------------------- */

/* g on a Vulkan device opened with the environment as it is: every tensor
 * at its own 256-byte aligned offset, but `over` (when not VKL_NONE) placed
 * at `under`'s offset; the arena poisoned with NaN bits, then per replay
 * (of one executable) its inputs ins[replay] written, one execute, every
 * output read into outs[replay * g->n_outputs + o] (allocated: free). The
 * executable's stats into *stats. False when a call failed. */
static bool run_vulkan_replays(vkl_context *ctx, const vkl_graph *g, const vkl_host_tensor *const *ins,
                               uint32_t replays, uint32_t over, uint32_t under, float **outs,
                               vkl_vk_exec_stats *stats) {
    const vkl_backend_vtable *be = vkl_backend_find("vulkan");
    vkl_backend_device *dev = NULL;
    vkl_backend_weights *w = NULL;
    vkl_backend_buffer *arena = NULL;
    vkl_backend_exec *e = NULL;
    size_t *offsets = calloc(g->n_tensors, sizeof(size_t)), *bytes = calloc(g->n_tensors, sizeof(size_t));
    size_t total = 0;
    vkl_status st = VKL_OK;
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        offsets[t] = VKL_NO_OFFSET;
        if (g->tensors[t].kind == VKL_TENSOR_WEIGHT) continue;
        int64_t dims[VKL_MAX_RANK], count;
        if (!st) st = vkl_tensor_eval(ctx, g, t, NULL, 0, dims, &count, &bytes[t]);
        offsets[t] = total;
        total += (bytes[t] + 255) / 256 * 256;
    }
    if (over != VKL_NONE) offsets[over] = offsets[under];
    unsigned char *poison = malloc(total);
    memset(poison, 0xFF, total);
    vkl_memory_map mem = {NULL, offsets, g->n_tensors};
    vkl_binding b = {NULL, 0};
    if (!st) st = test_open_env(ctx, be, 0, false, &dev);
    if (!st) st = be->weights_load(dev, g, &w);
    if (!st) st = be->buffer_create(dev, ctx, VKL_BUFFER_DEVICE, total, &arena);
    if (!st) st = be->buffer_write(dev, ctx, arena, 0, poison, total);
    mem.arena = arena;
    if (!st) st = be->prepare(dev, ctx, g, w, &mem, &b, &e);
    for (uint32_t r = 0; !st && r < replays; r++) {
        for (uint32_t i = 0; !st && i < g->n_inputs; i++)
            st = be->buffer_write(dev, ctx, arena, offsets[g->inputs[i]], ins[r][i].data, ins[r][i].nbytes);
        if (!st) st = be->execute(dev, ctx, e, &b);
        if (!st) st = be->wait(dev, ctx, e);
        for (uint32_t o = 0; !st && o < g->n_outputs; o++) {
            const uint32_t t = g->outputs[o];
            float **out = &outs[r * g->n_outputs + o];
            *out = malloc(bytes[t]);
            st = be->buffer_read(dev, ctx, arena, offsets[t], *out, bytes[t]);
        }
    }
    if (!st) vkl_vk_exec_stats_get(e, stats);
    CHECK_OK(ctx, st);
    if (e) be->exec_release(dev, ctx, e);
    if (arena) be->buffer_destroy(dev, ctx, arena);
    if (w) be->weights_release(dev, w);
    if (dev) be->close(dev);
    free(offsets);
    free(bytes);
    free(poison);
    return st == VKL_OK;
}

/* run_vulkan_replays once, with inputs ins. */
static bool run_vulkan(vkl_context *ctx, const vkl_graph *g, const vkl_host_tensor *ins, uint32_t over,
                       uint32_t under, float **outs, vkl_vk_exec_stats *stats) {
    return run_vulkan_replays(ctx, g, &ins, 1, over, under, outs, stats);
}

/* Relative L2 error of got against want (n floats); NaN anywhere: infinity. */
static double rel_l2(const float *got, const float *want, size_t n) {
    double err = 0, norm = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(got[i])) return INFINITY;
        err += ((double)got[i] - want[i]) * ((double)got[i] - want[i]);
        norm += (double)want[i] * want[i];
    }
    return sqrt(err) / (norm > 0 ? sqrt(norm) : 1.0);
}

/* The relative L2 bound against ref of a GEMM build of test_gemm_patterns
 * (test_vk_quant's: f32 1e-5, fp16 operands 5e-3). */
static double gemm_bound(const char *build) { return strcmp(build, "tiled f32") ? 5e-3 : 1e-5; }

/* One pattern, format and shape: ref, then Vulkan fused and not (or, for
 * the cases that must not fuse, only as it comes). */
static void test_pattern(vkl_context *ctx, rng *r, pattern p, const fmt *f, int64_t M, int64_t K, int64_t N,
                         bool output_over_a, bool dot, const char *gemm) {
    vkl_graph *g = pattern_graph(ctx, r, p, f, M, K, N);
    if (!g) return;
    vkl_host_tensor ins[2] = {{0}, {0}};
    const int64_t cols[2] = {K, N};
    for (uint32_t i = 0; i < g->n_inputs; i++) {
        ins[i].dtype = VKL_DTYPE_F32;
        ins[i].rank = 2;
        ins[i].dims[0] = M;
        ins[i].dims[1] = cols[i];
        ins[i].nbytes = (size_t)(M * cols[i]) * sizeof(float);
        float *x = malloc(ins[i].nbytes);
        for (int64_t j = 0; j < M * cols[i]; j++) x[j] = rnd_gauss(r);
        ins[i].data = x;
    }
    vkl_host_tensor want[2] = {{0}, {0}};
    CHECK_OK(ctx, vkl_run_once(ctx, vkl_backend_find("ref"), g, ins, want));
    const bool must_not = p == P_TWO_USES || (output_over_a && p != P_ADD_READ);
    /* the Add's output over A's memory: the planner's reuse after A's last reader */
    uint32_t over = VKL_NONE, under = VKL_NONE;
    if (output_over_a) {
        CHECK_OK(ctx, vkl_graph_find_tensor(g, "out", &over));
        under = g->inputs[0];
    }
    /* on the GEMM the SiluMul stays apart, and gate's and up's GEMMs (one A)
     * run side by side as a Q/K/V pair: 2 nodes */
    const uint32_t expect_fused = must_not ? 0 : p == P_GLU && !gemm ? 3 : 2;
    setenv("VKL_VK_MATVEC", dot ? "dot" : "float", 1);
    float *fused[2] = {NULL, NULL};
    for (int off = 0; off < (must_not ? 1 : 2); off++) {
        setenv("VKL_VK_NO_FUSE", off ? "1" : "0", 1); /* whatever the environment said */
        float *outs[2] = {NULL, NULL};
        vkl_vk_exec_stats stats = {0, 0, 0};
        if (want[0].data && run_vulkan(ctx, g, ins, over, under, outs, &stats)) {
            const size_t n = (size_t)(M * N);
            const double bound = gemm ? gemm_bound(gemm) : dot ? 3e-2 : n <= 10 ? 1e-4 : 1e-5;
            double worst = 0;
            for (uint32_t o = 0; o < g->n_outputs; o++) {
                const double e = rel_l2(outs[o], want[o].data, n);
                worst = e > worst ? e : worst;
            }
            const uint32_t want_fused = off ? 0 : expect_fused;
            CHECKF(worst <= bound && stats.fused == want_fused,
                   "%s %s M=%lld K=%lld N=%lld%s%s: relative L2 error %.3g (bound %g), %u nodes fused (want %u)",
                   pattern_names[p], f->name, (long long)M, (long long)K, (long long)N,
                   output_over_a ? ", output over A" : "", off ? ", VKL_VK_NO_FUSE=1" : "", worst, bound,
                   stats.fused, want_fused);
            printf("  %-30s %-4s M=%lld K=%4lld N=%3lld%-16s%-18s%s%s rel L2 %.2e, %u dispatches, %u nodes fused\n",
                   pattern_names[p], f->name, (long long)M, (long long)K, (long long)N,
                   output_over_a ? " (out over A)" : "", off ? " VKL_VK_NO_FUSE=1" : "", dot ? " dot" : "",
                   gemm ? gemm : "", worst, stats.dispatches, stats.fused);
            /* the integer-dot matvecs and the GEMMs: the same sums, the same store */
            for (uint32_t o = 0; (dot || gemm) && off && fused[0] && o < g->n_outputs; o++)
                CHECKF(!memcmp(outs[o], fused[o], n * sizeof(float)),
                       "%s %s M=%lld K=%lld N=%lld, %s: output %u fused differs from unfused", pattern_names[p],
                       f->name, (long long)M, (long long)K, (long long)N, gemm ? gemm : "integer-dot matvecs", o);
        }
        for (uint32_t o = 0; o < 2; o++) {
            if (!off) fused[o] = outs[o];
            else free(outs[o]);
        }
    }
    for (uint32_t o = 0; o < 2; o++) free(fused[o]);
    unsetenv("VKL_VK_NO_FUSE");
    unsetenv("VKL_VK_MATVEC");
    for (uint32_t o = 0; o < 2; o++) vkl_free(ctx, want[o].data);
    for (uint32_t i = 0; i < 2; i++) free(ins[i].data);
    vkl_graph_destroy(g);
}

/* ---- (i) Q/K/V in one matvec: three projections of one A, by hand -------------------------------------- */

/* A [M, K] read by `sets` QuantMatMuls of N = 5, 33 and 130 rows (the
 * second with a bias), each output doubled by an Add of itself (the Add
 * fusion takes two different operands only), the sums the graph outputs. */
static vkl_graph *qkv_graph(vkl_context *ctx, rng *r, const fmt *f, int64_t M, int64_t K, uint32_t sets) {
    static const int64_t rows[3] = {5, 33, 130};
    vkl_graph *g = NULL;
    vkl_status st = vkl_graph_create(ctx, &g);
    if (st) return NULL;
    const uint32_t a = add_f32(g, "A", VKL_TENSOR_INPUT, M, K, &st);
    for (uint32_t j = 0; j < sets; j++) {
        char name[16];
        snprintf(name, sizeof(name), "W%u", j);
        const uint32_t w = add_weight(g, r, f, name, rows[j], K, &st);
        uint32_t bias = VKL_NONE;
        if (j == 1) {
            vkl_shape sh = {.rank = 1};
            sh.dims[0] = cexpr(g, rows[j]);
            float b[33];
            for (int64_t i = 0; i < rows[j]; i++) b[i] = rnd_gauss(r);
            if (!st) st = vkl_graph_add_tensor(g, "bias", VKL_DTYPE_F32, VKL_TENSOR_WEIGHT, &sh, &bias);
            if (!st) st = vkl_graph_set_data(g, bias, b, sizeof(b), true);
        }
        snprintf(name, sizeof(name), "y%u", j);
        const uint32_t y = add_f32(g, name, VKL_TENSOR_ACTIVATION, 0, 0, &st);
        snprintf(name, sizeof(name), "out%u", j);
        const uint32_t out = add_f32(g, name, VKL_TENSOR_ACTIVATION, 0, 0, &st);
        const uint32_t qin[3] = {a, w, bias}, twice[2] = {y, y};
        add_node(g, VKL_OP_QUANT_MAT_MUL, "qmm", qin, bias == VKL_NONE ? 2 : 3, y, &st);
        add_node(g, VKL_OP_ADD, "add", twice, 2, out, &st);
        if (!st) st = vkl_graph_add_output(g, out);
    }
    return test_graph_finish(ctx, g, st);
}

/* The graph against ref (the quantized matvec's bound), fused (one Q/K/V
 * dispatch of all the QuantMatMuls; on the GEMM, named by `gemm`, their
 * GEMMs side by side: as many dispatches, fewer barriers) and with
 * VKL_VK_NO_FUSE=1: the same outputs bit for bit. */
static void test_qkv_graph(vkl_context *ctx, rng *r, const fmt *f, int64_t M, int64_t K, uint32_t sets, bool dot,
                           const char *gemm) {
    vkl_graph *g = qkv_graph(ctx, r, f, M, K, sets);
    if (!g) return;
    vkl_host_tensor in = {0}, want[3] = {{0}, {0}, {0}};
    in.dtype = VKL_DTYPE_F32;
    in.rank = 2;
    in.dims[0] = M;
    in.dims[1] = K;
    in.nbytes = (size_t)(M * K) * sizeof(float);
    float *x = malloc(in.nbytes);
    for (int64_t j = 0; j < M * K; j++) x[j] = rnd_gauss(r);
    in.data = x;
    CHECK_OK(ctx, vkl_run_once(ctx, vkl_backend_find("ref"), g, &in, want));
    setenv("VKL_VK_MATVEC", dot ? "dot" : "float", 1);
    float *outs[2][3] = {{NULL}};
    vkl_vk_exec_stats stats[2] = {{0}};
    bool ran[2] = {false, false};
    for (int off = 0; off < 2 && want[0].data; off++) {
        setenv("VKL_VK_NO_FUSE", off ? "1" : "0", 1);
        ran[off] = run_vulkan(ctx, g, &in, VKL_NONE, VKL_NONE, outs[off], &stats[off]);
    }
    unsetenv("VKL_VK_NO_FUSE");
    unsetenv("VKL_VK_MATVEC");
    if (ran[0] && ran[1]) {
        static const int64_t rows[3] = {5, 33, 130};
        double worst = 0;
        bool same = true;
        for (uint32_t o = 0; o < sets; o++) {
            const size_t n = (size_t)(M * rows[o]);
            const double e = rel_l2(outs[0][o], want[o].data, n);
            worst = e > worst ? e : worst;
            same &= !memcmp(outs[0][o], outs[1][o], n * sizeof(float));
        }
        const double bound = gemm ? gemm_bound(gemm) : dot ? 3e-2 : 1e-4;
        printf("  Q/K/V %u sets %-4s M=%lld K=%4lld%s%s%s: rel L2 %.2e, fused %u dispatches (%u Q/K/V), %u barriers; "
               "unfused %u, %u; fused outputs %s the unfused ones\n",
               sets, f->name, (long long)M, (long long)K, dot ? " dot" : "", gemm ? " " : "", gemm ? gemm : "", worst,
               stats[0].dispatches, stats[0].qkv, stats[0].barriers, stats[1].dispatches, stats[1].barriers,
               same ? "equal" : "DIFFER from");
        const bool counts = gemm ? stats[0].dispatches == stats[1].dispatches && stats[0].barriers < stats[1].barriers
                                 : stats[0].dispatches + sets - 1 == stats[1].dispatches;
        CHECKF(worst <= bound && same && stats[0].qkv == 1 && stats[0].fused == sets && stats[1].fused == 0 && counts,
               "Q/K/V %u sets %s M=%lld K=%lld%s: rel L2 %.3g (bound %g), outputs %s, %u Q/K/V dispatches, %u nodes "
               "fused, %u dispatches against %u unfused",
               sets, f->name, (long long)M, (long long)K, dot ? " dot" : "", worst, bound, same ? "equal" : "differ",
               stats[0].qkv, stats[0].fused, stats[0].dispatches, stats[1].dispatches);
    }
    for (int off = 0; off < 2; off++)
        for (uint32_t o = 0; o < 3; o++) free(outs[off][o]);
    for (uint32_t o = 0; o < 3; o++) vkl_free(ctx, want[o].data);
    free(x);
    vkl_graph_destroy(g);
}

/* (n) The Add, SiluMul and Q/K/V patterns on the prefill GEMM (VKL_VK_GEMM_MIN_ROWS
 * puts M = 20 and 33 on it here), under each of its builds: the tiled f32
 * and fp16 ones and the cooperative-matrix body (emulated; a tile of 2 x 2
 * subgroups of 2 x 2 fragments, which lavapipe's 32 KiB of shared memory
 * holds, as test_vk_quant does), whole and with K in 2 slices (R then
 * added by the split sum). */
static void test_gemm_patterns(vkl_context *ctx, rng *r) {
    enum { KNOBS = 8 };
    static const char *const knobs[KNOBS] = {"VKL_VK_MATH",     "VKL_VK_GEMM_CM_EMULATE", "VKL_VK_GEMM_SPLIT",
                                             "VKL_VK_GEMM_TM",  "VKL_VK_GEMM_TN",         "VKL_VK_GEMM_BK",
                                             "VKL_VK_GEMM_SGM", "VKL_VK_GEMM_SGN"};
    static const struct {
        const char *name, *knob[KNOBS];
    } builds[] = {{"tiled f32", {"f32", "", "", "", "", "", "", ""}},
                  {"tiled fp16", {"f16", "", "", "", "", "", "", ""}},
                  {"coopmat emulated", {"f16", "1", "", "2", "2", "32", "2", "2"}},
                  {"coopmat emulated, K split", {"f16", "1", "2", "2", "2", "32", "2", "2"}}};
    static const int64_t shapes[][3] = {{20, 64, 40}, {33, 256, 130}};
    /* fp16 math needs shaderFloat16, unmasked (VKL_VK_DISABLE=fp16 masks it):
     * without it open refuses VKL_VK_MATH=f16, and those builds are skipped */
    const vkl_backend_vtable *vk = vkl_backend_find("vulkan");
    vkl_backend_device *d16 = NULL;
    setenv("VKL_VK_MATH", "f16", 1);
    const bool f16_ok = test_open_env(ctx, vk, 0, false, &d16) == VKL_OK && vkl_vk_f16_math(d16);
    if (d16) vk->close(d16);
    setenv("VKL_VK_GEMM_MIN_ROWS", "16", 1);
    for (size_t b = 0; b < VKL_ARRAY_LEN(builds); b++) {
        if (!strcmp(builds[b].knob[0], "f16") && !f16_ok) {
            printf("  GEMM %s: skipped (no fp16 math on this device)\n", builds[b].name);
            continue;
        }
        for (size_t k = 0; k < KNOBS; k++) {
            if (*builds[b].knob[k]) setenv(knobs[k], builds[b].knob[k], 1);
            else unsetenv(knobs[k]);
        }
        /* the emulated body compiles and runs slowly on lavapipe: its smaller shape only */
        const bool emulated = *builds[b].knob[1] != 0;
        for (size_t si = 0; si < (emulated ? 1 : VKL_ARRAY_LEN(shapes)); si++)
            for (int p = P_ADD; p <= P_GLU; p++)
                test_pattern(ctx, r, (pattern)p, &formats[(si + (size_t)p) % VKL_ARRAY_LEN(formats)], shapes[si][0],
                             shapes[si][1], shapes[si][2], false, false, builds[b].name);
        if (!emulated) test_pattern(ctx, r, P_ADD_READ, &formats[0], 24, 64, 64, true, false, builds[b].name);
        test_qkv_graph(ctx, r, &formats[b % VKL_ARRAY_LEN(formats)], 20, 64, 3, false, builds[b].name);
        if (!emulated) test_qkv_graph(ctx, r, &formats[(b + 1) % VKL_ARRAY_LEN(formats)], 17, 96, 2, false,
                                      builds[b].name);
    }
    for (size_t k = 0; k < KNOBS; k++) unsetenv(knobs[k]);
    unsetenv("VKL_VK_GEMM_MIN_ROWS");
}

/* ---- (e) one A's codes shared by its QuantMatMuls ---------------------------------------------------- */

static const fmt shared_formats[4] = {{VKL_DTYPE_Q_E0M4, "e0m4"}, {VKL_DTYPE_Q_INT4, "int4"},
                                      {VKL_DTYPE_Q_INT8, "int8"}, {VKL_DTYPE_Q_E0M4, "e0m4"}};

/* Four QuantMatMuls of A [M, K] (shared_formats, N rows each), each output a
 * graph output; separate: each reads its own Identity copy of A. Weights
 * from r as it is (the caller passes copies of one state for equal weights). */
static vkl_graph *shared_graph(vkl_context *ctx, rng r, int64_t M, int64_t K, int64_t N, bool separate) {
    vkl_graph *g = NULL;
    vkl_status st = vkl_graph_create(ctx, &g);
    if (st) return NULL;
    const uint32_t a = add_f32(g, "A", VKL_TENSOR_INPUT, M, K, &st);
    for (int i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof(name), "W%d", i);
        const uint32_t w = add_weight(g, &r, &shared_formats[i], name, N, K, &st);
        uint32_t ai = a;
        if (separate) {
            snprintf(name, sizeof(name), "A%d", i);
            ai = add_f32(g, name, VKL_TENSOR_ACTIVATION, 0, 0, &st);
            add_node(g, VKL_OP_IDENTITY, name, &a, 1, ai, &st);
        }
        snprintf(name, sizeof(name), "y%d", i);
        const uint32_t y = add_f32(g, name, VKL_TENSOR_ACTIVATION, 0, 0, &st);
        const uint32_t in[2] = {ai, w};
        add_node(g, VKL_OP_QUANT_MAT_MUL, name, in, 2, y, &st);
        if (!st) st = vkl_graph_add_output(g, y);
    }
    return test_graph_finish(ctx, g, st);
}

static void test_shared_codes(vkl_context *ctx, rng *r, int64_t M, int64_t K, int64_t N) {
    vkl_graph *shared = shared_graph(ctx, *r, M, K, N, false), *separate = shared_graph(ctx, *r, M, K, N, true);
    vkl_host_tensor in = {.dtype = VKL_DTYPE_F32, .rank = 2, .dims = {M, K}, .nbytes = (size_t)(M * K) * 4};
    float *x = malloc(in.nbytes);
    for (int64_t j = 0; j < M * K; j++) x[j] = rnd_gauss(r);
    in.data = x;
    vkl_host_tensor want[4] = {{0}, {0}, {0}, {0}};
    if (shared) CHECK_OK(ctx, vkl_run_once(ctx, vkl_backend_find("ref"), shared, &in, want));
    setenv("VKL_VK_MATVEC", "dot", 1);
    float *got[4] = {NULL}, *own[4] = {NULL};
    vkl_vk_exec_stats s1 = {0, 0, 0}, s2 = {0, 0, 0};
    if (shared && separate && want[3].data && run_vulkan(ctx, shared, &in, VKL_NONE, VKL_NONE, got, &s1) &&
        run_vulkan(ctx, separate, &in, VKL_NONE, VKL_NONE, own, &s2)) {
        const size_t n = (size_t)(M * N);
        double worst = 0;
        for (int i = 0; i < 4; i++) {
            const double e = rel_l2(got[i], want[i].data, n);
            worst = e > worst ? e : worst;
            CHECKF(!memcmp(got[i], own[i], n * sizeof(float)),
                   "shared codes M=%lld K=%lld N=%lld: QuantMatMul %d (%s) differs from quantizing A on its own",
                   (long long)M, (long long)K, (long long)N, i, shared_formats[i].name);
        }
        /* two quantizers (steps of 32 and 16) and four matvecs; separately, four of each and four copies */
        CHECKF(worst <= 3e-2 && s1.dispatches == 6 && s2.dispatches == 12,
               "shared codes M=%lld K=%lld N=%lld: relative L2 error %.3g (bound 3e-2), %u dispatches (want 6), "
               "separately %u (want 12)", (long long)M, (long long)K, (long long)N, worst, s1.dispatches,
               s2.dispatches);
        printf("  shared codes M=%lld K=%4lld N=%3lld dot: rel L2 %.2e, %u dispatches (%u with a copy of A each)\n",
               (long long)M, (long long)K, (long long)N, worst, s1.dispatches, s2.dispatches);
    }
    unsetenv("VKL_VK_MATVEC");
    for (int i = 0; i < 4; i++) {
        free(got[i]);
        free(own[i]);
        vkl_free(ctx, want[i].data);
    }
    free(x);
    vkl_graph_destroy(shared);
    vkl_graph_destroy(separate);
}

/* ---- (f) an RMSNorm writing its readers' codes -------------------------------------------------------- */

typedef enum norm_case { NORM_QKV, NORM_GLU, NORM_ALSO_OUTPUT } norm_case;
static const char *const norm_case_names[] = {"RMSNorm -> 3 QuantMatMuls", "RMSNorm -> gate/up + SiluMul",
                                              "RMSNorm (also an output) -> 3 QuantMatMuls"};

/* X [M, K] -> RMSNorm(scale) -> y -> three QuantMatMuls (outputs), or the
 * gate/up pair and its SiluMul (one output); y an output too if asked. */
static vkl_graph *norm_graph(vkl_context *ctx, rng *r, norm_case nc, const fmt *f, int64_t M, int64_t K, int64_t N) {
    vkl_graph *g = NULL;
    vkl_status st = vkl_graph_create(ctx, &g);
    if (st) return NULL;
    const uint32_t x = add_f32(g, "X", VKL_TENSOR_INPUT, M, K, &st);
    uint32_t scale = VKL_NONE;
    vkl_shape ss = {.rank = 1};
    ss.dims[0] = cexpr(g, K);
    float *sv = malloc((size_t)K * sizeof(float));
    for (int64_t i = 0; i < K; i++) sv[i] = 1.0f + 0.25f * rnd_gauss(r);
    if (!st) st = vkl_graph_add_tensor(g, "scale", VKL_DTYPE_F32, VKL_TENSOR_WEIGHT, &ss, &scale);
    if (!st) st = vkl_graph_set_data(g, scale, sv, (size_t)K * sizeof(float), true);
    free(sv);
    const uint32_t y = add_f32(g, "y", VKL_TENSOR_ACTIVATION, 0, 0, &st);
    const vkl_attr eps = {.name = "epsilon", .kind = VKL_ATTR_FLOAT, .f = 1e-5f};
    const uint32_t nin[2] = {x, scale};
    if (!st) st = vkl_graph_add_node(g, VKL_OP_RMS_NORM, "norm", nin, 2, &y, 1, &eps, 1, NULL);
    uint32_t outs[3];
    for (int i = 0; i < (nc == NORM_GLU ? 2 : 3); i++) {
        char name[16];
        snprintf(name, sizeof(name), "W%d", i);
        const uint32_t w = add_weight(g, r, f, name, N, K, &st);
        snprintf(name, sizeof(name), "p%d", i);
        outs[i] = add_f32(g, name, VKL_TENSOR_ACTIVATION, 0, 0, &st);
        const uint32_t in[2] = {y, w};
        add_node(g, VKL_OP_QUANT_MAT_MUL, name, in, 2, outs[i], &st);
        if (nc != NORM_GLU && !st) st = vkl_graph_add_output(g, outs[i]);
    }
    if (nc == NORM_GLU) {
        const uint32_t o = add_f32(g, "out", VKL_TENSOR_ACTIVATION, 0, 0, &st);
        add_node(g, VKL_OP_SILU_MUL, "silu_mul", outs, 2, o, &st);
        if (!st) st = vkl_graph_add_output(g, o);
    }
    if (nc == NORM_ALSO_OUTPUT && !st) st = vkl_graph_add_output(g, y);
    return test_graph_finish(ctx, g, st);
}

static void test_norm_codes(vkl_context *ctx, rng *r, norm_case nc, const fmt *f, int64_t M, int64_t K, int64_t N) {
    vkl_graph *g = norm_graph(ctx, r, nc, f, M, K, N);
    vkl_host_tensor in = {.dtype = VKL_DTYPE_F32, .rank = 2, .dims = {M, K}, .nbytes = (size_t)(M * K) * 4};
    float *x = malloc(in.nbytes);
    for (int64_t j = 0; j < M * K; j++) x[j] = 3.0f * rnd_gauss(r);
    in.data = x;
    vkl_host_tensor want[4] = {{0}, {0}, {0}, {0}};
    if (g) CHECK_OK(ctx, vkl_run_once(ctx, vkl_backend_find("ref"), g, &in, want));
    setenv("VKL_VK_MATVEC", "dot", 1);
    float *fused[4] = {NULL}, *apart[4] = {NULL};
    vkl_vk_exec_stats s1 = {0, 0, 0}, s2 = {0, 0, 0};
    setenv("VKL_VK_NO_FUSE", "0", 1);
    const bool ok1 = g && want[0].data && run_vulkan(ctx, g, &in, VKL_NONE, VKL_NONE, fused, &s1);
    setenv("VKL_VK_NO_FUSE", "1", 1);
    const bool ok2 = ok1 && run_vulkan(ctx, g, &in, VKL_NONE, VKL_NONE, apart, &s2);
    if (ok1 && ok2) {
        double worst = 0;
        for (uint32_t o = 0; o < g->n_outputs; o++) {
            int64_t dims[VKL_MAX_RANK], count = 0;
            size_t bytes = 0;
            CHECK_OK(ctx, vkl_tensor_eval(ctx, g, g->outputs[o], NULL, 0, dims, &count, &bytes));
            const double e = rel_l2(fused[o], want[o].data, (size_t)count);
            worst = e > worst ? e : worst;
            CHECKF(!memcmp(fused[o], apart[o], bytes), "%s %s M=%lld K=%lld N=%lld: output %u differs from the "
                   "unfused one", norm_case_names[nc], f->name, (long long)M, (long long)K, (long long)N, o);
        }
        /* folded: the norm's dispatch replaces the quantizer's (and the GLU's three nodes are one) */
        const uint32_t want1 = nc == NORM_QKV ? 4 : nc == NORM_GLU ? 2 : 5, want2 = 5;
        CHECKF(worst <= 3e-2 && s1.dispatches == want1 && s2.dispatches == want2,
               "%s %s M=%lld K=%lld N=%lld: relative L2 error %.3g (bound 3e-2), %u dispatches (want %u), unfused %u "
               "(want %u)", norm_case_names[nc], f->name, (long long)M, (long long)K, (long long)N, worst,
               s1.dispatches, want1, s2.dispatches, want2);
        printf("  %-42s %-4s M=%lld K=%4lld N=%3lld dot: rel L2 %.2e, %u dispatches (unfused %u)\n",
               norm_case_names[nc], f->name, (long long)M, (long long)K, (long long)N, worst, s1.dispatches,
               s2.dispatches);
    }
    unsetenv("VKL_VK_NO_FUSE");
    unsetenv("VKL_VK_MATVEC");
    for (int i = 0; i < 4; i++) {
        free(fused[i]);
        free(apart[i]);
        vkl_free(ctx, want[i].data);
    }
    free(x);
    vkl_graph_destroy(g);
}

/* ---- (j) a gate/up matvec writing its down projection's codes ----------------------------------------- */

/* A [M, K] -> gate/up QuantMatMuls (N rows, format f) -> SiluMul -> y [M, N]
 * -> down QuantMatMul (N2 rows, format fd) -> the graph's output. */
static vkl_graph *glu_down_graph(vkl_context *ctx, rng *r, const fmt *f, const fmt *fd, int64_t M, int64_t K,
                                 int64_t N, int64_t N2) {
    vkl_graph *g = NULL;
    vkl_status st = vkl_graph_create(ctx, &g);
    if (st) return NULL;
    const uint32_t a = add_f32(g, "A", VKL_TENSOR_INPUT, M, K, &st);
    const uint32_t wg = add_weight(g, r, f, "Wg", N, K, &st), wu = add_weight(g, r, f, "Wu", N, K, &st);
    const uint32_t wd = add_weight(g, r, fd, "Wd", N2, N, &st);
    const uint32_t gate = add_f32(g, "gate", VKL_TENSOR_ACTIVATION, 0, 0, &st);
    const uint32_t up = add_f32(g, "up", VKL_TENSOR_ACTIVATION, 0, 0, &st);
    const uint32_t y = add_f32(g, "y", VKL_TENSOR_ACTIVATION, 0, 0, &st);
    const uint32_t out = add_f32(g, "out", VKL_TENSOR_ACTIVATION, 0, 0, &st);
    const uint32_t gin[2] = {a, wg}, uin[2] = {a, wu}, gu[2] = {gate, up}, din[2] = {y, wd};
    add_node(g, VKL_OP_QUANT_MAT_MUL, "gate_proj", gin, 2, gate, &st);
    add_node(g, VKL_OP_QUANT_MAT_MUL, "up_proj", uin, 2, up, &st);
    add_node(g, VKL_OP_SILU_MUL, "silu_mul", gu, 2, y, &st);
    add_node(g, VKL_OP_QUANT_MAT_MUL, "down_proj", din, 2, out, &st);
    if (!st) st = vkl_graph_add_output(g, out);
    return test_graph_finish(ctx, g, st);
}

#define GLU_REPLAYS 2

/* The graph with the integer-dot matvecs, fused and with VKL_VK_NO_FUSE=1,
 * each executable replayed GLU_REPLAYS times on different inputs (a counter
 * left set would keep the first replay's codes): every replay's output the
 * unfused one bit for bit, the first within the dot bound of ref; fused, the
 * gate/up matvec writes the codes where `codes` says it must (one
 * _glu_codes dispatch, no quantizer of y: three dispatches against six),
 * else four. */
static void test_glu_codes(vkl_context *ctx, rng *r, const fmt *f, const fmt *fd, int64_t M, int64_t K, int64_t N,
                           bool codes, const char *geometry) {
    const int64_t N2 = 40;
    vkl_graph *g = glu_down_graph(ctx, r, f, fd, M, K, N, N2);
    vkl_host_tensor in[GLU_REPLAYS];
    const vkl_host_tensor *ins[GLU_REPLAYS];
    for (int i = 0; i < GLU_REPLAYS; i++) {
        in[i] = (vkl_host_tensor){.dtype = VKL_DTYPE_F32, .rank = 2, .dims = {M, K}, .nbytes = (size_t)(M * K) * 4};
        float *x = malloc(in[i].nbytes);
        for (int64_t j = 0; j < M * K; j++) x[j] = rnd_gauss(r);
        in[i].data = x;
        ins[i] = &in[i];
    }
    vkl_host_tensor want = {0};
    if (g) CHECK_OK(ctx, vkl_run_once(ctx, vkl_backend_find("ref"), g, &in[0], &want));
    setenv("VKL_VK_MATVEC", "dot", 1);
    float *fused[GLU_REPLAYS] = {NULL}, *apart[GLU_REPLAYS] = {NULL};
    vkl_vk_exec_stats s1 = {0}, s2 = {0};
    setenv("VKL_VK_NO_FUSE", "0", 1);
    const bool ok1 = g && want.data && run_vulkan_replays(ctx, g, ins, GLU_REPLAYS, VKL_NONE, VKL_NONE, fused, &s1);
    setenv("VKL_VK_NO_FUSE", "1", 1);
    const bool ok2 = ok1 && run_vulkan_replays(ctx, g, ins, GLU_REPLAYS, VKL_NONE, VKL_NONE, apart, &s2);
    if (ok1 && ok2) {
        const size_t n = (size_t)(M * N2);
        const double err = rel_l2(fused[0], want.data, n);
        bool same = true;
        for (int i = 0; i < GLU_REPLAYS; i++) same &= !memcmp(fused[i], apart[i], n * sizeof(float));
        const uint32_t want1 = codes ? 3 : 4;
        printf("  gate/up %-4s -> down %-4s M=%lld K=%3lld N=%3lld%s dot: rel L2 %.2e, %u dispatches (%u writing "
               "codes), unfused %u; %d replays %s\n",
               f->name, fd->name, (long long)M, (long long)K, (long long)N, geometry, err, s1.dispatches,
               s1.glu_codes, s2.dispatches, GLU_REPLAYS, same ? "identical" : "DIFFER");
        CHECKF(err <= 3e-2 && same && s1.dispatches == want1 && s1.glu_codes == (codes ? 1u : 0u) &&
                   s2.dispatches == 6 && s2.glu_codes == 0,
               "gate/up %s -> down %s M=%lld K=%lld N=%lld%s: relative L2 error %.3g (bound 3e-2), replays %s the "
               "unfused ones, %u dispatches (want %u), %u writing codes, unfused %u (want 6)",
               f->name, fd->name, (long long)M, (long long)K, (long long)N, geometry, err,
               same ? "equal" : "differ from", s1.dispatches, want1, s1.glu_codes, s2.dispatches);
    }
    unsetenv("VKL_VK_NO_FUSE");
    unsetenv("VKL_VK_MATVEC");
    for (int i = 0; i < GLU_REPLAYS; i++) {
        free(fused[i]);
        free(apart[i]);
        free((void *)in[i].data);
    }
    vkl_free(ctx, want.data);
    vkl_graph_destroy(g);
}

/* (j) over matvec shapes whose workgroups (TEAMS * ROWS rows) cover a step
 * of the codes exactly, several steps, or straddle steps: the device's own
 * (on lavapipe 32 rows), 2 (an H100's), 24 and 20 rows. */
static void test_glu_codes_all(vkl_context *ctx, rng *r) {
    static const char *const geometries[][4] = {{NULL, NULL, NULL, ""},
                                                {"64", "32", "1", " (2 rows a workgroup)"},
                                                {"64", "8", "3", " (24 rows)"},
                                                {"64", "16", "5", " (20 rows)"}};
    for (size_t gi = 0; gi < VKL_ARRAY_LEN(geometries); gi++) {
        const char *const *geo = geometries[gi];
        if (geo[0]) {
            setenv("VKL_VK_QMV_WG", geo[0], 1);
            setenv("VKL_VK_QMV_TEAM", geo[1], 1);
            setenv("VKL_VK_QMV_ROWS", geo[2], 1);
        }
        for (size_t fi = 0; fi < VKL_ARRAY_LEN(formats); fi++) {
            test_glu_codes(ctx, r, &formats[fi], &formats[fi], 1, 64, 96, true, geo[3]);
            test_glu_codes(ctx, r, &formats[fi], &formats[fi], 3, 96, 160, true, geo[3]);
        }
        unsetenv("VKL_VK_QMV_WG");
        unsetenv("VKL_VK_QMV_TEAM");
        unsetenv("VKL_VK_QMV_ROWS");
    }
    /* a wider y: many workgroups racing for each step's counter on a GPU */
    test_glu_codes(ctx, r, &formats[0], &formats[0], 1, 512, 2048, true, "");
    test_glu_codes(ctx, r, &formats[2], &formats[2], 2, 256, 1024, true, "");
    /* left to the quantizer: down's steps another size than the gate/up's
     * (4-bit and int8), and a y row of 100 (a short last group: its codes run
     * to KQ = 128) */
    test_glu_codes(ctx, r, &formats[1], &formats[2], 1, 64, 96, false, "");
    test_glu_codes(ctx, r, &formats[2], &formats[0], 1, 64, 96, false, "");
    test_glu_codes(ctx, r, &formats[0], &formats[0], 1, 64, 100, false, "");
}

/* ---- (l) a decode Attention writing its o_proj's codes ------------------------------------------------ */

typedef enum attn_case { ATTN_RESHAPE, ATTN_DIRECT, ATTN_COPIED, ATTN_ALSO_OUTPUT } attn_case;
static const char *const attn_case_names[] = {"Attention -> Reshape -> QuantMatMul", "Attention -> QuantMatMul",
                                              "Attention -> copying Reshape -> QuantMatMul",
                                              "Attention (also an output) -> Reshape -> QuantMatMul"};

#define ATTN_HQ 4
#define ATTN_HKV 2
#define ATTN_D 64
#define ATTN_T 100

static uint32_t add_f32_4d(vkl_graph *g, const char *name, const int64_t dims[4], vkl_status *st) {
    vkl_shape s = {.rank = 4};
    for (uint32_t d = 0; d < 4; d++) s.dims[d] = cexpr(g, dims[d]);
    uint32_t t = VKL_NONE;
    if (!*st) *st = vkl_graph_add_tensor(g, name, VKL_DTYPE_F32, VKL_TENSOR_INPUT, &s, &t);
    if (!*st) *st = vkl_graph_add_input(g, t);
    return t;
}

/* Q [B, Hq, 1, D], K [B, Hkv, T, D], V [B, Hkv, T, Dv] (GQA, one query row
 * each: a decode step) -> causal Attention -> o [B, Hq, 1, Dv], which one
 * QuantMatMul of N rows reads: as [B, Hq * Dv] through a Reshape (the
 * o_proj's situation: at S = 1 the decode's Transpose is a view too) or,
 * ATTN_DIRECT, as it is (K = Dv). Its output is the graph output (o too for
 * ATTN_ALSO_OUTPUT). */
static vkl_graph *attn_graph(vkl_context *ctx, rng *r, attn_case ac, const fmt *f, int64_t B, int64_t Dv, int64_t N) {
    vkl_graph *g = NULL;
    vkl_status st = vkl_graph_create(ctx, &g);
    if (st) return NULL;
    const int64_t qd[4] = {B, ATTN_HQ, 1, ATTN_D}, kd[4] = {B, ATTN_HKV, ATTN_T, ATTN_D},
                  vd[4] = {B, ATTN_HKV, ATTN_T, Dv};
    const uint32_t qkv[3] = {add_f32_4d(g, "Q", qd, &st), add_f32_4d(g, "K", kd, &st), add_f32_4d(g, "V", vd, &st)};
    const uint32_t o = add_f32(g, "o", VKL_TENSOR_ACTIVATION, 0, 0, &st);
    const vkl_attr causal = {.name = "causal", .kind = VKL_ATTR_INT, .i = 1};
    if (!st) st = vkl_graph_add_node(g, VKL_OP_ATTENTION, "attn", qkv, 3, &o, 1, &causal, 1, NULL);
    uint32_t a = o;
    const int64_t K = ac == ATTN_DIRECT ? Dv : ATTN_HQ * Dv;
    if (ac != ATTN_DIRECT) {
        const int64_t shape[2] = {B, K};
        vkl_shape ss = {.rank = 1};
        ss.dims[0] = cexpr(g, 2);
        uint32_t s = VKL_NONE;
        if (!st) st = vkl_graph_add_tensor(g, "shape", VKL_DTYPE_I64, VKL_TENSOR_WEIGHT, &ss, &s);
        if (!st) st = vkl_graph_set_data(g, s, shape, sizeof(shape), true);
        a = add_f32(g, "a", VKL_TENSOR_ACTIVATION, 0, 0, &st);
        const uint32_t rin[2] = {o, s};
        add_node(g, VKL_OP_RESHAPE, "reshape", rin, 2, a, &st);
    }
    const uint32_t w = add_weight(g, r, f, "W", N, K, &st);
    const uint32_t y = add_f32(g, "y", VKL_TENSOR_ACTIVATION, 0, 0, &st);
    const uint32_t qin[2] = {a, w};
    add_node(g, VKL_OP_QUANT_MAT_MUL, "o_proj", qin, 2, y, &st);
    if (!st) st = vkl_graph_add_output(g, y);
    if (ac == ATTN_ALSO_OUTPUT && !st) st = vkl_graph_add_output(g, o);
    return test_graph_finish(ctx, g, st);
}

/* The decode kernels the fusion meets: the workgroup kernel and the
 * subgroup one (where the device runs it), each with the combine dispatch
 * and merging its own chunks (fold: VKL_VK_ATTN_WG_FOLD and
 * VKL_VK_ATTN_FOLD, the one its kernel reads). */
static const struct {
    const char *attn, *fold;
} attn_kernels[4] = {{"decode-wg", "0"}, {"decode-wg", "1"}, {"decode", "0"}, {"decode", "1"}};

/* With the integer-dot matvecs, each kernel: fused (the Attention writing
 * the codes where the case and Dv allow: the step divides Dv) and with
 * VKL_VK_NO_FUSE=1, the outputs bit for bit, within the dot bound of ref,
 * the quantizer's dispatch gone where fused. The Reshape shares o's memory
 * (as the planner lays views out) but for ATTN_COPIED. */
static void test_attn_codes(vkl_context *ctx, rng *r, attn_case ac, const fmt *f, int64_t B, int64_t Dv) {
    const int64_t N = 37;
    vkl_graph *g = attn_graph(ctx, r, ac, f, B, Dv, N);
    if (!g) return;
    const int64_t dims[3][4] = {{B, ATTN_HQ, 1, ATTN_D}, {B, ATTN_HKV, ATTN_T, ATTN_D}, {B, ATTN_HKV, ATTN_T, Dv}};
    vkl_host_tensor ins[3] = {{0}, {0}, {0}};
    for (uint32_t i = 0; i < 3; i++) {
        ins[i].dtype = VKL_DTYPE_F32;
        ins[i].rank = 4;
        memcpy(ins[i].dims, dims[i], sizeof(dims[i]));
        const int64_t n = dims[i][0] * dims[i][1] * dims[i][2] * dims[i][3];
        ins[i].nbytes = (size_t)n * sizeof(float);
        float *x = malloc(ins[i].nbytes);
        for (int64_t j = 0; j < n; j++) x[j] = rnd_gauss(r);
        ins[i].data = x;
    }
    vkl_host_tensor want[2] = {{0}, {0}};
    CHECK_OK(ctx, vkl_run_once(ctx, vkl_backend_find("ref"), g, ins, want));
    uint32_t over = VKL_NONE, o = VKL_NONE;
    CHECK_OK(ctx, vkl_graph_find_tensor(g, "o", &o));
    if (ac == ATTN_RESHAPE || ac == ATTN_ALSO_OUTPUT) CHECK_OK(ctx, vkl_graph_find_tensor(g, "a", &over));
    const uint32_t chunk = f->dtype == VKL_DTYPE_Q_INT8 ? 16 : 32;
    const bool fuses = (ac == ATTN_RESHAPE || ac == ATTN_DIRECT) && Dv % chunk == 0;
    const size_t counts[2] = {(size_t)(B * N), (size_t)(B * ATTN_HQ * Dv)};
    setenv("VKL_VK_MATVEC", "dot", 1);
    for (size_t ki = 0; ki < VKL_ARRAY_LEN(attn_kernels) && want[0].data; ki++) {
        setenv("VKL_VK_ATTN", attn_kernels[ki].attn, 1);
        setenv("VKL_VK_ATTN_FOLD", attn_kernels[ki].fold, 1);
        setenv("VKL_VK_ATTN_WG_FOLD", attn_kernels[ki].fold, 1);
        float *outs[2][2] = {{NULL}};
        vkl_vk_exec_stats stats[2] = {{0}};
        bool ran = true;
        for (int off = 0; off < 2 && ran; off++) {
            setenv("VKL_VK_NO_FUSE", off ? "1" : "0", 1);
            ran = run_vulkan(ctx, g, ins, over, o, outs[off], &stats[off]);
        }
        if (ran) {
            double worst = 0;
            bool same = true;
            for (uint32_t i = 0; i < g->n_outputs; i++) {
                const double e = rel_l2(outs[0][i], want[i].data, counts[i]);
                worst = e > worst ? e : worst;
                same &= !memcmp(outs[0][i], outs[1][i], counts[i] * sizeof(float));
            }
            printf("  %-52s %-4s B=%lld Dv=%3lld %-9s fold %s: rel L2 %.2e, fused %u dispatches (%u Attention "
                   "writing codes), unfused %u; outputs %s\n",
                   attn_case_names[ac], f->name, (long long)B, (long long)Dv, attn_kernels[ki].attn,
                   attn_kernels[ki].fold, worst, stats[0].dispatches, stats[0].attn_codes, stats[1].dispatches,
                   same ? "equal" : "DIFFER");
            CHECKF(worst <= 3e-2 && same && stats[0].attn_codes == (fuses ? 1u : 0u) && stats[1].attn_codes == 0 &&
                       stats[0].dispatches + (fuses ? 1u : 0u) == stats[1].dispatches,
                   "%s %s B=%lld Dv=%lld, VKL_VK_ATTN=%s, VKL_VK_ATTN_FOLD=%s: relative L2 error %.3g (bound 3e-2), "
                   "outputs %s, %u Attentions writing codes (want %d), %u dispatches against %u unfused",
                   attn_case_names[ac], f->name, (long long)B, (long long)Dv, attn_kernels[ki].attn,
                   attn_kernels[ki].fold, worst, same ? "equal" : "differ", stats[0].attn_codes, fuses ? 1 : 0,
                   stats[0].dispatches, stats[1].dispatches);
        }
        for (int off = 0; off < 2; off++)
            for (int i = 0; i < 2; i++) free(outs[off][i]);
    }
    unsetenv("VKL_VK_NO_FUSE");
    unsetenv("VKL_VK_MATVEC");
    unsetenv("VKL_VK_ATTN");
    unsetenv("VKL_VK_ATTN_FOLD");
    unsetenv("VKL_VK_ATTN_WG_FOLD");
    for (int i = 0; i < 2; i++) vkl_free(ctx, want[i].data);
    for (int i = 0; i < 3; i++) free(ins[i].data);
    vkl_graph_destroy(g);
}

/* ---- (d) the bundled model's decode step ---------------------------------------------------------- */

/* The decode step a session prepares after `past` tokens (engine/session.c:
 * unnamed symbols 1, seq 1, total past + 1), laid out by the model's plan
 * for a context of `context`; its stats into *out. */
static bool decode_stats(vkl_context *ctx, const char *path, int64_t past, int64_t context, vkl_vk_exec_stats *out) {
    vkl_model_options mo;
    vkl_model_options_init(&mo);
    mo.backend = "vulkan";
    vkl_model *m = NULL;
    vkl_status st = vkl_env_model_load(ctx, path, &mo, &m);
    CHECK_OK(ctx, st);
    if (st) return false;
    const size_t n = vkl_symtab_symbol_count(m->g->syms);
    int64_t *values = calloc(n + 1, sizeof(int64_t)), *max_values = calloc(n + 1, sizeof(int64_t));
    size_t *offsets = calloc(m->g->n_tensors + 1, sizeof(size_t));
    for (size_t i = 0; i < n; i++) values[i] = max_values[i] = 1;
    if (m->sym_seq != VKL_NO_SYMBOL) values[m->sym_seq] = max_values[m->sym_seq] = 1;
    if (m->sym_past != VKL_NO_SYMBOL) values[m->sym_past] = past, max_values[m->sym_past] = context - 1;
    if (m->sym_total != VKL_NO_SYMBOL) values[m->sym_total] = past + 1, max_values[m->sym_total] = context;
    size_t bytes = 0;
    vkl_backend_buffer *arena = NULL;
    vkl_backend_exec *e = NULL;
    vkl_layout_binding lb = {values, n, max_values, 0};
    st = vkl_plan_layout(ctx, m->plan, &lb, offsets, &bytes, NULL);
    if (!st) st = m->be->buffer_create(m->dev, ctx, VKL_BUFFER_DEVICE, bytes, &arena);
    vkl_memory_map mem = {arena, offsets, m->g->n_tensors};
    vkl_binding b = {values, n};
    if (!st) st = m->be->prepare(m->dev, ctx, m->g, m->weights, &mem, &b, &e);
    if (!st) vkl_vk_exec_stats_get(e, out);
    CHECK_OK(ctx, st);
    if (e) m->be->exec_release(m->dev, ctx, e);
    if (arena) m->be->buffer_destroy(m->dev, ctx, arena);
    free(values);
    free(max_values);
    free(offsets);
    vkl_model_free(m);
    return st == VKL_OK;
}

static void test_decode_counts(vkl_context *ctx, const char *path) {
    vkl_vk_exec_stats on, off, some;
    setenv("VKL_VK_NO_FUSE", "0", 1);
    const bool ok_on = decode_stats(ctx, path, 63, 128, &on);
    setenv("VKL_VK_FUSE_OFF", "qkv,rope-kv", 1); /* two patterns off, the rest on */
    const bool ok_some = decode_stats(ctx, path, 63, 128, &some);
    unsetenv("VKL_VK_FUSE_OFF");
    setenv("VKL_VK_NO_FUSE", "1", 1);
    const bool ok_off = decode_stats(ctx, path, 63, 128, &off);
    unsetenv("VKL_VK_NO_FUSE");
    if (!ok_on || !ok_off || !ok_some) return;
    printf("bundled model, one decode step (past 63, context 128): fused %u dispatches, %u barriers, %u nodes "
           "fused; VKL_VK_FUSE_OFF=qkv,rope-kv %u dispatches; VKL_VK_NO_FUSE=1 %u dispatches, %u barriers\n",
           on.dispatches, on.barriers, on.fused, some.dispatches, off.dispatches, off.barriers);
    CHECK(on.fused > 0 && off.fused == 0);
    CHECK(on.dispatches < off.dispatches && on.barriers < off.barriers);
    CHECK(on.qkv > 0 && on.rope_kv > 0 && some.qkv == 0 && some.rope_kv == 0 && some.fused > 0 &&
          on.dispatches < some.dispatches && some.dispatches < off.dispatches);
}

/* ---- (g) RoPE + KvAppend: several decode steps, bit for bit -------------------------------------- */

#define ROPE_KV_STEPS 5
#define ROPE_KV_CONTEXT 16

/* What ROPE_KV_STEPS decode steps from an empty cache left: each step's
 * logits, the KV states' bytes after the last, and the last step's stats. */
typedef struct decode_run {
    float *logits;      /* ROPE_KV_STEPS x vocab */
    uint8_t *states;    /* every state tensor's bytes, in tensor order */
    size_t vocab, state_bytes;
    uint32_t layers;    /* Attention nodes */
    vkl_vk_exec_stats first, stats; /* the first step's (the prompt's) and the last step's */
} decode_run;

static void decode_run_free(decode_run *r) {
    free(r->logits);
    free(r->states);
    memset(r, 0, sizeof(*r));
}

/* One step's input: n int64 values at tensor `role`'s offset. */
static vkl_status write_i64(vkl_model *m, vkl_context *ctx, vkl_backend_buffer *arena, const size_t *offsets,
                            uint32_t role, const int64_t *v, size_t n) {
    if (role == VKL_NONE) return VKL_OK;
    const uint32_t t = m->g->inputs[role];
    if (m->g->tensors[t].dtype != VKL_DTYPE_I64) return VKL_ERR_UNSUPPORTED;
    return m->be->buffer_write(m->dev, ctx, arena, offsets[t], v, n * sizeof(int64_t));
}

/* The model at `path` on Vulkan, fused or not (VKL_VK_NO_FUSE at load), its
 * RoPE nodes made interleaved when asked (the same graph either way, so the
 * two runs compare whatever the rotation means for the model): a first step
 * of `prompt` tokens (1: decode from the first token; more: a prefill), then
 * one token at a time, each step prepared for its exact past length over one
 * arena (zeroed first) as a session lays it out for ROPE_KV_CONTEXT (or the
 * prompt and the steps after it); each step's last row of logits kept. */
#define PROMPT_MAX 32
static bool run_decode(vkl_context *ctx, const char *path, bool fuse, bool interleaved, int64_t prompt,
                       decode_run *out) {
    memset(out, 0, sizeof(*out));
    vkl_model_options mo;
    vkl_model_options_init(&mo);
    mo.backend = "vulkan";
    vkl_model *m = NULL;
    setenv("VKL_VK_NO_FUSE", fuse ? "0" : "1", 1);
    vkl_status st = vkl_env_model_load(ctx, path, &mo, &m);
    unsetenv("VKL_VK_NO_FUSE");
    CHECK_OK(ctx, st);
    if (st) return false;
    const vkl_graph *g = m->g; /* its nodes' attributes are writable (the interleaved switch) */
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const vkl_node *n = &g->nodes[i];
        out->layers += !n->dead && n->op == VKL_OP_ATTENTION;
        for (uint32_t a = 0; interleaved && !n->dead && n->op == VKL_OP_ROPE && a < n->n_attrs; a++)
            if (!strcmp(n->attrs[a].name, "interleaved")) n->attrs[a].i = 1;
    }
    const size_t ns = vkl_symtab_symbol_count(g->syms);
    int64_t *values = calloc(ns + 1, sizeof(int64_t)), *max_values = calloc(ns + 1, sizeof(int64_t));
    size_t *offsets = calloc(g->n_tensors + 1, sizeof(size_t)), *first = calloc(g->n_tensors + 1, sizeof(size_t));
    out->vocab = m->vocab;
    out->logits = calloc((size_t)ROPE_KV_STEPS * m->vocab + 1, sizeof(float));
    vkl_backend_buffer *arena = NULL;
    size_t arena_bytes = 0;
    const uint32_t logits = g->outputs[m->out_logits];
    const int64_t context = prompt + ROPE_KV_STEPS > ROPE_KV_CONTEXT ? prompt + ROPE_KV_STEPS : ROPE_KV_CONTEXT;
    for (int64_t p = 0; !st && p < ROPE_KV_STEPS; p++) {
        const int64_t seq = p ? 1 : prompt, past = p ? prompt + p - 1 : 0;
        for (size_t i = 0; i < ns; i++) values[i] = max_values[i] = 1;
        if (m->sym_seq != VKL_NO_SYMBOL) values[m->sym_seq] = seq, max_values[m->sym_seq] = prompt;
        if (m->sym_past != VKL_NO_SYMBOL) values[m->sym_past] = past, max_values[m->sym_past] = context - 1;
        if (m->sym_total != VKL_NO_SYMBOL) values[m->sym_total] = past + seq, max_values[m->sym_total] = context;
        size_t bytes = 0;
        vkl_layout_binding lb = {values, ns, max_values, 0};
        st = vkl_plan_layout(ctx, m->plan, &lb, offsets, &bytes, NULL);
        if (!st && !arena) {
            arena_bytes = bytes;
            memcpy(first, offsets, g->n_tensors * sizeof(size_t));
            st = m->be->buffer_create(m->dev, ctx, VKL_BUFFER_DEVICE, bytes, &arena);
            uint8_t *zeros = st ? NULL : calloc(bytes ? bytes : 1, 1);
            if (zeros) st = m->be->buffer_write(m->dev, ctx, arena, 0, zeros, bytes);
            free(zeros);
        }
        /* the states persist across steps: at the same place every step */
        for (uint32_t t = 0; !st && t < g->n_tensors; t++)
            if (g->tensors[t].kind == VKL_TENSOR_STATE && offsets[t] != first[t]) st = VKL_ERR_STATE;
        if (!st && bytes > arena_bytes) st = VKL_ERR_STATE;
        int64_t ids[PROMPT_MAX], pos[PROMPT_MAX], ones[PROMPT_MAX + ROPE_KV_STEPS];
        for (int64_t i = 0; i < seq; i++) {
            ids[i] = ((past + i) * 7 + 3) % (int64_t)m->vocab;
            pos[i] = past + i;
        }
        for (int64_t i = 0; i < past + seq; i++) ones[i] = 1;
        if (!st) st = write_i64(m, ctx, arena, offsets, m->in_ids, ids, (size_t)seq);
        if (!st) st = write_i64(m, ctx, arena, offsets, m->in_pos, pos, (size_t)seq);
        if (!st) st = write_i64(m, ctx, arena, offsets, m->in_mask, ones, (size_t)(past + seq));
        vkl_memory_map mem = {arena, offsets, g->n_tensors};
        vkl_binding b = {values, ns};
        vkl_backend_exec *e = NULL;
        if (!st) st = m->be->prepare(m->dev, ctx, g, m->weights, &mem, &b, &e);
        if (!st) st = m->be->execute(m->dev, ctx, e, &b);
        if (!st) st = m->be->wait(m->dev, ctx, e);
        if (!st) vkl_vk_exec_stats_get(e, p ? &out->stats : &out->first);
        int64_t ldims[VKL_MAX_RANK], lcount = 0;
        size_t lbytes = 0;
        if (!st) st = vkl_tensor_eval(ctx, g, logits, values, ns, ldims, &lcount, &lbytes);
        const size_t last_row = lcount >= (int64_t)m->vocab ? (size_t)lcount / m->vocab - 1 : 0;
        if (!st)
            st = m->be->buffer_read(m->dev, ctx, arena, offsets[logits] + last_row * m->vocab * sizeof(float),
                                    out->logits + (size_t)p * m->vocab, m->vocab * sizeof(float));
        if (e) m->be->exec_release(m->dev, ctx, e);
    }
    if (!st && ROPE_KV_STEPS == 1) out->stats = out->first;
    /* the states, sized at the planned maximum */
    for (uint32_t t = 0; !st && t < g->n_tensors; t++) {
        if (g->tensors[t].kind != VKL_TENSOR_STATE) continue;
        int64_t dims[VKL_MAX_RANK], count;
        size_t bytes;
        st = vkl_tensor_eval(ctx, g, t, max_values, ns, dims, &count, &bytes);
        uint8_t *grown = st ? NULL : realloc(out->states, out->state_bytes + bytes + 1);
        if (!st && !grown) st = VKL_ERR_OUT_OF_MEMORY;
        if (!st) {
            out->states = grown;
            st = m->be->buffer_read(m->dev, ctx, arena, offsets[t], out->states + out->state_bytes, bytes);
            out->state_bytes += bytes;
        }
    }
    CHECK_OK(ctx, st);
    if (arena) m->be->buffer_destroy(m->dev, ctx, arena);
    free(values);
    free(max_values);
    free(offsets);
    free(first);
    vkl_model_free(m);
    return st == VKL_OK;
}

/* The model at `path` over ROPE_KV_STEPS decode steps fused (*a) and with
 * VKL_VK_NO_FUSE=1 (*b), and whether every step's logits and the KV caches
 * are the same bits; false, with nothing left to free, where a run failed. */
static bool decode_fused_and_not(vkl_context *ctx, const char *path, decode_run *a, decode_run *b,
                                 bool *same_logits, bool *same_states) {
    const bool ok_a = run_decode(ctx, path, true, false, 1, a);
    const bool ok_b = ok_a && run_decode(ctx, path, false, false, 1, b);
    if (!ok_b) {
        if (ok_a) decode_run_free(a);
        return false;
    }
    *same_logits = !memcmp(a->logits, b->logits, (size_t)ROPE_KV_STEPS * a->vocab * sizeof(float));
    *same_states = a->state_bytes == b->state_bytes && !memcmp(a->states, b->states, a->state_bytes);
    return true;
}

/* ---- (o) the prefill GEMM's Add and Q/K/V on whole models ------------------------------------------- */

#define GEMM_PROMPT 20 /* rows of the first step: the GEMM's from VKL_VK_GEMM_MIN_ROWS=16 */

/* The model at `path` (quantized projections) prefilling GEMM_PROMPT tokens
 * on the GEMM, then decoding, with every fusion and with the GEMM's
 * (VKL_VK_FUSE_OFF=gemm) off: every step's logits and the KV cache bit for
 * bit, the prefill's Adds fused (fewer dispatches), its Q/K/V side by side. */
static void test_gemm_model(vkl_context *ctx, const char *path) {
    decode_run a, b;
    setenv("VKL_VK_GEMM_MIN_ROWS", "16", 1);
    const bool ok_a = run_decode(ctx, path, true, false, GEMM_PROMPT, &a);
    setenv("VKL_VK_FUSE_OFF", "gemm", 1);
    const bool ok_b = ok_a && run_decode(ctx, path, true, false, GEMM_PROMPT, &b);
    unsetenv("VKL_VK_FUSE_OFF");
    unsetenv("VKL_VK_GEMM_MIN_ROWS");
    if (!ok_b) {
        if (ok_a) decode_run_free(&a);
        return;
    }
    const bool same_logits = !memcmp(a.logits, b.logits, (size_t)ROPE_KV_STEPS * a.vocab * sizeof(float));
    const bool same_states = a.state_bytes == b.state_bytes && !memcmp(a.states, b.states, a.state_bytes);
    printf("%s: a prefill of %d tokens on the GEMM, then %d decode steps, %u layers: prefill fused %u dispatches "
           "(%u nodes fused), VKL_VK_FUSE_OFF=gemm %u (%u); logits %s, KV cache (%zu bytes) %s\n",
           path, GEMM_PROMPT, ROPE_KV_STEPS - 1, a.layers, a.first.dispatches, a.first.fused, b.first.dispatches,
           b.first.fused, same_logits ? "identical" : "DIFFER", a.state_bytes, same_states ? "identical" : "DIFFER");
    CHECKF(same_logits && same_states, "%s: the GEMM's fused prefill changed the logits or the KV cache", path);
    CHECKF(a.first.fused > b.first.fused && a.first.dispatches < b.first.dispatches && a.first.qkv > 0 &&
               b.first.qkv == 0,
           "%s: no Add fused into the prefill's GEMMs, or no Q/K/V GEMMs side by side", path);
    decode_run_free(&a);
    decode_run_free(&b);
}

/* ---- (h) Q/K/V: two or three projections of one A in one matvec ----------------------------------- */

/* The model at `path` (quantized projections) fused and with
 * VKL_VK_NO_FUSE=1, the float matvecs and, where the device has them, the
 * integer-dot ones: every step's logits and the KV cache bit for bit, one
 * fused Q/K/V dispatch (stats.qkv) per layer, none unfused, at least two
 * dispatches fewer than unfused per fused Q/K/V dispatch, and with
 * whole_rope_kv (the bundled model: a Llama export's layer) each layer's
 * RoPE + KvAppend dispatch doing KvAppend(V) and RoPE(Q) too (V, made at
 * Q's position, is ready for it; qwen2's separate bias Adds make V later). */
static void test_qkv(vkl_context *ctx, const char *path, bool has_dot, bool whole_rope_kv) {
    for (int dot = 0; dot <= (int)has_dot; dot++) {
        setenv("VKL_VK_MATVEC", dot ? "dot" : "float", 1);
        decode_run a, b;
        bool same_logits, same_states;
        const bool ok = decode_fused_and_not(ctx, path, &a, &b, &same_logits, &same_states);
        unsetenv("VKL_VK_MATVEC");
        if (!ok) return;
        printf("%s, %s matvecs: %d decode steps, %u layers: fused %u dispatches (%u Q/K/V, %u RoPE+KvAppend with V "
               "and Q), %u barriers; unfused %u, %u; logits %s, KV cache %s\n",
               path, dot ? "integer-dot" : "float", ROPE_KV_STEPS, a.layers, a.stats.dispatches, a.stats.qkv,
               a.stats.rope_kv_all, a.stats.barriers, b.stats.dispatches, b.stats.barriers, same_logits ? "identical" : "DIFFER",
               same_states ? "identical" : "DIFFERS");
        CHECK(same_logits && same_states);
        CHECK(a.layers > 0 && a.stats.qkv == a.layers && b.stats.qkv == 0 &&
              (!whole_rope_kv || a.stats.rope_kv_all == a.layers) &&
              a.stats.dispatches + 2 * a.stats.qkv <= b.stats.dispatches);
        decode_run_free(&a);
        decode_run_free(&b);
    }
}

/* ---- (k) GLU codes: the gate/up matvecs writing the down projections' codes --------------------------- */

/* The model at `path` with the integer-dot matvecs, fused and with
 * VKL_VK_NO_FUSE=1: every step's logits and the KV cache bit for bit; each
 * layer's gate/up matvec writes its down projection's codes (stats.glu_codes
 * per layer), or none does (a model whose down projections are no dot
 * matvec: the bundled one keeps them f32). The count of layers that did
 * goes to *wrote. */
static void test_glu_codes_model(vkl_context *ctx, const char *path, uint32_t *wrote) {
    setenv("VKL_VK_MATVEC", "dot", 1);
    decode_run a, b;
    bool same_logits, same_states;
    const bool ok = decode_fused_and_not(ctx, path, &a, &b, &same_logits, &same_states);
    unsetenv("VKL_VK_MATVEC");
    if (!ok) return;
    printf("%s, integer-dot matvecs: %d decode steps, %u layers: fused %u dispatches (%u gate/up writing codes), %u "
           "barriers; unfused %u, %u; logits %s, KV cache %s\n",
           path, ROPE_KV_STEPS, a.layers, a.stats.dispatches, a.stats.glu_codes, a.stats.barriers, b.stats.dispatches,
           b.stats.barriers, same_logits ? "identical" : "DIFFER", same_states ? "identical" : "DIFFERS");
    CHECK(same_logits && same_states);
    CHECK(a.layers > 0 && (a.stats.glu_codes == a.layers || a.stats.glu_codes == 0) && b.stats.glu_codes == 0 &&
          a.stats.dispatches < b.stats.dispatches);
    *wrote += a.stats.glu_codes;
    decode_run_free(&a);
    decode_run_free(&b);
}

/* ---- (m) the Attention writing o_proj's codes: several decode steps, bit for bit ---------------------- */

/* The model at `path` (quantized o_proj) with the integer-dot matvecs,
 * fused and with VKL_VK_NO_FUSE=1, under each decode kernel of (l): every
 * step's logits and the KV cache bit for bit, every layer's Attention
 * writing its o_proj's codes, none unfused. */
static void test_attn_codes_model(vkl_context *ctx, const char *path, bool has_dot) {
    if (!has_dot) {
        printf("%s: Attention writing codes skipped (no shaderIntegerDotProduct)\n", path);
        return;
    }
    setenv("VKL_VK_MATVEC", "dot", 1);
    for (size_t ki = 0; ki < VKL_ARRAY_LEN(attn_kernels); ki++) {
        setenv("VKL_VK_ATTN", attn_kernels[ki].attn, 1);
        setenv("VKL_VK_ATTN_FOLD", attn_kernels[ki].fold, 1);
        setenv("VKL_VK_ATTN_WG_FOLD", attn_kernels[ki].fold, 1);
        decode_run a, b;
        bool same_logits, same_states;
        if (!decode_fused_and_not(ctx, path, &a, &b, &same_logits, &same_states)) break;
        printf("%s, VKL_VK_ATTN=%s, fold %s: %d decode steps, %u layers: fused %u dispatches (%u Attentions writing "
               "codes), unfused %u; logits %s, KV cache %s\n",
               path, attn_kernels[ki].attn, attn_kernels[ki].fold, ROPE_KV_STEPS, a.layers, a.stats.dispatches,
               a.stats.attn_codes, b.stats.dispatches, same_logits ? "identical" : "DIFFER",
               same_states ? "identical" : "DIFFERS");
        CHECK(same_logits && same_states);
        CHECK(a.layers > 0 && a.stats.attn_codes == a.layers && b.stats.attn_codes == 0);
        decode_run_free(&a);
        decode_run_free(&b);
    }
    unsetenv("VKL_VK_MATVEC");
    unsetenv("VKL_VK_ATTN");
    unsetenv("VKL_VK_ATTN_FOLD");
    unsetenv("VKL_VK_ATTN_WG_FOLD");
}

/* The fused executable (RoPE(K) + KvAppend(K) and what else of the layer
 * fuses: vk_fuse.c) against the unfused one, the model's RoPE as it is and
 * made interleaved: every step's logits and the KV cache bit for bit, one
 * fused RoPE + KvAppend dispatch per layer, fewer dispatches and barriers;
 * and the two rotations give different logits (the switch took). */
static void test_rope_kv(vkl_context *ctx, const char *path) {
    decode_run on[2], off[2];
    bool ok[2] = {false, false};
    for (int il = 0; il < 2; il++) {
        if (!run_decode(ctx, path, true, il == 1, 1, &on[il])) break;
        if (!run_decode(ctx, path, false, il == 1, 1, &off[il])) {
            decode_run_free(&on[il]);
            break;
        }
        ok[il] = true;
        const decode_run *a = &on[il], *b = &off[il];
        const size_t n = (size_t)ROPE_KV_STEPS * a->vocab;
        const bool same_logits = !memcmp(a->logits, b->logits, n * sizeof(float));
        const bool same_states = a->state_bytes == b->state_bytes && !memcmp(a->states, b->states, a->state_bytes);
        size_t set = 0; /* state bytes written: the steps reached the cache */
        for (size_t i = 0; i < a->state_bytes; i++) set += a->states[i] != 0;
        printf("%s%s: %d decode steps, %u layers: fused %u dispatches (%u RoPE+KvAppend), %u barriers; unfused %u, "
               "%u; logits %s, KV cache (%zu bytes, %zu non-zero) %s\n",
               path, il ? " (RoPE made interleaved)" : "", ROPE_KV_STEPS, a->layers, a->stats.dispatches,
               a->stats.rope_kv, a->stats.barriers, b->stats.dispatches, b->stats.barriers,
               same_logits ? "identical" : "DIFFER", a->state_bytes, set, same_states ? "identical" : "DIFFERS");
        CHECK(same_logits && same_states && set > 0);
        CHECK(a->layers > 0 && a->stats.rope_kv == a->layers && b->stats.rope_kv == 0);
        CHECK(a->stats.dispatches + 2 * a->layers <= b->stats.dispatches && a->stats.barriers <= b->stats.barriers);
    }
    if (ok[0] && ok[1])
        CHECK(memcmp(on[0].logits, on[1].logits, (size_t)ROPE_KV_STEPS * on[0].vocab * sizeof(float)) != 0);
    for (int il = 0; il < 2; il++)
        if (ok[il]) {
            decode_run_free(&on[il]);
            decode_run_free(&off[il]);
        }
}

int main(int argc, char **argv) {
    /* --rope-kv: (g) alone, --qkv: (h), --glu-codes: (k), --attn-codes: (m), --gemm: (o), on each model given */
    const bool rope_kv_only = argc > 1 && !strcmp(argv[1], "--rope-kv");
    const bool qkv_only = argc > 1 && !strcmp(argv[1], "--qkv");
    const bool glu_codes_only = argc > 1 && !strcmp(argv[1], "--glu-codes");
    const bool attn_codes_only = argc > 1 && !strcmp(argv[1], "--attn-codes");
    const bool gemm_only = argc > 1 && !strcmp(argv[1], "--gemm");
    const bool one_mode = rope_kv_only || qkv_only || glu_codes_only || attn_codes_only || gemm_only;
    const int first_model = one_mode ? 2 : 1;
    if (argc <= first_model) {
        fprintf(stderr, "usage: test_vk_fuse [--rope-kv | --qkv | --glu-codes | --attn-codes | --gemm] MODEL.vkm "
                        "[MODEL.vkm...]\n");
        return 2;
    }
    vkl_context *ctx;
    const vkl_backend_vtable *vk;
    vkl_backend_caps caps;
    vkl_status st;
    const int early = test_vulkan_main_start("test_vk_fuse", &ctx, &vk, NULL, &caps, &st);
    if (early >= 0) return early;
    CHECK_OK(ctx, st);
    if (!st) printf("test_vk_fuse: %s (%s)\n", caps.device_name, caps.driver);
    if (!st && !one_mode) {
        rng r = {0x5DEECE66Dull};
        /* K a multiple of the formats' 16-byte steps (32 codes), N not a
         * multiple of the rows per workgroup (4 or 8), M = 1 (decode) and 3 */
        static const int64_t shapes[][3] = {{1, 64, 5}, {1, 256, 130}, {3, 96, 33}};
        const bool has_dot = (caps.features & VKL_FEATURE_INT8_DOT) != 0;
        if (!has_dot) printf("integer-dot matvecs: skipped (no shaderIntegerDotProduct)\n");
        for (int dot = 0; dot <= has_dot; dot++) {
            for (size_t fi = 0; fi < VKL_ARRAY_LEN(formats); fi++)
                for (size_t si = 0; si < VKL_ARRAY_LEN(shapes); si++)
                    for (int p = P_ADD; p <= P_GLU; p++)
                        test_pattern(ctx, &r, (pattern)p, &formats[fi], shapes[si][0], shapes[si][1], shapes[si][2],
                                     false, dot, NULL);
            test_pattern(ctx, &r, P_TWO_USES, &formats[0], 1, 128, 37, false, dot, NULL);
            test_pattern(ctx, &r, P_ADD, &formats[1], 1, 96, 96, true, dot, NULL);
            test_pattern(ctx, &r, P_ADD_READ, &formats[1], 1, 96, 96, true, dot, NULL);
            test_pattern(ctx, &r, P_ADD_READ, &formats[0], 3, 64, 64, true, dot, NULL);
            for (size_t fi = 0; fi < VKL_ARRAY_LEN(formats); fi++) {
                test_qkv_graph(ctx, &r, &formats[fi], 1, 256, 3, dot, NULL);
                test_qkv_graph(ctx, &r, &formats[fi], 3, 96, 3, dot, NULL);
                test_qkv_graph(ctx, &r, &formats[fi], 1, 64, 2, dot, NULL);
            }
        }
        test_gemm_patterns(ctx, &r);
        if (has_dot) {
            test_shared_codes(ctx, &r, 1, 256, 37);
            test_shared_codes(ctx, &r, 3, 96, 20);
            for (int nc = NORM_QKV; nc <= NORM_ALSO_OUTPUT; nc++) {
                test_norm_codes(ctx, &r, (norm_case)nc, &formats[0], 1, 256, 37);
                test_norm_codes(ctx, &r, (norm_case)nc, &formats[2], 3, 100, 20);
            }
            /* a row of more code words than the norm's 1024 invocations: two rounds of words */
            test_norm_codes(ctx, &r, NORM_QKV, &formats[0], 1, 5024, 5);
            test_norm_codes(ctx, &r, NORM_GLU, &formats[2], 2, 4400, 3);
            test_glu_codes_all(ctx, &r);
            /* Dv 48: whole steps of int8's 16, not of the 4-bit formats' 32 (those stay unfused) */
            for (size_t fi = 0; fi < VKL_ARRAY_LEN(formats); fi++) {
                test_attn_codes(ctx, &r, ATTN_RESHAPE, &formats[fi], 1, 64);
                test_attn_codes(ctx, &r, ATTN_RESHAPE, &formats[fi], 2, 48);
            }
            test_attn_codes(ctx, &r, ATTN_DIRECT, &formats[0], 1, 64);
            test_attn_codes(ctx, &r, ATTN_COPIED, &formats[1], 1, 64);
            test_attn_codes(ctx, &r, ATTN_ALSO_OUTPUT, &formats[2], 1, 64);
        }
        test_decode_counts(ctx, argv[1]);
    }
    for (int i = first_model; !st && (!one_mode || rope_kv_only) && i < argc; i++) test_rope_kv(ctx, argv[i]);
    for (int i = first_model; !st && qkv_only && i < argc; i++)
        test_qkv(ctx, argv[i], (caps.features & VKL_FEATURE_INT8_DOT) != 0, i == first_model);
    if (!st && glu_codes_only) {
        if (!(caps.features & VKL_FEATURE_INT8_DOT)) {
            printf("GLU codes: skipped (no shaderIntegerDotProduct)\n");
            vkl_context_destroy(ctx);
            return 77;
        }
        uint32_t wrote = 0;
        for (int i = first_model; i < argc; i++) test_glu_codes_model(ctx, argv[i], &wrote);
        CHECKF(wrote > 0, "no model's gate/up matvecs wrote their down projections' codes");
    }
    for (int i = first_model; !st && gemm_only && i < argc; i++) test_gemm_model(ctx, argv[i]);
    for (int i = first_model; !st && attn_codes_only && i < argc; i++)
        test_attn_codes_model(ctx, argv[i], (caps.features & VKL_FEATURE_INT8_DOT) != 0);
    CHECKF(validation_messages == 0, "%d validation messages", validation_messages);
    vkl_context_destroy(ctx);
    return check_finish("test_vk_fuse");
}
