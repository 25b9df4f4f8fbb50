/* Reading tokenizer.json (model, added tokens, normalizer, pre-tokenizer,
 * post-processor, decoder) and the token fields of tokenizer_config.json into
 * the tagged structs of tok_internal.h. Every field is type-checked; a
 * component we do not implement is VKL_ERR_UNSUPPORTED, naming it. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "tok_internal.h"

#define MAX_NESTING 32

typedef struct jctx {
    vkl_tokenizer *t;
    vkl_context *ctx;
} jctx;

static vkl_status bad(jctx *j, const char *what, const char *detail) {
    return vkl_fail(j->ctx, VKL_ERR_FORMAT, "tokenizer.json: %s: %s", what, detail);
}

static vkl_status unsupported(jctx *j, const char *what, const char *type) {
    return vkl_fail(j->ctx, VKL_ERR_UNSUPPORTED, "tokenizer.json: %s type '%s' is not supported", what, type);
}

static const cJSON *field(const cJSON *o, const char *key) {
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

/* A string field; NULL when absent or null. *err when present but not a string. */
static const char *str_field(const cJSON *o, const char *key, bool *err) {
    const cJSON *v = field(o, key);
    if (!v || cJSON_IsNull(v)) return NULL;
    if (!cJSON_IsString(v) || !v->valuestring) {
        *err = true;
        return NULL;
    }
    return v->valuestring;
}

static bool bool_field(const cJSON *o, const char *key, bool dflt, bool *err) {
    const cJSON *v = field(o, key);
    if (!v || cJSON_IsNull(v)) return dflt;
    if (!cJSON_IsBool(v)) {
        *err = true;
        return dflt;
    }
    return cJSON_IsTrue(v);
}

/* A non-negative integer that fits in int32. */
static bool int_value(const cJSON *v, int64_t max, int64_t *out) {
    if (!cJSON_IsNumber(v)) return false;
    double d = v->valuedouble;
    if (!(d >= 0 && d <= (double)max) || d != (double)(int64_t)d) return false;
    *out = (int64_t)d;
    return true;
}

static char *dup_n(vkl_context *ctx, const char *s, size_t n) {
    char *p = vkl_malloc(ctx, n + 1);
    if (!p) return NULL;
    if (n) memcpy(p, s, n);
    p[n] = 0;
    return p;
}

/* One UTF-8 character of a string field (Metaspace replacement, Strip content). */
static vkl_status char_field(jctx *j, const cJSON *o, const char *key, const char *what, uint32_t dflt, uint32_t *cp) {
    bool err = false;
    const char *s = str_field(o, key, &err);
    if (err) return bad(j, what, "expected a one-character string");
    if (!s) {
        *cp = dflt;
        return VKL_OK;
    }
    size_t n = strlen(s), i = 0;
    if (!n || !tok_utf8_is_valid(s, n)) return bad(j, what, "expected a one-character string");
    *cp = tok_utf8_next(s, n, &i);
    if (i != n) return bad(j, what, "expected a one-character string");
    return VKL_OK;
}

static vkl_status parse_pattern(jctx *j, const cJSON *o, const char *what, tok_pattern *p) {
    const cJSON *pat = field(o, "pattern");
    const cJSON *s = field(pat, "String"), *r = field(pat, "Regex");
    if (cJSON_IsString(s) && s->valuestring)
        return tok_pattern_compile(j->ctx, s->valuestring, strlen(s->valuestring), false, p);
    if (cJSON_IsString(r) && r->valuestring) {
        vkl_status st = tok_pattern_compile(j->ctx, r->valuestring, strlen(r->valuestring), true, p);
        return st ? vkl_fail_prefix(j->ctx, st, "tokenizer.json: %s", what) : VKL_OK;
    }
    return bad(j, what, "pattern must be {\"String\": ...} or {\"Regex\": ...}");
}

