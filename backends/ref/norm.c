/* Ref kernels for softmax and normalization: Softmax, LogSoftmax,
 * LayerNormalization, RMSNorm. Values are read as double, computed in
 * double and rounded once on store. */
#include <math.h>

#include "nn_util.h"
#include "ref_ops.h"

/* X viewed as [outer, n, inner] around `axis`. On each line of n values
 * (stride inner): y = exp(x - max) / sum(exp(x - max)), or for LogSoftmax
 * y = x - max - log(sum(exp(x - max))). NaN anywhere on a line makes the
 * line NaN, as in numpy. */
static vkl_status softmax(const vkl_ref_args *a, const char *op, bool log_out) {
    const vkl_ref_tensor *x = &a->in[0];
    vkl_ref_tensor *y = &a->out[0];
    int64_t axis;
    uint32_t ax;
    if (!vkl_ref_nn_is_float(x->dtype)) return vkl_ref_nn_bad_dtype(a, op, "input", x->dtype);
    vkl_status st = vkl_ref_nn_attr(a, "axis", &axis);
    if (!st) st = vkl_ref_nn_axis(a, op, axis, x->rank, &ax);
    if (st) return st;
    int64_t outer = vkl_ref_nn_prod(x->dims, 0, ax), n = x->dims[ax];
    int64_t inner = vkl_ref_nn_prod(x->dims, ax + 1, x->rank);
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * n * inner + i;
            double max = -INFINITY, sum = 0;
            for (int64_t k = 0; k < n; k++) {
                double v = vkl_ref_get_f(x, base + k * inner);
                if (v > max) max = v;
            }
            for (int64_t k = 0; k < n; k++) sum += exp(vkl_ref_get_f(x, base + k * inner) - max);
            for (int64_t k = 0; k < n; k++) {
                double d = vkl_ref_get_f(x, base + k * inner) - max;
                vkl_ref_set_f(y, base + k * inner, log_out ? d - log(sum) : exp(d) / sum);
            }
        }
    }
    return VKL_OK;
}

vkl_status vkl_ref_softmax(const vkl_ref_args *a) {
    return softmax(a, "Softmax", false);
}

vkl_status vkl_ref_log_softmax(const vkl_ref_args *a) {
    return softmax(a, "LogSoftmax", true);
}

typedef struct norm_params {
    const char *op;
    bool rms;                    /* RMSNorm: no mean subtraction, no bias */
    uint32_t axis;               /* normalize over dims [axis, rank) */
    double epsilon;
    const vkl_ref_tensor *scale; /* broadcast to X */
    const vkl_ref_tensor *bias;  /* broadcast to X, or NULL */
    vkl_ref_tensor *mean, *inv_std_dev; /* [outer] statistics, or NULL */
} norm_params;

/* X viewed as [outer, n], n = prod(dims[axis:]). Per row:
 *   mean = sum(x) / n                 (0 for RMSNorm)
 *   var  = sum((x - mean)^2) / n      (mean of squares for RMSNorm)
 *   y    = (x - mean) / sqrt(var + epsilon) * scale + bias */
static vkl_status normalize(const vkl_ref_args *a, const norm_params *p) {
    const vkl_ref_tensor *x = &a->in[0];
    vkl_ref_tensor *y = &a->out[0];
    if (!vkl_ref_nn_is_float(x->dtype)) return vkl_ref_nn_bad_dtype(a, p->op, "X", x->dtype);
    if (!vkl_ref_nn_is_float(p->scale->dtype)) return vkl_ref_nn_bad_dtype(a, p->op, "Scale", p->scale->dtype);
    if (p->bias && !vkl_ref_nn_is_float(p->bias->dtype)) return vkl_ref_nn_bad_dtype(a, p->op, "B", p->bias->dtype);
    vkl_status st = vkl_ref_nn_broadcast_to(a, p->op, p->scale, x->dims, x->rank, "Scale");
    if (!st && p->rms) st = vkl_ref_nn_broadcast_to(a, p->op, p->scale, x->dims + p->axis, x->rank - p->axis, "Scale");
    if (!st && p->bias) st = vkl_ref_nn_broadcast_to(a, p->op, p->bias, x->dims, x->rank, "B");
    if (st) return st;
    int64_t outer = vkl_ref_nn_prod(x->dims, 0, p->axis), n = vkl_ref_nn_prod(x->dims, p->axis, x->rank);
    for (int64_t o = 0; o < outer; o++) {
        int64_t base = o * n;
        double mean = 0, var = 0;
        for (int64_t k = 0; k < n && !p->rms; k++) mean += vkl_ref_get_f(x, base + k);
        if (!p->rms) mean /= (double)n;
        for (int64_t k = 0; k < n; k++) {
            double d = vkl_ref_get_f(x, base + k) - mean;
            var += d * d;
        }
        double inv = 1.0 / sqrt(var / (double)n + p->epsilon);
        for (int64_t k = 0; k < n; k++) {
            int64_t i = base + k;
            double v = (vkl_ref_get_f(x, i) - mean) * inv;
            v *= vkl_ref_get_f(p->scale, vkl_ref_nn_broadcast_flat(p->scale, x->dims, x->rank, i));
            if (p->bias) v += vkl_ref_get_f(p->bias, vkl_ref_nn_broadcast_flat(p->bias, x->dims, x->rank, i));
            vkl_ref_set_f(y, i, v);
        }
        if (p->mean) vkl_ref_set_f(p->mean, o, mean);
        if (p->inv_std_dev) vkl_ref_set_f(p->inv_std_dev, o, inv);
    }
    return VKL_OK;
}

/* Present output k, or NULL. */
static vkl_ref_tensor *opt_out(const vkl_ref_args *a, uint32_t k) {
    return k < a->n_out && a->out[k].data ? &a->out[k] : NULL;
}

/* The axis and epsilon attributes of either norm. */
static vkl_status norm_attrs(const vkl_ref_args *a, norm_params *p) {
    int64_t axis;
    float eps = 0;
    vkl_status st = vkl_ref_nn_attr(a, "axis", &axis);
    if (!st) st = vkl_op_attr_float(a->g, a->node, "epsilon", &eps);
    if (!st) st = vkl_ref_nn_axis(a, p->op, axis, a->in[0].rank, &p->axis);
    p->epsilon = eps;
    return st;
}

/* LayerNormalization-17: (X, Scale, B?) -> Y, Mean?, InvStdDev?. */
vkl_status vkl_ref_layer_normalization(const vkl_ref_args *a) {
    norm_params p = {"LayerNormalization", false, 0, 0, &a->in[1], NULL, opt_out(a, 1), opt_out(a, 2)};
    if (a->n_in > 2 && a->in[2].data) p.bias = &a->in[2];
    vkl_status st = norm_attrs(a, &p);
    return st ? st : normalize(a, &p);
}

/* RMSNorm (vkllm): (X, Scale) -> X / sqrt(mean(X^2 over [axis, r)) + epsilon) * Scale. */
vkl_status vkl_ref_rms_norm(const vkl_ref_args *a) {
    norm_params p = {"RMSNorm", true, 0, 0, &a->in[1], NULL, NULL, NULL};
    vkl_status st = norm_attrs(a, &p);
    return st ? st : normalize(a, &p);
}
