/* `vkllm import MODEL.onnx -o MODEL.vkm`: read the ONNX export, run the
 * optimization pipeline, write the model file atomically, print a summary. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "commands.h"
#include "report.h"
#include "onnx_import.h"
#include "ops.h"
#include "passes/pipeline.h"
#include "vkm.h"

static const struct {
    const char *flag;
    uint32_t bit;
} pass_flags[] = {
    {"--no-shape-ops", VKL_PASS_SHAPE_OPS},     {"--no-cse", VKL_PASS_CSE},
    {"--no-fold", VKL_PASS_FOLD},               {"--no-fuse-rmsnorm", VKL_PASS_FUSE_RMSNORM},
    {"--no-fuse-layernorm", VKL_PASS_FUSE_LAYERNORM}, {"--no-fuse-gelu", VKL_PASS_FUSE_GELU},
    {"--no-fuse-silu-mul", VKL_PASS_FUSE_SILU_MUL}, {"--no-fuse-rope", VKL_PASS_FUSE_ROPE},
    {"--no-fuse-attention", VKL_PASS_FUSE_ATTENTION}, {"--no-kv-inplace", VKL_PASS_KV_INPLACE},
};

static int usage(void) {
    fprintf(stderr, "usage: vkllm import MODEL.onnx -o OUT.vkm [--tokenizer DIR] [--no-fuse] [--no-<pass>]\n"
                    "passes:");
    for (size_t i = 0; i < sizeof(pass_flags) / sizeof(pass_flags[0]); i++) fprintf(stderr, " %s", pass_flags[i].flag);
    fprintf(stderr, "\n");
    return 2;
}

bool vkl_tool_parse_passes(const char *arg, uint32_t *passes) {
    if (!strcmp(arg, "--no-fuse")) {
        *passes &= ~(VKL_PASS_FUSE_RMSNORM | VKL_PASS_FUSE_LAYERNORM | VKL_PASS_FUSE_GELU | VKL_PASS_FUSE_SILU_MUL |
                     VKL_PASS_FUSE_ROPE | VKL_PASS_FUSE_ATTENTION | VKL_PASS_KV_INPLACE);
        return true;
    }
    for (size_t i = 0; i < sizeof(pass_flags) / sizeof(pass_flags[0]); i++) {
        if (strcmp(arg, pass_flags[i].flag)) continue;
        *passes &= ~pass_flags[i].bit;
        return true;
    }
    return false;
}

vkl_status vkl_tool_import(vkl_context *ctx, const char *path, uint32_t passes, bool quiet, vkl_onnx_model **out) {
    vkl_status st = vkl_onnx_open(ctx, path, out);
    if (st) return st;
    vkl_graph *g = vkl_onnx_graph(*out);
    vkl_pipeline_report r;
    st = vkl_pipeline_run(g, passes, &r);
    if (st) {
        vkl_onnx_close(*out);
        *out = NULL;
        return st;
    }
    if (quiet) return VKL_OK;
    const vkl_onnx_stats *s = vkl_onnx_stats_get(*out);
    printf("read %s: opset %lld, %u nodes, %u initializers, %u constants\n", path, (long long)s->opset, s->nodes,
           s->initializers, s->constants);
    printf("nodes: %u -> %u; shape ops: %u -> %u\n", r.nodes_before, r.nodes_after, r.shape_ops_before,
           r.shape_ops_after);
    printf("passes:");
    for (uint32_t i = 0; i < r.n_steps; i++) printf(" %s=%u", r.steps[i].name, r.steps[i].fired);
    printf("\n");
    return VKL_OK;
}

/* Reads a whole small file (tokenizer JSON) into memory. */
static void *slurp(vkl_context *ctx, const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    long n = -1;
    if (!fseek(f, 0, SEEK_END)) n = ftell(f);
    void *buf = n >= 0 ? vkl_malloc(ctx, (size_t)n + 1) : NULL;
    if (buf && (fseek(f, 0, SEEK_SET) || fread(buf, 1, (size_t)n, f) != (size_t)n)) {
        vkl_free(ctx, buf);
        buf = NULL;
    }
    fclose(f);
    *size = n >= 0 ? (size_t)n : 0;
    return buf;
}

int vkl_cmd_import(vkl_context *ctx, int argc, char **argv) {
    const char *in = NULL, *out = NULL, *tok_dir = NULL;
    uint32_t passes = VKL_PASS_ALL;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc) out = argv[++i];
        else if (!strcmp(argv[i], "--tokenizer") && i + 1 < argc) tok_dir = argv[++i];
        else if (vkl_tool_parse_passes(argv[i], &passes)) continue;
        else if (argv[i][0] != '-' && !in) in = argv[i];
        else return usage();
    }
    if (!in || !out) return usage();
    vkl_onnx_model *m;
    if (vkl_tool_import(ctx, in, passes, false, &m)) {
        fprintf(stderr, "vkllm import: %s\n", vkl_context_error(ctx));
        return 1;
    }
    vkl_vkm_meta meta[4];
    size_t n_meta = 0;
    void *blobs[2] = {NULL, NULL};
    char options[64];
    snprintf(options, sizeof(options), "passes=0x%x", passes);
    meta[n_meta++] = (vkl_vkm_meta){VKL_VKM_KEY_IMPORT_OPTIONS, options, strlen(options)};
    static const char *const tok_files[2] = {"tokenizer.json", "tokenizer_config.json"};
    int rc = 0;
    for (int k = 0; tok_dir && k < 2; k++) {
        char path[4096];
        size_t size;
        snprintf(path, sizeof(path), "%s/%s", tok_dir, tok_files[k]);
        blobs[k] = slurp(ctx, path, &size);
        if (!blobs[k] && k == 0) {
            fprintf(stderr, "vkllm import: cannot read %s\n", path);
            rc = 1;
            break;
        }
        if (blobs[k]) meta[n_meta++] = (vkl_vkm_meta){tok_files[k], blobs[k], size};
    }
    if (!rc && vkl_vkm_write(ctx, vkl_onnx_graph(m), meta, n_meta, out)) {
        fprintf(stderr, "vkllm import: %s\n", vkl_context_error(ctx));
        rc = 1;
    }
    if (!rc) {
        const vkl_graph *g = vkl_onnx_graph(m);
        printf("symbols:");
        for (size_t i = 0; i < vkl_symtab_symbol_count(g->syms); i++) printf(" %s", vkl_symtab_symbol_name(g->syms, i));
        printf("\n");
        vkl_tool_print_ops(g);
        vkl_tool_print_weights(g);
        printf("wrote %s\n", out);
        /* Peak RSS matters: imports must fit beside the model on small machines. */
        struct rusage ru;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        getrusage(RUSAGE_SELF, &ru);
        printf("import took %.2f s, peak RSS %.1f MiB\n",
               (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec), (double)ru.ru_maxrss / 1024.0);
    }
    for (int k = 0; k < 2; k++) vkl_free(ctx, blobs[k]);
    vkl_onnx_close(m);
    return rc;
}
