/* Symbolic shape expressions (Transformer-Lite §2.1): polynomials over symbols
 * and opaque floordiv/mod/min/max atoms, in one canonical hash-consed form. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "context.h"
#include "sym.h"

/* Limits that keep recursion bounded and hostile input cheap. */
#define DEPTH_MAX 128u       /* opaque atoms nested inside each other */
#define TERMS_MAX 65536u     /* terms of a product before expansion is refused */
#define EXP_MAX (1u << 20)   /* exponent of one atom in a monomial */
#define DIV_WORK_MAX (1u << 22) /* remainder terms long division may touch */
#define PARSE_DEPTH_MAX 256u /* nesting of parentheses and unary minus */
#define TEXT_MAX 160         /* bytes of an expression quoted in a message */

#define NONE UINT32_MAX
#define INF INT64_MAX  /* as a range's hi: unbounded above */
#define NINF INT64_MIN /* as a range's lo: unbounded below */

/* The enum order is the canonical order between atoms of different kinds. */
typedef enum atom_kind { ATOM_SYM, ATOM_FLOORDIV, ATOM_MOD, ATOM_MIN, ATOM_MAX } atom_kind;

typedef struct factor { uint32_t atom, exp; } factor;
typedef struct term { int64_t coef; uint32_t fstart, flen; } term;
typedef struct range { int64_t lo, hi; } range;

/* x: symbol index (SYM) or first operand; y: second operand (MIN, MAX);
 * c: divisor (FLOORDIV, MOD). */
typedef struct atom_key { uint32_t kind, x, y; int64_t c; } atom_key;

typedef struct atom_rec { atom_key key; range r; uint32_t depth, hash; } atom_rec;
typedef struct expr_rec { uint32_t tstart, tcount, depth, hash; } expr_rec;
typedef struct symbol { char *name; uint32_t hash; vkl_expr expr; } symbol;

typedef struct slot { uint32_t hash, id; } slot;
typedef struct htab { slot *slots; size_t cap, used; } htab;

struct vkl_symtab {
    vkl_context *ctx;
    symbol *syms;
    size_t nsyms, csyms;
    atom_rec *atoms;
    size_t natoms, catoms;
    expr_rec *exprs;
    size_t nexprs, cexprs;
    term *terms; /* every expression's terms, back to back */
    size_t nterms, cterms;
    factor *factors; /* every term's factors, back to back */
    size_t nfactors, cfactors;
    htab hsyms, hatoms, hexprs;
};

/* A read-only polynomial: terms sorted by the monomial order, factor indexes
 * relative to f. Views into the table die with the next interning. */
typedef struct poly { const term *t; size_t n; const factor *f; } poly;
typedef struct mono { const factor *f; uint32_t n; } mono;

/* A polynomial under construction, owned by the caller. */
typedef struct tpoly {
    term *t;
    size_t n, cap;
    factor *f;
    size_t nf, fcap;
} tpoly;

/* Internal operations report only a status and a static reason; the public
 * entry point turns them into a message (or not, for queries). */
typedef struct work {
    const vkl_symtab *t;
    const char *why;
} work;

static vkl_status failw(work *w, vkl_status st, const char *why) {
    if (!w->why) w->why = why;
    return st;
}

static int64_t fdiv(int64_t a, int64_t c) { /* c > 0, Python's a // c */
    int64_t q = a / c;
    return (a % c < 0) ? q - 1 : q;
}

static int64_t fmod_py(int64_t a, int64_t c) { /* c > 0, Python's a % c */
    int64_t r = a % c;
    return r < 0 ? r + c : r;
}

