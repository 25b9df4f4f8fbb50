/* Encoding throughput on the parity corpus: the lines of a .jsonl file
 * ({"text": ...}) repeated to at least 1 MB, encoded line by line and as one
 * text, then decoded. Prints tokens/s and MB/s (the figures in docs/perf.md).
 * Usage: bench_tokenizer TOKENIZER CORPUS.jsonl [MIN_BYTES] */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tokenizer/tokenizer.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: bench_tokenizer TOKENIZER CORPUS.jsonl [MIN_BYTES]\n");
        return 2;
    }
    size_t min_bytes = argc > 3 ? (size_t)strtoull(argv[3], NULL, 10) : 1000000;
    vkl_context *ctx;
    if (vkl_context_create(NULL, &ctx)) return 1;
    double t0 = now();
    vkl_tokenizer *t;
    if (vkl_tokenizer_load_path(ctx, argv[1], &t)) {
        fprintf(stderr, "bench_tokenizer: %s\n", vkl_context_error(ctx));
        return 1;
    }
    double load_s = now() - t0;

    /* corpus lines, as one buffer with offsets */
    FILE *f = fopen(argv[2], "rb");
    if (!f) {
        fprintf(stderr, "bench_tokenizer: cannot open %s\n", argv[2]);
        return 1;
    }
    char *line = NULL, *text = NULL;
    size_t cap = 0, n_text = 0, text_cap = 0, n_lines = 0, lines_cap = 0;
    size_t *starts = NULL;
    ssize_t got;
    int rc = 0;
    while ((got = getline(&line, &cap, f)) > 0) {
        cJSON *j = cJSON_ParseWithLength(line, (size_t)got);
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, "text");
        if (cJSON_IsString(s)) {
            size_t l = strlen(s->valuestring);
            if (n_text + l + 2 > text_cap) {
                text_cap = (n_text + l + 2) * 2;
                text = realloc(text, text_cap);
            }
            if (n_lines + 2 > lines_cap) {
                lines_cap = (n_lines + 2) * 2;
                starts = realloc(starts, lines_cap * sizeof(size_t));
            }
            if (!text || !starts) return 1;
            starts[n_lines++] = n_text;
            memcpy(text + n_text, s->valuestring, l);
            n_text += l;
            text[n_text++] = '\n';
        }
        cJSON_Delete(j);
    }
    fclose(f);
    free(line);
    if (!n_lines) return 1;
    starts[n_lines] = n_text;
    size_t reps = (min_bytes + n_text - 1) / n_text;

    /* per line: what `vkllm tokenize --jsonl` does */
    size_t tokens = 0, bytes = 0;
    t0 = now();
    for (size_t r = 0; r < reps && !rc; r++)
        for (size_t i = 0; i < n_lines && !rc; i++) {
            int32_t *ids;
            size_t n, len = starts[i + 1] - starts[i] - 1;
            if (vkl_tokenizer_encode(t, text + starts[i], len, false, &ids, &n)) rc = 1;
            tokens += n;
            bytes += len;
            vkl_tokenizer_free_buffer(t, ids);
        }
    double line_s = now() - t0;

    /* one text of reps copies */
    char *big = malloc(n_text * reps + 1);
    if (!big) return 1;
    for (size_t r = 0; r < reps; r++) memcpy(big + r * n_text, text, n_text);
    int32_t *ids = NULL;
    size_t n_big = 0;
    t0 = now();
    if (!rc && vkl_tokenizer_encode(t, big, n_text * reps, false, &ids, &n_big)) rc = 1;
    double big_s = now() - t0;
    char *dec = NULL;
    size_t dec_len = 0;
    t0 = now();
    if (!rc && vkl_tokenizer_decode(t, ids, n_big, false, &dec, &dec_len)) rc = 1;
    double dec_s = now() - t0;
    if (rc) {
        fprintf(stderr, "bench_tokenizer: %s\n", vkl_context_error(ctx));
        return 1;
    }
    printf("%s: load %.3f s\n", argv[1], load_s);
    printf("  per line : %zu lines x %zu, %.2f MB, %zu tokens in %.3f s: %.0f tokens/s, %.2f MB/s\n", n_lines, reps,
           (double)bytes / 1e6, tokens, line_s, (double)tokens / line_s, (double)bytes / 1e6 / line_s);
    printf("  one text : %.2f MB, %zu tokens in %.3f s: %.0f tokens/s, %.2f MB/s\n", (double)(n_text * reps) / 1e6,
           n_big, big_s, (double)n_big / big_s, (double)(n_text * reps) / 1e6 / big_s);
    printf("  decode   : %zu tokens in %.3f s: %.0f tokens/s (round trip %s)\n", n_big, dec_s, (double)n_big / dec_s,
           dec_len == n_text * reps && !memcmp(dec, big, dec_len) ? "exact" : "differs");
    vkl_tokenizer_free_buffer(t, ids);
    vkl_tokenizer_free_buffer(t, dec);
    vkl_tokenizer_free(t);
    vkl_context_destroy(ctx);
    free(big);
    free(text);
    free(starts);
    return 0;
}
