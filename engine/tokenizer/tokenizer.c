/* The tokenizer pipeline in HF's order — added tokens on the raw text, the
 * normalizer on what is between them (then normalized added tokens), the
 * pre-tokenizer, the model per word, the post-processor — and decoding,
 * loading and the id/token lookups. */
#define _POSIX_C_SOURCE 200809L /* stat */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "tok_internal.h"

static vkl_status finish_load(vkl_tokenizer *t) {
    vkl_context *ctx = t->ctx;
    size_t size = t->vocab.n_ids;
    for (size_t i = 0; i < t->n_added; i++)
        if ((size_t)t->added[i].id + 1 > size) size = (size_t)t->added[i].id + 1;
    t->vocab_size = size;
    t->added_by_id = vkl_malloc(ctx, (size + 1) * sizeof(int32_t));
    if (!t->added_by_id) return VKL_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i <= size; i++) t->added_by_id[i] = -1;
    vkl_status st = tok_strmap_init(ctx, &t->added_map, t->n_added);
    for (size_t i = 0; i < t->n_added && !st; i++) {
        t->added_by_id[t->added[i].id] = (int32_t)i;
        st = tok_strmap_put(ctx, &t->added_map, t->added[i].content, t->added[i].len, (int32_t)i, true);
    }
    return st;
}

vkl_status vkl_tokenizer_load_json(vkl_context *ctx, const char *json, size_t len, const char *config_json,
                                   size_t config_len, vkl_tokenizer **out) {
    if (!out) return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "vkl_tokenizer_load_json: out is NULL");
    *out = NULL;
    if (!ctx) return VKL_ERR_INVALID_ARGUMENT;
    if (!json) return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "vkl_tokenizer_load_json: json is NULL");
    vkl_tokenizer *t = vkl_calloc(ctx, 1, sizeof(*t));
    if (!t) return VKL_ERR_OUT_OF_MEMORY;
    t->ctx = ctx;
    t->bos_id = t->eos_id = -1;
    tok_bytelevel_init(t);
    vkl_status st = tok_parse_tokenizer_json(t, json, len);
    if (!st) st = finish_load(t);
    if (!st && config_json) st = tok_parse_config_json(t, config_json, config_len);
    if (st) {
        vkl_tokenizer_free(t);
        return st;
    }
    /* No config: the special token a template puts first is the bos. */
    if (t->bos_id < 0 && t->post && t->post->kind == TOK_POST_TEMPLATE && t->post->n_single &&
        t->post->single[0] != TOK_POST_SEQ_A)
        t->bos_id = t->post->single[0];
    *out = t;
    return VKL_OK;
}

static vkl_status read_file(vkl_context *ctx, const char *path, char **data, size_t *len) {
    *data = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return vkl_fail(ctx, VKL_ERR_IO, "cannot open %s", path);
    vkl_status st = VKL_OK;
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (size < 0 || fseek(f, 0, SEEK_SET) != 0) st = vkl_fail(ctx, VKL_ERR_IO, "cannot size %s", path);
    else if ((unsigned long)size > (1ul << 30)) st = vkl_fail(ctx, VKL_ERR_UNSUPPORTED, "%s is over 1 GiB", path);
    else if (!(*data = vkl_malloc(ctx, (size_t)size + 1))) st = VKL_ERR_OUT_OF_MEMORY;
    else if (fread(*data, 1, (size_t)size, f) != (size_t)size) st = vkl_fail(ctx, VKL_ERR_IO, "cannot read %s", path);
    fclose(f);
    if (st) {
        vkl_free(ctx, *data);
        *data = NULL;
        return st;
    }
    (*data)[size] = 0;
    *len = (size_t)size;
    return VKL_OK;
}