static int64_t gcd64(int64_t a, int64_t b) { /* a, b > 0 */
    while (b) {
        int64_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

/* ---- hashing ---- */

static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15u + (h << 6) + (h >> 2);
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9u;
    h ^= h >> 27;
    return h;
}

static uint32_t fold(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdu;
    h ^= h >> 33;
    return (uint32_t)h;
}

static uint32_t poly_hash(poly p) {
    uint64_t h = p.n;
    for (size_t i = 0; i < p.n; i++) {
        h = mix(h, (uint64_t)p.t[i].coef);
        h = mix(h, p.t[i].flen);
        const factor *f = p.f + p.t[i].fstart;
        for (uint32_t k = 0; k < p.t[i].flen; k++) h = mix(h, ((uint64_t)f[k].atom << 32) | f[k].exp);
    }
    return fold(h);
}

static uint32_t atom_hash(const atom_key *k) {
    uint64_t h = mix(mix(k->kind, k->x), k->y);
    return fold(mix(h, (uint64_t)k->c));
}

static uint32_t name_hash(const char *s) {
    uint64_t h = 1469598103934665603u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
    return fold(h);
}

/* ---- growth and hash sets ---- */

/* Returns the grown array, or NULL leaving ptr and *cap untouched. */
static void *resize(work *w, void *ptr, size_t *cap, size_t need, size_t elem) {
    if (ptr && need <= *cap) return ptr;
    size_t n = *cap ? *cap : 8;
    while (n < need) {
        if (n > SIZE_MAX / 2) return NULL;
        n *= 2;
    }
    size_t bytes;
    if (!vkl_mul_size(n, elem, &bytes)) return NULL;
    vkl_context *c = w->t->ctx;
    void *p = c->alloc.realloc(c->alloc.user, ptr, bytes);
    if (p) *cap = n;
    return p;
}

#define RESERVE(w, arr, cap, need)                                                   \
    do {                                                                             \
        void *p_ = resize((w), (arr), &(cap), (need), sizeof *(arr));                \
        if (!p_) return failw((w), VKL_ERR_OUT_OF_MEMORY, "out of host memory");     \
        (arr) = p_;                                                                  \
    } while (0)

typedef bool (*eq_fn)(const vkl_symtab *t, uint32_t id, const void *key);

/* Slot holding a match for key, or the empty slot where it would go. */
static size_t ht_find(const vkl_symtab *t, const htab *h, uint32_t hash, eq_fn eq, const void *key) {
    size_t mask = h->cap - 1, i = hash & mask;
    while (h->slots[i].id != NONE) {
        if (h->slots[i].hash == hash && eq(t, h->slots[i].id, key)) return i;
        i = (i + 1) & mask;
    }
    return i;
}

/* Keeps the load at most one half, so probes stay short. */
static vkl_status ht_make_room(work *w, htab *h) {
    if ((h->used + 1) * 2 <= h->cap) return VKL_OK;
    size_t ncap = h->cap ? h->cap * 2 : 64, bytes;
    if (ncap < h->cap || !vkl_mul_size(ncap, sizeof(slot), &bytes))
        return failw(w, VKL_ERR_OUT_OF_MEMORY, "hash table too large");
    vkl_context *c = w->t->ctx;
    slot *s = c->alloc.malloc(c->alloc.user, bytes);
    if (!s) return failw(w, VKL_ERR_OUT_OF_MEMORY, "out of host memory");
    memset(s, 0xff, bytes); /* every id NONE */
    for (size_t i = 0; i < h->cap; i++) {
        if (h->slots[i].id == NONE) continue;
        size_t j = h->slots[i].hash & (ncap - 1);
        while (s[j].id != NONE) j = (j + 1) & (ncap - 1);
        s[j] = h->slots[i];
    }
    vkl_free(c, h->slots);
    h->slots = s;
    h->cap = ncap;
    return VKL_OK;
}

static void ht_insert(htab *h, size_t at, uint32_t hash, uint32_t id) {
    h->slots[at] = (slot){hash, id};
    h->used++;
}

/* ---- views ---- */

static bool valid(const vkl_symtab *t, vkl_expr e) { return e < t->nexprs; }

static poly expr_poly(const vkl_symtab *t, vkl_expr e) {
    const expr_rec *r = &t->exprs[e];
    return (poly){t->terms + r->tstart, r->tcount, t->factors};
}

static mono term_mono(poly p, size_t i) { return (mono){p.f + p.t[i].fstart, p.t[i].flen}; }

static poly tp_view(const tpoly *p) { return (poly){p->t, p->n, p->f}; }

static void tp_free(const vkl_symtab *t, tpoly *p) {
    vkl_free(t->ctx, p->t);
    vkl_free(t->ctx, p->f);
    *p = (tpoly){0};
}

/* The single atom of a polynomial that is exactly 1*atom, if it is one. */
static bool single_atom(poly p, uint32_t *atom) {
    if (p.n != 1 || p.t[0].coef != 1 || p.t[0].flen != 1) return false;
    const factor *f = p.f + p.t[0].fstart;
    if (f->exp != 1) return false;
    *atom = f->atom;
    return true;
}

static const atom_key *atom_of(const vkl_symtab *t, uint32_t a) { return &t->atoms[a].key; }

/* ---- canonical order ----
 * Atoms order structurally (kind, then symbol name or operands), so the
 * canonical form and its printed text do not depend on creation history.
 * Monomials use graded lex order, a true monomial order, which is what makes
 * leading-term long division complete. Recursion depth is bounded by
 * DEPTH_MAX. */

static int poly_cmp(const vkl_symtab *t, poly a, poly b);

static int expr_cmp(const vkl_symtab *t, vkl_expr a, vkl_expr b) {
    return a == b ? 0 : poly_cmp(t, expr_poly(t, a), expr_poly(t, b));
}

static int i64_cmp(int64_t a, int64_t b) { return a < b ? -1 : a > b; }

static int atom_cmp(const vkl_symtab *t, uint32_t a, uint32_t b) {
    if (a == b) return 0;
    const atom_key *x = atom_of(t, a), *y = atom_of(t, b);
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    if (x->kind == ATOM_SYM) return strcmp(t->syms[x->x].name, t->syms[y->x].name);
    int c = expr_cmp(t, x->x, y->x);
    if (c) return c;
    if (x->kind == ATOM_FLOORDIV || x->kind == ATOM_MOD) return i64_cmp(x->c, y->c);
    return expr_cmp(t, x->y, y->y);
}

static uint64_t mono_degree(mono m) {
    uint64_t d = 0;
    for (uint32_t i = 0; i < m.n; i++) d += m.f[i].exp;
    return d;
}

/* Negative when a comes first, i.e. a is the larger monomial. */
static int mono_cmp(const vkl_symtab *t, mono a, mono b) {
    uint64_t da = mono_degree(a), db = mono_degree(b);
    if (da != db) return da > db ? -1 : 1;
    for (uint32_t i = 0; i < a.n && i < b.n; i++) {
        if (a.f[i].atom != b.f[i].atom) return atom_cmp(t, a.f[i].atom, b.f[i].atom);
        if (a.f[i].exp != b.f[i].exp) return a.f[i].exp > b.f[i].exp ? -1 : 1;
    }
    return a.n == b.n ? 0 : (a.n > b.n ? -1 : 1);
}

static int poly_cmp(const vkl_symtab *t, poly a, poly b) {
    for (size_t i = 0; i < a.n && i < b.n; i++) {
        int c = mono_cmp(t, term_mono(a, i), term_mono(b, i));
        if (c) return c;
        c = i64_cmp(a.t[i].coef, b.t[i].coef);
        if (c) return c;
    }
    return a.n == b.n ? 0 : (a.n < b.n ? -1 : 1);
}

static bool poly_equal(poly a, poly b) {
    if (a.n != b.n) return false;
    for (size_t i = 0; i < a.n; i++) {
        if (a.t[i].coef != b.t[i].coef || a.t[i].flen != b.t[i].flen) return false;
        if (a.t[i].flen &&
            memcmp(a.f + a.t[i].fstart, b.f + b.t[i].fstart, a.t[i].flen * sizeof(factor)))
            return false;
    }
    return true;
}

/* ---- value ranges ----
 * Sound integer intervals over all non-negative symbol values. lo == NINF
 * means unbounded below, hi == INF unbounded above; a bound that overflows is
 * rounded outward, so a range is always valid, if sometimes loose. */

static range range_make(int64_t lo, int64_t hi) {
    if (lo == INF) lo = INF - 1; /* a finite lower bound, never "+infinity" */
    if (hi == NINF) hi = NINF + 1;
    return (range){lo, hi};
}

static range range_point(int64_t v) { return range_make(v, v); }

static int64_t ext_mul(int64_t x, int64_t y) {
    if (x == 0 || y == 0) return 0;
    bool neg = (x < 0) != (y < 0);
    int64_t r;
    if (x == INF || x == NINF || y == INF || y == NINF || __builtin_mul_overflow(x, y, &r))
        return neg ? NINF : INF;
    return r;
}

static range range_mul(range a, range b) {
    int64_t c[4] = {ext_mul(a.lo, b.lo), ext_mul(a.lo, b.hi), ext_mul(a.hi, b.lo),
                    ext_mul(a.hi, b.hi)};
    int64_t lo = c[0], hi = c[0];
    for (int i = 1; i < 4; i++) {
        if (c[i] < lo) lo = c[i];
        if (c[i] > hi) hi = c[i];
    }
    return range_make(lo, hi);
}

static range range_add(range a, range b) {
    int64_t lo, hi;
    if (a.lo == NINF || b.lo == NINF) lo = NINF;
    else if (__builtin_add_overflow(a.lo, b.lo, &lo)) lo = a.lo > 0 ? INF - 1 : NINF;
    if (a.hi == INF || b.hi == INF) hi = INF;
    else if (__builtin_add_overflow(a.hi, b.hi, &hi)) hi = a.hi > 0 ? INF : NINF + 1;
    return range_make(lo, hi);
}

static range range_pow(range r, uint32_t e) {
    range acc = {1, 1};
    while (e) {
        if (e & 1) acc = range_mul(acc, r);
        e >>= 1;
        if (e) r = range_mul(r, r);
    }
    return acc;
}

static range mono_range(const vkl_symtab *t, mono m) {
    range r = {1, 1};
    for (uint32_t i = 0; i < m.n; i++) r = range_mul(r, range_pow(t->atoms[m.f[i].atom].r, m.f[i].exp));
    return r;
}

static range poly_range(const vkl_symtab *t, poly p) {
    range s = {0, 0};
    for (size_t i = 0; i < p.n; i++)
        s = range_add(s, range_mul(range_point(p.t[i].coef), mono_range(t, term_mono(p, i))));
    return s;
}

static bool range_bounded(range r) { return r.lo != NINF && r.hi != INF; }

static range atom_range(const vkl_symtab *t, const atom_key *k) {
    switch ((atom_kind)k->kind) {
    case ATOM_SYM: return (range){0, INF};
    case ATOM_MOD: return (range){0, k->c - 1};
    case ATOM_FLOORDIV: {
        range r = poly_range(t, expr_poly(t, k->x));
        return range_make(r.lo == NINF ? NINF : fdiv(r.lo, k->c), r.hi == INF ? INF : fdiv(r.hi, k->c));
    }
    case ATOM_MIN:
    case ATOM_MAX: {
        range a = poly_range(t, expr_poly(t, k->x)), b = poly_range(t, expr_poly(t, k->y));
        if (k->kind == ATOM_MIN) return (range){a.lo < b.lo ? a.lo : b.lo, a.hi < b.hi ? a.hi : b.hi};
        return (range){a.lo > b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi};
    }
    }
    return (range){NINF, INF};
}

/* ---- temporary polynomials ---- */

static vkl_status tp_reserve(work *w, tpoly *p, size_t nfactors) {
    if (nfactors > UINT32_MAX - p->nf) return failw(w, VKL_ERR_UNSUPPORTED, "expression too large");
    RESERVE(w, p->t, p->cap, p->n + 1);
    RESERVE(w, p->f, p->fcap, p->nf + nfactors);
    return VKL_OK;
}

/* m must not point into p. */
static vkl_status tp_push(work *w, tpoly *p, int64_t coef, mono m) {
    vkl_status st = tp_reserve(w, p, m.n);
    if (st) return st;
    if (m.n) memcpy(p->f + p->nf, m.f, m.n * sizeof *m.f);
    p->t[p->n++] = (term){coef, (uint32_t)p->nf, m.n};
    p->nf += m.n;
    return VKL_OK;
}

/* Appends coef * x * y; x and y must not point into p. */
static vkl_status tp_push_product(work *w, tpoly *p, int64_t coef, mono x, mono y) {
    vkl_status st = tp_reserve(w, p, (size_t)x.n + y.n);
    if (st) return st;
    factor *d = p->f + p->nf;
    uint32_t n = 0, i = 0, j = 0;
    while (i < x.n || j < y.n) {
        int c = i == x.n ? 1 : j == y.n ? -1 : atom_cmp(w->t, x.f[i].atom, y.f[j].atom);
        if (c < 0) d[n++] = x.f[i++];
        else if (c > 0) d[n++] = y.f[j++];
        else {
            uint32_t e = x.f[i].exp + y.f[j].exp; /* each <= EXP_MAX: no wrap */
            if (e > EXP_MAX) return failw(w, VKL_ERR_OVERFLOW, "exponent too large");
            d[n++] = (factor){x.f[i].atom, e};
            i++, j++;
        }
    }
    p->t[p->n++] = (term){coef, (uint32_t)p->nf, n};
    p->nf += n;
    return VKL_OK;
}

/* Appends coef * m / d, or sets *ok false when d does not divide m. Both
 * factor lists share one order, so d's factors appear in m in sequence. */
static vkl_status tp_push_quotient(work *w, tpoly *p, int64_t coef, mono m, mono d, bool *ok) {
    vkl_status st = tp_reserve(w, p, m.n);
    if (st) return st;
    factor *o = p->f + p->nf;
    uint32_t n = 0, j = 0;
    for (uint32_t i = 0; i < m.n; i++) {
        if (j < d.n && m.f[i].atom == d.f[j].atom) {
            if (m.f[i].exp < d.f[j].exp) break;
            if (m.f[i].exp > d.f[j].exp) o[n++] = (factor){m.f[i].atom, m.f[i].exp - d.f[j].exp};
            j++;
        } else {
            o[n++] = m.f[i];
        }
    }
    *ok = j == d.n;
    if (!*ok) return VKL_OK;
    p->t[p->n++] = (term){coef, (uint32_t)p->nf, n};
    p->nf += n;
    return VKL_OK;
}

static int term_cmp(const vkl_symtab *t, const factor *f, const term *a, const term *b) {
    return mono_cmp(t, (mono){f + a->fstart, a->flen}, (mono){f + b->fstart, b->flen});
}

/* Merge sort with the table as comparison context (qsort has none). */
static void sort_terms(const vkl_symtab *t, const factor *f, term *a, term *tmp, size_t n) {
    if (n <= 8) {
        for (size_t i = 1; i < n; i++) {
            term x = a[i];
            size_t j = i;
            for (; j > 0 && term_cmp(t, f, &a[j - 1], &x) > 0; j--) a[j] = a[j - 1];
            a[j] = x;
        }
        return;
    }
    size_t h = n / 2, i = 0, j = h, k = 0;
    sort_terms(t, f, a, tmp, h);
    sort_terms(t, f, a + h, tmp, n - h);
    while (i < h && j < n) tmp[k++] = term_cmp(t, f, &a[j], &a[i]) < 0 ? a[j++] : a[i++];
    while (i < h) tmp[k++] = a[i++];
    while (j < n) tmp[k++] = a[j++];
    memcpy(a, tmp, n * sizeof *a);
}

/* Sorts terms, merges equal monomials and drops zero coefficients. */
static vkl_status tp_normalize(work *w, tpoly *p) {
    const vkl_symtab *t = w->t;
    if (p->n > 8) {
        size_t bytes;
        if (!vkl_mul_size(p->n, sizeof(term), &bytes))
            return failw(w, VKL_ERR_OUT_OF_MEMORY, "expression too large");
        term *tmp = t->ctx->alloc.malloc(t->ctx->alloc.user, bytes);
        if (!tmp) return failw(w, VKL_ERR_OUT_OF_MEMORY, "out of host memory");
        sort_terms(t, p->f, p->t, tmp, p->n);
        vkl_free(t->ctx, tmp);
    } else {
        sort_terms(t, p->f, p->t, NULL, p->n);
    }
    size_t out = 0;
    for (size_t i = 0; i < p->n; i++) {
        if (out && term_cmp(t, p->f, &p->t[out - 1], &p->t[i]) == 0) {
            if (!vkl_add_i64(p->t[out - 1].coef, p->t[i].coef, &p->t[out - 1].coef))
                return failw(w, VKL_ERR_OVERFLOW, "coefficient overflows int64");
        } else {
            p->t[out++] = p->t[i];
        }
    }
    size_t kept = 0;
    for (size_t i = 0; i < out; i++)
        if (p->t[i].coef) p->t[kept++] = p->t[i];
    p->n = kept;
    return VKL_OK;
}

/* out = a + sign * b, merging two sorted term lists. */
static vkl_status poly_add(work *w, poly a, poly b, int sign, tpoly *out) {
    size_t i = 0, j = 0;
    while (i < a.n || j < b.n) {
        int c = i == a.n ? 1 : j == b.n ? -1 : mono_cmp(w->t, term_mono(a, i), term_mono(b, j));
        int64_t k = c < 0 ? a.t[i].coef : 0, kb = c >= 0 ? b.t[j].coef : 0;
        if (c >= 0 && sign < 0 && !vkl_sub_i64(0, kb, &kb))
            return failw(w, VKL_ERR_OVERFLOW, "coefficient overflows int64");
        if (c == 0 && !vkl_add_i64(a.t[i].coef, kb, &k))
            return failw(w, VKL_ERR_OVERFLOW, "coefficient overflows int64");
        if (c > 0) k = kb;
        mono m = c <= 0 ? term_mono(a, i) : term_mono(b, j);
        if (c <= 0) i++;
        if (c >= 0) j++;
        if (k) {
            vkl_status st = tp_push(w, out, k, m);
            if (st) return st;
        }
    }
    return VKL_OK;
}

/* out = (k * m) * b; the order of b's terms survives multiplication. */
static vkl_status poly_scale(work *w, poly b, int64_t k, mono m, tpoly *out) {
    for (size_t i = 0; i < b.n; i++) {
        int64_t c;
        if (!vkl_mul_i64(b.t[i].coef, k, &c)) return failw(w, VKL_ERR_OVERFLOW, "coefficient overflows int64");
        vkl_status st = tp_push_product(w, out, c, term_mono(b, i), m);
        if (st) return st;
    }
    return VKL_OK;
}

static vkl_status poly_mul(work *w, poly a, poly b, tpoly *out) {
    if ((uint64_t)a.n * b.n > TERMS_MAX)
        return failw(w, VKL_ERR_UNSUPPORTED, "product would have more than 65536 terms");
    for (size_t i = 0; i < a.n; i++) {
        for (size_t j = 0; j < b.n; j++) {
            int64_t c;
            if (!vkl_mul_i64(a.t[i].coef, b.t[j].coef, &c))
                return failw(w, VKL_ERR_OVERFLOW, "coefficient overflows int64");
            vkl_status st = tp_push_product(w, out, c, term_mono(a, i), term_mono(b, j));
            if (st) return st;
        }
    }
    return tp_normalize(w, out);
}

/* ---- interning ---- */

static bool eq_expr(const vkl_symtab *t, uint32_t id, const void *key) {
    return poly_equal(expr_poly(t, id), *(const poly *)key);
}

static bool eq_atom(const vkl_symtab *t, uint32_t id, const void *key) {
    const atom_key *a = atom_of(t, id), *b = key;
    return a->kind == b->kind && a->x == b->x && a->y == b->y && a->c == b->c;
}

static bool eq_name(const vkl_symtab *t, uint32_t id, const void *key) {
    return strcmp(t->syms[id].name, key) == 0;
}

/* p must be canonical and must not point into the table. */
static vkl_status intern_poly(vkl_symtab *t, work *w, poly p, vkl_expr *out) {
    uint32_t h = poly_hash(p);
    size_t at = ht_find(t, &t->hexprs, h, eq_expr, &p);
    if (t->hexprs.slots[at].id != NONE) {
        *out = t->hexprs.slots[at].id;
        return VKL_OK;
    }
    size_t nf = 0;
    uint32_t depth = 0;
    for (size_t i = 0; i < p.n; i++) {
        nf += p.t[i].flen;
        for (uint32_t k = 0; k < p.t[i].flen; k++) {
            uint32_t d = t->atoms[p.f[p.t[i].fstart + k].atom].depth;
            if (d > depth) depth = d;
        }
    }
    if (t->nexprs >= NONE - 1 || p.n > UINT32_MAX - t->nterms || nf > UINT32_MAX - t->nfactors)
        return failw(w, VKL_ERR_UNSUPPORTED, "symbol table is full");
    RESERVE(w, t->exprs, t->cexprs, t->nexprs + 1);
    RESERVE(w, t->terms, t->cterms, t->nterms + p.n);
    RESERVE(w, t->factors, t->cfactors, t->nfactors + nf);
    vkl_status st = ht_make_room(w, &t->hexprs);
    if (st) return st;
    at = ht_find(t, &t->hexprs, h, eq_expr, &p); /* the table may have been rehashed */
    expr_rec *r = &t->exprs[t->nexprs];
    *r = (expr_rec){(uint32_t)t->nterms, (uint32_t)p.n, depth, h};
    for (size_t i = 0; i < p.n; i++) {
        uint32_t len = p.t[i].flen;
        if (len) memcpy(t->factors + t->nfactors, p.f + p.t[i].fstart, len * sizeof(factor));
        t->terms[t->nterms++] = (term){p.t[i].coef, (uint32_t)t->nfactors, len};
        t->nfactors += len;
    }
    *out = (vkl_expr)t->nexprs++;
    ht_insert(&t->hexprs, at, h, *out);
    return VKL_OK;
}

static vkl_status intern_atom(vkl_symtab *t, work *w, atom_key k, uint32_t *out) {
    uint32_t h = atom_hash(&k);
    size_t at = ht_find(t, &t->hatoms, h, eq_atom, &k);
    if (t->hatoms.slots[at].id != NONE) {
        *out = t->hatoms.slots[at].id;
        return VKL_OK;
    }
    uint32_t depth = 1;
    if (k.kind != ATOM_SYM) {
        depth = t->exprs[k.x].depth;
        if ((k.kind == ATOM_MIN || k.kind == ATOM_MAX) && t->exprs[k.y].depth > depth) depth = t->exprs[k.y].depth;
        depth++;
    }
    if (depth > DEPTH_MAX)
        return failw(w, VKL_ERR_UNSUPPORTED, "floordiv/mod/min/max nested more than 128 deep");
    if (t->natoms >= NONE - 1) return failw(w, VKL_ERR_UNSUPPORTED, "symbol table is full");
    RESERVE(w, t->atoms, t->catoms, t->natoms + 1);
    vkl_status st = ht_make_room(w, &t->hatoms);
    if (st) return st;
    at = ht_find(t, &t->hatoms, h, eq_atom, &k);
    t->atoms[t->natoms] = (atom_rec){k, atom_range(t, &k), depth, h};
    *out = (uint32_t)t->natoms++;
    ht_insert(&t->hatoms, at, h, *out);
    return VKL_OK;
}

static vkl_status intern_tp(vkl_symtab *t, work *w, tpoly *p, vkl_expr *out) {
    return intern_poly(t, w, tp_view(p), out);
}

static vkl_status atom_expr(vkl_symtab *t, work *w, uint32_t atom, vkl_expr *out) {
    factor f = {atom, 1};
    term tm = {1, 0, 1};
    return intern_poly(t, w, (poly){&tm, 1, &f}, out);
}

static vkl_status const_expr(vkl_symtab *t, work *w, int64_t v, vkl_expr *out) {
    factor none = {0, 0};
    term tm = {v, 0, 0};
    return intern_poly(t, w, (poly){&tm, v != 0, &none}, out);
}

/* ---- table ---- */

static vkl_status table_init(vkl_symtab *t) {
    work w = {t, NULL};
    RESERVE(&w, t->syms, t->csyms, 8);
    RESERVE(&w, t->atoms, t->catoms, 64);
    RESERVE(&w, t->exprs, t->cexprs, 64);
    RESERVE(&w, t->terms, t->cterms, 64);
    RESERVE(&w, t->factors, t->cfactors, 64);
    vkl_status st = ht_make_room(&w, &t->hsyms);
    if (!st) st = ht_make_room(&w, &t->hatoms);
    if (!st) st = ht_make_room(&w, &t->hexprs);
    return st;
}

vkl_status vkl_symtab_create(vkl_context *ctx, vkl_symtab **out) {
    if (!ctx) return VKL_ERR_INVALID_ARGUMENT;
    if (!out) return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "vkl_symtab_create: NULL output");
    *out = NULL;
    vkl_symtab *t = vkl_calloc(ctx, 1, sizeof *t);
    if (!t) return VKL_ERR_OUT_OF_MEMORY;
    t->ctx = ctx;
    if (table_init(t)) {
        vkl_symtab_destroy(t);
        return vkl_fail(ctx, VKL_ERR_OUT_OF_MEMORY, "out of host memory creating a symbol table");
    }
    *out = t;
    return VKL_OK;
}

