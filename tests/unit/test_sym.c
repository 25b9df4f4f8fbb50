/* Unit tests for engine/sym.c: canonical forms, simplification, compare,
 * exact division, evaluation, text round trips and a randomized oracle. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "sym.h"

#define CHECK_FIXTURE /* the checks count in each test's fx: fails, checks */
#include "check.h"

typedef struct fx {
    vkl_context *ctx;
    vkl_symtab *t;
    int fails;
    int checks;
} fx;

/* ---- helpers: failures inside them report the caller's text ---- */

static vkl_expr P(fx *f, const char *text) {
    vkl_expr e = VKL_EXPR_INVALID;
    vkl_status st = vkl_expr_parse(f->t, text, &e);
    if (st) {
        fprintf(stderr, "parse(\"%s\") failed: %s: %s\n", text, vkl_status_name(st), vkl_context_error(f->ctx));
        f->fails++;
    }
    return e;
}

static vkl_expr C(fx *f, int64_t v) {
    vkl_expr e = VKL_EXPR_INVALID;
    CHECK_OK(f, vkl_expr_const(f->t, v, &e));
    return e;
}

static vkl_expr S(fx *f, const char *name) {
    vkl_expr e = VKL_EXPR_INVALID;
    CHECK_OK(f, vkl_expr_symbol(f->t, name, &e));
    return e;
}

static vkl_expr ADD(fx *f, vkl_expr a, vkl_expr b) {
    vkl_expr e = VKL_EXPR_INVALID;
    CHECK_OK(f, vkl_expr_add(f->t, a, b, &e));
    return e;
}
static vkl_expr SUB(fx *f, vkl_expr a, vkl_expr b) {
    vkl_expr e = VKL_EXPR_INVALID;
    CHECK_OK(f, vkl_expr_sub(f->t, a, b, &e));
    return e;
}
static vkl_expr MUL(fx *f, vkl_expr a, vkl_expr b) {
    vkl_expr e = VKL_EXPR_INVALID;
    CHECK_OK(f, vkl_expr_mul(f->t, a, b, &e));
    return e;
}
static vkl_expr FDIV(fx *f, vkl_expr a, int64_t c) {
    vkl_expr e = VKL_EXPR_INVALID;
    CHECK_OK(f, vkl_expr_floordiv(f->t, a, c, &e));
    return e;
}
static vkl_expr MOD(fx *f, vkl_expr a, int64_t c) {
    vkl_expr e = VKL_EXPR_INVALID;
    CHECK_OK(f, vkl_expr_mod(f->t, a, c, &e));
    return e;
}
static vkl_expr MIN(fx *f, vkl_expr a, vkl_expr b) {
    vkl_expr e = VKL_EXPR_INVALID;
    CHECK_OK(f, vkl_expr_min(f->t, a, b, &e));
    return e;
}
static vkl_expr MAX(fx *f, vkl_expr a, vkl_expr b) {
    vkl_expr e = VKL_EXPR_INVALID;
    CHECK_OK(f, vkl_expr_max(f->t, a, b, &e));
    return e;
}

static const char *TXT(fx *f, vkl_expr e, char *buf, size_t cap) {
    vkl_expr_print(f->t, e, buf, cap);
    return buf;
}

static bool printed_as(fx *f, vkl_expr e, const char *want) {
    char buf[256];
    TXT(f, e, buf, sizeof buf);
    if (strcmp(buf, want) == 0) return true;
    fprintf(stderr, "  printed \"%s\", expected \"%s\"\n", buf, want);
    return false;
}

/* Evaluates with symbols bound by name: "N=3,M=4". */
static int64_t EV(fx *f, vkl_expr e, const char *binds) {
    int64_t values[16];
    for (int i = 0; i < 16; i++) values[i] = VKL_SYM_UNBOUND;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", binds);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        char *eq = strchr(tok, '=');
        *eq = '\0';
        size_t idx;
        if (vkl_symtab_find_symbol(f->t, tok, &idx) == VKL_OK && idx < 16) values[idx] = strtoll(eq + 1, NULL, 10);
    }
    int64_t out = INT64_MIN;
    CHECK_OK(f, vkl_expr_eval(f->ctx, f->t, e, values, 16, &out));
    return out;
}

static bool roundtrips(fx *f, vkl_expr e) {
    char buf[4096];
    size_t n = vkl_expr_print(f->t, e, buf, sizeof buf);
    if (n >= sizeof buf) return false;
    vkl_expr back;
    if (vkl_expr_parse(f->t, buf, &back) != VKL_OK) {
        fprintf(stderr, "  reparse of \"%s\" failed: %s\n", buf, vkl_context_error(f->ctx));
        return false;
    }
    if (back != e) {
        char b2[4096];
        fprintf(stderr, "  \"%s\" reparsed as \"%s\"\n", buf, TXT(f, back, b2, sizeof b2));
    }
    return back == e;
}

/* ---- basics ---- */

static void test_create_destroy(fx *f) {
    vkl_symtab *t = NULL;
    CHECK_OK(f, vkl_symtab_create(f->ctx, &t));
    CHECK(f, t != NULL);
    CHECK(f, vkl_symtab_context(t) == f->ctx);
    CHECK(f, vkl_symtab_symbol_count(t) == 0);
    CHECK(f, vkl_symtab_symbol_name(t, 0) == NULL);
    vkl_symtab_destroy(t);
    vkl_symtab_destroy(NULL);
    CHECK(f, vkl_symtab_create(NULL, &t) == VKL_ERR_INVALID_ARGUMENT);
    CHECK(f, vkl_symtab_create(f->ctx, NULL) == VKL_ERR_INVALID_ARGUMENT);
}

static void test_const_interning(fx *f) {
    CHECK(f, C(f, 5) == C(f, 5));
    CHECK(f, C(f, 5) != C(f, 6));
    int64_t v = 1;
    CHECK(f, vkl_expr_is_const(f->t, C(f, 0), &v) && v == 0);
    CHECK(f, vkl_expr_is_const(f->t, C(f, INT64_MIN), &v) && v == INT64_MIN);
    CHECK(f, vkl_expr_is_const(f->t, C(f, -3), NULL));
    CHECK(f, !vkl_expr_is_const(f->t, S(f, "N"), &v));
    CHECK(f, ADD(f, C(f, 2), C(f, 3)) == C(f, 5));
    CHECK(f, MUL(f, C(f, -4), C(f, 3)) == C(f, -12));
}

static void test_symbol_interning(fx *f) {
    size_t before = vkl_symtab_symbol_count(f->t), idx = 99;
    vkl_expr a = S(f, "fresh_sym"), b = S(f, "fresh_sym");
    CHECK(f, a == b);
    CHECK(f, vkl_symtab_symbol_count(f->t) == before + 1);
    CHECK_OK(f, vkl_symtab_find_symbol(f->t, "fresh_sym", &idx));
    CHECK(f, idx == before);
    CHECK(f, strcmp(vkl_symtab_symbol_name(f->t, idx), "fresh_sym") == 0);
    CHECK(f, vkl_symtab_find_symbol(f->t, "absent_sym", &idx) == VKL_ERR_NOT_FOUND);
    CHECK(f, vkl_expr_uses_symbol(f->t, a, before));
    CHECK(f, P(f, "fresh_sym") == a);
}

static void test_symbol_names_invalid(fx *f) {
    vkl_expr e;
    const char *bad[] = {"", "1a", "a-b", "a b", "é", "N+1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK(f, vkl_expr_symbol(f->t, bad[i], &e) == VKL_ERR_INVALID_ARGUMENT);
        CHECK_MSG(f, "invalid symbol name");
    }
    char name[80];
    memset(name, 'x', 63);
    name[63] = '\0';
    CHECK_OK(f, vkl_expr_symbol(f->t, name, &e));
    memset(name, 'y', 64);
    name[64] = '\0';
    CHECK(f, vkl_expr_symbol(f->t, name, &e) == VKL_ERR_INVALID_ARGUMENT);
    CHECK_MSG(f, "longer than 63");
    CHECK(f, vkl_expr_symbol(f->t, NULL, &e) == VKL_ERR_INVALID_ARGUMENT);
    CHECK_OK(f, vkl_expr_symbol(f->t, "_x9", &e));
    CHECK_OK(f, vkl_expr_symbol(f->t, "min", &e)); /* a plain name, not a call */
    CHECK(f, P(f, "min + 1") == ADD(f, e, C(f, 1)));
}

/* ---- the paper's examples ---- */

