/* Jinja subset, front half: newline normalization, the lexer (with
 * transformers' trim_blocks + lstrip_blocks and the -/+ whitespace marks,
 * following jinja2's lexer rules) and a recursive-descent parser with
 * jinja2's operator precedence. Every error names line and column. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja.h"

/* ---- arena ---------------------------------------------------------------- */

struct jj_chunk {
    jj_chunk *next;
    size_t cap, used;
    _Alignas(16) unsigned char data[];
};

void *jj_alloc(jj_arena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (!n) n = 16;
    jj_chunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        c = vkl_malloc(a->ctx, sizeof(jj_chunk) + cap);
        if (!c) return NULL;
        c->cap = cap;
        c->used = 0;
        c->next = a->head;
        a->head = c;
    }
    void *p = c->data + c->used;
    c->used += n;
    a->total += n;
    memset(p, 0, n);
    return p;
}

void jj_arena_free(jj_arena *a) {
    jj_chunk *c = a->head;
    while (c) {
        jj_chunk *next = c->next;
        vkl_free(a->ctx, c);
        c = next;
    }
    a->head = NULL;
    a->total = 0;
}

/* ---- lexer ------------------------------------------------------------------ */

enum { K_TEXT, K_VAR_BEGIN, K_VAR_END, K_BLOCK_BEGIN, K_BLOCK_END, K_NAME, K_STRING, K_INT, K_FLOAT, K_OP, K_EOF };

typedef struct jj_tok {
    uint8_t kind;
    char op[4];
    int line, col;
    const char *s;
    size_t n;
    int64_t i;
    double f;
    /* K_INT 9223372036854775808: only -9223372036854775808 (INT64_MIN) can
     * use it, and only the parser knows whether a '-' is in front */
    bool int_min_magnitude;
} jj_tok;

typedef struct jj_lexer {
    vkl_context *ctx;
    jj_arena *arena;
    const char *src;
    size_t n;
    jj_tok *toks;
    size_t n_toks, cap;
    /* line/column tracking, advanced monotonically */
    size_t lc_pos;
    int line, col;
} jj_lexer;

static void lex_pos(jj_lexer *lx, size_t pos, int *line, int *col) {
    if (pos < lx->lc_pos) {
        lx->lc_pos = 0;
        lx->line = 1;
        lx->col = 1;
    }
    while (lx->lc_pos < pos) {
        unsigned char c = (unsigned char)lx->src[lx->lc_pos++];
        if (c == '\n') {
            lx->line++;
            lx->col = 1;
        } else if ((c & 0xC0) != 0x80) {
            lx->col++;
        }
    }
    *line = lx->line;
    *col = lx->col;
}

static vkl_status lex_error(jj_lexer *lx, size_t pos, vkl_status st, const char *what) {
    int line, col;
    lex_pos(lx, pos, &line, &col);
    return vkl_fail(lx->ctx, st, "chat template line %d, column %d: %s", line, col, what);
}

static vkl_status lex_push(jj_lexer *lx, uint8_t kind, size_t pos, jj_tok **out) {
    vkl_status st = tok_grow(lx->ctx, (void **)&lx->toks, &lx->cap, lx->n_toks + 1, sizeof(jj_tok));
    if (st) return st;
    jj_tok *t = &lx->toks[lx->n_toks++];
    memset(t, 0, sizeof(*t));
    t->kind = kind;
    lex_pos(lx, pos, &t->line, &t->col);
    if (out) *out = t;
    return VKL_OK;
}

static bool py_space_at(const char *s, size_t n, size_t i, size_t *len) {
    size_t j = i;
    if ((unsigned char)s[i] < 0x80) {
        *len = 1;
        return tok_is_py_space((unsigned char)s[i]);
    }
    if (!tok_utf8_valid_len((const unsigned char *)s, n, i)) return false;
    uint32_t cp = tok_utf8_next(s, n, &j);
    *len = j - i;
    return tok_is_py_space(cp);
}

/* Length of text after removing trailing Python whitespace. */
static size_t rstrip_len(const char *s, size_t n) {
    size_t e = n;
    while (e > 0) {
        size_t k = e - 1;
        while (k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80) k--;
        size_t l;
        if (!py_space_at(s, e, k, &l) || k + l != e) break;
        e = k;
    }
    return e;
}

static size_t skip_py_space(const char *s, size_t n, size_t i) {
    size_t l;
    while (i < n && py_space_at(s, n, i, &l)) i += l;
    return i;
}

/* Python string-literal escapes (jinja2 decodes with "unicode-escape"). */
static vkl_status lex_string(jj_lexer *lx, size_t *pos, jj_tok *t) {
    const char *s = lx->src;
    size_t i = *pos, start = i;
    char q = s[i++];
    size_t j = i;
    while (j < lx->n && s[j] != q) j += s[j] == '\\' ? 2 : 1;
    if (j >= lx->n) return lex_error(lx, start, VKL_ERR_FORMAT, "unterminated string literal");
    char *out = jj_alloc(lx->arena, j - i + 1);
    if (!out) return VKL_ERR_OUT_OF_MEMORY;
    size_t o = 0;
    while (i < j) {
        char c = s[i++];
        if (c != '\\') {
            out[o++] = c;
            continue;
        }
        char e = s[i++];
        uint32_t cp = 0;
        int digits = 0;
        switch (e) {
        case '\n': break;
        case '\\': out[o++] = '\\'; break;
        case '\'': out[o++] = '\''; break;
        case '"': out[o++] = '"'; break;
        case 'a': out[o++] = 7; break;
        case 'b': out[o++] = 8; break;
        case 'f': out[o++] = 12; break;
        case 'n': out[o++] = '\n'; break;
        case 'r': out[o++] = '\r'; break;
        case 't': out[o++] = '\t'; break;
        case 'v': out[o++] = 11; break;
        case 'x': digits = 2; break;
        case 'u': digits = 4; break;
        case 'U': digits = 8; break;
        default:
            if (e >= '0' && e <= '7') {
                cp = (uint32_t)(e - '0');
                for (int k = 0; k < 2 && i < j && s[i] >= '0' && s[i] <= '7'; k++) cp = cp * 8 + (uint32_t)(s[i++] - '0');
                char u[4];
                size_t l = tok_utf8_encode(cp, u);
                memcpy(out + o, u, l);
                o += l;
            } else if (e == 'N') {
                return lex_error(lx, i - 2, VKL_ERR_UNSUPPORTED, "\\N{...} escapes are not supported");
            } else { /* unknown escapes stay as written */
                out[o++] = '\\';
                out[o++] = e;
            }
        }
        if (digits) {
            for (int k = 0; k < digits; k++, i++) {
                char h = i < j ? s[i] : 0;
                int v = h >= '0' && h <= '9' ? h - '0' : (h | 0x20) >= 'a' && (h | 0x20) <= 'f' ? (h | 0x20) - 'a' + 10 : -1;
                if (v < 0) return lex_error(lx, i, VKL_ERR_FORMAT, "truncated \\x/\\u/\\U escape in a string literal");
                cp = cp * 16 + (uint32_t)v;
            }
            if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
                return lex_error(lx, i, VKL_ERR_UNSUPPORTED, "escape outside Unicode scalar values");
            char u[4];
            size_t l = tok_utf8_encode(cp, u);
            memcpy(out + o, u, l); /* \xHH (2 bytes of UTF-8 at most) fits: 4 source chars */
            o += l;
        }
    }
    t->kind = K_STRING;
    t->s = out;
    t->n = o;
    *pos = j + 1;
    return VKL_OK;
}

