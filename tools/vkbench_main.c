/* vkbench: measures a device. --probe prints what each backend reports;
 * --decode MODEL generates tokens and prints the decode rate beside its
 * physical limit (bytes a step must read over measured copy bandwidth);
 * --prefill N MODEL times a prompt of N tokens; --profile adds where the
 * time of a step goes, per op (bench_model.c); --quant times E0M4 / int4 /
 * int8 QuantMatMul on the paper's Table 1 shapes on every backend and
 * device (bench_quant.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic_file.h"
#include "backend_env.h"
#include "backend.h"
#include "bench_model.h"
#include "bench_quant.h"
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
    /* The kill switches (docs/vulkan.md, docs/cpu.md) mapped onto the options above. */
    static const char *const switches[] = {"VKL_VK_DISABLE", "VKL_VK_NO_SUBGROUP_OPS", "VKL_VK_NO_F64",
                                           "VKL_CPU_DISABLE", "VKL_CPU_SLOW_WORKER"};
    for (size_t i = 0; i < sizeof(switches) / sizeof(switches[0]); i++)
        if (getenv(switches[i])) printf("%s=%s\n", switches[i], getenv(switches[i]));
    return 0;
}

#define TOKENS_MAX 1048576
#define REPS_MAX 1000000
#define ROTATE_MB_MAX (1u << 20)
#define GEMM_ROWS_MAX 65536

static int usage(FILE *f) {
    fprintf(f,
            "usage: vkbench --probe\n"
            "       vkbench --decode MODEL.vkm [--tokens N] [--window W] [--prefill N] [--backend NAME] [--threads N]\n"
            "               [--no-verify]\n"
            "               [--profile [--svg FILE]] [--json FILE]\n"
            "       vkbench --prefill N MODEL.vkm [--backend NAME] [--no-verify] [--profile [--svg FILE]] [--json FILE]\n"
            "       vkbench --quant [--backend NAME] [--reps N] [--rotate-mb MB] [--gemm-rows M] [--math LIST]\n"
            "       vkbench --version\n"
            "  --probe          what each backend reports\n"
            "  --decode MODEL   greedy decode; the step time beside the memory-bound limit\n"
            "  --tokens N       tokens to decode, 2 to %d (default 2000)\n"
            "  --window W       print one line per W tokens, 1 to %d (default 250)\n"
            "  --prefill N      time a prompt of N random tokens, 1 to %d: tok/s and FLOP/s\n"
            "  --profile        per-op tables of a decode step (and the prefill): time, bytes, FLOPs,\n"
            "                   share of the copy bandwidth (needs timestamps: vulkan, cpu)\n"
            "  --json FILE      the figures as JSON\n"
            "  --svg FILE       a roofline of the profiled ops (with --profile)\n"
            "  --no-verify      load without checking the weights against their checksum\n"
            "  --threads N      host backends (cpu): threads, the caller included, 1 to 1024 (default: one per\n"
            "                   online CPU); VKL_CPU_DISABLE=avx2,avx512vnni,avxvnni,amx,dotprod,\n"
            "                   i8mm turns instruction sets off, VKL_CPU_DISABLE=balance keeps the\n"
            "                   threads' shares equal (else sized by speed), VKL_CPU_SLOW_WORKER=I:F\n"
            "                   makes thread I F times slower (an emulated LITTLE core)\n"
            "  --quant          E0M4 / int4 / int8 QuantMatMul on the paper's Table 1 shapes\n"
            "  --reps N         timed executes per case, 1 to %d (default 20)\n"
            "  --rotate-mb MB   weight copies per case total at least MB MiB, 0 to %u (default 256)\n"
            "  --gemm-rows M    rows of A of the prefill GEMM figures, 0 (none) to %d (default 512)\n"
            "  --math LIST      the matvec maths --quant times, of f32,f16,dot,dot1 (default all the device has;\n"
            "                   f16 holds the cooperative-matrix GEMM)\n"
            "  --backend NAME   one backend (default: every compiled-in one for --quant, the first\n"
            "                   that works for --decode)\n",
            TOKENS_MAX, TOKENS_MAX, TOKENS_MAX, REPS_MAX, ROTATE_MB_MAX, GEMM_ROWS_MAX);
    return f == stdout ? 0 : VKL_EXIT_USAGE;
}

