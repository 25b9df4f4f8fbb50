/* `vkllm tokenize TOKENIZER [--jsonl FILE | -p TEXT]` and
 * `vkllm chat-template DIR --json FILE`. The --jsonl output is one line per
 * input line: {"ids": [...], "ids_with_special": [...], "decoded": "..."},
 * the fields HF's Tokenizer.encode/decode give (see tests/tokenizer/README.md). */
#define _POSIX_C_SOURCE 200809L /* getline */
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "cmd_tokenize.h"
#include "tokenizer/tokenizer.h"

static int tokenize_usage(FILE *f) {
    fprintf(f,
            "usage: vkllm tokenize TOKENIZER [--jsonl FILE | -p TEXT [--no-special] [--tokens]]\n"
            "  TOKENIZER     a tokenizer.json, or a folder with tokenizer.json (and tokenizer_config.json)\n"
            "  --jsonl FILE  read lines {\"text\": ...} (FILE - is stdin); write per line\n"
            "                {\"ids\": [...], \"ids_with_special\": [...], \"decoded\": \"...\"}\n"
            "                (ids without / with the post-processor's special tokens; decoded = decode(ids))\n"
            "  -p TEXT       print the ids of TEXT (with special tokens) as a JSON array\n"
            "  --no-special  with -p: without the post-processor's special tokens\n"
            "  --tokens      with -p: one line per token: id and token string\n");
    return f == stderr ? 2 : 0;
}

static void put_json_string(FILE *f, const char *s, size_t n) {
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        case '\b': fputs("\\b", f); break;
        case '\f': fputs("\\f", f); break;
        default:
            if (c < 0x20) fprintf(f, "\\u%04x", c);
            else fputc(c, f);
        }
    }
    fputc('"', f);
}

static void put_ids(FILE *f, const int32_t *ids, size_t n) {
    fputc('[', f);
    for (size_t i = 0; i < n; i++) fprintf(f, i ? ", %d" : "%d", ids[i]);
    fputc(']', f);
}

/* One corpus line -> one output line. */
static vkl_status tokenize_line(vkl_tokenizer *t, const char *text, size_t len, FILE *out) {
    int32_t *ids = NULL, *ids_sp = NULL;
    size_t n = 0, n_sp = 0, dlen = 0;
    char *dec = NULL;
    vkl_status st = vkl_tokenizer_encode(t, text, len, false, &ids, &n);
    if (!st) st = vkl_tokenizer_encode(t, text, len, true, &ids_sp, &n_sp);
    if (!st) st = vkl_tokenizer_decode(t, ids, n, false, &dec, &dlen);
    if (!st) {
        fputs("{\"ids\": ", out);
        put_ids(out, ids, n);
        fputs(", \"ids_with_special\": ", out);
        put_ids(out, ids_sp, n_sp);
        fputs(", \"decoded\": ", out);
        put_json_string(out, dec, dlen);
        fputs("}\n", out);
    }
    vkl_tokenizer_free_buffer(t, ids);
    vkl_tokenizer_free_buffer(t, ids_sp);
    vkl_tokenizer_free_buffer(t, dec);
    return st;
}

static int run_jsonl(vkl_context *ctx, vkl_tokenizer *t, const char *path) {
    FILE *in = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!in) {
        fprintf(stderr, "vkllm tokenize: cannot open %s\n", path);
        return 1;
    }
    char *line = NULL;
    size_t cap = 0, lineno = 0;
    ssize_t got;
    int rc = 0;
    while (!rc && (got = getline(&line, &cap, in)) >= 0) {
        lineno++;
        size_t n = (size_t)got;
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) n--;
        if (!n) continue;
        cJSON *j = cJSON_ParseWithLength(line, n);
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(j, "text");
        if (!cJSON_IsString(text) || !text->valuestring) {
            fprintf(stderr, "vkllm tokenize: %s:%zu: expected {\"text\": \"...\"}\n", path, lineno);
            rc = 1;
        } else if (tokenize_line(t, text->valuestring, strlen(text->valuestring), stdout)) {
            fprintf(stderr, "vkllm tokenize: %s:%zu: %s\n", path, lineno, vkl_context_error(ctx));
            rc = 1;
        }
        cJSON_Delete(j);
    }
    free(line);
    if (in != stdin) fclose(in);
    if (fflush(stdout) != 0) rc = 1;
    return rc;
}

