/* The greedy-pick graph (engine/greedy_pick.h) run on one backend, against
 * exact arithmetic done here: for logits [B, S, V] (a graph whose logits are
 * its input through an Identity), the pick's index must be the first index
 * of the largest value with NaN counting as largest (the ref ArgMax's
 * order), its value the logit there, bit for bit; and wherever that value is
 * neither NaN nor -inf, the host greedy sampler (engine/sampler.h) must
 * choose the same token, which is what lets a session trust the pick.
 * Rows: random normal values; the maximum repeated at three places; -inf
 * sprinkled among ties; +inf twice; a NaN beside a +inf; all -inf; the
 * maximum last; the maximum first and repeated last. Vocabularies of 1 to
 * 1.1 million (not multiples of any workgroup; the Vulkan kernel splits
 * long lines in chunks, and past a million elements makes its chunks
 * longer), f32 and f16, one line (the decode step's), 6 lines (still the
 * split kernel) and 20 (Vulkan's one workgroup a line).
 * Usage: test_greedy_pick [ref|cpu|vulkan] (default ref). Exit 77: the
 * backend is not in this build or cannot open here. */
#define _POSIX_C_SOURCE 200809L /* setenv (vulkan_start.h) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dtype.h"
#include "greedy_pick.h"
#include "ops.h"
#include "run_once.h"
#include "sampler.h"
#include "test_rng.h"
#include "vulkan_start.h"

enum { PAT_RANDOM, PAT_TIES, PAT_NEG_INF, PAT_POS_INF, PAT_NAN, PAT_ALL_NEG_INF, PAT_MAX_LAST, PAT_FIRST_AND_LAST,
       PAT_COUNT };
static const char *const pattern_names[PAT_COUNT] = {"random",  "ties",    "-inf and ties", "+inf twice",
                                                     "NaN",     "all -inf", "max last",     "max first and last"};

/* One row of V logits in pattern p. */
static void fill_row(rng *r, float *x, int64_t V, int p) {
    for (int64_t k = 0; k < V; k++) x[k] = p == PAT_ALL_NEG_INF ? -INFINITY : rnd_gauss(r);
    const int64_t a = (int64_t)(rnd_u32(r) % (uint32_t)V), b = (int64_t)(rnd_u32(r) % (uint32_t)V);
    const int64_t c = (int64_t)(rnd_u32(r) % (uint32_t)V);
    switch (p) {
    case PAT_TIES: x[a] = x[b] = x[c] = 9.5f; break;
    case PAT_NEG_INF:
        for (int64_t k = 0; k < V; k++)
            if (rnd_u32(r) % 10 == 0) x[k] = -INFINITY;
        x[a] = x[b] = 9.5f;
        break;
    case PAT_POS_INF: x[a] = x[b] = INFINITY; break;
    case PAT_NAN: x[a] = INFINITY; x[b] = NAN; break;
    case PAT_MAX_LAST: x[V - 1] = 9.5f; break;
    case PAT_FIRST_AND_LAST: x[0] = x[V - 1] = 9.5f; break;
    default: break;
    }
}

/* The ref ArgMax's order, exactly: NaN largest, ties to the first index. */
static int64_t oracle(const float *x, int64_t V) {
    int64_t best = 0;
    for (int64_t k = 1; k < V; k++) {
        const bool better = isnan(x[k]) ? !isnan(x[best]) : !isnan(x[best]) && x[k] > x[best];
        if (better) best = k;
    }
    return best;
}

/* The row as the backend saw it: f16 rounding applied for f16 logits. */
static float seen(vkl_dtype dt, float v) { return dt == VKL_DTYPE_F16 ? vkl_f16_to_f32(vkl_f32_to_f16(v)) : v; }

