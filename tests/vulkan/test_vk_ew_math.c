/* Accuracy of the Vulkan elementwise transcendentals (shaders/vulkan/
 * ew_math.glsl) against libm in double, one op node per sweep through the
 * vtable: Sin and Cos on [-pi, pi], on rotary-table ranges up to 1e4 and
 * 1e5, on huge arguments up to 3e38 (Payne-Hanek) and on the floats nearest
 * multiples of pi/2 (where a reduction loses the most); Exp, Log (subnormal
 * inputs included), Erf, Tanh, Sigmoid, Gelu (both forms) and Pow. f32:
 * the worst error in ulps of the correctly rounded result, with each
 * sweep's bound (an absolute floor where the ref formula itself cancels:
 * Gelu's 1 + erf); f64 (where the device has shaderFloat64): the same in
 * double ulps. Prints a table (docs/vulkan.md quotes it). Validation on
 * unless VKL_VK_VALIDATION=0; no Vulkan: exit 77. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_rng.h"
#include "context.h"
#include "graph.h"
#include "ops.h"
#include "run_once.h"
#include "vulkan_start.h"

#define N 4096

typedef enum fn { F_SIN, F_COS, F_EXP, F_LOG, F_ERF, F_TANH, F_SIGMOID, F_GELU, F_GELU_TANH, F_POW } fn;

static const struct {
    const char *name;
    uint32_t op;
} fns[] = {{"Sin", VKL_OP_SIN},   {"Cos", VKL_OP_COS},         {"Exp", VKL_OP_EXP},         {"Log", VKL_OP_LOG},
           {"Erf", VKL_OP_ERF},   {"Tanh", VKL_OP_TANH},       {"Sigmoid", VKL_OP_SIGMOID}, {"Gelu", VKL_OP_GELU},
           {"Gelu tanh", VKL_OP_GELU}, {"Pow", VKL_OP_POW}};

static double ref(fn f, double x, double y) {
    switch (f) {
    case F_SIN: return sin(x);
    case F_COS: return cos(x);
    case F_EXP: return exp(x);
    case F_LOG: return log(x);
    case F_ERF: return erf(x);
    case F_TANH: return tanh(x);
    case F_SIGMOID: return 1 / (1 + exp(-x));
    case F_GELU: return 0.5 * x * (1 + erf(x * 0.70710678118654752440));
    case F_GELU_TANH: return 0.5 * x * (1 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
    default: return pow(x, y);
    }
}

/* how a sweep draws x (and Pow's y) */
typedef enum draw { D_UNIFORM, D_LOG, D_PIO2 } draw;

typedef struct sweep {
    fn f;
    draw how;
    double lo, hi;     /* x range (D_LOG: |x| range, random sign unless lo > 0 only) */
    bool positive;     /* D_LOG: x > 0 only */
    double floor;      /* errors are in units of max(ulp(result), floor) */
    double bound;      /* worst error allowed, in those units */
} sweep;

static const sweep f32_sweeps[] = {
    {F_SIN, D_UNIFORM, -3.14159265, 3.14159265, false, 0, 2},
    {F_COS, D_UNIFORM, -3.14159265, 3.14159265, false, 0, 2},
    {F_SIN, D_UNIFORM, -1e4, 1e4, false, 0, 2},
    {F_COS, D_UNIFORM, -1e4, 1e4, false, 0, 2},
    {F_SIN, D_UNIFORM, -1e5, 1e5, false, 0, 2},
    {F_COS, D_UNIFORM, -1e5, 1e5, false, 0, 2},
    {F_SIN, D_LOG, 1e5, 3e38, false, 0, 2},
    {F_COS, D_LOG, 1e5, 3e38, false, 0, 2},
    {F_SIN, D_PIO2, 1, 1e7, false, 0, 2},
    {F_COS, D_PIO2, 1, 1e7, false, 0, 2},
    {F_EXP, D_UNIFORM, -104, 88.7, false, 0x1p-126, 2},
    {F_LOG, D_LOG, 1e-45, 3e38, true, 0, 2},
    {F_ERF, D_UNIFORM, -5, 5, false, 0, 4},
    {F_TANH, D_UNIFORM, -10, 10, false, 0, 3},
    {F_SIGMOID, D_UNIFORM, -90, 90, false, 0x1p-126, 4},
    {F_GELU, D_UNIFORM, -6, 6, false, 0x1p-23, 4},
    {F_GELU_TANH, D_UNIFORM, -6, 6, false, 0x1p-23, 4},
    {F_POW, D_LOG, 1e-3, 1e3, true, 0, 64},
};