int vkl_cmd_tokenize(vkl_context *ctx, int argc, char **argv) {
    const char *tok_path = NULL, *jsonl = NULL, *prompt = NULL;
    bool special = true, tokens = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--jsonl") && i + 1 < argc) jsonl = argv[++i];
        else if (!strcmp(argv[i], "-p") && i + 1 < argc) prompt = argv[++i];
        else if (!strcmp(argv[i], "--no-special")) special = false;
        else if (!strcmp(argv[i], "--tokens")) tokens = true;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return tokenize_usage(stdout);
        else if (argv[i][0] != '-' && !tok_path) tok_path = argv[i];
        else {
            fprintf(stderr, "vkllm tokenize: unexpected argument '%s'\n", argv[i]);
            return tokenize_usage(stderr);
        }
    }
    if (!tok_path || (!jsonl == !prompt)) return tokenize_usage(stderr);
    vkl_tokenizer *t;
    vkl_status st = vkl_tokenizer_load_path(ctx, tok_path, &t);
    if (st) return vkl_cli_fail("vkllm tokenize", ctx, st);
    int rc = 0;
    if (jsonl) {
        rc = run_jsonl(ctx, t, jsonl);
    } else {
        int32_t *ids = NULL;
        size_t n = 0;
        if ((st = vkl_tokenizer_encode(t, prompt, strlen(prompt), special, &ids, &n))) {
            rc = vkl_cli_fail("vkllm tokenize", ctx, st);
        } else if (tokens) {
            for (size_t i = 0; i < n; i++) {
                size_t l = 0;
                const char *s = vkl_tokenizer_id_to_token(t, ids[i], &l);
                printf("%d\t", ids[i]);
                put_json_string(stdout, s ? s : "", s ? l : 0);
                putchar('\n');
            }
        } else {
            put_ids(stdout, ids, n);
            putchar('\n');
        }
        vkl_tokenizer_free_buffer(t, ids);
    }
    vkl_tokenizer_free(t);
    return rc;
}

/* ---- chat-template ---------------------------------------------------------- */

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 65536;
            char *p = realloc(buf, cap);
            if (!p) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = p;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) break;
    }
    bool err = ferror(f);
    fclose(f);
    if (err) {
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

static int chat_usage(FILE *f) {
    fprintf(f,
            "usage: vkllm chat-template DIR --json FILE\n"
            "  DIR        a folder with tokenizer_config.json (or that file itself)\n"
            "  --json FILE  {\"messages\": [{\"role\": ..., \"content\": ...}, ...],\n"
            "               \"add_generation_prompt\": bool, ...}; every key is a template variable\n"
            "Prints the rendered text exactly (no newline added).\n");
    return f == stderr ? 2 : 0;
}

int vkl_cmd_chat_template(vkl_context *ctx, int argc, char **argv) {
    const char *dir = NULL, *json_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return chat_usage(stdout);
        else if (argv[i][0] != '-' && !dir) dir = argv[i];
        else {
            fprintf(stderr, "vkllm chat-template: unexpected argument '%s'\n", argv[i]);
            return chat_usage(stderr);
        }
    }
    if (!dir || !json_path) return chat_usage(stderr);
    struct stat sb;
    size_t dl = strlen(dir);
    char *cfg_path = malloc(dl + 32);
    if (!cfg_path) return 1;
    if (stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode)) snprintf(cfg_path, dl + 32, "%s/tokenizer_config.json", dir);
    else snprintf(cfg_path, dl + 32, "%s", dir);
    size_t cfg_len = 0, req_len = 0;
    char *cfg = slurp(cfg_path, &cfg_len);
    char *req = cfg ? slurp(json_path, &req_len) : NULL;
    int rc = 1;
    vkl_chat_template *ct = NULL;
    char *out = NULL;
    size_t out_len = 0;
    if (!cfg) fprintf(stderr, "vkllm chat-template: cannot read %s\n", cfg_path);
    else if (!req) fprintf(stderr, "vkllm chat-template: cannot read %s\n", json_path);
    else if (vkl_chat_template_load_config(ctx, cfg, cfg_len, &ct))
        fprintf(stderr, "vkllm chat-template: %s: %s\n", cfg_path, vkl_context_error(ctx));
    else if (vkl_chat_template_render_json(ct, req, req_len, &out, &out_len))
        fprintf(stderr, "vkllm chat-template: %s\n", vkl_context_error(ctx));
    else if (fwrite(out, 1, out_len, stdout) == out_len && fflush(stdout) == 0)
        rc = 0;
    vkl_chat_template_free_buffer(ct, out);
    vkl_chat_template_free(ct);
    free(cfg);
    free(req);
    free(cfg_path);
    return rc;
}