static vkl_status parse_behavior(jctx *j, const cJSON *o, const char *what, tok_split_behavior dflt,
                                 tok_split_behavior *out) {
    bool err = false;
    const char *b = str_field(o, "behavior", &err);
    if (err) return bad(j, what, "behavior must be a string");
    static const char *const names[] = {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"};
    *out = dflt;
    if (!b) return VKL_OK;
    for (size_t i = 0; i < VKL_ARRAY_LEN(names); i++)
        if (!strcmp(b, names[i])) {
            *out = (tok_split_behavior)i;
            return VKL_OK;
        }
    return unsupported(j, "split behavior", b);
}

/* Metaspace's prepend_scheme, or the older add_prefix_space flag. */
static vkl_status parse_prepend_scheme(jctx *j, const cJSON *o, tok_prepend_scheme *out) {
    bool err = false;
    const char *s = str_field(o, "prepend_scheme", &err);
    if (err) return bad(j, "Metaspace", "prepend_scheme must be a string");
    if (!s) {
        *out = bool_field(o, "add_prefix_space", true, &err) ? TOK_PREPEND_ALWAYS : TOK_PREPEND_NEVER;
        return err ? bad(j, "Metaspace", "add_prefix_space must be a bool") : VKL_OK;
    }
    if (!strcmp(s, "always")) *out = TOK_PREPEND_ALWAYS;
    else if (!strcmp(s, "first")) *out = TOK_PREPEND_FIRST;
    else if (!strcmp(s, "never")) *out = TOK_PREPEND_NEVER;
    else return unsupported(j, "Metaspace prepend_scheme", s);
    return VKL_OK;
}

static const char *type_of(jctx *j, const cJSON *o, const char *what, vkl_status *st) {
    bool err = false;
    const char *type = str_field(o, "type", &err);
    if (!cJSON_IsObject(o) || err || !type) {
        *st = bad(j, what, "expected an object with a string \"type\"");
        return NULL;
    }
    *st = VKL_OK;
    return type;
}

/* A JSON array of components into a calloc'ed array of structs. */
static vkl_status alloc_items(jctx *j, const cJSON *arr, const char *what, size_t size, void **items, size_t *n) {
    if (!cJSON_IsArray(arr)) return bad(j, what, "expected an array");
    size_t count = (size_t)cJSON_GetArraySize(arr);
    *items = vkl_calloc(j->ctx, count ? count : 1, size);
    if (!*items) return VKL_ERR_OUT_OF_MEMORY;
    *n = count;
    return VKL_OK;
}

/* ---- normalizer ------------------------------------------------------------ */

static vkl_status parse_normalizer(jctx *j, const cJSON *o, tok_normalizer *nz, int depth) {
    vkl_status st;
    const char *type = type_of(j, o, "normalizer", &st);
    if (!type) return st;
    if (depth > MAX_NESTING) return bad(j, "normalizer", "nested too deep");
    bool err = false;
    if (!strcmp(type, "NFC")) nz->kind = TOK_NORM_NFC;
    else if (!strcmp(type, "NFD")) nz->kind = TOK_NORM_NFD;
    else if (!strcmp(type, "NFKC")) nz->kind = TOK_NORM_NFKC;
    else if (!strcmp(type, "NFKD")) nz->kind = TOK_NORM_NFKD;
    else if (!strcmp(type, "Lowercase")) nz->kind = TOK_NORM_LOWERCASE;
    else if (!strcmp(type, "StripAccents")) nz->kind = TOK_NORM_STRIP_ACCENTS;
    else if (!strcmp(type, "Strip")) {
        nz->kind = TOK_NORM_STRIP;
        nz->left = bool_field(o, "strip_left", true, &err);
        nz->right = bool_field(o, "strip_right", true, &err);
    } else if (!strcmp(type, "Prepend")) {
        nz->kind = TOK_NORM_PREPEND;
        const char *p = str_field(o, "prepend", &err);
        if (!p || err) return bad(j, "Prepend normalizer", "prepend must be a string");
        if (!(nz->str = dup_n(j->ctx, p, strlen(p)))) return VKL_ERR_OUT_OF_MEMORY;
        nz->str_len = strlen(p);
    } else if (!strcmp(type, "Replace")) {
        nz->kind = TOK_NORM_REPLACE;
        const char *c = str_field(o, "content", &err);
        if (!c || err) return bad(j, "Replace normalizer", "content must be a string");
        if (!(nz->str = dup_n(j->ctx, c, strlen(c)))) return VKL_ERR_OUT_OF_MEMORY;
        nz->str_len = strlen(c);
        if ((st = parse_pattern(j, o, "Replace normalizer", &nz->pattern))) return st;
    } else if (!strcmp(type, "Precompiled")) {
        /* Only the empty charsmap (an identity) is understood. */
        const cJSON *m = field(o, "precompiled_charsmap");
        if (m && !cJSON_IsNull(m) && !(cJSON_IsString(m) && m->valuestring && !m->valuestring[0]))
            return unsupported(j, "normalizer", "Precompiled (with a charsmap)");
        nz->kind = TOK_NORM_SEQUENCE;
    } else if (!strcmp(type, "Sequence")) {
        nz->kind = TOK_NORM_SEQUENCE;
        if ((st = alloc_items(j, field(o, "normalizers"), "Sequence normalizer", sizeof(tok_normalizer),
                              (void **)&nz->items, &nz->n_items)))
            return st;
        size_t k = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, field(o, "normalizers")) {
            if ((st = parse_normalizer(j, e, &nz->items[k++], depth + 1))) return st;
        }
    } else {
        return unsupported(j, "normalizer", type);
    }
    return err ? bad(j, type, "a field has the wrong type") : VKL_OK;
}

static void free_normalizer(vkl_context *ctx, tok_normalizer *nz) {
    for (size_t k = 0; k < nz->n_items; k++) free_normalizer(ctx, &nz->items[k]);
    vkl_free(ctx, nz->items);
    vkl_free(ctx, nz->str);
    tok_pattern_free(ctx, &nz->pattern);
}

/* ---- pre-tokenizer --------------------------------------------------------- */

