/* Ref kernels for reductions and scans: ReduceMean, ReduceSum, ReduceMax,
 * ArgMax, CumSum, TopK. Floats accumulate in double; integers are exact in
 * int64 and wrap like the output type. */
#include <math.h>
#include <string.h>

#include "nn_util.h"
#include "ref_ops.h"

static bool is_int(vkl_dtype t) {
    switch (t) {
    case VKL_DTYPE_I64: case VKL_DTYPE_I32: case VKL_DTYPE_I16: case VKL_DTYPE_I8:
    case VKL_DTYPE_U32: case VKL_DTYPE_U16: case VKL_DTYPE_U8: return true;
    default: return false;
    }
}

/* Smallest value of an integer dtype: the max of an empty set. */
static int64_t int_min(vkl_dtype t) {
    switch (t) {
    case VKL_DTYPE_I64: return INT64_MIN;
    case VKL_DTYPE_I32: return INT32_MIN;
    case VKL_DTYPE_I16: return INT16_MIN;
    case VKL_DTYPE_I8: return INT8_MIN;
    default: return 0;
    }
}

/* Orders elements i and j of t: -1, 0, 1. NaN is larger than any number
 * and equal to NaN (numpy's sort order). */
static int compare(const vkl_ref_tensor *t, int64_t i, int64_t j) {
    if (!vkl_ref_nn_is_float(t->dtype)) {
        int64_t x = vkl_ref_get_i(t, i), y = vkl_ref_get_i(t, j);
        return (x > y) - (x < y);
    }
    double x = vkl_ref_get_f(t, i), y = vkl_ref_get_f(t, j);
    if (isnan(x) || isnan(y)) return isnan(x) - isnan(y);
    return (x > y) - (x < y);
}

/* Input offset of element `flat` of the sub-space (dims, strides). */
static int64_t subspace_offset(const int64_t *dims, const int64_t *strides, uint32_t n, int64_t flat) {
    int64_t off = 0;
    for (int32_t d = (int32_t)n - 1; d >= 0; d--) {
        off += (flat % dims[d]) * strides[d];
        flat /= dims[d];
    }
    return off;
}

/* The kept dims (in output order) and the reduced dims of X, with X's strides. */
typedef struct reduce_plan {
    uint32_t n_kept, n_red;
    int64_t kept_dims[VKL_MAX_RANK], kept_strides[VKL_MAX_RANK];
    int64_t red_dims[VKL_MAX_RANK], red_strides[VKL_MAX_RANK];
    int64_t n_groups, group_size; /* output elements, inputs per output */
} reduce_plan;

/* Reads the axes input (the same rules as the shape rule) into a plan. */
static vkl_status plan_reduce(const vkl_ref_args *a, const char *op, reduce_plan *p) {
    const vkl_ref_tensor *x = &a->in[0], *axes_t = a->n_in > 1 && a->in[1].data ? &a->in[1] : NULL;
    int64_t noop, axes[VKL_MAX_VALUE_ELEMS], strides[VKL_MAX_RANK];
    uint32_t n_axes = 0;
    bool mask[VKL_MAX_RANK];
    vkl_status st = vkl_ref_nn_attr(a, "noop_with_empty_axes", &noop);
    if (st) return st;
    if (axes_t && axes_t->count > VKL_MAX_VALUE_ELEMS)
        return vkl_fail(a->ctx, VKL_ERR_SHAPE, "%s: %lld axes for rank %u", op, (long long)axes_t->count, x->rank);
    for (int64_t k = 0; axes_t && k < axes_t->count; k++) axes[n_axes++] = vkl_ref_get_i(axes_t, k);
    st = vkl_nn_reduce_mask(a->ctx, op, axes, n_axes, x->rank, noop != 0, mask);
    if (st) return st;
    vkl_ref_strides(x, strides);
    memset(p, 0, sizeof(*p));
    p->n_groups = p->group_size = 1;
    for (uint32_t d = 0; d < x->rank; d++) {
        if (mask[d]) {
            p->red_dims[p->n_red] = x->dims[d];
            p->red_strides[p->n_red++] = strides[d];
            p->group_size *= x->dims[d];
        } else {
            p->kept_dims[p->n_kept] = x->dims[d];
            p->kept_strides[p->n_kept++] = strides[d];
            p->n_groups *= x->dims[d];
        }
    }
    return VKL_OK;
}

typedef enum reduce_kind { REDUCE_SUM, REDUCE_MEAN, REDUCE_MAX } reduce_kind;

/* Y[kept] = reduce over the reduced dims of X[kept, reduced]. Empty groups:
 * sum 0, mean NaN (0 for integers), max -inf (the type's minimum for
 * integers), as ONNX Runtime. */
