/* vkbench: measures a device. --probe prints what each backend reports;
 * --decode MODEL generates tokens and prints the decode rate beside its
 * physical limit (bytes a step must read over measured copy bandwidth);
 * --quant times E0M4 / int4 / int8 QuantMatMul on the paper's Table 1
 * shapes on every backend and device (bench_quant.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "bench_quant.h"
#include "bench_util.h"
#include "context.h"
#include "vkllm.h"

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

/* Greedy decode of `tokens` tokens after a BOS-like token 1; prints the step
 * time per window of `window` tokens and the bytes each step reads: all
 * weights once plus the KV rows attended (the padded length). */
static int decode(vkl_context *ctx, const char *path, const char *backend, size_t tokens, size_t window) {
    vkl_model_options mo;
    vkl_model_options_init(&mo);
    mo.backend = backend;
    vkl_session_options so;
    vkl_session_options_init(&so);
    so.max_context = tokens + 1;
    vkl_model *m = NULL;
    vkl_session *s = NULL;
    vkl_status st = vkl_model_load(ctx, path, &mo, &m);
    if (!st) st = vkl_session_create(m, &so, &s);
    int32_t tok = 1;
    if (!st) st = vkl_session_append(s, &tok, 1);
    if (st) {
        fprintf(stderr, "vkbench: %s\n", vkl_context_error(ctx));
        vkl_session_free(s);
        vkl_model_free(m);
        return 1;
    }
    vkl_session_stats stats;
    vkl_session_get_stats(s, &stats);
    double copy_bw = vkl_bench_host_copy_bandwidth();
    size_t weights = vkl_model_weight_bytes(m), kv_row = stats.kv_bytes / so.max_context;
    printf("model %s on %s: %zu weight bytes, %zu KV bytes per token; host copy bandwidth %.2f GB/s\n", path,
           vkl_model_backend_name(m), weights, kv_row, copy_bw / 1e9);
    printf("%10s %12s %14s %14s %10s\n", "tokens", "ms/step", "bytes/step", "GB/s", "of limit");
    double t_window = 0, bytes_window = 0;
    for (size_t i = 1; i < tokens && !st; i++) {
        double t0 = vkl_bench_now();
        st = vkl_session_sample(s, &tok);
        if (!st) st = vkl_session_append(s, &tok, 1);
        double dt = vkl_bench_now() - t0;
        size_t len = vkl_session_length(s), padded = (len + so.pad_multiple - 1) / so.pad_multiple * so.pad_multiple;
        if (padded > so.max_context) padded = so.max_context;
        t_window += dt;
        bytes_window += (double)(weights + kv_row * padded);
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
        printf("decode: %llu tokens, %.1f tok/s; %llu prepares, %llu replays\n", (unsigned long long)stats.decode_tokens,
               (double)stats.decode_tokens / stats.decode_seconds, (unsigned long long)stats.prepares,
               (unsigned long long)stats.replays);
        printf("KV cache traffic (counted by the backend): %.1f MB written in place, %.1f MB read by attention, "
               "%llu bytes copied\n",
               (double)stats.kv_bytes_written / 1e6, (double)stats.kv_bytes_read / 1e6,
               (unsigned long long)stats.kv_bytes_copied);
    } else
        fprintf(stderr, "vkbench: %s\n", vkl_context_error(ctx));
    vkl_session_free(s);
    vkl_model_free(m);
    return st ? 1 : 0;
}

static int usage(void) {
    fprintf(stderr, "usage: vkbench --probe\n"
                    "       vkbench --decode MODEL.vkm [--tokens N] [--window W] [--backend NAME]\n"
                    "       vkbench --quant [--backend NAME] [--reps N] [--rotate-mb MB]\n"
                    "       vkbench --version\n");
    return 2;
}

int main(int argc, char **argv) {
    const char *model = NULL, *backend = NULL;
    size_t tokens = 2000, window = 250, rotate_mb = 256;
    int do_probe = 0, do_quant = 0, reps = 20;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--version")) return printf("vkbench %s\n", vkl_version_string()) < 0;
        else if (!strcmp(argv[i], "--probe")) do_probe = 1;
        else if (!strcmp(argv[i], "--quant")) do_quant = 1;
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rotate-mb") && i + 1 < argc) rotate_mb = strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--decode") && i + 1 < argc) model = argv[++i];
        else if (!strcmp(argv[i], "--tokens") && i + 1 < argc) tokens = strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--window") && i + 1 < argc) window = strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--backend") && i + 1 < argc) backend = argv[++i];
        else return usage();
    }
    if ((!do_probe && !do_quant && !model) || tokens < 2 || window < 1 || reps < 1 || rotate_mb > (1u << 20))
        return usage();
    vkl_context *ctx;
    if (vkl_context_create(NULL, &ctx)) return 1;
    vkl_bench_quant_options qo = {backend, reps, rotate_mb << 20};
    int rc = do_probe ? probe(ctx) : do_quant ? vkl_bench_quant(ctx, &qo) : decode(ctx, model, backend, tokens, window);
    vkl_context_destroy(ctx);
    return rc;
}