static const sweep f64_sweeps[] = {
    {F_SIN, D_UNIFORM, -1e5, 1e5, false, 0, 4},
    {F_COS, D_UNIFORM, -1e5, 1e5, false, 0, 4},
    {F_SIN, D_LOG, 1e6, 1e300, false, 0, 4},
    {F_COS, D_LOG, 1e6, 1e300, false, 0, 4},
    {F_SIN, D_PIO2, 1, 1e9, false, 0, 4},
    {F_COS, D_PIO2, 1, 1e9, false, 0, 4},
    {F_EXP, D_UNIFORM, -745, 709, false, 0x1p-1022, 4},
    {F_LOG, D_LOG, 1e-300, 1e300, true, 0, 4},
    {F_ERF, D_UNIFORM, -7, 7, false, 0, 8},
    {F_TANH, D_UNIFORM, -25, 25, false, 0, 8},
    {F_SIGMOID, D_UNIFORM, -700, 700, false, 0x1p-1022, 8},
    {F_GELU, D_UNIFORM, -8, 8, false, 0x1p-52, 16},
    {F_POW, D_LOG, 1e-3, 1e3, true, 0, 64},
};

static double draw_x(rng *r, const sweep *s, bool f64, int i) {
    double u = rnd_unit(r);
    if (s->how == D_UNIFORM) return s->lo + (s->hi - s->lo) * u;
    if (s->how == D_PIO2) { /* the float nearest k pi/2, k log-uniform */
        double k = floor(exp(log(s->lo) + (log(s->hi) - log(s->lo)) * u));
        return f64 ? k * 1.5707963267948966 : (float)(k * 1.5707963267948966);
    }
    double a = exp(log(s->lo) + (log(s->hi) - log(s->lo)) * u);
    return s->positive || (i & 1) ? a : -a;
}

/* Pow's exponent: integers (the squaring path) and fractions in [-8, 8] */
static double draw_y(rng *r, int i) {
    double y = -8 + 16 * rnd_unit(r);
    return i % 3 == 0 ? round(y) : y;
}

static double units(double got, double want, double floor, bool f64) {
    if (isnan(want)) return isnan(got) ? 0 : INFINITY;
    if (isinf(want)) return got == want ? 0 : INFINITY;
    double w = fabs(want), ulp = f64 ? nextafter(w, INFINITY) - w : nextafterf((float)w, INFINITY) - (float)w;
    if (ulp < floor) ulp = floor;
    return fabs(got - want) / ulp;
}

/* One node of op on x (and y) of dtype dt; out: n results as double. */
static vkl_status run(vkl_context *ctx, vkl_backend_device *dev, const sweep *s, vkl_dtype dt, const double *x,
                      const double *y, double *out) {
    vkl_graph *g;
    vkl_status st = vkl_graph_create(ctx, &g);
    if (st) return st;
    const size_t es = vkl_dtype_size(dt);
    unsigned char *bx = malloc(N * es), *by = malloc(N * es);
    vkl_shape shape = {.rank = 1};
    uint32_t in[2], o;
    const uint32_t n_in = s->f == F_POW ? 2 : 1;
    vkl_attr approx = {.name = "approximate", .kind = VKL_ATTR_STRING, .s = "tanh"};
    vkl_host_tensor hin[2] = {{dt, 1, {N}, bx, N * es}, {dt, 1, {N}, by, N * es}}, hout = {0};
    for (int i = 0; i < N; i++) {
        if (dt == VKL_DTYPE_F32) {
            float a = (float)x[i], b = (float)(y ? y[i] : 0);
            memcpy(bx + 4 * i, &a, 4);
            memcpy(by + 4 * i, &b, 4);
        } else {
            memcpy(bx + 8 * i, &x[i], 8);
            memcpy(by + 8 * i, y ? &y[i] : &x[i], 8);
        }
    }
    if (!bx || !by) st = VKL_ERR_OUT_OF_MEMORY;
    if (!st) st = vkl_expr_const(g->syms, N, &shape.dims[0]);
    for (uint32_t k = 0; !st && k < n_in; k++) {
        st = vkl_graph_add_tensor(g, k ? "y" : "x", dt, VKL_TENSOR_INPUT, &shape, &in[k]);
        if (!st) st = vkl_graph_add_input(g, in[k]);
    }
    if (!st) st = vkl_graph_add_tensor(g, "out", VKL_DTYPE_INVALID, VKL_TENSOR_ACTIVATION, NULL, &o);
    if (!st)
        st = vkl_graph_add_node(g, fns[s->f].op, fns[s->f].name, in, n_in, &o, 1, &approx, s->f == F_GELU_TANH,
                                NULL);
    if (!st) st = vkl_graph_add_output(g, o);
    if (!st) st = vkl_graph_validate(g);
    if (!st) st = vkl_graph_infer_shapes(g);
    if (!st) st = vkl_run_once_on(ctx, vkl_backend_find("vulkan"), dev, g, hin, &hout);
    for (int i = 0; !st && i < N; i++) {
        if (dt == VKL_DTYPE_F32) {
            float v;
            memcpy(&v, (unsigned char *)hout.data + 4 * i, 4);
            out[i] = v;
        } else {
            memcpy(&out[i], (unsigned char *)hout.data + 8 * i, 8);
        }
    }
    vkl_free(ctx, hout.data);
    free(bx);
    free(by);
    vkl_graph_destroy(g);
    return st;
}

