/* Ref kernels of the one-input elementwise ops: math and activations, Not,
 * Clip, Identity and Dropout (inference). Shapes: out = in. Floats compute
 * in fp32 (f64 for f64), integers exactly with the output's wrap-around. */
#include <string.h>
#include <tgmath.h> /* sqrt, exp, erf... pick the float or double version */

#include "elementwise.h"

typedef enum un_op {
    U_SQRT, U_RECIPROCAL, U_NEG, U_ABS, U_EXP, U_LOG, U_COS, U_SIN, U_ERF, U_TANH, U_SIGMOID, U_RELU, U_GELU, U_GELU_TANH,
    U_NOT, U_CLIP
} un_op;

typedef struct un_user {
    un_op op;
    double lo, hi;    /* Clip bounds, float domains (+-inf when absent) */
    int64_t ilo, ihi; /* Clip bounds, int domain (the type's extremes when absent) */
    bool is_unsigned; /* int domain holding u64 bits */
} un_user;

#define SQRT_HALF 0.70710678118654752440     /* 1/sqrt(2) */
#define SQRT_2_OVER_PI 0.79788456080286535588 /* sqrt(2/pi) */

/* The float ops, written once for float and double. Gelu: 0.5x(1+erf(x/sqrt2))
 * or, approximate="tanh", 0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3))). Sigmoid
 * uses exp of a non-positive argument only, so it never overflows. Relu and
 * Clip keep NaN. */
#define FLOAT_UNARY(NAME, T)                                                                                \
    static vkl_status NAME(const void *user, const void *const *in, void *out, int64_t n) {                \
        const un_user *u = user;                                                                            \
        const T *x = in[0];                                                                                 \
        T *o = out;                                                                                         \
        const T lo = (T)u->lo, hi = (T)u->hi, half = (T)0.5;                                                \
        switch (u->op) {                                                                                    \
        case U_SQRT: for (int64_t i = 0; i < n; i++) o[i] = sqrt(x[i]); break;                              \
        case U_RECIPROCAL: for (int64_t i = 0; i < n; i++) o[i] = 1 / x[i]; break;                          \
        case U_NEG: for (int64_t i = 0; i < n; i++) o[i] = -x[i]; break;                                    \
        case U_ABS: for (int64_t i = 0; i < n; i++) o[i] = fabs(x[i]); break;                               \
        case U_EXP: for (int64_t i = 0; i < n; i++) o[i] = exp(x[i]); break;                                \
        case U_LOG: for (int64_t i = 0; i < n; i++) o[i] = log(x[i]); break;                                \
        case U_COS: for (int64_t i = 0; i < n; i++) o[i] = cos(x[i]); break;                                \
        case U_SIN: for (int64_t i = 0; i < n; i++) o[i] = sin(x[i]); break;                                \
        case U_ERF: for (int64_t i = 0; i < n; i++) o[i] = erf(x[i]); break;                                \
        case U_TANH: for (int64_t i = 0; i < n; i++) o[i] = tanh(x[i]); break;                              \
        case U_SIGMOID:                                                                                     \
            for (int64_t i = 0; i < n; i++) {                                                               \
                T e = exp(-fabs(x[i]));                                                                     \
                o[i] = x[i] >= 0 ? 1 / (1 + e) : e / (1 + e);                                              \
            }                                                                                               \
            break;                                                                                          \
        case U_RELU: for (int64_t i = 0; i < n; i++) o[i] = x[i] < 0 ? 0 : x[i]; break;                     \
        case U_GELU:                                                                                        \
            for (int64_t i = 0; i < n; i++) o[i] = half * x[i] * (1 + erf(x[i] * (T)SQRT_HALF));            \
            break;                                                                                          \
        case U_GELU_TANH:                                                                                   \
            for (int64_t i = 0; i < n; i++)                                                                 \
                o[i] = half * x[i] * (1 + tanh((T)SQRT_2_OVER_PI * (x[i] + (T)0.044715 * x[i] * x[i] * x[i]))); \
            break;                                                                                          \
        case U_CLIP: /* min(max(x, lo), hi): hi wins when lo > hi, as in ONNX */                           \
            for (int64_t i = 0; i < n; i++) {                                                               \
                T v = x[i] < lo ? lo : x[i];                                                                \
                o[i] = hi < v ? hi : v;                                                                     \
            }                                                                                               \
            break;                                                                                          \
        default: return VKL_ERR_UNSUPPORTED;                                                                \
        }                                                                                                   \
        return VKL_OK;                                                                                      \
    }