static vkl_status reduce(const vkl_ref_args *a, const char *op, reduce_kind kind) {
    const vkl_ref_tensor *x = &a->in[0];
    vkl_ref_tensor *y = &a->out[0];
    bool flt = vkl_ref_nn_is_float(x->dtype);
    if (!flt && !is_int(x->dtype) && !(kind == REDUCE_MAX && x->dtype == VKL_DTYPE_BOOL))
        return vkl_ref_nn_bad_dtype(a, op, "data", x->dtype);
    reduce_plan p;
    vkl_status st = plan_reduce(a, op, &p);
    if (st) return st;
    for (int64_t g = 0; g < p.n_groups; g++) {
        int64_t base = subspace_offset(p.kept_dims, p.kept_strides, p.n_kept, g);
        double acc = kind == REDUCE_MAX ? -INFINITY : 0;
        uint64_t isum = 0; /* wraps like the integer type */
        int64_t imax = int_min(x->dtype);
        for (int64_t r = 0; r < p.group_size; r++) {
            int64_t i = base + subspace_offset(p.red_dims, p.red_strides, p.n_red, r);
            if (flt) {
                double v = vkl_ref_get_f(x, i);
                if (kind != REDUCE_MAX) acc += v;
                else if (!isnan(acc) && (isnan(v) || v > acc)) acc = v; /* NaN propagates, as numpy */
            } else {
                int64_t v = vkl_ref_get_i(x, i);
                isum += (uint64_t)v;
                if (v > imax) imax = v;
            }
        }
        if (flt) {
            vkl_ref_set_f(y, g, kind == REDUCE_MEAN ? acc / (double)p.group_size : acc);
        } else {
            int64_t sum = (int64_t)isum;
            int64_t mean = p.group_size ? sum / p.group_size : 0;
            vkl_ref_set_i(y, g, kind == REDUCE_MAX ? imax : kind == REDUCE_MEAN ? mean : sum);
        }
    }
    return VKL_OK;
}

vkl_status vkl_ref_reduce_mean(const vkl_ref_args *a) {
    return reduce(a, "ReduceMean", REDUCE_MEAN);
}

vkl_status vkl_ref_reduce_sum(const vkl_ref_args *a) {
    return reduce(a, "ReduceSum", REDUCE_SUM);
}

vkl_status vkl_ref_reduce_max(const vkl_ref_args *a) {
    return reduce(a, "ReduceMax", REDUCE_MAX);
}

/* X viewed as [outer, n, inner] around the axis attribute. */
typedef struct line_view {
    uint32_t axis;
    int64_t outer, n, inner;
} line_view;

static vkl_status view_lines(const vkl_ref_args *a, const char *op, int64_t axis, line_view *v) {
    const vkl_ref_tensor *x = &a->in[0];
    vkl_status st = vkl_ref_nn_axis(a, op, axis, x->rank, &v->axis);
    if (st) return st;
    v->outer = vkl_ref_nn_prod(x->dims, 0, v->axis);
    v->n = x->dims[v->axis];
    v->inner = vkl_ref_nn_prod(x->dims, v->axis + 1, x->rank);
    return VKL_OK;
}

/* ArgMax-13: on each line the index of the largest value (NaN counts as
 * largest); ties give the first index, or the last with select_last_index. */
vkl_status vkl_ref_arg_max(const vkl_ref_args *a) {
    const vkl_ref_tensor *x = &a->in[0];
    int64_t axis, last;
    line_view v;
    if (!vkl_ref_nn_is_float(x->dtype) && !is_int(x->dtype)) return vkl_ref_nn_bad_dtype(a, "ArgMax", "data", x->dtype);
    vkl_status st = vkl_ref_nn_attr(a, "axis", &axis);
    if (!st) st = vkl_ref_nn_attr(a, "select_last_index", &last);
    if (!st) st = view_lines(a, "ArgMax", axis, &v);
    if (st) return st;
    if (v.n == 0 && v.outer * v.inner > 0)
        return vkl_fail(a->ctx, VKL_ERR_INVALID_ARGUMENT, "ArgMax: axis %u has no elements", v.axis);
    for (int64_t o = 0; o < v.outer; o++) {
        for (int64_t i = 0; i < v.inner; i++) {
            int64_t base = o * v.n * v.inner + i, best = 0;
            for (int64_t k = 1; k < v.n; k++) {
                int c = compare(x, base + k * v.inner, base + best * v.inner);
                if (c > 0 || (c == 0 && last)) best = k;
            }
            vkl_ref_set_i(&a->out[0], o * v.inner + i, best);
        }
    }
    return VKL_OK;
}

/* CumSum-14: running sums along the axis (a scalar input): y[k] = sum of
 * x[0..k] (x[0..k-1] when exclusive; from the end when reverse). */