static void test_paper_reshape(fx *f) {
    vkl_expr N = S(f, "N");
    vkl_expr in = MUL(f, MUL(f, C(f, 1), N), C(f, 4096));                       /* [1, N, 4096] */
    vkl_expr known = MUL(f, MUL(f, C(f, 1), C(f, 32)), C(f, 128));              /* [1, -1, 32, 128] */
    vkl_expr dim = VKL_EXPR_INVALID;
    CHECK_OK(f, vkl_expr_div_exact(f->t, in, known, &dim));
    CHECK(f, dim == N);
    vkl_expr out = MUL(f, MUL(f, MUL(f, C(f, 1), dim), C(f, 32)), C(f, 128));
    CHECK(f, out == in);
    CHECK(f, MUL(f, N, C(f, 4096)) == MUL(f, MUL(f, N, C(f, 32)), C(f, 128)));
    CHECK(f, vkl_expr_compare(f->t, in, out) == VKL_SYM_EQ);
    vkl_expr q;
    CHECK_OK(f, vkl_expr_div_exact(f->t, MUL(f, N, C(f, 4096)), MUL(f, MUL(f, N, C(f, 32)), C(f, 128)), &q));
    CHECK(f, q == C(f, 1));
}

static void test_paper_concat(fx *f) {
    vkl_expr N = S(f, "N"), sumN = S(f, "sumN");
    vkl_expr first = SUB(f, sumN, N);
    CHECK(f, ADD(f, first, N) == sumN);
    CHECK(f, ADD(f, N, first) == sumN);
    CHECK(f, P(f, "sumN-N") == first);
    CHECK(f, P(f, "(sumN - N) + N") == sumN);
}

static void test_paper_unknown(fx *f) {
    vkl_expr a = P(f, "N*4096"), b = P(f, "sumN*256"), q;
    CHECK(f, vkl_expr_compare(f->t, a, b) == VKL_SYM_UNKNOWN);
    CHECK(f, vkl_expr_compare(f->t, b, a) == VKL_SYM_UNKNOWN);
    CHECK(f, !vkl_expr_divisible(f->t, a, b));
    CHECK(f, !vkl_expr_divisible(f->t, b, a));
    CHECK(f, vkl_expr_div_exact(f->t, a, b, &q) == VKL_ERR_SHAPE);
    CHECK_MSG(f, "4096*N");
    CHECK_MSG(f, "256*sumN");
    /* The paper's other wording: N*4096 vs sumN*2*128. */
    CHECK(f, P(f, "sumN*2*128") == b);
}

/* ---- algebra ---- */

static void test_commutativity(fx *f) {
    vkl_expr a = S(f, "a"), b = S(f, "b");
    CHECK(f, ADD(f, a, b) == ADD(f, b, a));
    CHECK(f, MUL(f, a, b) == MUL(f, b, a));
    CHECK(f, P(f, "b*a*3") == P(f, "3*a*b"));
    CHECK(f, P(f, "s0*s1") == P(f, "s1*s0"));
}

static void test_associativity(fx *f) {
    vkl_expr a = S(f, "a"), b = S(f, "b"), c = S(f, "c");
    CHECK(f, ADD(f, ADD(f, a, b), c) == ADD(f, a, ADD(f, b, c)));
    CHECK(f, MUL(f, MUL(f, a, b), c) == MUL(f, a, MUL(f, b, c)));
    CHECK(f, P(f, "(a + 1) + (b + 2)") == P(f, "a + (1 + b) + 2"));
}

static void test_distributivity(fx *f) {
    CHECK(f, P(f, "a*(b + c)") == P(f, "a*b + a*c"));
    CHECK(f, P(f, "(a + b)*(c + 2)") == P(f, "a*c + 2*a + b*c + 2*b"));
    CHECK(f, P(f, "(a + 1)*(a + 1)") == P(f, "a*a + 2*a + 1"));
    CHECK(f, P(f, "3*(a - b) + 3*b") == P(f, "3*a"));
}

static void test_self_subtraction(fx *f) {
    vkl_expr x = P(f, "a*b + 7*c - 2");
    CHECK(f, SUB(f, x, x) == C(f, 0));
    vkl_expr m = P(f, "min(a, b) // 3");
    CHECK(f, SUB(f, m, m) == C(f, 0));
    CHECK(f, P(f, "-(-a)") == S(f, "a"));
}

static void test_difference_of_squares(fx *f) {
    vkl_expr a = S(f, "a"), b = S(f, "b");
    vkl_expr lhs = MUL(f, ADD(f, a, b), SUB(f, a, b));
    vkl_expr rhs = SUB(f, MUL(f, a, a), MUL(f, b, b));
    CHECK(f, lhs == rhs);
}

static void test_coefficient_overflow(fx *f) {
    vkl_expr big = C(f, INT64_MAX), e;
    CHECK(f, vkl_expr_add(f->t, big, C(f, 1), &e) == VKL_ERR_OVERFLOW);
    CHECK_MSG(f, "overflows");
    vkl_expr n = MUL(f, S(f, "N"), big);
    CHECK(f, vkl_expr_mul(f->t, n, C(f, 2), &e) == VKL_ERR_OVERFLOW);
    CHECK(f, vkl_expr_sub(f->t, C(f, 0), MUL(f, S(f, "N"), C(f, INT64_MIN)), &e) == VKL_ERR_OVERFLOW);
    CHECK(f, vkl_expr_sub(f->t, C(f, INT64_MIN), C(f, 1), &e) == VKL_ERR_OVERFLOW);
    /* The table is still usable and consistent. */
    CHECK(f, ADD(f, n, C(f, 1)) == P(f, "9223372036854775807*N + 1"));
}

/* ---- floordiv / mod ---- */

static void test_floordiv_exact(fx *f) {
    vkl_expr N = S(f, "N");
    CHECK(f, FDIV(f, P(f, "8*N + 4"), 4) == P(f, "2*N + 1"));
    CHECK(f, FDIV(f, P(f, "6*N*M"), 3) == P(f, "2*N*M"));
    CHECK(f, FDIV(f, N, 1) == N);
    CHECK(f, P(f, "(8*N + 4) // 4") == P(f, "2*N + 1"));
}

static void test_mod_exact(fx *f) {
    CHECK(f, MOD(f, P(f, "8*N"), 4) == C(f, 0));
    CHECK(f, MOD(f, P(f, "8*N + 5"), 4) == C(f, 1));
    CHECK(f, MOD(f, S(f, "N"), 1) == C(f, 0));
    CHECK(f, MOD(f, P(f, "5*N"), 4) == MOD(f, S(f, "N"), 4));
}

static void test_mod_bound(fx *f) {
    vkl_expr m = MOD(f, S(f, "N"), 4);
    CHECK(f, vkl_expr_compare(f->t, m, C(f, 4)) == VKL_SYM_LT);
    CHECK(f, vkl_expr_compare(f->t, m, C(f, 3)) == VKL_SYM_LE);
    CHECK(f, vkl_expr_compare(f->t, m, C(f, 0)) == VKL_SYM_GE);
    CHECK(f, vkl_expr_compare(f->t, C(f, -1), m) == VKL_SYM_LT);
    CHECK(f, vkl_expr_compare(f->t, m, C(f, 2)) == VKL_SYM_UNKNOWN);
    CHECK(f, vkl_expr_compare(f->t, ADD(f, S(f, "N"), C(f, 4)), m) == VKL_SYM_GT);
}

static void test_floordiv_nested(fx *f) {
    vkl_expr N = S(f, "N");
    CHECK(f, FDIV(f, FDIV(f, N, 2), 3) == FDIV(f, N, 6));
    CHECK(f, FDIV(f, FDIV(f, P(f, "2*N"), 3), 2) == FDIV(f, N, 3));
    CHECK(f, P(f, "N // 2 // 3") == FDIV(f, N, 6));
}

static void test_floordiv_split(fx *f) {
    vkl_expr N = S(f, "N"), M = S(f, "M");
    CHECK(f, FDIV(f, P(f, "4*N + M"), 4) == ADD(f, N, FDIV(f, M, 4)));
    CHECK(f, FDIV(f, P(f, "N + 9"), 4) == ADD(f, FDIV(f, ADD(f, N, C(f, 1)), 4), C(f, 2)));
    CHECK(f, MOD(f, P(f, "4*N + M + 6"), 4) == MOD(f, ADD(f, M, C(f, 2)), 4));
    /* ceil-div written the Python way collapses to one atom */
    CHECK(f, P(f, "(N - 1) // 4 + 1") == P(f, "(N + 3) // 4"));
}