vkl_status vkl_tokenizer_load_path(vkl_context *ctx, const char *path, vkl_tokenizer **out) {
    if (!out || !path) return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "vkl_tokenizer_load_path: NULL argument");
    *out = NULL;
    struct stat sb;
    if (stat(path, &sb) != 0) return vkl_fail(ctx, VKL_ERR_NOT_FOUND, "tokenizer: %s does not exist", path);
    bool dir = S_ISDIR(sb.st_mode);
    size_t pl = strlen(path);
    char *json_path = vkl_malloc(ctx, pl + 32), *cfg_path = vkl_malloc(ctx, pl + 32);
    vkl_status st = json_path && cfg_path ? VKL_OK : VKL_ERR_OUT_OF_MEMORY;
    char *json = NULL, *cfg = NULL;
    size_t json_len = 0, cfg_len = 0;
    if (!st) {
        if (dir) {
            snprintf(json_path, pl + 32, "%s/tokenizer.json", path);
            snprintf(cfg_path, pl + 32, "%s/tokenizer_config.json", path);
        } else {
            /* a tokenizer.json: its folder's tokenizer_config.json if any */
            snprintf(json_path, pl + 32, "%s", path);
            const char *slash = strrchr(path, '/');
            if (slash) snprintf(cfg_path, pl + 32, "%.*s/tokenizer_config.json", (int)(slash - path), path);
            else snprintf(cfg_path, pl + 32, "tokenizer_config.json");
        }
        st = read_file(ctx, json_path, &json, &json_len);
    }
    if (!st && stat(cfg_path, &sb) == 0 && !S_ISDIR(sb.st_mode)) st = read_file(ctx, cfg_path, &cfg, &cfg_len);
    if (!st) {
        st = vkl_tokenizer_load_json(ctx, json, json_len, cfg, cfg_len, out);
        if (st) vkl_fail_prefix(ctx, st, "%s", json_path);
    }
    vkl_free(ctx, json);
    vkl_free(ctx, cfg);
    vkl_free(ctx, json_path);
    vkl_free(ctx, cfg_path);
    return st;
}

vkl_status vkl_tokenizer_load_model(vkl_context *ctx, const vkl_model *model, vkl_tokenizer **out) {
    if (!out || !model) return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "vkl_tokenizer_load_model: NULL argument");
    *out = NULL;
    const void *json, *config = NULL;
    size_t len, config_len = 0;
    /* the entries `vkllm import --tokenizer DIR` stores (tools/cmd_import.c) */
    if (!vkl_model_metadata(model, "tokenizer.json", &json, &len))
        return vkl_fail(ctx, VKL_ERR_NOT_FOUND, "the model has no tokenizer; import it with --tokenizer DIR");
    vkl_model_metadata(model, "tokenizer_config.json", &config, &config_len);
    vkl_status st = vkl_tokenizer_load_json(ctx, json, len, config, config_len, out);
    if (st) vkl_fail_prefix(ctx, st, "the model's tokenizer");
    return st;
}

static void free_scratch(vkl_context *ctx, tok_scratch *s) {
    tok_pieces_free(ctx, &s->a);
    tok_pieces_free(ctx, &s->b);
    tok_buf_free(ctx, &s->text);
    tok_buf_free(ctx, &s->tmp);
    tok_buf_free(ctx, &s->tmp2);
    vkl_free(ctx, s->cps);
    vkl_free(ctx, s->offs);
    tok_spans_free(ctx, &s->spans);
    tok_spans_free(ctx, &s->spans2);
    tok_ids_free(ctx, &s->ids);
    tok_ids_free(ctx, &s->ids2);
    vkl_free(ctx, s->sym);
    vkl_free(ctx, s->heap);
    vkl_free(ctx, s->best);
    vkl_free(ctx, s->back);
}

void vkl_tokenizer_free(vkl_tokenizer *t) {
    if (!t) return;
    vkl_context *ctx = t->ctx;
    tok_free_components(t);
    tok_strmap_free(ctx, &t->added_map);
    vkl_chat_template_free(t->chat);
    free_scratch(ctx, &t->s);
    vkl_free(ctx, t);
}

