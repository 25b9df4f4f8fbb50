/* The public tokenizer API (vkllm_tokenizer.h) as an app sees it: only the
 * public headers, linked against libvkllm itself (so in a shared build only
 * its exported symbols). The tokenizer stored in the bundled model encodes
 * the held-out text to the ids Hugging Face gave (model/heldout.ids.txt) and
 * equal to the tokenizer loaded from model/tokenizer/; decoding round-trips;
 * streamed decoding joins to the full decode on every fixture tokenizer;
 * chat templates render; bad input is an error status with a message.
 * (tests/common/check.h needs internal headers, hence the small CHECK here.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vkllm.h"
#include "vkllm_tokenizer.h"

static int failures, checks;

#define CHECK(cond)                                                          \
    do {                                                                     \
        checks++;                                                            \
        if (!(cond)) {                                                       \
            failures++;                                                      \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
        }                                                                    \
    } while (0)

/* st is `want` and ctx's message contains `needle`. */
#define CHECK_ERR(ctx, st, want, needle)                                                                   \
    do {                                                                                                   \
        vkl_status got_ = (st);                                                                            \
        checks++;                                                                                          \
        if (got_ != (want) || !strstr(vkl_context_error(ctx), needle)) {                                   \
            failures++;                                                                                    \
            fprintf(stderr, "%s:%d: %s: got %s \"%s\", want %s with \"%s\"\n", __FILE__, __LINE__, #st,      \
                    vkl_status_name(got_), vkl_context_error(ctx), vkl_status_name(want), needle);         \
        }                                                                                                  \
    } while (0)

#define CHECK_OK(ctx, st) CHECK_ERR(ctx, st, VKL_OK, "")

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0) n = ftell(f);
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1))) {
        if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
            free(buf);
            buf = NULL;
        } else {
            buf[n] = 0;
        }
    }
    fclose(f);
    return buf;
}

static void test_version(void) {
    CHECK(vkl_version() == VKLLM_VERSION);
    CHECK(!strcmp(vkl_version_string(), VKLLM_VERSION_STRING));
    char want[32];
    snprintf(want, sizeof(want), "%d.%d.%d", VKLLM_VERSION_MAJOR, VKLLM_VERSION_MINOR, VKLLM_VERSION_PATCH);
    CHECK(!strcmp(want, VKLLM_VERSION_STRING));
}

static bool ends_incomplete(const char *text, size_t n) {
    return n >= 3 && !memcmp(text + n - 3, "\xEF\xBF\xBD", 3);
}

/* decode(context) + the streamed pieces of ids[k..n) == decode(ids): with
 * the first k ids as the stream's context, for k = 0 and k = n / 2. A
 * character the context leaves incomplete is streamed: then the context's
 * text is that of its ids before the character (byte fallback decodes a
 * whole run of bytes ending in an incomplete character as U+FFFD). */
static void check_stream(vkl_context *ctx, vkl_tokenizer *t, const int32_t *ids, size_t n, const char *label) {
    char *full = NULL, *head = NULL;
    size_t full_len = 0, head_len = 0;
    vkl_decode_stream *s = NULL;
    CHECK_OK(ctx, vkl_tokenizer_decode(t, ids, n, true, &full, &full_len));
    CHECK_OK(ctx, vkl_decode_stream_create(t, true, &s));
    char *joined = malloc(full_len + 64);
    for (size_t k = 0; full && s && joined && k <= n / 2; k += n / 2 ? n / 2 : 1) {
        for (size_t m = k + 1; m-- > 0 && m + 4 > k;) {
            vkl_tokenizer_free_buffer(t, head);
            head = NULL;
            CHECK_OK(ctx, vkl_tokenizer_decode(t, ids, m, true, &head, &head_len));
            if (!head || !ends_incomplete(head, head_len)) break;
        }
        CHECK_OK(ctx, vkl_decode_stream_set_context(s, ids, k));
        size_t len = head ? head_len : 0;
        bool fits = len <= full_len;
        if (head && fits) memcpy(joined, head, len);
        vkl_tokenizer_free_buffer(t, head);
        head = NULL;
        for (size_t i = k; i <= n; i++) {
            const char *piece;
            size_t piece_len;
            vkl_status st = i < n ? vkl_decode_stream_push(s, ids[i], &piece, &piece_len)
                                  : vkl_decode_stream_flush(s, &piece, &piece_len);
            CHECK_OK(ctx, st);
            if (st) break;
            CHECK(strlen(piece) == piece_len);
            fits = fits && len + piece_len <= full_len;
            if (fits) memcpy(joined + len, piece, piece_len);
            len += piece_len;
        }
        bool same = fits && len == full_len && !memcmp(joined, full, full_len);
        CHECK(same);
        if (!same)
            fprintf(stderr, "%s (context %zu ids): streamed \"%.*s\", decoded \"%s\"\n", label, k,
                    (int)(fits ? len : 0), joined, full);
        if (n == 0) break;
    }
    free(joined);
    vkl_decode_stream_free(s);
    vkl_tokenizer_free_buffer(t, full);
}