static void test_floordiv_gcd(fx *f) {
    vkl_expr N = S(f, "N");
    CHECK(f, FDIV(f, P(f, "2*N"), 4) == FDIV(f, N, 2));
    CHECK(f, MOD(f, P(f, "2*N"), 4) == MUL(f, C(f, 2), MOD(f, N, 2)));
    CHECK(f, FDIV(f, P(f, "6*N + 3"), 9) == FDIV(f, P(f, "2*N + 1"), 3));
}

static void test_mod_of_mod(fx *f) {
    vkl_expr N = S(f, "N");
    CHECK(f, MOD(f, MOD(f, N, 8), 4) == MOD(f, N, 4));
    CHECK(f, MOD(f, MOD(f, N, 4), 8) == MOD(f, N, 4));
    CHECK(f, MOD(f, MOD(f, N, 4), 3) != MOD(f, N, 3));
    CHECK(f, FDIV(f, MOD(f, N, 4), 4) == C(f, 0));
    CHECK(f, FDIV(f, ADD(f, MOD(f, N, 4), C(f, 8)), 4) == C(f, 2));
}

static void test_divisor_invalid(fx *f) {
    vkl_expr N = S(f, "N"), e;
    CHECK(f, vkl_expr_floordiv(f->t, N, 0, &e) == VKL_ERR_INVALID_ARGUMENT);
    CHECK_MSG(f, "positive");
    CHECK(f, vkl_expr_mod(f->t, N, -3, &e) == VKL_ERR_INVALID_ARGUMENT);
    CHECK(f, vkl_expr_floordiv(f->t, VKL_EXPR_INVALID, 2, &e) == VKL_ERR_INVALID_ARGUMENT);
}

static void test_python_floor_semantics(fx *f) {
    CHECK(f, FDIV(f, C(f, -7), 2) == C(f, -4));
    CHECK(f, MOD(f, C(f, -7), 2) == C(f, 1));
    CHECK(f, FDIV(f, C(f, 7), 2) == C(f, 3));
    CHECK(f, MOD(f, C(f, -8), 4) == C(f, 0));
    CHECK(f, FDIV(f, C(f, INT64_MIN), 3) == C(f, -3074457345618258603));
    CHECK(f, MOD(f, C(f, INT64_MIN), 3) == C(f, 1));
    CHECK(f, P(f, "-7 // 2") == C(f, -4));
    CHECK(f, P(f, "-7 % 2") == C(f, 1));
    vkl_expr e = P(f, "(N - 7) // 2"), m = P(f, "(N - 7) % 2");
    CHECK(f, EV(f, e, "N=0") == -4);
    CHECK(f, EV(f, m, "N=0") == 1);
    CHECK(f, EV(f, e, "N=8") == 0);
    CHECK(f, EV(f, P(f, "-N // 4"), "N=1") == -1);
}

/* ---- min / max ---- */

static void test_minmax_constants(fx *f) {
    CHECK(f, MIN(f, C(f, 3), C(f, -2)) == C(f, -2));
    CHECK(f, MAX(f, C(f, 3), C(f, -2)) == C(f, 3));
    CHECK(f, P(f, "max(4, 4)") == C(f, 4));
}

static void test_minmax_provable(fx *f) {
    vkl_expr N = S(f, "N");
    vkl_expr N1 = ADD(f, N, C(f, 1));
    CHECK(f, MIN(f, N, N1) == N);
    CHECK(f, MAX(f, N, N1) == N1);
    CHECK(f, MIN(f, N, C(f, 0)) == C(f, 0));
    CHECK(f, MAX(f, N, C(f, 0)) == N);
    CHECK(f, MAX(f, P(f, "2*N"), N) == P(f, "2*N"));
    CHECK(f, MIN(f, MOD(f, N, 4), C(f, 7)) == MOD(f, N, 4));
    CHECK(f, MIN(f, N, N) == N);
}

static void test_minmax_commutative(fx *f) {
    vkl_expr N = S(f, "N"), M = S(f, "M");
    vkl_expr a = MIN(f, N, M), b = MIN(f, M, N);
    CHECK(f, a == b);
    CHECK(f, MAX(f, N, M) == MAX(f, M, N));
    CHECK(f, MIN(f, N, M) != MAX(f, N, M));
    CHECK(f, P(f, "min(N + 1, M) + 0") == P(f, "min(M, 1 + N)"));
    CHECK(f, EV(f, a, "N=3,M=9") == 3);
    CHECK(f, EV(f, MAX(f, N, M), "N=3,M=9") == 9);
}

static void test_minmax_absorb(fx *f) {
    vkl_expr N = S(f, "N"), M = S(f, "M");
    vkl_expr mn = MIN(f, N, M), mx = MAX(f, N, M);
    CHECK(f, MIN(f, N, mn) == mn);
    CHECK(f, MIN(f, mn, M) == mn);
    CHECK(f, MAX(f, N, mn) == N);
    CHECK(f, MAX(f, mx, M) == mx);
    CHECK(f, MIN(f, N, mx) == N);
}

static void test_minmax_bounds(fx *f) {
    vkl_expr N = S(f, "N"), M = S(f, "M");
    CHECK(f, vkl_expr_compare(f->t, MIN(f, N, M), N) == VKL_SYM_LE);
    CHECK(f, vkl_expr_compare(f->t, MAX(f, N, M), C(f, 0)) == VKL_SYM_GE);
    CHECK(f, vkl_expr_compare(f->t, MAX(f, N, C(f, 1)), C(f, 0)) == VKL_SYM_GT);
    CHECK(f, vkl_expr_compare(f->t, MIN(f, N, C(f, 5)), C(f, 5)) == VKL_SYM_LE);
    CHECK(f, vkl_expr_compare(f->t, MIN(f, N, C(f, 5)), C(f, 6)) == VKL_SYM_LT);
}

/* ---- compare ---- */

static void test_compare_basic(fx *f) {
    vkl_expr N = S(f, "N"), M = S(f, "M");
    CHECK(f, vkl_expr_compare(f->t, N, ADD(f, N, C(f, 1))) == VKL_SYM_LT);
    CHECK(f, vkl_expr_compare(f->t, ADD(f, N, C(f, 1)), N) == VKL_SYM_GT);
    CHECK(f, vkl_expr_compare(f->t, MUL(f, C(f, 2), N), N) == VKL_SYM_GE);
    CHECK(f, vkl_expr_compare(f->t, N, MUL(f, C(f, 2), N)) == VKL_SYM_LE);
    CHECK(f, vkl_expr_compare(f->t, N, N) == VKL_SYM_EQ);
    CHECK(f, vkl_expr_compare(f->t, N, M) == VKL_SYM_UNKNOWN);
    CHECK(f, vkl_expr_compare(f->t, C(f, 3), C(f, 3)) == VKL_SYM_EQ);
    CHECK(f, vkl_expr_compare(f->t, C(f, 2), C(f, 3)) == VKL_SYM_LT);
    CHECK(f, vkl_expr_compare(f->t, P(f, "N*M + N + 1"), P(f, "N*M")) == VKL_SYM_GT);
    CHECK(f, vkl_expr_compare(f->t, P(f, "N - 1"), C(f, 0)) == VKL_SYM_UNKNOWN);
    CHECK(f, vkl_expr_compare(f->t, C(f, INT64_MIN), C(f, INT64_MAX)) == VKL_SYM_LT);
    CHECK(f, vkl_expr_compare(f->t, C(f, INT64_MAX), C(f, INT64_MIN)) == VKL_SYM_GT);
}

static void test_compare_floordiv(fx *f) {
    CHECK(f, vkl_expr_compare(f->t, P(f, "N // 4"), C(f, 0)) == VKL_SYM_GE);
    CHECK(f, vkl_expr_compare(f->t, P(f, "(N - 10) // 4"), C(f, 0)) == VKL_SYM_UNKNOWN);
    CHECK(f, vkl_expr_compare(f->t, P(f, "(N - 10) // 4"), C(f, -3)) == VKL_SYM_GE);
    CHECK(f, vkl_expr_compare(f->t, P(f, "(N + 3) // 4 + 1"), C(f, 0)) == VKL_SYM_GT);
    CHECK(f, vkl_expr_compare(f->t, P(f, "N*N"), C(f, 0)) == VKL_SYM_GE);
    CHECK(f, vkl_expr_compare(f->t, P(f, "-N*M - 1"), C(f, 0)) == VKL_SYM_LT);
}

/* ---- exact division ---- */