void vkl_tokenizer_free_buffer(vkl_tokenizer *t, void *p) {
    if (t && p) vkl_free(t->ctx, p);
}

static vkl_status model_tokenize(vkl_tokenizer *t, const char *w, size_t n, tok_ids *out) {
    switch (t->model) {
    case TOK_MODEL_BPE: return tok_bpe_tokenize(t, w, n, out);
    case TOK_MODEL_UNIGRAM: return tok_unigram_tokenize(t, w, n, out);
    case TOK_MODEL_WORDLEVEL: return tok_wordlevel_tokenize(t, w, n, out);
    }
    return vkl_fail(t->ctx, VKL_ERR_INTERNAL, "model kind %d", (int)t->model);
}

static vkl_status encode(vkl_tokenizer *t, const char *text, size_t len, bool add_special, tok_ids **result) {
    vkl_context *ctx = t->ctx;
    tok_scratch *s = &t->s;
    tok_pieces *cur = &s->a, *other = &s->b;
    tok_pieces_clear(cur);
    bool valid;
    vkl_status st = tok_utf8_lossy(ctx, text, len, &cur->text, &valid);
    if (st) return st;
    if ((st = tok_grow(ctx, (void **)&cur->v, &cur->cap, 1, sizeof(tok_piece)))) return st;
    cur->v[0] = (tok_piece){0, cur->text.n, -1, TOK_PIECE_AT_START};
    cur->n = cur->text.n ? 1 : 0;

    /* added tokens that match the raw text */
    if (t->raw_trie.n > 1) {
        if ((st = tok_added_split(t, &t->raw_trie, cur, other))) return st;
        tok_pieces *sw = cur;
        cur = other;
        other = sw;
    }
    /* the normalizer on each piece between them, then normalized added tokens */
    if (t->normalizer) {
        tok_pieces_clear(other);
        for (size_t i = 0; i < cur->n && !st; i++) {
            const tok_piece *p = &cur->v[i];
            if (p->id >= 0) {
                st = tok_pieces_push(ctx, other, NULL, 0, p->id, p->flags);
                continue;
            }
            if ((st = tok_normalize(t, t->normalizer, cur->text.p + p->off, p->len, &s->tmp))) break;
            st = tok_added_split_text(t, &t->norm_trie, s->tmp.p, s->tmp.n, p->flags, other);
        }
        if (st) return st;
        tok_pieces *sw = cur;
        cur = other;
        other = sw;
    } else if (t->norm_trie.n > 1) {
        if ((st = tok_added_split(t, &t->norm_trie, cur, other))) return st;
        tok_pieces *sw = cur;
        cur = other;
        other = sw;
    }
    if (t->pretok && (st = tok_pretokenize(t, t->pretok, &cur, &other))) return st;

    tok_ids *ids = &s->ids;
    ids->n = 0;
    for (size_t i = 0; i < cur->n && !st; i++) {
        const tok_piece *p = &cur->v[i];
        if (p->id >= 0) st = tok_ids_push(ctx, ids, p->id);
        else if (p->len) st = model_tokenize(t, cur->text.p + p->off, p->len, ids);
    }
    if (st) return st;
    *result = ids;
    if (add_special && t->post) {
        if ((st = tok_post_process(t, t->post, ids, &s->ids2))) return st;
        *result = &s->ids2;
    }
    return VKL_OK;
}

