/* The portable inner products: the definition the SIMD ones must equal
 * (integer sums exactly). */
#include <float.h>
#include <math.h>
#include <stdbool.h>

#include "../../engine/dtype.h"
#include "cpu_dot.h"

/* The group's f32 step (cpu_dot.h): no expression left to contraction. */
static void apply(const int32_t *isum, const float *scale, const float *zero, float d, float s, float *acc) {
    for (int i = 0; i < VKL_CPU_HP; i++) {
        const float z = zero ? zero[i] * s : 0.0f;
        const float t = (float)isum[i] - z;
        const float u = scale[i] * d;
        acc[i] = acc[i] + u * t;
    }
}

static void q4_row(const uint8_t *w, const float *rec, vkl_cpu_act a, uint32_t chunks, uint32_t groups, float *acc) {
    const int8_t *x = a.q;
    for (uint32_t g = 0; g < groups; g++, rec += 2 * VKL_CPU_HP) {
        int32_t s[VKL_CPU_HP] = {0};
        for (uint32_t c = 0; c < chunks; c++, w += VKL_CPU_HP * 16, x += VKL_CPU_LP)
            for (int i = 0; i < VKL_CPU_HP; i++)
                for (int j = 0; j < 16; j++) {
                    const uint8_t b = w[16 * i + j];
                    s[i] += (b & 15) * x[j] + (b >> 4) * x[16 + j];
                }
        apply(s, rec, rec + VKL_CPU_HP, a.d[g], (float)a.s[g], acc);
    }
}

static void q8_row(const int8_t *w, const float *rec, vkl_cpu_act a, uint32_t chunks, uint32_t groups, float *acc) {
    const int8_t *x = a.q;
    for (uint32_t g = 0; g < groups; g++, rec += VKL_CPU_HP) {
        int32_t s[VKL_CPU_HP] = {0};
        for (uint32_t c = 0; c < chunks; c++, w += VKL_CPU_HP * VKL_CPU_LP, x += VKL_CPU_LP)
            for (int i = 0; i < VKL_CPU_HP; i++)
                for (int j = 0; j < VKL_CPU_LP; j++) s[i] += w[VKL_CPU_LP * i + j] * x[j];
        apply(s, rec, NULL, a.d[g], 0, acc);
    }
}

/* Several activation rows: one after the other (the sums are the same). */
static void q4(const uint8_t *w, const float *rec, const vkl_cpu_act *act, uint32_t rows, uint32_t chunks,
               uint32_t groups, float *acc) {
    for (uint32_t r = 0; r < rows; r++) q4_row(w, rec, act[r], chunks, groups, acc + VKL_CPU_HP * r);
}

static void q8(const int8_t *w, const float *rec, const vkl_cpu_act *act, uint32_t rows, uint32_t chunks,
               uint32_t groups, float *acc) {
    for (uint32_t r = 0; r < rows; r++) q8_row(w, rec, act[r], chunks, groups, acc + VKL_CPU_HP * r);
}

/* The panel's rows one after the other, each read from its place in the
 * panel layout (cpu_dot.h). */
static void q4_tile(const uint8_t *w, const float *rec, const vkl_cpu_panel *p, uint32_t chunks, uint32_t groups,
                    bool first, float *y, size_t ldy) {
    const uint32_t mr = p->rows;
    for (uint32_t r = 0; r < mr; r++) {
        float *acc = y + r * ldy;
        if (first)
            for (int i = 0; i < VKL_CPU_HP; i++) acc[i] = 0.0f;
        const uint8_t *wr = w;
        const int8_t *x = p->q;
        const float *rc = rec;
        for (uint32_t g = 0; g < groups; g++, rc += 2 * VKL_CPU_HP) {
            int32_t s[VKL_CPU_HP] = {0};
            for (uint32_t c = 0; c < chunks; c++, wr += VKL_CPU_HP * 16, x += VKL_CPU_LP * mr)
                for (int i = 0; i < VKL_CPU_HP; i++)
                    for (int j = 0; j < 16; j++) {
                        const uint8_t b = wr[16 * i + j];
                        s[i] += (b & 15) * x[16 * r + j] + (b >> 4) * x[16 * (mr + r) + j];
                    }
            const size_t at = vkl_cpu_panel_param(mr, g, r, 0);
            apply(s, rc, rc + VKL_CPU_HP, p->d[at], p->s[at], acc);
        }
    }
}