static void test_div_exact_constant(fx *f) {
    vkl_expr q;
    CHECK_OK(f, vkl_expr_div_exact(f->t, P(f, "6*N + 4"), C(f, 2), &q));
    CHECK(f, q == P(f, "3*N + 2"));
    CHECK_OK(f, vkl_expr_div_exact(f->t, P(f, "6*N + 4"), C(f, -2), &q));
    CHECK(f, q == P(f, "-3*N - 2"));
    CHECK(f, vkl_expr_div_exact(f->t, P(f, "6*N + 3"), C(f, 2), &q) == VKL_ERR_SHAPE);
    CHECK_MSG(f, "6*N + 3");
    CHECK(f, vkl_expr_div_exact(f->t, S(f, "N"), C(f, 0), &q) == VKL_ERR_SHAPE);
    CHECK_MSG(f, "by zero");
    CHECK_OK(f, vkl_expr_div_exact(f->t, C(f, 0), S(f, "N"), &q));
    CHECK(f, q == C(f, 0));
    CHECK(f, vkl_expr_div_exact(f->t, C(f, INT64_MIN), C(f, -1), &q) == VKL_ERR_OVERFLOW);
    CHECK(f, !vkl_expr_divisible(f->t, C(f, INT64_MIN), C(f, -1)));
}

static void test_div_exact_monomial(fx *f) {
    vkl_expr q;
    CHECK_OK(f, vkl_expr_div_exact(f->t, P(f, "B*S*H*D"), P(f, "B*S*D"), &q));
    CHECK(f, q == S(f, "H"));
    CHECK_OK(f, vkl_expr_div_exact(f->t, P(f, "N*4096"), P(f, "N*32"), &q));
    CHECK(f, q == C(f, 128));
    CHECK_OK(f, vkl_expr_div_exact(f->t, P(f, "6*N*N*M + 4*N*M"), P(f, "2*N*M"), &q));
    CHECK(f, q == P(f, "3*N + 2"));
    CHECK(f, vkl_expr_div_exact(f->t, P(f, "N*M"), P(f, "N*N"), &q) == VKL_ERR_SHAPE);
    CHECK(f, vkl_expr_div_exact(f->t, P(f, "N*M + 1"), S(f, "N"), &q) == VKL_ERR_SHAPE);
    CHECK_OK(f, vkl_expr_div_exact(f->t, P(f, "(N // 4)*M*4"), P(f, "N // 4"), &q));
    CHECK(f, q == P(f, "4*M"));
}

static void test_div_exact_polynomial(fx *f) {
    vkl_expr q;
    CHECK_OK(f, vkl_expr_div_exact(f->t, P(f, "(N + 1)*(M + 2)"), P(f, "N + 1"), &q));
    CHECK(f, q == P(f, "M + 2"));
    CHECK_OK(f, vkl_expr_div_exact(f->t, P(f, "N*N - 1"), P(f, "N - 1"), &q));
    CHECK(f, q == P(f, "N + 1"));
    CHECK_OK(f, vkl_expr_div_exact(f->t, P(f, "3*a + 3*b"), P(f, "a + b"), &q));
    CHECK(f, q == C(f, 3));
    CHECK_OK(f, vkl_expr_div_exact(f->t, P(f, "(a + b)*(a - b)*(c + 1)"), P(f, "(a - b)*(c + 1)"), &q));
    CHECK(f, q == P(f, "a + b"));
    CHECK(f, vkl_expr_div_exact(f->t, P(f, "N*N + 1"), P(f, "N + 1"), &q) == VKL_ERR_SHAPE);
    CHECK(f, vkl_expr_div_exact(f->t, P(f, "2*a + 3*b"), P(f, "a + b"), &q) == VKL_ERR_SHAPE);
    CHECK(f, P(f, "(N*N - 1) / (N + 1)") == P(f, "N - 1"));
}

static void test_divisible(fx *f) {
    CHECK(f, vkl_expr_divisible(f->t, P(f, "8*N"), C(f, 4)));
    CHECK(f, !vkl_expr_divisible(f->t, P(f, "8*N + 1"), C(f, 4)));
    CHECK(f, vkl_expr_divisible(f->t, P(f, "N*M*4096"), P(f, "N*32")));
    CHECK(f, !vkl_expr_divisible(f->t, S(f, "N"), C(f, 0)));
    CHECK(f, !vkl_expr_divisible(f->t, S(f, "N"), VKL_EXPR_INVALID));
    /* A query leaves the last error alone. */
    vkl_fail(f->ctx, VKL_ERR_IO, "sentinel message");
    CHECK(f, !vkl_expr_divisible(f->t, P(f, "N*M"), P(f, "N*N")));
    CHECK(f, !vkl_expr_divisible(f->t, P(f, "N*4096"), P(f, "sumN*256")));
    CHECK(f, strcmp(vkl_context_error(f->ctx), "sentinel message") == 0);
}

/* ---- evaluation ---- */

static void test_eval_basic(fx *f) {
    vkl_expr e = P(f, "32*N*seq + 4");
    CHECK(f, EV(f, e, "N=2,seq=10") == 644);
    CHECK(f, EV(f, P(f, "max(past, seq) // 3 + min(past, seq) % 4"), "past=10,seq=7") == 3 + 3);
    CHECK(f, EV(f, C(f, -5), "") == -5);
    int64_t out = 0;
    CHECK_OK(f, vkl_expr_eval(f->ctx, f->t, C(f, 7), NULL, 0, &out));
    CHECK(f, out == 7);
}

static void test_eval_unbound(fx *f) {
    vkl_expr e = P(f, "N + qq_unbound");
    size_t idx;
    CHECK_OK(f, vkl_symtab_find_symbol(f->t, "N", &idx));
    int64_t values[1] = {3}, out;
    CHECK(f, vkl_expr_eval(f->ctx, f->t, e, values, idx == 0 ? 1 : 0, &out) == VKL_ERR_NOT_FOUND);
    CHECK_MSG(f, "qq_unbound");
    int64_t all[64];
    for (int i = 0; i < 64; i++) all[i] = VKL_SYM_UNBOUND;
    CHECK(f, vkl_expr_eval(f->ctx, f->t, S(f, "N"), all, 64, &out) == VKL_ERR_NOT_FOUND);
    CHECK_MSG(f, "'N'");
}

static void test_eval_overflow(fx *f) {
    vkl_expr e = P(f, "N*N");
    size_t idx;
    CHECK_OK(f, vkl_symtab_find_symbol(f->t, "N", &idx));
    int64_t values[64], out;
    for (int i = 0; i < 64; i++) values[i] = 1;
    values[idx] = (int64_t)1 << 40;
    CHECK(f, vkl_expr_eval(f->ctx, f->t, e, values, 64, &out) == VKL_ERR_OVERFLOW);
    CHECK_MSG(f, "N*N");
    values[idx] = (int64_t)1 << 31;
    CHECK_OK(f, vkl_expr_eval(f->ctx, f->t, e, values, 64, &out));
    CHECK(f, out == (int64_t)1 << 62);
    values[idx] = INT64_MAX;
    CHECK(f, vkl_expr_eval(f->ctx, f->t, P(f, "N + 1"), values, 64, &out) == VKL_ERR_OVERFLOW);
}

static void test_eval_negative_binding(fx *f) {
    size_t idx;
    vkl_expr N = S(f, "N");
    CHECK_OK(f, vkl_symtab_find_symbol(f->t, "N", &idx));
    int64_t values[64], out;
    for (int i = 0; i < 64; i++) values[i] = 0;
    values[idx] = -3;
    CHECK(f, vkl_expr_eval(f->ctx, f->t, N, values, 64, &out) == VKL_ERR_INVALID_ARGUMENT);
    CHECK_MSG(f, "negative");
}

/* ---- parsing and printing ---- */

static void test_parse_forms(fx *f) {
    vkl_expr past = S(f, "past"), seq = S(f, "seq"), s0 = S(f, "s0"), s1 = S(f, "s1");
    CHECK(f, P(f, "past + seq") == ADD(f, past, seq));
    CHECK(f, P(f, "s0*s1") == MUL(f, s0, s1));
    CHECK(f, P(f, " \t2 *past+\n3 ") == ADD(f, MUL(f, C(f, 2), past), C(f, 3)));
    CHECK(f, P(f, "min(past, seq)") == MIN(f, past, seq));
    CHECK(f, P(f, "max ( past , seq )") == MAX(f, past, seq));
    CHECK(f, P(f, "past // 4") == FDIV(f, past, 4));
    CHECK(f, P(f, "past % 4") == MOD(f, past, 4));
    CHECK(f, P(f, "past*seq / seq") == past);
    CHECK(f, P(f, "-past") == MUL(f, C(f, -1), past));
    CHECK(f, P(f, "--past") == past);
    CHECK(f, P(f, "((past))") == past);
    CHECK(f, P(f, "0") == C(f, 0));
    CHECK(f, P(f, "-9223372036854775808") == C(f, INT64_MIN));
    CHECK(f, P(f, "9223372036854775807") == C(f, INT64_MAX));
    CHECK(f, P(f, "past // (2 + 2)") == FDIV(f, past, 4));
}

