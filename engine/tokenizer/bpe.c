/* BPE: a word's characters become symbols (with byte fallback or unk), then
 * the lowest-ranked adjacent pair is merged until none is left: HF's
 * Word::merge_all, a min-heap on (rank, position) over a linked list of
 * symbols, O(n log n) even for a whole unsplit line. */
#include <string.h>

#include "tok_internal.h"

typedef struct bpe_sym {
    int32_t id;
    int32_t prev, next;
    uint32_t len; /* bytes; 0 once merged into its left neighbour */
} bpe_sym;

typedef struct bpe_merge {
    uint32_t rank;
    uint32_t pos;
    int32_t new_id;
} bpe_merge;

static inline bool merge_less(const bpe_merge *a, const bpe_merge *b) {
    return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

typedef struct bpe_heap {
    bpe_merge *v;
    size_t n;
} bpe_heap;

static void heap_push(bpe_heap *h, bpe_merge m) {
    size_t i = h->n++;
    while (i) {
        size_t p = (i - 1) / 2;
        if (!merge_less(&m, &h->v[p])) break;
        h->v[i] = h->v[p];
        i = p;
    }
    h->v[i] = m;
}

static bpe_merge heap_pop(bpe_heap *h) {
    bpe_merge top = h->v[0], last = h->v[--h->n];
    size_t i = 0, n = h->n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && merge_less(&h->v[c + 1], &h->v[c])) c++;
        if (!merge_less(&h->v[c], &last)) break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (n) h->v[i] = last;
    return top;
}

static vkl_status lookup_char(vkl_tokenizer *t, const char *w, size_t n, size_t a, size_t b, int32_t *id) {
    const tok_bpe *m = &t->bpe;
    bool first = a == 0, last = b == n;
    bool pre = !first && m->prefix_len, suf = last && m->suffix_len;
    if (!pre && !suf) {
        if (b - a <= 2 && m->char_ids) {
            size_t i = a;
            uint32_t cp = tok_utf8_next(w, n, &i);
            if (cp < 0x800) {
                *id = m->char_ids[cp];
                return VKL_OK;
            }
        }
        if (!tok_strmap_get(&t->vocab.map, w + a, b - a, id)) *id = -1;
        return VKL_OK;
    }
    tok_buf *s = &t->s.tmp2;
    s->n = 0;
    vkl_status st = VKL_OK;
    if (pre) st = tok_buf_append(t->ctx, s, m->prefix, m->prefix_len);
    if (!st) st = tok_buf_append(t->ctx, s, w + a, b - a);
    if (!st && suf) st = tok_buf_append(t->ctx, s, m->suffix, m->suffix_len);
    if (st) return st;
    if (!tok_strmap_get(&t->vocab.map, s->p, s->n, id)) *id = -1;
    return VKL_OK;
}

