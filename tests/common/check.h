/* What the C tests share (tests/unit, tests/importer, tests/quant): the
 * failure counter, CHECK and its variants, and small helpers for graphs
 * written as text (dims, expected shapes and values). Header-only (static
 * inline): each test program takes what it uses.
 *
 * A failed check prints "file:line: ..." to stderr and counts a failure;
 * every check also counts itself. Two ways to keep the counts:
 *  - by default, the file-scope `failures` and `checks`:
 *      CHECK(cond)                  cond holds
 *      CHECKF(cond, fmt, ...)       the same, printing a message when it fails
 *      CHECK_OR(cond, action)       CHECK, then `action` when it failed
 *      REQUIRE(cond, fmt, ...)      CHECKF, then return from the (void) caller
 *      CHECK_OK(ctx, st)            the vkl_status st is VKL_OK (prints ctx's error)
 *      CHECK_MSG(ctx, needle)       ctx's error message contains needle
 *      CHECK_ERR(ctx, st, want, needle)  st is want and the message has needle
 *  - with CHECK_FIXTURE defined before the include, per fixture: `f` points
 *    to a struct with int members `fails` and `checks` and the context
 *    `ctx` whose error message is reported:
 *      CHECK(f, cond), CHECK_OK(f, st), CHECK_MSG(f, needle),
 *      CHECK_ERR(f, st, want, needle)
 * The helpers below add their failures to the counter they are given. */
#ifndef VKL_TEST_CHECK_H
#define VKL_TEST_CHECK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "graph.h"

/* ---- reporting -------------------------------------------------------------------------------- */

static inline void check_print_status_(const char *file, int line, const char *call, vkl_status st,
                                       vkl_context *ctx) {
    fprintf(stderr, "%s:%d: %s returned %s: %s\n", file, line, call, vkl_status_name(st), vkl_context_error(ctx));
}

/* ctx's error message contains `needle`; prints both otherwise. */
static inline bool check_msg_has(const char *file, int line, vkl_context *ctx, const char *needle) {
    if (strstr(vkl_context_error(ctx), needle)) return true;
    fprintf(stderr, "%s:%d: error message \"%s\" lacks \"%s\"\n", file, line, vkl_context_error(ctx), needle);
    return false;
}

/* `call` returned `got`: it must be `want`, with `needle` in ctx's error
 * message (needle NULL: any message). Prints what differs otherwise. */
static inline bool check_status_is(const char *file, int line, const char *call, vkl_context *ctx, vkl_status got,
                                   vkl_status want, const char *needle) {
    if (got != want) {
        fprintf(stderr, "%s:%d: %s returned %s, want %s: %s\n", file, line, call, vkl_status_name(got),
                vkl_status_name(want), vkl_context_error(ctx));
        return false;
    }
    return !needle || check_msg_has(file, line, ctx, needle);
}

/* The bodies, on the counters `fails` and `counted` (lvalues); `text`: the
 * condition as written (stringized by the public macros, before expansion). */
#define CHECK_TRUE_(fails, counted, cond, text)                                     \
    do {                                                                            \
        (counted)++;                                                                \
        if (!(cond)) {                                                              \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, text); \
            (fails)++;                                                              \
        }                                                                           \
    } while (0)
#define CHECK_OK_(fails, counted, ctx, st, text)                      \
    do {                                                              \
        vkl_status s_ = (st);                                         \
        (counted)++;                                                  \
        if (s_ != VKL_OK) {                                           \
            check_print_status_(__FILE__, __LINE__, text, s_, (ctx)); \
            (fails)++;                                                \
        }                                                             \
    } while (0)
#define CHECK_MSG_(fails, counted, ctx, needle)                             \
    do {                                                                    \
        (counted)++;                                                        \
        if (!check_msg_has(__FILE__, __LINE__, (ctx), (needle))) (fails)++; \
    } while (0)
#define CHECK_ERR_(fails, counted, ctx, st, want, needle, text)                                   \
    do {                                                                                          \
        (counted)++;                                                                              \
        if (!check_status_is(__FILE__, __LINE__, text, (ctx), (st), (want), (needle))) (fails)++; \
    } while (0)

#ifdef CHECK_FIXTURE

#define CHECK(f, cond) CHECK_TRUE_((f)->fails, (f)->checks, (cond), #cond)
#define CHECK_OK(f, st) CHECK_OK_((f)->fails, (f)->checks, (f)->ctx, st, #st)
#define CHECK_MSG(f, needle) CHECK_MSG_((f)->fails, (f)->checks, (f)->ctx, needle)
#define CHECK_ERR(f, st, want, needle) CHECK_ERR_((f)->fails, (f)->checks, (f)->ctx, st, want, needle, #st)