static vkl_status parse_pretok(jctx *j, const cJSON *o, tok_pretok *pt, int depth) {
    vkl_status st;
    const char *type = type_of(j, o, "pre_tokenizer", &st);
    if (!type) return st;
    if (depth > MAX_NESTING) return bad(j, "pre_tokenizer", "nested too deep");
    bool err = false;
    if (!strcmp(type, "ByteLevel")) {
        pt->kind = TOK_PRE_BYTELEVEL;
        pt->add_prefix_space = bool_field(o, "add_prefix_space", true, &err);
        pt->use_regex = bool_field(o, "use_regex", true, &err);
        if (pt->use_regex && !j->t->gpt2_re) {
            static const char gpt2[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
            if ((st = tok_regex_compile(j->ctx, gpt2, sizeof(gpt2) - 1, &j->t->gpt2_re))) return st;
        }
    } else if (!strcmp(type, "Split")) {
        pt->kind = TOK_PRE_SPLIT;
        pt->invert = bool_field(o, "invert", false, &err);
        if ((st = parse_behavior(j, o, "Split pre-tokenizer", TOK_SPLIT_ISOLATED, &pt->behavior))) return st;
        if ((st = parse_pattern(j, o, "Split pre-tokenizer", &pt->pattern))) return st;
    } else if (!strcmp(type, "Metaspace")) {
        pt->kind = TOK_PRE_METASPACE;
        if ((st = char_field(j, o, "replacement", "Metaspace", 0x2581, &pt->replacement))) return st;
        if ((st = parse_prepend_scheme(j, o, &pt->prepend_scheme))) return st;
        pt->split = bool_field(o, "split", true, &err);
    } else if (!strcmp(type, "Digits")) {
        pt->kind = TOK_PRE_DIGITS;
        pt->individual_digits = bool_field(o, "individual_digits", false, &err);
    } else if (!strcmp(type, "Whitespace")) {
        pt->kind = TOK_PRE_WHITESPACE;
        static const char ws[] = "\\w+|[^\\w\\s]+";
        if ((st = tok_pattern_compile(j->ctx, ws, sizeof(ws) - 1, true, &pt->pattern))) return st;
    } else if (!strcmp(type, "WhitespaceSplit")) {
        pt->kind = TOK_PRE_WHITESPACE_SPLIT;
    } else if (!strcmp(type, "Punctuation")) {
        pt->kind = TOK_PRE_PUNCTUATION;
        if ((st = parse_behavior(j, o, "Punctuation pre-tokenizer", TOK_SPLIT_ISOLATED, &pt->behavior))) return st;
    } else if (!strcmp(type, "Sequence")) {
        pt->kind = TOK_PRE_SEQUENCE;
        if ((st = alloc_items(j, field(o, "pretokenizers"), "Sequence pre-tokenizer", sizeof(tok_pretok),
                              (void **)&pt->items, &pt->n_items)))
            return st;
        size_t k = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, field(o, "pretokenizers")) {
            if ((st = parse_pretok(j, e, &pt->items[k++], depth + 1))) return st;
        }
    } else {
        return unsupported(j, "pre_tokenizer", type);
    }
    return err ? bad(j, type, "a field has the wrong type") : VKL_OK;
}

static void free_pretok(vkl_context *ctx, tok_pretok *pt) {
    for (size_t k = 0; k < pt->n_items; k++) free_pretok(ctx, &pt->items[k]);
    vkl_free(ctx, pt->items);
    tok_pattern_free(ctx, &pt->pattern);
}

/* ---- post-processor -------------------------------------------------------- */

static vkl_status template_ids(jctx *j, const cJSON *o, tok_post *pp) {
    const cJSON *single = field(o, "single"), *specials = field(o, "special_tokens");
    if (!cJSON_IsArray(single)) return bad(j, "TemplateProcessing", "single must be an array");
    size_t cap = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, single) {
        const cJSON *sp = field(e, "SpecialToken"), *seq = field(e, "Sequence");
        vkl_status st;
        if (seq) {
            if ((st = tok_grow(j->ctx, (void **)&pp->single, &cap, pp->n_single + 1, sizeof(int32_t)))) return st;
            pp->single[pp->n_single++] = TOK_POST_SEQ_A;
            continue;
        }
        bool err = false;
        const char *name = str_field(sp, "id", &err);
        if (!name || err) return bad(j, "TemplateProcessing", "a piece must be SpecialToken or Sequence");
        const cJSON *tok = field(specials, name), *ids = field(tok, "ids");
        if (!cJSON_IsArray(ids))
            return vkl_fail(j->ctx, VKL_ERR_FORMAT, "tokenizer.json: TemplateProcessing: special token '%s' has no ids",
                            name);
        const cJSON *id;
        cJSON_ArrayForEach(id, ids) {
            int64_t v;
            if (!int_value(id, INT32_MAX, &v)) return bad(j, "TemplateProcessing", "ids must be non-negative integers");
            if ((st = tok_grow(j->ctx, (void **)&pp->single, &cap, pp->n_single + 1, sizeof(int32_t)))) return st;
            pp->single[pp->n_single++] = (int32_t)v;
        }
    }
    return VKL_OK;
}