vkl_status vkl_tokenizer_encode(vkl_tokenizer *t, const char *text, size_t len, bool add_special, int32_t **ids,
                                size_t *n_ids) {
    if (!t) return VKL_ERR_INVALID_ARGUMENT;
    if (!ids || !n_ids || (!text && len))
        return vkl_fail(t->ctx, VKL_ERR_INVALID_ARGUMENT, "vkl_tokenizer_encode: NULL argument");
    *ids = NULL;
    *n_ids = 0;
    tok_ids *r;
    vkl_status st = encode(t, text ? text : "", len, add_special, &r);
    if (st) return st;
    if (!r->n) return VKL_OK;
    *ids = vkl_malloc(t->ctx, r->n * sizeof(int32_t));
    if (!*ids) return VKL_ERR_OUT_OF_MEMORY;
    memcpy(*ids, r->v, r->n * sizeof(int32_t));
    *n_ids = r->n;
    return VKL_OK;
}

vkl_status vkl_tokenizer_decode(vkl_tokenizer *t, const int32_t *ids, size_t n, bool skip_special, char **text,
                                size_t *len) {
    if (!t) return VKL_ERR_INVALID_ARGUMENT;
    if (!text || (!ids && n)) return vkl_fail(t->ctx, VKL_ERR_INVALID_ARGUMENT, "vkl_tokenizer_decode: NULL argument");
    *text = NULL;
    if (len) *len = 0;
    vkl_context *ctx = t->ctx;
    tok_pieces *toks = &t->s.a;
    tok_pieces_clear(toks);
    vkl_status st = VKL_OK;
    for (size_t i = 0; i < n && !st; i++) {
        int32_t id = ids[i];
        if (id < 0 || (size_t)id >= t->vocab_size) continue;
        int32_t a = t->added_by_id[id];
        if (a >= 0) {
            if (skip_special && t->added[a].special) continue;
            st = tok_pieces_push(ctx, toks, t->added[a].content, t->added[a].len, -1, 0);
            continue;
        }
        size_t l;
        const char *s = tok_vocab_token(&t->vocab, id, &l);
        if (s) st = tok_pieces_push(ctx, toks, s, l, -1, 0);
    }
    tok_buf *o = &t->s.text;
    if (!st) st = tok_decode_tokens(t, t->decoder, toks, o);
    if (st) return st;
    *text = vkl_malloc(ctx, o->n + 1);
    if (!*text) return VKL_ERR_OUT_OF_MEMORY;
    if (o->n) memcpy(*text, o->p, o->n);
    (*text)[o->n] = 0;
    if (len) *len = o->n;
    return VKL_OK;
}

size_t vkl_tokenizer_vocab_size(const vkl_tokenizer *t) {
    return t ? t->vocab_size : 0;
}

int32_t vkl_tokenizer_token_to_id(const vkl_tokenizer *t, const char *token, size_t len) {
    if (!t || !token) return -1;
    int32_t v;
    if (tok_strmap_get(&t->added_map, token, len, &v)) return t->added[v].id;
    if (tok_strmap_get(&t->vocab.map, token, len, &v)) return v;
    return -1;
}

const char *vkl_tokenizer_id_to_token(const vkl_tokenizer *t, int32_t id, size_t *len) {
    if (!t || id < 0 || (size_t)id >= t->vocab_size) return NULL;
    size_t l = 0;
    const char *s;
    int32_t a = t->added_by_id[id];
    if (a >= 0) {
        s = t->added[a].content;
        l = t->added[a].len;
    } else {
        s = tok_vocab_token(&t->vocab, id, &l);
    }
    if (s && len) *len = l;
    return s;
}

int32_t vkl_tokenizer_bos_id(const vkl_tokenizer *t) {
    return t ? t->bos_id : -1;
}

int32_t vkl_tokenizer_eos_id(const vkl_tokenizer *t) {
    return t ? t->eos_id : -1;
}

bool vkl_tokenizer_is_special(const vkl_tokenizer *t, int32_t id) {
    if (!t || id < 0 || (size_t)id >= t->vocab_size) return false;
    int32_t a = t->added_by_id[id];
    return a >= 0 && t->added[a].special;
}

const vkl_chat_template *vkl_tokenizer_chat_template(const vkl_tokenizer *t) {
    return t ? t->chat : NULL;
}