/* The bundled model's tokenizer: the ids HF computed, round trips, streams. */
static void test_bundled(vkl_context *ctx) {
    vkl_model *m = NULL;
    vkl_tokenizer *from_model = NULL, *from_dir = NULL;
    CHECK_OK(ctx, vkl_model_load(ctx, VKL_SOURCE_DIR "/model/vkllm-kjv.vkm", NULL, &m));
    CHECK_OK(ctx, vkl_tokenizer_load_model(ctx, m, &from_model));
    vkl_model_free(m); /* the tokenizer keeps what it needs */
    CHECK_OK(ctx, vkl_tokenizer_load_path(ctx, VKL_SOURCE_DIR "/model/tokenizer", &from_dir));
    char *text = read_text(VKL_SOURCE_DIR "/model/data/heldout.txt");
    char *want = read_text(VKL_SOURCE_DIR "/model/heldout.ids.txt");
    CHECK(from_model && from_dir && text && want);
    if (!from_model || !from_dir || !text || !want) goto done;
    CHECK(vkl_tokenizer_bos_id(from_model) == 1 && vkl_tokenizer_eos_id(from_model) == 2);
    CHECK(vkl_tokenizer_is_special(from_model, 1) && !vkl_tokenizer_is_special(from_model, 299));
    CHECK(vkl_tokenizer_vocab_size(from_model) == vkl_tokenizer_vocab_size(from_dir));
    size_t tl = 0;
    const char *tok = vkl_tokenizer_id_to_token(from_model, 1, &tl);
    CHECK(tok && tl == 3 && !memcmp(tok, "<s>", 3) && vkl_tokenizer_token_to_id(from_model, "<s>", 3) == 1);

    char *line = text, *want_line = want;
    size_t lines = 0;
    while (*line && lines < 200) {
        size_t len = strcspn(line, "\n"), want_len = strcspn(want_line, "\n");
        int32_t *a = NULL, *b = NULL;
        size_t na = 0, nb = 0;
        CHECK_OK(ctx, vkl_tokenizer_encode(from_model, line, len, true, &a, &na));
        CHECK_OK(ctx, vkl_tokenizer_encode(from_dir, line, len, true, &b, &nb));
        CHECK(na == nb && (!na || !memcmp(a, b, na * sizeof(int32_t))));
        /* the ids Hugging Face computed for the line */
        char *p = want_line, *end = want_line + want_len;
        size_t k = 0;
        bool same = true;
        while (p < end) {
            char *next;
            long v = strtol(p, &next, 10);
            if (next == p) break;
            same = same && k < na && a[k] == v;
            k++;
            p = next;
        }
        CHECK(same && k == na);
        char *back = NULL;
        size_t back_len = 0;
        CHECK_OK(ctx, vkl_tokenizer_decode(from_model, a, na, true, &back, &back_len));
        CHECK(back && back_len == len && !memcmp(back, line, len));
        if (lines < 20) check_stream(ctx, from_model, a, na, "bundled");
        vkl_tokenizer_free_buffer(from_model, back);
        vkl_tokenizer_free_buffer(from_model, a);
        vkl_tokenizer_free_buffer(from_dir, b);
        line += len + (line[len] == '\n');
        want_line += want_len + (want_line[want_len] == '\n');
        lines++;
    }
    CHECK(lines == 200);

    /* the model's chat template: bos, then the messages one a line */
    const vkl_chat_message chat[2] = {{"user", "In the beginning"}, {"assistant", "God created"}};
    char *out = NULL;
    size_t out_len = 0;
    CHECK(vkl_tokenizer_has_chat_template(from_model));
    CHECK_OK(ctx, vkl_tokenizer_apply_chat_template(from_model, chat, 2, NULL, &out, &out_len));
    CHECK(out && !strcmp(out, "<s>In the beginning\nGod created") && out_len == strlen(out));
    vkl_tokenizer_free_buffer(from_model, out);
done:
    free(text);
    free(want);
    vkl_tokenizer_free(from_model);
    vkl_tokenizer_free(from_dir);
}

