/* Jinja subset, back half: rendering a parsed template with Python-like
 * values (str/repr/json.dumps as Python prints them), jinja2's Undefined,
 * loop variables and scoping, the filters, tests, string/dict methods and
 * globals chat templates use. Bounded: steps, recursion and output size. */
#define _POSIX_C_SOURCE 200809L /* localtime_r */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jinja.h"

#define JJ_STEP_LIMIT 10000000u
#define JJ_DEPTH_LIMIT 150
#define JJ_OUTPUT_LIMIT ((size_t)64 << 20)
#define JJ_MEMORY_LIMIT ((size_t)256 << 20)
#define JJ_RANGE_LIMIT 1000000

enum {
    FN_NONE,
    FN_RANGE,
    FN_NAMESPACE,
    FN_RAISE,
    FN_STRFTIME,
    FN_DICT,
    FN_CYCLE,
    M_STRIP,
    M_LSTRIP,
    M_RSTRIP,
    M_SPLIT,
    M_RSPLIT,
    M_STARTSWITH,
    M_ENDSWITH,
    M_UPPER,
    M_LOWER,
    M_TITLE,
    M_CAPITALIZE,
    M_REPLACE,
    M_JOIN,
    M_FIND,
    M_COUNT,
    M_SPLITLINES,
    M_ISDIGIT,
    M_ISALPHA,
    M_ISSPACE,
    M_ISUPPER,
    M_ISLOWER,
    M_ISALNUM,
    M_ITEMS,
    M_KEYS,
    M_VALUES,
    M_GET,
    M_INDEX
};

typedef struct jj_var {
    const char *name;
    size_t len;
    jj_value v;
} jj_var;

typedef struct jj_frame {
    jj_var *v;
    size_t n, cap;
    struct jj_frame *parent;
} jj_frame;

typedef struct R {
    vkl_context *ctx;
    jj_arena *a;
    tok_buf *out;
    jj_frame *top, *root;
    uint64_t steps;
    int depth;
    int flow; /* 1 break, 2 continue */
} R;

static const jj_value UNDEF = {.kind = JV_UNDEF};
static const jj_value NONE = {.kind = JV_NONE};

static vkl_status rerr(R *r, int line, int col, vkl_status st, const char *fmt, ...) VKL_PRINTF(5, 6);
static vkl_status rerr(R *r, int line, int col, vkl_status st, const char *fmt, ...) {
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return vkl_fail(r->ctx, st, "chat template line %d, column %d: %s", line, col, msg);
}

#define EERR(e, ...) rerr(r, (e)->line, (e)->col, VKL_ERR_INVALID_ARGUMENT, __VA_ARGS__)

/* Builtins whose work grows with their input (sort, unique, in, join ...)
 * pay for it in steps, so no template outruns the step bound. */
static vkl_status spend(R *r, uint64_t work, const jj_expr *at) {
    r->steps += work;
    if (r->steps > JJ_STEP_LIMIT)
        return rerr(r, at->line, at->col, VKL_ERR_INVALID_ARGUMENT, "template takes more than %u steps",
                    (unsigned)JJ_STEP_LIMIT);
    return VKL_OK;
}

static const char *kind_name(const jj_value *v) {
    switch (v->kind) {
    case JV_UNDEF: return "undefined";
    case JV_NONE: return "none";
    case JV_BOOL: return "bool";
    case JV_INT: return "int";
    case JV_FLOAT: return "float";
    case JV_STR: return "str";
    case JV_LIST: return "list";
    case JV_DICT: return v->is_ns ? "namespace" : "dict";
    case JV_FUNC: return "function";
    case JV_MACRO: return "macro";
    default: return "loop";
    }
}

/* ---- value construction ---------------------------------------------------- */

static vkl_status charge(R *r) {
    if (r->a->total > JJ_MEMORY_LIMIT)
        return vkl_fail(r->ctx, VKL_ERR_OUT_OF_MEMORY, "chat template: rendering needs more than 512 MiB");
    return VKL_OK;
}

static vkl_status mk_str(R *r, const char *p, size_t n, jj_value *out) {
    char *s = jj_alloc(r->a, n + 1);
    if (!s) return VKL_ERR_OUT_OF_MEMORY;
    if (n) memcpy(s, p, n);
    *out = (jj_value){.kind = JV_STR, .u.s = {s, n}};
    return charge(r);
}

static vkl_status mk_list(R *r, size_t n, jj_value *out) {
    jj_list *l = jj_alloc(r->a, sizeof(*l));
    if (!l) return VKL_ERR_OUT_OF_MEMORY;
    if (n && !(l->v = jj_alloc(r->a, n * sizeof(jj_value)))) return VKL_ERR_OUT_OF_MEMORY;
    l->n = n;
    *out = (jj_value){.kind = JV_LIST, .u.list = l};
    return charge(r);
}

static vkl_status mk_dict(R *r, jj_value *out) {
    jj_dict *d = jj_alloc(r->a, sizeof(*d));
    if (!d) return VKL_ERR_OUT_OF_MEMORY;
    *out = (jj_value){.kind = JV_DICT, .u.dict = d};
    return VKL_OK;
}

static jj_value mk_int(int64_t i) {
    return (jj_value){.kind = JV_INT, .u.i = i};
}
static jj_value mk_bool(bool b) {
    return (jj_value){.kind = JV_BOOL, .u.b = b};
}
static jj_value mk_float(double f) {
    return (jj_value){.kind = JV_FLOAT, .u.f = f};
}

static bool val_eq(const jj_value *a, const jj_value *b);

static int dict_find(const jj_dict *d, const jj_value *key) {
    for (size_t i = 0; i < d->n; i++)
        if (val_eq(&d->keys[i], key)) return (int)i;
    return -1;
}

static int dict_find_str(const jj_dict *d, const char *k, size_t n) {
    for (size_t i = 0; i < d->n; i++)
        if (d->keys[i].kind == JV_STR && d->keys[i].u.s.n == n && !memcmp(d->keys[i].u.s.p, k, n)) return (int)i;
    return -1;
}

static vkl_status dict_set(R *r, jj_dict *d, const jj_value *key, const jj_value *val) {
    int at = dict_find(d, key);
    if (at >= 0) {
        d->vals[at] = *val;
        return VKL_OK;
    }
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 8;
        jj_value *k = jj_alloc(r->a, cap * sizeof(jj_value)), *v = jj_alloc(r->a, cap * sizeof(jj_value));
        if (!k || !v) return VKL_ERR_OUT_OF_MEMORY;
        if (d->n) {
            memcpy(k, d->keys, d->n * sizeof(jj_value));
            memcpy(v, d->vals, d->n * sizeof(jj_value));
        }
        d->keys = k;
        d->vals = v;
        d->cap = cap;
    }
    d->keys[d->n] = *key;
    d->vals[d->n] = *val;
    d->n++;
    return charge(r);
}

/* ---- frames ------------------------------------------------------------------ */

static vkl_status frame_set(R *r, jj_frame *f, const char *name, size_t len, const jj_value *v) {
    for (size_t i = 0; i < f->n; i++)
        if (f->v[i].len == len && !memcmp(f->v[i].name, name, len)) {
            f->v[i].v = *v;
            return VKL_OK;
        }
    vkl_status st = tok_grow(r->ctx, (void **)&f->v, &f->cap, f->n + 1, sizeof(jj_var));
    if (st) return st;
    f->v[f->n++] = (jj_var){name, len, *v};
    return VKL_OK;
}

static bool lookup(R *r, const char *name, size_t len, jj_value *out) {
    for (jj_frame *f = r->top; f; f = f->parent)
        for (size_t i = f->n; i-- > 0;)
            if (f->v[i].len == len && !memcmp(f->v[i].name, name, len)) {
                *out = f->v[i].v;
                return true;
            }
    return false;
}

static void frame_free(R *r, jj_frame *f) {
    vkl_free(r->ctx, f->v);
    f->v = NULL;
    f->n = f->cap = 0;
}

/* ---- truth, equality, text ------------------------------------------------------- */

static bool truthy(const jj_value *v) {
    switch (v->kind) {
    case JV_UNDEF:
    case JV_NONE: return false;
    case JV_BOOL: return v->u.b;
    case JV_INT: return v->u.i != 0;
    case JV_FLOAT: return v->u.f != 0;
    case JV_STR: return v->u.s.n != 0;
    case JV_LIST: return v->u.list->n != 0;
    case JV_DICT: return v->is_ns || v->u.dict->n != 0;
    default: return true;
    }
}

static bool is_num(const jj_value *v) {
    return v->kind == JV_BOOL || v->kind == JV_INT || v->kind == JV_FLOAT;
}

/* Numbers of any kind as double / int64; other kinds read as 0 (callers
 * check kinds where it matters). Float to int saturates, as it must not be
 * undefined behaviour. */
static double num_f(const jj_value *v) {
    switch (v->kind) {
    case JV_FLOAT: return v->u.f;
    case JV_INT: return (double)v->u.i;
    case JV_BOOL: return v->u.b ? 1.0 : 0.0;
    default: return 0.0;
    }
}

static int64_t f2i(double f) {
    if (isnan(f)) return 0;
    if (f >= 9223372036854775807.0) return INT64_MAX;
    if (f <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)f;
}

static int64_t num_i(const jj_value *v) {
    switch (v->kind) {
    case JV_INT: return v->u.i;
    case JV_BOOL: return v->u.b;
    case JV_FLOAT: return f2i(v->u.f);
    default: return 0;
    }
}

static bool val_eq(const jj_value *a, const jj_value *b) {
    if (is_num(a) && is_num(b)) {
        if (a->kind != JV_FLOAT && b->kind != JV_FLOAT) return num_i(a) == num_i(b);
        return num_f(a) == num_f(b);
    }
    if (a->kind != b->kind) return false;
    switch (a->kind) {
    case JV_UNDEF:
    case JV_NONE: return true;
    case JV_STR: return a->u.s.n == b->u.s.n && !memcmp(a->u.s.p, b->u.s.p, a->u.s.n);
    case JV_LIST:
        if (a->u.list->n != b->u.list->n) return false;
        for (size_t i = 0; i < a->u.list->n; i++)
            if (!val_eq(&a->u.list->v[i], &b->u.list->v[i])) return false;
        return true;
    case JV_DICT:
        if (a->u.dict == b->u.dict) return true;
        if (a->is_ns || b->is_ns || a->u.dict->n != b->u.dict->n) return false;
        for (size_t i = 0; i < a->u.dict->n; i++) {
            int k = dict_find(b->u.dict, &a->u.dict->keys[i]);
            if (k < 0 || !val_eq(&a->u.dict->vals[i], &b->u.dict->vals[k])) return false;
        }
        return true;
    case JV_FUNC: return a->fn == b->fn && a->u.self == b->u.self;
    case JV_MACRO: return a->u.macro == b->u.macro;
    default: return a->u.loop == b->u.loop;
    }
}

/* Python's repr(float): the shortest digits that read back, in fixed
 * notation for exponents -4..15, else d.ddde+XX. */