/* logits = Identity(x), x of dtype dt [B, S, V]; then its greedy-pick graph. */
static vkl_status build(vkl_context *ctx, vkl_dtype dt, int64_t B, int64_t S, int64_t V, vkl_graph **base,
                        vkl_graph **pick, uint32_t *out_index, uint32_t *out_value) {
    vkl_status st = vkl_graph_create(ctx, base);
    if (st) return st;
    vkl_graph *g = *base;
    vkl_shape shape = {.rank = 3};
    const int64_t dims[3] = {B, S, V};
    for (int d = 0; d < 3 && !st; d++) st = vkl_expr_const(g->syms, dims[d], &shape.dims[d]);
    uint32_t x, logits;
    if (!st) st = vkl_graph_add_tensor(g, "x", dt, VKL_TENSOR_INPUT, &shape, &x);
    if (!st) st = vkl_graph_add_input(g, x);
    if (!st) st = vkl_graph_add_tensor(g, "logits", VKL_DTYPE_INVALID, VKL_TENSOR_ACTIVATION, NULL, &logits);
    if (!st) st = vkl_graph_add_node(g, VKL_OP_IDENTITY, "identity", &x, 1, &logits, 1, NULL, 0, NULL);
    if (!st) st = vkl_graph_add_output(g, logits);
    if (!st) st = vkl_graph_validate(g);
    if (!st) st = vkl_graph_infer_shapes(g);
    if (!st) st = vkl_greedy_pick_graph(g, 0, pick, out_index, out_value);
    if (!st && !*pick) st = vkl_fail(ctx, VKL_ERR_INTERNAL, "no greedy-pick graph for [B, S, V] logits");
    return st;
}

typedef struct run_env {
    vkl_context *ctx;
    const vkl_backend_vtable *be;
    vkl_backend_device *dev;
    vkl_sampler *greedy; /* the host sampler's default: plain greedy */
    size_t sampler_vocab;
    rng r;
} run_env;

/* B * S rows of V logits, row i in pattern (first + i) % PAT_COUNT. */
static void run_case(run_env *e, vkl_dtype dt, int64_t B, int64_t S, int64_t V, int first) {
    const int64_t L = B * S;
    const size_t es = vkl_dtype_size(dt);
    float *x = malloc((size_t)(L * V) * sizeof(float));
    unsigned char *bytes = malloc((size_t)(L * V) * es);
    REQUIRE(x && bytes, "out of memory");
    for (int64_t l = 0; l < L; l++) fill_row(&e->r, x + l * V, V, (int)((first + l) % PAT_COUNT));
    for (int64_t i = 0; i < L * V; i++) {
        x[i] = seen(dt, x[i]);
        if (dt == VKL_DTYPE_F16) {
            const uint16_t h = vkl_f32_to_f16(x[i]);
            memcpy(bytes + 2 * i, &h, 2);
        } else {
            memcpy(bytes + 4 * i, &x[i], 4);
        }
    }
    vkl_graph *base = NULL, *pick = NULL;
    uint32_t oi = 0, ov = 0;
    vkl_host_tensor in = {dt, 3, {B, S, V}, bytes, (size_t)(L * V) * es}, out[3];
    memset(out, 0, sizeof(out));
    vkl_status st = build(e->ctx, dt, B, S, V, &base, &pick, &oi, &ov);
    if (!st) st = vkl_run_once_on(e->ctx, e->be, e->dev, pick, &in, out);
    CHECKF(!st, "%s [%lld, %lld, %lld]: %s", vkl_dtype_name(dt), (long long)B, (long long)S, (long long)V,
           vkl_context_error(e->ctx));
    if (!st) {
        CHECK(out[oi].dtype == VKL_DTYPE_I64 && out[oi].rank == 3 && out[oi].dims[2] == 1 && out[ov].dtype == dt);
        for (int64_t l = 0; l < L; l++) {
            const float *row = x + l * V;
            const int p = (int)((first + l) % PAT_COUNT);
            const int64_t want = oracle(row, V);
            int64_t got;
            memcpy(&got, (unsigned char *)out[oi].data + 8 * l, 8);
            float value;
            if (dt == VKL_DTYPE_F16) {
                uint16_t h;
                memcpy(&h, (unsigned char *)out[ov].data + 2 * l, 2);
                value = vkl_f16_to_f32(h);
            } else {
                memcpy(&value, (unsigned char *)out[ov].data + 4 * l, 4);
            }
            CHECKF(got == want, "%s %s V %lld line %lld (%s): index %lld, want %lld", e->be->name, vkl_dtype_name(dt),
                   (long long)V, (long long)l, pattern_names[p], (long long)got, (long long)want);
            const bool same_value = isnan(row[want]) ? isnan(value) : !memcmp(&value, &row[want], sizeof(float));
            CHECKF(same_value, "%s V %lld line %lld (%s): value %g, want %g", e->be->name, (long long)V, (long long)l,
                   pattern_names[p], value, row[want]);
            /* what the session concludes from the pick, against the sampler */
            if ((size_t)V == e->sampler_vocab) {
                int32_t tok = -1;
                vkl_status ss = vkl_sampler_sample(e->greedy, row, NULL, 0, &tok);
                if (isnan(value) || value == -INFINITY)
                    CHECKF(ss != VKL_OK, "V %lld (%s): the sampler accepted a row the pick flags", (long long)V,
                           pattern_names[p]);
                else
                    CHECKF(ss == VKL_OK && tok == got, "V %lld (%s): sampler %d, pick %lld", (long long)V,
                           pattern_names[p], tok, (long long)got);
            }
        }
    }
    for (int k = 0; k < 3; k++) vkl_free(e->ctx, out[k].data);
    vkl_graph_destroy(pick);
    vkl_graph_destroy(base);
    free(x);
    free(bytes);
}

