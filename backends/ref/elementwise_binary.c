/* Ref kernels of the broadcasting elementwise ops: Add Sub Mul Div Pow, the
 * comparisons (bool out), And Or, variadic Max Min, Where, and the fused
 * SiluMul. Shapes: out = numpy broadcast of the inputs. Floats compute in
 * fp32 (f64 for f64), integers exactly with the output type's wrap-around. */
#include <math.h>
#include <string.h>

#include "elementwise.h"

typedef enum bin_op {
    B_ADD, B_SUB, B_MUL, B_DIV, B_POW, B_EQ, B_GT, B_GE, B_LT, B_LE, B_AND, B_OR, B_MAX, B_MIN, B_SILU_MUL
} bin_op;

typedef struct bin_user {
    bin_op op;
    bool is_unsigned; /* int domain holding u64 bits: compare and divide unsigned */
} bin_user;

/* The float ops, written once for float and double. Comparisons give 1/0,
 * stored to bool. Max/Min propagate NaN (numpy maximum/minimum). */
#define FLOAT_BINARY(NAME, T, EXP, POW)                                                           \
    static vkl_status NAME(const void *user, const void *const *in, void *out, int64_t n) {      \
        const T *x = in[0], *y = in[1];                                                           \
        T *o = out;                                                                               \
        switch (((const bin_user *)user)->op) {                                                   \
        case B_ADD: for (int64_t i = 0; i < n; i++) o[i] = x[i] + y[i]; break;                    \
        case B_SUB: for (int64_t i = 0; i < n; i++) o[i] = x[i] - y[i]; break;                    \
        case B_MUL: for (int64_t i = 0; i < n; i++) o[i] = x[i] * y[i]; break;                    \
        case B_DIV: for (int64_t i = 0; i < n; i++) o[i] = x[i] / y[i]; break;                    \
        case B_POW: for (int64_t i = 0; i < n; i++) o[i] = POW(x[i], y[i]); break;                \
        case B_EQ: for (int64_t i = 0; i < n; i++) o[i] = x[i] == y[i]; break;                    \
        case B_GT: for (int64_t i = 0; i < n; i++) o[i] = x[i] > y[i]; break;                     \
        case B_GE: for (int64_t i = 0; i < n; i++) o[i] = x[i] >= y[i]; break;                    \
        case B_LT: for (int64_t i = 0; i < n; i++) o[i] = x[i] < y[i]; break;                     \
        case B_LE: for (int64_t i = 0; i < n; i++) o[i] = x[i] <= y[i]; break;                    \
        case B_MAX:                                                                               \
            for (int64_t i = 0; i < n; i++) o[i] = (x[i] > y[i] || x[i] != x[i]) ? x[i] : y[i];   \
            break;                                                                                \
        case B_MIN:                                                                               \
            for (int64_t i = 0; i < n; i++) o[i] = (x[i] < y[i] || x[i] != x[i]) ? x[i] : y[i];   \
            break;                                                                                \
        case B_SILU_MUL: /* gate * sigmoid(gate) * up */                                          \
            for (int64_t i = 0; i < n; i++) o[i] = x[i] / (1 + EXP(-x[i])) * y[i];                \
            break;                                                                                \
        default: return VKL_ERR_UNSUPPORTED;                                                      \
        }                                                                                         \
        return VKL_OK;                                                                            \
    }

FLOAT_BINARY(binary_f32, float, expf, powf)
FLOAT_BINARY(binary_f64, double, exp, pow)

/* Wrapping int64 arithmetic (unsigned arithmetic is defined on overflow). */
static int64_t wrap_add(int64_t x, int64_t y) { return (int64_t)((uint64_t)x + (uint64_t)y); }
static int64_t wrap_sub(int64_t x, int64_t y) { return (int64_t)((uint64_t)x - (uint64_t)y); }
static int64_t wrap_mul(int64_t x, int64_t y) { return (int64_t)((uint64_t)x * (uint64_t)y); }

/* -1, 0, 1 as x <, ==, > y. */
static int compare_int(int64_t x, int64_t y, bool is_unsigned) {
    if (is_unsigned) return (uint64_t)x < (uint64_t)y ? -1 : (uint64_t)x > (uint64_t)y;
    return x < y ? -1 : x > y;
}

/* C division truncates toward zero, as ONNX Runtime's integer Div does. */
static vkl_status div_int(int64_t x, int64_t y, bool is_unsigned, int64_t *o) {
    if (y == 0) return VKL_ERR_INVALID_ARGUMENT;
    if (is_unsigned) *o = (int64_t)((uint64_t)x / (uint64_t)y);
    else *o = (x == INT64_MIN && y == -1) ? INT64_MIN : x / y; /* the one overflow wraps */
    return VKL_OK;
}

