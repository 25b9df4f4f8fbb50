/* `vkllm import MODEL.onnx -o MODEL.vkm`: read the ONNX export, run the
 * optimization pipeline (quantizing per --weights/--group/--lm-head/--embed/--kv,
 * on --threads threads, with progress on stderr), write the model file
 * atomically, print a summary. */
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
#include "progress.h"
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
    {"--no-quantize", VKL_PASS_QUANTIZE},
};

static int usage(void) {
    fprintf(stderr, "usage: vkllm import MODEL.onnx -o OUT.vkm [--tokenizer DIR] [quantization]\n"
                    "                    [--threads N] [--quiet] [--no-fuse] [--no-<pass>]\n"
                    "  --threads N   threads converting weights (default: one per CPU; the output is the same)\n"
                    "  --quiet       no progress (shown on stderr after 2 s) and no summary\n"
                    "quantization (docs/quant.md; the recipe is stored in the .vkm as import.recipe):\n"
                    "  --weights e0m4|int4|int8|f16|f32  projection weights (default f32: unchanged)\n"
                    "  --group N                         elements per block along K, 32/64/128 (default 128)\n"
                    "  --lm-head int8|same               int8 per output channel, or like --weights (default same)\n"
                    "  --embed bf16|same                 embedding tables bf16, or like --weights (default same)\n"
                    "  --kv f32|f16|int8-fp8|int8-e5m2   KV cache: keys/values f32, f16, or int8 keys (one scale\n"
                    "                                    per token and head) with fp8 e4m3 / e5m2 values (default f32)\n"
                    "passes:");
    for (size_t i = 0; i < sizeof(pass_flags) / sizeof(pass_flags[0]); i++) fprintf(stderr, " %s", pass_flags[i].flag);
    fprintf(stderr, " --no-quantize\n");
    return 2;
}

