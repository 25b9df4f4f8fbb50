/* `vkllm perplexity MODEL.vkm TEXT`: mean negative log-likelihood of each
 * line (the model's tokenizer adds its special tokens; every token after the
 * first is scored), reported as perplexity per token and bits per byte. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_run.h"
#include "stream.h"
#include "tokenizer/tokenizer.h"
#include "vkllm.h"

/* log softmax(row)[target], in double. */
static double log_prob(const float *row, size_t vocab, int32_t target) {
    double max = row[0], sum = 0;
    for (size_t i = 1; i < vocab; i++)
        if (row[i] > max) max = row[i];
    for (size_t i = 0; i < vocab; i++) sum += exp((double)row[i] - max);
    return (double)row[target] - max - log(sum);
}

int vkl_cmd_perplexity(vkl_context *ctx, int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: vkllm perplexity MODEL.vkm TEXT [--lines N]\n");
        return 2;
    }
    long max_lines = argc >= 5 && !strcmp(argv[3], "--lines") ? strtol(argv[4], NULL, 10) : -1;
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
    so.max_context = 512;
    so.prefill_chunk = 512;
    vkl_status st = vkl_model_load(ctx, argv[1], NULL, &m);
    if (!st) st = vkl_tool_model_tokenizer(ctx, m, &tok);
    if (!st) st = vkl_session_create(m, &so, &s);
    size_t vocab = m ? vkl_model_vocab_size(m) : 0;
    float *logits = st ? NULL : malloc(so.max_context * vocab * sizeof(float));
    double nll = 0;
    size_t tokens = 0, bytes = 0, lines = 0;
    char line[65536];
    while (!st && logits && (max_lines < 0 || (long)lines < max_lines) && fgets(line, sizeof(line), f)) {
        size_t n = strcspn(line, "\n");
        line[n] = 0;
        int32_t *ids = NULL;
        size_t count = 0;
        st = vkl_tokenizer_encode(tok, line, n, true, &ids, &count);
        if (!st && count > so.max_context) count = so.max_context;
        vkl_session_reset(s);
        if (!st && count >= 2) st = vkl_session_append_scored(s, ids, count, logits);
        for (size_t i = 0; !st && i + 1 < count; i++) nll -= log_prob(logits + i * vocab, vocab, ids[i + 1]);
        if (!st && count >= 2) tokens += count - 1, bytes += n, lines++;
        if (ids) vkl_tokenizer_free_buffer(tok, ids);
    }
    fclose(f);
    int rc = 0;
    if (st) {
        fprintf(stderr, "vkllm perplexity: %s\n", vkl_context_error(ctx));
        rc = 1;
    } else {
        printf("%s on %s: %zu lines, %zu tokens: perplexity %.3f (%.4f nats/token), %.4f bits/byte\n", argv[1],
               argv[2], lines, tokens, exp(nll / (double)tokens), nll / (double)tokens,
               nll / log(2.0) / (double)(bytes ? bytes : 1));
    }
    free(logits);
    vkl_tokenizer_free(tok);
    vkl_session_free(s);
    vkl_model_free(m);
    return rc;
}