/* Streams over every fixture tokenizer (byte-level, byte fallback,
 * Metaspace, Strip, Unigram) on text with multi-byte characters. */
static void test_streams(vkl_context *ctx) {
    static const char *const names[] = {"gemma_style_small", "gpt2_style_small", "llama2_small", "llama3_small",
                                        "mix_small", "qwen3_small", "unigram_metaspace_small"};
    static const char *const texts[] = {
        "Hello world, this is a test.",
        " leading space and  two spaces",
        "naïve café — 日本語のテキスト ✓ 🦙🦙 end",
        "line one\nline two\n\n\ttabbed",
        "x",
        "",
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char path[512];
        snprintf(path, sizeof(path), "%s/tests/tokenizer/small/%s.json", VKL_SOURCE_DIR, names[i]);
        vkl_tokenizer *t = NULL;
        CHECK_OK(ctx, vkl_tokenizer_load_path(ctx, path, &t));
        for (size_t k = 0; t && k < sizeof(texts) / sizeof(texts[0]); k++) {
            int32_t *ids = NULL;
            size_t n = 0;
            CHECK_OK(ctx, vkl_tokenizer_encode(t, texts[k], strlen(texts[k]), false, &ids, &n));
            char label[600];
            snprintf(label, sizeof(label), "%s, text %zu", names[i], k);
            check_stream(ctx, t, ids, n, label);
            vkl_tokenizer_free_buffer(t, ids);
        }
        vkl_tokenizer_free(t);
    }
}

/* A template that uses add_generation_prompt and a variable of its own. */
static void test_chat_options(vkl_context *ctx) {
    char *json = read_text(VKL_SOURCE_DIR "/tests/tokenizer/small/gpt2_style_small.json");
    static const char config[] =
        "{\"bos_token\": \"<s>\", \"chat_template\": \"{{ bos_token }}{% for m in messages %}[{{ m.role }}]"
        "{{ m.content }}{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}"
        "{% if greeting is defined %}{{ greeting }}{% endif %}\"}";
    vkl_tokenizer *t = NULL;
    CHECK(json != NULL);
    if (json) CHECK_OK(ctx, vkl_tokenizer_load_json(ctx, json, strlen(json), config, strlen(config), &t));
    free(json);
    if (!t) return;
    const vkl_chat_message msgs[2] = {{"system", "Be brief."}, {"user", "Hi"}};
    vkl_chat_options o;
    vkl_chat_options_init(&o);
    CHECK(o.add_generation_prompt && !o.variables_json);
    char *out = NULL;
    CHECK_OK(ctx, vkl_tokenizer_apply_chat_template(t, msgs, 2, &o, &out, NULL));
    CHECK(out && !strcmp(out, "<s>[system]Be brief.[user]Hi[assistant]"));
    vkl_tokenizer_free_buffer(t, out);
    o.add_generation_prompt = false;
    o.variables_json = "{\"greeting\": \"!\", \"messages\": \"ignored\", \"add_generation_prompt\": true}";
    CHECK_OK(ctx, vkl_tokenizer_apply_chat_template(t, msgs, 1, &o, &out, NULL));
    CHECK(out && !strcmp(out, "<s>[system]Be brief.!"));
    vkl_tokenizer_free_buffer(t, out);

    /* bad input: a status and a message naming what is wrong */
    o.variables_json = "[1, 2]";
    CHECK_ERR(ctx, vkl_tokenizer_apply_chat_template(t, msgs, 2, &o, &out, NULL), VKL_ERR_FORMAT, "JSON object");
    CHECK(out == NULL);
    const vkl_chat_message bad[2] = {{"user", "fine"}, {"user", NULL}};
    CHECK_ERR(ctx, vkl_tokenizer_apply_chat_template(t, bad, 2, NULL, &out, NULL), VKL_ERR_INVALID_ARGUMENT,
              "message 1 has a NULL content");
    CHECK_ERR(ctx, vkl_tokenizer_apply_chat_template(t, NULL, 1, NULL, &out, NULL), VKL_ERR_INVALID_ARGUMENT,
              "NULL argument");
    vkl_tokenizer_free(t);
}

