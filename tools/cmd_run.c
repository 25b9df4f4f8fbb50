/* `vkllm run [-m MODEL.vkm] -p PROMPT`: stream generated text to stdout,
 * statistics to stderr. Without -m: the bundled model. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_run.h"
#include "stream.h"
#include "vkllm.h"
#include "vkllm_tokenizer.h"

#ifndef VKL_BUNDLED_MODEL
#define VKL_BUNDLED_MODEL "model/vkllm-kjv.vkm"
#endif

typedef struct run_opts {
    const char *model, *prompt, *backend;
    size_t n_new, context;
    vkl_sampling_options sampling;
    int raw; /* do not add the tokenizer's special tokens to the prompt */
} run_opts;

static int usage(void) {
    fprintf(stderr, "usage: vkllm run [-m MODEL.vkm] -p PROMPT [-n N] [--temperature T] [--top-k K] [--top-p P]\n"
                    "                 [--min-p P] [--repeat-penalty R] [--seed S] [--backend NAME] [--context N] [--raw]\n"
                    "  without -m: the bundled model (%s, or $VKLLM_MODEL)\n",
            VKL_BUNDLED_MODEL);
    return 2;
}

static int parse(int argc, char **argv, run_opts *o) {
    o->model = getenv("VKLLM_MODEL") ? getenv("VKLLM_MODEL") : VKL_BUNDLED_MODEL;
    o->n_new = 64;
    o->context = 1024;
    o->sampling = (vkl_sampling_options){0, 0, 1, 0, 1, 64, 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--raw")) { o->raw = 1; continue; }
        if (!v) return usage();
        i++;
        if (!strcmp(a, "-m")) o->model = v;
        else if (!strcmp(a, "-p")) o->prompt = v;
        else if (!strcmp(a, "-n")) o->n_new = strtoul(v, NULL, 10);
        else if (!strcmp(a, "--temperature")) o->sampling.temperature = strtof(v, NULL);
        else if (!strcmp(a, "--top-k")) o->sampling.top_k = (int32_t)strtol(v, NULL, 10);
        else if (!strcmp(a, "--top-p")) o->sampling.top_p = strtof(v, NULL);
        else if (!strcmp(a, "--min-p")) o->sampling.min_p = strtof(v, NULL);
        else if (!strcmp(a, "--repeat-penalty")) o->sampling.repetition_penalty = strtof(v, NULL);
        else if (!strcmp(a, "--seed")) o->sampling.seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--backend")) o->backend = v;
        else if (!strcmp(a, "--context")) o->context = strtoul(v, NULL, 10);
        else return usage();
    }
    return o->prompt ? 0 : usage();
}

int vkl_cmd_run(vkl_context *ctx, int argc, char **argv) {
    run_opts o = {0};
    int rc = parse(argc, argv, &o);
    if (rc) return rc;
    vkl_model_options mo;
    vkl_model_options_init(&mo);
    mo.backend = o.backend;
    vkl_session_options so;
    vkl_session_options_init(&so);
    so.max_context = o.context;
    so.sampling = o.sampling;
    vkl_model *m = NULL;
    vkl_session *s = NULL;
    vkl_tokenizer *tok = NULL;
    int32_t *prompt = NULL;
    size_t n_prompt = 0;
    vkl_text_stream st = {0};
    vkl_status status = vkl_model_load(ctx, o.model, &mo, &m);
    if (!status) status = vkl_tokenizer_load_model(ctx, m, &tok);
    if (!status) status = vkl_tokenizer_encode(tok, o.prompt, strlen(o.prompt), !o.raw, &prompt, &n_prompt);
    if (!status) status = vkl_session_create(m, &so, &s);
    if (!status) status = vkl_text_stream_init(&st, tok, o.n_new);
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
        fprintf(stderr, "backend %s; prompt %llu tokens, %.1f tok/s; generated %llu tokens, %.1f tok/s; "
                        "arena %.1f MiB, KV cache %.1f MiB; %llu prepares, %llu replays\n",
                vkl_model_backend_name(m), (unsigned long long)stats.prefill_tokens,
                stats.prefill_seconds > 0 ? (double)stats.prefill_tokens / stats.prefill_seconds : 0.0,
                (unsigned long long)stats.decode_tokens,
                stats.decode_seconds > 0 ? (double)stats.decode_tokens / stats.decode_seconds : 0.0,
                (double)stats.arena_bytes / 1048576.0, (double)stats.kv_bytes / 1048576.0,
                (unsigned long long)stats.prepares, (unsigned long long)stats.replays);
    } else {
        fprintf(stderr, "vkllm run: %s\n", vkl_context_error(ctx));
    }
    vkl_text_stream_free(&st);
    vkl_tokenizer_free_buffer(tok, prompt);
    vkl_tokenizer_free(tok);
    vkl_session_free(s);
    vkl_model_free(m);
    return status ? 1 : 0;
}
