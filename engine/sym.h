/* Symbolic integer expressions over named symbols (Transformer-Lite §2.1).
 *
 * Every expression is kept in one canonical form — a sum of monomials with
 * int64 coefficients, each monomial a product of atoms with positive
 * exponents; an atom is a symbol or an opaque term floordiv(e, c), mod(e, c),
 * min(a, b), max(a, b) — and interned in its table. So two expressions are
 * equal for all symbol values that the algebra can show equal (N*4096 and
 * N*32*128; (sumN - N) + N and sumN) exactly when their handles are equal.
 *
 * Symbols stand for non-negative integers (dims, lengths). Handles are only
 * meaningful within the table that made them. A table is not thread-safe. */
#ifndef VKL_SYM_H
#define VKL_SYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vkllm.h"

typedef struct vkl_symtab vkl_symtab;
typedef uint32_t vkl_expr; /* handle into a vkl_symtab */

#define VKL_EXPR_INVALID ((vkl_expr)UINT32_MAX)
#define VKL_SYM_UNBOUND INT64_MIN /* a binding slot with no value */
#define VKL_SYM_NAME_MAX 63       /* longest symbol name, bytes */

vkl_status vkl_symtab_create(vkl_context *ctx, vkl_symtab **out);
void vkl_symtab_destroy(vkl_symtab *t);
vkl_context *vkl_symtab_context(const vkl_symtab *t);

/* Symbols are numbered 0..count-1 in creation order; a binding is an int64
 * array indexed by that number. */
size_t vkl_symtab_symbol_count(const vkl_symtab *t);
const char *vkl_symtab_symbol_name(const vkl_symtab *t, size_t index);
/* Index of an existing symbol, or VKL_ERR_NOT_FOUND (no message set). */
vkl_status vkl_symtab_find_symbol(const vkl_symtab *t, const char *name, size_t *index);

/* Constructors. All return a canonical, interned handle. Failures (bad name,
 * out of memory, coefficient overflow, division by a non-positive constant)
 * set the context error and return a status. */
vkl_status vkl_expr_const(vkl_symtab *t, int64_t value, vkl_expr *out);
/* Creates the symbol on first use. Names are C identifiers, at most
 * VKL_SYM_NAME_MAX bytes. */
vkl_status vkl_expr_symbol(vkl_symtab *t, const char *name, vkl_expr *out);
vkl_status vkl_expr_add(vkl_symtab *t, vkl_expr a, vkl_expr b, vkl_expr *out);
vkl_status vkl_expr_sub(vkl_symtab *t, vkl_expr a, vkl_expr b, vkl_expr *out);
vkl_status vkl_expr_mul(vkl_symtab *t, vkl_expr a, vkl_expr b, vkl_expr *out);
/* Floor division and floor modulo (Python semantics) by a positive constant.
 * Exact cases simplify: (8*N + 4) floordiv 4 == 2*N + 1, (8*N) mod 4 == 0,
 * constants fold; otherwise the result is an opaque atom. */
vkl_status vkl_expr_floordiv(vkl_symtab *t, vkl_expr a, int64_t divisor, vkl_expr *out);
vkl_status vkl_expr_mod(vkl_symtab *t, vkl_expr a, int64_t divisor, vkl_expr *out);
/* min/max simplify when the order is provable (min(N, N+1) == N), and fold
 * constants; otherwise an opaque atom with operands in canonical order. */
vkl_status vkl_expr_min(vkl_symtab *t, vkl_expr a, vkl_expr b, vkl_expr *out);
vkl_status vkl_expr_max(vkl_symtab *t, vkl_expr a, vkl_expr b, vkl_expr *out);
/* Exact division by an expression: succeeds when a == q * b provably, with q
 * an expression (N*4096 / (N*32) == 128; (B*S*H*D) / (B*S*D) == H). Returns
 * VKL_ERR_SHAPE (message set) when not provably exact. */
vkl_status vkl_expr_div_exact(vkl_symtab *t, vkl_expr a, vkl_expr b, vkl_expr *out);

/* Queries. */
bool vkl_expr_is_const(const vkl_symtab *t, vkl_expr e, int64_t *value);

typedef enum vkl_sym_order {
    VKL_SYM_UNKNOWN = 0, /* no order holds for all non-negative symbol values */
    VKL_SYM_EQ,          /* a == b always */
    VKL_SYM_LT,          /* a <  b always */
    VKL_SYM_LE,          /* a <= b always (and not provably <) */
    VKL_SYM_GT,
    VKL_SYM_GE
} vkl_sym_order;

/* Compare a and b for all non-negative values of their symbols: the
 * paper's subtraction test. N*4096 vs sumN*256 gives VKL_SYM_UNKNOWN. */
vkl_sym_order vkl_expr_compare(const vkl_symtab *t, vkl_expr a, vkl_expr b);
/* True when a is provably a multiple of b (b != 0): the paper's division test. */
bool vkl_expr_divisible(const vkl_symtab *t, vkl_expr a, vkl_expr b);
/* True (and the symbol's index) when e is exactly one symbol. */
bool vkl_expr_is_symbol(const vkl_symtab *t, vkl_expr e, size_t *index);
/* Symbols an expression mentions: true if it mentions symbol `index`. */
bool vkl_expr_uses_symbol(const vkl_symtab *t, vkl_expr e, size_t index);

/* Evaluate with values[i] the value of symbol i (count entries; entries equal
 * to VKL_SYM_UNBOUND and indexes >= count are unbound). Every step is
 * overflow-checked. Errors: VKL_ERR_NOT_FOUND naming an unbound symbol,
 * VKL_ERR_INVALID_ARGUMENT for a negative value (the simplifications assume
 * symbols are >= 0), VKL_ERR_OVERFLOW, reported to `ctx` (not the symtab's
 * own context: sessions evaluate one shared graph's shapes on several threads,
 * each reporting to its own context). Does not allocate. */
vkl_status vkl_expr_eval(vkl_context *ctx, const vkl_symtab *t, vkl_expr e, const int64_t *values, size_t count,
                         int64_t *out);

/* Text form. Grammar (whitespace ignored):
 *   expr   := term (('+'|'-') term)*
 *   term   := unary (('*' | '//' | '%') unary)*      // '//' and '%' need a constant right operand
 *   unary  := '-' unary | atom
 *   atom   := INT | NAME | NAME '(' expr ',' expr ')' for min/max | '(' expr ')'
 * "/" is accepted as an exact division (vkl_expr_div_exact). Errors name the
 * byte offset. print() writes the canonical form, which parse() reads back to
 * the same handle; it returns the length it needed (like snprintf) and always
 * NUL-terminates when cap > 0. */
vkl_status vkl_expr_parse(vkl_symtab *t, const char *text, vkl_expr *out);
size_t vkl_expr_print(const vkl_symtab *t, vkl_expr e, char *buf, size_t cap);

#endif