static const char *const OPS2[] = {"//", "**", "==", "!=", "<=", ">="};
static const char OPS1[] = "+-*/%~()[]{},.:|=<>";

/* Tokens inside {{ }} or {% %}, up to and including the closing mark. */
static vkl_status lex_tag(jj_lexer *lx, bool block, size_t *pos, bool *strip_after, bool *keep_newline) {
    const char *s = lx->src;
    size_t i = *pos;
    int depth = 0;
    size_t open = i;
    vkl_status st;
    for (;;) {
        while (i < lx->n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) i++;
        if (i >= lx->n) return lex_error(lx, open, VKL_ERR_FORMAT, block ? "unterminated {% tag" : "unterminated {{ tag");
        char c = s[i];
        char close = block ? '%' : '}';
        if (depth == 0) {
            size_t k = i;
            char mark = 0;
            if ((c == '-' || (c == '+' && block)) && k + 2 < lx->n && s[k + 1] == close && s[k + 2] == '}') {
                mark = c;
                k++;
            }
            if (k + 1 < lx->n && s[k] == close && s[k + 1] == '}') {
                if ((st = lex_push(lx, block ? K_BLOCK_END : K_VAR_END, i, NULL))) return st;
                *strip_after = mark == '-';
                *keep_newline = mark == '+';
                *pos = k + 2;
                return VKL_OK;
            }
        }
        jj_tok *t;
        if ((st = lex_push(lx, K_OP, i, &t))) return st;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') {
            size_t b = i;
            while (i < lx->n && ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || s[i] == '_' ||
                                 (s[i] >= '0' && s[i] <= '9')))
                i++;
            t->kind = K_NAME;
            t->s = s + b;
            t->n = i - b;
            continue;
        }
        if (c >= '0' && c <= '9') {
            size_t b = i;
            bool is_float = false;
            while (i < lx->n && ((s[i] >= '0' && s[i] <= '9') || s[i] == '_')) i++;
            if (i + 1 < lx->n && s[i] == '.' && s[i + 1] >= '0' && s[i + 1] <= '9') {
                is_float = true;
                i++;
                while (i < lx->n && ((s[i] >= '0' && s[i] <= '9') || s[i] == '_')) i++;
            }
            if (i < lx->n && (s[i] == 'e' || s[i] == 'E')) {
                size_t e = i + 1;
                if (e < lx->n && (s[e] == '+' || s[e] == '-')) e++;
                if (e < lx->n && s[e] >= '0' && s[e] <= '9') {
                    is_float = true;
                    i = e;
                    while (i < lx->n && s[i] >= '0' && s[i] <= '9') i++;
                }
            }
            char num[64];
            size_t k = 0;
            for (size_t p = b; p < i && k + 1 < sizeof(num); p++)
                if (s[p] != '_') num[k++] = s[p];
            num[k] = 0;
            if (is_float) {
                t->kind = K_FLOAT;
                t->f = strtod(num, NULL);
            } else {
                /* digits and '_' only: accumulate, overflow-checked (num[] may
                 * have cut a long literal short) */
                t->kind = K_INT;
                uint64_t v = 0;
                bool over = false;
                for (size_t p = b; p < i; p++)
                    if (s[p] != '_')
                        over |= __builtin_mul_overflow(v, 10u, &v) ||
                                __builtin_add_overflow(v, (uint64_t)(s[p] - '0'), &v);
                if (over || v > (uint64_t)INT64_MAX + 1u)
                    return lex_error(lx, b, VKL_ERR_UNSUPPORTED,
                                     "integer literal outside the 64-bit range (-9223372036854775808 to "
                                     "9223372036854775807)");
                t->int_min_magnitude = v == (uint64_t)INT64_MAX + 1u;
                t->i = t->int_min_magnitude ? INT64_MIN : (int64_t)v;
            }
            continue;
        }
        if (c == '\'' || c == '"') {
            if ((st = lex_string(lx, &i, t))) return st;
            continue;
        }
        bool two = false;
        for (size_t k = 0; k < VKL_ARRAY_LEN(OPS2); k++)
            if (i + 1 < lx->n && s[i] == OPS2[k][0] && s[i + 1] == OPS2[k][1]) {
                memcpy(t->op, OPS2[k], 2);
                i += 2;
                two = true;
                break;
            }
        if (two) continue;
        if (c && strchr(OPS1, c)) {
            t->op[0] = c;
            if (c == '(' || c == '[' || c == '{') depth++;
            if ((c == ')' || c == ']' || c == '}') && depth > 0) depth--;
            i++;
            continue;
        }
        return lex_error(lx, i, VKL_ERR_UNSUPPORTED, "unexpected character in a tag");
    }
}

static vkl_status lex(jj_lexer *lx) {
    const char *s = lx->src;
    size_t pos = 0;
    bool line_starting = true;
    vkl_status st;
    while (pos <= lx->n) {
        size_t tag = pos;
        while (tag + 1 < lx->n && !(s[tag] == '{' && (s[tag + 1] == '{' || s[tag + 1] == '%' || s[tag + 1] == '#')))
            tag++;
        if (tag + 1 >= lx->n) tag = lx->n;
        size_t text_len = tag - pos;
        char kind = tag < lx->n ? s[tag + 1] : 0;
        char mod = tag + 2 < lx->n && (s[tag + 2] == '-' || s[tag + 2] == '+') ? s[tag + 2] : 0;
        if (kind && mod == '-') {
            text_len = rstrip_len(s + pos, text_len);
        } else if (kind && mod != '+' && (kind == '%' || kind == '#')) {
            /* lstrip_blocks: spaces from the line start to a block tag go */
            size_t l = text_len;
            while (l > 0 && s[pos + l - 1] != '\n') l--;
            if (l > 0 || line_starting) {
                size_t e = skip_py_space(s + pos + l, text_len - l, 0);
                if (e == text_len - l && e > 0) text_len = l;
            }
        }
        if (text_len) {
            jj_tok *t;
            if ((st = lex_push(lx, K_TEXT, pos, &t))) return st;
            t->s = s + pos;
            t->n = text_len;
        }
        if (tag >= lx->n) break;
        size_t p = tag + 2 + (mod ? 1 : 0);
        bool strip_after = false, keep_newline = false;
        if (kind == '#') {
            size_t e = p;
            while (e + 1 < lx->n && !(s[e] == '#' && s[e + 1] == '}')) e++;
            if (e + 1 >= lx->n) return lex_error(lx, tag, VKL_ERR_FORMAT, "unterminated {# comment");
            strip_after = e > p && s[e - 1] == '-';
            keep_newline = e > p && s[e - 1] == '+';
            p = e + 2;
        } else {
            if ((st = lex_push(lx, kind == '%' ? K_BLOCK_BEGIN : K_VAR_BEGIN, tag, NULL))) return st;
            if ((st = lex_tag(lx, kind == '%', &p, &strip_after, &keep_newline))) return st;
        }
        if (strip_after) p = skip_py_space(s, lx->n, p);
        else if (kind != '{' && !keep_newline && p < lx->n && s[p] == '\n') p++; /* trim_blocks */
        line_starting = p > 0 && s[p - 1] == '\n';
        pos = p;
    }
    return lex_push(lx, K_EOF, lx->n, NULL);
}

