/* Normalizers: NFC/NFD/NFKC/NFKD (utf8proc), Lowercase, Prepend, Replace,
 * Strip, StripAccents and Sequence, each text -> text on valid UTF-8. */
#include <string.h>
#include <utf8proc.h>

#include "tok_internal.h"

/* utf8proc_map would allocate with malloc; decompose into our own buffer so
 * the context's allocator sees every byte. */
static vkl_status unicode_form(vkl_tokenizer *t, const char *s, size_t n, int options, tok_buf *out) {
    vkl_context *ctx = t->ctx;
    if (n == 0) return VKL_OK;
    /* Fast path: ASCII is fixed under every form, and text below U+0300
     * (lead bytes under 0xCC) is already in NFC: nothing there composes. */
    unsigned char limit = (options & UTF8PROC_COMPOSE) && !(options & UTF8PROC_COMPAT) ? 0xCC : 0x80;
    size_t k = 0;
    while (k < n && (unsigned char)s[k] < limit) k++;
    if (k == n) return tok_buf_append(ctx, out, s, n);
    if (n > (size_t)INT32_MAX / 8) return vkl_fail(ctx, VKL_ERR_OVERFLOW, "text too long to normalize");
    utf8proc_option_t opt = (utf8proc_option_t)(UTF8PROC_STABLE | options);
    utf8proc_ssize_t need = utf8proc_decompose((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, NULL, 0, opt);
    if (need < 0) return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "normalizer: %s", utf8proc_errmsg(need));
    size_t cap_needed = (size_t)need + 1;
    vkl_status st = tok_grow(ctx, (void **)&t->s.cps, &t->s.cps_cap, cap_needed, sizeof(uint32_t));
    if (st) return st;
    utf8proc_int32_t *buf = (utf8proc_int32_t *)t->s.cps;
    utf8proc_ssize_t got =
        utf8proc_decompose((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, buf, need, opt);
    if (got < 0 || got > need) return vkl_fail(ctx, VKL_ERR_INTERNAL, "normalizer: decomposition changed size");
    if (options & UTF8PROC_COMPOSE) {
        got = utf8proc_normalize_utf32(buf, got, opt);
        if (got < 0) return vkl_fail(ctx, VKL_ERR_INTERNAL, "normalizer: %s", utf8proc_errmsg(got));
    }
    if ((st = tok_buf_reserve(ctx, out, (size_t)got * 4))) return st;
    for (utf8proc_ssize_t i = 0; i < got; i++) out->n += tok_utf8_encode((uint32_t)buf[i], out->p + out->n);
    out->p[out->n] = 0;
    return VKL_OK;
}

static vkl_status lowercase(vkl_tokenizer *t, const char *s, size_t n, tok_buf *out) {
    vkl_status st = tok_buf_reserve(t->ctx, out, n + 8);
    size_t i = 0;
    while (!st && i < n) {
        uint32_t cp = tok_utf8_next(s, n, &i);
        if (cp == 0x130) { /* the one one-to-two mapping: capital I with dot */
            st = tok_buf_append(t->ctx, out, "i\xCC\x87", 3);
            continue;
        }
        st = tok_buf_put_cp(t->ctx, out, tok_tolower(cp));
    }
    return st;
}

static vkl_status strip_accents(vkl_tokenizer *t, const char *s, size_t n, tok_buf *out) {
    vkl_status st = tok_buf_reserve(t->ctx, out, n);
    size_t i = 0;
    while (!st && i < n) {
        size_t at = i;
        uint32_t cp = tok_utf8_next(s, n, &i);
        int c = tok_category(cp); /* is_combining_mark: any Mark */
        if (c < UTF8PROC_CATEGORY_MN || c > UTF8PROC_CATEGORY_ME) st = tok_buf_append(t->ctx, out, s + at, i - at);
    }
    return st;
}

static vkl_status strip(vkl_tokenizer *t, const char *s, size_t n, bool left, bool right, tok_buf *out) {
    size_t b = 0, e = n;
    if (left)
        while (b < e) {
            size_t i = b;
            if (!tok_is_space(tok_utf8_next(s, n, &i))) break;
            b = i;
        }
    if (right)
        while (e > b) {
            size_t k = e - 1;
            while (k > b && ((unsigned char)s[k] & 0xC0) == 0x80) k--;
            size_t i = k;
            if (!tok_is_space(tok_utf8_next(s, n, &i))) break;
            e = k;
        }
    return tok_buf_append(t->ctx, out, s + b, e - b);
}

static vkl_status replace(vkl_tokenizer *t, const tok_normalizer *nz, const char *s, size_t n, tok_buf *out) {
    tok_spans *m = &t->s.spans2;
    vkl_status st = tok_pattern_find(t, &nz->pattern, s, n, m);
    size_t at = 0;
    for (size_t k = 0; !st && k < m->n; k++) {
        st = tok_buf_append(t->ctx, out, s + at, m->v[k].start - at);
        if (!st) st = tok_buf_append(t->ctx, out, nz->str, nz->str_len);
        at = m->v[k].end;
    }
    if (!st) st = tok_buf_append(t->ctx, out, s + at, n - at);
    return st;
}

/* One step: out is empty on entry. */
static vkl_status normalize_one(vkl_tokenizer *t, const tok_normalizer *nz, const char *s, size_t n, tok_buf *out) {
    switch (nz->kind) {
    case TOK_NORM_NFC: return unicode_form(t, s, n, UTF8PROC_COMPOSE, out);
    case TOK_NORM_NFD: return unicode_form(t, s, n, UTF8PROC_DECOMPOSE, out);
    case TOK_NORM_NFKC: return unicode_form(t, s, n, UTF8PROC_COMPOSE | UTF8PROC_COMPAT, out);
    case TOK_NORM_NFKD: return unicode_form(t, s, n, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT, out);
    case TOK_NORM_LOWERCASE: return lowercase(t, s, n, out);
    case TOK_NORM_STRIP_ACCENTS: return strip_accents(t, s, n, out);
    case TOK_NORM_STRIP: return strip(t, s, n, nz->left, nz->right, out);
    case TOK_NORM_REPLACE: return replace(t, nz, s, n, out);
    case TOK_NORM_PREPEND: {
        vkl_status st = VKL_OK;
        if (n) st = tok_buf_append(t->ctx, out, nz->str, nz->str_len);
        if (!st) st = tok_buf_append(t->ctx, out, s, n);
        return st;
    }
    case TOK_NORM_SEQUENCE: break;
    }
    return vkl_fail(t->ctx, VKL_ERR_INTERNAL, "normalizer: sequence handled by the caller");
}

/* No real normalizer grows text more than a few times (NFKC of U+FDFA is
 * 18 characters, Replace " " -> U+2581 is 3 bytes for 1), while a chain of
 * Replace steps whose content repeats the pattern grows it exponentially:
 * refuse that rather than fill memory. */
static vkl_status check_growth(vkl_tokenizer *t, size_t in, size_t out) {
    if (out / 32 > in + 2048)
        return vkl_fail(t->ctx, VKL_ERR_UNSUPPORTED, "normalizer output (%zu bytes) grows beyond 32 times its input (%zu bytes)",
                        out, in);
    return VKL_OK;
}

vkl_status tok_normalize(vkl_tokenizer *t, const tok_normalizer *nz, const char *s, size_t n, tok_buf *out) {
    out->n = 0;
    if (nz->kind != TOK_NORM_SEQUENCE) {
        vkl_status st = tok_buf_reserve(t->ctx, out, 0);
        if (!st) st = normalize_one(t, nz, s, n, out);
        return st ? st : check_growth(t, n, out->n);
    }
    /* Ping-pong between out and tmp2; each step reads the other's bytes. */
    vkl_status st = tok_buf_append(t->ctx, out, s, n);
    tok_buf *cur = out, *other = &t->s.tmp2;
    for (size_t k = 0; !st && k < nz->n_items; k++) {
        other->n = 0;
        if ((st = tok_buf_reserve(t->ctx, other, 0))) break;
        if (nz->items[k].kind == TOK_NORM_SEQUENCE) {
            tok_buf nested = {0};
            st = tok_normalize(t, &nz->items[k], cur->p, cur->n, &nested);
            if (!st) st = tok_buf_append(t->ctx, other, nested.p, nested.n);
            tok_buf_free(t->ctx, &nested);
        } else {
            st = normalize_one(t, &nz->items[k], cur->p, cur->n, other);
        }
        if (!st) st = check_growth(t, n, other->n);
        tok_buf *sw = cur;
        cur = other;
        other = sw;
    }
    if (!st && cur != out) {
        out->n = 0;
        st = tok_buf_append(t->ctx, out, cur->p, cur->n);
    }
    return st;
}