/* Eight running sums, as the vector paths keep, so that the float results
 * of the paths are close; they are not required to be equal. */
#define FLOAT_DOT(name, type, load)                                  \
    static float name(const type *w, const float *x, size_t K) {    \
        float s[8] = {0};                                            \
        size_t k = 0;                                                \
        for (; k + 8 <= K; k += 8)                                   \
            for (int j = 0; j < 8; j++) s[j] += load(w[k + j]) * x[k + j]; \
        float t = 0;                                                 \
        for (; k < K; k++) t += load(w[k]) * x[k];                   \
        for (int j = 0; j < 8; j++) t += s[j];                       \
        return t;                                                    \
    }

static float id(float v) { return v; }
FLOAT_DOT(f32, float, id)
FLOAT_DOT(f16, uint16_t, vkl_f16_to_f32)
FLOAT_DOT(bf16, uint16_t, vkl_bf16_to_f32)

static void axpy(float *y, float a, const float *x, size_t n) {
    for (size_t k = 0; k < n; k++) y[k] += a * x[k];
}

static void dots(const float *k, size_t stride, const float *q, size_t K, size_t n, float *out) {
    for (size_t t = 0; t < n; t++) out[t] = f32(k + t * stride, q, K);
}

static void wsum(const float *v, size_t stride, const float *w, size_t K, size_t n, float *y) {
    for (size_t k = 0; k < K; k++) y[k] = 0;
    for (size_t t = 0; t < n; t++)
        if (w[t] != 0.0f) axpy(y, w[t], v + t * stride, K);
}

/* cpu_dot.h's quantizer. Plain compares, not fmaxf / lrintf (library calls
 * here); codes 0 where NaN, inf or a tiny max would make a float -> int
 * conversion of a NaN. */
static void quantize(const float *x, size_t K, size_t G, int8_t *q, float *d, int32_t *sum) {
    for (size_t g = 0; g < K / G; g++, x += G, q += G) {
        float amax = 0;
        bool finite = true;
        for (size_t k = 0; k < G; k++) {
            const float v = fabsf(x[k]);
            finite = finite && v <= FLT_MAX;
            amax = v > amax ? v : amax;
        }
        /* below 1e-30 the scale 127 / amax would overflow to inf (and 0 * inf
         * is NaN): such a group's codes are 0, its products 0 */
        const float inv = finite && amax > 1e-30f ? 127.0f / amax : 0.0f;
        int32_t s = 0;
        for (size_t k = 0; k < G; k++) {
            const float r = finite ? x[k] * inv : 0.0f;
            const int v = (int)(r + (r < 0 ? -0.5f : 0.5f)); /* |r| <= 127 (+ rounding): in range */
            q[k] = (int8_t)(v > 127 ? 127 : v < -127 ? -127 : v);
            s += q[k];
        }
        d[g] = finite ? amax / 127.0f : NAN;
        sum[g] = s;
    }
}

float vkl_cpu_mask_scores_portable(float *x, const float *m, size_t n, float scale, bool *seen) {
    float max = -INFINITY;
    bool any = false;
    for (size_t t = 0; t < n; t++) {
        const float sc = !m ? scale * x[t] : m[t] != -INFINITY ? scale * x[t] + m[t] : -INFINITY;
        x[t] = sc;
        any = any || sc != -INFINITY;
        if (sc > max) max = sc;
    }
    *seen = any;
    return max;
}

/* No attention block kernels (dots_rows, wsum_rows NULL): a row at a time. */
const vkl_cpu_dot vkl_cpu_dot_portable = {.name = "portable",
                                          .q4 = q4,
                                          .q4_tile = q4_tile,
                                          .gemm_mr = 6, /* any even count; the 256-bit tiles' */
                                          .q8 = q8,
                                          .f32 = f32,
                                          .f16 = f16,
                                          .bf16 = bf16,
                                          .axpy = axpy,
                                          .dots = dots,
                                          .wsum = wsum,
                                          .quantize = quantize,
                                          .mask_scores = vkl_cpu_mask_scores_portable};