/* Bert/Roberta: [cls] A [sep], each given as [token, id]. */
static vkl_status cls_sep_ids(jctx *j, const cJSON *o, tok_post *pp) {
    int64_t ids[2];
    static const char *const keys[] = {"cls", "sep"};
    for (int k = 0; k < 2; k++) {
        const cJSON *pair = field(o, keys[k]);
        if (!cJSON_IsArray(pair) || cJSON_GetArraySize(pair) != 2 || !int_value(cJSON_GetArrayItem(pair, 1), INT32_MAX, &ids[k]))
            return bad(j, "post_processor", "cls/sep must be [token, id]");
    }
    pp->single = vkl_malloc(j->ctx, 3 * sizeof(int32_t));
    if (!pp->single) return VKL_ERR_OUT_OF_MEMORY;
    pp->single[0] = (int32_t)ids[0];
    pp->single[1] = TOK_POST_SEQ_A;
    pp->single[2] = (int32_t)ids[1];
    pp->n_single = 3;
    return VKL_OK;
}

static vkl_status parse_post(jctx *j, const cJSON *o, tok_post *pp, int depth) {
    vkl_status st;
    const char *type = type_of(j, o, "post_processor", &st);
    if (!type) return st;
    if (depth > MAX_NESTING) return bad(j, "post_processor", "nested too deep");
    if (!strcmp(type, "ByteLevel")) {
        pp->kind = TOK_POST_NOOP;
    } else if (!strcmp(type, "TemplateProcessing")) {
        pp->kind = TOK_POST_TEMPLATE;
        return template_ids(j, o, pp);
    } else if (!strcmp(type, "BertProcessing") || !strcmp(type, "RobertaProcessing")) {
        pp->kind = TOK_POST_TEMPLATE;
        return cls_sep_ids(j, o, pp);
    } else if (!strcmp(type, "Sequence")) {
        pp->kind = TOK_POST_SEQUENCE;
        if ((st = alloc_items(j, field(o, "processors"), "Sequence post_processor", sizeof(tok_post),
                              (void **)&pp->items, &pp->n_items)))
            return st;
        size_t k = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, field(o, "processors")) {
            if ((st = parse_post(j, e, &pp->items[k++], depth + 1))) return st;
        }
    } else {
        return unsupported(j, "post_processor", type);
    }
    return VKL_OK;
}

static void free_post(vkl_context *ctx, tok_post *pp) {
    for (size_t k = 0; k < pp->n_items; k++) free_post(ctx, &pp->items[k]);
    vkl_free(ctx, pp->items);
    vkl_free(ctx, pp->single);
}

/* ---- decoder --------------------------------------------------------------- */

static vkl_status parse_decoder(jctx *j, const cJSON *o, tok_decoder *d, int depth) {
    vkl_status st;
    const char *type = type_of(j, o, "decoder", &st);
    if (!type) return st;
    if (depth > MAX_NESTING) return bad(j, "decoder", "nested too deep");
    bool err = false;
    if (!strcmp(type, "ByteLevel")) d->kind = TOK_DEC_BYTELEVEL;
    else if (!strcmp(type, "ByteFallback")) d->kind = TOK_DEC_BYTEFALLBACK;
    else if (!strcmp(type, "Fuse")) d->kind = TOK_DEC_FUSE;
    else if (!strcmp(type, "Metaspace")) {
        d->kind = TOK_DEC_METASPACE;
        if ((st = char_field(j, o, "replacement", "Metaspace decoder", 0x2581, &d->cp))) return st;
        if ((st = parse_prepend_scheme(j, o, &d->prepend_scheme))) return st;
    } else if (!strcmp(type, "Strip")) {
        d->kind = TOK_DEC_STRIP;
        if ((st = char_field(j, o, "content", "Strip decoder", ' ', &d->cp))) return st;
        int64_t a = 0, b = 0;
        const cJSON *s = field(o, "start"), *e = field(o, "stop");
        if ((s && !int_value(s, 1 << 20, &a)) || (e && !int_value(e, 1 << 20, &b)))
            return bad(j, "Strip decoder", "start/stop must be small non-negative integers");
        d->start = (size_t)a;
        d->stop = (size_t)b;
    } else if (!strcmp(type, "Replace")) {
        d->kind = TOK_DEC_REPLACE;
        const char *c = str_field(o, "content", &err);
        if (!c || err) return bad(j, "Replace decoder", "content must be a string");
        if (!(d->str = dup_n(j->ctx, c, strlen(c)))) return VKL_ERR_OUT_OF_MEMORY;
        d->str_len = strlen(c);
        if ((st = parse_pattern(j, o, "Replace decoder", &d->pattern))) return st;
    } else if (!strcmp(type, "WordPiece") || !strcmp(type, "BPEDecoder")) {
        bool wp = !strcmp(type, "WordPiece");
        d->kind = wp ? TOK_DEC_WORDPIECE : TOK_DEC_BPE_SUFFIX;
        const char *c = str_field(o, wp ? "prefix" : "suffix", &err);
        if (!c) c = wp ? "##" : "</w>";
        if (!(d->str = dup_n(j->ctx, c, strlen(c)))) return VKL_ERR_OUT_OF_MEMORY;
        d->str_len = strlen(c);
        d->cleanup = bool_field(o, "cleanup", true, &err);
    } else if (!strcmp(type, "Sequence")) {
        d->kind = TOK_DEC_SEQUENCE;
        if ((st = alloc_items(j, field(o, "decoders"), "Sequence decoder", sizeof(tok_decoder), (void **)&d->items,
                              &d->n_items)))
            return st;
        size_t k = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, field(o, "decoders")) {
            if ((st = parse_decoder(j, e, &d->items[k++], depth + 1))) return st;
        }
    } else {
        return unsupported(j, "decoder", type);
    }
    return err ? bad(j, type, "a field has the wrong type") : VKL_OK;
}