/* ---- parser ------------------------------------------------------------------- */

typedef struct jj_parser {
    vkl_context *ctx;
    jj_arena *a;
    const jj_tok *t;
    size_t n, i;
    int depth;
} jj_parser;

static const jj_tok *cur(jj_parser *p) {
    return &p->t[p->i < p->n ? p->i : p->n - 1];
}

static const jj_tok *peek(jj_parser *p, size_t k) {
    return &p->t[p->i + k < p->n ? p->i + k : p->n - 1];
}

static bool tok_is_name(const jj_tok *t, const char *name) {
    return t->kind == K_NAME && t->n == strlen(name) && !memcmp(t->s, name, t->n);
}

static bool tok_is_op(const jj_tok *t, const char *op) {
    return t->kind == K_OP && !strcmp(t->op, op);
}

static vkl_status perr(jj_parser *p, const jj_tok *t, vkl_status st, const char *fmt, ...) VKL_PRINTF(4, 5);
static vkl_status perr(jj_parser *p, const jj_tok *t, vkl_status st, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return vkl_fail(p->ctx, st, "chat template line %d, column %d: %s", t->line, t->col, msg);
}

static vkl_status int_too_large(jj_parser *p, const jj_tok *t) {
    return perr(p, t, VKL_ERR_UNSUPPORTED,
                "integer literal 9223372036854775808 is outside the 64-bit range (only its negation fits)");
}

static vkl_status expect_op(jj_parser *p, const char *op) {
    if (!tok_is_op(cur(p), op)) return perr(p, cur(p), VKL_ERR_FORMAT, "expected '%s'", op);
    p->i++;
    return VKL_OK;
}

static vkl_status expect_block_end(jj_parser *p) {
    if (cur(p)->kind != K_BLOCK_END) return perr(p, cur(p), VKL_ERR_FORMAT, "expected '%%}'");
    p->i++;
    return VKL_OK;
}

static vkl_status new_expr(jj_parser *p, uint8_t kind, const jj_tok *at, jj_expr **out) {
    jj_expr *e = jj_alloc(p->a, sizeof(*e));
    if (!e) return VKL_ERR_OUT_OF_MEMORY;
    e->kind = kind;
    e->line = at->line;
    e->col = at->col;
    *out = e;
    return VKL_OK;
}

/* A growable pointer list copied into the arena when done. */
typedef struct plist {
    void **v;
    size_t n, cap;
} plist;

static vkl_status plist_push(jj_parser *p, plist *l, void *x) {
    vkl_status st = tok_grow(p->ctx, (void **)&l->v, &l->cap, l->n + 1, sizeof(void *));
    if (!st) l->v[l->n++] = x;
    return st;
}

static vkl_status plist_finish(jj_parser *p, plist *l, void ***out, size_t *n) {
    *n = l->n;
    *out = NULL;
    vkl_status st = VKL_OK;
    if (l->n) {
        *out = jj_alloc(p->a, l->n * sizeof(void *));
        if (*out) memcpy(*out, l->v, l->n * sizeof(void *));
        else st = VKL_ERR_OUT_OF_MEMORY;
    }
    vkl_free(p->ctx, l->v);
    memset(l, 0, sizeof(*l));
    return st;
}

static vkl_status parse_expr(jj_parser *p, jj_expr **out);
static vkl_status parse_or(jj_parser *p, jj_expr **out);
static vkl_status parse_unary(jj_parser *p, bool with_filter, jj_expr **out);

/* (args) with keyword arguments; p->i is past '('. */
static vkl_status parse_call_args(jj_parser *p, jj_expr *e) {
    plist args = {0}, kwn = {0}, kwv = {0};
    vkl_status st = VKL_OK;
    size_t *lens = NULL, lens_cap = 0;
    while (!st && !tok_is_op(cur(p), ")")) {
        if (cur(p)->kind == K_EOF) {
            st = perr(p, cur(p), VKL_ERR_FORMAT, "unclosed '('");
            break;
        }
        if (tok_is_op(cur(p), "*") || tok_is_op(cur(p), "**")) {
            st = perr(p, cur(p), VKL_ERR_UNSUPPORTED, "*args / **kwargs in a call");
            break;
        }
        if (cur(p)->kind == K_NAME && tok_is_op(peek(p, 1), "=")) {
            const jj_tok *nt = cur(p);
            p->i += 2;
            jj_expr *v;
            if ((st = parse_expr(p, &v))) break;
            if ((st = tok_grow(p->ctx, (void **)&lens, &lens_cap, kwn.n + 1, sizeof(size_t)))) break;
            lens[kwn.n] = nt->n;
            if ((st = plist_push(p, &kwn, (void *)nt->s)) || (st = plist_push(p, &kwv, v))) break;
        } else {
            if (kwn.n) {
                st = perr(p, cur(p), VKL_ERR_FORMAT, "positional argument after a keyword argument");
                break;
            }
            jj_expr *v;
            if ((st = parse_expr(p, &v)) || (st = plist_push(p, &args, v))) break;
        }
        if (tok_is_op(cur(p), ",")) p->i++;
        else if (!tok_is_op(cur(p), ")")) st = perr(p, cur(p), VKL_ERR_FORMAT, "expected ',' or ')'");
    }
    if (!st) p->i++;
    size_t nk = kwn.n;
    if (!st && nk) {
        e->kw_lens = jj_alloc(p->a, nk * sizeof(size_t));
        if (!e->kw_lens) st = VKL_ERR_OUT_OF_MEMORY;
        else memcpy(e->kw_lens, lens, nk * sizeof(size_t));
    }
    vkl_status s2 = plist_finish(p, &args, (void ***)&e->args, &e->n_args);
    vkl_status s3 = plist_finish(p, &kwn, (void ***)&e->kw_names, &e->n_kw);
    vkl_status s4 = plist_finish(p, &kwv, (void ***)&e->kw_vals, &e->n_kw);
    vkl_free(p->ctx, lens);
    return st ? st : s2 ? s2 : s3 ? s3 : s4;
}