void vkl_symtab_destroy(vkl_symtab *t) {
    if (!t) return;
    vkl_context *c = t->ctx;
    for (size_t i = 0; i < t->nsyms; i++) vkl_free(c, t->syms[i].name);
    vkl_free(c, t->syms);
    vkl_free(c, t->atoms);
    vkl_free(c, t->exprs);
    vkl_free(c, t->terms);
    vkl_free(c, t->factors);
    vkl_free(c, t->hsyms.slots);
    vkl_free(c, t->hatoms.slots);
    vkl_free(c, t->hexprs.slots);
    vkl_free(c, t);
}

bool vkl_expr_is_symbol(const vkl_symtab *t, vkl_expr e, size_t *index) {
    for (size_t i = 0; t && i < t->nsyms; i++) {
        if (t->syms[i].expr != e) continue;
        if (index) *index = i;
        return true;
    }
    return false;
}

vkl_context *vkl_symtab_context(const vkl_symtab *t) { return t ? t->ctx : NULL; }

size_t vkl_symtab_symbol_count(const vkl_symtab *t) { return t ? t->nsyms : 0; }

const char *vkl_symtab_symbol_name(const vkl_symtab *t, size_t index) {
    return t && index < t->nsyms ? t->syms[index].name : NULL;
}

vkl_status vkl_symtab_find_symbol(const vkl_symtab *t, const char *name, size_t *index) {
    if (!t || !name || !index) return VKL_ERR_INVALID_ARGUMENT;
    size_t at = ht_find(t, &t->hsyms, name_hash(name), eq_name, name);
    if (t->hsyms.slots[at].id == NONE) return VKL_ERR_NOT_FOUND;
    *index = t->hsyms.slots[at].id;
    return VKL_OK;
}

