/* Growable buffers and the open-addressing hash maps behind the vocabulary
 * (string -> id) and the BPE merges ((id, id) -> rank, new id). */
#include <string.h>

#include "tok_internal.h"

vkl_status tok_grow(vkl_context *ctx, void **p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return VKL_OK;
    size_t c = *cap ? *cap : 16;
    while (c < need) {
        if (c > SIZE_MAX / 2) return vkl_fail(ctx, VKL_ERR_OUT_OF_MEMORY, "tokenizer buffer size overflows");
        c *= 2;
    }
    void *q = vkl_realloc_array(ctx, *p, c, size);
    if (!q) return VKL_ERR_OUT_OF_MEMORY;
    *p = q;
    *cap = c;
    return VKL_OK;
}

vkl_status tok_buf_reserve(vkl_context *ctx, tok_buf *b, size_t extra) {
    size_t need;
    if (!vkl_add_size(b->n, extra, &need) || !vkl_add_size(need, 1, &need))
        return vkl_fail(ctx, VKL_ERR_OUT_OF_MEMORY, "tokenizer text size overflows");
    return tok_grow(ctx, (void **)&b->p, &b->cap, need, 1);
}

vkl_status tok_buf_append(vkl_context *ctx, tok_buf *b, const void *data, size_t n) {
    vkl_status st = tok_buf_reserve(ctx, b, n);
    if (st) return st;
    if (n) memcpy(b->p + b->n, data, n);
    b->n += n;
    b->p[b->n] = 0;
    return VKL_OK;
}

vkl_status tok_buf_putc(vkl_context *ctx, tok_buf *b, char c) {
    if (b->n + 1 < b->cap) {
        b->p[b->n++] = c;
        b->p[b->n] = 0;
        return VKL_OK;
    }
    return tok_buf_append(ctx, b, &c, 1);
}

vkl_status tok_buf_put_cp(vkl_context *ctx, tok_buf *b, uint32_t cp) {
    char u[4];
    size_t k = tok_utf8_encode(cp, u);
    return tok_buf_append(ctx, b, u, k);
}

void tok_buf_free(vkl_context *ctx, tok_buf *b) {
    vkl_free(ctx, b->p);
    memset(b, 0, sizeof(*b));
}

vkl_status tok_ids_push(vkl_context *ctx, tok_ids *v, int32_t id) {
    if (v->n == v->cap) {
        vkl_status st = tok_grow(ctx, (void **)&v->v, &v->cap, v->n + 1, sizeof(int32_t));
        if (st) return st;
    }
    v->v[v->n++] = id;
    return VKL_OK;
}

vkl_status tok_ids_append(vkl_context *ctx, tok_ids *v, const int32_t *ids, size_t n) {
    size_t need;
    if (!vkl_add_size(v->n, n, &need)) return vkl_fail(ctx, VKL_ERR_OUT_OF_MEMORY, "token count overflows");
    vkl_status st = tok_grow(ctx, (void **)&v->v, &v->cap, need, sizeof(int32_t));
    if (st) return st;
    if (n) memcpy(v->v + v->n, ids, n * sizeof(int32_t));
    v->n = need;
    return VKL_OK;
}

void tok_ids_free(vkl_context *ctx, tok_ids *v) {
    vkl_free(ctx, v->v);
    memset(v, 0, sizeof(*v));
}

vkl_status tok_spans_push(vkl_context *ctx, tok_spans *v, size_t start, size_t end) {
    if (v->n == v->cap) {
        vkl_status st = tok_grow(ctx, (void **)&v->v, &v->cap, v->n + 1, sizeof(tok_span));
        if (st) return st;
    }
    v->v[v->n].start = start;
    v->v[v->n].end = end;
    v->n++;
    return VKL_OK;
}

void tok_spans_free(vkl_context *ctx, tok_spans *v) {
    vkl_free(ctx, v->v);
    memset(v, 0, sizeof(*v));
}

