/* `vkllm run [-m MODEL.vkm] -p PROMPT`: stream generated text to stdout,
 * statistics to stderr. Without -m: the bundled model. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_env.h"
#include "cli.h"
#include "cmd_run.h"
#include "stream.h"
#include "vkllm.h"
#include "vkllm_tokenizer.h"

#ifndef VKL_BUNDLED_MODEL
#define VKL_BUNDLED_MODEL "model/vkllm-kjv.vkm"
#endif

#define PROG "vkllm run"

typedef struct run_opts {
    const char *model, *prompt, *backend;
    size_t n_new, context; /* context 0: the default (vkl_tool_default_context) */
    size_t threads;        /* host backends; 0: one per CPU */
    vkl_sampling_options sampling;
    int raw; /* do not add the tokenizer's special tokens to the prompt */
    int no_verify, check_finite;
} run_opts;

static int usage(FILE *f) {
    fprintf(f,
            "usage: vkllm run [-m MODEL.vkm] -p PROMPT [-n N] [--temperature T] [--top-k K] [--top-p P]\n"
            "                 [--min-p P] [--repeat-penalty R] [--seed S] [--backend NAME] [--context N] [--raw]\n"
            "                 [--threads N] [--no-verify] [--check-finite]\n"
            "  -m MODEL.vkm        default: the bundled model (%s, or $VKLLM_MODEL)\n"
            "  -p PROMPT           the text to continue\n"
            "  -n N                tokens to generate, 0 to %u (default 64); generation also ends at the\n"
            "                      model's end-of-text token or when the context is full (said on stderr)\n"
            "  --temperature T     0 to 100 (default 0: greedy)\n"
            "  --top-k K           0 to 2147483647 (default 0: off)\n"
            "  --top-p P           > 0 and <= 1 (default 1: off)\n"
            "  --min-p P           0 to 1 (default 0: off)\n"
            "  --repeat-penalty R  > 0 and <= 100 (default 1: off)\n"
            "  --seed S            0 to 18446744073709551615 (default 0)\n"
            "  --backend NAME      ref, cpu, vulkan, ... (default: the first that works here)\n"
            "  --threads N         host backends (cpu): threads, 1 to 256 (default: one per CPU);\n"
            "                      VKL_CPU_DISABLE=avx2,avx512vnni,avxvnni,amx,dotprod,i8mm turns\n"
            "                      instruction sets off\n"
            "  --context N         tokens the KV cache holds, prompt included, 1 to %u (default %u, or\n"
            "                      the tokenizer's model_max_length when smaller)\n"
            "  --raw               do not add the tokenizer's special tokens (BOS) to the prompt\n"
            "  --no-verify         load without checking the weights against their checksum\n"
            "  --check-finite      debugging: name the first node whose output held a NaN/inf (slow)\n",
            VKL_BUNDLED_MODEL, VKL_TOOL_MAX_TOKENS, VKL_TOOL_MAX_TOKENS, VKL_TOOL_DEFAULT_CONTEXT);
    return f == stdout ? 0 : VKL_EXIT_USAGE;
}

/* 0 to go on, else the exit code (help: 0 with *done set). */
static int parse(int argc, char **argv, run_opts *o, int *done) {
    o->model = getenv("VKLLM_MODEL") ? getenv("VKLLM_MODEL") : VKL_BUNDLED_MODEL;
    o->n_new = 64;
    o->sampling = (vkl_sampling_options){0, 0, 1, 0, 1, 64, 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        int rc = 0;
        if (vkl_cli_is_help(a)) {
            *done = 1;
            return usage(stdout);
        }
        if (!strcmp(a, "--raw")) {
            o->raw = 1;
            continue;
        }
        if (!strcmp(a, "--no-verify")) {
            o->no_verify = 1;
            continue;
        }
        if (!strcmp(a, "--check-finite")) {
            o->check_finite = 1;
            continue;
        }
        if (a[0] != '-') return vkl_cli_usage_error(PROG, "unexpected argument '%s'", a);
        if (!strcmp(a, "-m") || !strcmp(a, "-p") || !strcmp(a, "-n") || !strcmp(a, "--temperature") ||
            !strcmp(a, "--top-k") || !strcmp(a, "--top-p") || !strcmp(a, "--min-p") ||
            !strcmp(a, "--repeat-penalty") || !strcmp(a, "--seed") || !strcmp(a, "--backend") ||
            !strcmp(a, "--context") || !strcmp(a, "--threads")) {
            if (!(v = vkl_cli_value(PROG, argc, argv, &i))) return VKL_EXIT_USAGE;
        } else {
            return vkl_cli_usage_error(PROG, "unknown option '%s'", a);
        }
        if (!strcmp(a, "-m")) o->model = v;
        else if (!strcmp(a, "-p")) o->prompt = v;
        else if (!strcmp(a, "-n")) rc = vkl_cli_size(PROG, a, v, 0, VKL_TOOL_MAX_TOKENS, &o->n_new);
        else if (!strcmp(a, "--temperature")) rc = vkl_cli_f32(PROG, a, v, 0, 100, false, &o->sampling.temperature);
        else if (!strcmp(a, "--top-k")) rc = vkl_cli_i32(PROG, a, v, 0, INT32_MAX, &o->sampling.top_k);
        else if (!strcmp(a, "--top-p")) rc = vkl_cli_f32(PROG, a, v, 0, 1, true, &o->sampling.top_p);
        else if (!strcmp(a, "--min-p")) rc = vkl_cli_f32(PROG, a, v, 0, 1, false, &o->sampling.min_p);
        else if (!strcmp(a, "--repeat-penalty"))
            rc = vkl_cli_f32(PROG, a, v, 0, 100, true, &o->sampling.repetition_penalty);
        else if (!strcmp(a, "--seed")) rc = vkl_cli_u64(PROG, a, v, 0, UINT64_MAX, &o->sampling.seed);
        else if (!strcmp(a, "--backend")) o->backend = v;
        else if (!strcmp(a, "--context")) rc = vkl_cli_size(PROG, a, v, 1, VKL_TOOL_MAX_TOKENS, &o->context);
        else if (!strcmp(a, "--threads")) rc = vkl_cli_size(PROG, a, v, 1, 256, &o->threads);
        if (rc) return rc;
    }
    return o->prompt ? 0 : vkl_cli_usage_error(PROG, "-p PROMPT is required");
}