/* Items up to a closing bracket: lists, tuples (allow_tuple_single for "(a,)"). */
static vkl_status parse_items(jj_parser *p, const char *close, jj_expr *e, bool *trailing_comma) {
    plist items = {0};
    vkl_status st = VKL_OK;
    *trailing_comma = false;
    while (!st && !tok_is_op(cur(p), close)) {
        jj_expr *v;
        if ((st = parse_expr(p, &v)) || (st = plist_push(p, &items, v))) break;
        if (tok_is_op(cur(p), ",")) {
            p->i++;
            *trailing_comma = true;
        } else if (!tok_is_op(cur(p), close)) {
            st = perr(p, cur(p), VKL_ERR_FORMAT, "expected ',' or '%s'", close);
        } else {
            *trailing_comma = false;
        }
    }
    if (!st) p->i++;
    vkl_status s2 = plist_finish(p, &items, (void ***)&e->args, &e->n_args);
    return st ? st : s2;
}

static vkl_status parse_primary(jj_parser *p, jj_expr **out) {
    const jj_tok *t = cur(p);
    vkl_status st;
    if (++p->depth > 200) return perr(p, t, VKL_ERR_UNSUPPORTED, "expression nested deeper than 200");
    if (t->kind == K_NAME) {
        p->i++;
        if ((st = new_expr(p, JE_CONST, t, out))) return st;
        jj_expr *e = *out;
        if (tok_is_name(t, "true") || tok_is_name(t, "True")) e->cval = (jj_value){.kind = JV_BOOL, .u.b = true};
        else if (tok_is_name(t, "false") || tok_is_name(t, "False")) e->cval = (jj_value){.kind = JV_BOOL, .u.b = false};
        else if (tok_is_name(t, "none") || tok_is_name(t, "None")) e->cval = (jj_value){.kind = JV_NONE};
        else {
            e->kind = JE_NAME;
            e->name = t->s;
            e->name_len = t->n;
        }
    } else if (t->kind == K_STRING) {
        /* adjacent literals concatenate */
        size_t total = 0, k = p->i;
        while (p->t[k].kind == K_STRING) total += p->t[k++].n;
        char *s = jj_alloc(p->a, total + 1);
        if (!s) return VKL_ERR_OUT_OF_MEMORY;
        size_t o = 0;
        while (cur(p)->kind == K_STRING) {
            memcpy(s + o, cur(p)->s, cur(p)->n);
            o += cur(p)->n;
            p->i++;
        }
        if ((st = new_expr(p, JE_CONST, t, out))) return st;
        (*out)->cval = (jj_value){.kind = JV_STR, .u.s = {s, o}};
    } else if (t->kind == K_INT || t->kind == K_FLOAT) {
        if (t->int_min_magnitude) return int_too_large(p, t);
        p->i++;
        if ((st = new_expr(p, JE_CONST, t, out))) return st;
        (*out)->cval = t->kind == K_INT ? (jj_value){.kind = JV_INT, .u.i = t->i} : (jj_value){.kind = JV_FLOAT, .u.f = t->f};
    } else if (tok_is_op(t, "(")) {
        p->i++;
        if (tok_is_op(cur(p), ")")) {
            p->i++;
            if ((st = new_expr(p, JE_TUPLE, t, out))) return st;
        } else {
            jj_expr *first;
            if ((st = parse_expr(p, &first))) return st;
            if (tok_is_op(cur(p), ")")) {
                p->i++;
                *out = first;
            } else if (tok_is_op(cur(p), ",")) {
                p->i++;
                jj_expr *tup;
                if ((st = new_expr(p, JE_TUPLE, t, &tup))) return st;
                bool tc;
                if ((st = parse_items(p, ")", tup, &tc))) return st;
                jj_expr **all = jj_alloc(p->a, (tup->n_args + 1) * sizeof(jj_expr *));
                if (!all) return VKL_ERR_OUT_OF_MEMORY;
                all[0] = first;
                if (tup->n_args) memcpy(all + 1, tup->args, tup->n_args * sizeof(jj_expr *));
                tup->args = all;
                tup->n_args++;
                *out = tup;
            } else {
                return perr(p, cur(p), VKL_ERR_FORMAT, "expected ')'");
            }
        }
    } else if (tok_is_op(t, "[")) {
        p->i++;
        if ((st = new_expr(p, JE_LIST, t, out))) return st;
        bool tc;
        if ((st = parse_items(p, "]", *out, &tc))) return st;
    } else if (tok_is_op(t, "{")) {
        p->i++;
        if ((st = new_expr(p, JE_DICT, t, out))) return st;
        plist keys = {0}, vals = {0};
        while (!st && !tok_is_op(cur(p), "}")) {
            jj_expr *k, *v;
            if ((st = parse_expr(p, &k))) break;
            if ((st = expect_op(p, ":"))) break;
            if ((st = parse_expr(p, &v))) break;
            if ((st = plist_push(p, &keys, k)) || (st = plist_push(p, &vals, v))) break;
            if (tok_is_op(cur(p), ",")) p->i++;
            else if (!tok_is_op(cur(p), "}")) st = perr(p, cur(p), VKL_ERR_FORMAT, "expected ',' or '}'");
        }
        if (!st) p->i++;
        vkl_status s2 = plist_finish(p, &keys, (void ***)&(*out)->args, &(*out)->n_args);
        vkl_status s3 = plist_finish(p, &vals, (void ***)&(*out)->kw_vals, &(*out)->n_kw);
        if (st || s2 || s3) return st ? st : s2 ? s2 : s3;
    } else {
        return perr(p, t, VKL_ERR_FORMAT, "expected an expression");
    }
    p->depth--;
    return VKL_OK;
}