vkl_status tok_pieces_push(vkl_context *ctx, tok_pieces *l, const char *s, size_t n, int32_t id, uint32_t flags) {
    if (l->n == l->cap) {
        vkl_status st = tok_grow(ctx, (void **)&l->v, &l->cap, l->n + 1, sizeof(tok_piece));
        if (st) return st;
    }
    size_t off = l->text.n;
    /* always allocate, so text.p + off is never arithmetic on NULL */
    vkl_status st = n ? tok_buf_append(ctx, &l->text, s, n) : tok_buf_reserve(ctx, &l->text, 0);
    if (st) return st;
    l->v[l->n++] = (tok_piece){off, n, id, flags};
    return VKL_OK;
}

void tok_pieces_clear(tok_pieces *l) {
    l->n = 0;
    l->text.n = 0;
}

void tok_pieces_free(vkl_context *ctx, tok_pieces *l) {
    tok_buf_free(ctx, &l->text);
    vkl_free(ctx, l->v);
    memset(l, 0, sizeof(*l));
}

/* FNV-1a folded with a final avalanche: keys are short token strings. */
uint32_t tok_hash_bytes(const void *p, size_t n) {
    const unsigned char *s = p;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 16777619u;
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    return h;
}

static size_t pow2_at_least(size_t n) {
    size_t c = 16;
    while (c < n && c < ((size_t)1 << 40)) c *= 2;
    return c;
}

vkl_status tok_strmap_init(vkl_context *ctx, tok_strmap *m, size_t expected) {
    memset(m, 0, sizeof(*m));
    size_t cap = pow2_at_least(expected * 2 + 1);
    m->slots = vkl_calloc(ctx, cap, sizeof(uint32_t));
    if (!m->slots) return VKL_ERR_OUT_OF_MEMORY;
    m->mask = cap - 1;
    return VKL_OK;
}

static bool strmap_find(const tok_strmap *m, const char *k, size_t n, uint32_t h, size_t *slot) {
    size_t i = h & m->mask;
    for (;;) {
        uint32_t s = m->slots[i];
        if (!s) {
            *slot = i;
            return false;
        }
        const tok_strmap_entry *e = &m->e[s - 1];
        if (e->hash == h && e->len == n && !memcmp(m->pool.p + e->off, k, n)) {
            *slot = i;
            return true;
        }
        i = (i + 1) & m->mask;
    }
}

static vkl_status strmap_rehash(vkl_context *ctx, tok_strmap *m) {
    size_t cap = (m->mask + 1) * 2;
    uint32_t *slots = vkl_calloc(ctx, cap, sizeof(uint32_t));
    if (!slots) return VKL_ERR_OUT_OF_MEMORY;
    for (size_t j = 0; j < m->n; j++) {
        size_t i = m->e[j].hash & (cap - 1);
        while (slots[i]) i = (i + 1) & (cap - 1);
        slots[i] = (uint32_t)(j + 1);
    }
    vkl_free(ctx, m->slots);
    m->slots = slots;
    m->mask = cap - 1;
    return VKL_OK;
}

vkl_status tok_strmap_put(vkl_context *ctx, tok_strmap *m, const char *k, size_t n, int32_t val, bool overwrite) {
    if (n > UINT32_MAX || m->pool.n > UINT32_MAX - n || m->n >= UINT32_MAX - 1)
        return vkl_fail(ctx, VKL_ERR_OVERFLOW, "vocabulary larger than 4 GiB");
    uint32_t h = tok_hash_bytes(k, n);
    size_t slot;
    if (strmap_find(m, k, n, h, &slot)) {
        if (overwrite) m->e[m->slots[slot] - 1].val = val;
        return VKL_OK;
    }
    vkl_status st = tok_grow(ctx, (void **)&m->e, &m->e_cap, m->n + 1, sizeof(tok_strmap_entry));
    if (st) return st;
    uint32_t off = (uint32_t)m->pool.n;
    if ((st = tok_buf_append(ctx, &m->pool, k, n))) return st;
    m->e[m->n] = (tok_strmap_entry){off, (uint32_t)n, val, h};
    m->slots[slot] = (uint32_t)(m->n + 1);
    m->n++;
    if (m->n * 2 > m->mask + 1) return strmap_rehash(ctx, m);
    return VKL_OK;
}