static void free_decoder(vkl_context *ctx, tok_decoder *d) {
    for (size_t k = 0; k < d->n_items; k++) free_decoder(ctx, &d->items[k]);
    vkl_free(ctx, d->items);
    vkl_free(ctx, d->str);
    tok_pattern_free(ctx, &d->pattern);
}

/* ---- models ------------------------------------------------------------------ */

#define MAX_VOCAB (1 << 24)

static void byte_ids(const tok_vocab *v, int32_t ids[256]) {
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof(name), "<0x%02X>", b);
        if (!tok_strmap_get(&v->map, name, 6, &ids[b])) ids[b] = -1;
    }
}

static vkl_status parse_vocab_object(jctx *j, const cJSON *vocab, tok_vocab *v) {
    if (!cJSON_IsObject(vocab)) return bad(j, "model", "vocab must be an object of token: id");
    size_t count = (size_t)cJSON_GetArraySize(vocab);
    if (count > MAX_VOCAB) return bad(j, "model", "vocab has more than 16M entries");
    vkl_status st = tok_strmap_init(j->ctx, &v->map, count);
    if (st) return st;
    const cJSON *e;
    cJSON_ArrayForEach(e, vocab) {
        int64_t id;
        if (!e->string || !int_value(e, MAX_VOCAB - 1, &id))
            return vkl_fail(j->ctx, VKL_ERR_FORMAT, "tokenizer.json: vocab entry '%.64s' needs an id in [0, %d)",
                            e->string ? e->string : "", MAX_VOCAB);
        if ((st = tok_strmap_put(j->ctx, &v->map, e->string, strlen(e->string), (int32_t)id, true))) return st;
    }
    return tok_vocab_index_ids(j->ctx, v);
}

static vkl_status parse_bpe(jctx *j, const cJSON *m) {
    vkl_tokenizer *t = j->t;
    tok_bpe *b = &t->bpe;
    vkl_status st = parse_vocab_object(j, field(m, "vocab"), &t->vocab);
    if (st) return st;
    bool err = false;
    const char *unk = str_field(m, "unk_token", &err);
    const char *prefix = str_field(m, "continuing_subword_prefix", &err);
    const char *suffix = str_field(m, "end_of_word_suffix", &err);
    b->fuse_unk = bool_field(m, "fuse_unk", false, &err);
    b->byte_fallback = bool_field(m, "byte_fallback", false, &err);
    b->ignore_merges = bool_field(m, "ignore_merges", false, &err);
    if (err) return bad(j, "BPE model", "a field has the wrong type");
    b->unk_id = -1;
    if (unk && !tok_strmap_get(&t->vocab.map, unk, strlen(unk), &b->unk_id)) b->unk_id = -1;
    if (prefix) {
        b->prefix_len = strlen(prefix);
        if (!(b->prefix = dup_n(j->ctx, prefix, b->prefix_len))) return VKL_ERR_OUT_OF_MEMORY;
    }
    if (suffix) {
        b->suffix_len = strlen(suffix);
        if (!(b->suffix = dup_n(j->ctx, suffix, b->suffix_len))) return VKL_ERR_OUT_OF_MEMORY;
    }
    const cJSON *merges = field(m, "merges");
    if (merges && !cJSON_IsNull(merges) && !cJSON_IsArray(merges)) return bad(j, "BPE model", "merges must be an array");
    size_t n_merges = merges ? (size_t)cJSON_GetArraySize(merges) : 0;
    if (n_merges > (size_t)INT32_MAX) return bad(j, "BPE model", "too many merges");
    if ((st = tok_pairmap_init(j->ctx, &b->merges, n_merges))) return st;
    tok_buf joined = {0};
    uint32_t rank = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, merges) {
        const char *a, *c;
        size_t al, cl;
        if (cJSON_IsString(e) && e->valuestring) {
            const char *s = e->valuestring, *sp = strchr(s, ' ');
            if (!sp || strchr(sp + 1, ' ')) {
                st = vkl_fail(j->ctx, VKL_ERR_FORMAT, "tokenizer.json: merge %u '%.64s' is not two tokens split by one space",
                              rank, s);
                break;
            }
            a = s, al = (size_t)(sp - s), c = sp + 1, cl = strlen(sp + 1);
        } else if (cJSON_IsArray(e) && cJSON_GetArraySize(e) == 2 && cJSON_IsString(cJSON_GetArrayItem(e, 0)) &&
                   cJSON_IsString(cJSON_GetArrayItem(e, 1))) {
            a = cJSON_GetArrayItem(e, 0)->valuestring, al = strlen(a);
            c = cJSON_GetArrayItem(e, 1)->valuestring, cl = strlen(c);
        } else {
            st = vkl_fail(j->ctx, VKL_ERR_FORMAT, "tokenizer.json: merge %u must be \"a b\" or [\"a\", \"b\"]", rank);
            break;
        }
        int32_t ia, ic, inew;
        if (!tok_strmap_get(&t->vocab.map, a, al, &ia) || !tok_strmap_get(&t->vocab.map, c, cl, &ic)) {
            st = vkl_fail(j->ctx, VKL_ERR_FORMAT, "tokenizer.json: merge %u ('%.*s' '%.*s') uses a token not in the vocab",
                          rank, (int)(al > 64 ? 64 : al), a, (int)(cl > 64 ? 64 : cl), c);
            break;
        }
        size_t pl = b->prefix_len;
        if (cl < pl) {
            st = vkl_fail(j->ctx, VKL_ERR_FORMAT, "tokenizer.json: merge %u: second token shorter than the prefix", rank);
            break;
        }
        joined.n = 0;
        if ((st = tok_buf_append(j->ctx, &joined, a, al)) || (st = tok_buf_append(j->ctx, &joined, c + pl, cl - pl)))
            break;
        if (!tok_strmap_get(&t->vocab.map, joined.p, joined.n, &inew)) {
            st = vkl_fail(j->ctx, VKL_ERR_FORMAT, "tokenizer.json: merge %u: '%.*s' is not in the vocab", rank,
                          (int)(joined.n > 64 ? 64 : joined.n), joined.p);
            break;
        }
        tok_pairmap_put(&b->merges, ia, ic, rank, inew);
        rank++;
    }
    tok_buf_free(j->ctx, &joined);
    if (st) return st;
    byte_ids(&t->vocab, b->byte_ids);
    /* Characters below U+0800 (every byte-level symbol) looked up once. */
    b->char_ids = vkl_malloc(j->ctx, 0x800 * sizeof(int32_t));
    if (!b->char_ids) return VKL_ERR_OUT_OF_MEMORY;
    for (uint32_t cp = 0; cp < 0x800; cp++) {
        char u[4];
        size_t k = tok_utf8_encode(cp, u);
        if (!tok_strmap_get(&t->vocab.map, u, k, &b->char_ids[cp])) b->char_ids[cp] = -1;
    }
    return VKL_OK;
}

