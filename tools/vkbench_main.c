/* vkbench: measures a device. --probe prints what each backend reports;
 * --decode MODEL generates tokens and prints the decode rate beside its
 * physical limit (bytes a step must read over measured copy bandwidth);
 * --quant times E0M4 / int4 / int8 QuantMatMul on the paper's Table 1
 * shapes on every backend and device (bench_quant.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_env.h"
#include "backend.h"
#include "bench_quant.h"
#include "bench_util.h"
#include "model.h" /* the model's backend: its copy bandwidth */
#include "cleanup.h"
#include "cli.h"
#include "context.h"
#include "vkllm.h"

#define PROG "vkbench"

static void print_features(uint32_t f) {
    static const char *const names[] = {"fp16", "int8-dot", "coopmat", "fusion", "priority", "timestamps"};
    for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (f & (1u << i)) printf(" %s", names[i]);
    printf("\n");
}

static const char *class_name(vkl_device_class c) {
    return c == VKL_DEVICE_GPU ? "hardware GPU" : c == VKL_DEVICE_EMULATED ? "GPU API on the CPU" : "CPU";
}

/* Each backend opened as a model would open it (the VKL_VK_* environment
 * mapped onto its options), so what it reports is what it got: the features
 * left after the kill switches, the queue priority the driver granted. */
static int probe(vkl_context *ctx) {
    vkl_env_options env;
    if (vkl_env_options_read(ctx, &env)) {
        fprintf(stderr, "%s: %s\n", PROG, vkl_context_error(ctx));
        return VKL_EXIT_USAGE;
    }
    for (size_t i = 0; i < vkl_backend_count(); i++) {
        const vkl_backend_vtable *be = vkl_backend_at(i);
        vkl_backend_device *dev = NULL;
        if (be->open(ctx, &env.backend, &dev)) {
            printf("%s: unavailable: %s\n", be->name, vkl_context_error(ctx));
            continue;
        }
        vkl_backend_caps caps;
        be->caps(dev, &caps);
        be->close(dev);
        printf("%s: %s (%s), %s\n  features:", be->name, caps.device_name, caps.driver,
               class_name(caps.device_class));
        print_features(caps.features);
        if (caps.queue_priority[0]) printf("  queue priority: %s\n", caps.queue_priority);
        if (caps.features_disabled) {
            printf("  turned off by the options and kill switches:");
            print_features(caps.features_disabled);
        }
        if (caps.features_quirked) {
            printf("  turned off by driver quirks:");
            print_features(caps.features_quirked);
        }
        printf("  driver quirks: %s\n", caps.quirks[0] ? caps.quirks : "none");
    }
    /* The Vulkan kill switches (docs/vulkan.md) mapped onto the options above. */
    static const char *const switches[] = {"VKL_VK_DISABLE", "VKL_VK_NO_SUBGROUP_OPS", "VKL_VK_NO_F64"};
    for (size_t i = 0; i < sizeof(switches) / sizeof(switches[0]); i++)
        if (getenv(switches[i])) printf("%s=%s\n", switches[i], getenv(switches[i]));
    return 0;
}

/* Greedy decode of `tokens` tokens after a BOS-like token 1; prints the step
 * time per window of `window` tokens and the bytes each step reads: all
 * weights once plus the KV rows attended (the padded length). */
