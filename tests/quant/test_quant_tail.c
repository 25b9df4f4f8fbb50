/* engine/quant with a K that is not a multiple of the group: the short last
 * group of each row (docs/quant.md, "The short last group"). Its header is
 * checked against the format's rule computed here over the group's own
 * values only, its codes past K against the code of 0, its values against
 * the format's error bound, the whole block against a full group of the
 * same values padded with zeros (zeros move neither the range nor max |w|),
 * and the sizes and packed layouts against whole groups. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_rng.h"
#include "context.h"
#include "graph.h"
#include "quant/quant.h"

static const vkl_dtype formats[] = {VKL_DTYPE_Q_E0M4, VKL_DTYPE_Q_INT4, VKL_DTYPE_Q_INT8};
/* {K, group}: the bundled model's down projections (688 at 128, 64, 32),
 * the op cases' 40 at 32 and 100 at 64, and a K below one group */
static const int64_t shapes[][2] = {{688, 128}, {688, 64}, {688, 32}, {40, 32}, {100, 64}, {20, 32}};
#define ROWS 7

/* The smallest fp16 whose value is >= x (x finite, >= 0): a search over the
 * codes, independent of engine/quant's rounding helper. */
static uint16_t f16_at_least(double x) {
    uint16_t lo = 0, hi = 0x7C00; /* inf: above every finite x */
    while (lo < hi) {
        uint16_t mid = (uint16_t)((lo + hi) / 2);
        if ((double)vkl_f16_to_f32(mid) >= x) hi = mid;
        else lo = (uint16_t)(mid + 1);
    }
    return lo;
}

static unsigned nibble(const uint8_t *qs, size_t i) { return (qs[i / 2] >> (4 * (i & 1))) & 15u; }

/* Row r of w: kinds of values, so that a short group's range differs from
 * the row's full groups (row 1: the row's largest values in the tail; row 2:
 * an all-zero tail; row 3: an all-zero row; row 4: a negative-only tail). */
static void fill_row(rng *g, float *w, int64_t K, int64_t tail0, int64_t r) {
    for (int64_t k = 0; k < K; k++) w[k] = 0.05f * rnd_gauss(g);
    if (r == 1)
        for (int64_t k = tail0; k < K; k++) w[k] *= 40.0f;
    if (r == 2)
        for (int64_t k = tail0; k < K; k++) w[k] = 0.0f;
    if (r == 3)
        for (int64_t k = 0; k < K; k++) w[k] = 0.0f;
    if (r == 4)
        for (int64_t k = tail0; k < K; k++) w[k] = -fabsf(w[k]);
}

/* The short block of one row: header from the tail values alone, codes past
 * them the code of 0, values within the format's bound. */
static void check_short_block(vkl_dtype t, uint32_t group, const uint8_t *blk, const float *tail, int64_t len,
                              const float *deq) {
    double lo = 0, hi = 0, amax = 0;
    for (int64_t i = 0; i < len; i++) {
        lo = fmin(lo, tail[i]);
        hi = fmax(hi, tail[i]);
        amax = fmax(amax, fabs(tail[i]));
    }
    if (t == VKL_DTYPE_Q_INT8) {
        float d;
        uint32_t u = vkl_quant_rd32(blk);
        memcpy(&d, &u, 4);
        CHECKF(d == (float)amax / 127.0f, "int8 short group: d %g, max|w|/127 = %g", (double)d, amax / 127.0);
        for (int64_t i = len; i < group; i++) CHECK_OR(((const int8_t *)(blk + 4))[i] == 0, return);
        for (int64_t i = 0; i < len; i++)
            CHECK_OR(fabs(deq[i] - tail[i]) <= d * 0.5 + fabs(tail[i]) * ldexp(1.0, -23), return);
        return;
    }
    const uint16_t d = vkl_quant_rd16(blk), z = vkl_quant_rd16(blk + 2);
    const uint8_t *qs = blk + 4;
    const double df = vkl_f16_to_f32(d);
    if (hi == lo) { /* all zero: d = 0 */
        CHECK(d == 0);
    } else if (t == VKL_DTYPE_Q_INT4) {
        CHECKF(d == f16_at_least((hi - lo) / 15.0), "int4 short group: d 0x%04x, want 0x%04x", d,
               f16_at_least((hi - lo) / 15.0));
    } else {
        const double span = (16.0 - 1.0 / 64.0) * ldexp(1.0, 1 - 4); /* n = 1 */
        CHECKF(d == f16_at_least((hi - lo) / span), "e0m4 short group: d 0x%04x, want 0x%04x", d,
               f16_at_least((hi - lo) / span));
    }
    /* the code of 0: int4's z, E0M4's q0 (the bias's code) */
    const unsigned zero = t == VKL_DTYPE_Q_INT4 ? (unsigned)vkl_f16_to_f32(z) : (z >> 6) & 15u;
    for (int64_t i = len; i < group; i++) CHECK_OR(nibble(qs, (size_t)i) == zero, return);
    /* bounds (docs/quant.md): int4 d/2; E0M4 below one code step (1 + 2^-7)·δ */
    const double step = t == VKL_DTYPE_Q_INT4 ? df : df * ldexp(1.0, 1 - 4);
    const double bound = t == VKL_DTYPE_Q_INT4 ? 0.5 * df : (1.0 + 1.0 / 128) * step;
    for (int64_t i = 0; i < len; i++)
        CHECK_OR(fabs(deq[i] - tail[i]) <= bound + 1e-6 * step, {
            fprintf(stderr, "  %s short group elem %lld: w %g deq %g bound %g\n", vkl_dtype_name(t), (long long)i,
                    (double)tail[i], (double)deq[i], bound);
            return;
        });
}

