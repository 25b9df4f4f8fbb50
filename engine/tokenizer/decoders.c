/* Decoders: token strings -> text, each a step over the list of strings as
 * HF's decode_chain (ByteLevel, Metaspace, ByteFallback, Fuse, Strip,
 * Replace, WordPiece, BPEDecoder, Sequence); the result is the list joined. */
#include <string.h>

#include "tok_internal.h"

typedef struct dec_lists {
    tok_pieces *cur, *spare;
} dec_lists;

static vkl_status push(vkl_tokenizer *t, tok_pieces *l, const char *s, size_t n) {
    return tok_pieces_push(t->ctx, l, s, n, -1, 0);
}

static vkl_status dec_bytelevel(vkl_tokenizer *t, const tok_pieces *in, tok_pieces *out) {
    tok_buf *bytes = &t->s.tmp;
    bytes->n = 0;
    vkl_status st = VKL_OK;
    for (size_t k = 0; k < in->n && !st; k++) {
        const char *s = in->text.p + in->v[k].off;
        size_t n = in->v[k].len, i = 0;
        if ((st = tok_buf_reserve(t->ctx, bytes, n))) break;
        size_t mark = bytes->n;
        bool all = true;
        while (i < n) {
            uint32_t cp = tok_utf8_next(s, n, &i);
            if (cp >= 324 || t->bl_rev[cp] < 0) {
                all = false;
                break;
            }
            bytes->p[bytes->n++] = (char)t->bl_rev[cp];
        }
        if (!all) {
            bytes->n = mark;
            st = tok_buf_append(t->ctx, bytes, s, n);
        }
    }
    if (st) return st;
    tok_buf *text = &t->s.tmp2;
    text->n = 0;
    bool valid;
    if ((st = tok_utf8_lossy(t->ctx, bytes->p, bytes->n, text, &valid))) return st;
    return push(t, out, text->p, text->n);
}

static vkl_status dec_bytefallback(vkl_tokenizer *t, const tok_pieces *in, tok_pieces *out) {
    tok_buf *bytes = &t->s.tmp;
    bytes->n = 0;
    vkl_status st = VKL_OK;
    for (size_t k = 0; k <= in->n && !st; k++) {
        const char *s = k < in->n ? in->text.p + in->v[k].off : NULL;
        size_t n = k < in->n ? in->v[k].len : 0;
        int byte = -1;
        /* "<0xHH>"; Rust's from_str_radix also takes "+H" */
        if (s && n == 6 && !memcmp(s, "<0x", 3) && s[5] == '>') {
            int v = 0;
            bool ok = true;
            for (int d = 3; d < 5 && ok; d++) {
                char c = s[d];
                if (d == 3 && c == '+') continue;
                if (c >= '0' && c <= '9') v = v * 16 + (c - '0');
                else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') v = v * 16 + ((c | 0x20) - 'a' + 10);
                else ok = false;
            }
            if (ok) byte = v;
        }
        if (byte >= 0) {
            st = tok_buf_putc(t->ctx, bytes, (char)byte);
            continue;
        }
        if (bytes->n) {
            if (tok_utf8_is_valid(bytes->p, bytes->n)) {
                st = push(t, out, bytes->p, bytes->n);
            } else {
                for (size_t b = 0; b < bytes->n && !st; b++) st = push(t, out, "\xEF\xBF\xBD", 3);
            }
            bytes->n = 0;
        }
        if (!st && s) st = push(t, out, s, n);
    }
    return st;
}

static vkl_status dec_fuse(vkl_tokenizer *t, const tok_pieces *in, tok_pieces *out) {
    tok_buf *b = &t->s.tmp;
    b->n = 0;
    vkl_status st = VKL_OK;
    for (size_t k = 0; k < in->n && !st; k++) st = tok_buf_append(t->ctx, b, in->text.p + in->v[k].off, in->v[k].len);
    if (!st) st = push(t, out, b->p ? b->p : "", b->n);
    return st;
}

