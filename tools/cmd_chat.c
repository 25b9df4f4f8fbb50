/* `vkllm chat [-m MODEL.vkm]`: an interactive conversation. Each turn the
 * whole conversation is rendered with the model's chat template; the session
 * keeps the longest prefix it already holds (vkl_session_rewind) and only the
 * new tokens are computed. */
#define _POSIX_C_SOURCE 200809L /* strdup, getline */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_env.h"
#include "cli.h"
#include "cmd_run.h"
#include "context.h"
#include "stream.h"
#include "vkllm.h"
#include "vkllm_tokenizer.h"

#ifndef VKL_BUNDLED_MODEL
#define VKL_BUNDLED_MODEL "model/vkllm-kjv.vkm"
#endif

#define PROG "vkllm chat"
#define CHAT_MAX_MESSAGES 256
#define CHAT_REPLY_TOKENS 128

typedef struct chat {
    vkl_context *ctx;
    vkl_tokenizer *tok;
    vkl_session *s;
    int32_t *hist; /* what the session holds */
    size_t n_hist, cap;
    vkl_text_stream reply; /* this turn's generated ids */
} chat;

/* One turn: render, keep the common prefix, append the rest, generate.
 * Every failure leaves its own message in the context: the template's
 * (raise_exception included), the tokenizer's, the session's. */
static vkl_status turn(chat *c, const vkl_chat_message *msgs, size_t n, char **reply_text) {
    char *rendered = NULL;
    size_t len = 0, n_ids = 0, keep = 0;
    int32_t *ids = NULL;
    vkl_status st = vkl_tokenizer_apply_chat_template(c->tok, msgs, n, NULL, &rendered, &len);
    if (!st) st = vkl_tokenizer_encode(c->tok, rendered, len, false, &ids, &n_ids);
    vkl_tokenizer_free_buffer(c->tok, rendered);
    if (st) return st;
    while (keep < n_ids && keep < c->n_hist && ids[keep] == c->hist[keep]) keep++;
    if (n_ids + CHAT_REPLY_TOKENS > c->cap)
        st = vkl_fail(c->ctx, VKL_ERR_INVALID_ARGUMENT,
                      "the conversation no longer fits the context: %zu tokens and a reply of up to %d do not fit "
                      "in %zu (--context sets it)",
                      n_ids, CHAT_REPLY_TOKENS, c->cap);
    if (!st && keep == n_ids) keep--; /* recompute the last token for fresh logits */
    if (!st) st = vkl_session_rewind(c->s, keep);
    if (!st) st = vkl_text_stream_begin(&c->reply, ids, n_ids);
    if (!st) st = vkl_session_generate(c->s, ids + keep, n_ids - keep, CHAT_REPLY_TOKENS, c->reply.stop,
                                  vkl_text_stream_on_token, &c->reply);
    vkl_status finished = vkl_text_stream_finish(&c->reply);
    if (!st) st = finished;
    if (!st) {
        memcpy(c->hist, ids, n_ids * sizeof(int32_t));
        memcpy(c->hist + n_ids, c->reply.ids, c->reply.n * sizeof(int32_t));
        c->n_hist = n_ids + c->reply.n;
        size_t tl = 0;
        st = vkl_tokenizer_decode(c->tok, c->reply.ids, c->reply.n, true, reply_text, &tl);
    }
    vkl_tokenizer_free_buffer(c->tok, ids);
    return st;
}

static int usage(FILE *f) {
    fprintf(f,
            "usage: vkllm chat [-m MODEL.vkm] [--context N] [--no-verify] [--check-finite]\n"
            "  one message per line on stdin; replies on stdout; end with Ctrl-D\n"
            "  -m MODEL.vkm    default: the bundled model (%s, or $VKLLM_MODEL)\n"
            "  --context N     tokens the conversation may hold, 1 to %u (default %u, or the\n"
            "                  tokenizer's model_max_length when smaller)\n"
            "  --no-verify     load without checking the weights against their checksum\n"
            "  --check-finite  debugging: name the first node whose output held a NaN/inf (slow)\n",
            VKL_BUNDLED_MODEL, VKL_TOOL_MAX_TOKENS, VKL_TOOL_DEFAULT_CONTEXT);
    return f == stdout ? 0 : VKL_EXIT_USAGE;
}