int vkl_tool_parse_quant(vkl_context *ctx, int argc, char **argv, int *i, vkl_quant_recipe *r) {
    static const struct {
        const char *flag, *key;
    } flags[] = {{"--weights", "weights"}, {"--group", "group"}, {"--lm-head", "lm_head"}, {"--embed", "embed"},
                 {"--kv", "kv"}};
    for (size_t k = 0; k < sizeof(flags) / sizeof(flags[0]); k++) {
        if (strcmp(argv[*i], flags[k].flag)) continue;
        if (*i + 1 >= argc) {
            fprintf(stderr, "vkllm: %s needs a value\n", flags[k].flag);
            return -1;
        }
        if (vkl_quant_recipe_set(ctx, r, flags[k].key, argv[++*i])) {
            fprintf(stderr, "vkllm: %s\n", vkl_context_error(ctx));
            return -1;
        }
        return 1;
    }
    return 0;
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

/* "quantize: 15 MatMul -> QuantMatMul (lm_head included), ..." */
static void print_quant(const vkl_quant_recipe *recipe, const vkl_pipeline_report *r) {
    char text[128];
    const vkl_quantize_report *q = &r->quant;
    printf("quantize %s: %u MatMul/Gemm -> QuantMatMul%s, %u embedding%s, %u skipped (left f32)\n",
           vkl_quant_recipe_str(recipe, text, sizeof(text)), q->matmuls, q->lm_head ? " (lm_head included)" : "",
           q->embeddings, q->embeddings == 1 ? "" : "s", q->skipped);
    printf("  made:");
    for (int d = 0; d < VKL_DTYPE_COUNT_; d++)
        if (q->tensors[d]) printf(" %s=%u", vkl_dtype_name((vkl_dtype)d), q->tensors[d]);
    printf("; %llu f32 bytes -> %llu bytes\n", (unsigned long long)q->bytes_before, (unsigned long long)q->bytes_after);
    if (recipe->kv != VKL_KV_F32) {
        vkl_dtype k, v;
        vkl_kv_format_dtypes(recipe->kv, &k, &v);
        printf("  KV cache: %u state tensors -> keys %s, values %s%s\n", q->kv_states, vkl_dtype_name(k),
               vkl_dtype_name(v), q->kv_states ? "" : " (none found: the cache is not in place)");
    }
}

vkl_status vkl_tool_import(vkl_context *ctx, const char *path, uint32_t passes, bool quiet, vkl_onnx_model **out) {
    return vkl_tool_import_recipe(ctx, path, passes, NULL, quiet, out);
}

vkl_status vkl_tool_import_recipe(vkl_context *ctx, const char *path, uint32_t passes, const vkl_quant_recipe *recipe,
                                  bool quiet, vkl_onnx_model **out) {
    return vkl_tool_import_opts(ctx, path, passes, recipe, 0, NULL, quiet, out);
}

typedef struct import_hooks {
    vkl_onnx_model *model;
    vkl_progress *progress;
} import_hooks;

static void release_hook(void *user, const void *data, size_t bytes) {
    vkl_onnx_release(((import_hooks *)user)->model, data, bytes);
}

static int progress_hook(void *user, uint64_t done, uint64_t total) {
    vkl_progress *p = ((import_hooks *)user)->progress;
    if (p) vkl_progress_update(p, done, total);
    return 0;
}

vkl_status vkl_tool_import_opts(vkl_context *ctx, const char *path, uint32_t passes, const vkl_quant_recipe *recipe,
                                uint32_t threads, vkl_progress *progress, bool quiet, vkl_onnx_model **out) {
    if (progress) vkl_progress_phase(progress, "read");
    vkl_status st = vkl_onnx_open(ctx, path, out);
    if (st) return st;
    vkl_graph *g = vkl_onnx_graph(*out);
    vkl_pipeline_report r;
    import_hooks hooks = {*out, progress};
    vkl_quantize_options qo;
    vkl_quantize_options_init(&qo);
    qo.threads = threads;
    qo.release = release_hook;
    qo.progress = progress_hook;
    qo.user = &hooks;
    if (progress) vkl_progress_phase(progress, "quantize");
    st = vkl_pipeline_run_opts(g, passes, recipe, &qo, &r);
    if (progress) vkl_progress_end(progress);
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
    if (r.quantized) print_quant(recipe, &r);
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
    uint32_t passes = VKL_PASS_ALL, threads = 0;
    bool quiet = false;
    vkl_quant_recipe recipe;
    vkl_quant_recipe_init(&recipe);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 1; i < argc; i++) {
        int q = vkl_tool_parse_quant(ctx, argc, argv, &i, &recipe);
        if (q < 0) return 2;
        if (q > 0) continue;
        if (!strcmp(argv[i], "-o") && i + 1 < argc) out = argv[++i];
        else if (!strcmp(argv[i], "--tokenizer") && i + 1 < argc) tok_dir = argv[++i];
        else if (!strcmp(argv[i], "--quiet")) quiet = true;
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            char *end;
            unsigned long n = strtoul(argv[++i], &end, 10);
            if (*end || n < 1 || n > 256) return usage();
            threads = (uint32_t)n;
        }
        else if (vkl_tool_parse_passes(argv[i], &passes)) continue;
        else if (argv[i][0] != '-' && !in) in = argv[i];
        else return usage();
    }
    if (!in || !out) return usage();
    vkl_onnx_model *m;
    vkl_progress progress;
    vkl_progress_init(&progress, "import", quiet);
    if (vkl_tool_import_opts(ctx, in, passes, &recipe, threads, &progress, quiet, &m)) {
        fprintf(stderr, "vkllm import: %s\n", vkl_context_error(ctx));
        return 1;
    }
    vkl_vkm_meta meta[5];
    size_t n_meta = 0;
    void *blobs[2] = {NULL, NULL};
    char options[64], recipe_text[128];
    snprintf(options, sizeof(options), "passes=0x%x", passes);
    meta[n_meta++] = (vkl_vkm_meta){VKL_VKM_KEY_IMPORT_OPTIONS, options, strlen(options)};
    /* What was done to the weights, for `vkllm info` and loaders: written
     * also when nothing was converted (weights=f32 ..., or --no-quantize). */
    if (!(passes & VKL_PASS_QUANTIZE)) vkl_quant_recipe_init(&recipe);
    vkl_quant_recipe_str(&recipe, recipe_text, sizeof(recipe_text));
    meta[n_meta++] = (vkl_vkm_meta){VKL_QUANT_RECIPE_META_KEY, recipe_text, strlen(recipe_text)};
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
    vkl_progress_phase(&progress, "write");
    double t_write = vkl_progress_elapsed(&progress);
    if (!rc && vkl_vkm_write(ctx, vkl_onnx_graph(m), meta, n_meta, out)) {
        vkl_progress_end(&progress);
        fprintf(stderr, "vkllm import: %s\n", vkl_context_error(ctx));
        rc = 1;
    }
    vkl_progress_end(&progress);
    if (!rc && !quiet) {
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
        printf("import took %.2f s (writing %.2f s), peak RSS %.1f MiB\n",
               (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec),
               vkl_progress_elapsed(&progress) - t_write, (double)ru.ru_maxrss / 1024.0);
    }
    for (int k = 0; k < 2; k++) vkl_free(ctx, blobs[k]);
    vkl_onnx_close(m);
    return rc;
}
