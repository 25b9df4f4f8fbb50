/* `vkllm perplexity MODEL.vkm TEXT`: mean negative log-likelihood of each
 * line (the model's tokenizer adds its special tokens; every token after the
 * first is scored), reported as perplexity per token and bits per byte.
 * A line longer than the context is scored whole, in windows (below), so
 * the bytes counted are always the bytes scored.
 * --window W scores the text as one stream in W-token windows instead: the
 * measure of how errors (a quantized KV cache) grow with context. */
#define _POSIX_C_SOURCE 200809L /* getline */
#include <math.h>
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

#define PROG "vkllm perplexity"
#define LINE_CONTEXT 512 /* per-line mode's window */

/* log softmax(row)[target], in double. */
static double log_prob(const float *row, size_t vocab, int32_t target) {
    double max = row[0], sum = 0;
    for (size_t i = 1; i < vocab; i++)
        if (row[i] > max) max = row[i];
    for (size_t i = 0; i < vocab; i++) sum += exp((double)row[i] - max);
    return (double)row[target] - max - log(sum);
}

typedef struct scorer {
    vkl_session *s;
    size_t vocab, window;
    int32_t bos;   /* -1: the tokenizer has none */
    float *logits; /* window * vocab */
    int32_t *win;  /* window ids */
    double nll;
    size_t tokens;
} scorer;

/* Scores ids[1..count) given everything before, in one session step
 * sequence. */
static vkl_status score(scorer *c, const int32_t *ids, size_t count) {
    vkl_session_reset(c->s);
    if (count < 2) return VKL_OK;
    vkl_status st = vkl_session_append_scored(c->s, ids, count, c->logits);
    for (size_t i = 0; !st && i + 1 < count; i++) c->nll -= log_prob(c->logits + i * c->vocab, c->vocab, ids[i + 1]);
    if (!st) c->tokens += count - 1;
    return st;
}

/* Every token of ids after the first, scored once: the first window is
 * ids[0..window); each later one is a lead token and the next window - 1
 * tokens. The lead is BOS (a fresh start, as the model was trained), or
 * without one the token before the window's first. */
static vkl_status score_stream(scorer *c, const int32_t *ids, size_t count) {
    size_t n = count < c->window ? count : c->window;
    vkl_status st = score(c, ids, n);
    for (size_t at = n; !st && at < count; at += n) {
        n = count - at < c->window - 1 ? count - at : c->window - 1;
        c->win[0] = c->bos >= 0 ? c->bos : ids[at - 1];
        memcpy(c->win + 1, ids + at, n * sizeof(int32_t));
        st = score(c, c->win, n + 1);
    }
    return st;
}

static int usage(FILE *f) {
    fprintf(f,
            "usage: vkllm perplexity MODEL.vkm TEXT [--lines N] [--window W] [--no-verify] [--check-finite]\n"
            "  per line (default): each line on its own, its special tokens added; a line\n"
            "              longer than %d tokens is scored whole in windows of %d (each\n"
            "              later window starts again from BOS), so every byte counted is scored\n"
            "  --lines N   only the first N lines that have a token to score, 1 to %u\n"
            "  --window W: the lines joined by newlines as one text, scored in windows of\n"
            "              W tokens (each starting with the BOS token): long-context error;\n"
            "              2 to %u\n"
            "  --no-verify     load without checking the weights against their checksum\n"
            "  --check-finite  debugging: name the first node whose output held a NaN/inf (slow)\n",
            LINE_CONTEXT, LINE_CONTEXT, UINT32_MAX, VKL_TOOL_MAX_TOKENS);
    return f == stdout ? 0 : VKL_EXIT_USAGE;
}

