/* `vkllm info MODEL.vkm`: what a model file holds — metadata, symbols,
 * inputs and outputs, ops, weight bytes by format. Like every load it checks
 * the weights' checksum unless --no-verify; --verify reports that check. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "commands.h"
#include "logits_row.h"
#include "model.h"
#include "report.h"
#include "ops.h"
#include "plan.h"
#include "vkm.h"

#define PROG "vkllm info"

static void print_meta(const vkl_vkm *m) {
    size_t n = vkl_vkm_meta_count(m);
    printf("metadata: %zu entries\n", n);
    for (size_t i = 0; i < n; i++) {
        vkl_vkm_meta e;
        if (!vkl_vkm_meta_at(m, i, &e)) continue;
        bool text = e.size < 200;
        for (size_t k = 0; text && k < e.size; k++) {
            unsigned char c = ((const unsigned char *)e.data)[k];
            text = c >= 0x20 || c == '\n' || c == '\t';
        }
        if (text) printf("  %-20s %.*s\n", e.key, (int)e.size, (const char *)e.data);
        else printf("  %-20s (%zu bytes)\n", e.key, e.size);
    }
}

static void print_io(const vkl_graph *g, const char *what, const uint32_t *ids, uint32_t n) {
    printf("%s:\n", what);
    for (uint32_t i = 0; i < n; i++) {
        const vkl_tensor *t = &g->tensors[ids[i]];
        char shape[256];
        printf("  %-24s %-5s %s\n", t->name, vkl_dtype_name(t->dtype), vkl_shape_str(g, &t->shape, shape, sizeof(shape)));
    }
}

/* The persistent state tensors (the KV cache) with their dtypes: the
 * recipe's kv setting shows here (int8 keys carry their group). */
static void print_states(const vkl_graph *g) {
    uint32_t n = 0;
    for (uint32_t t = 0; t < g->n_tensors; t++) n += g->tensors[t].kind == VKL_TENSOR_STATE;
    if (!n) return;
    printf("states: %u\n", n);
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        const vkl_tensor *s = &g->tensors[t];
        char shape[256], dtype[32];
        if (s->kind != VKL_TENSOR_STATE) continue;
        if (s->group) snprintf(dtype, sizeof(dtype), "%s/%u", vkl_dtype_name(s->dtype), s->group);
        else snprintf(dtype, sizeof(dtype), "%s", vkl_dtype_name(s->dtype));
        printf("  %-40s %-8s %s\n", s->name, dtype, vkl_shape_str(g, &s->shape, shape, sizeof(shape)));
    }
}

/* Whether a prompt that keeps only its last row's logits runs the lm_head on
 * that row alone (docs/runtime.md, "The last row's logits"), and from which
 * tensor the row is taken. Causal LMs only. */
static int print_logits_row(vkl_context *ctx, const vkl_graph *g) {
    size_t vocab;
    if (!vkl_model_graph_vocab(g, &vocab)) return 0;
    vkl_graph *d = NULL;
    uint32_t row;
    vkl_status st = vkl_logits_row_graph(g, vkl_model_logits_output(g), &d, &row);
    if (st) return vkl_cli_fail(PROG, ctx, st);
    if (!d) {
        printf("last-row logits: every prompt row's logits computed (no lm_head found; VKLLM_LOG=debug says why)\n");
        return 0;
    }
    for (uint32_t i = 0; i < d->n_nodes; i++)
        if (d->nodes[i].op == VKL_OP_GATHER && d->nodes[i].inputs[1] == d->inputs[row])
            printf("last-row logits: a prompt runs the lm_head on one row, taken from '%s'\n",
                   d->tensors[d->nodes[i].inputs[0]].name);
    vkl_graph_destroy(d);
    return 0;
}

static void set_symbol(const vkl_graph *g, int64_t *values, const char *name, int64_t v) {
    size_t i;
    if (vkl_symtab_find_symbol(g->syms, name, &i) == VKL_OK) values[i] = v;
}

/* Planned arena bytes against one-buffer-per-tensor, for a decode step and
 * a full prefill at the given context. */
static int print_plan(vkl_context *ctx, const vkl_graph *g, int64_t context) {
    vkl_plan *p;
    vkl_status st = vkl_plan_create(g, VKL_PLAN_REUSE, 0, &p);
    if (st) return vkl_cli_fail(PROG, ctx, st);
    size_t n = vkl_symtab_symbol_count(g->syms);
    int64_t *values = vkl_calloc(ctx, n + 1, sizeof(int64_t));
    size_t *offsets = vkl_calloc(ctx, g->n_tensors + 1, sizeof(size_t));
    int rc = values && offsets ? 0 : vkl_cli_fail(PROG, ctx, VKL_ERR_OUT_OF_MEMORY);
    printf("plan: %u buffers for %u tensors (symbols not named below are 1)\n", p->n_buffers, g->n_tensors);
    for (int prefill = 0; !rc && prefill < 2; prefill++) {
        for (size_t i = 0; i < n; i++) values[i] = 1;
        set_symbol(g, values, "seq", prefill ? context : 1);
        set_symbol(g, values, "past", prefill ? 0 : context - 1);
        set_symbol(g, values, "total_seq", context);
        size_t planned, plain;
        vkl_layout_binding lb = {values, n, NULL, 0};
        st = vkl_plan_layout(g->ctx, p, &lb, offsets, &planned, NULL);
        if (!st) st = vkl_plan_no_reuse_bytes(p, values, n, &plain);
        if (st) {
            rc = vkl_cli_fail(PROG, ctx, st);
            break;
        }
        printf("  %-7s at context %lld: planned %zu bytes, without reuse %zu bytes\n", prefill ? "prefill" : "decode",
               (long long)context, planned, plain);
    }
    vkl_free(ctx, values);
    vkl_free(ctx, offsets);
    vkl_plan_destroy(p);
    return rc;
}

