/* `vkllm perplexity MODEL.vkm TEXT`: mean negative log-likelihood of each
 * line (the model's tokenizer adds its special tokens; every token after the
 * first is scored), reported as perplexity per token and bits per byte.
 * --window W scores the text as one stream in W-token windows instead: the
 * measure of how errors (a quantized KV cache) grow with context. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_run.h"
#include "vkllm.h"
#include "vkllm_tokenizer.h"

/* log softmax(row)[target], in double. */
static double log_prob(const float *row, size_t vocab, int32_t target) {
    double max = row[0], sum = 0;
    for (size_t i = 1; i < vocab; i++)
        if (row[i] > max) max = row[i];
    for (size_t i = 0; i < vocab; i++) sum += exp((double)row[i] - max);
    return (double)row[target] - max - log(sum);
}

/* Scores ids[1..count) given everything before, in one session step
 * sequence; adds to *nll and *tokens. */
static vkl_status score(vkl_session *s, const int32_t *ids, size_t count, size_t vocab, float *logits, double *nll,
                        size_t *tokens) {
    vkl_session_reset(s);
    if (count < 2) return VKL_OK;
    vkl_status st = vkl_session_append_scored(s, ids, count, logits);
    for (size_t i = 0; !st && i + 1 < count; i++) *nll -= log_prob(logits + i * vocab, vocab, ids[i + 1]);
    if (!st) *tokens += count - 1;
    return st;
}

/* The text as one token stream, scored in windows of BOS + (window - 1)
 * stream tokens. */
static vkl_status score_windows(vkl_session *s, vkl_tokenizer *tok, int32_t bos, const char *text, size_t len,
                                size_t window, size_t vocab, float *logits, double *nll, size_t *tokens) {
    int32_t *ids = NULL, *win = malloc(window * sizeof(int32_t));
    size_t count = 0;
    vkl_status st = win ? vkl_tokenizer_encode(tok, text, len, false, &ids, &count) : VKL_ERR_OUT_OF_MEMORY;
    for (size_t at = 0; !st && at < count; at += window - 1) {
        size_t n = count - at < window - 1 ? count - at : window - 1;
        win[0] = bos;
        memcpy(win + 1, ids + at, n * sizeof(int32_t));
        st = score(s, win, n + 1, vocab, logits, nll, tokens);
    }
    if (ids) vkl_tokenizer_free_buffer(tok, ids);
    free(win);
    return st;
}

static int usage(void) {
    fprintf(stderr, "usage: vkllm perplexity MODEL.vkm TEXT [--lines N] [--window W]\n"
                    "  per line (default): each line on its own, its special tokens added\n"
                    "  --window W: the lines joined by newlines as one text, scored in windows of\n"
                    "              W tokens (each starting with the BOS token): long-context error\n");
    return 2;
}

int vkl_cmd_perplexity(vkl_context *ctx, int argc, char **argv) {
    if (argc < 3) return usage();
    long max_lines = -1, window = 0;
    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--lines") && i + 1 < argc) max_lines = strtol(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--window") && i + 1 < argc) window = strtol(argv[++i], NULL, 10);
        else return usage();
    }
    if (window == 1 || window < 0) return usage();
    FILE *f = fopen(argv[2], "r");
    if (!f) {
        fprintf(stderr, "vkllm perplexity: cannot open %s\n", argv[2]);
        return 1;
    }
    vkl_model *m = NULL;
    vkl_session *s = NULL;
    vkl_tokenizer *tok = NULL;
    vkl_session_options so;
    vkl_session_options_init(&so);
    so.max_context = window ? (size_t)window : 512;
    so.prefill_chunk = so.max_context;
    vkl_status st = vkl_model_load(ctx, argv[1], NULL, &m);
    if (!st) st = vkl_tokenizer_load_model(ctx, m, &tok);
    if (!st) st = vkl_session_create(m, &so, &s);
    size_t vocab = m ? vkl_model_vocab_size(m) : 0;
    float *logits = st ? NULL : malloc(so.max_context * vocab * sizeof(float));
    int32_t bos = tok ? vkl_tokenizer_bos_id(tok) : -1;
    const char *fault = !st && !logits ? "out of memory"
                        : !st && window && bos < 0 ? "--window starts each window with BOS; the tokenizer has none"
                                                   : NULL;
    char *text = NULL; /* --window: the lines joined */
    double nll = 0;
    size_t tokens = 0, bytes = 0, lines = 0, text_len = 0;
    char line[65536];
    while (!st && !fault && (max_lines < 0 || (long)lines < max_lines) && fgets(line, sizeof(line), f)) {
        size_t n = strcspn(line, "\n"), before = tokens;
        line[n] = 0;
        if (window) {
            char *grown = realloc(text, text_len + n + 2);
            if (!grown) {
                fault = "out of memory";
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
            if (!st && count > so.max_context) count = so.max_context;
            if (!st) st = score(s, ids, count, vocab, logits, &nll, &tokens);
            if (ids) vkl_tokenizer_free_buffer(tok, ids);
        }
        if (window || tokens > before) bytes += n, lines++; /* per line: the scored ones */
    }
    fclose(f);
    if (!st && !fault && window && text)
        st = score_windows(s, tok, bos, text, text_len, (size_t)window, vocab, logits, &nll, &tokens);
    int rc = 0;
    if (st || fault || !tokens) {
        fprintf(stderr, "vkllm perplexity: %s\n", st ? vkl_context_error(ctx) : fault ? fault : "nothing was scored");
        rc = 1;
    } else {
        printf("%s on %s: %zu lines%s, %zu tokens: perplexity %.3f (%.4f nats/token), %.4f bits/byte\n", argv[1],
               argv[2], lines, window ? " as one text" : "", tokens, exp(nll / (double)tokens), nll / (double)tokens,
               nll / log(2.0) / (double)(bytes ? bytes : 1));
        if (window) printf("windows of %ld tokens\n", window);
    }
    free(text);
    free(logits);
    vkl_tokenizer_free(tok);
    vkl_session_free(s);
    vkl_model_free(m);
    return rc;
}