static vkl_status dec_metaspace(vkl_tokenizer *t, const tok_decoder *d, const tok_pieces *in, tok_pieces *out) {
    tok_buf *b = &t->s.tmp;
    vkl_status st = VKL_OK;
    for (size_t k = 0; k < in->n && !st; k++) {
        const char *s = in->text.p + in->v[k].off;
        size_t n = in->v[k].len, i = 0;
        b->n = 0;
        while (i < n && !st) {
            size_t a = i;
            uint32_t cp = tok_utf8_next(s, n, &i);
            if (cp == d->cp) {
                if (!(k == 0 && d->prepend_scheme != TOK_PREPEND_NEVER)) st = tok_buf_putc(t->ctx, b, ' ');
            } else {
                st = tok_buf_append(t->ctx, b, s + a, i - a);
            }
        }
        if (!st) st = push(t, out, b->p, b->n);
    }
    return st;
}

static vkl_status dec_strip(vkl_tokenizer *t, const tok_decoder *d, const tok_pieces *in, tok_pieces *out) {
    vkl_status st = VKL_OK;
    for (size_t k = 0; k < in->n && !st; k++) {
        const char *s = in->text.p + in->v[k].off;
        size_t n = in->v[k].len;
        size_t n_cps;
        if ((st = tok_utf8_to_cps(t->ctx, s, n, &t->s.cps, &t->s.cps_cap, &t->s.offs, &t->s.offs_cap, &n_cps))) break;
        size_t a = 0, b = n_cps;
        for (size_t i = 0; i < d->start && i < n_cps && t->s.cps[i] == d->cp; i++) a = i + 1;
        for (size_t i = 0; i < d->stop && i < n_cps; i++) {
            size_t idx = n_cps - i - 1;
            if (t->s.cps[idx] != d->cp) break;
            b = idx;
        }
        if (b < a) b = a;
        st = push(t, out, s + t->s.offs[a], t->s.offs[b] - t->s.offs[a]);
    }
    return st;
}

static vkl_status dec_replace(vkl_tokenizer *t, const tok_decoder *d, const tok_pieces *in, tok_pieces *out) {
    tok_buf *b = &t->s.tmp;
    tok_spans *m = &t->s.spans;
    vkl_status st = VKL_OK;
    for (size_t k = 0; k < in->n && !st; k++) {
        const char *s = in->text.p + in->v[k].off;
        size_t n = in->v[k].len, at = 0;
        b->n = 0;
        if ((st = tok_pattern_find(t, &d->pattern, s, n, m))) break;
        for (size_t j = 0; j < m->n && !st; j++) {
            st = tok_buf_append(t->ctx, b, s + at, m->v[j].start - at);
            if (!st) st = tok_buf_append(t->ctx, b, d->str, d->str_len);
            at = m->v[j].end;
        }
        if (!st) st = tok_buf_append(t->ctx, b, s + at, n - at);
        if (!st) st = push(t, out, b->p, b->n);
    }
    return st;
}

/* transformers' clean_up_tokenization, as the WordPiece decoder applies it */
static vkl_status cleanup(vkl_tokenizer *t, tok_buf *b) {
    static const char *const from[] = {" .", " ?", " !", " ,", " ' ", " n't", " 'm", " 's", " 've", " 're"};
    static const char *const to[] = {".", "?", "!", ",", "'", "n't", "'m", "'s", "'ve", "'re"};
    tok_buf *o = &t->s.tmp2;
    for (size_t r = 0; r < VKL_ARRAY_LEN(from); r++) {
        size_t fl = strlen(from[r]), tl = strlen(to[r]), i = 0;
        o->n = 0;
        vkl_status st = VKL_OK;
        while (i < b->n && !st) {
            if (i + fl <= b->n && !memcmp(b->p + i, from[r], fl)) {
                st = tok_buf_append(t->ctx, o, to[r], tl);
                i += fl;
            } else {
                st = tok_buf_putc(t->ctx, o, b->p[i++]);
            }
        }
        b->n = 0;
        if (!st) st = tok_buf_append(t->ctx, b, o->p ? o->p : "", o->n);
        if (st) return st;
    }
    return VKL_OK;
}

