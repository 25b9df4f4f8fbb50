/* vkbench --prefill N (bench_prefill.h). Random token ids from a fixed seed
 * (a model without a tokenizer runs too, and every run is the same work);
 * one session whose context and prefill chunk are N, so each run is one
 * step from an empty cache; one warm-up run (it may prepare the executable),
 * then RUNS timed ones, reset between; the median is reported. FLOPs and
 * bytes are counted at the step's bound shape (bench_profile.c), which is N
 * rounded up to the session's pad multiple where that fits the chunk: tok/s
 * counts the N real tokens. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_prefill.h"
#include "bench_util.h"
#include "profile.h"

#define RUNS 5

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

vkl_status vkl_bench_prefill(vkl_context *ctx, vkl_model *m, size_t n, vkl_bench_report *r) {
    vkl_session_options so;
    vkl_session_options_init(&so);
    so.max_context = so.prefill_chunk = n;
    vkl_bench_profile *p = &r->prefill_profile;
    int32_t *tokens = malloc(n * sizeof(int32_t));
    vkl_session *s = NULL;
    vkl_status st = tokens ? VKL_OK : vkl_fail(ctx, VKL_ERR_OUT_OF_MEMORY, "prefill: out of host memory");
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    const size_t vocab = vkl_model_vocab_size(m);
    for (size_t i = 0; !st && i < n; i++) {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        tokens[i] = (int32_t)(seed % (vocab ? vocab : 1));
    }
    if (!st) st = vkl_session_create(m, &so, &s);
    double ms[RUNS];
    for (int run = -1; !st && run < RUNS; run++) {
        vkl_session_reset(s);
        double t0 = vkl_bench_now();
        st = vkl_session_append(s, tokens, n);
        double dt = vkl_bench_now() - t0;
        /* the graph the prompt runs: the model's one-row graph where it has one */
        if (!st && run < 0) st = vkl_bench_profile_init(ctx, vkl_session_last_graph(s), "prefill", r->timed, p);
        if (st || run < 0) continue;
        ms[run] = dt * 1e3;
        st = vkl_bench_profile_add(p, ctx, s, dt);
    }
    vkl_session_free(s);
    free(tokens);
    if (st) return st;
    qsort(ms, RUNS, sizeof(double), cmp_double);
    r->prefill_tokens = n;
    r->prefill_runs = RUNS;
    r->prefill_ms = ms[RUNS / 2];
    r->prefill_tok_s = (double)n / (r->prefill_ms * 1e-3);
    vkl_bench_profile_totals(p, &r->prefill_bytes, &r->prefill_flops);
    const double gflops = r->prefill_flops / r->prefill_ms * 1e-6, gbs = r->prefill_bytes / r->prefill_ms * 1e-6;
    char peak[96] = "compute peak: not measured";
    if (r->compute_peak > 0)
        snprintf(peak, sizeof(peak), "%.1f%% of the %.1f GOP/s compute peak", 100.0 * gflops * 1e9 / r->compute_peak,
                 r->compute_peak / 1e9);
    printf("prefill: %zu tokens, median of %d runs after a warm-up: %.3f ms, %.1f tok/s; %.3f GFLOP per prefill: "
           "%.2f GFLOP/s (%s); %.1f MB moved: %.2f GB/s, %.1f%% of copy bandwidth\n",
           n, RUNS, r->prefill_ms, r->prefill_tok_s, r->prefill_flops / 1e9, gflops, peak, r->prefill_bytes / 1e6, gbs,
           r->copy_bw > 0 ? 100.0 * gbs * 1e9 / r->copy_bw : 0);
    return VKL_OK;
}