static void sweeps(vkl_context *ctx, vkl_backend_device *dev, const sweep *list, size_t n, vkl_dtype dt, rng *r) {
    const bool f64 = dt == VKL_DTYPE_F64;
    double *x = malloc(N * sizeof(double)), *y = malloc(N * sizeof(double)), *got = malloc(N * sizeof(double));
    REQUIRE(x && y && got, "out of memory");
    for (size_t k = 0; k < n; k++) {
        const sweep *s = &list[k];
        for (int i = 0; i < N; i++) {
            x[i] = draw_x(r, s, f64, i);
            y[i] = draw_y(r, i);
            if (!f64) { /* the inputs the kernel sees */
                x[i] = (float)x[i];
                y[i] = (float)y[i];
            }
        }
        vkl_status st = run(ctx, dev, s, dt, x, s->f == F_POW ? y : NULL, got);
        if (st == VKL_ERR_UNSUPPORTED && f64 && strstr(vkl_context_error(ctx), "shaderFloat64")) {
            printf("  f64: skipped: %s\n", vkl_context_error(ctx)); /* a device without f64 arithmetic */
            break;
        }
        CHECK_OK(ctx, st);
        if (st) continue;
        double worst = 0, wx = 0, wy = 0, wgot = 0, wwant = 0;
        for (int i = 0; i < N; i++) {
            double want = ref(s->f, x[i], y[i]);
            if (!f64) want = (float)want;
            double e = units(got[i], want, s->floor, f64);
            if (e > worst || (isnan(e) && !isnan(worst))) worst = e, wx = x[i], wy = y[i], wgot = got[i], wwant = want;
        }
        char range[64];
        snprintf(range, sizeof(range), "%s%s [%g, %g]", s->how == D_PIO2 ? "k pi/2, k in" : "",
                 s->how == D_LOG ? (s->positive ? "log" : "+-log") : "", s->lo, s->hi);
        printf("  %-3s %-10s %-30s max %8.3g %s (bound %g)\n", f64 ? "f64" : "f32", fns[s->f].name, range, worst,
               s->floor ? "units" : "ulp", s->bound);
        CHECKF(worst <= s->bound, "%s %s on %s: %.3g > %g at x = %.17g%s%.17g: got %.17g, want %.17g",
               f64 ? "f64" : "f32", fns[s->f].name, range, worst, s->bound, wx, s->f == F_POW ? ", y = " : "",
               s->f == F_POW ? wy : 0.0, wgot, wwant);
    }
    free(x);
    free(y);
    free(got);
}

int main(void) {
    vkl_context *ctx;
    const vkl_backend_vtable *vk;
    vkl_backend_device *dev = NULL;
    vkl_status st;
    const int early = test_vulkan_main_start("test_vk_ew_math", &ctx, &vk, &dev, NULL, &st);
    if (early >= 0) return early;
    CHECK_OK(ctx, st);
    if (dev) {
        rng r = {0x2545F4914F6CDD1Dull};
        printf("test_vk_ew_math: worst error over %d arguments per sweep\n", N);
        sweeps(ctx, dev, f32_sweeps, sizeof(f32_sweeps) / sizeof(f32_sweeps[0]), VKL_DTYPE_F32, &r);
        sweeps(ctx, dev, f64_sweeps, sizeof(f64_sweeps) / sizeof(f64_sweeps[0]), VKL_DTYPE_F64, &r);
        vk->close(dev);
    }
    CHECKF(validation_messages == 0, "%d validation message(s)", validation_messages);
    vkl_context_destroy(ctx);
    return check_finish("test_vk_ew_math");
}