/* Exact integer power by squaring, wrapping like the output type. A negative
 * exponent truncates 1/x^-e toward zero: 0 except for x = 1 and x = -1;
 * 0 to a negative power is a division by zero. */
static vkl_status pow_int(int64_t x, int64_t e, int64_t *o) {
    if (e < 0) {
        if (x == 0) return VKL_ERR_INVALID_ARGUMENT;
        *o = x == 1 ? 1 : x == -1 ? ((e & 1) ? -1 : 1) : 0;
        return VKL_OK;
    }
    uint64_t r = 1, b = (uint64_t)x;
    for (uint64_t k = (uint64_t)e; k; k >>= 1, b *= b)
        if (k & 1) r *= b;
    *o = (int64_t)r;
    return VKL_OK;
}

static vkl_status binary_i64(const void *user, const void *const *in, void *out, int64_t n) {
    const bin_user *u = user;
    const int64_t *x = in[0], *y = in[1];
    int64_t *o = out;
    vkl_status st = VKL_OK;
    for (int64_t i = 0; !st && i < n; i++) {
        int c = compare_int(x[i], y[i], u->is_unsigned);
        switch (u->op) {
        case B_ADD: o[i] = wrap_add(x[i], y[i]); break;
        case B_SUB: o[i] = wrap_sub(x[i], y[i]); break;
        case B_MUL: o[i] = wrap_mul(x[i], y[i]); break;
        case B_DIV: st = div_int(x[i], y[i], u->is_unsigned, &o[i]); break;
        case B_POW: st = pow_int(x[i], y[i], &o[i]); break;
        case B_EQ: o[i] = c == 0; break;
        case B_GT: o[i] = c > 0; break;
        case B_GE: o[i] = c >= 0; break;
        case B_LT: o[i] = c < 0; break;
        case B_LE: o[i] = c <= 0; break;
        case B_AND: o[i] = x[i] && y[i]; break;
        case B_OR: o[i] = x[i] || y[i]; break;
        case B_MAX: o[i] = c >= 0 ? x[i] : y[i]; break;
        case B_MIN: o[i] = c <= 0 ? x[i] : y[i]; break;
        default: return VKL_ERR_UNSUPPORTED;
        }
    }
    return st;
}

static const char *const op_names[] = {"Add", "Sub", "Mul", "Div", "Pow", "Equal", "Greater", "GreaterOrEqual",
                                       "Less", "LessOrEqual", "And", "Or", "Max", "Min", "SiluMul"};

/* The domain an op computes in: the first input's, except Pow of an integer
 * base by a float exponent, which computes in f64 and truncates on store. */
static vkl_status pick_domain(const vkl_ref_args *a, bin_op op, const vkl_ref_tensor *x, const vkl_ref_tensor *y,
                              vkl_ref_ew_domain *d) {
    vkl_ref_ew_domain dy;
    if (!vkl_ref_ew_domain_of(x->dtype, d)) return vkl_ref_ew_unsupported(a, x->dtype);
    if (!vkl_ref_ew_domain_of(y->dtype, &dy)) return vkl_ref_ew_unsupported(a, y->dtype);
    if (op == B_POW && *d == VKL_REF_EW_D_I64 && dy != VKL_REF_EW_D_I64) *d = VKL_REF_EW_D_F64;
    if (op != B_POW && x->dtype != y->dtype)
        return vkl_fail(a->ctx, VKL_ERR_INVALID_ARGUMENT, "%s: inputs are %s and %s; they must match", op_names[op],
                        vkl_dtype_name(x->dtype), vkl_dtype_name(y->dtype));
    return VKL_OK;
}

/* out = x op y (x may be out itself: the running fold of Max/Min). */
static vkl_status binary(const vkl_ref_args *a, bin_op op, const vkl_ref_tensor *x, const vkl_ref_tensor *y) {
    vkl_ref_ew_domain d;
    vkl_status st = pick_domain(a, op, x, y, &d);
    if (st) return st;
    bin_user u = {op, x->dtype == VKL_DTYPE_U64};
    vkl_ref_ew_fn fn = d == VKL_REF_EW_D_F32 ? binary_f32 : d == VKL_REF_EW_D_F64 ? binary_f64 : binary_i64;
    const vkl_ref_tensor *in[2] = {x, y};
    st = vkl_ref_ew_map(a, d, in, 2, &a->out[0], fn, &u);
    /* The op functions return bare statuses; the map's own errors have messages. */
    if (st == VKL_ERR_INVALID_ARGUMENT)
        return vkl_fail(a->ctx, st, "%s: %s", op_names[op],
                        op == B_POW ? "integer 0 raised to a negative power" : "integer division by zero");
    if (st == VKL_ERR_UNSUPPORTED) return vkl_ref_ew_unsupported(a, x->dtype);
    return st;
}