static vkl_status parse_postfix(jj_parser *p, jj_expr **node) {
    vkl_status st;
    for (;;) {
        const jj_tok *t = cur(p);
        jj_expr *e;
        if (tok_is_op(t, ".")) {
            p->i++;
            const jj_tok *nt = cur(p);
            if (nt->kind == K_NAME) {
                if ((st = new_expr(p, JE_ATTR, t, &e))) return st;
                e->name = nt->s;
                e->name_len = nt->n;
                e->a = *node;
            } else if (nt->kind == K_INT) {
                if (nt->int_min_magnitude) return int_too_large(p, nt);
                if ((st = new_expr(p, JE_ITEM, t, &e))) return st;
                e->a = *node;
                if ((st = new_expr(p, JE_CONST, nt, &e->b))) return st;
                e->b->cval = (jj_value){.kind = JV_INT, .u.i = nt->i};
            } else {
                return perr(p, nt, VKL_ERR_FORMAT, "expected an attribute name after '.'");
            }
            p->i++;
        } else if (tok_is_op(t, "[")) {
            p->i++;
            jj_expr *parts[3] = {NULL, NULL, NULL};
            int k = 0;
            bool slice = false;
            for (;;) {
                if (tok_is_op(cur(p), ":")) {
                    slice = true;
                    if (++k > 2) return perr(p, cur(p), VKL_ERR_FORMAT, "too many ':' in a slice");
                    p->i++;
                    continue;
                }
                if (tok_is_op(cur(p), "]")) break;
                if (parts[k]) return perr(p, cur(p), VKL_ERR_FORMAT, "expected ']'");
                if ((st = parse_expr(p, &parts[k]))) return st;
            }
            p->i++;
            if (slice) {
                if ((st = new_expr(p, JE_SLICE, t, &e))) return st;
                e->a = *node;
                e->b = parts[0];
                e->c = parts[1];
                e->args = jj_alloc(p->a, sizeof(jj_expr *));
                if (!e->args) return VKL_ERR_OUT_OF_MEMORY;
                e->args[0] = parts[2];
                e->n_args = 1;
            } else {
                if (!parts[0]) return perr(p, t, VKL_ERR_FORMAT, "empty subscript");
                if ((st = new_expr(p, JE_ITEM, t, &e))) return st;
                e->a = *node;
                e->b = parts[0];
            }
        } else if (tok_is_op(t, "(")) {
            p->i++;
            if ((st = new_expr(p, JE_CALL, t, &e))) return st;
            e->a = *node;
            if ((st = parse_call_args(p, e))) return st;
        } else {
            return VKL_OK;
        }
        *node = e;
    }
}

static vkl_status parse_filter_expr(jj_parser *p, jj_expr **node) {
    vkl_status st;
    for (;;) {
        const jj_tok *t = cur(p);
        jj_expr *e;
        if (tok_is_op(t, "|")) {
            p->i++;
            const jj_tok *nt = cur(p);
            if (nt->kind != K_NAME) return perr(p, nt, VKL_ERR_FORMAT, "expected a filter name after '|'");
            if (!jj_known_filter(nt->s, nt->n))
                return perr(p, nt, VKL_ERR_UNSUPPORTED, "unsupported filter '%.*s'", (int)nt->n, nt->s);
            p->i++;
            if ((st = new_expr(p, JE_FILTER, nt, &e))) return st;
            e->name = nt->s;
            e->name_len = nt->n;
            e->a = *node;
            if (tok_is_op(cur(p), "(")) {
                p->i++;
                if ((st = parse_call_args(p, e))) return st;
            }
        } else if (tok_is_name(t, "is")) {
            p->i++;
            bool neg = false;
            if (tok_is_name(cur(p), "not")) {
                neg = true;
                p->i++;
            }
            const jj_tok *nt = cur(p);
            const char *name = nt->s;
            size_t nlen = nt->n;
            /* "is ==" and friends: the name must outlive the token array */
            static const char *const op_tests[] = {"==", "!=", "<", ">", "<=", ">="};
            bool is_op_test = false;
            for (size_t k = 0; nt->kind == K_OP && k < VKL_ARRAY_LEN(op_tests); k++)
                if (!strcmp(nt->op, op_tests[k])) {
                    name = op_tests[k];
                    nlen = strlen(op_tests[k]);
                    is_op_test = true;
                }
            if (!is_op_test && nt->kind != K_NAME) {
                return perr(p, nt, VKL_ERR_FORMAT, "expected a test name after 'is'");
            }
            if (!jj_known_test(name, nlen))
                return perr(p, nt, VKL_ERR_UNSUPPORTED, "unsupported test '%.*s'", (int)nlen, name);
            p->i++;
            if ((st = new_expr(p, JE_TEST, nt, &e))) return st;
            e->name = name;
            e->name_len = nlen;
            e->negated = neg;
            e->a = *node;
            const jj_tok *c = cur(p);
            if (tok_is_op(c, "(")) {
                p->i++;
                if ((st = parse_call_args(p, e))) return st;
            } else if ((c->kind == K_NAME || c->kind == K_STRING || c->kind == K_INT || c->kind == K_FLOAT ||
                        tok_is_op(c, "[") || tok_is_op(c, "{")) &&
                       !tok_is_name(c, "else") && !tok_is_name(c, "or") && !tok_is_name(c, "and")) {
                if (tok_is_name(c, "is")) return perr(p, c, VKL_ERR_FORMAT, "tests cannot be chained with 'is'");
                jj_expr *arg;
                if ((st = parse_primary(p, &arg)) || (st = parse_postfix(p, &arg))) return st;
                e->args = jj_alloc(p->a, sizeof(jj_expr *));
                if (!e->args) return VKL_ERR_OUT_OF_MEMORY;
                e->args[0] = arg;
                e->n_args = 1;
            }
        } else if (tok_is_op(t, "(")) {
            p->i++;
            if ((st = new_expr(p, JE_CALL, t, &e))) return st;
            e->a = *node;
            if ((st = parse_call_args(p, e))) return st;
        } else {
            return VKL_OK;
        }
        *node = e;
    }
}

static vkl_status parse_unary(jj_parser *p, bool with_filter, jj_expr **out) {
    const jj_tok *t = cur(p);
    vkl_status st;
    if (++p->depth > 200) return perr(p, t, VKL_ERR_UNSUPPORTED, "expression nested deeper than 200");
    const jj_tok *n = t->kind == K_OP ? t + 1 : NULL; /* the token list ends with K_EOF */
    if (tok_is_op(t, "-") && n->kind == K_INT && n->int_min_magnitude && !tok_is_op(n + 1, ".") &&
        !tok_is_op(n + 1, "[") && !tok_is_op(n + 1, "(")) {
        /* -9223372036854775808 as one constant; with a postfix the literal
         * alone would be an operand, and it does not fit */
        p->i += 2;
        if ((st = new_expr(p, JE_CONST, n, out))) return st;
        (*out)->cval = (jj_value){.kind = JV_INT, .u.i = INT64_MIN};
    } else if (tok_is_op(t, "-") || tok_is_op(t, "+")) {
        p->i++;
        if ((st = new_expr(p, tok_is_op(t, "-") ? JE_NEG : JE_POS, t, out))) return st;
        if ((st = parse_unary(p, false, &(*out)->a))) return st;
    } else if ((st = parse_primary(p, out))) {
        return st;
    }
    if ((st = parse_postfix(p, out))) return st;
    if (with_filter && (st = parse_filter_expr(p, out))) return st;
    p->depth--;
    return VKL_OK;
}

static vkl_status binop(jj_parser *p, const jj_tok *t, jj_expr *l, jj_expr *r, jj_expr **out) {
    vkl_status st = new_expr(p, JE_BINOP, t, out);
    if (st) return st;
    memcpy((*out)->op, t->op, sizeof(t->op));
    (*out)->a = l;
    (*out)->b = r;
    return VKL_OK;
}