/* ---- messages ---- */

/* Expression text for a message, "..." marking truncation. */
static const char *quote(const vkl_symtab *t, vkl_expr e, char *buf, size_t cap) {
    size_t n = vkl_expr_print(t, e, buf, cap);
    if (n >= cap && cap > 4) memcpy(buf + cap - 4, "...", 4);
    return buf;
}

static vkl_status report(const vkl_symtab *t, vkl_status st, const work *w, const char *op, vkl_expr a,
                         vkl_expr b) {
    char sa[TEXT_MAX], sb[TEXT_MAX];
    return vkl_fail(t->ctx, st, "symbolic %s of '%s' and '%s': %s", op, quote(t, a, sa, sizeof sa),
                    quote(t, b, sb, sizeof sb), w->why ? w->why : vkl_status_name(st));
}

static vkl_status report_c(const vkl_symtab *t, vkl_status st, const work *w, const char *op, vkl_expr a,
                           int64_t c) {
    char sa[TEXT_MAX];
    return vkl_fail(t->ctx, st, "symbolic %s of '%s' by %" PRId64 ": %s", op, quote(t, a, sa, sizeof sa), c,
                    w->why ? w->why : vkl_status_name(st));
}

static vkl_status check_out(vkl_symtab *t, void *out, const char *fn) {
    if (!t) return VKL_ERR_INVALID_ARGUMENT;
    if (!out) return vkl_fail(t->ctx, VKL_ERR_INVALID_ARGUMENT, "%s: NULL output", fn);
    return VKL_OK;
}

static vkl_status check_expr(vkl_symtab *t, vkl_expr e, const char *fn) {
    if (valid(t, e)) return VKL_OK;
    return vkl_fail(t->ctx, VKL_ERR_INVALID_ARGUMENT, "%s: invalid expression handle %" PRIu32, fn, e);
}

/* ---- constructors ---- */

vkl_status vkl_expr_const(vkl_symtab *t, int64_t value, vkl_expr *out) {
    vkl_status st = check_out(t, out, "vkl_expr_const");
    if (st) return st;
    work w = {t, NULL};
    st = const_expr(t, &w, value, out);
    if (st) return vkl_fail(t->ctx, st, "symbolic constant %" PRId64 ": %s", value, w.why);
    return VKL_OK;
}

static bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

static const char *name_problem(const char *name) {
    if (!name[0]) return "empty";
    if (!is_ident_start(name[0])) return "must start with a letter or '_'";
    size_t n = 1;
    for (; name[n]; n++) {
        if (!is_ident_char(name[n])) return "may only hold letters, digits and '_'";
        if (n >= VKL_SYM_NAME_MAX) return "longer than 63 bytes";
    }
    return NULL;
}

static vkl_status new_symbol(vkl_symtab *t, work *w, const char *name, uint32_t h, vkl_expr *out) {
    size_t len = strlen(name) + 1;
    if (t->nsyms >= NONE - 1) return failw(w, VKL_ERR_UNSUPPORTED, "symbol table is full");
    RESERVE(w, t->syms, t->csyms, t->nsyms + 1);
    vkl_status st = ht_make_room(w, &t->hsyms);
    if (st) return st;
    char *copy = t->ctx->alloc.malloc(t->ctx->alloc.user, len);
    if (!copy) return failw(w, VKL_ERR_OUT_OF_MEMORY, "out of host memory");
    memcpy(copy, name, len);
    /* An atom left behind by a later failure is harmless: it names index
     * nsyms, which the next new symbol takes. */
    uint32_t atom;
    st = intern_atom(t, w, (atom_key){ATOM_SYM, (uint32_t)t->nsyms, NONE, 0}, &atom);
    if (!st) st = atom_expr(t, w, atom, out);
    if (st) {
        vkl_free(t->ctx, copy);
        return st;
    }
    t->syms[t->nsyms] = (symbol){copy, h, *out};
    ht_insert(&t->hsyms, ht_find(t, &t->hsyms, h, eq_name, name), h, (uint32_t)t->nsyms);
    t->nsyms++;
    return VKL_OK;
}

vkl_status vkl_expr_symbol(vkl_symtab *t, const char *name, vkl_expr *out) {
    vkl_status st = check_out(t, out, "vkl_expr_symbol");
    if (st) return st;
    if (!name) return vkl_fail(t->ctx, VKL_ERR_INVALID_ARGUMENT, "vkl_expr_symbol: NULL name");
    const char *bad = name_problem(name);
    if (bad)
        return vkl_fail(t->ctx, VKL_ERR_INVALID_ARGUMENT, "invalid symbol name '%.*s': %s", VKL_SYM_NAME_MAX,
                        name, bad);
    uint32_t h = name_hash(name);
    size_t at = ht_find(t, &t->hsyms, h, eq_name, name);
    if (t->hsyms.slots[at].id != NONE) {
        *out = t->syms[t->hsyms.slots[at].id].expr;
        return VKL_OK;
    }
    work w = {t, NULL};
    st = new_symbol(t, &w, name, h, out);
    if (st) return vkl_fail(t->ctx, st, "creating symbol '%s': %s", name, w.why);
    return VKL_OK;
}

