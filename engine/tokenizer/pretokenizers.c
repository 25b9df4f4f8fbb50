/* Pre-tokenizers: split each untokenized piece into words (ByteLevel, Split,
 * Metaspace, Digits, Whitespace, WhitespaceSplit, Punctuation, Sequence),
 * with HF's split-delimiter behaviours reproduced exactly. */
#include <string.h>

#include "tok_internal.h"

/* GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves,
 * the rest map to U+0100 onwards in byte order. */
void tok_bytelevel_init(vkl_tokenizer *t) {
    uint32_t next = 256;
    for (int i = 0; i < 324; i++) t->bl_rev[i] = -1;
    for (uint32_t b = 0; b < 256; b++) {
        bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
        uint32_t cp = printable ? b : next++;
        char u[4];
        size_t k = tok_utf8_encode(cp, u);
        memcpy(t->bl_utf8[b], u, k);
        t->bl_len[b] = (uint8_t)k;
        t->bl_rev[cp] = (int16_t)b;
    }
}

/* The next entry of HF's (offsets, is_match) list over [0, n): match k if it
 * starts at `at`, else the gap up to it; returns is_match (inverted on
 * request) and moves past the entry. */
static bool next_entry(const tok_spans *m, size_t n, bool invert, size_t *k, size_t *at, size_t *a, size_t *b) {
    bool is_m = *k < m->n && m->v[*k].start == *at;
    if (is_m) {
        *a = m->v[*k].start;
        *b = m->v[*k].end;
        (*k)++;
    } else {
        *a = *at;
        *b = *k < m->n ? m->v[*k].start : n;
    }
    *at = *b;
    return invert ? !is_m : is_m;
}

vkl_status tok_split_by_spans(vkl_tokenizer *t, const char *s, size_t n, const tok_spans *m,
                              tok_split_behavior behavior, bool invert, uint32_t flags, tok_pieces *out) {
    /* Walk the (offsets, is_match) list HF builds, folding as it does; a
     * piece is emitted once it can no longer grow. */
    size_t cur_s = 0, cur_e = 0;
    bool have = false, prev_match = false;
    vkl_status st = VKL_OK;
#define EMIT()                                                                                  \
    do {                                                                                        \
        if (have && cur_e > cur_s)                                                              \
            st = tok_pieces_push(t->ctx, out, s + cur_s, cur_e - cur_s, -1,                     \
                                 cur_s == 0 ? (flags & TOK_PIECE_AT_START) : 0);                \
        have = false;                                                                           \
    } while (0)
    if (behavior == TOK_SPLIT_MERGED_WITH_NEXT) {
        /* HF folds this one from the end; from the front it is: a match
         * starts a new piece unless the previous entry was also a match,
         * and a non-match joins a pending match. */
        size_t k = 0, at = 0;
        while (!st && at < n) {
            size_t a, b;
            bool is_m = next_entry(m, n, invert, &k, &at, &a, &b);
            /* In reverse order, entry e merges into the piece after it when
             * e is a match and that later entry is not. Forward: a pending
             * match followed by a non-match merges. */
            if (have && prev_match && !is_m) {
                cur_e = b;
                prev_match = false;
                EMIT();
                continue;
            }
            EMIT();
            cur_s = a;
            cur_e = b;
            have = true;
            prev_match = is_m;
            if (!is_m) EMIT();
        }
        if (!st) EMIT();
        return st;
    }
    size_t k = 0, at = 0;
    prev_match = false;
    while (!st && at < n) {
        size_t a, b;
        bool is_m = next_entry(m, n, invert, &k, &at, &a, &b);
        switch (behavior) {
        case TOK_SPLIT_REMOVED:
            if (!is_m) {
                cur_s = a, cur_e = b, have = true;
                EMIT();
            }
            break;
        case TOK_SPLIT_ISOLATED:
            cur_s = a, cur_e = b, have = true;
            EMIT();
            break;
        case TOK_SPLIT_CONTIGUOUS:
            if (is_m == prev_match && have) {
                cur_e = b;
            } else {
                EMIT();
                cur_s = a, cur_e = b, have = true;
            }
            break;
        case TOK_SPLIT_MERGED_WITH_PREVIOUS:
            if (is_m && !prev_match && have) {
                cur_e = b;
            } else {
                EMIT();
                cur_s = a, cur_e = b, have = true;
            }
            break;
        default: break;
        }
        prev_match = is_m;
    }
    if (!st) EMIT();
#undef EMIT
    return st;
}