static void float_repr(double f, char *buf, size_t cap) {
    if (isnan(f)) {
        snprintf(buf, cap, "nan");
        return;
    }
    if (isinf(f)) {
        snprintf(buf, cap, f < 0 ? "-inf" : "inf");
        return;
    }
    char e[40];
    int prec = 1;
    for (; prec <= 17; prec++) {
        snprintf(e, sizeof(e), "%.*e", prec - 1, f);
        if (strtod(e, NULL) == f) break;
    }
    /* e = [-]d[.ddd]e[+-]XX */
    char digits[24];
    size_t nd = 0;
    const char *p = e;
    bool neg = *p == '-';
    if (neg) p++;
    while (*p && *p != 'e') {
        if (*p != '.') digits[nd++] = *p;
        p++;
    }
    int exp = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    digits[nd] = 0;
    size_t o = 0;
    if (neg) buf[o++] = '-';
    if (exp >= -4 && exp < 16) {
        if (exp < 0) {
            o += (size_t)snprintf(buf + o, cap - o, "0.");
            for (int k = -1; k > exp; k--) buf[o++] = '0';
            o += (size_t)snprintf(buf + o, cap - o, "%s", digits);
        } else {
            for (int k = 0; k <= exp; k++) buf[o++] = (size_t)k < nd ? digits[k] : '0';
            buf[o++] = '.';
            if ((size_t)exp + 1 < nd) o += (size_t)snprintf(buf + o, cap - o, "%s", digits + exp + 1);
            else buf[o++] = '0';
        }
        buf[o] = 0;
    } else {
        buf[o++] = digits[0];
        if (nd > 1) {
            buf[o++] = '.';
            memcpy(buf + o, digits + 1, nd - 1);
            o += nd - 1;
        }
        snprintf(buf + o, cap - o, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    }
}

static vkl_status put(R *r, tok_buf *b, const char *s, size_t n) {
    if (b->n + n > JJ_OUTPUT_LIMIT)
        return vkl_fail(r->ctx, VKL_ERR_OUT_OF_MEMORY, "chat template: output larger than 64 MiB");
    return tok_buf_append(r->ctx, b, s, n);
}

static vkl_status put_s(R *r, tok_buf *b, const char *s) {
    return put(r, b, s, strlen(s));
}

static vkl_status str_of(R *r, const jj_value *v, tok_buf *b);

static vkl_status repr_of(R *r, const jj_value *v, tok_buf *b) {
    if (v->kind != JV_STR) return str_of(r, v, b);
    bool has_sq = memchr(v->u.s.p, '\'', v->u.s.n) != NULL, has_dq = memchr(v->u.s.p, '"', v->u.s.n) != NULL;
    char q = has_sq && !has_dq ? '"' : '\'';
    vkl_status st = put(r, b, &q, 1);
    for (size_t i = 0; i < v->u.s.n && !st; i++) {
        unsigned char c = (unsigned char)v->u.s.p[i];
        char esc[8];
        if (c == '\\') st = put_s(r, b, "\\\\");
        else if (c == (unsigned char)q) st = put(r, b, (const char[]){'\\', (char)q}, 2);
        else if (c == '\n') st = put_s(r, b, "\\n");
        else if (c == '\r') st = put_s(r, b, "\\r");
        else if (c == '\t') st = put_s(r, b, "\\t");
        else if (c < 0x20 || c == 0x7f) {
            snprintf(esc, sizeof(esc), "\\x%02x", c);
            st = put_s(r, b, esc);
        } else st = put(r, b, (const char *)&c, 1);
    }
    return st ? st : put(r, b, &q, 1);
}

static vkl_status str_of(R *r, const jj_value *v, tok_buf *b) {
    char num[64];
    vkl_status st = VKL_OK;
    switch (v->kind) {
    case JV_UNDEF: return VKL_OK;
    case JV_NONE: return put_s(r, b, "None");
    case JV_BOOL: return put_s(r, b, v->u.b ? "True" : "False");
    case JV_INT: snprintf(num, sizeof(num), "%lld", (long long)v->u.i); return put_s(r, b, num);
    case JV_FLOAT: float_repr(v->u.f, num, sizeof(num)); return put_s(r, b, num);
    case JV_STR: return put(r, b, v->u.s.p, v->u.s.n);
    case JV_LIST:
        st = put_s(r, b, v->is_tuple ? "(" : "[");
        for (size_t i = 0; i < v->u.list->n && !st; i++) {
            if (i) st = put_s(r, b, ", ");
            if (!st) st = repr_of(r, &v->u.list->v[i], b);
        }
        if (!st && v->is_tuple && v->u.list->n == 1) st = put_s(r, b, ",");
        return st ? st : put_s(r, b, v->is_tuple ? ")" : "]");
    case JV_DICT:
        if (v->is_ns) return put_s(r, b, "<Namespace>");
        st = put_s(r, b, "{");
        for (size_t i = 0; i < v->u.dict->n && !st; i++) {
            if (i) st = put_s(r, b, ", ");
            if (!st) st = repr_of(r, &v->u.dict->keys[i], b);
            if (!st) st = put_s(r, b, ": ");
            if (!st) st = repr_of(r, &v->u.dict->vals[i], b);
        }
        return st ? st : put_s(r, b, "}");
    default: return put_s(r, b, v->kind == JV_LOOP ? "<LoopContext>" : "<function>");
    }
}

static vkl_status to_string(R *r, const jj_value *v, jj_value *out) {
    if (v->kind == JV_STR) {
        *out = *v;
        return VKL_OK;
    }
    tok_buf b = {0};
    vkl_status st = str_of(r, v, &b);
    if (!st) st = mk_str(r, b.p ? b.p : "", b.n, out);
    tok_buf_free(r->ctx, &b);
    return st;
}

/* json.dumps(x, ensure_ascii=False, indent=indent) as transformers' tojson. */
static vkl_status json_of(R *r, const jj_value *v, int indent, int level, tok_buf *b, const jj_expr *at) {
    char num[64];
    vkl_status st = VKL_OK;
    if (level > 200) return EERR(at, "tojson: nesting deeper than 200");
    switch (v->kind) {
    case JV_NONE: return put_s(r, b, "null");
    case JV_BOOL: return put_s(r, b, v->u.b ? "true" : "false");
    case JV_INT: snprintf(num, sizeof(num), "%lld", (long long)v->u.i); return put_s(r, b, num);
    case JV_FLOAT:
        if (isnan(v->u.f)) return put_s(r, b, "NaN");
        if (isinf(v->u.f)) return put_s(r, b, v->u.f < 0 ? "-Infinity" : "Infinity");
        float_repr(v->u.f, num, sizeof(num));
        return put_s(r, b, num);
    case JV_STR:
        st = put_s(r, b, "\"");
        for (size_t i = 0; i < v->u.s.n && !st; i++) {
            unsigned char c = (unsigned char)v->u.s.p[i];
            if (c == '"') st = put_s(r, b, "\\\"");
            else if (c == '\\') st = put_s(r, b, "\\\\");
            else if (c == '\n') st = put_s(r, b, "\\n");
            else if (c == '\r') st = put_s(r, b, "\\r");
            else if (c == '\t') st = put_s(r, b, "\\t");
            else if (c == '\b') st = put_s(r, b, "\\b");
            else if (c == '\f') st = put_s(r, b, "\\f");
            else if (c < 0x20) {
                snprintf(num, sizeof(num), "\\u%04x", c);
                st = put_s(r, b, num);
            } else st = put(r, b, (const char *)&c, 1);
        }
        return st ? st : put_s(r, b, "\"");
    case JV_LIST:
    case JV_DICT: {
        bool list = v->kind == JV_LIST;
        if (!list && v->is_ns) return EERR(at, "tojson: a namespace is not JSON serializable");
        size_t n = list ? v->u.list->n : v->u.dict->n;
        if (!n) return put_s(r, b, list ? "[]" : "{}");
        st = put_s(r, b, list ? "[" : "{");
        for (size_t i = 0; i < n && !st; i++) {
            if (i) st = put_s(r, b, indent >= 0 ? "," : ", ");
            if (!st && indent >= 0) {
                st = put_s(r, b, "\n");
                for (int k = 0; k < indent * (level + 1) && !st; k++) st = put_s(r, b, " ");
            }
            if (st) break;
            if (list) {
                st = json_of(r, &v->u.list->v[i], indent, level + 1, b, at);
                continue;
            }
            const jj_value *k = &v->u.dict->keys[i];
            if (k->kind == JV_STR) st = json_of(r, k, indent, level + 1, b, at);
            else if (k->kind == JV_INT || k->kind == JV_BOOL || k->kind == JV_NONE || k->kind == JV_FLOAT) {
                tok_buf kb = {0};
                st = k->kind == JV_BOOL ? put_s(r, &kb, k->u.b ? "true" : "false")
                     : k->kind == JV_NONE ? put_s(r, &kb, "null") : str_of(r, k, &kb);
                jj_value ks;
                if (!st) st = mk_str(r, kb.p ? kb.p : "", kb.n, &ks);
                tok_buf_free(r->ctx, &kb);
                if (!st) st = json_of(r, &ks, indent, level + 1, b, at);
            } else {
                st = EERR(at, "tojson: dict keys must be str, int, float, bool or None");
            }
            if (!st) st = put_s(r, b, ": ");
            if (!st) st = json_of(r, &v->u.dict->vals[i], indent, level + 1, b, at);
        }
        if (!st && indent >= 0) {
            st = put_s(r, b, "\n");
            for (int k = 0; k < indent * level && !st; k++) st = put_s(r, b, " ");
        }
        return st ? st : put_s(r, b, list ? "]" : "}");
    }
    default: return EERR(at, "tojson: object of type %s is not JSON serializable", kind_name(v));
    }
}

/* ---- strings as code points -------------------------------------------------------- */

static size_t cp_count(const jj_value *s) {
    size_t n = 0;
    for (size_t i = 0; i < s->u.s.n; i++) n += ((unsigned char)s->u.s.p[i] & 0xC0) != 0x80;
    return n;
}

/* Byte offset of code point k (k <= count). */
static size_t cp_offset(const jj_value *s, size_t k) {
    size_t i = 0;
    while (i < s->u.s.n && k) {
        i++;
        while (i < s->u.s.n && ((unsigned char)s->u.s.p[i] & 0xC0) == 0x80) i++;
        k--;
    }
    return i;
}

static bool in_chars(uint32_t cp, const jj_value *chars) {
    size_t i = 0;
    while (i < chars->u.s.n)
        if (tok_utf8_next(chars->u.s.p, chars->u.s.n, &i) == cp) return true;
    return false;
}

/* str.strip family: chars NULL (or None) strips Python whitespace. */
static vkl_status do_strip(R *r, const jj_value *s, const jj_value *chars, bool left, bool right, jj_value *out,
                           const jj_expr *at) {
    if (chars && chars->kind != JV_NONE && chars->kind != JV_STR) return EERR(at, "strip() characters must be a string");
    const char *p = s->u.s.p;
    size_t n = s->u.s.n, a = 0, e = n;
    bool ws = !chars || chars->kind == JV_NONE;
    if (left)
        while (a < e) {
            size_t i = a;
            uint32_t cp = tok_utf8_next(p, n, &i);
            if (ws ? !tok_is_py_space(cp) : !in_chars(cp, chars)) break;
            a = i;
        }
    if (right)
        while (e > a) {
            size_t k = e - 1;
            while (k > a && ((unsigned char)p[k] & 0xC0) == 0x80) k--;
            size_t i = k;
            uint32_t cp = tok_utf8_next(p, n, &i);
            if (ws ? !tok_is_py_space(cp) : !in_chars(cp, chars)) break;
            e = k;
        }
    return mk_str(r, p + a, e - a, out);
}

enum { CASE_UPPER, CASE_LOWER, CASE_TITLE, CASE_CAPITALIZE, CASE_JINJA_TITLE };

/* jinja's title filter starts a word after these (its _word_beginning_split_re) */
static bool jinja_word_sep(uint32_t cp) {
    return cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || tok_is_py_space(cp);
}

static vkl_status do_case(R *r, const jj_value *s, int mode, jj_value *out) {
    tok_buf b = {0};
    vkl_status st = tok_buf_reserve(r->ctx, &b, s->u.s.n);
    size_t i = 0;
    bool prev_cased = false, first = true;
    while (!st && i < s->u.s.n) {
        uint32_t cp = tok_utf8_next(s->u.s.p, s->u.s.n, &i), o = cp;
        bool up;
        if (mode == CASE_UPPER) up = true;
        else if (mode == CASE_LOWER) up = false;
        else if (mode == CASE_CAPITALIZE) up = first;
        else if (mode == CASE_JINJA_TITLE) {
            up = !prev_cased;
            prev_cased = !jinja_word_sep(cp);
        } else {
            up = !prev_cased;
            prev_cased = tok_is_letter(cp);
        }
        first = false;
        if (up && cp == 0xDF) { /* the one full mapping Python applies that utf8proc does not: ß -> SS */
            st = tok_buf_append(r->ctx, &b, mode == CASE_UPPER ? "SS" : "Ss", 2);
            continue;
        }
        o = up ? tok_toupper(cp) : tok_tolower(cp);
        st = tok_buf_put_cp(r->ctx, &b, o);
    }
    if (!st) st = mk_str(r, b.p ? b.p : "", b.n, out);
    tok_buf_free(r->ctx, &b);
    return st;
}

/* What a substring search over hn bytes for an nn-byte needle may cost
 * (naive search: up to hn x nn byte compares), in steps. */
static uint64_t search_cost(size_t hn, size_t nn) {
    return (uint64_t)hn * ((nn + 63) / 64) / 8 + 1;
}

static const char *find_sub(const char *h, size_t hn, const char *nd, size_t nn) {
    if (nn == 0) return h;
    for (size_t i = 0; i + nn <= hn; i++)
        if (h[i] == nd[0] && !memcmp(h + i, nd, nn)) return h + i;
    return NULL;
}

static vkl_status do_replace(R *r, const jj_value *s, const jj_value *old, const jj_value *new_, int64_t count,
                             jj_value *out, const jj_expr *at) {
    if (old->kind != JV_STR || new_->kind != JV_STR) return EERR(at, "replace() needs string arguments");
    tok_buf b = {0};
    vkl_status st = spend(r, search_cost(s->u.s.n, old->u.s.n), at);
    size_t i = 0;
    int64_t done = 0;
    if (!old->u.s.n) { /* Python inserts between every character */
        while (!st && (count < 0 || done < count) && i <= s->u.s.n) {
            st = put(r, &b, new_->u.s.p, new_->u.s.n);
            done++;
            if (i == s->u.s.n) {
                i++;
                break;
            }
            size_t k = i;
            tok_utf8_next(s->u.s.p, s->u.s.n, &k);
            if (!st) st = put(r, &b, s->u.s.p + i, k - i);
            i = k;
        }
        if (!st && i <= s->u.s.n) st = put(r, &b, s->u.s.p + i, s->u.s.n - i);
    } else {
        while (!st && i <= s->u.s.n) {
            const char *hit = (count < 0 || done < count) ? find_sub(s->u.s.p + i, s->u.s.n - i, old->u.s.p, old->u.s.n) : NULL;
            if (!hit) {
                st = put(r, &b, s->u.s.p + i, s->u.s.n - i);
                break;
            }
            size_t at_ = (size_t)(hit - s->u.s.p);
            st = put(r, &b, s->u.s.p + i, at_ - i);
            if (!st) st = put(r, &b, new_->u.s.p, new_->u.s.n);
            i = at_ + old->u.s.n;
            done++;
        }
    }
    if (!st) st = mk_str(r, b.p ? b.p : "", b.n, out);
    tok_buf_free(r->ctx, &b);
    return st;
}

/* str.split / rsplit. sep NULL or None: runs of whitespace, no empties. */
static vkl_status do_split(R *r, const jj_value *s, const jj_value *sep, int64_t maxsplit, bool from_right,
                           jj_value *out, const jj_expr *at) {
    tok_spans sp = {0};
    vkl_status st = VKL_OK;
    const char *p = s->u.s.p;
    size_t n = s->u.s.n;
    if (sep && sep->kind != JV_NONE) {
        if (sep->kind != JV_STR || !sep->u.s.n) return EERR(at, "split() separator must be a non-empty string");
        size_t sl = sep->u.s.n;
        if ((st = spend(r, search_cost(n, sl), at))) return st;
        if (!from_right) {
            size_t i = 0;
            int64_t done = 0;
            for (;;) {
                const char *hit = (maxsplit < 0 || done < maxsplit) ? find_sub(p + i, n - i, sep->u.s.p, sl) : NULL;
                size_t e = hit ? (size_t)(hit - p) : n;
                if ((st = tok_spans_push(r->ctx, &sp, i, e))) break;
                if (!hit) break;
                i = e + sl;
                done++;
            }
        } else {
            size_t e = n;
            int64_t done = 0;
            for (;;) {
                size_t k = e;
                const char *hit = NULL;
                if (maxsplit < 0 || done < maxsplit)
                    while (k >= sl) {
                        if (!memcmp(p + k - sl, sep->u.s.p, sl)) {
                            hit = p + k - sl;
                            break;
                        }
                        k--;
                    }
                size_t b = hit ? (size_t)(hit - p) + sl : 0;
                if ((st = tok_spans_push(r->ctx, &sp, b, e))) break;
                if (!hit) break;
                e = (size_t)(hit - p);
                done++;
            }
            for (size_t k = 0; k < sp.n / 2; k++) {
                tok_span t = sp.v[k];
                sp.v[k] = sp.v[sp.n - 1 - k];
                sp.v[sp.n - 1 - k] = t;
            }
        }
    } else {
        size_t i = 0;
        int64_t done = 0;
        while (!st && i < n) {
            size_t k = i;
            if (tok_is_py_space(tok_utf8_next(p, n, &k))) {
                i = k;
                continue;
            }
            size_t b = i;
            if (maxsplit >= 0 && done >= maxsplit) {
                size_t e = n;
                while (e > b) { /* the rest, right-stripped */
                    size_t q = e - 1;
                    while (q > b && ((unsigned char)p[q] & 0xC0) == 0x80) q--;
                    size_t z = q;
                    if (!tok_is_py_space(tok_utf8_next(p, n, &z))) break;
                    e = q;
                }
                st = tok_spans_push(r->ctx, &sp, b, e);
                break;
            }
            while (i < n) {
                k = i;
                if (tok_is_py_space(tok_utf8_next(p, n, &k))) break;
                i = k;
            }
            st = tok_spans_push(r->ctx, &sp, b, i);
            done++;
        }
        (void)from_right;
    }
    if (!st) st = mk_list(r, sp.n, out);
    for (size_t k = 0; !st && k < sp.n; k++) st = mk_str(r, p + sp.v[k].start, sp.v[k].end - sp.v[k].start, &out->u.list->v[k]);
    tok_spans_free(r->ctx, &sp);
    return st;
}

/* ---- iteration, attributes, items ---------------------------------------------------- */

static vkl_status iter_list(R *r, const jj_value *v, jj_value *out, const jj_expr *at) {
    switch (v->kind) {
    case JV_UNDEF: return mk_list(r, 0, out);
    case JV_LIST: *out = *v; return VKL_OK;
    case JV_DICT:
        if (v->is_ns) break;
        {
            vkl_status st = mk_list(r, v->u.dict->n, out);
            for (size_t i = 0; !st && i < v->u.dict->n; i++) out->u.list->v[i] = v->u.dict->keys[i];
            return st;
        }
    case JV_STR: {
        size_t n = cp_count(v), i = 0;
        vkl_status st = spend(r, n, at);
        if (!st) st = mk_list(r, n, out);
        for (size_t k = 0; !st && k < n; k++) {
            size_t b = i;
            tok_utf8_next(v->u.s.p, v->u.s.n, &i);
            st = mk_str(r, v->u.s.p + b, i - b, &out->u.list->v[k]);
        }
        return st;
    }
    default: break;
    }
    return EERR(at, "'%s' object is not iterable", kind_name(v));
}

typedef struct method_def {
    const char *name;
    uint8_t kind;
    uint16_t fn;
} method_def;

static const method_def METHODS[] = {
    {"strip", JV_STR, M_STRIP},       {"lstrip", JV_STR, M_LSTRIP},         {"rstrip", JV_STR, M_RSTRIP},
    {"split", JV_STR, M_SPLIT},       {"rsplit", JV_STR, M_RSPLIT},         {"startswith", JV_STR, M_STARTSWITH},
    {"endswith", JV_STR, M_ENDSWITH}, {"upper", JV_STR, M_UPPER},           {"lower", JV_STR, M_LOWER},
    {"title", JV_STR, M_TITLE},       {"capitalize", JV_STR, M_CAPITALIZE}, {"replace", JV_STR, M_REPLACE},
    {"join", JV_STR, M_JOIN},         {"find", JV_STR, M_FIND},             {"count", JV_STR, M_COUNT},
    {"splitlines", JV_STR, M_SPLITLINES}, {"isdigit", JV_STR, M_ISDIGIT},   {"isalpha", JV_STR, M_ISALPHA},
    {"isspace", JV_STR, M_ISSPACE},   {"isupper", JV_STR, M_ISUPPER},       {"islower", JV_STR, M_ISLOWER},
    {"isalnum", JV_STR, M_ISALNUM},   {"items", JV_DICT, M_ITEMS},          {"keys", JV_DICT, M_KEYS},
    {"values", JV_DICT, M_VALUES},    {"get", JV_DICT, M_GET},              {"index", JV_LIST, M_INDEX},
    {"count", JV_LIST, M_COUNT},
};

static vkl_status bind_method(R *r, const jj_value *obj, uint16_t fn, jj_value *out) {
    jj_value *self = jj_alloc(r->a, sizeof(jj_value));
    if (!self) return VKL_ERR_OUT_OF_MEMORY;
    *self = *obj;
    *out = (jj_value){.kind = JV_FUNC, .fn = fn, .u.self = self};
    return VKL_OK;
}

static vkl_status get_attr(R *r, const jj_value *obj, const char *name, size_t len, jj_value *out, const jj_expr *at) {
    if (obj->kind == JV_UNDEF) return EERR(at, "'%.*s' of an undefined value", (int)len, name);
    if (obj->kind == JV_LOOP) {
        const jj_loop *l = obj->u.loop;
        size_t n = l->items->n, i = l->index0;
#define IS(s) (len == strlen(s) && !memcmp(name, s, len))
        if (IS("index")) *out = mk_int((int64_t)i + 1);
        else if (IS("index0")) *out = mk_int((int64_t)i);
        else if (IS("revindex")) *out = mk_int((int64_t)(n - i));
        else if (IS("revindex0")) *out = mk_int((int64_t)(n - i - 1));
        else if (IS("first")) *out = mk_bool(i == 0);
        else if (IS("last")) *out = mk_bool(i + 1 == n);
        else if (IS("length")) *out = mk_int((int64_t)n);
        else if (IS("depth")) *out = mk_int(1);
        else if (IS("depth0")) *out = mk_int(0);
        else if (IS("previtem")) *out = i ? l->items->v[i - 1] : UNDEF;
        else if (IS("nextitem")) *out = i + 1 < n ? l->items->v[i + 1] : UNDEF;
        else if (IS("cycle")) return bind_method(r, obj, FN_CYCLE, out);
        else *out = UNDEF;
#undef IS
        return VKL_OK;
    }
    if (obj->kind == JV_DICT && !obj->is_ns) {
        /* a dict's own methods first, as Python getattr would find them */
        for (size_t k = 0; k < VKL_ARRAY_LEN(METHODS); k++)
            if (METHODS[k].kind == JV_DICT && strlen(METHODS[k].name) == len && !memcmp(METHODS[k].name, name, len))
                return bind_method(r, obj, METHODS[k].fn, out);
    }
    if (obj->kind == JV_DICT) {
        int at_ = dict_find_str(obj->u.dict, name, len);
        *out = at_ >= 0 ? obj->u.dict->vals[at_] : UNDEF;
        return VKL_OK;
    }
    for (size_t k = 0; k < VKL_ARRAY_LEN(METHODS); k++)
        if (METHODS[k].kind == obj->kind && strlen(METHODS[k].name) == len && !memcmp(METHODS[k].name, name, len))
            return bind_method(r, obj, METHODS[k].fn, out);
    *out = UNDEF;
    return VKL_OK;
}

static vkl_status get_item(R *r, const jj_value *obj, const jj_value *key, jj_value *out, const jj_expr *at) {
    if (obj->kind == JV_UNDEF) return EERR(at, "subscript of an undefined value");
    if (obj->kind == JV_DICT) {
        int k = dict_find(obj->u.dict, key);
        *out = k >= 0 ? obj->u.dict->vals[k] : UNDEF;
        return VKL_OK;
    }
    if ((obj->kind == JV_LIST || obj->kind == JV_STR) && (key->kind == JV_INT || key->kind == JV_BOOL)) {
        int64_t n = obj->kind == JV_LIST ? (int64_t)obj->u.list->n : (int64_t)cp_count(obj), i = num_i(key);
        if (i < 0) i += n;
        if (i < 0 || i >= n) {
            *out = UNDEF;
            return VKL_OK;
        }
        if (obj->kind == JV_LIST) {
            *out = obj->u.list->v[i];
            return VKL_OK;
        }
        size_t b = cp_offset(obj, (size_t)i), e = cp_offset(obj, (size_t)i + 1);
        return mk_str(r, obj->u.s.p + b, e - b, out);
    }
    if (key->kind == JV_STR) return get_attr(r, obj, key->u.s.p, key->u.s.n, out, at);
    *out = UNDEF;
    return VKL_OK;
}

/* Python slice index normalization. */
static vkl_status do_slice(R *r, const jj_value *obj, const jj_value *a, const jj_value *b, const jj_value *c,
                           jj_value *out, const jj_expr *at) {
    if (obj->kind != JV_LIST && obj->kind != JV_STR) return EERR(at, "cannot slice a %s", kind_name(obj));
    int64_t n = obj->kind == JV_LIST ? (int64_t)obj->u.list->n : (int64_t)cp_count(obj);
    int64_t step = c->kind == JV_NONE || c->kind == JV_UNDEF ? 1 : num_i(c);
    if ((c->kind != JV_NONE && c->kind != JV_UNDEF && c->kind != JV_INT) || step == 0)
        return EERR(at, "slice step must be a non-zero integer");
    int64_t lo, hi;
    bool has_a = a->kind != JV_NONE && a->kind != JV_UNDEF, has_b = b->kind != JV_NONE && b->kind != JV_UNDEF;
    if ((has_a && a->kind != JV_INT) || (has_b && b->kind != JV_INT)) return EERR(at, "slice indices must be integers");
    if (step > 0) {
        lo = has_a ? a->u.i : 0;
        hi = has_b ? b->u.i : n;
        if (lo < 0) lo = lo + n < 0 ? 0 : lo + n;
        if (hi < 0) hi = hi + n < 0 ? 0 : hi + n;
        if (lo > n) lo = n;
        if (hi > n) hi = n;
    } else {
        lo = has_a ? a->u.i : n - 1;
        hi = has_b ? b->u.i : -1;
        if (has_a && lo < 0) lo = lo + n < 0 ? -1 : lo + n;
        if (has_b && hi < 0) hi = hi + n < 0 ? -1 : hi + n;
        if (lo >= n) lo = n - 1;
        if (hi >= n) hi = n - 1;
    }
    /* lo and hi are now within [-1, n]; step may be huge, so count first
     * in unsigned arithmetic and index by k (no overflow on i += step) */
    uint64_t span = step > 0 ? (hi > lo ? (uint64_t)(hi - lo) : 0) : (lo > hi ? (uint64_t)(lo - hi) : 0);
    uint64_t ustep = step > 0 ? (uint64_t)step : (uint64_t)(-(step + 1)) + 1;
    size_t count = (size_t)(span / ustep + (span % ustep != 0));
    if (obj->kind == JV_LIST) {
        vkl_status st = mk_list(r, count, out);
        for (size_t k = 0; !st && k < count; k++) out->u.list->v[k] = obj->u.list->v[lo + (int64_t)k * step];
        return st;
    }
    tok_buf buf = {0};
    vkl_status st = VKL_OK;
    for (size_t k = 0; !st && k < count; k++) {
        int64_t i = lo + (int64_t)k * step;
        size_t bb = cp_offset(obj, (size_t)i), e = cp_offset(obj, (size_t)i + 1);
        st = put(r, &buf, obj->u.s.p + bb, e - bb);
    }
    if (!st) st = mk_str(r, buf.p ? buf.p : "", buf.n, out);
    tok_buf_free(r->ctx, &buf);
    return st;
}

/* ---- evaluation ----------------------------------------------------------------- */

static vkl_status eval(R *r, const jj_expr *e, jj_value *out);
static vkl_status exec_body(R *r, const jj_body *b);

/* Evaluated call arguments. */
typedef struct jj_args {
    jj_value *pos;
    size_t n;
    jj_value *kw;
    const char **kw_names;
    size_t *kw_lens;
    size_t n_kw;
} jj_args;

static vkl_status eval_args(R *r, const jj_expr *e, jj_args *a) {
    memset(a, 0, sizeof(*a));
    if (e->n_args && !(a->pos = jj_alloc(r->a, e->n_args * sizeof(jj_value)))) return VKL_ERR_OUT_OF_MEMORY;
    if (e->n_kw && !(a->kw = jj_alloc(r->a, e->n_kw * sizeof(jj_value)))) return VKL_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < e->n_args; i++) {
        vkl_status st = eval(r, e->args[i], &a->pos[i]);
        if (st) return st;
    }
    for (size_t i = 0; i < e->n_kw; i++) {
        vkl_status st = eval(r, e->kw_vals[i], &a->kw[i]);
        if (st) return st;
    }
    a->n = e->n_args;
    a->kw_names = e->kw_names;
    a->kw_lens = e->kw_lens;
    a->n_kw = e->n_kw;
    return VKL_OK;
}