static vkl_status dec_wordpiece(vkl_tokenizer *t, const tok_decoder *d, const tok_pieces *in, tok_pieces *out) {
    tok_buf *b = &t->s.tmp;
    vkl_status st = VKL_OK;
    for (size_t k = 0; k < in->n && !st; k++) {
        const char *s = in->text.p + in->v[k].off;
        size_t n = in->v[k].len;
        b->n = 0;
        if (k != 0) {
            if (n >= d->str_len && !memcmp(s, d->str, d->str_len)) {
                s += d->str_len;
                n -= d->str_len;
            } else {
                st = tok_buf_putc(t->ctx, b, ' ');
            }
        }
        if (!st) st = tok_buf_append(t->ctx, b, s, n);
        if (!st && d->cleanup) st = cleanup(t, b);
        if (!st) st = push(t, out, b->p, b->n);
    }
    return st;
}

static vkl_status dec_bpe_suffix(vkl_tokenizer *t, const tok_decoder *d, const tok_pieces *in, tok_pieces *out) {
    tok_buf *b = &t->s.tmp;
    vkl_status st = VKL_OK;
    for (size_t k = 0; k < in->n && !st; k++) {
        const char *s = in->text.p + in->v[k].off;
        size_t n = in->v[k].len, i = 0;
        b->n = 0;
        const char *rep = k + 1 == in->n ? "" : " ";
        while (i < n && !st) {
            if (d->str_len && i + d->str_len <= n && !memcmp(s + i, d->str, d->str_len)) {
                st = tok_buf_append(t->ctx, b, rep, strlen(rep));
                i += d->str_len;
            } else {
                st = tok_buf_putc(t->ctx, b, s[i++]);
            }
        }
        if (!st) st = push(t, out, b->p ? b->p : "", b->n);
    }
    return st;
}

static vkl_status dec_step(vkl_tokenizer *t, const tok_decoder *d, dec_lists *l) {
    if (d->kind == TOK_DEC_SEQUENCE) {
        for (size_t k = 0; k < d->n_items; k++) {
            vkl_status st = dec_step(t, &d->items[k], l);
            if (st) return st;
        }
        return VKL_OK;
    }
    tok_pieces *in = l->cur, *out = l->spare;
    tok_pieces_clear(out);
    vkl_status st;
    switch (d->kind) {
    case TOK_DEC_BYTELEVEL: st = dec_bytelevel(t, in, out); break;
    case TOK_DEC_BYTEFALLBACK: st = dec_bytefallback(t, in, out); break;
    case TOK_DEC_FUSE: st = dec_fuse(t, in, out); break;
    case TOK_DEC_METASPACE: st = dec_metaspace(t, d, in, out); break;
    case TOK_DEC_STRIP: st = dec_strip(t, d, in, out); break;
    case TOK_DEC_REPLACE: st = dec_replace(t, d, in, out); break;
    case TOK_DEC_WORDPIECE: st = dec_wordpiece(t, d, in, out); break;
    case TOK_DEC_BPE_SUFFIX: st = dec_bpe_suffix(t, d, in, out); break;
    default: st = vkl_fail(t->ctx, VKL_ERR_INTERNAL, "decoder kind %d", (int)d->kind); break;
    }
    if (st) return st;
    l->cur = out;
    l->spare = in;
    return VKL_OK;
}

vkl_status tok_decode_tokens(vkl_tokenizer *t, const tok_decoder *d, tok_pieces *tokens, tok_buf *out) {
    out->n = 0;
    vkl_status st = tok_buf_reserve(t->ctx, out, 0);
    if (st) return st;
    tok_pieces *cur = tokens;
    if (d) {
        dec_lists l = {tokens, tokens == &t->s.a ? &t->s.b : &t->s.a};
        if ((st = dec_step(t, d, &l))) return st;
        cur = l.cur;
    }
    for (size_t k = 0; k < cur->n && !st; k++) {
        if (!d && k) st = tok_buf_putc(t->ctx, out, ' ');
        if (!st) st = tok_buf_append(t->ctx, out, cur->text.p + cur->v[k].off, cur->v[k].len);
    }
    return st;
}
