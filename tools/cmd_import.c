/* `vkllm import MODEL.onnx -o MODEL.vkm`: read the ONNX export, run the
 * optimization pipeline (quantizing per --weights/--group/--lm-head/--embed/--kv,
 * on --threads threads, with progress on stderr), write the model file
 * atomically, print a summary. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "atomic_file.h"
#include "cli.h"
#include "commands.h"
#include "model.h"
#include "report.h"
#include "tokenizer/tokenizer.h"
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

#define PROG "vkllm import"
#define IMPORT_THREADS_MAX 256

static int usage(FILE *f) {
    fprintf(f, "usage: vkllm import MODEL.onnx -o OUT.vkm [--tokenizer DIR] [quantization]\n"
               "                    [--threads N] [--quiet] [--no-fuse] [--no-<pass>]\n"
               "  -o OUT.vkm      written whole or not at all (a temporary file beside it, renamed);\n"
               "                  it must be a regular file or absent, and not the input\n"
               "  --tokenizer DIR stores DIR/tokenizer.json (and tokenizer_config.json) in the model,\n"
               "                  after checking that they load and that every id fits the logits\n"
               "  --threads N     threads converting weights, 1 to %d (default: one per CPU; the\n"
               "                  output is the same)\n"
               "  --quiet         no progress (shown on stderr after 2 s) and no summary\n"
               "quantization (docs/quant.md; the recipe is stored in the .vkm as import.recipe):\n"
               "  --weights e0m4|int4|int8|f16|f32  projection weights (default f32: unchanged)\n"
               "  --group N                         elements per block along K: a multiple of 32 from\n"
               "                                    32 to %d (default 128)\n"
               "  --lm-head int8|same               int8 per output channel, or like --weights (default same)\n"
               "  --embed bf16|same                 embedding tables bf16, or like --weights (default same)\n"
               "  --kv f32|f16|int8-fp8|int8-e5m2   KV cache: keys/values f32, f16, or int8 keys (one scale\n"
               "                                    per token and head) with fp8 e4m3 / e5m2 values (default f32)\n"
               "passes:",
            IMPORT_THREADS_MAX, VKL_TOOL_MAX_GROUP);
    for (size_t i = 0; i < sizeof(pass_flags) / sizeof(pass_flags[0]); i++) fprintf(f, " %s", pass_flags[i].flag);
    fprintf(f, " --no-fuse\n");
    return f == stdout ? 0 : VKL_EXIT_USAGE;
}

int vkl_tool_parse_quant(vkl_context *ctx, const char *prog, int argc, char **argv, int *i, vkl_quant_recipe *r) {
    static const struct {
        const char *flag, *key;
    } flags[] = {{"--weights", "weights"}, {"--group", "group"}, {"--lm-head", "lm_head"}, {"--embed", "embed"},
                 {"--kv", "kv"}};
    for (size_t k = 0; k < sizeof(flags) / sizeof(flags[0]); k++) {
        if (strcmp(argv[*i], flags[k].flag)) continue;
        const char *v = vkl_cli_value(prog, argc, argv, i);
        if (!v) return -1;
        uint64_t group;
        if (!strcmp(flags[k].flag, "--group")) {
            if (vkl_cli_u64(prog, flags[k].flag, v, 32, VKL_TOOL_MAX_GROUP, &group)) return -1;
            if (group % 32) {
                fprintf(stderr, "%s: --group '%s' is not a multiple of 32; expected 32, 64, 128, ...\n", prog, v);
                return -1;
            }
        }
        if (vkl_quant_recipe_set(ctx, r, flags[k].key, v)) {
            fprintf(stderr, "%s: %s\n", prog, vkl_context_error(ctx));
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

static bool read_hook(void *user, const void *data, size_t bytes, void *dst) {
    return vkl_onnx_read(((import_hooks *)user)->model, data, bytes, dst);
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
    qo.read = read_hook;
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

/* Reads a whole small file (tokenizer JSON) into memory; VKL_ERR_NOT_FOUND
 * when it does not exist. */
static vkl_status slurp(vkl_context *ctx, const char *path, void **out, size_t *size) {
    *out = NULL;
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return vkl_fail(ctx, errno == ENOENT ? VKL_ERR_NOT_FOUND : VKL_ERR_IO, "cannot read %s: %s", path,
                            strerror(errno));
    long n = fseek(f, 0, SEEK_END) ? -1 : ftell(f);
    void *buf = n >= 0 && !fseek(f, 0, SEEK_SET) ? vkl_malloc(ctx, (size_t)n + 1) : NULL;
    vkl_status st = VKL_OK;
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        st = vkl_fail(ctx, VKL_ERR_IO, "cannot read %s%s", path, n < 0 ? ": not a regular file" : "");
        vkl_free(ctx, buf);
        buf = NULL;
    }
    fclose(f);
    *out = buf;
    *size = buf ? (size_t)n : 0;
    return st;
}

/* --tokenizer DIR: tokenizer.json (required) and tokenizer_config.json
 * (optional), checked before they are stored, so that a model file never
 * carries a tokenizer `run` would reject: both must load as `run` loads
 * them (a truncated file fails here, not there), and every id must be a
 * row of the logits. */