static void run_all(run_env *e, const char *name) {
    static const int64_t vocabs[] = {1, 5, 255, 1000, 2049, 4097, 50257, 128256, 1100001};
    vkl_sampling greedy;
    vkl_sampling_defaults(&greedy);
    for (size_t v = 0; v < sizeof(vocabs) / sizeof(vocabs[0]); v++) {
        const int64_t V = vocabs[v];
        e->sampler_vocab = (size_t)V;
        REQUIRE(vkl_sampler_create(e->ctx, &greedy, (size_t)V, &e->greedy) == VKL_OK, "sampler: %s",
                vkl_context_error(e->ctx));
        for (int p = 0; p < PAT_COUNT; p++) run_case(e, VKL_DTYPE_F32, 1, 1, V, p); /* a decode step's row */
        if (V >= 1000 && V < 200000) {
            run_case(e, VKL_DTYPE_F32, 2, 3, V, 0);
            run_case(e, VKL_DTYPE_F32, 1, 20, V, 3);
            run_case(e, VKL_DTYPE_F16, 1, 1, V, 1);
            run_case(e, VKL_DTYPE_F16, 1, 6, V, 2);
        }
        vkl_sampler_destroy(e->greedy);
        printf("%s: V %lld: every pattern, index and value as the oracle's\n", name, (long long)V);
    }
}

int main(int argc, char **argv) {
    const char *name = argc > 1 ? argv[1] : "ref";
    vkl_context_options co;
    vkl_context_options_init(&co);
    co.log = test_vulkan_log;
    vkl_context *ctx;
    if (vkl_context_create(&co, &ctx)) return 2;
    run_env e = {ctx, vkl_backend_find(name), NULL, NULL, 0, {0x9E3779B97F4A7C15ull}};
    if (!strcmp(name, "vulkan")) setenv("VKL_VK_VALIDATION", "1", 0);
    vkl_status st = e.be ? test_open_env(ctx, e.be, 0, false, &e.dev) : VKL_ERR_NOT_FOUND;
    if (st == VKL_ERR_NOT_FOUND) {
        printf("test_greedy_pick %s: skipped: %s\n", name, e.be ? vkl_context_error(ctx) : "not in this build");
        vkl_context_destroy(ctx);
        return 77;
    }
    CHECK_OK(ctx, st);
    if (!st) {
        run_all(&e, name);
        e.be->close(e.dev);
    }
    CHECKF(validation_messages == 0, "%d validation message(s)", validation_messages);
    vkl_context_destroy(ctx);
    return check_finish("test_greedy_pick");
}