/* Argument `idx` by position or keyword `name`; NULL if not given. */
static const jj_value *arg(const jj_args *a, size_t idx, const char *name) {
    if (idx < a->n) return &a->pos[idx];
    size_t nl = name ? strlen(name) : 0;
    for (size_t i = 0; name && i < a->n_kw; i++)
        if (a->kw_lens[i] == nl && !memcmp(a->kw_names[i], name, nl)) return &a->kw[i];
    return NULL;
}

static vkl_status need_str(R *r, const jj_value *v, const char *what, const jj_expr *at) {
    if (!v || v->kind != JV_STR) return EERR(at, "%s needs a string, got %s", what, v ? kind_name(v) : "nothing");
    return VKL_OK;
}

static vkl_status call_macro(R *r, const jj_stmt *m, const jj_args *a, jj_value *out, const jj_expr *at) {
    if (a->n > m->n_names) return EERR(at, "macro '%.*s' takes %zu arguments", (int)m->macro_name_len, m->macro_name, m->n_names);
    if (++r->depth > JJ_DEPTH_LIMIT) return EERR(at, "macro calls nested deeper than %d", JJ_DEPTH_LIMIT);
    jj_frame f = {NULL, 0, 0, r->root}, *saved_top = r->top;
    tok_buf *saved_out = r->out, body = {0};
    vkl_status st = VKL_OK;
    r->top = &f;
    for (size_t i = 0; i < m->n_names && !st; i++) {
        const jj_value *v = arg(a, i, NULL);
        jj_value dv = UNDEF;
        for (size_t k = 0; !v && k < a->n_kw; k++)
            if (a->kw_lens[k] == m->name_lens[i] && !memcmp(a->kw_names[k], m->names[i], m->name_lens[i])) v = &a->kw[k];
        if (!v && m->defaults[i]) {
            st = eval(r, m->defaults[i], &dv);
            v = &dv;
        }
        if (!st) st = frame_set(r, &f, m->names[i], m->name_lens[i], v ? v : &UNDEF);
    }
    if (!st) {
        r->out = &body;
        st = exec_body(r, &m->body);
        r->flow = 0;
    }
    r->out = saved_out;
    r->top = saved_top;
    r->depth--;
    if (!st) st = mk_str(r, body.p ? body.p : "", body.n, out);
    tok_buf_free(r->ctx, &body);
    frame_free(r, &f);
    return st;
}