static void test_parse_precedence(fx *f) {
    vkl_expr N = S(f, "N");
    CHECK(f, P(f, "2 + 3*N") == ADD(f, C(f, 2), MUL(f, C(f, 3), N)));
    CHECK(f, P(f, "-N // 4") == FDIV(f, MUL(f, C(f, -1), N), 4));
    CHECK(f, P(f, "2*N // 4") == FDIV(f, MUL(f, C(f, 2), N), 4));
    CHECK(f, P(f, "N // 4*2") == MUL(f, FDIV(f, N, 4), C(f, 2)));
    CHECK(f, P(f, "N - N // 4") == SUB(f, N, FDIV(f, N, 4)));
    CHECK(f, P(f, "N - 2 - 3") == SUB(f, N, C(f, 5)));
    CHECK(f, P(f, "N % 3 * 2") == MUL(f, MOD(f, N, 3), C(f, 2)));
}

static void expect_parse_error(fx *f, int line, const char *text, vkl_status want, const char *needle) {
    vkl_expr e;
    vkl_status st = vkl_expr_parse(f->t, text, &e);
    f->checks++;
    if (st != want || !strstr(vkl_context_error(f->ctx), needle)) {
        fprintf(stderr, "%s:%d: parse(\"%.40s\") gave %s \"%s\", wanted %s with \"%s\"\n", __FILE__, line, text,
                vkl_status_name(st), vkl_context_error(f->ctx), vkl_status_name(want), needle);
        f->fails++;
    }
}

