/* Unigram (SentencePiece) model: Viterbi over every vocabulary piece that
 * starts at each character (a trie walk), unknown characters at the lowest
 * score minus 10 and fused, then byte fallback for what is left unknown —
 * HF's Unigram::encode_optimized and tokenize. */
#include <string.h>

#include "tok_internal.h"

#define UNK_PENALTY 10.0

vkl_status tok_unigram_tokenize(vkl_tokenizer *t, const char *w, size_t n, tok_ids *out) {
    vkl_context *ctx = t->ctx;
    const tok_unigram *u = &t->uni;
    if (!n) return VKL_OK;
    vkl_status st = tok_grow(ctx, (void **)&t->s.best, &t->s.best_cap, n + 1, sizeof(double));
    if (!st) st = tok_grow(ctx, (void **)&t->s.back, &t->s.back_cap, n + 1, sizeof(int64_t));
    if (st) return st;
    double *best = t->s.best;
    /* back[end] = start << 32 | id, or -1 when nothing ends there yet */
    int64_t *back = t->s.back;
    for (size_t i = 0; i <= n; i++) back[i] = -1;
    best[0] = 0;
    size_t at = 0;
    while (at < n) {
        size_t next = at;
        tok_utf8_next(w, n, &next);
        if (next > n) next = n;
        size_t mblen = next - at;
        double here = best[at];
        bool single = false;
        int32_t node = 0;
        for (size_t k = at; k < n; k++) {
            node = tok_trie_child(&u->trie, node, (unsigned char)w[k]);
            if (node < 0) break;
            int32_t id = u->trie.token[node];
            if (id < 0) continue;
            size_t end = k + 1;
            double cand = u->scores[id] + here;
            if (back[end] < 0 || cand > best[end]) {
                best[end] = cand;
                back[end] = (int64_t)at << 32 | (uint32_t)id;
            }
            if (end - at == mblen) single = true;
        }
        if (!single) {
            if (u->unk_id < 0)
                return vkl_fail(ctx, VKL_ERR_NOT_FOUND, "Unigram: a character is not in the vocabulary and there is no unk_id");
            double cand = u->unk_score + here;
            if (back[next] < 0 || cand > best[next]) {
                best[next] = cand;
                back[next] = (int64_t)at << 32 | (uint32_t)u->unk_id;
            }
        }
        at = next;
    }
    /* Walk back, collecting (start, end, id) pieces in reverse into spans;
     * runs of unk are fused into one piece. */
    tok_spans *pieces = &t->s.spans2;
    tok_ids *ids = &t->s.ids2;
    pieces->n = 0;
    ids->n = 0;
    size_t end = n, unk_end = 0;
    bool in_unk = false;
    while (end > 0) {
        if (back[end] < 0) return vkl_fail(ctx, VKL_ERR_INTERNAL, "Unigram: no path to byte %zu", end);
        size_t start = (size_t)(back[end] >> 32);
        int32_t id = (int32_t)(uint32_t)back[end];
        if (id == u->unk_id) {
            if (!in_unk) unk_end = end;
            in_unk = true;
        } else {
            if (in_unk) {
                if ((st = tok_spans_push(ctx, pieces, end, unk_end)) || (st = tok_ids_push(ctx, ids, -1))) return st;
                in_unk = false;
            }
            if ((st = tok_spans_push(ctx, pieces, start, end)) || (st = tok_ids_push(ctx, ids, id))) return st;
        }
        end = start;
    }
    if (in_unk && ((st = tok_spans_push(ctx, pieces, 0, unk_end)) || (st = tok_ids_push(ctx, ids, -1)))) return st;
    for (size_t k = pieces->n; k-- > 0;) {
        int32_t id = ids->v[k];
        if (id >= 0) {
            if ((st = tok_ids_push(ctx, out, id))) return st;
            continue;
        }
        /* A fused unknown run: its string may still be a piece (it is not,
         * or Viterbi would have found it); else bytes, else unk. */
        size_t a = pieces->v[k].start, b = pieces->v[k].end;
        int32_t whole;
        if (tok_strmap_get(&t->vocab.map, w + a, b - a, &whole)) {
            if ((st = tok_ids_push(ctx, out, whole))) return st;
            continue;
        }
        bool all = u->byte_fallback;
        for (size_t i = a; i < b && all; i++) all = u->byte_ids[(unsigned char)w[i]] >= 0;
        if (all) {
            for (size_t i = a; i < b; i++)
                if ((st = tok_ids_push(ctx, out, u->byte_ids[(unsigned char)w[i]]))) return st;
        } else if ((st = tok_ids_push(ctx, out, u->unk_id))) {
            return st;
        }
    }
    return VKL_OK;
}
