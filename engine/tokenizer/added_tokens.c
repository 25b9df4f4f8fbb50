/* Added and special tokens: found in the text before the model runs, by a
 * leftmost-longest trie scan (HF's aho-corasick LeftmostLongest), with the
 * lstrip / rstrip / single_word rules of AddedVocabulary::find_matches. */
#include <string.h>
#include <utf8proc.h>

#include "tok_internal.h"

vkl_status tok_trie_init(vkl_context *ctx, tok_trie *tr, size_t max_bytes) {
    memset(tr, 0, sizeof(*tr));
    vkl_status st = tok_pairmap_init(ctx, &tr->edges, max_bytes + 1);
    if (!st) st = tok_grow(ctx, (void **)&tr->token, &tr->cap, max_bytes + 1, sizeof(int32_t));
    if (st) return st;
    tr->token[0] = -1;
    tr->n = 1;
    return VKL_OK;
}

vkl_status tok_trie_insert(vkl_context *ctx, tok_trie *tr, const char *s, size_t n, int32_t token) {
    if (!n) return VKL_OK;
    int32_t node = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char b = (unsigned char)s[i];
        int32_t child = tok_trie_child(tr, node, b);
        if (child < 0) {
            /* tok_trie_init sized both tables for every byte inserted */
            if (tr->n >= tr->cap || tr->edges.n * 2 >= tr->edges.mask || tr->n >= INT32_MAX)
                return vkl_fail(ctx, VKL_ERR_INTERNAL, "token trie larger than announced");
            child = (int32_t)tr->n++;
            tr->token[child] = -1;
            tok_pairmap_put(&tr->edges, node, b, 0, child);
        }
        node = child;
    }
    tr->token[node] = token;
    tr->first_byte[(unsigned char)s[0]] = true;
    return VKL_OK;
}

void tok_trie_free(vkl_context *ctx, tok_trie *tr) {
    tok_pairmap_free(ctx, &tr->edges);
    vkl_free(ctx, tr->token);
    memset(tr, 0, sizeof(*tr));
}

vkl_status tok_added_build(vkl_tokenizer *t) {
    vkl_context *ctx = t->ctx;
    size_t raw_bytes = 0, norm_bytes = 0;
    tok_buf nb = {0};
    vkl_status st = VKL_OK;
    /* Normalized tokens are matched in normalized text, so their content is
     * normalized first (as HF's refresh_added_tokens). */
    for (size_t i = 0; i < t->n_added; i++) {
        tok_added *a = &t->added[i];
        if (a->normalized && t->normalizer) {
            if ((st = tok_normalize(t, t->normalizer, a->content, a->len, &nb))) goto done;
            char *c = vkl_malloc(ctx, nb.n + 1);
            if (!c) {
                st = VKL_ERR_OUT_OF_MEMORY;
                goto done;
            }
            memcpy(c, nb.p, nb.n);
            c[nb.n] = 0;
            vkl_free(ctx, a->content);
            a->content = c;
            a->len = nb.n;
        }
        if (a->normalized) norm_bytes += a->len;
        else raw_bytes += a->len;
    }
    if ((st = tok_trie_init(ctx, &t->raw_trie, raw_bytes))) goto done;
    if ((st = tok_trie_init(ctx, &t->norm_trie, norm_bytes))) goto done;
    for (size_t i = 0; i < t->n_added && !st; i++) {
        tok_added *a = &t->added[i];
        st = tok_trie_insert(ctx, a->normalized ? &t->norm_trie : &t->raw_trie, a->content, a->len, (int32_t)i);
    }
done:
    tok_buf_free(ctx, &nb);
    return st;
}

static bool is_word_char(uint32_t cp) {
    /* regex's \w: alphabetic (letters, letter numbers), marks, decimal
     * digits, connector punctuation, join controls */
    int c = tok_category(cp);
    return tok_is_letter(cp) || (c >= UTF8PROC_CATEGORY_MN && c <= UTF8PROC_CATEGORY_NL) ||
           c == UTF8PROC_CATEGORY_PC || cp == 0x200C || cp == 0x200D;
}

static uint32_t last_cp(const char *s, size_t n) {
    size_t k = n - 1;
    while (k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80) k--;
    size_t i = k;
    return tok_utf8_next(s, n, &i);
}

/* The longest token of the trie starting at s[i], or -1. */
static int32_t longest_at(const tok_trie *tr, const char *s, size_t n, size_t i, size_t *len) {
    int32_t node = 0, best = -1;
    for (size_t k = i; k < n; k++) {
        node = tok_trie_child(tr, node, (unsigned char)s[k]);
        if (node < 0) break;
        if (tr->token[node] >= 0) {
            best = tr->token[node];
            *len = k + 1 - i;
        }
    }
    return best;
}

vkl_status tok_added_split_text(vkl_tokenizer *t, const tok_trie *tr, const char *s, size_t n, uint32_t flags,
                                tok_pieces *out) {
    vkl_context *ctx = t->ctx;
    if (!n) return VKL_OK;
    if (tr->n <= 1) return tok_pieces_push(ctx, out, s, n, -1, flags);
    size_t start_offset = 0, i = 0;
    vkl_status st = VKL_OK;
    while (i < n && !st) {
        if (!tr->first_byte[(unsigned char)s[i]]) {
            i++;
            continue;
        }
        size_t len = 0;
        int32_t k = longest_at(tr, s, n, i, &len);
        if (k < 0) {
            i++;
            continue;
        }
        const tok_added *a = &t->added[k];
        size_t start = i, stop = i + len;
        i = stop; /* the scan goes on from the match, not from what rstrip took */
        if (a->single_word) {
            bool start_space = start == 0 || !is_word_char(last_cp(s, start));
            size_t j = stop;
            bool stop_space = stop == n || !is_word_char(tok_utf8_next(s, n, &j));
            if (!start_space || !stop_space) continue;
        }
        if (a->lstrip) {
            size_t b = start;
            while (b > start_offset) {
                size_t k2 = b - 1;
                while (k2 > 0 && ((unsigned char)s[k2] & 0xC0) == 0x80) k2--;
                size_t j = k2;
                if (!tok_is_space(tok_utf8_next(s, n, &j))) break;
                b = k2;
            }
            start = b;
        }
        if (a->rstrip) {
            while (stop < n) {
                size_t j = stop;
                if (!tok_is_space(tok_utf8_next(s, n, &j))) break;
                stop = j;
            }
        }
        if (start_offset < start)
            st = tok_pieces_push(ctx, out, s + start_offset, start - start_offset, -1,
                                 start_offset == 0 ? flags : 0);
        if (!st) st = tok_pieces_push(ctx, out, NULL, 0, a->id, 0);
        /* a match inside what the previous rstrip took is still a token
         * (HF emits it; no text lies between) */
        start_offset = stop > start_offset ? stop : start_offset;
    }
    if (!st && start_offset < n)
        st = tok_pieces_push(ctx, out, s + start_offset, n - start_offset, -1, start_offset == 0 ? flags : 0);
    return st;
}

vkl_status tok_added_split(vkl_tokenizer *t, const tok_trie *tr, const tok_pieces *in, tok_pieces *out) {
    tok_pieces_clear(out);
    for (size_t i = 0; i < in->n; i++) {
        const tok_piece *p = &in->v[i];
        vkl_status st;
        if (p->id >= 0) st = tok_pieces_push(t->ctx, out, NULL, 0, p->id, p->flags);
        else st = tok_added_split_text(t, tr, in->text.p + p->off, p->len, p->flags, out);
        if (st) return st;
    }
    return VKL_OK;
}