static void test_parse_errors(fx *f) {
    expect_parse_error(f, __LINE__, "N +", VKL_ERR_FORMAT, "offset 3");
    expect_parse_error(f, __LINE__, "3 // N", VKL_ERR_FORMAT, "offset 5");
    expect_parse_error(f, __LINE__, "3 // N", VKL_ERR_FORMAT, "constant divisor");
    expect_parse_error(f, __LINE__, "N % 0", VKL_ERR_FORMAT, "positive constant");
    expect_parse_error(f, __LINE__, "N // -2", VKL_ERR_FORMAT, "offset 5");
    expect_parse_error(f, __LINE__, "min(N)", VKL_ERR_FORMAT, "','");
    expect_parse_error(f, __LINE__, "min(N)", VKL_ERR_FORMAT, "offset 5");
    expect_parse_error(f, __LINE__, "min(N, M", VKL_ERR_FORMAT, "')'");
    expect_parse_error(f, __LINE__, "1N", VKL_ERR_FORMAT, "offset 1");
    expect_parse_error(f, __LINE__, "", VKL_ERR_FORMAT, "offset 0");
    expect_parse_error(f, __LINE__, "(N", VKL_ERR_FORMAT, "offset 2");
    expect_parse_error(f, __LINE__, "N)", VKL_ERR_FORMAT, "offset 1");
    expect_parse_error(f, __LINE__, "N $ 2", VKL_ERR_FORMAT, "offset 2");
    expect_parse_error(f, __LINE__, "foo(N, M)", VKL_ERR_FORMAT, "min or max");
    expect_parse_error(f, __LINE__, "N ** 2", VKL_ERR_FORMAT, "offset 3");
    expect_parse_error(f, __LINE__, "99999999999999999999", VKL_ERR_FORMAT, "int64");
    expect_parse_error(f, __LINE__, "-9223372036854775809", VKL_ERR_FORMAT, "int64");
    expect_parse_error(f, __LINE__, "N + 9223372036854775808", VKL_ERR_FORMAT, "offset 4");
    expect_parse_error(f, __LINE__,
                       "N + aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                       VKL_ERR_FORMAT, "at most 63");
    expect_parse_error(f, __LINE__, "N*M / (N*N)", VKL_ERR_SHAPE, "not provably divisible");
    expect_parse_error(f, __LINE__, "N*M / (N*N)", VKL_ERR_SHAPE, "offset 4");
    expect_parse_error(f, __LINE__, "9223372036854775807 + 1", VKL_ERR_OVERFLOW, "overflows");
    vkl_expr e;
    CHECK(f, vkl_expr_parse(f->t, NULL, &e) == VKL_ERR_INVALID_ARGUMENT);
    CHECK(f, vkl_expr_parse(f->t, "N", NULL) == VKL_ERR_INVALID_ARGUMENT);
}

static void test_parse_nesting_limit(fx *f) {
    char buf[2048];
    size_t n = 0;
    for (int i = 0; i < 100; i++) buf[n++] = '(';
    buf[n++] = 'N';
    for (int i = 0; i < 100; i++) buf[n++] = ')';
    buf[n] = '\0';
    CHECK(f, P(f, buf) == S(f, "N"));
    n = 0;
    for (int i = 0; i < 1000; i++) buf[n++] = '(';
    buf[n] = '\0';
    expect_parse_error(f, __LINE__, buf, VKL_ERR_FORMAT, "nested");
    n = 0;
    for (int i = 0; i < 1000; i++) buf[n++] = '-';
    buf[n++] = 'N';
    buf[n] = '\0';
    expect_parse_error(f, __LINE__, buf, VKL_ERR_FORMAT, "nested");
}

static void test_print_format(fx *f) {
    CHECK(f, printed_as(f, P(f, "4 + seq*N*32"), "32*N*seq + 4"));
    CHECK(f, printed_as(f, P(f, "sumN - N"), "-N + sumN"));
    CHECK(f, printed_as(f, P(f, "(N + 3) // 4"), "(N + 3) // 4"));
    CHECK(f, printed_as(f, P(f, "2*(N // 4)"), "2*(N // 4)"));
    CHECK(f, printed_as(f, P(f, "M - N % 4"), "M - N % 4"));
    CHECK(f, printed_as(f, P(f, "-(N % 4)"), "-(N % 4)"));
    CHECK(f, printed_as(f, P(f, "min(N, M)"), "min(M, N)"));
    CHECK(f, printed_as(f, P(f, "N*N*N - 1"), "N*N*N - 1"));
    CHECK(f, printed_as(f, C(f, -12), "-12"));
    CHECK(f, printed_as(f, C(f, 0), "0"));
    CHECK(f, printed_as(f, P(f, "1 - 3*N"), "-3*N + 1"));
    CHECK(f, printed_as(f, P(f, "-9223372036854775808*N - 1"), "-9223372036854775808*N - 1"));
    CHECK(f, printed_as(f, P(f, "N + -9223372036854775808*M"), "-9223372036854775808*M + N"));
}

static void test_print_truncation(fx *f) {
    vkl_expr e = P(f, "32*N*seq + 4");
    char buf[8];
    memset(buf, 'z', sizeof buf);
    size_t n = vkl_expr_print(f->t, e, buf, sizeof buf);
    CHECK(f, n == strlen("32*N*seq + 4"));
    CHECK(f, strcmp(buf, "32*N*se") == 0);
    CHECK(f, vkl_expr_print(f->t, e, NULL, 0) == n);
    CHECK(f, vkl_expr_print(f->t, e, buf, 1) == n && buf[0] == '\0');
    char big[64];
    CHECK(f, vkl_expr_print(f->t, VKL_EXPR_INVALID, big, sizeof big) > 0);
    CHECK(f, strstr(big, "invalid") != NULL);
}

static void test_print_roundtrip(fx *f) {
    const char *cases[] = {
        "0", "1", "-1", "N", "-N", "2*N", "-2*N + 3", "N*M", "N*N*M - 5*M + 7",
        "(N + 3) // 4", "(2*N + 1) // 4", "N // 2 // 3", "2*(N // 4)", "-(N // 4)", "M - N // 4",
        "(N // 2)*(N // 2)", "(N*M + 1) % 7", "3*(N % 5)*M", "min(N, M)", "max(N - 1, M)",
        "min(N, M) // 3", "-min(N, M)", "max(min(a, b), c) + 1", "(max(a, b) + c) % 4",
        "((N // 3)*M + N) // 5", "-9223372036854775808", "9223372036854775807*N",
        "-9223372036854775808*N*M + 3", "N + -9223372036854775808*M", "(-N) // 4",
        "-(N % 3) + M % 3", "min(N // 2, M % 3)", "(N - 1) // 4 + 1", "min(N - 5, 3)",
        "max(-N, -M)", "(N + M) // 2 * 2", "N*(M // 3)*(M // 3)", "((N % 8) // 2) % 3",
        "max(N*M, N + M) // 7 - min(a, b)",
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        vkl_expr e = P(f, cases[i]);
        f->checks++;
        if (!roundtrips(f, e)) {
            fprintf(stderr, "%s:%d: round trip of \"%s\" failed\n", __FILE__, __LINE__, cases[i]);
            f->fails++;
        }
    }
}

static void test_uses_symbol(fx *f) {
    vkl_expr e = P(f, "min(u1, 3) // 2 + u2*u2");
    size_t i1, i2, i3;
    S(f, "u3");
    CHECK_OK(f, vkl_symtab_find_symbol(f->t, "u1", &i1));
    CHECK_OK(f, vkl_symtab_find_symbol(f->t, "u2", &i2));
    CHECK_OK(f, vkl_symtab_find_symbol(f->t, "u3", &i3));
    CHECK(f, vkl_expr_uses_symbol(f->t, e, i1));
    CHECK(f, vkl_expr_uses_symbol(f->t, e, i2));
    CHECK(f, !vkl_expr_uses_symbol(f->t, e, i3));
    CHECK(f, !vkl_expr_uses_symbol(f->t, e, 100000));
    CHECK(f, !vkl_expr_uses_symbol(f->t, P(f, "u1 - u1"), i1));
}

static void test_invalid_handles(fx *f) {
    vkl_expr N = S(f, "N"), e, bad = VKL_EXPR_INVALID, bad2 = 0x7fffffff;
    CHECK(f, vkl_expr_add(f->t, N, bad, &e) == VKL_ERR_INVALID_ARGUMENT);
    CHECK_MSG(f, "invalid expression handle");
    CHECK(f, vkl_expr_mul(f->t, bad2, N, &e) == VKL_ERR_INVALID_ARGUMENT);
    CHECK(f, vkl_expr_min(f->t, bad2, N, &e) == VKL_ERR_INVALID_ARGUMENT);
    CHECK(f, vkl_expr_div_exact(f->t, N, bad2, &e) == VKL_ERR_INVALID_ARGUMENT);
    CHECK(f, vkl_expr_add(f->t, N, N, NULL) == VKL_ERR_INVALID_ARGUMENT);
    CHECK(f, vkl_expr_add(NULL, N, N, &e) == VKL_ERR_INVALID_ARGUMENT);
    CHECK(f, vkl_expr_compare(f->t, N, bad) == VKL_SYM_UNKNOWN);
    CHECK(f, !vkl_expr_is_const(f->t, bad, NULL));
    int64_t out;
    CHECK(f, vkl_expr_eval(f->ctx, f->t, bad, NULL, 0, &out) == VKL_ERR_INVALID_ARGUMENT);
}

static void test_exponents(fx *f) {
    vkl_expr N = S(f, "N"), p = N;
    for (int i = 0; i < 10; i++) p = MUL(f, p, p); /* N^1024 */
    CHECK(f, EV(f, p, "N=1") == 1);
    CHECK(f, EV(f, p, "N=0") == 0);
    vkl_expr q;
    CHECK_OK(f, vkl_expr_div_exact(f->t, p, MUL(f, N, N), &q));
    CHECK(f, vkl_expr_compare(f->t, p, C(f, 0)) == VKL_SYM_GE);
    vkl_expr e;
    vkl_status st = VKL_OK;
    for (int i = 0; i < 20 && !st; i++) st = vkl_expr_mul(f->t, p, p, &e), p = st ? p : e;
    CHECK(f, st == VKL_ERR_OVERFLOW); /* exponents are capped, not wrapped */
}

static void test_depth_limit(fx *f) {
    vkl_expr x = S(f, "d_base"), e;
    vkl_status st = VKL_OK;
    int made = 0;
    for (int i = 0; i < 200 && !st; i++) {
        char name[32];
        snprintf(name, sizeof name, "d%d", i);
        vkl_expr s = S(f, name);
        st = vkl_expr_min(f->t, x, s, &e);
        if (!st) x = e, made++;
    }
    CHECK(f, st == VKL_ERR_UNSUPPORTED);
    CHECK_MSG(f, "nested");
    CHECK(f, made >= 100);
    CHECK(f, roundtrips(f, x));
    int64_t values[256], out;
    for (int i = 0; i < 256; i++) values[i] = 5;
    CHECK_OK(f, vkl_expr_eval(f->ctx, f->t, x, values, 256, &out));
    CHECK(f, out == 5);
}

static void test_many_expressions(fx *f) {
    vkl_expr N = S(f, "N"), M = S(f, "M"), e;
    enum { COUNT = 200000 };
    vkl_expr *first = malloc(COUNT * sizeof *first);
    if (!first) return;
    vkl_status st = VKL_OK;
    for (int i = 0; i < COUNT && !st; i++) {
        vkl_expr k;
        st = vkl_expr_const(f->t, i, &k);
        if (!st) st = vkl_expr_mul(f->t, k, N, &e);
        if (!st) st = vkl_expr_add(f->t, e, M, &first[i]);
    }
    CHECK_OK(f, st);
    int same = 0;
    for (int i = 0; i < COUNT && !st; i += 7) {
        char text[64];
        snprintf(text, sizeof text, "M + N*%d", i);
        same += P(f, text) == first[i];
    }
    CHECK(f, same == (COUNT + 6) / 7);
    free(first);
}

/* ---- allocation failure ---- */

typedef struct failing {
    long remaining; /* allocations left before every one fails */
} failing;

static void *fail_malloc(void *user, size_t size) {
    failing *fa = user;
    if (fa->remaining <= 0) return NULL;
    fa->remaining--;
    return malloc(size);
}
static void *fail_realloc(void *user, void *p, size_t size) {
    failing *fa = user;
    if (fa->remaining <= 0) return NULL;
    fa->remaining--;
    return realloc(p, size);
}
static void fail_free(void *user, void *p) {
    (void)user;
    free(p);
}

static const char *const workload[] = {
    "32*N*seq + 4", "(sumN - N) + N", "(N + 3) // 4 * M", "min(N, M) % 5 + max(a, b)", "(N*N - 1) / (N - 1)",
    "(a + b + c + d)*(a - b + 2*c - d)*(e + f + 1)", "((N // 3)*M + N) // 5 - (N*M) % 7",
};

static vkl_status run_workload(vkl_symtab *t, char out[][128]) {
    for (size_t i = 0; i < sizeof workload / sizeof *workload; i++) {
        vkl_expr e, q;
        vkl_status st = vkl_expr_parse(t, workload[i], &e);
        if (!st) st = vkl_expr_div_exact(t, e, e, &q);
        if (st) return st;
        (void)vkl_expr_divisible(t, e, e);
        vkl_expr_print(t, e, out[i], 128);
    }
    return VKL_OK;
}

static void test_out_of_memory(fx *f) {
    enum { W = sizeof workload / sizeof *workload };
    char want[W][128], got[W][128];
    vkl_symtab *ref;
    CHECK_OK(f, vkl_symtab_create(f->ctx, &ref));
    CHECK_OK(f, run_workload(ref, want));
    vkl_symtab_destroy(ref);
    failing fa = {1L << 30};
    vkl_context_options opt;
    vkl_context_options_init(&opt);
    opt.allocator = (vkl_allocator){&fa, fail_malloc, fail_realloc, fail_free};
    vkl_context *ctx;
    if (vkl_context_create(&opt, &ctx)) return;
    int hit = 0;
    for (long budget = 0; budget < 5000; budget++) {
        vkl_symtab *t = NULL;
        fa.remaining = budget;
        vkl_status st = vkl_symtab_create(ctx, &t);
        if (!st) st = run_workload(t, got);
        bool exhausted = fa.remaining <= 0;
        fa.remaining = 1L << 30;
        if (st) {
            hit++;
            f->checks++;
            if (st != VKL_ERR_OUT_OF_MEMORY) {
                fprintf(stderr, "%s:%d: budget %ld gave %s: %s\n", __FILE__, __LINE__, budget, vkl_status_name(st),
                        vkl_context_error(ctx));
                f->fails++;
            }
            if (t) { /* the table must still work after the failure */
                CHECK(f, run_workload(t, got) == VKL_OK);
                for (int i = 0; i < W; i++) CHECK(f, strcmp(got[i], want[i]) == 0);
            }
        } else {
            for (int i = 0; i < W; i++) CHECK(f, strcmp(got[i], want[i]) == 0);
        }
        vkl_symtab_destroy(t);
        if (!st && !exhausted) break;
    }
    CHECK(f, hit > 20);
    vkl_context_destroy(ctx);
}

/* ---- randomized oracle ---- */

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rnext(rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static int rint_(rng *r, int n) { return (int)(rnext(r) % (uint64_t)n); }

enum { R_CONST, R_SYM, R_ADD, R_SUB, R_MUL, R_FDIV, R_MOD, R_MIN, R_MAX, R_NEG };
enum { NSYM = 4, NODES_MAX = 1 << 16 };

typedef struct rnode {
    int op;
    int64_t c; /* constant, symbol index or divisor */
    int a, b;
} rnode;

typedef struct rtree {
    rnode n[NODES_MAX];
    int count;
} rtree;

static int rgen(rtree *t, rng *r, int depth) {
    if (t->count >= NODES_MAX) { /* trees are tiny and the pool is recycled: a bug here */
        fprintf(stderr, "%s:%d: random tree pool exhausted\n", __FILE__, __LINE__);
        exit(1);
    }
    int op = depth <= 0 ? rint_(r, 2) : rint_(r, 10);
    int id = t->count++;
    rnode *n = &t->n[id];
    n->op = op;
    n->a = n->b = -1;
    switch (op) {
    case R_CONST: n->c = rint_(r, 11) - 5; break;
    case R_SYM: n->c = rint_(r, NSYM); break;
    case R_FDIV:
    case R_MOD: n->c = 1 + rint_(r, 6); /* fall through */
    case R_NEG: n->a = rgen(t, r, depth - 1); break;
    default:
        n->a = rgen(t, r, depth - 1);
        t->n[id].b = rgen(t, r, depth - 1);
        break;
    }
    return id;
}

/* Reference semantics; false on overflow. */
static bool reval(const rtree *t, int id, const int64_t *v, int64_t *out) {
    const rnode *n = &t->n[id];
    int64_t a = 0, b = 0;
    if (n->op == R_CONST) return *out = n->c, true;
    if (n->op == R_SYM) return *out = v[n->c], true;
    if (!reval(t, n->a, v, &a)) return false;
    if (n->b >= 0 && !reval(t, n->b, v, &b)) return false;
    switch (n->op) {
    case R_ADD: return !__builtin_add_overflow(a, b, out);
    case R_SUB: return !__builtin_sub_overflow(a, b, out);
    case R_MUL: return !__builtin_mul_overflow(a, b, out);
    case R_NEG: return !__builtin_sub_overflow(0, a, out);
    case R_FDIV: *out = a / n->c - (a % n->c < 0); return true;
    case R_MOD: *out = a % n->c + (a % n->c < 0 ? n->c : 0); return true;
    case R_MIN: *out = a < b ? a : b; return true;
    case R_MAX: *out = a > b ? a : b; return true;
    }
    return false;
}

typedef struct rbuild {
    vkl_symtab *t;
    const rtree *tree;
    vkl_expr syms[NSYM];
} rbuild;

/* Builds node id directly (variant 0) or through an algebraically equal but
 * differently ordered construction (variant 1). */
static vkl_status rbuild_expr(rbuild *b, int id, int variant, vkl_expr *out) {
    const rnode *n = &b->tree->n[id];
    vkl_symtab *t = b->t;
    vkl_expr x, y, z, m1;
    vkl_status st;
    if (n->op == R_CONST) return vkl_expr_const(t, n->c, out);
    if (n->op == R_SYM) return *out = b->syms[n->c], VKL_OK;
    if ((st = rbuild_expr(b, n->a, variant, &x))) return st;
    if (n->op == R_NEG) {
        if (!variant) {
            if ((st = vkl_expr_const(t, 0, &z))) return st;
            return vkl_expr_sub(t, z, x, out);
        }
        if ((st = vkl_expr_const(t, -1, &m1))) return st;
        return vkl_expr_mul(t, x, m1, out);
    }
    if (n->op == R_FDIV) return vkl_expr_floordiv(t, x, n->c, out);
    if (n->op == R_MOD) return vkl_expr_mod(t, x, n->c, out);
    const rnode *bn = &b->tree->n[n->b];
    if (variant && n->op == R_MUL && bn->op == R_ADD) { /* x*(p + q) = x*p + x*q */
        vkl_expr p, q;
        if ((st = rbuild_expr(b, bn->a, variant, &p)) || (st = rbuild_expr(b, bn->b, variant, &q))) return st;
        if ((st = vkl_expr_mul(t, p, x, &p)) || (st = vkl_expr_mul(t, x, q, &q))) return st;
        return vkl_expr_add(t, q, p, out);
    }
    if ((st = rbuild_expr(b, n->b, variant, &y))) return st;
    if (variant) {
        vkl_expr s = x;
        x = y;
        y = s;
    }
    switch (n->op) {
    case R_ADD: return vkl_expr_add(t, x, y, out);
    case R_SUB:
        if (!variant) return vkl_expr_sub(t, x, y, out);
        /* x and y are swapped: original is y - x == (-1)*x + y */
        if ((st = vkl_expr_const(t, -1, &m1)) || (st = vkl_expr_mul(t, m1, x, &z))) return st;
        return vkl_expr_add(t, z, y, out);
    case R_MUL: return vkl_expr_mul(t, x, y, out);
    case R_MIN: return vkl_expr_min(t, x, y, out);
    case R_MAX: return vkl_expr_max(t, x, y, out);
    }
    return VKL_ERR_INTERNAL;
}

enum { RAND_EXPRS = 3000, RAND_BINDINGS = 200 };

typedef struct rcase {
    vkl_expr e;
    int root;
    bool ok[RAND_BINDINGS];
    int64_t val[RAND_BINDINGS]; /* reference values */
} rcase;

static const char *order_name(vkl_sym_order o) {
    static const char *const n[] = {"UNKNOWN", "EQ", "LT", "LE", "GT", "GE"};
    return n[o];
}

static bool order_holds(vkl_sym_order o, int64_t a, int64_t b) {
    switch (o) {
    case VKL_SYM_EQ: return a == b;
    case VKL_SYM_LT: return a < b;
    case VKL_SYM_LE: return a <= b;
    case VKL_SYM_GT: return a > b;
    case VKL_SYM_GE: return a >= b;
    default: return true;
    }
}

static void check_pair(fx *f, const rcase *x, const rcase *y, int *claims) {
    vkl_sym_order o = vkl_expr_compare(f->t, x->e, y->e);
    if (o != VKL_SYM_UNKNOWN) ++*claims;
    bool div = vkl_expr_divisible(f->t, x->e, y->e);
    vkl_expr q = VKL_EXPR_INVALID;
    if (div) CHECK_OK(f, vkl_expr_div_exact(f->t, x->e, y->e, &q));
    for (int k = 0; k < RAND_BINDINGS; k++) {
        if (!x->ok[k] || !y->ok[k]) continue;
        f->checks++;
        bool good = order_holds(o, x->val[k], y->val[k]);
        if (div && y->val[k] != 0) good = good && x->val[k] % y->val[k] == 0;
        if (!good) {
            char a[256], b[256];
            fprintf(stderr, "%s:%d: compare '%s' vs '%s' claimed %s (divisible %d) but values are %" PRId64 ", %" PRId64 "\n",
                    __FILE__, __LINE__, TXT(f, x->e, a, sizeof a), TXT(f, y->e, b, sizeof b), order_name(o), div,
                    x->val[k], y->val[k]);
            f->fails++;
            return;
        }
    }
}

static void test_random(fx *f) {
    rng r = {12345};
    rtree *tree = malloc(sizeof *tree);
    rcase *cases = malloc(RAND_EXPRS * sizeof *cases);
    int64_t (*binds)[NSYM] = malloc(RAND_BINDINGS * sizeof *binds);
    if (!tree || !cases || !binds) {
        free(tree), free(cases), free(binds);
        f->fails++;
        return;
    }
    rbuild b = {f->t, tree, {0}};
    const char *names[NSYM] = {"ra", "rb", "rc", "rd"};
    size_t idx[NSYM];
    for (int i = 0; i < NSYM; i++) {
        b.syms[i] = S(f, names[i]);
        CHECK_OK(f, vkl_symtab_find_symbol(f->t, names[i], &idx[i]));
    }
    for (int k = 0; k < RAND_BINDINGS; k++)
        for (int i = 0; i < NSYM; i++) binds[k][i] = rint_(&r, 51);
    size_t nvals = vkl_symtab_symbol_count(f->t);
    int64_t *values = malloc(nvals * sizeof *values);
    tree->count = 0;
    int made = 0, equal = 0, evals = 0, claims = 0;
    for (int i = 0; i < RAND_EXPRS; i++) {
        if (tree->count > NODES_MAX - 4096) tree->count = 0; /* old cases keep only values */
        int root = rgen(tree, &r, 1 + rint_(&r, 4));
        vkl_expr e0, e1;
        vkl_status s0 = rbuild_expr(&b, root, 0, &e0), s1 = rbuild_expr(&b, root, 1, &e1);
        if (s0 || s1) continue; /* expansion too large or coefficient overflow */
        rcase *c = &cases[made++];
        c->e = e0;
        c->root = root;
        f->checks++;
        if (e0 != e1) {
            char a[512], bb[512];
            fprintf(stderr, "%s:%d: equivalent builds differ: '%s' vs '%s'\n", __FILE__, __LINE__,
                    TXT(f, e0, a, sizeof a), TXT(f, e1, bb, sizeof bb));
            f->fails++;
        } else {
            equal++;
        }
        f->checks++;
        if (!roundtrips(f, e0)) {
            fprintf(stderr, "%s:%d: round trip failed\n", __FILE__, __LINE__);
            f->fails++;
        }
        for (int k = 0; k < RAND_BINDINGS; k++) {
            for (size_t s = 0; s < nvals; s++) values[s] = VKL_SYM_UNBOUND;
            for (int s = 0; s < NSYM; s++) values[idx[s]] = binds[k][s];
            int64_t want, got;
            c->ok[k] = reval(tree, root, binds[k], &want);
            c->val[k] = want;
            if (!c->ok[k]) continue;
            vkl_status st = vkl_expr_eval(f->ctx, f->t, e0, values, nvals, &got);
            if (st == VKL_ERR_OVERFLOW) { /* canonical expansion may overflow where the tree does not */
                c->ok[k] = false;
                continue;
            }
            evals++;
            f->checks++;
            if (st != VKL_OK || got != want) {
                char a[512];
                fprintf(stderr, "%s:%d: '%s' at ra=%" PRId64 " rb=%" PRId64 " rc=%" PRId64 " rd=%" PRId64
                                " gave %" PRId64 " (%s), reference %" PRId64 "\n",
                        __FILE__, __LINE__, TXT(f, e0, a, sizeof a), binds[k][0], binds[k][1], binds[k][2],
                        binds[k][3], got, vkl_status_name(st), want);
                f->fails++;
                break;
            }
        }
    }
    /* Random pairs, plus pairs built to be ordered, exercise compare/divisible. */
    for (int i = 0; i + 1 < made; i++) {
        check_pair(f, &cases[i], &cases[i + 1], &claims);
        check_pair(f, &cases[i], &cases[rint_(&r, made)], &claims);
    }
    for (int i = 0; i < made; i++) {
        rcase d = cases[i], *c = &cases[i];
        vkl_expr other = cases[rint_(&r, made)].e, k = C(f, rint_(&r, 7) - 3);
        vkl_expr cands[4];
        int nc = 0;
        if (vkl_expr_add(f->t, c->e, k, &cands[nc]) == VKL_OK) nc++;
        if (vkl_expr_min(f->t, c->e, other, &cands[nc]) == VKL_OK) nc++;
        if (vkl_expr_max(f->t, c->e, other, &cands[nc]) == VKL_OK) nc++;
        if (vkl_expr_mul(f->t, c->e, c->e, &cands[nc]) == VKL_OK) nc++;
        for (int j = 0; j < nc; j++) {
            d.e = cands[j];
            for (int kk = 0; kk < RAND_BINDINGS; kk++) {
                for (size_t s = 0; s < nvals; s++) values[s] = VKL_SYM_UNBOUND;
                for (int s = 0; s < NSYM; s++) values[idx[s]] = binds[kk][s];
                d.ok[kk] = c->ok[kk] && vkl_expr_eval(f->ctx, f->t, d.e, values, nvals, &d.val[kk]) == VKL_OK;
            }
            check_pair(f, c, &d, &claims);
        }
    }
    printf("random: %d expressions, %d equal builds, %d evaluations, %d compare claims\n", made, equal, evals,
           claims);
    CHECK(f, made >= RAND_EXPRS * 9 / 10);
    CHECK(f, evals >= made * RAND_BINDINGS / 2);
    CHECK(f, claims >= made);
    free(values);
    free(tree);
    free(cases);
    free(binds);
}

/* Token soup: the parser must fail cleanly or produce a round-trippable expression. */
static void test_parse_token_soup(fx *f) {
    static const char *const tok[] = {"N",  "M",   "7",   "0",   "-",  "+", "*", "//", "%", "/", "(",
                                      ")",  ",",   "min", "max", " ",  "x_1", "9223372036854775807", "$", "3"};
    rng r = {777};
    int parsed = 0;
    for (int i = 0; i < 20000; i++) {
        char buf[512];
        size_t n = 0;
        int len = 1 + rint_(&r, 24);
        for (int k = 0; k < len; k++) {
            const char *t = tok[rint_(&r, (int)(sizeof tok / sizeof *tok))];
            size_t tl = strlen(t);
            memcpy(buf + n, t, tl);
            n += tl;
        }
        buf[n] = '\0';
        vkl_expr e;
        vkl_status st = vkl_expr_parse(f->t, buf, &e);
        f->checks++;
        if (st == VKL_OK) {
            parsed++;
            if (!roundtrips(f, e)) {
                fprintf(stderr, "%s:%d: \"%s\" does not round trip\n", __FILE__, __LINE__, buf);
                f->fails++;
            }
        } else if (st != VKL_ERR_FORMAT && st != VKL_ERR_SHAPE && st != VKL_ERR_OVERFLOW &&
                   st != VKL_ERR_UNSUPPORTED) {
            fprintf(stderr, "%s:%d: \"%s\" gave %s\n", __FILE__, __LINE__, buf, vkl_status_name(st));
            f->fails++;
        } else if (!vkl_context_error(f->ctx)[0]) {
            fprintf(stderr, "%s:%d: \"%s\" failed without a message\n", __FILE__, __LINE__, buf);
            f->fails++;
        }
    }
    CHECK(f, parsed > 500);
}

/* ---- driver ---- */

typedef struct test_case {
    const char *name;
    void (*fn)(fx *);
} test_case;

#define T(name) {#name, name}

int main(void) {
    static const test_case tests[] = {
        T(test_create_destroy),        T(test_const_interning),     T(test_symbol_interning),
        T(test_symbol_names_invalid),  T(test_paper_reshape),       T(test_paper_concat),
        T(test_paper_unknown),         T(test_commutativity),       T(test_associativity),
        T(test_distributivity),        T(test_self_subtraction),    T(test_difference_of_squares),
        T(test_coefficient_overflow),  T(test_floordiv_exact),      T(test_mod_exact),
        T(test_mod_bound),             T(test_floordiv_nested),     T(test_floordiv_split),
        T(test_floordiv_gcd),          T(test_mod_of_mod),          T(test_divisor_invalid),
        T(test_python_floor_semantics), T(test_minmax_constants),   T(test_minmax_provable),
        T(test_minmax_commutative),    T(test_minmax_absorb),       T(test_minmax_bounds),
        T(test_compare_basic),         T(test_compare_floordiv),    T(test_div_exact_constant),
        T(test_div_exact_monomial),    T(test_div_exact_polynomial), T(test_divisible),
        T(test_eval_basic),            T(test_eval_unbound),        T(test_eval_overflow),
        T(test_eval_negative_binding), T(test_parse_forms),         T(test_parse_precedence),
        T(test_parse_errors),          T(test_parse_nesting_limit), T(test_print_format),
        T(test_print_truncation),      T(test_print_roundtrip),     T(test_uses_symbol),
        T(test_invalid_handles),       T(test_exponents),           T(test_depth_limit),
        T(test_many_expressions),      T(test_out_of_memory),       T(test_random),
        T(test_parse_token_soup),
    };
    int failed_tests = 0, checks = 0;
    for (size_t i = 0; i < sizeof tests / sizeof *tests; i++) {
        fx f = {0};
        if (vkl_context_create(NULL, &f.ctx) || vkl_symtab_create(f.ctx, &f.t)) {
            fprintf(stderr, "%s: setup failed\n", tests[i].name);
            return 1;
        }
        tests[i].fn(&f);
        if (f.fails) {
            fprintf(stderr, "FAIL %s (%d of %d checks)\n", tests[i].name, f.fails, f.checks);
            failed_tests++;
        }
        checks += f.checks;
        vkl_symtab_destroy(f.t);
        vkl_context_destroy(f.ctx);
    }
    printf("%zu tests, %d checks, %d failed tests\n", sizeof tests / sizeof *tests, checks, failed_tests);
    return failed_tests ? 1 : 0;
}
