/* RMSNorm on the cpu backend: rows spread over the thread pool, each with
 * ref's arithmetic (backends/ref/norm.c: the mean of squares and the scale
 * in double, rounded once on store), so the bits are ref's. ref reads every
 * element through its generic getters on one thread: 4.5% of a 512-token
 * prefill's CPU time on the 1B model. What this does not cover (another
 * dtype; a Scale that is not one row of the normalized dims) goes to ref. */
#include <math.h>

#include "../ref/nn_util.h"
#include "../ref/ref_ops.h"
#include "cpu_backend.h"

typedef struct norm_job {
    const float *x, *scale;
    float *y;
    int64_t n;
    double epsilon;
} norm_job;

static void norm_row(void *user, size_t row, unsigned worker) {
    (void)worker;
    const norm_job *j = user;
    const float *x = j->x + (size_t)row * (size_t)j->n;
    float *y = j->y + (size_t)row * (size_t)j->n;
    double var = 0;
    for (int64_t k = 0; k < j->n; k++) var += (double)x[k] * (double)x[k];
    const double inv = 1.0 / sqrt(var / (double)j->n + j->epsilon);
    for (int64_t k = 0; k < j->n; k++) y[k] = (float)((double)x[k] * inv * (double)j->scale[k]);
}

/* Whether Scale, read flat, is one row of the n normalized values: its
 * dims are X's last ones (leading 1s aside) and it holds n elements. */
static bool scale_is_row(const vkl_ref_tensor *s, const vkl_ref_tensor *x, int64_t n) {
    if (s->rank > x->rank || vkl_ref_nn_prod(s->dims, 0, s->rank) != n) return false;
    for (uint32_t i = 0; i < s->rank; i++)
        if (s->dims[i] != 1 && s->dims[i] != x->dims[x->rank - s->rank + i]) return false;
    return true;
}

vkl_status vkl_cpu_rms_norm(const vkl_ref_args *a) {
    const vkl_backend_weights *w = a->backend;
    const vkl_ref_tensor *x = &a->in[0], *scale = &a->in[1];
    int64_t axis;
    uint32_t ax;
    float eps = 0;
    vkl_status st = vkl_ref_nn_attr(a, "axis", &axis);
    if (!st) st = vkl_op_attr_float(a->g, a->node, "epsilon", &eps);
    if (!st) st = vkl_ref_nn_axis(a, "RMSNorm", axis, x->rank, &ax);
    if (st) return st;
    const int64_t n = vkl_ref_nn_prod(x->dims, ax, x->rank), rows = vkl_ref_nn_prod(x->dims, 0, ax);
    if (x->dtype != VKL_DTYPE_F32 || scale->dtype != VKL_DTYPE_F32 || a->out[0].dtype != VKL_DTYPE_F32 || n <= 0 ||
        !scale_is_row(scale, x, n))
        return vkl_ref_rms_norm(a);
    norm_job j = {x->data, scale->data, a->out[0].data, n, eps};
    vkl_pool_run(rows > 1 ? w->dev->pool : NULL, (size_t)rows, norm_row, &j);
    return VKL_OK;
}