typedef bool (*char_pred)(uint32_t cp);

static bool is_punctuation(uint32_t cp) {
    return (cp < 128 && cp > 32 && cp != 127 && !tok_is_alnum(cp)) || tok_is_punct(cp);
}

/* Every character the predicate accepts is a match of its own. */
static vkl_status char_matches(vkl_tokenizer *t, const char *s, size_t n, char_pred pred, tok_spans *out) {
    out->n = 0;
    size_t i = 0;
    while (i < n) {
        size_t at = i;
        uint32_t cp = tok_utf8_next(s, n, &i);
        if (pred(cp)) {
            vkl_status st = tok_spans_push(t->ctx, out, at, i);
            if (st) return st;
        }
    }
    return VKL_OK;
}

static vkl_status bytelevel_piece(vkl_tokenizer *t, const tok_pretok *pt, const char *s, size_t n, uint32_t flags,
                                  tok_pieces *out) {
    vkl_context *ctx = t->ctx;
    tok_buf *pre = &t->s.tmp;
    pre->n = 0;
    vkl_status st = VKL_OK;
    if (pt->add_prefix_space && (n == 0 || s[0] != ' ')) st = tok_buf_putc(ctx, pre, ' ');
    if (!st) st = tok_buf_append(ctx, pre, s, n);
    if (st) return st;
    tok_spans *words = &t->s.spans;
    words->n = 0;
    if (pt->use_regex) {
        if ((st = tok_pattern_find(t, &(tok_pattern){NULL, 0, t->gpt2_re}, pre->p, pre->n, words))) return st;
        /* Isolated: gaps between matches are words too. */
        tok_spans *all = &t->s.spans2;
        all->n = 0;
        size_t at = 0;
        for (size_t k = 0; !st && k <= words->n; k++) {
            size_t a = k < words->n ? words->v[k].start : pre->n;
            if (a > at) st = tok_spans_push(ctx, all, at, a);
            if (!st && k < words->n) st = tok_spans_push(ctx, all, a, words->v[k].end), at = words->v[k].end;
        }
        if (st) return st;
        words = all;
    } else if (pre->n) {
        if ((st = tok_spans_push(ctx, words, 0, pre->n))) return st;
    }
    for (size_t k = 0; k < words->n; k++) {
        size_t a = words->v[k].start, b = words->v[k].end;
        if (b <= a) continue;
        if (out->n == out->cap && (st = tok_grow(ctx, (void **)&out->v, &out->cap, out->n + 1, sizeof(tok_piece))))
            return st;
        size_t off = out->text.n;
        if ((st = tok_buf_reserve(ctx, &out->text, 2 * (b - a)))) return st;
        char *w = out->text.p + off;
        for (size_t i = a; i < b; i++) {
            unsigned char c = (unsigned char)pre->p[i];
            *w++ = t->bl_utf8[c][0];
            if (t->bl_len[c] == 2) *w++ = t->bl_utf8[c][1];
        }
        out->text.n = (size_t)(w - out->text.p);
        out->text.p[out->text.n] = 0;
        out->v[out->n++] = (tok_piece){off, out->text.n - off, -1, a == 0 ? (flags & TOK_PIECE_AT_START) : 0};
    }
    return VKL_OK;
}