int vkl_cmd_perplexity(vkl_context *ctx, int argc, char **argv) {
    const char *model_path = NULL, *text_path = NULL, *v;
    size_t max_lines = 0, window = 0; /* 0: all lines; per-line mode */
    vkl_model_options mo;
    vkl_model_options_init(&mo);
    int check_finite = 0;
    for (int i = 1; i < argc; i++) {
        int rc = 0;
        if (vkl_cli_is_help(argv[i])) return usage(stdout);
        if (!strcmp(argv[i], "--lines") || !strcmp(argv[i], "--window")) {
            const char *opt = argv[i];
            if (!(v = vkl_cli_value(PROG, argc, argv, &i))) return VKL_EXIT_USAGE;
            if (!strcmp(opt, "--lines")) rc = vkl_cli_size(PROG, opt, v, 1, UINT32_MAX, &max_lines);
            else rc = vkl_cli_size(PROG, opt, v, 2, VKL_TOOL_MAX_TOKENS, &window);
            if (rc) return rc;
        } else if (!strcmp(argv[i], "--no-verify")) {
            mo.no_verify = 1;
        } else if (!strcmp(argv[i], "--check-finite")) {
            check_finite = 1;
        } else if (argv[i][0] != '-' && !model_path) {
            model_path = argv[i];
        } else if (argv[i][0] != '-' && !text_path) {
            text_path = argv[i];
        } else {
            return vkl_cli_usage_error(PROG, "unexpected argument '%s'", argv[i]);
        }
    }
    if (!model_path || !text_path) return vkl_cli_usage_error(PROG, "MODEL.vkm and TEXT are required");
    vkl_model *m = NULL;
    vkl_tokenizer *tok = NULL;
    vkl_session_options so;
    vkl_session_options_init(&so);
    so.max_context = window ? window : LINE_CONTEXT;
    so.prefill_chunk = so.max_context;
    so.check_finite = check_finite;
    scorer c = {.window = so.max_context, .bos = -1};
    vkl_status st = vkl_env_model_load(ctx, model_path, &mo, &m);
    if (!st) st = vkl_tokenizer_load_model(ctx, m, &tok);
    if (!st) st = vkl_session_create(m, &so, &c.s);
    c.vocab = m ? vkl_model_vocab_size(m) : 0;
    c.bos = tok ? vkl_tokenizer_bos_id(tok) : -1;
    if (!st) {
        c.logits = malloc(so.max_context * c.vocab * sizeof(float));
        c.win = malloc(so.max_context * sizeof(int32_t));
        if (!c.logits || !c.win) st = vkl_fail(ctx, VKL_ERR_OUT_OF_MEMORY, "out of memory for %zu-token windows",
                                               so.max_context);
    }
    if (!st && window && c.bos < 0)
        st = vkl_fail(ctx, VKL_ERR_UNSUPPORTED, "--window starts each window with BOS; the tokenizer has none");
    FILE *f = NULL;
    if (!st && !(f = fopen(text_path, "r"))) st = vkl_fail(ctx, VKL_ERR_IO, "cannot open %s", text_path);
    char *text = NULL; /* --window: BOS, then the lines joined */
    size_t bytes = 0, lines = 0, text_len = 0, cap = 0;
    char *line = NULL;
    ssize_t got;
    while (!st && (!max_lines || lines < max_lines) && (got = getline(&line, &cap, f)) >= 0) {
        size_t n = (size_t)got, before = c.tokens;
        if (n && line[n - 1] == '\n') n--;
        if (window) {
            char *grown = realloc(text, text_len + n + 2);
            if (!grown) {
                st = vkl_fail(ctx, VKL_ERR_OUT_OF_MEMORY, "out of memory reading %s", text_path);
                break;
            }
            text = grown;
            memcpy(text + text_len, line, n);
            text_len += n;
            text[text_len++] = '\n';
        } else {
            int32_t *ids = NULL;
            size_t count = 0;
            st = vkl_tokenizer_encode(tok, line, n, true, &ids, &count);
            if (!st) st = score_stream(&c, ids, count);
            if (ids) vkl_tokenizer_free_buffer(tok, ids);
        }
        if (window || c.tokens > before) bytes += n, lines++; /* per line: the scored ones */
    }
    if (f) fclose(f);
    if (!st && window && text) {
        int32_t *ids = NULL, *all = NULL;
        size_t count = 0;
        st = vkl_tokenizer_encode(tok, text, text_len, false, &ids, &count);
        if (!st && !(all = malloc((count + 1) * sizeof(int32_t))))
            st = vkl_fail(ctx, VKL_ERR_OUT_OF_MEMORY, "out of memory for %zu tokens", count);
        if (!st) {
            all[0] = c.bos;
            if (count) memcpy(all + 1, ids, count * sizeof(int32_t));
            st = score_stream(&c, all, count + 1);
        }
        free(all);
        if (ids) vkl_tokenizer_free_buffer(tok, ids);
    }
    int rc = 0;
    if (st) {
        rc = vkl_cli_fail(PROG, ctx, st);
    } else if (!c.tokens) {
        fprintf(stderr, PROG ": nothing was scored (no line of %s has two tokens)\n", text_path);
        rc = VKL_EXIT_FAILURE;
    } else {
        printf("%s on %s: %zu lines%s, %zu tokens: perplexity %.3f (%.4f nats/token), %.4f bits/byte\n", model_path,
               text_path, lines, window ? " as one text" : "", c.tokens, exp(c.nll / (double)c.tokens),
               c.nll / (double)c.tokens, c.nll / log(2.0) / (double)(bytes ? bytes : 1));
        if (window) printf("windows of %zu tokens\n", window);
    }
    free(line);
    free(text);
    free(c.logits);
    free(c.win);
    vkl_tokenizer_free(tok);
    vkl_session_free(c.s);
    vkl_model_free(m);
    return rc;
}
