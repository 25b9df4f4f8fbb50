/* The Jinja subset behind chat templates: the syntax tree jinja_parse.c
 * builds and jinja_eval.c renders, the values templates compute with, and
 * the bump arena both allocate from. */
#ifndef VKL_JINJA_H
#define VKL_JINJA_H

#include <cjson/cJSON.h>

#include "tok_internal.h"

/* ---- arena ---------------------------------------------------------------- */

typedef struct jj_chunk jj_chunk;
typedef struct jj_arena {
    vkl_context *ctx;
    jj_chunk *head;
    size_t total; /* bytes handed out, for the render limit */
} jj_arena;

void *jj_alloc(jj_arena *a, size_t n); /* zeroed; NULL on OOM (error set) */
void jj_arena_free(jj_arena *a);

/* ---- values -------------------------------------------------------------- */

typedef enum jj_kind {
    JV_UNDEF,
    JV_NONE,
    JV_BOOL,
    JV_INT,
    JV_FLOAT,
    JV_STR,
    JV_LIST, /* lists and tuples */
    JV_DICT, /* insertion-ordered; also namespace() objects (mutable) */
    JV_FUNC, /* a builtin function or a bound method */
    JV_MACRO,
    JV_LOOP
} jj_kind;

typedef struct jj_value jj_value;
typedef struct jj_list jj_list;
typedef struct jj_dict jj_dict;
typedef struct jj_loop jj_loop;
struct jj_stmt;

struct jj_value {
    uint8_t kind;
    bool is_ns;    /* JV_DICT: a namespace */
    bool is_tuple; /* JV_LIST: prints as (a, b) */
    uint16_t fn; /* JV_FUNC: which builtin */
    union {
        bool b;
        int64_t i;
        double f;
        struct {
            const char *p;
            size_t n;
        } s;
        jj_list *list;
        jj_dict *dict;
        const jj_value *self; /* JV_FUNC: bound object, or NULL */
        const struct jj_stmt *macro;
        jj_loop *loop;
    } u;
};

struct jj_list {
    size_t n;
    jj_value *v;
};

struct jj_dict {
    size_t n, cap;
    jj_value *keys, *vals;
};

struct jj_loop {
    const jj_list *items;
    size_t index0;
};

/* ---- syntax tree ---------------------------------------------------------- */

typedef enum jj_expr_kind {
    JE_CONST,
    JE_NAME,
    JE_ATTR,
    JE_ITEM,
    JE_SLICE,
    JE_CALL,
    JE_FILTER,
    JE_TEST,
    JE_NEG,
    JE_POS,
    JE_NOT,
    JE_AND,
    JE_OR,
    JE_BINOP, /* op: + - * / // % ** ~ */
    JE_COMPARE, /* a chain: args[0] op[0] args[1] op[1] ... */
    JE_COND,
    JE_LIST,
    JE_TUPLE,
    JE_DICT
} jj_expr_kind;

typedef struct jj_expr jj_expr;
struct jj_expr {
    uint8_t kind;
    char op[4];
    bool negated; /* JE_TEST: is not */
    int line, col;
    jj_value cval;           /* JE_CONST */
    const char *name;        /* JE_NAME, JE_ATTR, JE_FILTER, JE_TEST */
    size_t name_len;
    jj_expr *a, *b, *c;      /* operands; JE_SLICE: obj a, start b, stop c, step args[0] */
    jj_expr **args;          /* positional args; list/tuple items; dict keys; compare operands */
    size_t n_args;
    char (*ops)[4];          /* JE_COMPARE: n_args - 1 operators */
    const char **kw_names;   /* keyword args; JE_DICT: unused */
    size_t *kw_lens;
    jj_expr **kw_vals;       /* keyword values; JE_DICT: the values */
    size_t n_kw;
};

typedef enum jj_stmt_kind {
    JS_TEXT,
    JS_OUTPUT,
    JS_IF,
    JS_FOR,
    JS_SET,
    JS_SET_BLOCK,
    JS_MACRO,
    JS_BREAK,
    JS_CONTINUE,
    JS_BLOCK /* a plain body: {% generation %} */
} jj_stmt_kind;

typedef struct jj_body {
    struct jj_stmt **v;
    size_t n;
} jj_body;

typedef struct jj_stmt {
    uint8_t kind;
    int line, col;
    const char *text; /* JS_TEXT */
    size_t text_len;
    jj_expr *expr;    /* OUTPUT; SET value; FOR iterable */
    jj_expr *filter;  /* FOR ... if filter */
    jj_expr **conds;  /* IF: one per branch */
    jj_body *bodies;
    size_t n_branches;
    jj_body body, else_body;  /* FOR, SET_BLOCK, MACRO, BLOCK; IF and FOR else */
    const char **names;       /* FOR targets; SET target (names[0], attr in names[1]); MACRO params */
    size_t *name_lens;
    size_t n_names;
    bool set_attr;            /* SET: names[0].names[1] = ... */
    jj_expr **defaults;       /* MACRO: per param, or NULL */
    const char *macro_name;
    size_t macro_name_len;
} jj_stmt;

typedef struct jj_template {
    jj_arena arena;
    jj_body body;
    char *source; /* normalized source; strings in the tree point into it or the arena */
} jj_template;

vkl_status jj_parse(vkl_context *ctx, const char *src, size_t len, jj_template **out);
/* Names the evaluator implements (the parser refuses others up front). */
bool jj_known_filter(const char *name, size_t n);
bool jj_known_test(const char *name, size_t n);
void jj_free(vkl_context *ctx, jj_template *t);

/* Render with the keys of `vars` (a JSON object) and string globals. */
typedef struct jj_global {
    const char *name;
    const char *value;
} jj_global;

vkl_status jj_render(vkl_context *ctx, const jj_template *t, const cJSON *vars, const jj_global *globals,
                     size_t n_globals, tok_buf *out);

#endif