#define PLAN_CONTEXT_DEFAULT 2048
#define PLAN_CONTEXT_MAX 1048576

static int usage(FILE *f) {
    fprintf(f, "usage: vkllm info MODEL.vkm [--plan] [--context N] [--verify | --no-verify]\n"
               "  metadata, symbols, inputs and outputs, KV cache states, ops and weight bytes\n"
               "  --plan       the planned arena for a decode step and a full prefill (context %d)\n"
               "  --context N  --plan at this context, 1 to %d\n"
               "  --verify     check every checksum and report it (the data's is timed)\n"
               "  --no-verify  skip the weights' checksum (the default checks it)\n",
            PLAN_CONTEXT_DEFAULT, PLAN_CONTEXT_MAX);
    return f == stdout ? 0 : VKL_EXIT_USAGE;
}

static double seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* --verify: the data checksum, timed; the other sections' checksums were
 * checked by the open that got here. */
static int report_verify(vkl_context *ctx, const vkl_vkm *m, const char *path) {
    double t0 = seconds();
    vkl_status st = vkl_vkm_verify_data(m);
    double dt = seconds() - t0;
    if (st) return vkl_cli_fail(PROG, ctx, st);
    size_t bytes = vkl_vkm_data_bytes(m);
    printf("verify: %s: every section matches its XXH3 checksum (header, section table, metadata, tensor table, "
           "graph; data: %zu bytes hashed in %.3f s, %.2f GB/s)\n",
           path, bytes, dt, dt > 0 ? (double)bytes / dt / 1e9 : 0.0);
    return 0;
}

int vkl_cmd_info(vkl_context *ctx, int argc, char **argv) {
    const char *path = NULL;
    int64_t plan_context = 0;
    bool verify = false, no_verify = false;
    for (int i = 1; i < argc; i++) {
        if (vkl_cli_is_help(argv[i])) return usage(stdout);
        if (!strcmp(argv[i], "--plan")) {
            if (!plan_context) plan_context = PLAN_CONTEXT_DEFAULT;
        } else if (!strcmp(argv[i], "--context")) {
            const char *v = vkl_cli_value(PROG, argc, argv, &i);
            if (!v || vkl_cli_i64(PROG, "--context", v, 1, PLAN_CONTEXT_MAX, &plan_context)) return VKL_EXIT_USAGE;
        } else if (!strcmp(argv[i], "--verify")) {
            verify = true;
        } else if (!strcmp(argv[i], "--no-verify")) {
            no_verify = true;
        } else if (argv[i][0] != '-' && !path) {
            path = argv[i];
        } else {
            return vkl_cli_usage_error(PROG, "unexpected argument '%s'", argv[i]);
        }
    }
    if (!path) return vkl_cli_usage_error(PROG, "MODEL.vkm is required");
    if (verify && no_verify) return vkl_cli_usage_error(PROG, "--verify and --no-verify exclude each other");
    vkl_vkm *m;
    /* --verify hashes the data itself, to time it */
    vkl_status st = vkl_vkm_open_flags(ctx, path, verify || no_verify ? VKL_VKM_NO_DATA_CHECK : 0, &m);
    if (st) return vkl_cli_fail(PROG, ctx, st);
    if (verify && report_verify(ctx, m, path)) {
        vkl_vkm_close(m);
        return VKL_EXIT_FAILURE;
    }
    const vkl_graph *g = vkl_vkm_graph(m);
    uint32_t major, minor;
    vkl_vkm_version(m, &major, &minor);
    printf("format: .vkm %u.%u (this build reads %u.x, writes %u.%u)\n", major, minor, VKL_VKM_VERSION_MAJOR,
           VKL_VKM_VERSION_MAJOR, VKL_VKM_VERSION_MINOR);
    print_meta(m);
    printf("symbols:");
    for (size_t i = 0; i < vkl_symtab_symbol_count(g->syms); i++) printf(" %s", vkl_symtab_symbol_name(g->syms, i));
    printf("\n");
    print_io(g, "inputs", g->inputs, g->n_inputs);
    print_io(g, "outputs", g->outputs, g->n_outputs);
    print_states(g);
    vkl_tool_print_ops(g);
    vkl_tool_print_weights(g);
    int rc = print_logits_row(ctx, g);
    if (!rc && plan_context > 0) rc = print_plan(ctx, g, plan_context);
    vkl_vkm_close(m);
    return rc;
}