vkl_status tok_bpe_tokenize(vkl_tokenizer *t, const char *w, size_t n, tok_ids *out) {
    vkl_context *ctx = t->ctx;
    const tok_bpe *m = &t->bpe;
    if (!n) return VKL_OK;
    int32_t whole;
    if (m->ignore_merges && tok_strmap_get(&t->vocab.map, w, n, &whole)) return tok_ids_push(ctx, out, whole);
    if (n >= INT32_MAX / 2) return vkl_fail(ctx, VKL_ERR_OVERFLOW, "BPE word of %zu bytes is too long", n);

    /* Symbols: at most one per byte (byte fallback), plus a pending unk. */
    vkl_status st = tok_grow(ctx, &t->s.sym, &t->s.sym_cap, n + 1, sizeof(bpe_sym));
    if (st) return st;
    bpe_sym *sym = t->s.sym;
    size_t ns = 0;
    int32_t unk_id = -1;
    size_t unk_len = 0;
#define ADD(ID, LEN)                                                                             \
    do {                                                                                         \
        sym[ns] = (bpe_sym){(ID), (int32_t)ns - 1, (int32_t)ns + 1, (uint32_t)(LEN)};            \
        ns++;                                                                                    \
    } while (0)
    size_t i = 0;
    while (i < n) {
        size_t a = i;
        tok_utf8_next(w, n, &i);
        if (i > n) i = n;
        int32_t id;
        if ((st = lookup_char(t, w, n, a, i, &id))) return st;
        if (id >= 0) {
            if (unk_id >= 0) {
                ADD(unk_id, unk_len);
                unk_id = -1;
            }
            ADD(id, i - a);
            continue;
        }
        if (m->byte_fallback) {
            /* the bytes of the looked-up string: prefix and suffix included */
            bool pre = a != 0 && m->prefix_len, suf = i == n && m->suffix_len;
            size_t total = (pre ? m->prefix_len : 0) + (i - a) + (suf ? m->suffix_len : 0);
            bool all = true;
            for (size_t k = 0; k < total && all; k++) {
                unsigned char c = k < (pre ? m->prefix_len : 0) ? (unsigned char)m->prefix[k]
                                  : k < (pre ? m->prefix_len : 0) + (i - a)
                                      ? (unsigned char)w[a + k - (pre ? m->prefix_len : 0)]
                                      : (unsigned char)m->suffix[k - (pre ? m->prefix_len : 0) - (i - a)];
                all = m->byte_ids[c] >= 0;
            }
            if (all) {
                if (ns + total + 1 > t->s.sym_cap) {
                    if ((st = tok_grow(ctx, &t->s.sym, &t->s.sym_cap, ns + total + n + 1, sizeof(bpe_sym))))
                        return st;
                    sym = t->s.sym;
                }
                for (size_t k = 0; k < total; k++) {
                    size_t pl = pre ? m->prefix_len : 0;
                    unsigned char c = k < pl ? (unsigned char)m->prefix[k]
                                      : k < pl + (i - a) ? (unsigned char)w[a + k - pl]
                                                         : (unsigned char)m->suffix[k - pl - (i - a)];
                    ADD(m->byte_ids[c], 1);
                }
                continue;
            }
        }
        if (m->unk_id >= 0) {
            if (unk_id >= 0 && m->fuse_unk) {
                unk_len += i - a;
            } else {
                if (unk_id >= 0) ADD(unk_id, unk_len);
                unk_id = m->unk_id;
                unk_len = i - a;
            }
        }
    }
    if (unk_id >= 0) ADD(unk_id, unk_len);
#undef ADD
    if (!ns) return VKL_OK;
    sym[ns - 1].next = -1;

    if (ns > 1) {
        if ((st = tok_grow(ctx, &t->s.heap, &t->s.heap_cap, 2 * ns + 16, sizeof(bpe_merge)))) return st;
        bpe_heap h = {t->s.heap, 0};
        size_t heap_cap = t->s.heap_cap;
        uint32_t rank;
        int32_t new_id;
        for (size_t k = 0; k + 1 < ns; k++)
            if (tok_pairmap_get(&m->merges, sym[k].id, sym[k + 1].id, &rank, &new_id))
                heap_push(&h, (bpe_merge){rank, (uint32_t)k, new_id});
        while (h.n) {
            bpe_merge top = heap_pop(&h);
            bpe_sym *cur = &sym[top.pos];
            if (!cur->len || cur->next < 0) continue;
            bpe_sym right = sym[cur->next];
            /* stale: the pair at this position changed since it was queued */
            if (!tok_pairmap_get(&m->merges, cur->id, right.id, &rank, &new_id) || new_id != top.new_id) continue;
            sym[cur->next].len = 0;
            cur->id = top.new_id;
            cur->len += right.len;
            cur->next = right.next;
            if (right.next >= 0) sym[right.next].prev = (int32_t)top.pos;
            /* each merge adds at most two entries and removes one */
            if (h.n + 2 > heap_cap) {
                t->s.heap = h.v;
                if ((st = tok_grow(ctx, &t->s.heap, &t->s.heap_cap, h.n + 2, sizeof(bpe_merge)))) return st;
                h.v = t->s.heap;
                heap_cap = t->s.heap_cap;
            }
            if (cur->prev >= 0 && tok_pairmap_get(&m->merges, sym[cur->prev].id, cur->id, &rank, &new_id))
                heap_push(&h, (bpe_merge){rank, (uint32_t)cur->prev, new_id});
            if (cur->next >= 0 && tok_pairmap_get(&m->merges, cur->id, sym[cur->next].id, &rank, &new_id))
                heap_push(&h, (bpe_merge){rank, top.pos, new_id});
        }
    }
    if ((st = tok_grow(ctx, (void **)&out->v, &out->cap, out->n + ns, sizeof(int32_t)))) return st;
    for (int32_t k = 0; k >= 0; k = sym[k].next) out->v[out->n++] = sym[k].id;
    return VKL_OK;
}

vkl_status tok_wordlevel_tokenize(vkl_tokenizer *t, const char *w, size_t n, tok_ids *out) {
    int32_t id;
    if (tok_strmap_get(&t->vocab.map, w, n, &id)) return tok_ids_push(t->ctx, out, id);
    if (t->bpe.unk_id >= 0) return tok_ids_push(t->ctx, out, t->bpe.unk_id);
    return vkl_fail(t->ctx, VKL_ERR_NOT_FOUND, "WordLevel: '%.*s' is not in the vocabulary and there is no unk token",
                    (int)(n > 64 ? 64 : n), w);
}