static vkl_status parse_unigram(jctx *j, const cJSON *m) {
    vkl_tokenizer *t = j->t;
    tok_unigram *u = &t->uni;
    const cJSON *vocab = field(m, "vocab");
    if (!cJSON_IsArray(vocab)) return bad(j, "Unigram model", "vocab must be an array of [piece, score]");
    size_t count = (size_t)cJSON_GetArraySize(vocab), total = 0;
    if (count > MAX_VOCAB) return bad(j, "Unigram model", "vocab has more than 16M entries");
    vkl_status st = tok_strmap_init(j->ctx, &t->vocab.map, count);
    if (st) return st;
    u->scores = vkl_calloc(j->ctx, count + 1, sizeof(double));
    if (!u->scores) return VKL_ERR_OUT_OF_MEMORY;
    const cJSON *e;
    int32_t id = 0;
    double min_score = 1e300;
    cJSON_ArrayForEach(e, vocab) {
        const cJSON *p = cJSON_GetArrayItem(e, 0), *s = cJSON_GetArrayItem(e, 1);
        if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 2 || !cJSON_IsString(p) || !p->valuestring || !cJSON_IsNumber(s))
            return vkl_fail(j->ctx, VKL_ERR_FORMAT, "tokenizer.json: Unigram vocab entry %d must be [piece, score]", id);
        size_t len = strlen(p->valuestring);
        if ((st = tok_strmap_put(j->ctx, &t->vocab.map, p->valuestring, len, id, true))) return st;
        u->scores[id] = s->valuedouble;
        if (s->valuedouble < min_score) min_score = s->valuedouble;
        total += len;
        id++;
    }
    if ((st = tok_vocab_index_ids(j->ctx, &t->vocab))) return st;
    /* every piece, by id order; a later duplicate wins as in token_to_ids */
    if ((st = tok_trie_init(j->ctx, &u->trie, total))) return st;
    id = 0;
    cJSON_ArrayForEach(e, vocab) {
        const char *p = cJSON_GetArrayItem(e, 0)->valuestring;
        int32_t final_id;
        tok_strmap_get(&t->vocab.map, p, strlen(p), &final_id);
        if ((st = tok_trie_insert(j->ctx, &u->trie, p, strlen(p), final_id))) return st;
        id++;
    }
    u->unk_score = (count ? min_score : 0) - 10.0;
    u->unk_id = -1;
    const cJSON *unk = field(m, "unk_id");
    int64_t v;
    if (unk && !cJSON_IsNull(unk)) {
        if (!int_value(unk, (int64_t)count - 1, &v)) return bad(j, "Unigram model", "unk_id must index the vocab");
        u->unk_id = (int32_t)v;
    }
    bool err = false;
    u->byte_fallback = bool_field(m, "byte_fallback", false, &err);
    if (err) return bad(j, "Unigram model", "byte_fallback must be a bool");
    byte_ids(&t->vocab, u->byte_ids);
    return VKL_OK;
}