vkl_status vkl_ref_cum_sum(const vkl_ref_args *a) {
    const vkl_ref_tensor *x = &a->in[0], *axis_t = &a->in[1];
    vkl_ref_tensor *y = &a->out[0];
    int64_t exclusive, reverse;
    line_view v;
    bool flt = vkl_ref_nn_is_float(x->dtype);
    if (!flt && !is_int(x->dtype)) return vkl_ref_nn_bad_dtype(a, "CumSum", "x", x->dtype);
    if (axis_t->count != 1)
        return vkl_fail(a->ctx, VKL_ERR_SHAPE, "CumSum: axis has %lld elements; 1 expected", (long long)axis_t->count);
    vkl_status st = vkl_ref_nn_attr(a, "exclusive", &exclusive);
    if (!st) st = vkl_ref_nn_attr(a, "reverse", &reverse);
    if (!st) st = view_lines(a, "CumSum", vkl_ref_get_i(axis_t, 0), &v);
    if (st) return st;
    for (int64_t o = 0; o < v.outer; o++) {
        for (int64_t i = 0; i < v.inner; i++) {
            double acc = 0;
            uint64_t iacc = 0; /* wraps like the integer type */
            for (int64_t s = 0; s < v.n; s++) {
                int64_t idx = o * v.n * v.inner + (reverse ? v.n - 1 - s : s) * v.inner + i;
                if (flt) {
                    double xv = vkl_ref_get_f(x, idx);
                    if (!exclusive) acc += xv;
                    vkl_ref_set_f(y, idx, acc);
                    if (exclusive) acc += xv;
                } else {
                    uint64_t xv = (uint64_t)vkl_ref_get_i(x, idx);
                    if (!exclusive) iacc += xv;
                    vkl_ref_set_i(y, idx, (int64_t)iacc);
                    if (exclusive) iacc += xv;
                }
            }
        }
    }
    return VKL_OK;
}

/* Stable bottom-up merge sort of a line's positions idx[0..n) by value,
 * descending when `largest`: equal values keep the lower index first. */
static void sort_line(const vkl_ref_tensor *x, int64_t base, int64_t stride, bool largest, int64_t *idx,
                      int64_t *tmp, int64_t n) {
    int64_t *src = idx, *dst = tmp;
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                int c = compare(x, base + src[j] * stride, base + src[i] * stride);
                dst[k++] = (largest ? c > 0 : c < 0) ? src[j++] : src[i++];
            }
            while (i < mid) dst[k++] = src[i++];
            while (j < hi) dst[k++] = src[j++];
        }
        int64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != idx) memcpy(idx, src, (size_t)n * sizeof(*idx));
}

/* TopK-11: the K largest (or smallest) values on each line and their
 * indices, in sorted order (also for sorted = 0, which leaves the order
 * open); ties broken by the lower index first, as ONNX Runtime. */
vkl_status vkl_ref_top_k(const vkl_ref_args *a) {
    const vkl_ref_tensor *x = &a->in[0], *k_t = &a->in[1];
    vkl_ref_tensor *values = a->out[0].data ? &a->out[0] : NULL;
    vkl_ref_tensor *indices = a->n_out > 1 && a->out[1].data ? &a->out[1] : NULL;
    int64_t axis, largest;
    line_view v;
    if (!vkl_ref_nn_is_float(x->dtype) && !is_int(x->dtype)) return vkl_ref_nn_bad_dtype(a, "TopK", "X", x->dtype);
    if (k_t->count != 1)
        return vkl_fail(a->ctx, VKL_ERR_SHAPE, "TopK: K has %lld elements; 1 expected", (long long)k_t->count);
    vkl_status st = vkl_ref_nn_attr(a, "axis", &axis);
    if (!st) st = vkl_ref_nn_attr(a, "largest", &largest);
    if (!st) st = view_lines(a, "TopK", axis, &v);
    if (st) return st;
    int64_t k = vkl_ref_get_i(k_t, 0);
    if (k < 0 || k > v.n)
        return vkl_fail(a->ctx, VKL_ERR_INVALID_ARGUMENT, "TopK: K = %lld is not in [0, %lld]", (long long)k,
                        (long long)v.n);
    const vkl_ref_tensor *first = values ? values : indices;
    if (first) st = vkl_ref_nn_dim_eq(a, "TopK", first->dims[v.axis], k, "the output's axis dim and K");
    if (st || !first) return st;
    int64_t *idx = vkl_ref_scratch_get(a, (size_t)(2 * v.n + 1) * sizeof(int64_t));
    if (!idx) return VKL_ERR_OUT_OF_MEMORY;
    for (int64_t o = 0; o < v.outer; o++) {
        for (int64_t i = 0; i < v.inner; i++) {
            int64_t base = o * v.n * v.inner + i;
            for (int64_t j = 0; j < v.n; j++) idx[j] = j;
            sort_line(x, base, v.inner, largest != 0, idx, idx + v.n, v.n);
            for (int64_t j = 0; j < k; j++) {
                int64_t out = o * k * v.inner + j * v.inner + i, in = base + idx[j] * v.inner;
                if (values && vkl_ref_nn_is_float(x->dtype)) vkl_ref_set_f(values, out, vkl_ref_get_f(x, in));
                else if (values) vkl_ref_set_i(values, out, vkl_ref_get_i(x, in));
                if (indices) vkl_ref_set_i(indices, out, idx[j]);
            }
        }
    }
    return VKL_OK;
}