int vkl_cmd_chat(vkl_context *ctx, int argc, char **argv) {
    const char *path = getenv("VKLLM_MODEL") ? getenv("VKLLM_MODEL") : VKL_BUNDLED_MODEL, *v;
    size_t context = 0;
    vkl_model_options mo;
    vkl_model_options_init(&mo);
    vkl_session_options so;
    vkl_session_options_init(&so);
    for (int i = 1; i < argc; i++) {
        if (vkl_cli_is_help(argv[i])) return usage(stdout);
        if (!strcmp(argv[i], "-m")) {
            if (!(v = vkl_cli_value(PROG, argc, argv, &i))) return VKL_EXIT_USAGE;
            path = v;
        } else if (!strcmp(argv[i], "--context")) {
            if (!(v = vkl_cli_value(PROG, argc, argv, &i))) return VKL_EXIT_USAGE;
            int rc = vkl_cli_size(PROG, "--context", v, 1, VKL_TOOL_MAX_TOKENS, &context);
            if (rc) return rc;
        } else if (!strcmp(argv[i], "--no-verify")) {
            mo.no_verify = 1;
        } else if (!strcmp(argv[i], "--check-finite")) {
            so.check_finite = 1;
        } else {
            return vkl_cli_usage_error(PROG, "unexpected argument '%s'", argv[i]);
        }
    }
    chat c = {0};
    c.ctx = ctx;
    vkl_model *m = NULL;
    vkl_status st = vkl_env_model_load(ctx, path, &mo, &m);
    if (!st) st = vkl_tokenizer_load_model(ctx, m, &c.tok);
    size_t tok_max = 0;
    so.max_context = context ? context : m ? vkl_tool_default_context(m, VKL_TOOL_DEFAULT_CONTEXT, &tok_max) : 1;
    c.cap = so.max_context;
    if (!st && !vkl_tokenizer_has_chat_template(c.tok))
        st = vkl_fail(ctx, VKL_ERR_NOT_FOUND, "the model's tokenizer has no chat template");
    if (!st) st = vkl_env_session_options(ctx, &so);
    if (!st) st = vkl_session_create(m, &so, &c.s);
    if (!st) st = vkl_text_stream_init(&c.reply, c.tok, CHAT_REPLY_TOKENS);
    c.hist = calloc(c.cap, sizeof(int32_t));
    if (!st && !c.hist) st = vkl_fail(ctx, VKL_ERR_OUT_OF_MEMORY, "out of memory");
    vkl_chat_message msgs[CHAT_MAX_MESSAGES];
    char *owned[CHAT_MAX_MESSAGES];
    size_t n = 0, cap = 0;
    char *line = NULL;
    while (!st && n + 2 <= CHAT_MAX_MESSAGES) {
        fputs("> ", stderr);
        ssize_t got = getline(&line, &cap, stdin);
        if (got < 0) break;
        line[strcspn(line, "\n")] = 0;
        if (!(owned[n] = strdup(line))) {
            st = vkl_fail(ctx, VKL_ERR_OUT_OF_MEMORY, "out of memory");
            break;
        }
        msgs[n] = (vkl_chat_message){"user", owned[n]};
        n++;
        char *reply = NULL;
        st = turn(&c, msgs, n, &reply);
        fputc('\n', stdout);
        if (st) break;
        owned[n] = strdup(reply ? reply : "");
        vkl_tokenizer_free_buffer(c.tok, reply);
        if (!owned[n]) {
            st = vkl_fail(ctx, VKL_ERR_OUT_OF_MEMORY, "out of memory");
            break;
        }
        msgs[n] = (vkl_chat_message){"assistant", owned[n]};
        n++;
    }
    int rc = st ? vkl_cli_fail(PROG, ctx, st) : 0;
    free(line);
    for (size_t i = 0; i < n; i++) free(owned[i]);
    free(c.hist);
    vkl_text_stream_free(&c.reply);
    vkl_session_free(c.s);
    vkl_tokenizer_free(c.tok);
    vkl_model_free(m);
    return rc;
}