#else

static int failures __attribute__((unused));
static int checks __attribute__((unused));

#define CHECK(cond) CHECK_TRUE_(failures, checks, (cond), #cond)
#define CHECK_OK(ctx, st) CHECK_OK_(failures, checks, ctx, st, #st)
#define CHECK_MSG(ctx, needle) CHECK_MSG_(failures, checks, ctx, needle)
#define CHECK_ERR(ctx, st, want, needle) CHECK_ERR_(failures, checks, ctx, st, want, needle, #st)
/* Stops a loop after its first failure, so one bug does not print 10^5 lines. */
#define CHECK_OR(cond, action)                        \
    do {                                              \
        int before_ = failures;                       \
        CHECK_TRUE_(failures, checks, (cond), #cond); \
        if (failures != before_) action;              \
    } while (0)

#define CHECKF_(text, cond, ...)                                                    \
    do {                                                                            \
        checks++;                                                                   \
        if (!(cond)) {                                                              \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, text); \
            fprintf(stderr, __VA_ARGS__);                                           \
            fputc('\n', stderr);                                                    \
            failures++;                                                             \
        }                                                                           \
    } while (0)
#define CHECKF(cond, ...) CHECKF_(#cond, (cond), __VA_ARGS__)
/* Stops the current (void) test function; its caller cleans up. */
#define REQUIRE(cond, ...)                   \
    do {                                     \
        int before_ = failures;              \
        CHECKF_(#cond, (cond), __VA_ARGS__); \
        if (failures != before_) return;     \
    } while (0)

/* The program's exit status, after its verdict: "<program>: ok" or the count. */
static inline int check_finish(const char *program) {
    if (failures) {
        fprintf(stderr, "%s: %d check(s) failed\n", program, failures);
        return 1;
    }
    printf("%s: ok\n", program);
    return 0;
}

#endif /* CHECK_FIXTURE */

/* ---- text: lists, dims, expected shapes and values -------------------------------------------- */

/* Splits `s` at each `sep` outside parentheses ("a, min(b, c)" at ',': two
 * parts) into `out`, rows of `width` chars (char out[cap][width]), each part
 * without the blanks around it and cut at width - 1 chars. Returns the count
 * (0 for a blank s). */
static inline uint32_t check_split(const char *s, char sep, void *out, size_t width, uint32_t cap) {
    char *rows = out;
    uint32_t n = 0;
    while (*s == ' ') s++;
    if (!*s) return 0;
    while (n < cap) {
        const char *end = s;
        for (int depth = 0; *end && (*end != sep || depth != 0); end++)
            depth += *end == '(' ? 1 : *end == ')' ? -1 : 0;
        const char *b = s, *e = end;
        while (b < e && *b == ' ') b++;
        while (e > b && e[-1] == ' ') e--;
        size_t len = (size_t)(e - b) < width - 1 ? (size_t)(e - b) : width - 1;
        memcpy(rows + n * width, b, len);
        rows[n * width + len] = 0;
        n++;
        if (!*end) break;
        s = end + 1;
    }
    return n;
}

/* Expressions separated by `sep` ("B;seq;max(M, N)" at ';') into out (at
 * most cap); one that does not parse is printed and adds to *fails. Returns
 * the count. */
static inline uint32_t check_exprs(int *fails, vkl_graph *g, const char *text, char sep, vkl_expr *out,
                                   uint32_t cap) {
    char parts[VKL_MAX_VALUE_ELEMS][128];
    uint32_t n = check_split(text ? text : "", sep, parts, sizeof(parts[0]),
                             cap < VKL_MAX_VALUE_ELEMS ? cap : VKL_MAX_VALUE_ELEMS);
    for (uint32_t i = 0; i < n; i++) {
        if (vkl_expr_parse(g->syms, parts[i], &out[i]) != VKL_OK) {
            fprintf(stderr, "parse '%s': %s\n", parts[i], vkl_context_error(g->ctx));
            (*fails)++;
        }
    }
    return n;
}

/* A shape from its dims ("batch, 4, seq" at ','; NULL or blank: rank 0). */
static inline vkl_shape check_shape(int *fails, vkl_graph *g, const char *dims, char sep) {
    vkl_shape s = {0};
    s.rank = check_exprs(fails, g, dims, sep, s.dims, VKL_MAX_RANK);
    return s;
}

/* "[a, b]": n expressions printed as vkl_shape_str prints a shape's dims. */
static inline const char *check_exprs_str(const vkl_graph *g, const vkl_expr *e, uint32_t n, char *buf, size_t cap) {
    size_t used = (size_t)snprintf(buf, cap, "[");
    for (uint32_t i = 0; i < n && used < cap; i++) {
        if (i) used += (size_t)snprintf(buf + used, cap - used, ", ");
        if (used < cap) used += vkl_expr_print(g->syms, e[i], buf + used, cap - used);
    }
    if (used < cap) snprintf(buf + used, cap - used, "]");
    return buf;
}

/* The tensor called `name`, or NULL. */
static inline const vkl_tensor *check_tensor(const vkl_graph *g, const char *name) {
    uint32_t id;
    return vkl_graph_find_tensor(g, name, &id) == VKL_OK ? &g->tensors[id] : NULL;
}

/* Tensor `name` exists, its shape prints as `want` ("[batch, 4]") and,
 * unless dt is VKL_DTYPE_INVALID, its dtype is dt. Otherwise prints what it
 * is (at file:line) and adds to *fails. */
static inline bool check_shape_is(int *fails, const char *file, int line, const vkl_graph *g, const char *name,
                                  vkl_dtype dt, const char *want) {
    const vkl_tensor *t = check_tensor(g, name);
    char got[256] = "(no such tensor)";
    if (t) vkl_shape_str(g, &t->shape, got, sizeof(got));
    if (t && !strcmp(got, want) && (dt == VKL_DTYPE_INVALID || t->dtype == dt)) return true;
    if (dt == VKL_DTYPE_INVALID)
        fprintf(stderr, "%s:%d: shape of %s is %s, want %s\n", file, line, name, got, want);
    else
        fprintf(stderr, "%s:%d: %s is %s %s, want %s %s\n", file, line, name, t ? vkl_dtype_name(t->dtype) : "?",
                got, vkl_dtype_name(dt), want);
    (*fails)++;
    return false;
}

/* Tensor `name` exists and its value prints as `want` ("[batch, 4]"), or
 * it carries none and want is "none". Otherwise as check_shape_is. */
static inline bool check_value_is(int *fails, const char *file, int line, const vkl_graph *g, const char *name,
                                  const char *want) {
    const vkl_tensor *t = check_tensor(g, name);
    char got[512] = "(no such tensor)";
    if (t && t->value) check_exprs_str(g, t->value, t->value_count, got, sizeof(got));
    else if (t) snprintf(got, sizeof(got), "none");
    if (t && !strcmp(got, want)) return true;
    fprintf(stderr, "%s:%d: value of %s is %s, want %s\n", file, line, name, got, want);
    (*fails)++;
    return false;
}

/* check_shape_is with the dims written as expressions separated by `sep`
 * ("B;seq;64"): both sides compared as printed. */
static inline bool check_shape_exprs(int *fails, const char *file, int line, vkl_graph *g, const char *name,
                                     vkl_dtype dt, const char *dims, char sep) {
    vkl_expr e[VKL_MAX_RANK];
    char want[256];
    check_exprs_str(g, e, check_exprs(fails, g, dims, sep, e, VKL_MAX_RANK), want, sizeof(want));
    return check_shape_is(fails, file, line, g, name, dt, want);
}

/* check_value_is with the value written as expressions separated by `sep`
 * ("B+1;seq;4097"); values NULL: the tensor must carry no value. */
static inline bool check_value_exprs(int *fails, const char *file, int line, vkl_graph *g, const char *name,
                                     const char *values, char sep) {
    vkl_expr e[VKL_MAX_VALUE_ELEMS];
    char want[512] = "none";
    if (values) check_exprs_str(g, e, check_exprs(fails, g, values, sep, e, VKL_MAX_VALUE_ELEMS), want, sizeof(want));
    return check_value_is(fails, file, line, g, name, want);
}

/* ---- files ------------------------------------------------------------------------------------ */

/* The whole file, with a NUL after its `*len` bytes (free it); NULL when it
 * cannot be read. */
static inline uint8_t *check_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    size_t size = n > 0 ? (size_t)n : 0;
    uint8_t *p = malloc(size + 1);
    if (p && fread(p, 1, size, f) != size) {
        free(p);
        p = NULL;
    }
    fclose(f);
    if (p) p[size] = 0;
    *len = size;
    return p;
}

#endif /* VKL_TEST_CHECK_H */