static vkl_status call_builtin(R *r, const jj_value *fnv, const jj_args *a, jj_value *out, const jj_expr *at) {
    const jj_value *self = fnv->u.self;
    vkl_status st = VKL_OK;
    const jj_value *x = arg(a, 0, NULL), *y = arg(a, 1, NULL);
    switch (fnv->fn) {
    case FN_RANGE: {
        int64_t lo = 0, hi, step = 1;
        for (size_t i = 0; i < a->n; i++)
            if (a->pos[i].kind != JV_INT && a->pos[i].kind != JV_BOOL) return EERR(at, "range() needs integers");
        if (a->n == 1) hi = num_i(x);
        else if (a->n == 2 || a->n == 3) {
            lo = num_i(x);
            hi = num_i(y);
            if (a->n == 3) step = num_i(&a->pos[2]);
        } else return EERR(at, "range() takes 1 to 3 arguments");
        if (!step) return EERR(at, "range() step must not be zero");
        /* in unsigned arithmetic: hi - lo may not fit in int64 */
        uint64_t span = step > 0 ? (hi > lo ? (uint64_t)hi - (uint64_t)lo : 0) : (lo > hi ? (uint64_t)lo - (uint64_t)hi : 0);
        uint64_t ustep = step > 0 ? (uint64_t)step : (uint64_t)(-(step + 1)) + 1;
        uint64_t ucount = span / ustep + (span % ustep != 0);
        if (ucount > JJ_RANGE_LIMIT) return EERR(at, "range() of more than %d items", JJ_RANGE_LIMIT);
        int64_t count = (int64_t)ucount;
        if ((st = mk_list(r, (size_t)count, out))) return st;
        for (int64_t i = 0; i < count; i++) out->u.list->v[i] = mk_int(lo + i * step);
        return VKL_OK;
    }
    case FN_NAMESPACE:
    case FN_DICT: {
        if ((st = mk_dict(r, out))) return st;
        out->is_ns = fnv->fn == FN_NAMESPACE;
        for (size_t i = 0; i < a->n && !st; i++) {
            if (a->pos[i].kind != JV_DICT) return EERR(at, "namespace()/dict() take keyword arguments or a dict");
            for (size_t k = 0; k < a->pos[i].u.dict->n && !st; k++)
                st = dict_set(r, out->u.dict, &a->pos[i].u.dict->keys[k], &a->pos[i].u.dict->vals[k]);
        }
        for (size_t i = 0; i < a->n_kw && !st; i++) {
            jj_value k;
            if (!(st = mk_str(r, a->kw_names[i], a->kw_lens[i], &k))) st = dict_set(r, out->u.dict, &k, &a->kw[i]);
        }
        return st;
    }
    case FN_RAISE: {
        tok_buf m = {0};
        if (x) st = str_of(r, x, &m);
        if (!st)
            st = rerr(r, at->line, at->col, VKL_ERR_INVALID_ARGUMENT, "template raised an exception: %.*s",
                      (int)(m.n > 400 ? 400 : m.n), m.p ? m.p : "");
        tok_buf_free(r->ctx, &m);
        return st;
    }
    case FN_STRFTIME: {
        if ((st = need_str(r, x, "strftime_now()", at))) return st;
        char fmt[256], buf[512];
        snprintf(fmt, sizeof(fmt), "%.*s", (int)x->u.s.n, x->u.s.p);
        time_t now = time(NULL);
        struct tm tmv;
        size_t n = localtime_r(&now, &tmv) ? strftime(buf, sizeof(buf), fmt, &tmv) : 0;
        return mk_str(r, buf, n, out);
    }
    case FN_CYCLE: {
        if (!a->n) return EERR(at, "loop.cycle() needs arguments");
        *out = a->pos[self->u.loop->index0 % a->n];
        return VKL_OK;
    }
    default: break;
    }
    /* methods: self is the bound object */
    if (self->kind == JV_STR) {
        switch (fnv->fn) {
        case M_STRIP: return do_strip(r, self, x, true, true, out, at);
        case M_LSTRIP: return do_strip(r, self, x, true, false, out, at);
        case M_RSTRIP: return do_strip(r, self, x, false, true, out, at);
        case M_SPLIT:
        case M_RSPLIT: {
            const jj_value *sep = arg(a, 0, "sep"), *ms = arg(a, 1, "maxsplit");
            return do_split(r, self, sep, ms ? num_i(ms) : -1, fnv->fn == M_RSPLIT, out, at);
        }
        case M_STARTSWITH:
        case M_ENDSWITH: {
            if (!x) return EERR(at, "startswith()/endswith() need an argument");
            const jj_value *cands = x->kind == JV_LIST ? x->u.list->v : x;
            size_t nc = x->kind == JV_LIST ? x->u.list->n : 1;
            bool hit = false;
            for (size_t i = 0; i < nc && !hit; i++) {
                if ((st = need_str(r, &cands[i], "startswith()/endswith()", at))) return st;
                size_t pl = cands[i].u.s.n;
                if (pl > self->u.s.n) continue;
                const char *at_ = fnv->fn == M_STARTSWITH ? self->u.s.p : self->u.s.p + self->u.s.n - pl;
                hit = !memcmp(at_, cands[i].u.s.p, pl);
            }
            *out = mk_bool(hit);
            return VKL_OK;
        }
        case M_UPPER: return do_case(r, self, CASE_UPPER, out);
        case M_LOWER: return do_case(r, self, CASE_LOWER, out);
        case M_TITLE: return do_case(r, self, CASE_TITLE, out);
        case M_CAPITALIZE: return do_case(r, self, CASE_CAPITALIZE, out);
        case M_REPLACE: {
            if (!x || !y) return EERR(at, "replace() needs two arguments");
            const jj_value *c = arg(a, 2, "count");
            return do_replace(r, self, x, y, c ? num_i(c) : -1, out, at);
        }
        case M_JOIN: {
            if (!x) return EERR(at, "join() needs an argument");
            jj_value items;
            if ((st = iter_list(r, x, &items, at))) return st;
            tok_buf b = {0};
            for (size_t i = 0; i < items.u.list->n && !st; i++) {
                if (i) st = put(r, &b, self->u.s.p, self->u.s.n);
                if (!st) st = need_str(r, &items.u.list->v[i], "str.join()", at);
                if (!st) st = put(r, &b, items.u.list->v[i].u.s.p, items.u.list->v[i].u.s.n);
            }
            if (!st) st = mk_str(r, b.p ? b.p : "", b.n, out);
            tok_buf_free(r->ctx, &b);
            return st;
        }
        case M_FIND:
        case M_COUNT: {
            if ((st = need_str(r, x, "find()/count()", at))) return st;
            if ((st = spend(r, search_cost(self->u.s.n, x->u.s.n), at))) return st;
            if (fnv->fn == M_FIND) {
                const char *hit = find_sub(self->u.s.p, self->u.s.n, x->u.s.p, x->u.s.n);
                if (!hit) *out = mk_int(-1);
                else {
                    jj_value pre = {.kind = JV_STR, .u.s = {self->u.s.p, (size_t)(hit - self->u.s.p)}};
                    *out = mk_int((int64_t)cp_count(&pre));
                }
                return VKL_OK;
            }
            int64_t c = 0;
            if (!x->u.s.n) c = (int64_t)cp_count(self) + 1;
            else
                for (size_t i = 0; i + x->u.s.n <= self->u.s.n;) {
                    const char *hit = find_sub(self->u.s.p + i, self->u.s.n - i, x->u.s.p, x->u.s.n);
                    if (!hit) break;
                    c++;
                    i = (size_t)(hit - self->u.s.p) + x->u.s.n;
                }
            *out = mk_int(c);
            return VKL_OK;
        }
        case M_SPLITLINES: {
            tok_spans sp = {0};
            size_t i = 0, b = 0, n = self->u.s.n;
            const char *p = self->u.s.p;
            while (!st && i < n) {
                if (p[i] == '\n' || p[i] == '\r') {
                    st = tok_spans_push(r->ctx, &sp, b, i);
                    i += p[i] == '\r' && i + 1 < n && p[i + 1] == '\n' ? 2 : 1;
                    b = i;
                } else i++;
            }
            if (!st && b < n) st = tok_spans_push(r->ctx, &sp, b, n);
            if (!st) st = mk_list(r, sp.n, out);
            for (size_t k = 0; !st && k < sp.n; k++)
                st = mk_str(r, p + sp.v[k].start, sp.v[k].end - sp.v[k].start, &out->u.list->v[k]);
            tok_spans_free(r->ctx, &sp);
            return st;
        }
        default: {
            /* the is*() predicates */
            bool all = self->u.s.n > 0, any_cased = false;
            size_t i = 0;
            while (i < self->u.s.n && all) {
                uint32_t cp = tok_utf8_next(self->u.s.p, self->u.s.n, &i);
                bool up = tok_tolower(cp) != cp, lo = tok_toupper(cp) != cp;
                any_cased |= up || lo;
                switch (fnv->fn) {
                case M_ISDIGIT: all = tok_is_number(cp); break;
                case M_ISALPHA: all = tok_is_letter(cp); break;
                case M_ISSPACE: all = tok_is_py_space(cp); break;
                case M_ISALNUM: all = tok_is_alnum(cp); break;
                case M_ISUPPER: all = !lo; break;
                case M_ISLOWER: all = !up; break;
                default: return EERR(at, "unsupported string method");
                }
            }
            if (fnv->fn == M_ISUPPER || fnv->fn == M_ISLOWER) all = all && any_cased;
            *out = mk_bool(all);
            return VKL_OK;
        }
        }
    }
    if (self->kind == JV_DICT) {
        const jj_dict *d = self->u.dict;
        switch (fnv->fn) {
        case M_ITEMS:
            if ((st = mk_list(r, d->n, out))) return st;
            for (size_t i = 0; i < d->n && !st; i++) {
                jj_value *t = &out->u.list->v[i];
                if (!(st = mk_list(r, 2, t))) {
                    t->is_tuple = true;
                    t->u.list->v[0] = d->keys[i];
                    t->u.list->v[1] = d->vals[i];
                }
            }
            return st;
        case M_KEYS:
        case M_VALUES:
            if ((st = mk_list(r, d->n, out))) return st;
            for (size_t i = 0; i < d->n; i++) out->u.list->v[i] = fnv->fn == M_KEYS ? d->keys[i] : d->vals[i];
            return VKL_OK;
        case M_GET: {
            if (!x) return EERR(at, "get() needs a key");
            int k = dict_find(d, x);
            *out = k >= 0 ? d->vals[k] : y ? *y : NONE;
            return VKL_OK;
        }
        default: break;
        }
    }
    if (self->kind == JV_LIST && x) {
        if ((st = spend(r, self->u.list->n, at))) return st;
        int64_t c = 0, first = -1;
        for (size_t i = 0; i < self->u.list->n; i++)
            if (val_eq(&self->u.list->v[i], x)) {
                if (first < 0) first = (int64_t)i;
                c++;
            }
        if (fnv->fn == M_INDEX && first < 0) return EERR(at, "list.index(): value not in list");
        *out = mk_int(fnv->fn == M_INDEX ? first : c);
        return VKL_OK;
    }
    return EERR(at, "unsupported call");
}