static vkl_status read_tokenizer(vkl_context *ctx, const char *dir, const vkl_graph *g, void *blobs[2],
                                 size_t sizes[2]) {
    static const char *const files[2] = {"tokenizer.json", "tokenizer_config.json"};
    char path[2][4096];
    vkl_status st = VKL_OK;
    for (int k = 0; !st && k < 2; k++) {
        snprintf(path[k], sizeof(path[k]), "%s/%s", dir, files[k]);
        st = slurp(ctx, path[k], &blobs[k], &sizes[k]);
        if (k == 1 && st == VKL_ERR_NOT_FOUND) st = VKL_OK;
    }
    vkl_tokenizer *tok = NULL;
    if (!st) {
        st = vkl_tokenizer_load_json(ctx, blobs[0], sizes[0], blobs[1], sizes[1], &tok);
        if (st) return vkl_fail_prefix(ctx, st, "--tokenizer %s", dir);
    }
    size_t vocab, ids = tok ? vkl_tokenizer_vocab_size(tok) : 0;
    if (!st && vkl_model_graph_vocab(g, &vocab) && ids > vocab)
        st = vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT,
                      "--tokenizer %s: its ids go up to %zu but the model's logits have %zu entries (ids 0 to %zu): "
                      "the tokenizer is not this model's",
                      path[0], ids - 1, vocab, vocab - 1);
    vkl_tokenizer_free(tok);
    return st;
}

static bool same_file(const char *a, const char *b) {
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* The output must be writable (a regular file or a new path: the library's
 * rule) and none of the inputs: the rename at the end of the write would
 * replace it with the model file. Compared by device and inode, so another
 * path to the same file (a link, "./x") counts. */
static vkl_status check_output(vkl_context *ctx, const char *out, const char *in, const char *tok_dir) {
    vkl_status st = vkl_output_path_check(ctx, out);
    if (st) return st;
    if (same_file(out, in))
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "the output '%s' is the input '%s'; nothing was written", out,
                        in);
    static const char *const files[2] = {"tokenizer.json", "tokenizer_config.json"};
    for (int k = 0; tok_dir && k < 2; k++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", tok_dir, files[k]);
        if (same_file(out, path))
            return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "the output '%s' is the input '%s'; nothing was written",
                            out, path);
    }
    return VKL_OK;
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
        if (vkl_cli_is_help(argv[i])) return usage(stdout);
        int q = vkl_tool_parse_quant(ctx, PROG, argc, argv, &i, &recipe);
        if (q < 0) return VKL_EXIT_USAGE;
        if (q > 0) continue;
        if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--tokenizer") || !strcmp(argv[i], "--threads")) {
            const char *opt = argv[i], *v = vkl_cli_value(PROG, argc, argv, &i);
            if (!v) return VKL_EXIT_USAGE;
            if (!strcmp(opt, "-o")) {
                out = v;
            } else if (!strcmp(opt, "--tokenizer")) {
                tok_dir = v;
            } else {
                uint64_t n;
                int rc = vkl_cli_u64(PROG, opt, v, 1, IMPORT_THREADS_MAX, &n);
                if (rc) return rc;
                threads = (uint32_t)n;
            }
        } else if (!strcmp(argv[i], "--quiet")) {
            quiet = true;
        } else if (vkl_tool_parse_passes(argv[i], &passes)) {
            continue;
        } else if (argv[i][0] != '-' && !in) {
            in = argv[i];
        } else {
            return vkl_cli_usage_error(PROG, "unexpected argument '%s'", argv[i]);
        }
    }
    if (!in || !out) return vkl_cli_usage_error(PROG, "MODEL.onnx and -o OUT.vkm are required");
    /* Before the import's work: the writer checks the output again, but an
     * output that can never be written should not cost the import first. */
    vkl_status st = check_output(ctx, out, in, tok_dir);
    if (st) return vkl_cli_fail(PROG, ctx, st);
    vkl_onnx_model *m;
    vkl_progress progress;
    vkl_progress_init(&progress, "import", quiet);
    st = vkl_tool_import_opts(ctx, in, passes, &recipe, threads, &progress, quiet, &m);
    if (st) return vkl_cli_fail(PROG, ctx, st);
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
    size_t sizes[2] = {0, 0};
    if (tok_dir) st = read_tokenizer(ctx, tok_dir, vkl_onnx_graph(m), blobs, sizes);
    if (!st && blobs[0]) meta[n_meta++] = (vkl_vkm_meta){"tokenizer.json", blobs[0], sizes[0]};
    if (!st && blobs[1]) meta[n_meta++] = (vkl_vkm_meta){"tokenizer_config.json", blobs[1], sizes[1]};
    vkl_progress_phase(&progress, "write");
    if (!st) st = vkl_vkm_write(ctx, vkl_onnx_graph(m), meta, n_meta, out);
    vkl_progress_end(&progress);
    int rc = st ? vkl_cli_fail(PROG, ctx, st) : 0;
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
        char phases[160];
        clock_gettime(CLOCK_MONOTONIC, &t1);
        getrusage(RUSAGE_SELF, &ru);
        printf("import took %.2f s (%s), peak RSS %.1f MiB\n",
               (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec),
               vkl_progress_times(&progress, phases, sizeof(phases)), (double)ru.ru_maxrss / 1024.0);
    }
    for (int k = 0; k < 2; k++) vkl_free(ctx, blobs[k]);
    vkl_onnx_close(m);
    return rc;
}