static vkl_status parse_wordlevel(jctx *j, const cJSON *m) {
    vkl_tokenizer *t = j->t;
    vkl_status st = parse_vocab_object(j, field(m, "vocab"), &t->vocab);
    if (st) return st;
    bool err = false;
    const char *unk = str_field(m, "unk_token", &err);
    t->bpe.unk_id = -1;
    if (unk && !tok_strmap_get(&t->vocab.map, unk, strlen(unk), &t->bpe.unk_id)) t->bpe.unk_id = -1;
    return err ? bad(j, "WordLevel model", "unk_token must be a string") : VKL_OK;
}

static vkl_status parse_model(jctx *j, const cJSON *m) {
    if (!cJSON_IsObject(m)) return bad(j, "model", "missing or not an object");
    bool err = false;
    const char *type = str_field(m, "type", &err);
    if (err) return bad(j, "model", "type must be a string");
    if (!type) /* older files: the variant is known by its fields */
        type = field(m, "merges") ? "BPE" : cJSON_IsArray(field(m, "vocab")) ? "Unigram" : "WordLevel";
    if (!strcmp(type, "BPE")) {
        j->t->model = TOK_MODEL_BPE;
        return parse_bpe(j, m);
    }
    if (!strcmp(type, "Unigram")) {
        j->t->model = TOK_MODEL_UNIGRAM;
        return parse_unigram(j, m);
    }
    if (!strcmp(type, "WordLevel")) {
        j->t->model = TOK_MODEL_WORDLEVEL;
        return parse_wordlevel(j, m);
    }
    return unsupported(j, "model", type);
}

/* ---- added tokens ------------------------------------------------------------ */

/* Ids as HF's AddedVocabulary::add_tokens gives them: a content already in the
 * model's vocab keeps that id; a new one goes after the vocab and the added
 * ids so far. The file's "id" is only a check there, and so here. */
static vkl_status parse_added(jctx *j, const cJSON *arr) {
    vkl_tokenizer *t = j->t;
    if (!arr || cJSON_IsNull(arr)) return VKL_OK;
    vkl_status st = alloc_items(j, arr, "added_tokens", sizeof(tok_added), (void **)&t->added, &t->n_added);
    if (st) return st;
    size_t n = 0;
    int64_t max_added = -1;
    size_t model_size = t->vocab.map.n;
    tok_strmap by_content;
    if ((st = tok_strmap_init(j->ctx, &by_content, t->n_added))) return st;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr) {
        bool err = false;
        const char *content = str_field(e, "content", &err);
        if (!content || err) {
            st = bad(j, "added_tokens", "every entry needs a string content");
            break;
        }
        size_t len = strlen(content);
        if (!len) continue;
        tok_added a = {0};
        a.special = bool_field(e, "special", false, &err);
        a.lstrip = bool_field(e, "lstrip", false, &err);
        a.rstrip = bool_field(e, "rstrip", false, &err);
        a.single_word = bool_field(e, "single_word", false, &err);
        a.normalized = bool_field(e, "normalized", !a.special, &err);
        if (err) {
            st = bad(j, "added_tokens", "flags must be bools");
            break;
        }
        int32_t prev;
        if (tok_strmap_get(&by_content, content, len, &prev)) {
            /* the same content again: it keeps its id, takes the new flags */
            tok_added *old = &t->added[prev];
            bool was_special = old->special;
            a.content = old->content;
            a.len = old->len;
            a.id = old->id;
            a.special = a.special || was_special;
            *old = a;
            continue;
        }
        int32_t id;
        if (tok_strmap_get(&t->vocab.map, content, len, &id)) {
            a.id = id;
        } else {
            int64_t next = max_added < 0 ? (int64_t)model_size
                           : (max_added >= (int64_t)model_size || model_size == 0) ? max_added + 1
                                                                                 : (int64_t)model_size;
            if (next >= MAX_VOCAB) {
                st = bad(j, "added_tokens", "ids beyond 16M");
                break;
            }
            a.id = (int32_t)next;
        }
        if (a.id > max_added) max_added = a.id;
        if (!(a.content = dup_n(j->ctx, content, len))) {
            st = VKL_ERR_OUT_OF_MEMORY;
            break;
        }
        a.len = len;
        if ((st = tok_strmap_put(j->ctx, &by_content, content, len, (int32_t)n, false))) {
            vkl_free(j->ctx, a.content);
            break;
        }
        t->added[n++] = a;
    }
    t->n_added = n;
    tok_strmap_free(j->ctx, &by_content);
    return st;
}

/* ---- entry points ----------------------------------------------------------- */