static vkl_status parse_pow(jj_parser *p, jj_expr **out) {
    vkl_status st = parse_unary(p, true, out);
    while (!st && tok_is_op(cur(p), "**")) {
        const jj_tok *t = cur(p);
        p->i++;
        jj_expr *r;
        if ((st = parse_unary(p, true, &r))) break;
        st = binop(p, t, *out, r, out);
    }
    return st;
}

static vkl_status parse_math2(jj_parser *p, jj_expr **out) {
    vkl_status st = parse_pow(p, out);
    while (!st && (tok_is_op(cur(p), "*") || tok_is_op(cur(p), "/") || tok_is_op(cur(p), "//") ||
                   tok_is_op(cur(p), "%"))) {
        const jj_tok *t = cur(p);
        p->i++;
        jj_expr *r;
        if ((st = parse_pow(p, &r))) break;
        st = binop(p, t, *out, r, out);
    }
    return st;
}

static vkl_status parse_concat(jj_parser *p, jj_expr **out) {
    vkl_status st = parse_math2(p, out);
    while (!st && tok_is_op(cur(p), "~")) {
        const jj_tok *t = cur(p);
        p->i++;
        jj_expr *r;
        if ((st = parse_math2(p, &r))) break;
        st = binop(p, t, *out, r, out);
    }
    return st;
}

static vkl_status parse_math1(jj_parser *p, jj_expr **out) {
    vkl_status st = parse_concat(p, out);
    while (!st && (tok_is_op(cur(p), "+") || tok_is_op(cur(p), "-"))) {
        const jj_tok *t = cur(p);
        p->i++;
        jj_expr *r;
        if ((st = parse_concat(p, &r))) break;
        st = binop(p, t, *out, r, out);
    }
    return st;
}

static vkl_status parse_compare(jj_parser *p, jj_expr **out) {
    const jj_tok *start = cur(p);
    jj_expr *first;
    vkl_status st = parse_math1(p, &first);
    if (st) return st;
    plist operands = {0};
    char (*ops)[4] = NULL;
    size_t ops_cap = 0, n_ops = 0;
    for (;;) {
        const jj_tok *t = cur(p);
        char op[4] = {0};
        if (t->kind == K_OP && (!strcmp(t->op, "==") || !strcmp(t->op, "!=") || !strcmp(t->op, "<") ||
                                !strcmp(t->op, ">") || !strcmp(t->op, "<=") || !strcmp(t->op, ">="))) {
            memcpy(op, t->op, 3);
            p->i++;
        } else if (tok_is_name(t, "in")) {
            strcpy(op, "in");
            p->i++;
        } else if (tok_is_name(t, "not") && tok_is_name(peek(p, 1), "in")) {
            strcpy(op, "!in");
            p->i += 2;
        } else {
            break;
        }
        jj_expr *r;
        if (!n_ops && (st = plist_push(p, &operands, first))) break;
        if ((st = parse_math1(p, &r)) || (st = plist_push(p, &operands, r))) break;
        if ((st = tok_grow(p->ctx, (void **)&ops, &ops_cap, n_ops + 1, 4))) break;
        memcpy(ops[n_ops++], op, 4);
    }
    if (!st && n_ops) {
        jj_expr *e;
        if (!(st = new_expr(p, JE_COMPARE, start, &e))) {
            e->ops = jj_alloc(p->a, n_ops * 4);
            if (!e->ops) st = VKL_ERR_OUT_OF_MEMORY;
            else memcpy(e->ops, ops, n_ops * 4);
            vkl_status s2 = plist_finish(p, &operands, (void ***)&e->args, &e->n_args);
            if (!st) st = s2;
            *out = e;
        }
    } else if (!st) {
        *out = first;
    }
    vkl_free(p->ctx, operands.v);
    vkl_free(p->ctx, ops);
    return st;
}

static vkl_status parse_not(jj_parser *p, jj_expr **out) {
    const jj_tok *t = cur(p);
    if (tok_is_name(t, "not")) {
        if (++p->depth > 200) return perr(p, t, VKL_ERR_UNSUPPORTED, "expression nested deeper than 200");
        p->i++;
        vkl_status st = new_expr(p, JE_NOT, t, out);
        if (!st) st = parse_not(p, &(*out)->a);
        p->depth--;
        return st;
    }
    return parse_compare(p, out);
}

/* operand (word operand)*, left-associative: "a and b and c". */
static vkl_status parse_word_chain(jj_parser *p, jj_expr **out, const char *word, uint8_t kind,
                                   vkl_status (*operand)(jj_parser *, jj_expr **)) {
    vkl_status st = operand(p, out);
    while (!st && tok_is_name(cur(p), word)) {
        const jj_tok *t = cur(p);
        p->i++;
        jj_expr *r, *e;
        if ((st = operand(p, &r)) || (st = new_expr(p, kind, t, &e))) break;
        e->a = *out;
        e->b = r;
        *out = e;
    }
    return st;
}

static vkl_status parse_and(jj_parser *p, jj_expr **out) { return parse_word_chain(p, out, "and", JE_AND, parse_not); }

static vkl_status parse_or(jj_parser *p, jj_expr **out) { return parse_word_chain(p, out, "or", JE_OR, parse_and); }

static vkl_status parse_expr(jj_parser *p, jj_expr **out) {
    const jj_tok *start = cur(p);
    if (++p->depth > 200) return perr(p, start, VKL_ERR_UNSUPPORTED, "expression nested deeper than 200");
    vkl_status st = parse_or(p, out);
    while (!st && tok_is_name(cur(p), "if")) {
        p->i++;
        jj_expr *e;
        if ((st = new_expr(p, JE_COND, start, &e))) break;
        e->b = *out;
        if ((st = parse_or(p, &e->a))) break;
        if (tok_is_name(cur(p), "else")) {
            p->i++;
            if ((st = parse_expr(p, &e->c))) break;
        }
        *out = e;
    }
    p->depth--;
    return st;
}

/* ---- statements ---------------------------------------------------------------- */

static vkl_status new_stmt(jj_parser *p, uint8_t kind, const jj_tok *at, jj_stmt **out) {
    jj_stmt *s = jj_alloc(p->a, sizeof(*s));
    if (!s) return VKL_ERR_OUT_OF_MEMORY;
    s->kind = kind;
    s->line = at->line;
    s->col = at->col;
    *out = s;
    return VKL_OK;
}

/* Parse statements until {% <one of ends> ... (the name is consumed; *which
 * says which). ends == NULL: to the end of the template. */
static vkl_status parse_body(jj_parser *p, jj_body *body, const char *const *ends, size_t n_ends, size_t *which,
                             const jj_tok *opener);

static vkl_status parse_name_list(jj_parser *p, plist *names, size_t **lens) {
    size_t cap = 0;
    bool paren = tok_is_op(cur(p), "(");
    if (paren) p->i++;
    for (;;) {
        const jj_tok *t = cur(p);
        if (t->kind != K_NAME) return perr(p, t, VKL_ERR_FORMAT, "expected a variable name");
        vkl_status st = tok_grow(p->ctx, (void **)lens, &cap, names->n + 1, sizeof(size_t));
        if (st) return st;
        (*lens)[names->n] = t->n;
        if ((st = plist_push(p, names, (void *)t->s))) return st;
        p->i++;
        if (!tok_is_op(cur(p), ",")) break;
        p->i++;
    }
    if (paren) return expect_op(p, ")");
    return VKL_OK;
}