static vkl_status call_value(R *r, const jj_value *fn, const jj_args *a, jj_value *out, const jj_expr *at) {
    if (fn->kind == JV_MACRO) return call_macro(r, fn->u.macro, a, out, at);
    if (fn->kind == JV_FUNC) return call_builtin(r, fn, a, out, at);
    if (fn->kind == JV_UNDEF) return EERR(at, "call of an undefined name or method");
    return EERR(at, "'%s' object is not callable", kind_name(fn));
}

/* ---- filters and tests ------------------------------------------------------------- */

static const char *const FILTERS[] = {
    "length", "count", "trim", "upper", "lower", "title", "capitalize", "first", "last", "join", "default", "d",
    "tojson", "string", "int", "float", "list", "abs", "replace", "items", "selectattr", "rejectattr", "map",
    "reverse", "sort", "unique", "safe", "escape", "e", "indent", "round", "sum", "min", "max", "wordcount", "dictsort",
};
static const char *const TESTS[] = {
    "defined", "undefined", "none", "boolean", "false", "true", "integer", "float", "number", "string", "mapping",
    "iterable", "sequence", "callable", "sameas", "eq", "equalto", "==", "ne", "!=", "lt", "lessthan", "<", "le",
    "<=", "gt", "greaterthan", ">", "ge", ">=", "odd", "even", "divisibleby", "in", "lower", "upper",
};

static bool name_in(const char *const *list, size_t n, const char *name, size_t len) {
    for (size_t i = 0; i < n; i++)
        if (strlen(list[i]) == len && !memcmp(list[i], name, len)) return true;
    return false;
}

bool jj_known_filter(const char *name, size_t n) {
    return name_in(FILTERS, VKL_ARRAY_LEN(FILTERS), name, n);
}
bool jj_known_test(const char *name, size_t n) {
    return name_in(TESTS, VKL_ARRAY_LEN(TESTS), name, n);
}

static vkl_status compare_order(R *r, const jj_value *a, const jj_value *b, int *cmp, const jj_expr *at) {
    if (is_num(a) && is_num(b)) {
        double x = num_f(a), y = num_f(b);
        if (a->kind != JV_FLOAT && b->kind != JV_FLOAT) *cmp = num_i(a) < num_i(b) ? -1 : num_i(a) > num_i(b);
        else *cmp = x < y ? -1 : x > y;
        return VKL_OK;
    }
    if (a->kind == JV_STR && b->kind == JV_STR) {
        size_t n = a->u.s.n < b->u.s.n ? a->u.s.n : b->u.s.n;
        int c = memcmp(a->u.s.p, b->u.s.p, n);
        *cmp = c ? (c < 0 ? -1 : 1) : a->u.s.n < b->u.s.n ? -1 : a->u.s.n > b->u.s.n;
        return VKL_OK;
    }
    if (a->kind == JV_LIST && b->kind == JV_LIST) {
        size_t n = a->u.list->n < b->u.list->n ? a->u.list->n : b->u.list->n;
        for (size_t i = 0; i < n; i++) {
            if (val_eq(&a->u.list->v[i], &b->u.list->v[i])) continue;
            return compare_order(r, &a->u.list->v[i], &b->u.list->v[i], cmp, at);
        }
        *cmp = a->u.list->n < b->u.list->n ? -1 : a->u.list->n > b->u.list->n;
        return VKL_OK;
    }
    return EERR(at, "cannot order %s and %s", kind_name(a), kind_name(b));
}

static vkl_status contains(R *r, const jj_value *hay, const jj_value *needle, bool *out, const jj_expr *at) {
    if (hay->kind == JV_STR) {
        if (needle->kind != JV_STR) return EERR(at, "'in <string>' needs a string on the left");
        vkl_status st = spend(r, search_cost(hay->u.s.n, needle->u.s.n), at);
        if (st) return st;
        *out = find_sub(hay->u.s.p, hay->u.s.n, needle->u.s.p, needle->u.s.n) != NULL;
        return VKL_OK;
    }
    if (hay->kind == JV_DICT) {
        *out = dict_find(hay->u.dict, needle) >= 0;
        return VKL_OK;
    }
    if (hay->kind == JV_LIST) {
        vkl_status st = spend(r, hay->u.list->n, at);
        if (st) return st;
        *out = false;
        for (size_t i = 0; i < hay->u.list->n && !*out; i++) *out = val_eq(&hay->u.list->v[i], needle);
        return VKL_OK;
    }
    if (hay->kind == JV_UNDEF) {
        *out = false;
        return VKL_OK;
    }
    return EERR(at, "'in' on a %s", kind_name(hay));
}

static vkl_status apply_test(R *r, const char *name, size_t len, const jj_value *v, const jj_args *a, bool *out,
                             const jj_expr *at) {
#define IS(s) (len == strlen(s) && !memcmp(name, s, len))
    const jj_value *x = arg(a, 0, NULL);
    if (IS("defined")) *out = v->kind != JV_UNDEF;
    else if (IS("undefined")) *out = v->kind == JV_UNDEF;
    else if (IS("none")) *out = v->kind == JV_NONE;
    else if (IS("boolean")) *out = v->kind == JV_BOOL;
    else if (IS("false")) *out = v->kind == JV_BOOL && !v->u.b;
    else if (IS("true")) *out = v->kind == JV_BOOL && v->u.b;
    else if (IS("integer")) *out = v->kind == JV_INT;
    else if (IS("float")) *out = v->kind == JV_FLOAT;
    else if (IS("number")) *out = is_num(v);
    else if (IS("string")) *out = v->kind == JV_STR;
    else if (IS("mapping")) *out = v->kind == JV_DICT;
    else if (IS("iterable") || IS("sequence")) *out = v->kind == JV_LIST || v->kind == JV_STR || (v->kind == JV_DICT && !v->is_ns);
    else if (IS("callable")) *out = v->kind == JV_FUNC || v->kind == JV_MACRO;
    else if (IS("lower") || IS("upper")) {
        if (v->kind != JV_STR) *out = false;
        else {
            jj_value c;
            vkl_status st = do_case(r, v, IS("lower") ? CASE_LOWER : CASE_UPPER, &c);
            if (st) return st;
            *out = val_eq(&c, v);
        }
    } else if (IS("odd") || IS("even") || IS("divisibleby")) {
        if (v->kind != JV_INT && v->kind != JV_BOOL) return EERR(at, "test '%.*s' needs an integer", (int)len, name);
        int64_t i = num_i(v);
        if (IS("divisibleby")) {
            if (!x || (x->kind != JV_INT) || !x->u.i) return EERR(at, "divisibleby needs a non-zero integer");
            *out = x->u.i == -1 || i % x->u.i == 0;
        } else {
            *out = (i % 2 != 0) == IS("odd");
        }
    } else {
        if (!x) return EERR(at, "test '%.*s' needs an argument", (int)len, name);
        if (IS("in")) return contains(r, x, v, out, at);
        if (IS("sameas")) {
            *out = v->kind == x->kind && ((v->kind == JV_NONE || v->kind == JV_UNDEF) ||
                                          (v->kind == JV_BOOL && v->u.b == x->u.b) || val_eq(v, x));
            return VKL_OK;
        }
        if (IS("eq") || IS("equalto") || IS("==")) *out = val_eq(v, x);
        else if (IS("ne") || IS("!=")) *out = !val_eq(v, x);
        else {
            int c;
            vkl_status st = compare_order(r, v, x, &c, at);
            if (st) return st;
            if (IS("lt") || IS("lessthan") || IS("<")) *out = c < 0;
            else if (IS("le") || IS("<=")) *out = c <= 0;
            else if (IS("gt") || IS("greaterthan") || IS(">")) *out = c > 0;
            else *out = c >= 0;
        }
    }
#undef IS
    return VKL_OK;
}