static void test_short_groups(vkl_context *ctx) {
    rng g = {0x51A7E5u};
    for (size_t f = 0; f < 3; f++)
        for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
            const vkl_dtype t = formats[f];
            const int64_t K = shapes[s][0];
            const uint32_t group = (uint32_t)shapes[s][1];
            const int64_t G = (K + group - 1) / group, tail0 = (G - 1) * group, len = K - tail0;
            const size_t block = vkl_quant_block_bytes(t, group);
            size_t bytes = 0, shaped = 0;
            CHECK_OK(ctx, vkl_quant_canonical_bytes(ctx, t, group, ROWS, K, &bytes));
            CHECKF(bytes == (size_t)(ROWS * G) * block, "%s K %lld group %u: %zu bytes", vkl_dtype_name(t),
                   (long long)K, group, bytes);
            CHECK(vkl_tensor_bytes_shaped(t, group, ROWS * K, K, &shaped) && shaped == bytes);
            CHECK(vkl_quant_row_groups(K, group) == G);

            float *w = calloc((size_t)(ROWS * K), sizeof(float)), *deq = calloc((size_t)(ROWS * K), sizeof(float));
            float *pad = calloc(group, sizeof(float));
            uint8_t *q = malloc(bytes), *one = malloc(block);
            for (int64_t r = 0; r < ROWS; r++) fill_row(&g, w + r * K, K, tail0, r);
            vkl_quant_spec spec;
            vkl_quant_spec_init(&spec, t);
            spec.group = group;
            CHECK_OK(ctx, vkl_quant_quantize(ctx, &spec, w, ROWS, K, q, bytes));
            CHECK_OK(ctx, vkl_quant_dequantize(ctx, t, group, q, bytes, ROWS, K, deq));
            for (int64_t r = 0; r < ROWS; r++) {
                const uint8_t *last = q + (size_t)(r * G + G - 1) * block;
                check_short_block(t, group, last, w + r * K + tail0, len, deq + r * K + tail0);
                /* the same block as a full group of the values padded with zeros */
                memset(pad, 0, group * sizeof(float));
                memcpy(pad, w + r * K + tail0, (size_t)len * sizeof(float));
                CHECK_OK(ctx, vkl_quant_quantize(ctx, &spec, pad, 1, group, one, block));
                CHECKF(!memcmp(one, last, block), "%s K %lld group %u row %lld: short block differs from the "
                       "zero-padded group", vkl_dtype_name(t), (long long)K, group, (long long)r);
                /* the full groups before it are what they were */
                for (int64_t gi = 0; gi + 1 < G; gi++) {
                    CHECK_OK(ctx, vkl_quant_quantize(ctx, &spec, w + r * K + gi * group, 1, group, one, block));
                    CHECK(!memcmp(one, q + (size_t)(r * G + gi) * block, block));
                }
            }

            /* the packed layouts hold whole groups and give back the bytes */
            vkl_quant_gpu_layout gl;
            CHECK_OK(ctx, vkl_quant_gpu_layout_make(ctx, t, group, ROWS, K, &gl));
            CHECK(gl.cols == G * group && gl.row_stride % 16 == 0);
            uint8_t *packed = malloc(gl.total_bytes), *back = malloc(bytes);
            CHECK_OK(ctx, vkl_quant_pack_gpu(ctx, &gl, q, bytes, packed, gl.total_bytes));
            memset(back, 0xA5, bytes);
            CHECK_OK(ctx, vkl_quant_unpack_gpu(ctx, &gl, packed, gl.total_bytes, back, bytes));
            CHECK(!memcmp(back, q, bytes));
            free(packed);
            vkl_quant_cpu_layout cl;
            CHECK_OK(ctx, vkl_quant_cpu_layout_make(ctx, t, group, ROWS, K, 8, 8, &cl));
            CHECK(cl.cols == G * group);
            packed = malloc(cl.total_bytes);
            CHECK_OK(ctx, vkl_quant_pack_cpu(ctx, &cl, q, bytes, packed, cl.total_bytes));
            memset(back, 0xA5, bytes);
            CHECK_OK(ctx, vkl_quant_unpack_cpu(ctx, &cl, packed, cl.total_bytes, back, bytes));
            CHECK(!memcmp(back, q, bytes));

            /* a short block's header is validated like any other: row 5's, made negative */
            uint8_t *bad = q + (size_t)(5 * G + G - 1) * block;
            bad[t == VKL_DTYPE_Q_INT8 ? 3 : 1] |= 0x80;
            CHECK(vkl_quant_dequantize(ctx, t, group, q, bytes, ROWS, K, deq) == VKL_ERR_FORMAT);
            char want[64];
            snprintf(want, sizeof(want), "row 5, group %lld", (long long)(G - 1));
            CHECK_MSG(ctx, want);
            free(packed);
            free(back);
            free(w);
            free(deq);
            free(pad);
            free(q);
            free(one);
        }
}

