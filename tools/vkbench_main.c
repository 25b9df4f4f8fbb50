/* vkbench: measures a device. --probe prints what each backend reports;
 * --decode MODEL generates tokens and prints the decode rate beside its
 * physical limit (bytes a step must read over the measured bandwidth: the
 * device's copy bandwidth where the backend measures one, else the host's
 * read bandwidth on the backend's threads);
 * --quant times E0M4 / int4 / int8 QuantMatMul on the paper's Table 1
 * shapes on every backend and device (bench_quant.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "bench_quant.h"
#include "bench_util.h"
#include "model.h" /* the model's backend: its copy bandwidth */
#include "ops.h"
#include "cleanup.h"
#include "cli.h"
#include "context.h"
#include "cpu_env.h"
#include "vkllm.h"

#define PROG "vkbench"

static void print_features(uint32_t f) {
    static const char *const names[] = {"fp16", "int8-dot", "coopmat", "fusion", "priority", "timestamps"};
    for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (f & (1u << i)) printf(" %s", names[i]);
    printf("\n");
}

static int probe(vkl_context *ctx) {
    for (size_t i = 0; i < vkl_backend_count(); i++) {
        const vkl_backend_vtable *be = vkl_backend_at(i);
        vkl_backend_caps caps;
        if (be->probe(ctx, NULL, &caps)) {
            printf("%s: unavailable: %s\n", be->name, vkl_context_error(ctx));
            continue;
        }
        printf("%s: %s (%s)\n  features:", be->name, caps.device_name, caps.driver);
        print_features(caps.features);
    }
    return 0;
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

/* Greedy decode of `tokens` tokens after a prompt of `prompt` tokens (a
 * BOS-like 1, then ids 2, 3, ... within the vocab: the content does not
 * change the work);
 * prints the prompt's rate, the step time per window of `window` tokens and
 * the bytes each step reads: the weights (step_weight_bytes) plus the KV
 * rows attended (the padded length). */
static int decode(vkl_context *ctx, const char *path, const char *backend, size_t tokens, size_t window,
                  int no_verify, unsigned threads, size_t prompt) {
    vkl_model_options mo;
    vkl_model_options_init(&mo);
    mo.backend = backend;
    mo.no_verify = no_verify;
    mo.threads = threads;
    if (vkl_tool_cpu_disable_isa(PROG, &mo.disable_isa)) return VKL_EXIT_USAGE;
    vkl_session_options so;
    vkl_session_options_init(&so);
    so.max_context = tokens + prompt;
    vkl_model *m = NULL;
    vkl_session *s = NULL;
    double t_load = vkl_bench_now();
    vkl_status st = vkl_model_load(ctx, path, &mo, &m);
    t_load = vkl_bench_now() - t_load;
    if (!st) st = vkl_session_create(m, &so, &s);
    int32_t tok = 1, *ids = calloc(prompt, sizeof(int32_t));
    const size_t vocab = m ? vkl_model_vocab_size(m) : 0;
    for (size_t i = 0; ids && vocab > 1 && i < prompt; i++) ids[i] = (int32_t)(1 + i % (vocab - 1));
    if (!ids) st = vkl_fail(ctx, VKL_ERR_OUT_OF_MEMORY, "no memory for a %zu-token prompt", prompt);
    double t_prompt = vkl_bench_now();
    if (!st) st = vkl_session_append(s, ids, prompt);
    t_prompt = vkl_bench_now() - t_prompt;
    free(ids);
    if (st) {
        vkl_cli_fail(PROG, ctx, st);
        vkl_session_free(s);
        vkl_model_free(m);
        return 1;
    }
    vkl_session_stats stats;
    vkl_session_get_stats(s, &stats);
    /* the limit: the device's own copy bandwidth where the backend measures
     * it (a GPU's memory), else what the host's threads can read (ref and
     * cpu read host memory) */
    double copy_bw = 0;
    const bool device_bw = m->be->copy_bandwidth && !m->be->copy_bandwidth(m->dev, m->ctx, (size_t)256 << 20, &copy_bw);
    if (!device_bw) copy_bw = vkl_bench_host_read_bandwidth(threads);
    size_t weights = step_weight_bytes(m->g), kv_row = stats.kv_bytes / so.max_context;
    printf("model %s on %s (%s): %zu weight bytes a step (of %zu), %zu KV bytes per token; %s %.2f GB/s\n", path,
           vkl_model_backend_name(m), m->caps.device_name, weights, vkl_model_weight_bytes(m), kv_row,
           device_bw ? "device copy bandwidth" : "host read bandwidth", copy_bw / 1e9);
    printf("load: %.3f s (%s)\n", t_load, no_verify ? "weights not verified: --no-verify" : "weights verified");
    printf("prompt: %zu tokens in %.3f s, %.1f tok/s\n", prompt, t_prompt, (double)prompt / t_prompt);
    printf("%10s %12s %14s %14s %10s\n", "tokens", "ms/step", "bytes/step", "GB/s", "of limit");
    double t_window = 0, bytes_window = 0, bytes_all = 0;
    for (size_t i = 1; i < tokens && !st; i++) {
        double t0 = vkl_bench_now();
        st = vkl_session_sample(s, &tok);
        if (!st) st = vkl_session_append(s, &tok, 1);
        double dt = vkl_bench_now() - t0;
        size_t len = vkl_session_length(s), padded = (len + so.pad_multiple - 1) / so.pad_multiple * so.pad_multiple;
        if (padded > so.max_context) padded = so.max_context;
        t_window += dt;
        bytes_window += (double)(weights + kv_row * padded);
        bytes_all += (double)(weights + kv_row * padded);
        if (i % window == 0 || i + 1 == tokens) {
            size_t steps = i % window ? i % window : window;
            double gbs = bytes_window / t_window / 1e9;
            printf("%10zu %12.3f %14.0f %14.2f %9.1f%%\n", len, 1e3 * t_window / (double)steps,
                   bytes_window / (double)steps, gbs, 100.0 * gbs * 1e9 / copy_bw);
            t_window = bytes_window = 0;
        }
    }
    vkl_session_get_stats(s, &stats);
    if (!st) {
        const double limit = copy_bw * (double)(tokens - 1) / bytes_all;
        printf("decode: %llu tokens, %.1f tok/s (limit %.1f tok/s: %.0f bytes a step over %.2f GB/s); %llu prepares, "
               "%llu replays\n",
               (unsigned long long)stats.decode_tokens, (double)stats.decode_tokens / stats.decode_seconds, limit,
               bytes_all / (double)(tokens - 1), copy_bw / 1e9, (unsigned long long)stats.prepares,
               (unsigned long long)stats.replays);
        if (m->be->state_traffic)
            printf("KV cache traffic (counted by the backend): %.1f MB written in place, %.1f MB read by attention, "
                   "%llu bytes copied\n",
                   (double)stats.kv_bytes_written / 1e6, (double)stats.kv_bytes_read / 1e6,
                   (unsigned long long)stats.kv_bytes_copied);
        else
            printf("KV cache traffic: not counted by the %s backend (bytes/step above assume each attended row "
                   "read once)\n", m->be->name);
    } else {
        vkl_cli_fail(PROG, ctx, st);
    }
    vkl_session_free(s);
    vkl_model_free(m);
    return st ? 1 : 0;
}

#define TOKENS_MAX 1048576
#define REPS_MAX 1000000
#define ROTATE_MB_MAX (1u << 20)
#define THREADS_MAX 256

static int usage(FILE *f) {
    fprintf(f,
            "usage: vkbench --probe\n"
            "       vkbench --decode MODEL.vkm [--tokens N] [--prompt P] [--window W] [--backend NAME] [--threads N]\n"
            "                        [--no-verify]\n"
            "       vkbench --quant [--backend NAME] [--reps N] [--rotate-mb MB]\n"
            "       vkbench --version\n"
            "  --probe          what each backend reports\n"
            "  --decode MODEL   greedy decode; the step time beside the memory-bound limit\n"
            "  --tokens N       tokens to decode, 2 to %d (default 2000)\n"
            "  --prompt P       tokens of the prompt fed first (timed: the prefill rate), 1 to %d (default 1)\n"
            "  --window W       print one line per W tokens, 1 to %d (default 250)\n"
            "  --threads N      host backends (cpu): threads, 1 to %d (default: one per CPU);\n"
            "                   VKL_CPU_DISABLE=avx2 turns an instruction set off\n"
            "  --no-verify      load without checking the weights against their checksum\n"
            "  --quant          E0M4 / int4 / int8 QuantMatMul on the paper's Table 1 shapes\n"
            "  --reps N         timed executes per case, 1 to %d (default 20)\n"
            "  --rotate-mb MB   weight copies per case total at least MB MiB, 0 to %u (default 256)\n"
            "  --backend NAME   one backend (default: every compiled-in one for --quant, the first\n"
            "                   that works for --decode)\n",
            TOKENS_MAX, TOKENS_MAX, TOKENS_MAX, THREADS_MAX, REPS_MAX, ROTATE_MB_MAX);
    return f == stdout ? 0 : VKL_EXIT_USAGE;
}

int main(int argc, char **argv) {
    const char *model = NULL, *backend = NULL;
    size_t tokens = 2000, window = 250, rotate_mb = 256, threads = 0, prompt = 1;
    int32_t reps = 20;
    int do_probe = 0, do_quant = 0, no_verify = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        int rc = 0;
        if (vkl_cli_is_help(a)) return usage(stdout);
        if (!strcmp(a, "--version")) {
            if (argc > 2) return vkl_cli_usage_error(PROG, "--version takes no other arguments");
            return printf("vkbench %s\n", vkl_version_string()) < 0 ? VKL_EXIT_FAILURE : 0;
        }
        if (!strcmp(a, "--probe")) {
            do_probe = 1;
            continue;
        }
        if (!strcmp(a, "--quant")) {
            do_quant = 1;
            continue;
        }
        if (!strcmp(a, "--no-verify")) {
            no_verify = 1;
            continue;
        }
        if (strcmp(a, "--reps") && strcmp(a, "--rotate-mb") && strcmp(a, "--decode") && strcmp(a, "--tokens") &&
            strcmp(a, "--window") && strcmp(a, "--backend") && strcmp(a, "--threads") && strcmp(a, "--prompt"))
            return vkl_cli_usage_error(PROG, "unexpected argument '%s'", a);
        if (!(v = vkl_cli_value(PROG, argc, argv, &i))) return VKL_EXIT_USAGE;
        if (!strcmp(a, "--reps")) rc = vkl_cli_i32(PROG, a, v, 1, REPS_MAX, &reps);
        else if (!strcmp(a, "--rotate-mb")) rc = vkl_cli_size(PROG, a, v, 0, ROTATE_MB_MAX, &rotate_mb);
        else if (!strcmp(a, "--decode")) model = v;
        else if (!strcmp(a, "--tokens")) rc = vkl_cli_size(PROG, a, v, 2, TOKENS_MAX, &tokens);
        else if (!strcmp(a, "--window")) rc = vkl_cli_size(PROG, a, v, 1, TOKENS_MAX, &window);
        else if (!strcmp(a, "--threads")) rc = vkl_cli_size(PROG, a, v, 1, THREADS_MAX, &threads);
        else if (!strcmp(a, "--prompt")) rc = vkl_cli_size(PROG, a, v, 1, TOKENS_MAX, &prompt);
        else backend = v;
        if (rc) return rc;
    }
    if (do_probe + do_quant + (model != NULL) != 1)
        return vkl_cli_usage_error(PROG, "give exactly one of --probe, --decode MODEL.vkm and --quant");
    vkl_context *ctx;
    if (vkl_context_create(NULL, &ctx)) {
        fprintf(stderr, PROG ": cannot create a context (out of memory)\n");
        return VKL_EXIT_FAILURE;
    }
    /* an interrupted write (import -o, a pipeline cache) leaves no temporary file */
    vkl_tool_cleanup_on_signal(ctx);
    vkl_bench_quant_options qo = {backend, reps, rotate_mb << 20};
    int rc = do_probe ? probe(ctx) : do_quant ? vkl_bench_quant(ctx, &qo) : decode(ctx, model, backend, tokens, window, no_verify, (unsigned)threads, prompt);
    vkl_context_destroy(ctx);
    return rc;
}