/* Stable merge sort by key values (Python's sort is stable, also reversed:
 * equal keys keep their order). */
static vkl_status sort_values(R *r, jj_value *v, jj_value *keys, size_t n, bool reverse, const jj_expr *at) {
    if (n < 2) return VKL_OK;
    jj_value *tv = jj_alloc(r->a, n * sizeof(jj_value)), *tk = jj_alloc(r->a, n * sizeof(jj_value));
    if (!tv || !tk) return VKL_ERR_OUT_OF_MEMORY;
    vkl_status st = VKL_OK;
    for (size_t width = 1; width < n && !st; width *= 2) {
        if ((st = spend(r, n, at))) break;
        for (size_t lo = 0; lo < n && !st; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi) {
                int c;
                if ((st = compare_order(r, &keys[j], &keys[i], &c, at))) break;
                bool take_right = reverse ? c > 0 : c < 0;
                size_t from = take_right ? j++ : i++;
                tv[o] = v[from];
                tk[o++] = keys[from];
            }
            while (i < mid) tv[o] = v[i], tk[o++] = keys[i++];
            while (j < hi) tv[o] = v[j], tk[o++] = keys[j++];
        }
        if (!st) {
            memcpy(v, tv, n * sizeof(jj_value));
            memcpy(keys, tk, n * sizeof(jj_value));
        }
    }
    return st;
}

static vkl_status attr_path(R *r, const jj_value *obj, const jj_value *attr, jj_value *out, const jj_expr *at) {
    /* "a.b" walks attributes; digits index */
    if (attr->kind != JV_STR) return EERR(at, "attribute= needs a string");
    const char *p = attr->u.s.p, *end = p + attr->u.s.n;
    jj_value cur = *obj;
    while (p <= end) {
        const char *dot = memchr(p, '.', (size_t)(end - p));
        const char *e = dot ? dot : end;
        bool digits = e > p;
        for (const char *q = p; q < e; q++) digits = digits && *q >= '0' && *q <= '9';
        vkl_status st;
        if (digits) {
            jj_value key = mk_int(strtoll(p, NULL, 10));
            st = get_item(r, &cur, &key, &cur, at);
        } else {
            st = get_attr(r, &cur, p, (size_t)(e - p), &cur, at);
        }
        if (st) return st;
        if (!dot) break;
        p = dot + 1;
    }
    *out = cur;
    return VKL_OK;
}

static vkl_status apply_filter(R *r, const jj_expr *e, const char *name, size_t len, const jj_value *v,
                               const jj_args *a, jj_value *out);

static vkl_status apply_filter(R *r, const jj_expr *e, const char *name, size_t len, const jj_value *v,
                               const jj_args *a, jj_value *out) {
#define IS(s) (len == strlen(s) && !memcmp(name, s, len))
    const jj_expr *at = e;
    const jj_value *x = arg(a, 0, NULL);
    vkl_status st = VKL_OK;
    if (IS("safe")) {
        *out = *v;
        return VKL_OK;
    }
    if (IS("default") || IS("d")) {
        const jj_value *dv = arg(a, 0, "default_value"), *boolean = arg(a, 1, "boolean");
        bool use = v->kind == JV_UNDEF || (boolean && truthy(boolean) && !truthy(v));
        *out = use ? (dv ? *dv : (jj_value){.kind = JV_STR, .u.s = {"", 0}}) : *v;
        return VKL_OK;
    }
    if (IS("length") || IS("count")) {
        if (v->kind == JV_STR) *out = mk_int((int64_t)cp_count(v));
        else if (v->kind == JV_LIST) *out = mk_int((int64_t)v->u.list->n);
        else if (v->kind == JV_DICT) *out = mk_int((int64_t)v->u.dict->n);
        else if (v->kind == JV_UNDEF) *out = mk_int(0);
        else return EERR(at, "object of type %s has no length", kind_name(v));
        return VKL_OK;
    }
    if (IS("tojson")) {
        const jj_value *ind = arg(a, 0, "indent");
        int indent = -1;
        if (ind && ind->kind != JV_NONE) {
            if (ind->kind != JV_INT || ind->u.i < 0 || ind->u.i > 64) return EERR(at, "tojson indent must be 0..64");
            indent = (int)ind->u.i;
        }
        tok_buf b = {0};
        st = json_of(r, v, indent, 0, &b, at);
        if (!st) st = mk_str(r, b.p ? b.p : "", b.n, out);
        tok_buf_free(r->ctx, &b);
        return st;
    }
    if (IS("string")) return to_string(r, v, out);
    if (IS("list") || IS("reverse") || IS("sort") || IS("unique") || IS("first") || IS("last") || IS("join") ||
        IS("selectattr") || IS("rejectattr") || IS("map") || IS("sum") || IS("min") || IS("max")) {
        if (v->kind == JV_STR && (IS("first") || IS("last") || IS("reverse"))) {
            jj_value chars;
            if ((st = iter_list(r, v, &chars, at))) return st;
            size_t n = chars.u.list->n;
            if (IS("first") || IS("last")) {
                *out = n ? chars.u.list->v[IS("first") ? 0 : n - 1] : UNDEF;
                return VKL_OK;
            }
            tok_buf b = {0};
            for (size_t i = n; i-- > 0 && !st;) st = put(r, &b, chars.u.list->v[i].u.s.p, chars.u.list->v[i].u.s.n);
            if (!st) st = mk_str(r, b.p ? b.p : "", b.n, out);
            tok_buf_free(r->ctx, &b);
            return st;
        }
        jj_value items;
        if ((st = iter_list(r, v, &items, at))) return st;
        size_t n = items.u.list->n;
        const jj_value *src = items.u.list->v;
        if ((st = spend(r, n, at))) return st;
        if (IS("first") || IS("last")) {
            *out = n ? src[IS("first") ? 0 : n - 1] : UNDEF;
            return VKL_OK;
        }
        if (IS("join")) {
            const jj_value *sep = arg(a, 0, "d"), *attr = arg(a, 1, "attribute");
            tok_buf b = {0};
            for (size_t i = 0; i < n && !st; i++) {
                if (i && sep) st = str_of(r, sep, &b);
                jj_value item = src[i];
                if (!st && attr) st = attr_path(r, &src[i], attr, &item, at);
                if (!st) st = str_of(r, &item, &b);
            }
            if (!st) st = mk_str(r, b.p ? b.p : "", b.n, out);
            tok_buf_free(r->ctx, &b);
            return st;
        }
        if (IS("sum") || IS("min") || IS("max")) {
            const jj_value *attr = arg(a, IS("sum") ? 0 : 1, "attribute");
            jj_value acc = IS("sum") ? (arg(a, 1, "start") ? *arg(a, 1, "start") : mk_int(0)) : UNDEF;
            for (size_t i = 0; i < n; i++) {
                jj_value item = src[i];
                if (attr && (st = attr_path(r, &src[i], attr, &item, at))) return st;
                if (IS("sum")) {
                    if (!is_num(&item) || !is_num(&acc)) return EERR(at, "sum of non-numbers");
                    int64_t si;
                    if (acc.kind == JV_FLOAT || item.kind == JV_FLOAT) acc = mk_float(num_f(&acc) + num_f(&item));
                    else if (__builtin_add_overflow(num_i(&acc), num_i(&item), &si)) return EERR(at, "integer overflow in sum");
                    else acc = mk_int(si);
                    continue;
                }
                int c = 0;
                if (acc.kind != JV_UNDEF && (st = compare_order(r, &item, &acc, &c, at))) return st;
                if (acc.kind == JV_UNDEF || (IS("min") ? c < 0 : c > 0)) acc = item;
            }
            *out = acc;
            return VKL_OK;
        }
        jj_value res;
        if ((st = mk_list(r, n, &res))) return st;
        size_t k = 0;
        if (IS("list")) {
            for (size_t i = 0; i < n; i++) res.u.list->v[k++] = src[i];
        } else if (IS("reverse")) {
            for (size_t i = n; i-- > 0;) res.u.list->v[k++] = src[i];
        } else if (IS("unique")) {
            for (size_t i = 0; i < n; i++) {
                if ((st = spend(r, k + 1, at))) return st;
                bool seen = false;
                for (size_t j = 0; j < k && !seen; j++) seen = val_eq(&res.u.list->v[j], &src[i]);
                if (!seen) res.u.list->v[k++] = src[i];
            }
        } else if (IS("sort")) {
            const jj_value *rev = arg(a, 0, "reverse"), *attr = arg(a, 2, "attribute");
            jj_value *keys = jj_alloc(r->a, (n ? n : 1) * sizeof(jj_value));
            if (!keys) return VKL_ERR_OUT_OF_MEMORY;
            for (size_t i = 0; i < n; i++) {
                res.u.list->v[i] = src[i];
                keys[i] = src[i];
                if (attr && (st = attr_path(r, &src[i], attr, &keys[i], at))) return st;
            }
            k = n;
            if ((st = sort_values(r, res.u.list->v, keys, n, rev && truthy(rev), at))) return st;
        } else if (IS("map")) {
            const jj_value *attr = arg(a, SIZE_MAX, "attribute");
            if (!attr && (!x || x->kind != JV_STR)) return EERR(at, "map() needs attribute= or a filter name");
            for (size_t i = 0; i < n; i++) {
                jj_value item = src[i];
                if (attr) st = attr_path(r, &src[i], attr, &item, at);
                else {
                    if (!jj_known_filter(x->u.s.p, x->u.s.n)) return EERR(at, "map(): unknown filter");
                    jj_args sub = {a->pos + 1, a->n - 1, a->kw, a->kw_names, a->kw_lens, a->n_kw};
                    st = apply_filter(r, e, x->u.s.p, x->u.s.n, &src[i], &sub, &item);
                }
                if (st) return st;
                res.u.list->v[k++] = item;
            }
        } else { /* selectattr / rejectattr */
            bool select = IS("selectattr");
            if (!x || x->kind != JV_STR) return EERR(at, "selectattr/rejectattr need an attribute name");
            const jj_value *test = arg(a, 1, NULL);
            if (test && (test->kind != JV_STR || !jj_known_test(test->u.s.p, test->u.s.n)))
                return EERR(at, "selectattr/rejectattr: unknown test");
            for (size_t i = 0; i < n; i++) {
                jj_value item;
                if ((st = attr_path(r, &src[i], x, &item, at))) return st;
                bool ok;
                if (test) {
                    jj_args sub = {a->pos + 2, a->n > 2 ? a->n - 2 : 0, NULL, NULL, NULL, 0};
                    if ((st = apply_test(r, test->u.s.p, test->u.s.n, &item, &sub, &ok, at))) return st;
                } else {
                    ok = truthy(&item);
                }
                if (ok == select) res.u.list->v[k++] = src[i];
            }
        }
        res.u.list->n = k;
        *out = res;
        return VKL_OK;
    }
    if (IS("items")) {
        if (v->kind == JV_UNDEF) return mk_list(r, 0, out);
        if (v->kind != JV_DICT) return EERR(at, "items needs a mapping");
        jj_value fn = {.kind = JV_FUNC, .fn = M_ITEMS, .u.self = v};
        jj_args none = {0};
        return call_builtin(r, &fn, &none, out, at);
    }
    if (IS("dictsort")) {
        if (v->kind != JV_DICT) return EERR(at, "dictsort needs a mapping");
        size_t n = v->u.dict->n;
        jj_value *keys = jj_alloc(r->a, (n ? n : 1) * sizeof(jj_value));
        if (!keys || (st = mk_list(r, n, out))) return keys ? st : VKL_ERR_OUT_OF_MEMORY;
        for (size_t i = 0; i < n && !st; i++) {
            keys[i] = v->u.dict->keys[i];
            if (!(st = mk_list(r, 2, &out->u.list->v[i]))) {
                out->u.list->v[i].is_tuple = true;
                out->u.list->v[i].u.list->v[0] = v->u.dict->keys[i];
                out->u.list->v[i].u.list->v[1] = v->u.dict->vals[i];
            }
        }
        return st ? st : sort_values(r, out->u.list->v, keys, n, false, at);
    }
    if (IS("int") || IS("float") || IS("abs") || IS("round")) {
        jj_value num = *v;
        if (v->kind == JV_STR) {
            char buf[64];
            snprintf(buf, sizeof(buf), "%.*s", (int)(v->u.s.n < 63 ? v->u.s.n : 63), v->u.s.p);
            char *end;
            double d = strtod(buf, &end);
            num = end != buf ? mk_float(d) : (x ? *x : (IS("float") ? mk_float(0) : mk_int(0)));
        } else if (!is_num(v)) {
            if (IS("abs") || IS("round")) return EERR(at, "%.*s needs a number", (int)len, name);
            num = x ? *x : (IS("float") ? mk_float(0) : mk_int(0));
        }
        if (IS("int")) *out = mk_int(num_i(&num));
        else if (IS("float")) *out = mk_float(num_f(&num));
        else if (IS("abs")) {
            int64_t i = num_i(&num);
            if (num.kind != JV_FLOAT && i == INT64_MIN) return EERR(at, "integer overflow in abs");
            *out = num.kind == JV_FLOAT ? mk_float(fabs(num.u.f)) : mk_int(i < 0 ? -i : i);
        }
        else {
            const jj_value *prec = arg(a, 0, "precision");
            double m = pow(10.0, prec ? (double)num_i(prec) : 0.0);
            *out = mk_float(round(num_f(&num) * m) / m);
        }
        return VKL_OK;
    }
    /* string filters */
    jj_value s;
    if ((st = to_string(r, v, &s))) return st;
    if (IS("trim")) return do_strip(r, &s, arg(a, 0, "chars"), true, true, out, at);
    if (IS("upper")) return do_case(r, &s, CASE_UPPER, out);
    if (IS("lower")) return do_case(r, &s, CASE_LOWER, out);
    if (IS("title")) return do_case(r, &s, CASE_JINJA_TITLE, out);
    if (IS("capitalize")) return do_case(r, &s, CASE_CAPITALIZE, out);
    if (IS("replace")) {
        const jj_value *y = arg(a, 1, NULL), *c = arg(a, 2, "count");
        if (!x || !y) return EERR(at, "replace needs two arguments");
        return do_replace(r, &s, x, y, c ? num_i(c) : -1, out, at);
    }
    if (IS("wordcount")) {
        jj_value words;
        if ((st = do_split(r, &s, NULL, -1, false, &words, at))) return st;
        *out = mk_int((int64_t)words.u.list->n);
        return VKL_OK;
    }
    if (IS("escape") || IS("e")) {
        tok_buf b = {0};
        for (size_t i = 0; i < s.u.s.n && !st; i++) {
            char c = s.u.s.p[i];
            st = c == '&' ? put_s(r, &b, "&amp;") : c == '<' ? put_s(r, &b, "&lt;") : c == '>' ? put_s(r, &b, "&gt;")
                 : c == '"' ? put_s(r, &b, "&#34;") : c == '\'' ? put_s(r, &b, "&#39;") : put(r, &b, &c, 1);
        }
        if (!st) st = mk_str(r, b.p ? b.p : "", b.n, out);
        tok_buf_free(r->ctx, &b);
        return st;
    }
    if (IS("indent")) {
        const jj_value *w = arg(a, 0, "width"), *first = arg(a, 1, "first"), *blank = arg(a, 2, "blank");
        tok_buf pad = {0}, b = {0};
        if (w && w->kind == JV_STR) st = put(r, &pad, w->u.s.p, w->u.s.n);
        else
            for (int64_t k = 0; k < (w ? num_i(w) : 4) && k < 256 && !st; k++) st = put_s(r, &pad, " ");
        size_t i = 0;
        bool line_start = true, is_first = true;
        while (!st && i <= s.u.s.n) {
            const char *nl = memchr(s.u.s.p + i, '\n', s.u.s.n - i);
            size_t e2 = nl ? (size_t)(nl - s.u.s.p) : s.u.s.n;
            bool empty = e2 == i;
            if (line_start && (!is_first || (first && truthy(first))) && (!empty || (blank && truthy(blank))))
                st = put(r, &b, pad.p ? pad.p : "", pad.n);
            if (!st) st = put(r, &b, s.u.s.p + i, e2 - i);
            if (!nl) break;
            if (!st) st = put_s(r, &b, "\n");
            i = e2 + 1;
            is_first = false;
        }
        if (!st) st = mk_str(r, b.p ? b.p : "", b.n, out);
        tok_buf_free(r->ctx, &pad);
        tok_buf_free(r->ctx, &b);
        return st;
    }
#undef IS
    return EERR(at, "unsupported filter '%.*s'", (int)len, name);
}