int main(int argc, char **argv) {
    const char *model = NULL, *backend = NULL, *positional = NULL, *json = NULL, *svg = NULL, *maths = NULL;
    size_t tokens = 2000, window = 250, rotate_mb = 256, prefill = 0, threads = 0, gemm_rows = 512;
    int32_t reps = 20;
    int do_probe = 0, do_quant = 0, no_verify = 0, profile = 0;
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
        if (!strcmp(a, "--profile")) {
            profile = 1;
            continue;
        }
        if (a[0] != '-' && !positional) { /* --prefill N's model */
            positional = a;
            continue;
        }
        if (strcmp(a, "--reps") && strcmp(a, "--rotate-mb") && strcmp(a, "--decode") && strcmp(a, "--tokens") &&
            strcmp(a, "--window") && strcmp(a, "--backend") && strcmp(a, "--prefill") && strcmp(a, "--json") &&
            strcmp(a, "--svg") && strcmp(a, "--threads") && strcmp(a, "--gemm-rows") && strcmp(a, "--math"))
            return vkl_cli_usage_error(PROG, "unexpected argument '%s'", a);
        if (!(v = vkl_cli_value(PROG, argc, argv, &i))) return VKL_EXIT_USAGE;
        if (!strcmp(a, "--reps")) rc = vkl_cli_i32(PROG, a, v, 1, REPS_MAX, &reps);
        else if (!strcmp(a, "--rotate-mb")) rc = vkl_cli_size(PROG, a, v, 0, ROTATE_MB_MAX, &rotate_mb);
        else if (!strcmp(a, "--decode")) model = v;
        else if (!strcmp(a, "--tokens")) rc = vkl_cli_size(PROG, a, v, 2, TOKENS_MAX, &tokens);
        else if (!strcmp(a, "--window")) rc = vkl_cli_size(PROG, a, v, 1, TOKENS_MAX, &window);
        else if (!strcmp(a, "--prefill")) rc = vkl_cli_size(PROG, a, v, 1, TOKENS_MAX, &prefill);
        else if (!strcmp(a, "--threads")) rc = vkl_cli_size(PROG, a, v, 1, 1024, &threads);
        else if (!strcmp(a, "--gemm-rows")) rc = vkl_cli_size(PROG, a, v, 0, GEMM_ROWS_MAX, &gemm_rows);
        else if (!strcmp(a, "--math")) maths = v;
        else if (!strcmp(a, "--json")) json = v;
        else if (!strcmp(a, "--svg")) svg = v;
        else backend = v;
        if (rc) return rc;
    }
    if (positional && (!prefill || model)) return vkl_cli_usage_error(PROG, "unexpected argument '%s'", positional);
    if (prefill && !model && !positional) return vkl_cli_usage_error(PROG, "--prefill N needs a model: --prefill N MODEL.vkm");
    const bool decode = model != NULL;
    if (!model) model = positional;
    if (!model && (profile || json || svg))
        return vkl_cli_usage_error(PROG, "--profile, --json and --svg need --decode MODEL.vkm or --prefill N MODEL.vkm");
    if (do_probe + do_quant + (model != NULL) != 1)
        return vkl_cli_usage_error(PROG, "give exactly one of --probe, --decode MODEL.vkm, --prefill N MODEL.vkm and "
                                         "--quant");
    if (svg && !profile) return vkl_cli_usage_error(PROG, "--svg draws the profile: add --profile");
    if (maths && !do_quant) return vkl_cli_usage_error(PROG, "--math goes with --quant");
    unsigned math_mask = 0;
    if (maths && vkl_bench_quant_maths(maths, &math_mask))
        return vkl_cli_usage_error(PROG, "--math %s: want a comma-separated list of f32, f16, dot, dot1", maths);
    vkl_context *ctx;
    if (vkl_context_create(NULL, &ctx)) {
        fprintf(stderr, PROG ": cannot create a context (out of memory)\n");
        return VKL_EXIT_FAILURE;
    }
    /* an interrupted write (import -o, a pipeline cache) leaves no temporary file */
    vkl_tool_cleanup_on_signal(ctx);
    /* before any work: a run of minutes must not end in an unwritable path */
    const char *outs[2] = {json, svg}, *opts[2] = {"--json", "--svg"};
    for (int i = 0; i < 2; i++)
        if (outs[i] && vkl_output_path_check(ctx, outs[i])) {
            int rc = vkl_cli_usage_error(PROG, "%s: %s", opts[i], vkl_context_error(ctx));
            vkl_context_destroy(ctx);
            return rc;
        }
    vkl_bench_quant_options qo = {backend, reps, rotate_mb << 20, gemm_rows, math_mask};
    vkl_bench_model_options mo = {model, backend, decode, tokens, window, prefill, no_verify, profile, json, svg,
                                  (unsigned)threads};
    int rc = do_probe ? probe(ctx) : do_quant ? vkl_bench_quant(ctx, &qo) : vkl_bench_model(ctx, &mo);
    vkl_context_destroy(ctx);
    return rc;
}
