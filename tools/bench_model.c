/* vkbench's model runs (bench_model.h). With --profile the model is loaded
 * with per-node timestamps, so every step, the timed decode ones included,
 * runs with the barriers profiling adds; the profile compares node times
 * with step times of those same executables. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_env.h"
#include "bench_decode.h"
#include "bench_model.h"
#include "bench_prefill.h"
#include "bench_util.h"
#include "cli.h"
#include "model.h"
#include "ops.h"

#define PROG "vkbench"
#define VKL_BENCH_THREADS_SHOWN 64 /* threads whose speed and share are printed */

/* The limits: the device's own copy bandwidth where the backend measures it
 * (a GPU's memory), else what the host's threads can read (ref and cpu
 * read host memory); and the compute peak where the backend measures one,
 * the roof of a prefill: the int8 peak of the cpu GEMM's instructions, or
 * the peak of the arithmetic a GPU's GEMM runs on (vkl_bench_gemm_peak). */
static void limits(vkl_model *m, unsigned threads, vkl_bench_report *r) {
    r->device_bw = m->be->copy_bandwidth && !m->be->copy_bandwidth(m->dev, m->ctx, (size_t)256 << 20, &r->copy_bw);
    if (!r->device_bw) r->copy_bw = vkl_bench_host_read_bandwidth(threads);
    const char *sequence = NULL;
    vkl_compute_peaks p;
    r->compute_peak = 0;
    if (m->be->int8_peak && !m->be->int8_peak(m->dev, m->ctx, &r->compute_peak, &sequence)) {
        snprintf(r->compute_peak_kind, sizeof(r->compute_peak_kind), "int8: %s", sequence);
    } else if (m->be->compute_peaks && !m->be->compute_peaks(m->dev, m->ctx, &p)) {
        const char *kind;
        r->compute_peak = vkl_bench_gemm_peak(&p, &kind);
        if (p.coopmat > 0)
            snprintf(r->compute_peak_kind, sizeof(r->compute_peak_kind), "cooperative matrix %s fp16 -> f32",
                     p.coopmat_shape);
        else
            snprintf(r->compute_peak_kind, sizeof(r->compute_peak_kind), "%s", kind);
    }
}

/* Weight bytes one decode step reads: every weight once, except tables only
 * Gathers read (embeddings), of which a step reads one row. */
static size_t step_weight_bytes(const vkl_graph *g) {
    size_t bytes = 0;
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        const vkl_tensor *w = &g->tensors[t];
        if (w->kind != VKL_TENSOR_WEIGHT) continue;
        bool gathered = w->shape.rank >= 1, used = false;
        for (uint32_t i = 0; i < g->n_nodes && gathered; i++)
            for (uint32_t k = 0; k < g->nodes[i].n_inputs; k++)
                if (g->nodes[i].inputs[k] == t) {
                    used = true;
                    gathered = gathered && g->nodes[i].op == VKL_OP_GATHER && k == 0;
                }
        int64_t rows;
        if (gathered && used && vkl_expr_is_const(g->syms, w->shape.dims[0], &rows) && rows > 0)
            bytes += w->nbytes / (size_t)rows;
        else
            bytes += w->nbytes;
    }
    return bytes;
}

/* A host backend's threads (0: the caller), one line: with speeds, the int8
 * dot rate each showed when the device opened; the share of a matrix
 * product each gets (sized by speed, then kept current from the products). */
static void print_threads(vkl_model *m, bool speeds, const char *when) {
    double rate[VKL_BENCH_THREADS_SHOWN], share[VKL_BENCH_THREADS_SHOWN];
    size_t n = 0;
    if (!m->be->worker_speeds) return;
    m->be->worker_speeds(m->dev, rate, share, VKL_BENCH_THREADS_SHOWN, &n);
    const size_t shown = n < VKL_BENCH_THREADS_SHOWN ? n : VKL_BENCH_THREADS_SHOWN;
    printf("threads: %zu;", n);
    if (speeds) {
        printf(" int8 dot at open (4-bit, 1 row, in L1), GOP/s:");
        for (size_t w = 0; w < shown; w++) printf(" %.1f", rate[w] / 1e9);
        printf(";");
    }
    printf(" shares %s:", when);
    for (size_t w = 0; w < shown; w++) printf(" %.3f", share[w]);
    printf("%s\n", shown < n ? " ..." : "");
}

