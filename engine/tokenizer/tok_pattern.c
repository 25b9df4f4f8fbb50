/* Patterns of tokenizer.json ({"String": s} or {"Regex": r}) as used by
 * Split, Replace and the Replace decoder: find all matches as byte spans. */
#include <string.h>

#include "tok_internal.h"

vkl_status tok_pattern_compile(vkl_context *ctx, const char *s, size_t n, bool regex, tok_pattern *p) {
    memset(p, 0, sizeof(*p));
    if (regex) return tok_regex_compile(ctx, s, n, &p->re);
    if (!tok_utf8_is_valid(s, n)) return vkl_fail(ctx, VKL_ERR_FORMAT, "pattern string is not valid UTF-8");
    p->str = vkl_malloc(ctx, n + 1);
    if (!p->str) return VKL_ERR_OUT_OF_MEMORY;
    if (n) memcpy(p->str, s, n);
    p->str[n] = 0;
    p->len = n;
    return VKL_OK;
}

void tok_pattern_free(vkl_context *ctx, tok_pattern *p) {
    vkl_free(ctx, p->str);
    tok_regex_free(ctx, p->re);
    memset(p, 0, sizeof(*p));
}

vkl_status tok_pattern_find(vkl_tokenizer *t, const tok_pattern *p, const char *s, size_t n, tok_spans *out) {
    out->n = 0;
    if (!p->re) {
        /* A literal: leftmost non-overlapping occurrences; an empty literal
         * matches nothing. */
        if (!p->len) return VKL_OK;
        size_t i = 0;
        while (i + p->len <= n) {
            const char *hit = memchr(s + i, p->str[0], n - i - p->len + 1);
            if (!hit) break;
            size_t at = (size_t)(hit - s);
            if (!memcmp(hit, p->str, p->len)) {
                vkl_status st = tok_spans_push(t->ctx, out, at, at + p->len);
                if (st) return st;
                i = at + p->len;
            } else {
                i = at + 1;
            }
        }
        return VKL_OK;
    }
    size_t n_cps;
    vkl_status st = tok_utf8_to_cps(t->ctx, s, n, &t->s.cps, &t->s.cps_cap, &t->s.offs, &t->s.offs_cap, &n_cps);
    if (!st) st = tok_regex_find_all(t->ctx, p->re, t->s.cps, n_cps, out);
    if (st) return st;
    for (size_t k = 0; k < out->n; k++) {
        out->v[k].start = t->s.offs[out->v[k].start];
        out->v[k].end = t->s.offs[out->v[k].end];
    }
    return VKL_OK;
}