static vkl_status finish_names(jj_parser *p, jj_stmt *s, plist *names, size_t *lens) {
    vkl_status st = VKL_OK;
    if (names->n) {
        s->name_lens = jj_alloc(p->a, names->n * sizeof(size_t));
        if (!s->name_lens) st = VKL_ERR_OUT_OF_MEMORY;
        else memcpy(s->name_lens, lens, names->n * sizeof(size_t));
    }
    vkl_status s2 = plist_finish(p, names, (void ***)&s->names, &s->n_names);
    vkl_free(p->ctx, lens);
    return st ? st : s2;
}

static vkl_status parse_if(jj_parser *p, const jj_tok *kw, jj_stmt **out) {
    vkl_status st = new_stmt(p, JS_IF, kw, out);
    if (st) return st;
    jj_stmt *s = *out;
    plist conds = {0}, bodies = {0};
    static const char *const ends[] = {"elif", "else", "endif"};
    for (;;) {
        jj_expr *c;
        jj_body *b = jj_alloc(p->a, sizeof(jj_body));
        size_t which;
        if (!b) {
            st = VKL_ERR_OUT_OF_MEMORY;
            break;
        }
        if ((st = parse_expr(p, &c)) || (st = expect_block_end(p))) break;
        if ((st = parse_body(p, b, ends, 3, &which, kw))) break;
        if ((st = plist_push(p, &conds, c)) || (st = plist_push(p, &bodies, b))) break;
        if (which == 0) continue;
        if (which == 1) {
            static const char *const end_if[] = {"endif"};
            if ((st = expect_block_end(p)) || (st = parse_body(p, &s->else_body, end_if, 1, &which, kw))) break;
        }
        st = expect_block_end(p);
        break;
    }
    jj_body **bv = NULL;
    vkl_status s2 = plist_finish(p, &conds, (void ***)&s->conds, &s->n_branches);
    vkl_status s3 = plist_finish(p, &bodies, (void ***)&bv, &s->n_branches);
    if (!st && !s2 && !s3 && s->n_branches) {
        s->bodies = jj_alloc(p->a, s->n_branches * sizeof(jj_body));
        if (!s->bodies) return VKL_ERR_OUT_OF_MEMORY;
        for (size_t k = 0; k < s->n_branches; k++) s->bodies[k] = *bv[k];
    }
    return st ? st : s2 ? s2 : s3;
}

static vkl_status parse_for(jj_parser *p, const jj_tok *kw, jj_stmt **out) {
    vkl_status st = new_stmt(p, JS_FOR, kw, out);
    if (st) return st;
    jj_stmt *s = *out;
    plist names = {0};
    size_t *lens = NULL;
    st = parse_name_list(p, &names, &lens);
    vkl_status s2 = finish_names(p, s, &names, lens);
    if (st || s2) return st ? st : s2;
    if (!tok_is_name(cur(p), "in")) return perr(p, cur(p), VKL_ERR_FORMAT, "expected 'in' in a for loop");
    p->i++;
    if ((st = parse_or(p, &s->expr))) return st;
    if (tok_is_name(cur(p), "if")) {
        p->i++;
        if ((st = parse_expr(p, &s->filter))) return st;
    }
    if (tok_is_name(cur(p), "recursive")) return perr(p, cur(p), VKL_ERR_UNSUPPORTED, "recursive loops");
    if ((st = expect_block_end(p))) return st;
    static const char *const ends[] = {"else", "endfor"};
    size_t which;
    if ((st = parse_body(p, &s->body, ends, 2, &which, kw))) return st;
    if (which == 0) {
        static const char *const end_for[] = {"endfor"};
        if ((st = expect_block_end(p)) || (st = parse_body(p, &s->else_body, end_for, 1, &which, kw))) return st;
    }
    return expect_block_end(p);
}

static vkl_status parse_set(jj_parser *p, const jj_tok *kw, jj_stmt **out) {
    vkl_status st = new_stmt(p, JS_SET, kw, out);
    if (st) return st;
    jj_stmt *s = *out;
    const jj_tok *t = cur(p);
    if (t->kind != K_NAME) return perr(p, t, VKL_ERR_FORMAT, "expected a variable name after 'set'");
    p->i++;
    s->names = jj_alloc(p->a, 2 * sizeof(char *));
    s->name_lens = jj_alloc(p->a, 2 * sizeof(size_t));
    if (!s->names || !s->name_lens) return VKL_ERR_OUT_OF_MEMORY;
    s->names[0] = t->s;
    s->name_lens[0] = t->n;
    s->n_names = 1;
    if (tok_is_op(cur(p), ".")) {
        p->i++;
        const jj_tok *a = cur(p);
        if (a->kind != K_NAME) return perr(p, a, VKL_ERR_FORMAT, "expected an attribute name");
        p->i++;
        s->names[1] = a->s;
        s->name_lens[1] = a->n;
        s->n_names = 2;
        s->set_attr = true;
    }
    if (tok_is_op(cur(p), ",")) return perr(p, cur(p), VKL_ERR_UNSUPPORTED, "tuple assignment in set");
    if (tok_is_op(cur(p), "=")) {
        p->i++;
        if ((st = parse_expr(p, &s->expr))) return st;
        return expect_block_end(p);
    }
    if (s->set_attr) return perr(p, cur(p), VKL_ERR_FORMAT, "expected '='");
    s->kind = JS_SET_BLOCK;
    if ((st = expect_block_end(p))) return st;
    static const char *const ends[] = {"endset"};
    size_t which;
    if ((st = parse_body(p, &s->body, ends, 1, &which, kw))) return st;
    return expect_block_end(p);
}