FLOAT_UNARY(unary_f32, float)
FLOAT_UNARY(unary_f64, double)

static bool less_int(int64_t x, int64_t y, bool is_unsigned) {
    return is_unsigned ? (uint64_t)x < (uint64_t)y : x < y;
}

/* Integer Neg/Abs wrap (|INT_MIN| is INT_MIN, as in numpy); unsigned Abs is
 * the identity. */
static vkl_status unary_i64(const void *user, const void *const *in, void *out, int64_t n) {
    const un_user *u = user;
    const int64_t *x = in[0];
    int64_t *o = out;
    for (int64_t i = 0; i < n; i++) {
        int64_t neg = (int64_t)(0 - (uint64_t)x[i]);
        switch (u->op) {
        case U_NEG: o[i] = neg; break;
        case U_ABS: o[i] = !u->is_unsigned && x[i] < 0 ? neg : x[i]; break;
        case U_RELU: o[i] = x[i] < 0 ? 0 : x[i]; break;
        case U_NOT: o[i] = !x[i]; break;
        case U_CLIP: {
            int64_t v = less_int(x[i], u->ilo, u->is_unsigned) ? u->ilo : x[i];
            o[i] = less_int(u->ihi, v, u->is_unsigned) ? u->ihi : v;
            break;
        }
        default: return VKL_ERR_UNSUPPORTED;
        }
    }
    return VKL_OK;
}

/* out = op(in[0]) computed in the input's domain. */
static vkl_status unary(const vkl_ref_args *a, const un_user *u) {
    vkl_ref_ew_domain d;
    const vkl_ref_tensor *in[1] = {&a->in[0]};
    if (!vkl_ref_ew_domain_of(in[0]->dtype, &d)) return vkl_ref_ew_unsupported(a, in[0]->dtype);
    vkl_ref_ew_fn fn = d == VKL_REF_EW_D_F32 ? unary_f32 : d == VKL_REF_EW_D_F64 ? unary_f64 : unary_i64;
    vkl_status st = vkl_ref_ew_map(a, d, in, 1, &a->out[0], fn, u);
    return st == VKL_ERR_UNSUPPORTED ? vkl_ref_ew_unsupported(a, in[0]->dtype) : st;
}

static vkl_status unary_op(const vkl_ref_args *a, un_op op) {
    un_user u = {.op = op, .is_unsigned = a->in[0].dtype == VKL_DTYPE_U64};
    return unary(a, &u);
}

vkl_status vkl_ref_sqrt(const vkl_ref_args *a) { return unary_op(a, U_SQRT); }
vkl_status vkl_ref_reciprocal(const vkl_ref_args *a) { return unary_op(a, U_RECIPROCAL); }
vkl_status vkl_ref_neg(const vkl_ref_args *a) { return unary_op(a, U_NEG); }
vkl_status vkl_ref_abs(const vkl_ref_args *a) { return unary_op(a, U_ABS); }
vkl_status vkl_ref_exp(const vkl_ref_args *a) { return unary_op(a, U_EXP); }
vkl_status vkl_ref_log(const vkl_ref_args *a) { return unary_op(a, U_LOG); }
vkl_status vkl_ref_cos(const vkl_ref_args *a) { return unary_op(a, U_COS); }
vkl_status vkl_ref_sin(const vkl_ref_args *a) { return unary_op(a, U_SIN); }
vkl_status vkl_ref_erf(const vkl_ref_args *a) { return unary_op(a, U_ERF); }
vkl_status vkl_ref_tanh(const vkl_ref_args *a) { return unary_op(a, U_TANH); }
vkl_status vkl_ref_sigmoid(const vkl_ref_args *a) { return unary_op(a, U_SIGMOID); }
vkl_status vkl_ref_relu(const vkl_ref_args *a) { return unary_op(a, U_RELU); }
vkl_status vkl_ref_not(const vkl_ref_args *a) { return unary_op(a, U_NOT); }