/* ---- operators ------------------------------------------------------------------------ */

static vkl_status binop(R *r, const jj_expr *e, const jj_value *a, const jj_value *b, jj_value *out) {
    const char *op = e->op;
    if (!strcmp(op, "~")) {
        tok_buf buf = {0};
        vkl_status st = str_of(r, a, &buf);
        if (!st) st = str_of(r, b, &buf);
        if (!st) st = mk_str(r, buf.p ? buf.p : "", buf.n, out);
        tok_buf_free(r->ctx, &buf);
        return st;
    }
    if (a->kind == JV_UNDEF || b->kind == JV_UNDEF) return EERR(e, "'%s' with an undefined value", op);
    if (!strcmp(op, "+")) {
        if (a->kind == JV_STR && b->kind == JV_STR) {
            if (a->u.s.n + b->u.s.n > JJ_OUTPUT_LIMIT) return EERR(e, "string longer than 64 MiB");
            char *s = jj_alloc(r->a, a->u.s.n + b->u.s.n + 1);
            if (!s) return VKL_ERR_OUT_OF_MEMORY;
            memcpy(s, a->u.s.p, a->u.s.n);
            memcpy(s + a->u.s.n, b->u.s.p, b->u.s.n);
            *out = (jj_value){.kind = JV_STR, .u.s = {s, a->u.s.n + b->u.s.n}};
            return charge(r);
        }
        if (a->kind == JV_LIST && b->kind == JV_LIST) {
            size_t n = a->u.list->n + b->u.list->n;
            vkl_status st = mk_list(r, n, out);
            if (st) return st;
            if (a->u.list->n) memcpy(out->u.list->v, a->u.list->v, a->u.list->n * sizeof(jj_value));
            if (b->u.list->n) memcpy(out->u.list->v + a->u.list->n, b->u.list->v, b->u.list->n * sizeof(jj_value));
            return VKL_OK;
        }
    }
    if (!strcmp(op, "*") && ((a->kind == JV_STR && (b->kind == JV_INT || b->kind == JV_BOOL)) ||
                             (b->kind == JV_STR && (a->kind == JV_INT || a->kind == JV_BOOL)))) {
        const jj_value *s = a->kind == JV_STR ? a : b;
        int64_t times = num_i(a->kind == JV_STR ? b : a);
        if (times < 0 || !s->u.s.n) times = 0; /* '' * 10**18 is '' at once */
        if (s->u.s.n && (uint64_t)times > JJ_OUTPUT_LIMIT / s->u.s.n) return EERR(e, "string longer than 64 MiB");
        tok_buf buf = {0};
        vkl_status st = tok_buf_reserve(r->ctx, &buf, s->u.s.n * (size_t)times);
        for (int64_t k = 0; k < times && !st; k++) st = put(r, &buf, s->u.s.p, s->u.s.n);
        if (!st) st = mk_str(r, buf.p ? buf.p : "", buf.n, out);
        tok_buf_free(r->ctx, &buf);
        return st;
    }
    if (!is_num(a) || !is_num(b))
        return EERR(e, "unsupported operand types for %s: %s and %s", op, kind_name(a), kind_name(b));
    bool fl = a->kind == JV_FLOAT || b->kind == JV_FLOAT;
    int64_t x = num_i(a), y = num_i(b), z;
    double fx = num_f(a), fy = num_f(b);
    if (!strcmp(op, "/")) {
        if (fy == 0) return EERR(e, "division by zero");
        *out = mk_float(fx / fy);
        return VKL_OK;
    }
    if (!strcmp(op, "**")) {
        if (!fl && y >= 0) {
            int64_t acc = 1, base = x;
            for (int64_t k = y; k > 0; k >>= 1) { /* by squaring: y may be huge */
                if ((k & 1) && __builtin_mul_overflow(acc, base, &acc)) return EERR(e, "integer overflow in **");
                if (k > 1 && __builtin_mul_overflow(base, base, &base)) return EERR(e, "integer overflow in **");
            }
            *out = mk_int(acc);
        } else {
            *out = mk_float(pow(fx, fy));
        }
        return VKL_OK;
    }
    if (fl) {
        if (!strcmp(op, "+")) *out = mk_float(fx + fy);
        else if (!strcmp(op, "-")) *out = mk_float(fx - fy);
        else if (!strcmp(op, "*")) *out = mk_float(fx * fy);
        else {
            if (fy == 0) return EERR(e, "division by zero");
            double q = floor(fx / fy);
            *out = !strcmp(op, "//") ? mk_float(q) : mk_float(fx - q * fy);
        }
        return VKL_OK;
    }
    bool ovf = false;
    if (!strcmp(op, "+")) ovf = __builtin_add_overflow(x, y, &z);
    else if (!strcmp(op, "-")) ovf = __builtin_sub_overflow(x, y, &z);
    else if (!strcmp(op, "*")) ovf = __builtin_mul_overflow(x, y, &z);
    else {
        if (y == 0) return EERR(e, "division by zero");
        if (x == INT64_MIN && y == -1) return EERR(e, "integer overflow");
        int64_t q = x / y, m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) {
            q--;
            m += y;
        }
        z = !strcmp(op, "//") ? q : m;
    }
    if (ovf) return EERR(e, "integer overflow in %s", op);
    *out = mk_int(z);
    return VKL_OK;
}