static vkl_status parse_macro(jj_parser *p, const jj_tok *kw, jj_stmt **out) {
    vkl_status st = new_stmt(p, JS_MACRO, kw, out);
    if (st) return st;
    jj_stmt *s = *out;
    const jj_tok *t = cur(p);
    if (t->kind != K_NAME) return perr(p, t, VKL_ERR_FORMAT, "expected a macro name");
    s->macro_name = t->s;
    s->macro_name_len = t->n;
    p->i++;
    if ((st = expect_op(p, "("))) return st;
    plist names = {0}, defs = {0};
    size_t *lens = NULL, cap = 0;
    while (!st && !tok_is_op(cur(p), ")")) {
        const jj_tok *nt = cur(p);
        if (nt->kind != K_NAME) {
            st = perr(p, nt, VKL_ERR_FORMAT, "expected a parameter name");
            break;
        }
        p->i++;
        jj_expr *d = NULL;
        if (tok_is_op(cur(p), "=")) {
            p->i++;
            if ((st = parse_expr(p, &d))) break;
        }
        if ((st = tok_grow(p->ctx, (void **)&lens, &cap, names.n + 1, sizeof(size_t)))) break;
        lens[names.n] = nt->n;
        if ((st = plist_push(p, &names, (void *)nt->s)) || (st = plist_push(p, &defs, d))) break;
        if (tok_is_op(cur(p), ",")) p->i++;
        else if (!tok_is_op(cur(p), ")")) st = perr(p, cur(p), VKL_ERR_FORMAT, "expected ',' or ')'");
    }
    if (!st) p->i++;
    size_t nd;
    vkl_status s2 = finish_names(p, s, &names, lens);
    vkl_status s3 = plist_finish(p, &defs, (void ***)&s->defaults, &nd);
    if (st || s2 || s3) return st ? st : s2 ? s2 : s3;
    if ((st = expect_block_end(p))) return st;
    static const char *const ends[] = {"endmacro"};
    size_t which;
    if ((st = parse_body(p, &s->body, ends, 1, &which, kw))) return st;
    return expect_block_end(p);
}

static vkl_status parse_body(jj_parser *p, jj_body *body, const char *const *ends, size_t n_ends, size_t *which,
                             const jj_tok *opener) {
    plist stmts = {0};
    vkl_status st = VKL_OK;
    if (++p->depth > 200) return perr(p, cur(p), VKL_ERR_UNSUPPORTED, "blocks nested deeper than 200");
    for (;;) {
        const jj_tok *t = cur(p);
        jj_stmt *s = NULL;
        if (t->kind == K_EOF) {
            if (n_ends)
                st = perr(p, opener, VKL_ERR_FORMAT, "'{%% %.*s %%}' is never closed with '{%% %s %%}'",
                          (int)opener->n, opener->s, ends[n_ends - 1]);
            break;
        }
        if (t->kind == K_TEXT) {
            p->i++;
            if ((st = new_stmt(p, JS_TEXT, t, &s))) break;
            s->text = t->s;
            s->text_len = t->n;
        } else if (t->kind == K_VAR_BEGIN) {
            p->i++;
            if ((st = new_stmt(p, JS_OUTPUT, t, &s)) || (st = parse_expr(p, &s->expr))) break;
            if (cur(p)->kind != K_VAR_END) {
                st = perr(p, cur(p), VKL_ERR_FORMAT, "expected '}}'");
                break;
            }
            p->i++;
        } else if (t->kind == K_BLOCK_BEGIN) {
            const jj_tok *kw = peek(p, 1);
            if (kw->kind != K_NAME) {
                st = perr(p, kw, VKL_ERR_FORMAT, "expected a statement name after '{%%'");
                break;
            }
            bool ended = false;
            for (size_t k = 0; k < n_ends; k++)
                if (tok_is_name(kw, ends[k])) {
                    p->i += 2;
                    *which = k;
                    ended = true;
                }
            if (ended) break;
            p->i += 2;
            if (tok_is_name(kw, "if")) st = parse_if(p, kw, &s);
            else if (tok_is_name(kw, "for")) st = parse_for(p, kw, &s);
            else if (tok_is_name(kw, "set")) st = parse_set(p, kw, &s);
            else if (tok_is_name(kw, "macro")) st = parse_macro(p, kw, &s);
            else if (tok_is_name(kw, "break") || tok_is_name(kw, "continue")) {
                if (!(st = new_stmt(p, tok_is_name(kw, "break") ? JS_BREAK : JS_CONTINUE, kw, &s)))
                    st = expect_block_end(p);
            } else if (tok_is_name(kw, "generation")) {
                static const char *const gen_end[] = {"endgeneration"};
                size_t w;
                if (!(st = new_stmt(p, JS_BLOCK, kw, &s)) && !(st = expect_block_end(p)) &&
                    !(st = parse_body(p, &s->body, gen_end, 1, &w, kw)))
                    st = expect_block_end(p);
            } else if (tok_is_name(kw, "elif") || tok_is_name(kw, "else") || tok_is_name(kw, "endif") ||
                       tok_is_name(kw, "endfor") || tok_is_name(kw, "endset") || tok_is_name(kw, "endmacro") ||
                       tok_is_name(kw, "endgeneration")) {
                st = perr(p, kw, VKL_ERR_FORMAT, "unexpected '{%% %.*s %%}'", (int)kw->n, kw->s);
            } else {
                st = perr(p, kw, VKL_ERR_UNSUPPORTED, "unsupported statement '{%% %.*s %%}'", (int)kw->n, kw->s);
            }
            if (st) break;
        } else {
            st = perr(p, t, VKL_ERR_INTERNAL, "unexpected token");
            break;
        }
        if ((st = plist_push(p, &stmts, s))) break;
    }
    p->depth--;
    vkl_status s2 = plist_finish(p, &stmts, (void ***)&body->v, &body->n);
    return st ? st : s2;
}

/* transformers loads templates with jinja2 defaults: "\r\n" and "\r" read as
 * "\n", and one trailing newline dropped (keep_trailing_newline=False). */
static char *normalize_source(vkl_context *ctx, const char *src, size_t len, size_t *out_len) {
    char *s = vkl_malloc(ctx, len + 1);
    if (!s) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '\r') {
            s[o++] = '\n';
            if (i + 1 < len && src[i + 1] == '\n') i++;
        } else {
            s[o++] = src[i];
        }
    }
    if (o && s[o - 1] == '\n') o--;
    s[o] = 0;
    *out_len = o;
    return s;
}

vkl_status jj_parse(vkl_context *ctx, const char *src, size_t len, jj_template **out) {
    *out = NULL;
    if (!tok_utf8_is_valid(src, len)) return vkl_fail(ctx, VKL_ERR_FORMAT, "chat template is not valid UTF-8");
    jj_template *t = vkl_calloc(ctx, 1, sizeof(*t));
    if (!t) return VKL_ERR_OUT_OF_MEMORY;
    t->arena.ctx = ctx;
    size_t n;
    t->source = normalize_source(ctx, src, len, &n);
    if (!t->source) {
        vkl_free(ctx, t);
        return VKL_ERR_OUT_OF_MEMORY;
    }
    jj_lexer lx = {ctx, &t->arena, t->source, n, NULL, 0, 0, 0, 1, 1};
    vkl_status st = lex(&lx);
    if (!st) {
        jj_parser p = {ctx, &t->arena, lx.toks, lx.n_toks, 0, 0};
        size_t which;
        st = parse_body(&p, &t->body, NULL, 0, &which, NULL);
    }
    vkl_free(ctx, lx.toks);
    if (st) {
        jj_free(ctx, t);
        return st;
    }
    *out = t;
    return VKL_OK;
}

void jj_free(vkl_context *ctx, jj_template *t) {
    if (!t) return;
    jj_arena_free(&t->arena);
    vkl_free(ctx, t->source);
    vkl_free(ctx, t);
}