static vkl_status add_impl(vkl_symtab *t, work *w, vkl_expr a, vkl_expr b, int sign, vkl_expr *out) {
    tpoly r = {0};
    vkl_status st = poly_add(w, expr_poly(t, a), expr_poly(t, b), sign, &r);
    if (!st) st = intern_tp(t, w, &r, out);
    tp_free(t, &r);
    return st;
}

static vkl_status mul_impl(vkl_symtab *t, work *w, vkl_expr a, vkl_expr b, vkl_expr *out) {
    tpoly r = {0};
    vkl_status st = poly_mul(w, expr_poly(t, a), expr_poly(t, b), &r);
    if (!st) st = intern_tp(t, w, &r, out);
    tp_free(t, &r);
    return st;
}

static vkl_status scale_impl(vkl_symtab *t, work *w, vkl_expr a, int64_t k, vkl_expr *out) {
    if (k == 1) {
        *out = a;
        return VKL_OK;
    }
    if (k == 0) return const_expr(t, w, 0, out);
    tpoly r = {0};
    vkl_status st = poly_scale(w, expr_poly(t, a), k, (mono){NULL, 0}, &r);
    if (!st) st = intern_tp(t, w, &r, out);
    tp_free(t, &r);
    return st;
}

typedef enum binop { OP_ADD, OP_SUB, OP_MUL, OP_MIN, OP_MAX } binop;

static vkl_status minmax_impl(vkl_symtab *t, work *w, uint32_t kind, vkl_expr a, vkl_expr b, vkl_expr *out);

static vkl_status binary(vkl_symtab *t, binop op, vkl_expr a, vkl_expr b, vkl_expr *out) {
    static const char *const names[] = {"add", "sub", "mul", "min", "max"};
    vkl_status st = check_out(t, out, names[op]);
    if (!st) st = check_expr(t, a, names[op]);
    if (!st) st = check_expr(t, b, names[op]);
    if (st) return st;
    work w = {t, NULL};
    switch (op) {
    case OP_ADD: st = add_impl(t, &w, a, b, 1, out); break;
    case OP_SUB: st = add_impl(t, &w, a, b, -1, out); break;
    case OP_MUL: st = mul_impl(t, &w, a, b, out); break;
    case OP_MIN: st = minmax_impl(t, &w, ATOM_MIN, a, b, out); break;
    case OP_MAX: st = minmax_impl(t, &w, ATOM_MAX, a, b, out); break;
    }
    return st ? report(t, st, &w, names[op], a, b) : VKL_OK;
}

vkl_status vkl_expr_add(vkl_symtab *t, vkl_expr a, vkl_expr b, vkl_expr *out) {
    return binary(t, OP_ADD, a, b, out);
}
vkl_status vkl_expr_sub(vkl_symtab *t, vkl_expr a, vkl_expr b, vkl_expr *out) {
    return binary(t, OP_SUB, a, b, out);
}
vkl_status vkl_expr_mul(vkl_symtab *t, vkl_expr a, vkl_expr b, vkl_expr *out) {
    return binary(t, OP_MUL, a, b, out);
}
vkl_status vkl_expr_min(vkl_symtab *t, vkl_expr a, vkl_expr b, vkl_expr *out) {
    return binary(t, OP_MIN, a, b, out);
}
vkl_status vkl_expr_max(vkl_symtab *t, vkl_expr a, vkl_expr b, vkl_expr *out) {
    return binary(t, OP_MAX, a, b, out);
}

/* ---- floordiv and mod ----
 * Each coefficient k splits as c*(k // c) + k % c; since every monomial is an
 * integer, floordiv(e, c) = q + floordiv(r, c) and mod(e, c) = mod(r, c) with
 * r's coefficients in [1, c-1]. A common factor g of r and c cancels:
 * floordiv(g*r, g*c) = floordiv(r, c), mod(g*r, g*c) = g*mod(r, c). */

static vkl_status split(work *w, poly e, int64_t c, tpoly *q, tpoly *r) {
    for (size_t i = 0; i < e.n; i++) {
        int64_t k = e.t[i].coef, kr = fmod_py(k, c), kq = fdiv(k, c);
        vkl_status st = kq ? tp_push(w, q, kq, term_mono(e, i)) : VKL_OK;
        if (!st && kr) st = tp_push(w, r, kr, term_mono(e, i));
        if (st) return st;
    }
    return VKL_OK;
}

/* Divides r's coefficients and *c by their gcd; returns the gcd. */
static int64_t cancel_gcd(tpoly *r, int64_t *c) {
    int64_t g = *c;
    for (size_t i = 0; i < r->n && g > 1; i++) g = gcd64(r->t[i].coef, g);
    if (g > 1) {
        for (size_t i = 0; i < r->n; i++) r->t[i].coef /= g;
        *c /= g;
    }
    return g;
}

static vkl_status floordiv_impl(vkl_symtab *t, work *w, vkl_expr a, int64_t c, vkl_expr *out);

/* floordiv(r, c) for r with coefficients in [1, c-1]. */
static vkl_status floordiv_rest(vkl_symtab *t, work *w, tpoly *r, int64_t c, vkl_expr *out) {
    cancel_gcd(r, &c);
    range rr = poly_range(t, tp_view(r));
    if (range_bounded(rr) && fdiv(rr.lo, c) == fdiv(rr.hi, c)) return const_expr(t, w, fdiv(rr.lo, c), out);
    uint32_t at;
    int64_t cc;
    if (single_atom(tp_view(r), &at) && atom_of(t, at)->kind == ATOM_FLOORDIV &&
        vkl_mul_i64(c, atom_of(t, at)->c, &cc))
        return floordiv_impl(t, w, atom_of(t, at)->x, cc, out); /* (e // a) // c == e // (a*c) */
    vkl_expr re;
    vkl_status st = intern_tp(t, w, r, &re);
    if (!st) st = intern_atom(t, w, (atom_key){ATOM_FLOORDIV, re, NONE, c}, &at);
    if (!st) st = atom_expr(t, w, at, out);
    return st;
}

static vkl_status floordiv_impl(vkl_symtab *t, work *w, vkl_expr a, int64_t c, vkl_expr *out) {
    tpoly q = {0}, r = {0}, sum = {0};
    vkl_expr rest = NONE;
    vkl_status st = split(w, expr_poly(t, a), c, &q, &r);
    if (!st && r.n) st = floordiv_rest(t, w, &r, c, &rest);
    if (!st && rest != NONE) st = poly_add(w, tp_view(&q), expr_poly(t, rest), 1, &sum);
    if (!st) st = intern_tp(t, w, rest != NONE ? &sum : &q, out);
    tp_free(t, &q);
    tp_free(t, &r);
    tp_free(t, &sum);
    return st;
}

static vkl_status mod_impl(vkl_symtab *t, work *w, vkl_expr a, int64_t c, vkl_expr *out);

/* mod(r, c) / g after cancelling g, for r with coefficients in [1, c-1]. */
static vkl_status mod_rest(vkl_symtab *t, work *w, tpoly *r, int64_t c, vkl_expr *out) {
    range rr = poly_range(t, tp_view(r));
    if (range_bounded(rr) && fdiv(rr.lo, c) == fdiv(rr.hi, c)) {
        /* r lies in one period: mod(r, c) = r - c*k */
        int64_t kc;
        if (!vkl_mul_i64(fdiv(rr.lo, c), c, &kc) || kc == NINF)
            return failw(w, VKL_ERR_OVERFLOW, "coefficient overflows int64");
        term tm = {-kc, 0, 0};
        factor none = {0, 0};
        tpoly s = {0};
        vkl_status st = poly_add(w, tp_view(r), (poly){&tm, kc != 0, &none}, 1, &s);
        if (!st) st = intern_tp(t, w, &s, out);
        tp_free(t, &s);
        return st;
    }
    uint32_t at;
    if (single_atom(tp_view(r), &at) && atom_of(t, at)->kind == ATOM_MOD && atom_of(t, at)->c % c == 0)
        return mod_impl(t, w, atom_of(t, at)->x, c, out); /* mod(mod(e, a), c) == mod(e, c) if c | a */
    vkl_expr re;
    vkl_status st = intern_tp(t, w, r, &re);
    if (!st) st = intern_atom(t, w, (atom_key){ATOM_MOD, re, NONE, c}, &at);
    if (!st) st = atom_expr(t, w, at, out);
    return st;
}

static vkl_status mod_impl(vkl_symtab *t, work *w, vkl_expr a, int64_t c, vkl_expr *out) {
    tpoly q = {0}, r = {0};
    vkl_expr inner;
    vkl_status st = split(w, expr_poly(t, a), c, &q, &r);
    if (!st && !r.n) st = const_expr(t, w, 0, out);
    if (!st && r.n) {
        int64_t g = cancel_gcd(&r, &c);
        st = mod_rest(t, w, &r, c, &inner);
        if (!st) st = scale_impl(t, w, inner, g, out);
    }
    tp_free(t, &q);
    tp_free(t, &r);
    return st;
}