static vkl_status metaspace_piece(vkl_tokenizer *t, const tok_pretok *pt, const char *s, size_t n, uint32_t flags,
                                  tok_pieces *out) {
    vkl_context *ctx = t->ctx;
    char rep[4];
    size_t rl = tok_utf8_encode(pt->replacement, rep);
    tok_buf *b = &t->s.tmp;
    b->n = 0;
    vkl_status st = tok_buf_reserve(ctx, b, n + 4);
    if (st) return st;
    bool starts = n >= rl && !memcmp(s, rep, rl);
    if (!starts && n && s[0] == ' ') starts = true; /* the space becomes the replacement */
    bool prepend = pt->prepend_scheme == TOK_PREPEND_ALWAYS ||
                   (pt->prepend_scheme == TOK_PREPEND_FIRST && (flags & TOK_PIECE_AT_START));
    if (prepend && !starts) st = tok_buf_append(ctx, b, rep, rl);
    for (size_t i = 0; !st && i < n; i++) st = s[i] == ' ' ? tok_buf_append(ctx, b, rep, rl) : tok_buf_putc(ctx, b, s[i]);
    if (st) return st;
    if (!pt->split) return tok_pieces_push(ctx, out, b->p, b->n, -1, flags);
    tok_spans *m = &t->s.spans;
    if ((st = tok_pattern_find(t, &(tok_pattern){rep, rl, NULL}, b->p, b->n, m))) return st;
    return tok_split_by_spans(t, b->p, b->n, m, TOK_SPLIT_MERGED_WITH_NEXT, false, flags, out);
}

static vkl_status pretok_one(vkl_tokenizer *t, const tok_pretok *pt, const char *s, size_t n, uint32_t flags,
                             tok_pieces *out) {
    tok_spans *m = &t->s.spans;
    vkl_status st;
    switch (pt->kind) {
    case TOK_PRE_BYTELEVEL: return bytelevel_piece(t, pt, s, n, flags, out);
    case TOK_PRE_METASPACE: return metaspace_piece(t, pt, s, n, flags, out);
    case TOK_PRE_SPLIT:
        if ((st = tok_pattern_find(t, &pt->pattern, s, n, m))) return st;
        return tok_split_by_spans(t, s, n, m, pt->behavior, pt->invert, flags, out);
    case TOK_PRE_DIGITS:
        if ((st = char_matches(t, s, n, tok_is_number, m))) return st; /* char::is_numeric */
        return tok_split_by_spans(t, s, n, m, pt->individual_digits ? TOK_SPLIT_ISOLATED : TOK_SPLIT_CONTIGUOUS,
                                  false, flags, out);
    case TOK_PRE_WHITESPACE_SPLIT:
        if ((st = char_matches(t, s, n, tok_is_space, m))) return st;
        return tok_split_by_spans(t, s, n, m, TOK_SPLIT_REMOVED, false, flags, out);
    case TOK_PRE_PUNCTUATION:
        if ((st = char_matches(t, s, n, is_punctuation, m))) return st;
        return tok_split_by_spans(t, s, n, m, pt->behavior, false, flags, out);
    case TOK_PRE_WHITESPACE:
        if ((st = tok_pattern_find(t, &pt->pattern, s, n, m))) return st;
        return tok_split_by_spans(t, s, n, m, TOK_SPLIT_REMOVED, true, flags, out);
    case TOK_PRE_SEQUENCE: break;
    }
    return vkl_fail(t->ctx, VKL_ERR_INTERNAL, "pre-tokenizer: sequence handled by the caller");
}

vkl_status tok_pretokenize(vkl_tokenizer *t, const tok_pretok *pt, tok_pieces **in, tok_pieces **spare) {
    if (pt->kind == TOK_PRE_SEQUENCE) {
        for (size_t k = 0; k < pt->n_items; k++) {
            vkl_status st = tok_pretokenize(t, &pt->items[k], in, spare);
            if (st) return st;
        }
        return VKL_OK;
    }
    tok_pieces *src = *in, *dst = *spare;
    tok_pieces_clear(dst);
    for (size_t i = 0; i < src->n; i++) {
        const tok_piece *p = &src->v[i];
        vkl_status st = p->id >= 0 ? tok_pieces_push(t->ctx, dst, NULL, 0, p->id, p->flags)
                                   : pretok_one(t, pt, src->text.p + p->off, p->len, p->flags, dst);
        if (st) return st;
    }
    *in = dst;
    *spare = src;
    return VKL_OK;
}