bool tok_strmap_get(const tok_strmap *m, const char *k, size_t n, int32_t *val) {
    if (!m->slots) return false;
    size_t slot;
    if (!strmap_find(m, k, n, tok_hash_bytes(k, n), &slot)) return false;
    *val = m->e[m->slots[slot] - 1].val;
    return true;
}

void tok_strmap_free(vkl_context *ctx, tok_strmap *m) {
    tok_buf_free(ctx, &m->pool);
    vkl_free(ctx, m->e);
    vkl_free(ctx, m->slots);
    memset(m, 0, sizeof(*m));
}

static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

vkl_status tok_pairmap_init(vkl_context *ctx, tok_pairmap *m, size_t expected) {
    memset(m, 0, sizeof(*m));
    size_t cap = pow2_at_least(expected * 2 + 1);
    m->keys = vkl_malloc(ctx, cap * sizeof(uint64_t));
    m->vals = vkl_malloc(ctx, cap * sizeof(uint64_t));
    if (!m->keys || !m->vals) return VKL_ERR_OUT_OF_MEMORY;
    memset(m->keys, 0xff, cap * sizeof(uint64_t));
    m->mask = cap - 1;
    return VKL_OK;
}

/* The table is sized for every merge up front, so insertion never grows it;
 * a later duplicate pair overwrites the earlier one, as HF's map collect. */
void tok_pairmap_put(tok_pairmap *m, int32_t a, int32_t b, uint32_t rank, int32_t new_id) {
    uint64_t k = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    size_t i = mix64(k) & m->mask;
    while (m->keys[i] != UINT64_MAX && m->keys[i] != k) i = (i + 1) & m->mask;
    if (m->keys[i] == UINT64_MAX) m->n++;
    m->keys[i] = k;
    m->vals[i] = (uint64_t)rank << 32 | (uint32_t)new_id;
}

bool tok_pairmap_get(const tok_pairmap *m, int32_t a, int32_t b, uint32_t *rank, int32_t *new_id) {
    if (!m->keys) return false;
    uint64_t k = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    size_t i = mix64(k) & m->mask;
    for (;;) {
        uint64_t c = m->keys[i];
        if (c == k) {
            *rank = (uint32_t)(m->vals[i] >> 32);
            *new_id = (int32_t)(uint32_t)m->vals[i];
            return true;
        }
        if (c == UINT64_MAX) return false;
        i = (i + 1) & m->mask;
    }
}

void tok_pairmap_free(vkl_context *ctx, tok_pairmap *m) {
    vkl_free(ctx, m->keys);
    vkl_free(ctx, m->vals);
    memset(m, 0, sizeof(*m));
}

vkl_status tok_vocab_index_ids(vkl_context *ctx, tok_vocab *v) {
    size_t max = 0;
    for (size_t i = 0; i < v->map.n; i++) {
        int32_t id = v->map.e[i].val;
        if ((size_t)id + 1 > max) max = (size_t)id + 1;
    }
    vkl_free(ctx, v->by_id);
    v->by_id = vkl_calloc(ctx, max + 1, sizeof(uint32_t));
    if (!v->by_id) return VKL_ERR_OUT_OF_MEMORY;
    v->n_ids = max;
    /* Two tokens with one id: the first listed keeps it, as HF's reverse map. */
    for (size_t i = 0; i < v->map.n; i++) {
        int32_t id = v->map.e[i].val;
        if (!v->by_id[id]) v->by_id[id] = (uint32_t)(i + 1);
    }
    return VKL_OK;
}

const char *tok_vocab_token(const tok_vocab *v, int32_t id, size_t *len) {
    if (id < 0 || (size_t)id >= v->n_ids || !v->by_id[id]) return NULL;
    const tok_strmap_entry *e = &v->map.e[v->by_id[id] - 1];
    *len = e->len;
    return v->map.pool.p + e->off;
}

void tok_vocab_free(vkl_context *ctx, tok_vocab *v) {
    tok_strmap_free(ctx, &v->map);
    vkl_free(ctx, v->by_id);
    memset(v, 0, sizeof(*v));
}