static vkl_status run(vkl_context *ctx, const vkl_bench_model_options *o, vkl_model *m, vkl_bench_report *r) {
    vkl_status st = VKL_OK;
    if (o->prefill) st = vkl_bench_prefill(ctx, m, o->prefill, r);
    if (!st && o->decode) st = vkl_bench_decode(ctx, m, o->tokens, o->window, r);
    if (st || !o->profile) return st;
    if (!r->timed) {
        printf("profile: " VKL_BENCH_NO_TIMES "; the %s backend reports none\n", r->backend);
        return VKL_OK;
    }
    if (o->prefill) vkl_bench_profile_print(&r->prefill_profile, r->copy_bw);
    if (o->decode) vkl_bench_profile_print(&r->decode_profile, r->copy_bw);
    return VKL_OK;
}

static vkl_status outputs(vkl_context *ctx, const vkl_bench_model_options *o, const vkl_bench_report *r) {
    vkl_status st = o->json ? vkl_bench_json_write(ctx, o->json, r) : VKL_OK;
    if (!st && o->json) printf("wrote %s\n", o->json);
    if (st || !o->svg) return st;
    if (!r->timed) {
        printf("no roofline drawn to %s: " VKL_BENCH_NO_TIMES "\n", o->svg);
        return VKL_OK;
    }
    st = vkl_bench_svg_write(ctx, o->svg, r);
    if (!st) printf("wrote %s\n", o->svg);
    return st;
}

int vkl_bench_model(vkl_context *ctx, const vkl_bench_model_options *o) {
    vkl_model_options mo;
    vkl_model_options_init(&mo);
    mo.backend = o->backend;
    mo.no_verify = o->no_verify;
    mo.threads = o->threads;
    vkl_model *m = NULL;
    vkl_bench_report r;
    memset(&r, 0, sizeof(r));
    double t0 = vkl_bench_now();
    vkl_status st = o->profile ? vkl_env_model_load_profiled(ctx, o->path, &mo, &m)
                               : vkl_env_model_load(ctx, o->path, &mo, &m);
    r.load_seconds = vkl_bench_now() - t0;
    if (!st) {
        r.model = o->path;
        r.backend = vkl_model_backend_name(m);
        r.device = m->caps.device_name;
        r.verified = !o->no_verify;
        r.weight_bytes = step_weight_bytes(m->g);
        r.profile = o->profile;
        r.timed = o->profile && m->be->node_times && (m->caps.features & VKL_FEATURE_TIMESTAMPS);
        limits(m, o->threads, &r);
        printf("model %s on %s: %zu weight bytes a step (of %zu: one row of an embedding); %s %.2f GB/s\n", o->path,
               r.backend, r.weight_bytes, vkl_model_weight_bytes(m),
               r.device_bw ? "device copy bandwidth" : "host read bandwidth", r.copy_bw / 1e9);
        printf("load: %.3f s (%s)\n", r.load_seconds,
               o->no_verify ? "weights not verified: --no-verify" : "weights verified");
        if (r.compute_peak > 0)
            printf("compute peak: %.1f GOP/s (%s; registers only, the whole device)\n", r.compute_peak / 1e9,
                   r.compute_peak_kind);
        print_threads(m, true, "at open");
        if (r.timed)
            printf("profile: timestamps on: %s\n", r.device_bw ? "every step below has a barrier after each dispatch"
                                                                : "the host clock read around each op of every step");
        st = run(ctx, o, m, &r);
        if (!st) print_threads(m, false, "after the runs");
    }
    if (!st) st = outputs(ctx, o, &r);
    if (st) vkl_cli_fail(PROG, ctx, st);
    vkl_bench_profile_free(&r.prefill_profile);
    vkl_bench_profile_free(&r.decode_profile);
    free(r.windows);
    vkl_model_free(m);
    return st ? VKL_EXIT_FAILURE : 0;
}