/* Sizes: a short last group costs one whole block per row; whole groups as before. */
static void test_sizes(vkl_context *ctx) {
    size_t b = 0;
    CHECK(vkl_tensor_bytes_shaped(VKL_DTYPE_Q_E0M4, 128, 256 * 688, 688, &b) && b == 256u * 6 * 68);
    CHECK(vkl_tensor_bytes_shaped(VKL_DTYPE_Q_INT8, 32, 3 * 40, 40, &b) && b == 3u * 2 * 36);
    CHECK(vkl_tensor_bytes_shaped(VKL_DTYPE_Q_INT4, 32, 2 * 64, 64, &b) && b == 4u * 20);
    CHECK(vkl_tensor_bytes_shaped(VKL_DTYPE_F32, 0, 10, 5, &b) && b == 40);
    CHECK(!vkl_tensor_bytes_shaped(VKL_DTYPE_Q_E0M4, 128, 100, 48, &b)); /* not whole rows */
    CHECK(!vkl_tensor_bytes_shaped(VKL_DTYPE_Q_E0M4, 48, 96, 96, &b));   /* 4-bit groups: multiples of 32 */
    CHECK(!vkl_tensor_bytes_shaped(VKL_DTYPE_Q_INT8, 0, 40, 40, &b));    /* no group: refused, not a division */
    CHECK(vkl_tensor_bytes_shaped(VKL_DTYPE_Q_INT8, 32, 0, 0, &b) && b == 0);
    CHECK(vkl_tensor_bytes_shaped(VKL_DTYPE_Q_INT8, 32, 0, 40, &b) && b == 0);
    CHECK(vkl_quant_canonical_bytes(ctx, VKL_DTYPE_Q_E0M4, 64, 1, 96, &b) == VKL_OK && b == 2 * 36);
    CHECK(vkl_quant_canonical_bytes(ctx, VKL_DTYPE_Q_INT4, 32, 2, 0, &b) == VKL_ERR_SHAPE);
}

int main(void) {
    vkl_context *ctx;
    if (vkl_context_create(NULL, &ctx)) return 1;
    test_sizes(ctx);
    test_short_groups(ctx);
    vkl_context_destroy(ctx);
    printf("test_quant_tail: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