static vkl_status divmod(vkl_symtab *t, bool is_mod, vkl_expr a, int64_t c, vkl_expr *out) {
    const char *op = is_mod ? "mod" : "floordiv";
    vkl_status st = check_out(t, out, op);
    if (!st) st = check_expr(t, a, op);
    if (st) return st;
    work w = {t, NULL};
    if (c <= 0) st = failw(&w, VKL_ERR_INVALID_ARGUMENT, "the divisor must be a positive constant");
    else st = is_mod ? mod_impl(t, &w, a, c, out) : floordiv_impl(t, &w, a, c, out);
    return st ? report_c(t, st, &w, op, a, c) : VKL_OK;
}

vkl_status vkl_expr_floordiv(vkl_symtab *t, vkl_expr a, int64_t divisor, vkl_expr *out) {
    return divmod(t, false, a, divisor, out);
}

vkl_status vkl_expr_mod(vkl_symtab *t, vkl_expr a, int64_t divisor, vkl_expr *out) {
    return divmod(t, true, a, divisor, out);
}

/* ---- min and max ----
 * compare() settles every provable order, absorption included
 * (min(a, min(a, x)) == min(a, x)); what is left is an opaque atom. */

static vkl_status minmax_impl(vkl_symtab *t, work *w, uint32_t kind, vkl_expr a, vkl_expr b, vkl_expr *out) {
    vkl_sym_order o = vkl_expr_compare(t, a, b);
    bool a_le = o == VKL_SYM_EQ || o == VKL_SYM_LT || o == VKL_SYM_LE;
    if (a_le || o == VKL_SYM_GT || o == VKL_SYM_GE) {
        *out = (kind == ATOM_MIN) == a_le ? a : b;
        return VKL_OK;
    }
    if (expr_cmp(t, a, b) > 0) {
        vkl_expr s = a;
        a = b;
        b = s;
    }
    uint32_t at;
    vkl_status st = intern_atom(t, w, (atom_key){kind, a, b, 0}, &at);
    return st ? st : atom_expr(t, w, at, out);
}

/* ---- exact division ----
 * Long division by b's leading term. With a monomial order, a == q*b implies
 * lead(a) == lead(q)*lead(b), so if the division is exact this finds q. */

static vkl_status poly_divide(work *w, poly a, poly b, tpoly *q, bool *exact) {
    *exact = false;
    tpoly r = {0}, s = {0}, next = {0};
    vkl_status st = VKL_OK;
    for (size_t i = 0; i < a.n && !st; i++) st = tp_push(w, &r, a.t[i].coef, term_mono(a, i));
    int64_t kb = b.t[0].coef;
    mono mb = term_mono(b, 0);
    for (size_t work_done = 0; !st && r.n; work_done += r.n + b.n) {
        int64_t kr = r.t[0].coef, kq;
        if (work_done > DIV_WORK_MAX) goto done; /* give up: "not provably exact" */
        if (kb == -1) {
            if (kr == NINF) {
                st = failw(w, VKL_ERR_OVERFLOW, "quotient coefficient overflows int64");
                goto done;
            }
            kq = -kr;
        } else {
            if (kr % kb) goto done;
            kq = kr / kb;
        }
        bool ok;
        st = tp_push_quotient(w, q, kq, term_mono(tp_view(&r), 0), mb, &ok);
        if (st || !ok) goto done;
        s.n = s.nf = next.n = next.nf = 0;
        st = poly_scale(w, b, kq, term_mono(tp_view(q), q->n - 1), &s);
        if (!st) st = poly_add(w, tp_view(&r), tp_view(&s), -1, &next);
        tpoly swap = r;
        r = next;
        next = swap;
    }
    *exact = !st && r.n == 0;
done:
    tp_free(w->t, &r);
    tp_free(w->t, &s);
    tp_free(w->t, &next);
    return st;
}

static bool is_zero(const vkl_symtab *t, vkl_expr e) { return t->exprs[e].tcount == 0; }

vkl_status vkl_expr_div_exact(vkl_symtab *t, vkl_expr a, vkl_expr b, vkl_expr *out) {
    vkl_status st = check_out(t, out, "div_exact");
    if (!st) st = check_expr(t, a, "div_exact");
    if (!st) st = check_expr(t, b, "div_exact");
    if (st) return st;
    char sa[TEXT_MAX], sb[TEXT_MAX];
    if (is_zero(t, b))
        return vkl_fail(t->ctx, VKL_ERR_SHAPE, "symbolic division of '%s' by zero", quote(t, a, sa, sizeof sa));
    work w = {t, NULL};
    tpoly q = {0};
    bool exact;
    st = poly_divide(&w, expr_poly(t, a), expr_poly(t, b), &q, &exact);
    if (!st && exact) st = tp_normalize(&w, &q);
    if (!st && exact) st = intern_tp(t, &w, &q, out);
    tp_free(t, &q);
    if (st) return report(t, st, &w, "division", a, b);
    if (!exact)
        return vkl_fail(t->ctx, VKL_ERR_SHAPE, "'%s' is not provably divisible by '%s'",
                        quote(t, a, sa, sizeof sa), quote(t, b, sb, sizeof sb));
    return VKL_OK;
}

/* ---- queries ---- */

bool vkl_expr_is_const(const vkl_symtab *t, vkl_expr e, int64_t *value) {
    if (!t || !valid(t, e)) return false;
    poly p = expr_poly(t, e);
    if (p.n > 1 || (p.n == 1 && p.t[0].flen)) return false;
    if (value) *value = p.n ? p.t[0].coef : 0;
    return true;
}

static range term_range(const vkl_symtab *t, int64_t k, mono m) {
    return range_mul(range_point(k), mono_range(t, m));
}

static range range_neg(range r) { /* exact, since lo < INF and hi > NINF */
    return (range){r.hi == INF ? NINF : -r.hi, r.lo == NINF ? INF : -r.lo};
}

/* Range of a - b, walking both sorted term lists without building it. A
 * coefficient difference that overflows is bounded term by term instead. */
static range diff_range(const vkl_symtab *t, poly x, poly y) {
    range s = {0, 0};
    size_t i = 0, j = 0;
    while (i < x.n || j < y.n) {
        int c = i == x.n ? 1 : j == y.n ? -1 : mono_cmp(t, term_mono(x, i), term_mono(y, j));
        int64_t k;
        if (c == 0 && vkl_sub_i64(x.t[i].coef, y.t[j].coef, &k)) {
            s = range_add(s, term_range(t, k, term_mono(x, i)));
            i++, j++;
            continue;
        }
        if (c <= 0) s = range_add(s, term_range(t, x.t[i].coef, term_mono(x, i))), i++;
        if (c >= 0) s = range_add(s, range_neg(term_range(t, y.t[j].coef, term_mono(y, j)))), j++;
    }
    return s;
}

static bool has_minmax(const vkl_symtab *t, poly p) {
    for (size_t i = 0; i < p.n; i++) {
        mono m = term_mono(p, i);
        for (uint32_t k = 0; k < m.n; k++)
            if (atom_of(t, m.f[k].atom)->kind >= ATOM_MIN) return true;
    }
    return false;
}

static vkl_sym_order order_of(range s) {
    if (s.lo > 0) return VKL_SYM_GT;
    if (s.hi < 0) return VKL_SYM_LT;
    if (s.lo == 0) return VKL_SYM_GE;
    if (s.hi == 0) return VKL_SYM_LE;
    return VKL_SYM_UNKNOWN;
}

/* d with its term k*A*rest replaced by k*operand*rest (rest >= 0), where
 * operand bounds the min/max atom A from the side that bounds d. */
static vkl_status substitute(work *w, const tpoly *d, size_t i, const tpoly *rest, vkl_expr operand,
                             tpoly *scratch, tpoly *out) {
    mono rm = term_mono(tp_view(rest), 0);
    int64_t k = d->t[i].coef, negk;
    if (!vkl_sub_i64(0, k, &negk)) return failw(w, VKL_ERR_OVERFLOW, "coefficient overflows int64");
    scratch->n = scratch->nf = out->n = out->nf = 0;
    vkl_status st = poly_scale(w, expr_poly(w->t, operand), k, rm, scratch);
    if (!st) st = tp_push(w, scratch, negk, term_mono(tp_view(d), i));
    if (!st) st = tp_normalize(w, scratch);
    if (!st) st = poly_add(w, tp_view(d), tp_view(scratch), 1, out);
    return st;
}

/* Uses min(x, y) <= x, y <= max(x, y) on one atom of a - b at a time, with
 * ranges deciding the rest: min(N, M) <= N, max(P, Q) + 1 > Q. */