static void test_errors(vkl_context *ctx) {
    vkl_tokenizer *t = (vkl_tokenizer *)&t; /* must come back NULL */
    CHECK_ERR(ctx, vkl_tokenizer_load_path(ctx, VKL_SOURCE_DIR "/no/such/tokenizer", &t), VKL_ERR_NOT_FOUND,
              "no/such/tokenizer");
    CHECK(t == NULL);
    CHECK_ERR(ctx, vkl_tokenizer_load_json(ctx, "{\"model\": ", 10, NULL, 0, &t), VKL_ERR_FORMAT, "");
    CHECK(t == NULL && vkl_context_error(ctx)[0]);
    CHECK_ERR(ctx, vkl_tokenizer_load_model(ctx, NULL, &t), VKL_ERR_INVALID_ARGUMENT, "vkl_tokenizer_load_model");

    char *json = read_text(VKL_SOURCE_DIR "/tests/tokenizer/small/llama3_small.json");
    CHECK(json != NULL);
    if (json) CHECK_OK(ctx, vkl_tokenizer_load_json(ctx, json, strlen(json), NULL, 0, &t));
    free(json);
    if (!t) return;
    size_t n = 0;
    CHECK_ERR(ctx, vkl_tokenizer_encode(t, "abc", 3, false, NULL, &n), VKL_ERR_INVALID_ARGUMENT, "vkl_tokenizer_encode");
    char *text = NULL;
    CHECK_ERR(ctx, vkl_tokenizer_decode(t, NULL, 2, false, &text, NULL), VKL_ERR_INVALID_ARGUMENT,
              "vkl_tokenizer_decode");
    /* no tokenizer_config.json: no template */
    CHECK(!vkl_tokenizer_has_chat_template(t));
    const vkl_chat_message one = {"user", "hi"};
    CHECK_ERR(ctx, vkl_tokenizer_apply_chat_template(t, &one, 1, NULL, &text, NULL), VKL_ERR_NOT_FOUND,
              "no chat template");
    CHECK(text == NULL);
    vkl_decode_stream *s = NULL;
    CHECK_ERR(ctx, vkl_decode_stream_create(t, true, NULL), VKL_ERR_INVALID_ARGUMENT, "vkl_decode_stream_create");
    CHECK_OK(ctx, vkl_decode_stream_create(t, true, &s));
    CHECK_ERR(ctx, vkl_decode_stream_push(s, 1, NULL, NULL), VKL_ERR_INVALID_ARGUMENT, "vkl_decode_stream_push");
    CHECK_ERR(ctx, vkl_decode_stream_set_context(s, NULL, 3), VKL_ERR_INVALID_ARGUMENT,
              "vkl_decode_stream_set_context");
    /* an id outside the vocabulary decodes to nothing, as in HF */
    const char *piece = NULL;
    size_t len = 1;
    CHECK_OK(ctx, vkl_decode_stream_push(s, 1 << 30, &piece, &len));
    CHECK(piece && len == 0);
    vkl_decode_stream_free(s);
    vkl_tokenizer_free(t);
}

int main(void) {
    vkl_context *ctx = NULL;
    if (vkl_context_create(NULL, &ctx) != VKL_OK) return 1;
    test_version();
    test_bundled(ctx);
    test_streams(ctx);
    test_chat_options(ctx);
    test_errors(ctx);
    vkl_context_destroy(ctx);
    printf("test_tokenizer_api: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