/* Gelu, attribute approximate: "none" (erf) or "tanh". */
vkl_status vkl_ref_gelu(const vkl_ref_args *a) {
    const char *approx;
    vkl_status st = vkl_op_attr_string(a->g, a->node, "approximate", &approx);
    if (st) return st;
    if (strcmp(approx, "none") && strcmp(approx, "tanh"))
        return vkl_fail(a->ctx, VKL_ERR_FORMAT, "Gelu: approximate is '%s'; ONNX allows 'none' or 'tanh'", approx);
    return unary_op(a, strcmp(approx, "tanh") ? U_GELU : U_GELU_TANH);
}

/* Clip(input, min?, max?): y = min(max(x, min), max); an absent bound does
 * not clip. Bounds are one-element tensors of input's dtype. */
vkl_status vkl_ref_clip(const vkl_ref_args *a) {
    const vkl_ref_tensor *lo = vkl_ref_ew_in(a, 1), *hi = vkl_ref_ew_in(a, 2);
    bool is_unsigned = a->in[0].dtype == VKL_DTYPE_U64;
    vkl_ref_ew_domain d;
    if (!vkl_ref_ew_domain_of(a->in[0].dtype, &d)) return vkl_ref_ew_unsupported(a, a->in[0].dtype);
    vkl_status st = vkl_ref_ew_check_scalar(a, 1, "min");
    if (!st) st = vkl_ref_ew_check_scalar(a, 2, "max");
    if (st) return st;
    un_user u = {.op = U_CLIP, .is_unsigned = is_unsigned};
    u.lo = lo ? vkl_ref_get_f(lo, 0) : -INFINITY;
    u.hi = hi ? vkl_ref_get_f(hi, 0) : INFINITY;
    u.ilo = lo ? vkl_ref_get_i(lo, 0) : is_unsigned ? 0 : INT64_MIN;
    u.ihi = hi ? vkl_ref_get_i(hi, 0) : is_unsigned ? -1 /* UINT64_MAX's bits */ : INT64_MAX;
    return unary(a, &u);
}

/* out = in, bytes copied (any plain dtype); nothing when out is not requested. */
static vkl_status copy_tensor(const vkl_ref_args *a) {
    const vkl_ref_tensor *x = &a->in[0];
    vkl_ref_tensor *o = &a->out[0];
    size_t es = vkl_dtype_size(x->dtype);
    if (!es || x->dtype != o->dtype) return vkl_ref_ew_unsupported(a, x->dtype);
    if (o->data && o->data != x->data) memcpy(o->data, x->data, (size_t)x->count * es);
    return VKL_OK;
}

vkl_status vkl_ref_identity(const vkl_ref_args *a) { return copy_tensor(a); }

/* Dropout(data, ratio?, training_mode?) -> (output, mask?), inference:
 * output = data, mask all true. Training with ratio 0 is the same (ONNX);
 * training with ratio > 0 draws random numbers, which we do not. */
vkl_status vkl_ref_dropout(const vkl_ref_args *a) {
    const vkl_ref_tensor *ratio = vkl_ref_ew_in(a, 1), *training = vkl_ref_ew_in(a, 2);
    vkl_status st = vkl_ref_ew_check_scalar(a, 1, "ratio");
    if (!st) st = vkl_ref_ew_check_scalar(a, 2, "training_mode");
    if (st) return st;
    double r = ratio ? vkl_ref_get_f(ratio, 0) : 0.5;
    if (training && vkl_ref_get_i(training, 0) && r != 0)
        return vkl_fail(a->ctx, VKL_ERR_UNSUPPORTED, "Dropout: training_mode is true with ratio %g; only inference "
                        "(or ratio 0) is supported", r);
    if ((st = copy_tensor(a))) return st;
    if (a->n_out > 1 && a->out[1].data) memset(a->out[1].data, 1, (size_t)a->out[1].count);
    return VKL_OK;
}