static vkl_sym_order compare_substituting(const vkl_symtab *t, poly x, poly y) {
    work w = {t, NULL};
    tpoly d = {0}, rest = {0}, scratch = {0}, d2 = {0};
    vkl_sym_order o = VKL_SYM_UNKNOWN;
    unsigned tries = 0;
    if (poly_add(&w, x, y, -1, &d)) goto out;
    for (size_t i = 0; i < d.n && o == VKL_SYM_UNKNOWN && tries < 16; i++) {
        mono m = term_mono(tp_view(&d), i);
        for (uint32_t p = 0; p < m.n && o == VKL_SYM_UNKNOWN; p++) {
            const atom_key *a = atom_of(t, m.f[p].atom);
            if (m.f[p].exp != 1 || (a->kind != ATOM_MIN && a->kind != ATOM_MAX)) continue;
            factor fa = {m.f[p].atom, 1};
            bool ok;
            rest.n = rest.nf = 0;
            if (tp_push_quotient(&w, &rest, 1, m, (mono){&fa, 1}, &ok) || !ok) goto out;
            if (mono_range(t, term_mono(tp_view(&rest), 0)).lo < 0) continue;
            bool upper = (d.t[i].coef > 0) == (a->kind == ATOM_MIN); /* d <= the substituted d */
            for (int side = 0; side < 2 && o == VKL_SYM_UNKNOWN; side++, tries++) {
                if (substitute(&w, &d, i, &rest, side ? a->y : a->x, &scratch, &d2)) continue;
                range r = poly_range(t, tp_view(&d2));
                if (upper && r.hi <= 0) o = r.hi < 0 ? VKL_SYM_LT : VKL_SYM_LE;
                if (!upper && r.lo >= 0) o = r.lo > 0 ? VKL_SYM_GT : VKL_SYM_GE;
            }
        }
    }
out:
    tp_free(t, &d);
    tp_free(t, &rest);
    tp_free(t, &scratch);
    tp_free(t, &d2);
    return o;
}

vkl_sym_order vkl_expr_compare(const vkl_symtab *t, vkl_expr a, vkl_expr b) {
    if (!t || !valid(t, a) || !valid(t, b)) return VKL_SYM_UNKNOWN;
    if (a == b) return VKL_SYM_EQ;
    poly x = expr_poly(t, a), y = expr_poly(t, b);
    vkl_sym_order o = order_of(diff_range(t, x, y));
    if (o != VKL_SYM_UNKNOWN || (!has_minmax(t, x) && !has_minmax(t, y))) return o;
    return compare_substituting(t, x, y);
}

bool vkl_expr_divisible(const vkl_symtab *t, vkl_expr a, vkl_expr b) {
    if (!t || !valid(t, a) || !valid(t, b) || is_zero(t, b)) return false;
    work w = {t, NULL};
    tpoly q = {0};
    bool exact;
    vkl_status st = poly_divide(&w, expr_poly(t, a), expr_poly(t, b), &q, &exact);
    tp_free(t, &q);
    return !st && exact;
}

static bool uses(const vkl_symtab *t, vkl_expr e, size_t index) {
    poly p = expr_poly(t, e);
    for (size_t i = 0; i < p.n; i++) {
        mono m = term_mono(p, i);
        for (uint32_t k = 0; k < m.n; k++) {
            const atom_key *a = atom_of(t, m.f[k].atom);
            if (a->kind == ATOM_SYM ? a->x == index
                                    : uses(t, a->x, index) || (a->y != NONE && uses(t, a->y, index)))
                return true;
        }
    }
    return false;
}

bool vkl_expr_uses_symbol(const vkl_symtab *t, vkl_expr e, size_t index) {
    return t && valid(t, e) && index < t->nsyms && uses(t, e, index);
}

/* ---- evaluation ---- */

typedef struct eval_env {
    const vkl_symtab *t;
    const int64_t *values;
    size_t count;
    uint32_t bad; /* the symbol that failed */
} eval_env;

static bool ipow(int64_t b, uint32_t e, int64_t *out) {
    int64_t r = 1;
    while (e) {
        if ((e & 1) && !vkl_mul_i64(r, b, &r)) return false;
        e >>= 1;
        if (e && !vkl_mul_i64(b, b, &b)) return false;
    }
    *out = r;
    return true;
}

static vkl_status eval_expr(eval_env *ev, vkl_expr e, int64_t *out);

static vkl_status eval_atom(eval_env *ev, uint32_t atom, int64_t *out) {
    const atom_key *k = atom_of(ev->t, atom);
    int64_t x, y;
    if (k->kind == ATOM_SYM) {
        ev->bad = k->x;
        if (k->x >= ev->count || ev->values[k->x] == VKL_SYM_UNBOUND) return VKL_ERR_NOT_FOUND;
        if (ev->values[k->x] < 0) return VKL_ERR_INVALID_ARGUMENT;
        *out = ev->values[k->x];
        return VKL_OK;
    }
    vkl_status st = eval_expr(ev, k->x, &x);
    if (st) return st;
    switch ((atom_kind)k->kind) {
    case ATOM_FLOORDIV: *out = fdiv(x, k->c); return VKL_OK;
    case ATOM_MOD: *out = fmod_py(x, k->c); return VKL_OK;
    default: break;
    }
    st = eval_expr(ev, k->y, &y);
    if (st) return st;
    *out = (k->kind == ATOM_MIN) == (x < y) ? x : y;
    return VKL_OK;
}

static vkl_status eval_expr(eval_env *ev, vkl_expr e, int64_t *out) {
    poly p = expr_poly(ev->t, e);
    int64_t sum = 0;
    for (size_t i = 0; i < p.n; i++) {
        int64_t v = p.t[i].coef;
        mono m = term_mono(p, i);
        for (uint32_t k = 0; k < m.n; k++) {
            int64_t a, pw;
            vkl_status st = eval_atom(ev, m.f[k].atom, &a);
            if (st) return st;
            if (!ipow(a, m.f[k].exp, &pw) || !vkl_mul_i64(v, pw, &v)) return VKL_ERR_OVERFLOW;
        }
        if (!vkl_add_i64(sum, v, &sum)) return VKL_ERR_OVERFLOW;
    }
    *out = sum;
    return VKL_OK;
}

vkl_status vkl_expr_eval(vkl_context *ctx, const vkl_symtab *t, vkl_expr e, const int64_t *values, size_t count,
                         int64_t *out) {
    if (!t) return VKL_ERR_INVALID_ARGUMENT;
    if (!out || (!values && count)) return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "vkl_expr_eval: NULL argument");
    if (!valid(t, e))
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "vkl_expr_eval: invalid expression handle %" PRIu32, e);
    eval_env ev = {t, values, values ? count : 0, NONE};
    vkl_status st = eval_expr(&ev, e, out);
    if (!st) return VKL_OK;
    char s[TEXT_MAX];
    quote(t, e, s, sizeof s);
    if (st == VKL_ERR_OVERFLOW)
        return vkl_fail(ctx, st, "evaluating '%s' overflows int64", s);
    const char *name = t->syms[ev.bad].name;
    if (st == VKL_ERR_NOT_FOUND)
        return vkl_fail(ctx, st, "evaluating '%s': symbol '%s' is unbound", s, name);
    return vkl_fail(ctx, st, "evaluating '%s': symbol '%s' is bound to a negative value %" PRId64, s, name,
                    values[ev.bad]);
}

/* ---- printing ----
 * The text is the grammar's own, so parse() reads it back to the same handle.
 * floordiv/mod print as "e // c" and "e % c", parenthesized unless the term
 * is that atom alone, since '*' and '//' share one precedence level. */

typedef struct sink {
    char *buf;
    size_t cap, len;
} sink;

static void put(sink *s, const char *str) {
    for (; *str; str++, s->len++)
        if (s->len + 1 < s->cap) s->buf[s->len] = *str;
}

static void put_i64(sink *s, int64_t v) {
    char b[24];
    snprintf(b, sizeof b, "%" PRId64, v);
    put(s, b);
}

static void print_poly(const vkl_symtab *t, sink *s, poly p);

static void print_atom(const vkl_symtab *t, sink *s, uint32_t atom, bool bare) {
    const atom_key *k = atom_of(t, atom);
    if (k->kind == ATOM_SYM) {
        put(s, t->syms[k->x].name);
        return;
    }
    if (k->kind == ATOM_MIN || k->kind == ATOM_MAX) {
        put(s, k->kind == ATOM_MIN ? "min(" : "max(");
        print_poly(t, s, expr_poly(t, k->x));
        put(s, ", ");
        print_poly(t, s, expr_poly(t, k->y));
        put(s, ")");
        return;
    }
    poly e = expr_poly(t, k->x);
    if (!bare) put(s, "(");
    if (e.n > 1) put(s, "(");
    print_poly(t, s, e);
    if (e.n > 1) put(s, ")");
    put(s, k->kind == ATOM_FLOORDIV ? " // " : " % ");
    put_i64(s, k->c);
    if (!bare) put(s, ")");
}

