/* Streamed decoding (vkllm_tokenizer.h). Decoding one token alone is wrong
 * twice over: a character split over tokens comes out as U+FFFD, and a
 * decoder may drop the leading space of the first token it sees. So the
 * stream decodes a window: the ids since the previous piece was handed out
 * (context that ends on a character boundary) plus the new ones, and hands
 * out the text past what that context decoded to, once it does not end in
 * an incomplete character. Each step costs two decodes of a few ids. */
#include <string.h>

#include "tok_internal.h"

#define REPLACEMENT_CHAR "\xEF\xBF\xBD" /* U+FFFD: what an incomplete UTF-8 tail decodes to */

struct vkl_decode_stream {
    vkl_tokenizer *t;
    bool skip_special;
    tok_ids window; /* window.v[0..mark) was handed out; the rest is pending */
    size_t mark;
    size_t shown;   /* bytes that window.v[0..mark) decodes to */
    char *last;     /* the decode the returned text points into */
};

vkl_status vkl_decode_stream_create(vkl_tokenizer *t, bool skip_special, vkl_decode_stream **out) {
    if (!t) return VKL_ERR_INVALID_ARGUMENT;
    if (!out) return vkl_fail(t->ctx, VKL_ERR_INVALID_ARGUMENT, "vkl_decode_stream_create: out is NULL");
    *out = vkl_calloc(t->ctx, 1, sizeof(**out));
    if (!*out) return VKL_ERR_OUT_OF_MEMORY;
    (*out)->t = t;
    (*out)->skip_special = skip_special;
    return VKL_OK;
}

void vkl_decode_stream_reset(vkl_decode_stream *s) {
    if (!s) return;
    s->window.n = s->mark = s->shown = 0;
    vkl_tokenizer_free_buffer(s->t, s->last);
    s->last = NULL;
}

void vkl_decode_stream_free(vkl_decode_stream *s) {
    if (!s) return;
    vkl_decode_stream_reset(s);
    tok_ids_free(s->t->ctx, &s->window);
    vkl_free(s->t->ctx, s);
}

static void give(const char *text, size_t n, const char **out, size_t *len) {
    *out = text;
    if (len) *len = n;
}

static bool ends_incomplete(const char *text, size_t n) {
    return n >= 3 && !memcmp(text + n - 3, REPLACEMENT_CHAR, 3);
}

/* Replace s->last with the decode of the whole window. */
static vkl_status decode_window(vkl_decode_stream *s, size_t *n) {
    vkl_tokenizer_free_buffer(s->t, s->last);
    s->last = NULL;
    return vkl_tokenizer_decode(s->t, s->window.v, s->window.n, s->skip_special, &s->last, n);
}

vkl_status vkl_decode_stream_set_context(vkl_decode_stream *s, const int32_t *ids, size_t n) {
    if (!s) return VKL_ERR_INVALID_ARGUMENT;
    if (!ids && n) return vkl_fail(s->t->ctx, VKL_ERR_INVALID_ARGUMENT, "vkl_decode_stream_set_context: ids is NULL");
    vkl_decode_stream_reset(s);
    /* All of the prompt, decoded once for the first push: its last few ids
     * could start inside a character, and byte fallback turns a whole run of
     * byte tokens into U+FFFD when the run does not start on a character.
     * Ids that leave a character incomplete (at most three: UTF-8 has four
     * bytes at most) stay pending: the character comes whole with the push
     * that completes it. A text that ends in U+FFFD however many ids are
     * dropped really does, and stays as it is. */
    size_t text_len = 0;
    vkl_status st = tok_ids_append(s->t->ctx, &s->window, ids, n);
    if (!st) st = decode_window(s, &text_len);
    size_t mark = n, shown = text_len;
    bool incomplete = !st && ends_incomplete(s->last, text_len);
    for (size_t m = n; incomplete && m-- > 0 && m + 3 >= n;) {
        size_t len;
        s->window.n = m;
        if ((st = decode_window(s, &len))) break;
        if (!ends_incomplete(s->last, len)) {
            mark = m;
            shown = len;
            break;
        }
    }
    s->window.n = n;
    if (st) {
        vkl_decode_stream_reset(s);
        return st;
    }
    s->mark = mark;
    s->shown = shown;
    return VKL_OK;
}

vkl_status vkl_decode_stream_push(vkl_decode_stream *s, int32_t id, const char **text, size_t *len) {
    if (!s) return VKL_ERR_INVALID_ARGUMENT;
    if (!text) return vkl_fail(s->t->ctx, VKL_ERR_INVALID_ARGUMENT, "vkl_decode_stream_push: text is NULL");
    give("", 0, text, len);
    size_t n;
    vkl_status st = tok_ids_push(s->t->ctx, &s->window, id);
    if (!st) st = decode_window(s, &n);
    if (st) return st;
    if (ends_incomplete(s->last, n)) return VKL_OK; /* wait for the rest */
    /* A decoder that is not prefix-stable can decode the longer window to
     * less text than its context; nothing handed out can be taken back. */
    if (n > s->shown) give(s->last + s->shown, n - s->shown, text, len);
    /* Slide: the pending ids become the next step's context. */
    if (s->mark) {
        memmove(s->window.v, s->window.v + s->mark, (s->window.n - s->mark) * sizeof(int32_t));
        s->window.n -= s->mark;
        char *piece = s->last;
        s->last = NULL; /* keep the returned text alive while the context is decoded */
        st = vkl_tokenizer_decode(s->t, s->window.v, s->window.n, s->skip_special, &s->last, &n);
        vkl_tokenizer_free_buffer(s->t, s->last);
        s->last = piece;
        if (st) return st;
    }
    s->mark = s->window.n;
    s->shown = n;
    return VKL_OK;
}

vkl_status vkl_decode_stream_flush(vkl_decode_stream *s, const char **text, size_t *len) {
    if (!s) return VKL_ERR_INVALID_ARGUMENT;
    if (!text) return vkl_fail(s->t->ctx, VKL_ERR_INVALID_ARGUMENT, "vkl_decode_stream_flush: text is NULL");
    give("", 0, text, len);
    size_t n = 0, shown = s->shown;
    vkl_status st = s->window.n > s->mark ? decode_window(s, &n) : VKL_OK;
    if (st) return st;
    /* reset, keeping the decode the returned text points into */
    char *last = s->last;
    s->last = NULL;
    vkl_decode_stream_reset(s);
    s->last = last;
    if (last && n > shown) give(last + shown, n - shown, text, len);
    return VKL_OK;
}
