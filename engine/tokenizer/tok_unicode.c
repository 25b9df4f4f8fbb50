/* UTF-8 decoding, lossy repair, and the Unicode classes the tokenizer tests
 * (letters, numbers, white space), all from utf8proc's tables. */
#include <string.h>
#include <utf8proc.h>

#include "tok_internal.h"

size_t tok_utf8_encode(uint32_t cp, char out[4]) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

uint32_t tok_utf8_next(const char *str, size_t n, size_t *i) {
    const unsigned char *s = (const unsigned char *)str;
    size_t k = *i;
    uint32_t c = s[k];
    if (c < 0x80 || k + 1 >= n) {
        *i = k + 1;
        return c;
    }
    if (c < 0xE0) {
        *i = k + 2;
        return (c & 0x1F) << 6 | (s[k + 1] & 0x3F);
    }
    if (c < 0xF0 || k + 3 >= n) {
        *i = k + 3;
        return (c & 0x0F) << 12 | (uint32_t)(s[k + 1] & 0x3F) << 6 | (s[k + 2] & 0x3F);
    }
    *i = k + 4;
    return (c & 0x07) << 18 | (uint32_t)(s[k + 1] & 0x3F) << 12 | (uint32_t)(s[k + 2] & 0x3F) << 6 |
           (s[k + 3] & 0x3F);
}

/* Length of the well-formed prefix of the sequence at s[i] (Unicode Table
 * 3-7) and whether it is complete: the "maximal subpart" that lossy decoding
 * replaces with one U+FFFD. */
static size_t utf8_prefix(const unsigned char *s, size_t n, size_t i, bool *complete) {
    unsigned c = s[i];
    size_t need;
    unsigned lo = 0x80, hi = 0xBF;
    *complete = false;
    if (c < 0x80) {
        *complete = true;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF) need = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else
        return 1;
    size_t k = 1;
    while (k < need && i + k < n) {
        unsigned d = s[i + k];
        if (d < lo || d > hi) break;
        lo = 0x80;
        hi = 0xBF;
        k++;
    }
    *complete = k == need;
    return k;
}

size_t tok_utf8_valid_len(const unsigned char *s, size_t n, size_t i) {
    bool complete;
    size_t k = utf8_prefix(s, n, i, &complete);
    return complete ? k : 0;
}

bool tok_utf8_is_valid(const char *str, size_t n) {
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < n) {
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        size_t k = tok_utf8_valid_len(s, n, i);
        if (!k) return false;
        i += k;
    }
    return true;
}

vkl_status tok_utf8_lossy(vkl_context *ctx, const char *str, size_t n, tok_buf *out, bool *was_valid) {
    const unsigned char *s = (const unsigned char *)str;
    *was_valid = true;
    vkl_status st = tok_buf_reserve(ctx, out, n);
    if (st || !n) return st;
    size_t i = 0, run = 0;
    while (i < n) {
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        bool complete;
        size_t k = utf8_prefix(s, n, i, &complete);
        if (complete) {
            i += k;
            continue;
        }
        *was_valid = false;
        if ((st = tok_buf_append(ctx, out, s + run, i - run))) return st;
        if ((st = tok_buf_append(ctx, out, "\xEF\xBF\xBD", 3))) return st;
        i += k;
        run = i;
    }
    return tok_buf_append(ctx, out, s + run, n - run);
}

vkl_status tok_utf8_to_cps(vkl_context *ctx, const char *s, size_t n, uint32_t **cps, size_t *cps_cap,
                           size_t **offs, size_t *offs_cap, size_t *n_cps) {
    vkl_status st = tok_grow(ctx, (void **)cps, cps_cap, n + 1, sizeof(uint32_t));
    if (!st) st = tok_grow(ctx, (void **)offs, offs_cap, n + 1, sizeof(size_t));
    if (st) return st;
    size_t i = 0, k = 0;
    while (i < n) {
        (*offs)[k] = i;
        (*cps)[k++] = tok_utf8_next(s, n, &i);
    }
    (*offs)[k] = n;
    *n_cps = k;
    return VKL_OK;
}

int tok_category(uint32_t cp) {
    return cp > 0x10FFFF ? UTF8PROC_CATEGORY_CN : (int)utf8proc_category((utf8proc_int32_t)cp);
}

bool tok_is_space(uint32_t cp) {
    if (cp < 0x80) return cp == ' ' || (cp >= 9 && cp <= 13);
    if (cp == 0x85) return true;
    int c = tok_category(cp);
    return c == UTF8PROC_CATEGORY_ZS || c == UTF8PROC_CATEGORY_ZL || c == UTF8PROC_CATEGORY_ZP;
}

bool tok_is_py_space(uint32_t cp) {
    return (cp >= 0x1C && cp <= 0x1F) || tok_is_space(cp);
}

bool tok_is_letter(uint32_t cp) {
    if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
    int c = tok_category(cp);
    return c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO;
}

bool tok_is_number(uint32_t cp) {
    if (cp < 0x80) return cp >= '0' && cp <= '9';
    int c = tok_category(cp);
    return c >= UTF8PROC_CATEGORY_ND && c <= UTF8PROC_CATEGORY_NO;
}

bool tok_is_alnum(uint32_t cp) {
    return tok_is_letter(cp) || tok_is_number(cp);
}

bool tok_is_punct(uint32_t cp) {
    int c = tok_category(cp);
    return c >= UTF8PROC_CATEGORY_PC && c <= UTF8PROC_CATEGORY_PO;
}

uint32_t tok_tolower(uint32_t cp) {
    return cp > 0x10FFFF ? cp : (uint32_t)utf8proc_tolower((utf8proc_int32_t)cp);
}

uint32_t tok_toupper(uint32_t cp) {
    return cp > 0x10FFFF ? cp : (uint32_t)utf8proc_toupper((utf8proc_int32_t)cp);
}

uint32_t tok_casefold(uint32_t cp) {
    if (cp < 0x80) return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
    if (cp > 0x10FFFF) return cp;
    utf8proc_int32_t out[4];
    int last = 0;
    utf8proc_ssize_t n = utf8proc_decompose_char((utf8proc_int32_t)cp, out, 4, UTF8PROC_CASEFOLD, &last);
    /* simple folding only: a character that folds to several (ß -> ss) stays */
    return n == 1 ? (uint32_t)out[0] : cp;
}