/* Max/Min over one or more inputs: out = in0 op in1, then out = out op ink. */
static vkl_status fold(const vkl_ref_args *a, bin_op op) {
    vkl_status st = binary(a, op, &a->in[0], &a->in[a->n_in > 1 ? 1 : 0]);
    for (uint32_t k = 2; !st && k < a->n_in; k++) st = binary(a, op, &a->out[0], &a->in[k]);
    return st;
}

vkl_status vkl_ref_add(const vkl_ref_args *a) { return binary(a, B_ADD, &a->in[0], &a->in[1]); }
vkl_status vkl_ref_sub(const vkl_ref_args *a) { return binary(a, B_SUB, &a->in[0], &a->in[1]); }
vkl_status vkl_ref_mul(const vkl_ref_args *a) { return binary(a, B_MUL, &a->in[0], &a->in[1]); }
vkl_status vkl_ref_div(const vkl_ref_args *a) { return binary(a, B_DIV, &a->in[0], &a->in[1]); }
vkl_status vkl_ref_pow(const vkl_ref_args *a) { return binary(a, B_POW, &a->in[0], &a->in[1]); }
vkl_status vkl_ref_equal(const vkl_ref_args *a) { return binary(a, B_EQ, &a->in[0], &a->in[1]); }
vkl_status vkl_ref_greater(const vkl_ref_args *a) { return binary(a, B_GT, &a->in[0], &a->in[1]); }
vkl_status vkl_ref_greater_or_equal(const vkl_ref_args *a) { return binary(a, B_GE, &a->in[0], &a->in[1]); }
vkl_status vkl_ref_less(const vkl_ref_args *a) { return binary(a, B_LT, &a->in[0], &a->in[1]); }
vkl_status vkl_ref_less_or_equal(const vkl_ref_args *a) { return binary(a, B_LE, &a->in[0], &a->in[1]); }
vkl_status vkl_ref_and(const vkl_ref_args *a) { return binary(a, B_AND, &a->in[0], &a->in[1]); }
vkl_status vkl_ref_or(const vkl_ref_args *a) { return binary(a, B_OR, &a->in[0], &a->in[1]); }
vkl_status vkl_ref_silu_mul(const vkl_ref_args *a) { return binary(a, B_SILU_MUL, &a->in[0], &a->in[1]); }
vkl_status vkl_ref_max(const vkl_ref_args *a) { return fold(a, B_MAX); }
vkl_status vkl_ref_min(const vkl_ref_args *a) { return fold(a, B_MIN); }

/* One row of Where with a compile-time element size (inlined per size). */
static inline void select_row(size_t es, unsigned char *o, const unsigned char *c, int64_t sc,
                              const unsigned char *x, int64_t sx, const unsigned char *y, int64_t sy, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        memcpy(o + i * (int64_t)es, c[i * sc] ? x + i * sx * (int64_t)es : y + i * sy * (int64_t)es, es);
}

/* Where(cond [bool], X, Y) -> out[i] = cond[i] ? X[i] : Y[i], all three
 * broadcast; any plain dtype (elements are copied, not converted). */
vkl_status vkl_ref_where(const vkl_ref_args *a) {
    const vkl_ref_tensor *in[3] = {&a->in[0], &a->in[1], &a->in[2]};
    vkl_ref_tensor *out = &a->out[0];
    size_t es = vkl_dtype_size(out->dtype);
    if (in[0]->dtype != VKL_DTYPE_BOOL) return vkl_ref_ew_unsupported(a, in[0]->dtype);
    if (!es || in[1]->dtype != out->dtype || in[2]->dtype != out->dtype) return vkl_ref_ew_unsupported(a, out->dtype);
    vkl_ref_ew_rows r;
    vkl_status st = vkl_ref_ew_rows_init(a, out, in, 3, &r);
    int64_t off[3];
    for (int64_t row = 0; !st && row < r.rows; row++) {
        vkl_ref_ew_rows_offsets(&r, row, off);
        unsigned char *o = (unsigned char *)out->data + row * r.run * (int64_t)es;
        const unsigned char *c = (const unsigned char *)in[0]->data + off[0];
        const unsigned char *x = (const unsigned char *)in[1]->data + off[1] * (int64_t)es;
        const unsigned char *y = (const unsigned char *)in[2]->data + off[2] * (int64_t)es;
        switch (es) {
        case 1: select_row(1, o, c, r.step[0], x, r.step[1], y, r.step[2], r.run); break;
        case 2: select_row(2, o, c, r.step[0], x, r.step[1], y, r.step[2], r.run); break;
        case 4: select_row(4, o, c, r.step[0], x, r.step[1], y, r.step[2], r.run); break;
        default: select_row(8, o, c, r.step[0], x, r.step[1], y, r.step[2], r.run); break;
        }
    }
    return st;
}