vkl_status tok_parse_tokenizer_json(vkl_tokenizer *t, const char *json, size_t len) {
    jctx j = {t, t->ctx};
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(json, len, &end, false);
    if (!root) {
        size_t at = end && end >= json && end <= json + len ? (size_t)(end - json) : 0;
        return vkl_fail(t->ctx, VKL_ERR_FORMAT, "tokenizer.json: not valid JSON (near byte %zu of %zu)", at, len);
    }
    vkl_status st = VKL_OK;
    if (!cJSON_IsObject(root)) {
        st = bad(&j, "top level", "expected an object");
        goto done;
    }
    for (const char *p = end; p && p < json + len; p++)
        if (*p != ' ' && *p != '\n' && *p != '\r' && *p != '\t' && *p != 0) {
            st = vkl_fail(t->ctx, VKL_ERR_FORMAT, "tokenizer.json: trailing bytes after the JSON object (byte %zu)",
                          (size_t)(p - json));
            goto done;
        }
    if ((st = parse_model(&j, field(root, "model")))) goto done;
    const cJSON *o;
    if ((o = field(root, "normalizer")) && !cJSON_IsNull(o)) {
        if (!(t->normalizer = vkl_calloc(t->ctx, 1, sizeof(tok_normalizer)))) {
            st = VKL_ERR_OUT_OF_MEMORY;
            goto done;
        }
        if ((st = parse_normalizer(&j, o, t->normalizer, 0))) goto done;
    }
    if ((o = field(root, "pre_tokenizer")) && !cJSON_IsNull(o)) {
        if (!(t->pretok = vkl_calloc(t->ctx, 1, sizeof(tok_pretok)))) {
            st = VKL_ERR_OUT_OF_MEMORY;
            goto done;
        }
        if ((st = parse_pretok(&j, o, t->pretok, 0))) goto done;
    }
    if ((o = field(root, "post_processor")) && !cJSON_IsNull(o)) {
        if (!(t->post = vkl_calloc(t->ctx, 1, sizeof(tok_post)))) {
            st = VKL_ERR_OUT_OF_MEMORY;
            goto done;
        }
        if ((st = parse_post(&j, o, t->post, 0))) goto done;
    }
    if ((o = field(root, "decoder")) && !cJSON_IsNull(o)) {
        if (!(t->decoder = vkl_calloc(t->ctx, 1, sizeof(tok_decoder)))) {
            st = VKL_ERR_OUT_OF_MEMORY;
            goto done;
        }
        if ((st = parse_decoder(&j, o, t->decoder, 0))) goto done;
    }
    if ((st = parse_added(&j, field(root, "added_tokens")))) goto done;
    st = tok_added_build(t);
done:
    cJSON_Delete(root);
    return st;
}

/* bos_token / eos_token: a string, {"content": ...}, or null. */
static const char *special_name(const cJSON *cfg, const char *key) {
    const cJSON *v = field(cfg, key);
    if (cJSON_IsString(v)) return v->valuestring;
    const cJSON *c = field(v, "content");
    return cJSON_IsString(c) ? c->valuestring : NULL;
}

vkl_status tok_parse_config_json(vkl_tokenizer *t, const char *json, size_t len) {
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(json, len, &end, false);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return vkl_fail(t->ctx, VKL_ERR_FORMAT, "tokenizer_config.json: not a JSON object");
    }
    const char *bos = special_name(root, "bos_token"), *eos = special_name(root, "eos_token");
    if (bos) t->bos_id = vkl_tokenizer_token_to_id(t, bos, strlen(bos));
    if (eos) t->eos_id = vkl_tokenizer_token_to_id(t, eos, strlen(eos));
    cJSON_Delete(root);
    /* A template outside the Jinja subset must not cost the tokenizer:
     * load without it and say why. */
    vkl_status st = vkl_chat_template_load_config(t->ctx, json, len, &t->chat);
    if (st == VKL_ERR_NOT_FOUND) return VKL_OK;
    if (st && st != VKL_ERR_OUT_OF_MEMORY) {
        vkl_log(t->ctx, VKL_LOG_WARN, "tokenizer loaded without its chat template: %s", vkl_context_error(t->ctx));
        return VKL_OK;
    }
    return st;
}

void tok_free_components(vkl_tokenizer *t) {
    vkl_context *ctx = t->ctx;
    if (t->normalizer) free_normalizer(ctx, t->normalizer);
    if (t->pretok) free_pretok(ctx, t->pretok);
    if (t->post) free_post(ctx, t->post);
    if (t->decoder) free_decoder(ctx, t->decoder);
    vkl_free(ctx, t->normalizer);
    vkl_free(ctx, t->pretok);
    vkl_free(ctx, t->post);
    vkl_free(ctx, t->decoder);
    tok_regex_free(ctx, t->gpt2_re);
    for (size_t i = 0; i < t->n_added; i++) vkl_free(ctx, t->added[i].content);
    vkl_free(ctx, t->added);
    vkl_free(ctx, t->added_by_id);
    tok_trie_free(ctx, &t->raw_trie);
    tok_trie_free(ctx, &t->norm_trie);
    tok_vocab_free(ctx, &t->vocab);
    tok_pairmap_free(ctx, &t->bpe.merges);
    vkl_free(ctx, t->bpe.prefix);
    vkl_free(ctx, t->bpe.suffix);
    vkl_free(ctx, t->bpe.char_ids);
    vkl_free(ctx, t->uni.scores);
    tok_trie_free(ctx, &t->uni.trie);
}