static vkl_status eval(R *r, const jj_expr *e, jj_value *out) {
    if (++r->steps > JJ_STEP_LIMIT) return EERR(e, "template takes more than %u steps", (unsigned)JJ_STEP_LIMIT);
    vkl_status st;
    jj_value a, b, c;
    switch (e->kind) {
    case JE_CONST: *out = e->cval; return VKL_OK;
    case JE_NAME: {
        if (lookup(r, e->name, e->name_len, out)) return VKL_OK;
        static const struct {
            const char *name;
            uint16_t fn;
        } globals[] = {{"range", FN_RANGE},         {"namespace", FN_NAMESPACE}, {"raise_exception", FN_RAISE},
                       {"strftime_now", FN_STRFTIME}, {"dict", FN_DICT}};
        for (size_t i = 0; i < VKL_ARRAY_LEN(globals); i++)
            if (strlen(globals[i].name) == e->name_len && !memcmp(globals[i].name, e->name, e->name_len)) {
                *out = (jj_value){.kind = JV_FUNC, .fn = globals[i].fn};
                return VKL_OK;
            }
        *out = UNDEF;
        return VKL_OK;
    }
    case JE_ATTR:
        if ((st = eval(r, e->a, &a))) return st;
        return get_attr(r, &a, e->name, e->name_len, out, e);
    case JE_ITEM:
        if ((st = eval(r, e->a, &a)) || (st = eval(r, e->b, &b))) return st;
        return get_item(r, &a, &b, out, e);
    case JE_SLICE: {
        b = c = NONE;
        jj_value s = NONE;
        if ((st = eval(r, e->a, &a))) return st;
        if (e->b && (st = eval(r, e->b, &b))) return st;
        if (e->c && (st = eval(r, e->c, &c))) return st;
        if (e->args[0] && (st = eval(r, e->args[0], &s))) return st;
        return do_slice(r, &a, &b, &c, &s, out, e);
    }
    case JE_CALL: {
        jj_args args;
        if ((st = eval(r, e->a, &a)) || (st = eval_args(r, e, &args))) return st;
        return call_value(r, &a, &args, out, e);
    }
    case JE_FILTER: {
        jj_args args;
        if ((st = eval(r, e->a, &a)) || (st = eval_args(r, e, &args))) return st;
        return apply_filter(r, e, e->name, e->name_len, &a, &args, out);
    }
    case JE_TEST: {
        jj_args args;
        bool ok;
        if ((st = eval(r, e->a, &a)) || (st = eval_args(r, e, &args))) return st;
        if ((st = apply_test(r, e->name, e->name_len, &a, &args, &ok, e))) return st;
        *out = mk_bool(ok != e->negated);
        return VKL_OK;
    }
    case JE_NEG:
    case JE_POS:
        if ((st = eval(r, e->a, &a))) return st;
        if (!is_num(&a)) return EERR(e, "unary %c on a %s", e->kind == JE_NEG ? '-' : '+', kind_name(&a));
        if (e->kind == JE_POS) *out = a.kind == JV_BOOL ? mk_int(num_i(&a)) : a;
        else if (a.kind == JV_FLOAT) *out = mk_float(-a.u.f);
        else if (num_i(&a) == INT64_MIN) return EERR(e, "integer overflow");
        else *out = mk_int(-num_i(&a));
        return VKL_OK;
    case JE_NOT:
        if ((st = eval(r, e->a, &a))) return st;
        *out = mk_bool(!truthy(&a));
        return VKL_OK;
    case JE_AND:
    case JE_OR:
        if ((st = eval(r, e->a, &a))) return st;
        if (truthy(&a) == (e->kind == JE_OR)) {
            *out = a;
            return VKL_OK;
        }
        return eval(r, e->b, out);
    case JE_BINOP:
        if ((st = eval(r, e->a, &a)) || (st = eval(r, e->b, &b))) return st;
        return binop(r, e, &a, &b, out);
    case JE_COMPARE: {
        if ((st = eval(r, e->args[0], &a))) return st;
        for (size_t i = 0; i + 1 < e->n_args; i++) {
            if ((st = eval(r, e->args[i + 1], &b))) return st;
            const char *op = e->ops[i];
            bool ok;
            if ((a.kind == JV_LIST || a.kind == JV_DICT) && (st = spend(r, a.kind == JV_LIST ? a.u.list->n : a.u.dict->n, e)))
                return st;
            if (!strcmp(op, "==")) ok = val_eq(&a, &b);
            else if (!strcmp(op, "!=")) ok = !val_eq(&a, &b);
            else if (!strcmp(op, "in") || !strcmp(op, "!in")) {
                if ((st = contains(r, &b, &a, &ok, e))) return st;
                if (op[0] == '!') ok = !ok;
            } else {
                int cmp;
                if ((st = compare_order(r, &a, &b, &cmp, e))) return st;
                ok = !strcmp(op, "<") ? cmp < 0 : !strcmp(op, "<=") ? cmp <= 0 : !strcmp(op, ">") ? cmp > 0 : cmp >= 0;
            }
            if (!ok) {
                *out = mk_bool(false);
                return VKL_OK;
            }
            a = b;
        }
        *out = mk_bool(true);
        return VKL_OK;
    }
    case JE_COND:
        if ((st = eval(r, e->a, &a))) return st;
        if (truthy(&a)) return eval(r, e->b, out);
        if (e->c) return eval(r, e->c, out);
        *out = UNDEF;
        return VKL_OK;
    case JE_LIST:
    case JE_TUPLE:
        if ((st = mk_list(r, e->n_args, out))) return st;
        out->is_tuple = e->kind == JE_TUPLE;
        for (size_t i = 0; i < e->n_args; i++)
            if ((st = eval(r, e->args[i], &out->u.list->v[i]))) return st;
        return VKL_OK;
    case JE_DICT:
        if ((st = mk_dict(r, out))) return st;
        for (size_t i = 0; i < e->n_args; i++) {
            if ((st = eval(r, e->args[i], &a)) || (st = eval(r, e->kw_vals[i], &b))) return st;
            if ((st = dict_set(r, out->u.dict, &a, &b))) return st;
        }
        return VKL_OK;
    default: break;
    }
    return EERR(e, "internal: expression kind %d", (int)e->kind);
}

/* ---- statements ---------------------------------------------------------------------------- */

static vkl_status bind_targets(R *r, const jj_stmt *s, jj_frame *f, const jj_value *item) {
    if (s->n_names == 1) return frame_set(r, f, s->names[0], s->name_lens[0], item);
    jj_value parts;
    vkl_status st = iter_list(r, item, &parts, s->expr);
    if (st) return st;
    if (parts.u.list->n != s->n_names)
        return rerr(r, s->line, s->col, VKL_ERR_INVALID_ARGUMENT, "cannot unpack %zu values into %zu names",
                    parts.u.list->n, s->n_names);
    for (size_t k = 0; k < s->n_names && !st; k++) st = frame_set(r, f, s->names[k], s->name_lens[k], &parts.u.list->v[k]);
    return st;
}

static vkl_status exec_for(R *r, const jj_stmt *s) {
    jj_value seq, items;
    vkl_status st = eval(r, s->expr, &seq);
    if (!st && seq.kind == JV_NONE) st = EERR(s->expr, "'NoneType' object is not iterable");
    if (!st) st = iter_list(r, &seq, &items, s->expr);
    if (st) return st;
    jj_frame f = {NULL, 0, 0, r->top};
    r->top = &f;
    const jj_list *list = items.u.list;
    if (s->filter) {
        jj_value kept;
        if (!(st = mk_list(r, list->n, &kept))) {
            size_t k = 0;
            for (size_t i = 0; i < list->n && !st; i++) {
                jj_value ok;
                if (!(st = bind_targets(r, s, &f, &list->v[i])) && !(st = eval(r, s->filter, &ok)) && truthy(&ok))
                    kept.u.list->v[k++] = list->v[i];
            }
            kept.u.list->n = k;
            list = kept.u.list;
        }
    }
    jj_loop *loop = st ? NULL : jj_alloc(r->a, sizeof(jj_loop));
    if (!st && !loop) st = VKL_ERR_OUT_OF_MEMORY;
    if (!st) {
        loop->items = list;
        jj_value lv = {.kind = JV_LOOP, .u.loop = loop};
        for (size_t i = 0; i < list->n && !st; i++) {
            loop->index0 = i;
            if ((st = bind_targets(r, s, &f, &list->v[i])) || (st = frame_set(r, &f, "loop", 4, &lv))) break;
            st = exec_body(r, &s->body);
            int flow = r->flow;
            r->flow = 0;
            if (flow == 1) break;
        }
        if (!st && !list->n) st = exec_body(r, &s->else_body);
    }
    r->top = f.parent;
    frame_free(r, &f);
    return st;
}

static vkl_status exec_stmt(R *r, const jj_stmt *s) {
    if (++r->steps > JJ_STEP_LIMIT)
        return rerr(r, s->line, s->col, VKL_ERR_INVALID_ARGUMENT, "template takes more than %u steps",
                    (unsigned)JJ_STEP_LIMIT);
    vkl_status st;
    jj_value v;
    switch (s->kind) {
    case JS_TEXT: return put(r, r->out, s->text, s->text_len);
    case JS_OUTPUT:
        if ((st = eval(r, s->expr, &v))) return st;
        return str_of(r, &v, r->out);
    case JS_IF:
        for (size_t i = 0; i < s->n_branches; i++) {
            if ((st = eval(r, s->conds[i], &v))) return st;
            if (truthy(&v)) return exec_body(r, &s->bodies[i]);
        }
        return exec_body(r, &s->else_body);
    case JS_FOR: return exec_for(r, s);
    case JS_SET:
        if ((st = eval(r, s->expr, &v))) return st;
        if (s->set_attr) {
            jj_value ns;
            if (!lookup(r, s->names[0], s->name_lens[0], &ns) || ns.kind != JV_DICT || !ns.is_ns)
                return rerr(r, s->line, s->col, VKL_ERR_INVALID_ARGUMENT,
                            "cannot assign an attribute of '%.*s': not a namespace", (int)s->name_lens[0], s->names[0]);
            jj_value key;
            if ((st = mk_str(r, s->names[1], s->name_lens[1], &key))) return st;
            return dict_set(r, ns.u.dict, &key, &v);
        }
        return frame_set(r, r->top, s->names[0], s->name_lens[0], &v);
    case JS_SET_BLOCK: {
        tok_buf *saved = r->out, body = {0};
        r->out = &body;
        st = exec_body(r, &s->body);
        r->out = saved;
        if (!st) st = mk_str(r, body.p ? body.p : "", body.n, &v);
        tok_buf_free(r->ctx, &body);
        if (!st) st = frame_set(r, r->top, s->names[0], s->name_lens[0], &v);
        return st;
    }
    case JS_MACRO:
        v = (jj_value){.kind = JV_MACRO, .u.macro = s};
        return frame_set(r, r->top, s->macro_name, s->macro_name_len, &v);
    case JS_BREAK: r->flow = 1; return VKL_OK;
    case JS_CONTINUE: r->flow = 2; return VKL_OK;
    case JS_BLOCK: return exec_body(r, &s->body);
    default: break;
    }
    return rerr(r, s->line, s->col, VKL_ERR_INTERNAL, "statement kind %d", (int)s->kind);
}

static vkl_status exec_body(R *r, const jj_body *b) {
    if (++r->depth > JJ_DEPTH_LIMIT) {
        r->depth--;
        return vkl_fail(r->ctx, VKL_ERR_INVALID_ARGUMENT, "chat template: blocks nested deeper than %d", JJ_DEPTH_LIMIT);
    }
    vkl_status st = VKL_OK;
    for (size_t i = 0; i < b->n && !st && !r->flow; i++) st = exec_stmt(r, b->v[i]);
    r->depth--;
    return st;
}

/* ---- JSON in, and the entry point -------------------------------------------------------- */

static vkl_status from_json(R *r, const cJSON *j, jj_value *out, int depth) {
    if (depth > 200) return vkl_fail(r->ctx, VKL_ERR_UNSUPPORTED, "chat template variables nested deeper than 200");
    vkl_status st = VKL_OK;
    if (cJSON_IsNull(j)) *out = NONE;
    else if (cJSON_IsBool(j)) *out = mk_bool(cJSON_IsTrue(j));
    else if (cJSON_IsNumber(j)) {
        double d = j->valuedouble;
        *out = d == floor(d) && fabs(d) < 9007199254740992.0 ? mk_int((int64_t)d) : mk_float(d);
    } else if (cJSON_IsString(j)) {
        const char *s = j->valuestring ? j->valuestring : "";
        if (!tok_utf8_is_valid(s, strlen(s))) return vkl_fail(r->ctx, VKL_ERR_FORMAT, "chat template variables: invalid UTF-8");
        *out = (jj_value){.kind = JV_STR, .u.s = {s, strlen(s)}};
    } else if (cJSON_IsArray(j)) {
        if ((st = mk_list(r, (size_t)cJSON_GetArraySize(j), out))) return st;
        size_t k = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, j) {
            if ((st = from_json(r, e, &out->u.list->v[k++], depth + 1))) return st;
        }
    } else if (cJSON_IsObject(j)) {
        if ((st = mk_dict(r, out))) return st;
        const cJSON *e;
        cJSON_ArrayForEach(e, j) {
            jj_value k, v;
            const char *key = e->string ? e->string : "";
            if (!tok_utf8_is_valid(key, strlen(key))) return vkl_fail(r->ctx, VKL_ERR_FORMAT, "chat template variables: invalid UTF-8");
            k = (jj_value){.kind = JV_STR, .u.s = {key, strlen(key)}};
            if ((st = from_json(r, e, &v, depth + 1)) || (st = dict_set(r, out->u.dict, &k, &v))) return st;
        }
    } else {
        *out = UNDEF;
    }
    return st;
}

vkl_status jj_render(vkl_context *ctx, const jj_template *t, const cJSON *vars, const jj_global *globals,
                     size_t n_globals, tok_buf *out) {
    jj_arena arena = {ctx, NULL, 0};
    jj_frame root = {0};
    R r = {ctx, &arena, out, &root, &root, 0, 0, 0};
    vkl_status st = VKL_OK;
    /* transformers' defaults first; the caller's variables override them */
    jj_value v = mk_bool(false);
    st = frame_set(&r, &root, "add_generation_prompt", 21, &v);
    if (!st) st = frame_set(&r, &root, "tools", 5, &NONE);
    if (!st) st = frame_set(&r, &root, "documents", 9, &NONE);
    for (size_t i = 0; i < n_globals && !st; i++) {
        if (!globals[i].value) continue;
        v = (jj_value){.kind = JV_STR, .u.s = {globals[i].value, strlen(globals[i].value)}};
        st = frame_set(&r, &root, globals[i].name, strlen(globals[i].name), &v);
    }
    const cJSON *e;
    if (!st && vars) cJSON_ArrayForEach(e, vars) {
        if (!e->string) continue;
        if ((st = from_json(&r, e, &v, 0))) break;
        if ((st = frame_set(&r, &root, e->string, strlen(e->string), &v))) break;
    }
    if (!st) st = exec_body(&r, &t->body);
    frame_free(&r, &root);
    jj_arena_free(&arena);
    return st;
}