static int decode(vkl_context *ctx, const char *path, const char *backend, size_t tokens, size_t window,
                  int no_verify) {
    vkl_model_options mo;
    vkl_model_options_init(&mo);
    mo.backend = backend;
    mo.no_verify = no_verify;
    vkl_session_options so;
    vkl_session_options_init(&so);
    so.max_context = tokens + 1;
    vkl_model *m = NULL;
    vkl_session *s = NULL;
    double t_load = vkl_bench_now();
    vkl_status st = vkl_env_model_load(ctx, path, &mo, &m);
    t_load = vkl_bench_now() - t_load;
    if (!st) st = vkl_session_create(m, &so, &s);
    int32_t tok = 1;
    if (!st) st = vkl_session_append(s, &tok, 1);
    if (st) {
        vkl_cli_fail(PROG, ctx, st);
        vkl_session_free(s);
        vkl_model_free(m);
        return 1;
    }
    vkl_session_stats stats;
    vkl_session_get_stats(s, &stats);
    /* the limit: the device's own copy bandwidth where the backend measures
     * it (a GPU's memory), else the host's (ref reads host memory) */
    double copy_bw = 0;
    const bool device_bw = m->be->copy_bandwidth && !m->be->copy_bandwidth(m->dev, m->ctx, (size_t)256 << 20, &copy_bw);
    if (!device_bw) copy_bw = vkl_bench_host_copy_bandwidth();
    size_t weights = vkl_model_weight_bytes(m), kv_row = stats.kv_bytes / so.max_context;
    printf("model %s on %s: %zu weight bytes, %zu KV bytes per token; %s copy bandwidth %.2f GB/s\n", path,
           vkl_model_backend_name(m), weights, kv_row, device_bw ? "device" : "host", copy_bw / 1e9);
    printf("load: %.3f s (%s)\n", t_load, no_verify ? "weights not verified: --no-verify" : "weights verified");
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

static int usage(FILE *f) {
    fprintf(f,
            "usage: vkbench --probe\n"
            "       vkbench --decode MODEL.vkm [--tokens N] [--window W] [--backend NAME] [--no-verify]\n"
            "       vkbench --quant [--backend NAME] [--reps N] [--rotate-mb MB]\n"
            "       vkbench --version\n"
            "  --probe          what each backend reports\n"
            "  --decode MODEL   greedy decode; the step time beside the memory-bound limit\n"
            "  --tokens N       tokens to decode, 2 to %d (default 2000)\n"
            "  --window W       print one line per W tokens, 1 to %d (default 250)\n"
            "  --no-verify      load without checking the weights against their checksum\n"
            "  --quant          E0M4 / int4 / int8 QuantMatMul on the paper's Table 1 shapes\n"
            "  --reps N         timed executes per case, 1 to %d (default 20)\n"
            "  --rotate-mb MB   weight copies per case total at least MB MiB, 0 to %u (default 256)\n"
            "  --backend NAME   one backend (default: every compiled-in one for --quant, the first\n"
            "                   that works for --decode)\n",
            TOKENS_MAX, TOKENS_MAX, REPS_MAX, ROTATE_MB_MAX);
    return f == stdout ? 0 : VKL_EXIT_USAGE;
}

int main(int argc, char **argv) {
    const char *model = NULL, *backend = NULL;
    size_t tokens = 2000, window = 250, rotate_mb = 256;
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
            strcmp(a, "--window") && strcmp(a, "--backend"))
            return vkl_cli_usage_error(PROG, "unexpected argument '%s'", a);
        if (!(v = vkl_cli_value(PROG, argc, argv, &i))) return VKL_EXIT_USAGE;
        if (!strcmp(a, "--reps")) rc = vkl_cli_i32(PROG, a, v, 1, REPS_MAX, &reps);
        else if (!strcmp(a, "--rotate-mb")) rc = vkl_cli_size(PROG, a, v, 0, ROTATE_MB_MAX, &rotate_mb);
        else if (!strcmp(a, "--decode")) model = v;
        else if (!strcmp(a, "--tokens")) rc = vkl_cli_size(PROG, a, v, 2, TOKENS_MAX, &tokens);
        else if (!strcmp(a, "--window")) rc = vkl_cli_size(PROG, a, v, 1, TOKENS_MAX, &window);
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
    int rc = do_probe ? probe(ctx) : do_quant ? vkl_bench_quant(ctx, &qo) : decode(ctx, model, backend, tokens, window, no_verify);
    vkl_context_destroy(ctx);
    return rc;
}