static void print_term(const vkl_symtab *t, sink *s, int64_t k, mono m, bool first) {
    bool minus = k < 0 && k != NINF; /* INT64_MIN has no magnitude: "+ -9223...808" */
    if (!first) put(s, minus ? " - " : " + ");
    else if (minus && (k == -1 && m.n)) put(s, "-");
    int64_t shown = (!first && minus) ? -k : k;
    if (!m.n) {
        put_i64(s, shown);
        return;
    }
    bool unit = shown == 1 || (first && k == -1);
    if (!unit) {
        put_i64(s, shown);
        put(s, "*");
    }
    /* A lone floordiv/mod atom may go bare, but not after a unary minus. */
    bool bare = unit && m.n == 1 && m.f[0].exp == 1 && !(first && k == -1);
    for (uint32_t i = 0; i < m.n; i++)
        for (uint32_t e = 0; e < m.f[i].exp; e++) {
            if (i || e) put(s, "*");
            print_atom(t, s, m.f[i].atom, bare);
        }
}

static void print_poly(const vkl_symtab *t, sink *s, poly p) {
    if (!p.n) put(s, "0");
    for (size_t i = 0; i < p.n; i++) print_term(t, s, p.t[i].coef, term_mono(p, i), i == 0);
}

size_t vkl_expr_print(const vkl_symtab *t, vkl_expr e, char *buf, size_t cap) {
    sink s = {buf, buf ? cap : 0, 0};
    if (!t || !valid(t, e)) put(&s, "<invalid>");
    else print_poly(t, &s, expr_poly(t, e));
    if (s.cap) s.buf[s.len < s.cap ? s.len : s.cap - 1] = '\0';
    return s.len;
}

/* ---- parsing ---- */

typedef struct parser {
    vkl_symtab *t;
    const char *text;
    size_t pos;
    unsigned depth;
} parser;

static void skip_ws(parser *p) {
    while (p->text[p->pos] == ' ' || p->text[p->pos] == '\t' || p->text[p->pos] == '\n' ||
           p->text[p->pos] == '\r')
        p->pos++;
}

static vkl_status perr(parser *p, size_t at, const char *expected) {
    return vkl_fail(p->t->ctx, VKL_ERR_FORMAT, "cannot parse symbolic expression \"%.*s\": expected %s at offset %zu%s",
                    TEXT_MAX, p->text, expected, at, p->text[at] ? "" : " (end of input)");
}

/* A constructor failed: keep its message, say where. */
static vkl_status pwrap(parser *p, vkl_status st, size_t at) {
    if (!st) return VKL_OK;
    return vkl_fail_prefix(p->t->ctx, st, "parsing \"%.*s\" at offset %zu", TEXT_MAX, p->text, at);
}

static vkl_status parse_expr(parser *p, vkl_expr *out);

static vkl_status parse_int(parser *p, bool negative, vkl_expr *out) {
    size_t start = p->pos;
    int64_t v = 0;
    for (; is_digit(p->text[p->pos]); p->pos++) {
        int d = p->text[p->pos] - '0';
        if (!vkl_mul_i64(v, 10, &v) || !(negative ? vkl_sub_i64(v, d, &v) : vkl_add_i64(v, d, &v)))
            return perr(p, start, "an integer that fits in int64");
    }
    if (is_ident_char(p->text[p->pos])) return perr(p, p->pos, "an operator after the number");
    return pwrap(p, vkl_expr_const(p->t, v, out), start);
}

static vkl_status parse_call(parser *p, bool is_min, vkl_expr *out) {
    vkl_expr a, b;
    vkl_status st = parse_expr(p, &a);
    if (st) return st;
    skip_ws(p);
    if (p->text[p->pos] != ',') return perr(p, p->pos, is_min ? "',' in min(a, b)" : "',' in max(a, b)");
    p->pos++;
    if ((st = parse_expr(p, &b))) return st;
    skip_ws(p);
    if (p->text[p->pos] != ')') return perr(p, p->pos, "')'");
    p->pos++;
    return pwrap(p, is_min ? vkl_expr_min(p->t, a, b, out) : vkl_expr_max(p->t, a, b, out), p->pos);
}

static vkl_status parse_name(parser *p, vkl_expr *out) {
    size_t start = p->pos;
    while (is_ident_char(p->text[p->pos])) p->pos++;
    size_t len = p->pos - start;
    if (len > VKL_SYM_NAME_MAX) return perr(p, start, "a name of at most 63 bytes");
    char name[VKL_SYM_NAME_MAX + 1];
    memcpy(name, p->text + start, len);
    name[len] = '\0';
    skip_ws(p);
    if (p->text[p->pos] != '(') return pwrap(p, vkl_expr_symbol(p->t, name, out), start);
    bool is_min = !strcmp(name, "min");
    if (!is_min && strcmp(name, "max")) return perr(p, start, "a function name min or max before '('");
    p->pos++;
    return parse_call(p, is_min, out);
}

static vkl_status parse_atom(parser *p, vkl_expr *out) {
    skip_ws(p);
    char c = p->text[p->pos];
    if (is_digit(c)) return parse_int(p, false, out);
    if (is_ident_start(c)) return parse_name(p, out);
    if (c != '(') return perr(p, p->pos, "a number, a name, '-' or '('");
    p->pos++;
    vkl_status st = parse_expr(p, out);
    if (st) return st;
    skip_ws(p);
    if (p->text[p->pos] != ')') return perr(p, p->pos, "')'");
    p->pos++;
    return VKL_OK;
}

static vkl_status parse_unary(parser *p, vkl_expr *out) {
    skip_ws(p);
    if (p->text[p->pos] != '-') return parse_atom(p, out);
    size_t at = p->pos++;
    skip_ws(p);
    /* "-9223372036854775808" must parse: read a negated literal directly. */
    if (is_digit(p->text[p->pos])) return parse_int(p, true, out);
    if (++p->depth > PARSE_DEPTH_MAX) return perr(p, at, "less deeply nested input");
    vkl_expr x, m1;
    vkl_status st = parse_unary(p, &x);
    p->depth--;
    if (st) return st;
    st = vkl_expr_const(p->t, -1, &m1);
    if (!st) st = vkl_expr_mul(p->t, m1, x, out);
    return pwrap(p, st, at);
}

/* The right operand of '//' or '%': a positive constant. */
static vkl_status parse_divisor(parser *p, int64_t *c) {
    skip_ws(p);
    size_t at = p->pos;
    vkl_expr d;
    vkl_status st = parse_unary(p, &d);
    if (st) return st;
    if (!vkl_expr_is_const(p->t, d, c) || *c <= 0) return perr(p, at, "a positive constant divisor");
    return VKL_OK;
}

static vkl_status parse_term(parser *p, vkl_expr *out) {
    vkl_status st = parse_unary(p, out);
    for (;;) {
        if (st) return st;
        skip_ws(p);
        size_t at = p->pos;
        const char *s = p->text + p->pos;
        vkl_expr rhs;
        int64_t c;
        if (s[0] == '/' && s[1] == '/') {
            p->pos += 2;
            if (!(st = parse_divisor(p, &c))) st = pwrap(p, vkl_expr_floordiv(p->t, *out, c, out), at);
        } else if (s[0] == '%') {
            p->pos++;
            if (!(st = parse_divisor(p, &c))) st = pwrap(p, vkl_expr_mod(p->t, *out, c, out), at);
        } else if (s[0] == '*' || s[0] == '/') {
            p->pos++;
            if (!(st = parse_unary(p, &rhs)))
                st = pwrap(p, s[0] == '*' ? vkl_expr_mul(p->t, *out, rhs, out) : vkl_expr_div_exact(p->t, *out, rhs, out), at);
        } else {
            return VKL_OK;
        }
    }
}

static vkl_status parse_expr(parser *p, vkl_expr *out) {
    if (++p->depth > PARSE_DEPTH_MAX) return perr(p, p->pos, "less deeply nested input");
    vkl_status st = parse_term(p, out);
    for (;;) {
        if (st) break;
        skip_ws(p);
        size_t at = p->pos;
        char c = p->text[p->pos];
        if (c != '+' && c != '-') break;
        p->pos++;
        vkl_expr rhs;
        if (!(st = parse_term(p, &rhs)))
            st = pwrap(p, c == '+' ? vkl_expr_add(p->t, *out, rhs, out) : vkl_expr_sub(p->t, *out, rhs, out), at);
    }
    p->depth--;
    return st;
}

vkl_status vkl_expr_parse(vkl_symtab *t, const char *text, vkl_expr *out) {
    vkl_status st = check_out(t, out, "vkl_expr_parse");
    if (st) return st;
    if (!text) return vkl_fail(t->ctx, VKL_ERR_INVALID_ARGUMENT, "vkl_expr_parse: NULL text");
    parser p = {t, text, 0, 0};
    vkl_expr e;
    st = parse_expr(&p, &e);
    if (st) return st;
    skip_ws(&p);
    if (text[p.pos]) return perr(&p, p.pos, "an operator or the end of the expression");
    *out = e;
    return VKL_OK;
}