int vkl_cmd_run(vkl_context *ctx, int argc, char **argv) {
    run_opts o = {0};
    int done = 0, rc = parse(argc, argv, &o, &done);
    if (rc || done) return rc;
    vkl_model_options mo;
    vkl_model_options_init(&mo);
    mo.backend = o.backend;
    mo.no_verify = o.no_verify;
    mo.threads = (unsigned)o.threads;
    vkl_session_options so;
    vkl_session_options_init(&so);
    so.check_finite = o.check_finite;
    so.sampling = o.sampling;
    vkl_model *m = NULL;
    vkl_session *s = NULL;
    vkl_tokenizer *tok = NULL;
    int32_t *prompt = NULL;
    size_t n_prompt = 0, tok_max = 0;
    vkl_text_stream st = {0};
    vkl_status status = vkl_env_model_load(ctx, o.model, &mo, &m);
    if (!status) fprintf(stderr, "backend: %s (%s)\n", vkl_model_backend_name(m), vkl_model_backend_reason(m));
    if (!status) status = vkl_tokenizer_load_model(ctx, m, &tok);
    if (!status) {
        size_t def = vkl_tool_default_context(m, VKL_TOOL_DEFAULT_CONTEXT, &tok_max);
        so.max_context = o.context ? o.context : def;
        if (o.context && tok_max && o.context > tok_max)
            fprintf(stderr, PROG ": note: --context %zu is beyond the tokenizer's model_max_length %zu\n", o.context,
                    tok_max);
    }
    if (!status) status = vkl_tokenizer_encode(tok, o.prompt, strlen(o.prompt), !o.raw, &prompt, &n_prompt);
    if (!status) status = vkl_env_session_options(ctx, &so);
    if (!status) status = vkl_session_create(m, &so, &s);
    /* no more tokens can be generated than the context holds */
    if (!status) status = vkl_text_stream_init(&st, tok, o.n_new < so.max_context ? o.n_new : so.max_context);
    if (!status) status = vkl_text_stream_begin(&st, prompt, n_prompt);
    if (!status) {
        fputs(o.prompt, stdout);
        status = vkl_session_generate(s, prompt, n_prompt, o.n_new, st.stop, vkl_text_stream_on_token, &st);
        vkl_status finished = vkl_text_stream_finish(&st);
        if (!status) status = finished;
        fputc('\n', stdout);
        fflush(stdout);
    }
    if (!status) {
        vkl_session_stats stats;
        vkl_session_get_stats(s, &stats);
        fprintf(stderr, "backend %s; context %zu; prompt %llu tokens, %.1f tok/s; generated %zu tokens, %.1f tok/s; "
                        "arena %.1f MiB, KV cache %.1f MiB; %llu prepares, %llu replays\n",
                vkl_model_backend_name(m), so.max_context, (unsigned long long)stats.prefill_tokens,
                stats.prefill_seconds > 0 ? (double)stats.prefill_tokens / stats.prefill_seconds : 0.0, st.n,
                stats.decode_seconds > 0 ? (double)stats.decode_tokens / stats.decode_seconds : 0.0,
                (double)stats.arena_bytes / 1048576.0, (double)stats.kv_bytes / 1048576.0,
                (unsigned long long)stats.prepares, (unsigned long long)stats.replays);
        if (!st.stopped && st.n < o.n_new && vkl_session_length(s) >= so.max_context)
            fprintf(stderr,
                    PROG ": stopped after %zu of %zu tokens: the context of %zu tokens is full "
                         "(prompt %zu; --context sets it)\n",
                    st.n, o.n_new, so.max_context, n_prompt);
    } else {
        rc = vkl_cli_fail(PROG, ctx, status);
    }
    vkl_text_stream_free(&st);
    vkl_tokenizer_free_buffer(tok, prompt);
    vkl_tokenizer_free(tok);
    vkl_session_free(s);
    vkl_model_free(m);
    return rc;
}
