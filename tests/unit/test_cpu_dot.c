/* The cpu backend's int8 inner products (backends/cpu/cpu_dot.h): every
 * table this CPU runs (portable C; AVX2 on x86; NEON sdot and i8mm smmla on
 * Arm) gives int32 sums equal to sums taken here straight from the tile
 * layout, for 1..4 activation rows a call (i8mm's smmla pairs rows), 1..12
 * chunks and 1..5 groups, on random data and on the extremes where
 * vpmaddubsw's int16 pair sums would saturate without the AVX2 kernels'
 * care: 4-bit codes 15 against -128 / 127, int8 weights -128 / 127 against
 * -127 / 127; then the f32 steps that apply the scales, for 1..4 rows a
 * call, give the portable code's bits for one row at a time, and so does
 * the GEMM tile (q4_tile, where a table has one) on a panel of rows; the
 * activation quantizer gives the portable code's bytes. The float dots,
 * axpy and attention's key loops agree with double arithmetic; attention's
 * 4-row block kernels give the row kernels' bits row by row, and its score
 * loop (mask_scores) the portable one's. A table this CPU lacks is said and
 * skipped (under qemu -cpu max every Arm table runs; ctest's
 * unit.test_cpu_dot.arm-* check which ran). */
#include <float.h>
#include <math.h>

#include "../../backends/cpu/cpu_dot.h"
#include "check.h"

#define MAX_CHUNKS 12
#define MAX_GROUPS 5
#define Q4_BYTES (MAX_GROUPS * MAX_CHUNKS * VKL_CPU_HP * 16)
#define Q8_BYTES (MAX_GROUPS * MAX_CHUNKS * VKL_CPU_HP * VKL_CPU_LP)
#define MAX_ROWS (VKL_CPU_MR > VKL_CPU_GEMM_MR_MAX ? VKL_CPU_MR : VKL_CPU_GEMM_MR_MAX)
#define A_BYTES ((MAX_GROUPS * MAX_CHUNKS + MAX_ROWS) * VKL_CPU_LP) /* room for shifted rows */

static uint64_t rng = 0x9E3779B97F4A7C15u;
static uint32_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

/* Sums read from the layout element by element (cpu_dot.h's comment); a is
 * one activation row, whose group g starts at element g * chunks * 32. */
static void want_q4(const uint8_t *w, const int8_t *a, uint32_t chunks, uint32_t groups, int32_t *out) {
    for (uint32_t g = 0; g < groups; g++)
        for (int i = 0; i < VKL_CPU_HP; i++) {
            int64_t s = 0;
            for (uint32_t c = 0; c < chunks; c++)
                for (int e = 0; e < 32; e++) {
                    const uint8_t b = w[((g * chunks + c) * VKL_CPU_HP + i) * 16 + e % 16];
                    s += (int64_t)(e < 16 ? b & 15 : b >> 4) * a[(g * chunks + c) * 32 + e];
                }
            out[VKL_CPU_HP * g + i] = (int32_t)s;
        }
}

static void want_q8(const int8_t *w, const int8_t *a, uint32_t chunks, uint32_t groups, int32_t *out) {
    for (uint32_t g = 0; g < groups; g++)
        for (int i = 0; i < VKL_CPU_HP; i++) {
            int64_t s = 0;
            for (uint32_t c = 0; c < chunks; c++)
                for (int e = 0; e < 32; e++)
                    s += (int64_t)w[((g * chunks + c) * VKL_CPU_HP + i) * 32 + e] * a[(g * chunks + c) * 32 + e];
            out[VKL_CPU_HP * g + i] = (int32_t)s;
        }
}

enum { RANDOM, MAX_POS, MAX_NEG, MIXED, N_FILLS };

/* 4-bit codes and int8 activations: random, or the largest pair sums. */
static void fill(int kind, uint8_t *q4, int8_t *q8, int8_t *a4, int8_t *a8) {
    for (int i = 0; i < Q4_BYTES; i++) q4[i] = kind == RANDOM ? (uint8_t)next() : 0xFF;
    for (int i = 0; i < Q8_BYTES; i++)
        q8[i] = kind == RANDOM ? (int8_t)next() : kind == MAX_POS ? 127 : kind == MAX_NEG ? -128 : (i & 1 ? 127 : -128);
    for (int i = 0; i < A_BYTES; i++) {
        a4[i] = kind == RANDOM ? (int8_t)next() : kind == MAX_POS ? 127 : kind == MAX_NEG ? -128 : (i & 1 ? 127 : -128);
        int8_t v = (int8_t)next();
        a8[i] = kind == RANDOM ? (v == -128 ? -127 : v) : kind == MAX_POS ? 127 : kind == MAX_NEG ? -127 : (i & 2 ? 127 : -127);
    }
}

/* The int32 sums of `rows` activation rows (row r starts r chunks after
 * a), one group a call: with scale 1, zero 0 and activation scale 1 a
 * kernel's f32 result is (float)isum, exact below 2^24 (12 chunks of 32 at
 * most 128 * 128 a product: 6.3e6). out[r][g][i]. */
static void sums(const vkl_cpu_dot *d, bool four, const void *w, const int8_t *a, uint32_t rows, uint32_t chunks,
                 uint32_t groups, int32_t *out) {
    static const float one[2 * VKL_CPU_HP] = {1, 1, 1, 1, 0, 0, 0, 0}, unit = 1;
    static const int32_t none = 0;
    for (uint32_t g = 0; g < groups; g++) {
        vkl_cpu_act act[VKL_CPU_MR];
        for (uint32_t r = 0; r < rows; r++)
            act[r] = (vkl_cpu_act){a + ((size_t)g * chunks + r) * VKL_CPU_LP, &unit, &none};
        float acc[VKL_CPU_MR * VKL_CPU_HP] = {0};
        if (four) d->q4((const uint8_t *)w + (size_t)g * chunks * VKL_CPU_HP * 16, one, act, rows, chunks, 1, acc);
        else d->q8((const int8_t *)w + (size_t)g * chunks * VKL_CPU_HP * VKL_CPU_LP, one, act, rows, chunks, 1, acc);
        for (uint32_t r = 0; r < rows; r++)
            for (int i = 0; i < VKL_CPU_HP; i++)
                out[(r * groups + g) * VKL_CPU_HP + i] = (int32_t)acc[VKL_CPU_HP * r + i];
    }
}

static void test_int(const vkl_cpu_dot *d, const char *what) {
    static uint8_t q4[Q4_BYTES];
    static int8_t q8[Q8_BYTES], a4[A_BYTES], a8[A_BYTES];
    int32_t got[VKL_CPU_MR * MAX_GROUPS * VKL_CPU_HP], want[VKL_CPU_MR * MAX_GROUPS * VKL_CPU_HP];
    int cases = 0;
    for (int kind = 0; kind < N_FILLS; kind++)
        for (int rep = 0; rep < (kind == RANDOM ? 10 : 1); rep++) {
            fill(kind, q4, q8, a4, a8);
            for (uint32_t rows = 1; rows <= VKL_CPU_MR; rows++)
                for (uint32_t chunks = 1; chunks <= MAX_CHUNKS; chunks++)
                    for (uint32_t groups = 1; groups <= MAX_GROUPS; groups++, cases++)
                        for (int four = 1; four >= 0; four--) {
                            const size_t n = (size_t)groups * VKL_CPU_HP;
                            for (uint32_t r = 0; r < rows; r++) {
                                if (four) want_q4(q4, a4 + (size_t)r * VKL_CPU_LP, chunks, groups, want + r * n);
                                else want_q8(q8, a8 + (size_t)r * VKL_CPU_LP, chunks, groups, want + r * n);
                            }
                            sums(d, four, four ? (const void *)q4 : (const void *)q8, four ? a4 : a8, rows, chunks,
                                 groups, got);
                            CHECK_OR(!memcmp(got, want, rows * n * sizeof(int32_t)), {
                                size_t i = 0;
                                while (got[i] == want[i]) i++;
                                fprintf(stderr, "  %s %s fill %d, %u rows, %u chunks, %u groups: row %zu group %zu "
                                        "weight row %zu: %d, want %d\n", what, four ? "q4" : "q8", kind, rows, chunks,
                                        groups, i / n, i % n / VKL_CPU_HP, i % VKL_CPU_HP, got[i], want[i]);
                                return;
                            });
                        }
        }
    printf("%s: q4 and q8 int32 sums exact in %d cases\n", what, cases);
}

/* Whole blocks with random scales and zeros, against 1..MR activation rows
 * at once: the f32 steps after the sums give the portable code's bits for
 * one row at a time. */
static void test_epilogue(const vkl_cpu_dot *d, const char *what) {
    static uint8_t q4[Q4_BYTES];
    static int8_t q8[Q8_BYTES], a4[A_BYTES], a8[A_BYTES];
    float rec[MAX_GROUPS * 2 * VKL_CPU_HP], ad[VKL_CPU_MR][MAX_GROUPS];
    int32_t as[VKL_CPU_MR][MAX_GROUPS];
    fill(RANDOM, q4, q8, a4, a8);
    for (int i = 0; i < MAX_GROUPS * 2 * VKL_CPU_HP; i++) rec[i] = (float)(next() % 1000) / 997.0f;
    for (int r = 0; r < VKL_CPU_MR; r++)
        for (int g = 0; g < MAX_GROUPS; g++) {
            ad[r][g] = (float)(next() % 1000) / 1013.0f;
            as[r][g] = (int32_t)(next() % 20001) - 10000;
        }
    for (uint32_t rows = 1; rows <= VKL_CPU_MR; rows++)
        for (uint32_t chunks = 1; chunks <= MAX_CHUNKS; chunks++)
            for (uint32_t groups = 1; groups <= MAX_GROUPS; groups += 2)
                for (int four = 1; four >= 0; four--) {
                    vkl_cpu_act act[VKL_CPU_MR];
                    float x[VKL_CPU_MR * VKL_CPU_HP], y[VKL_CPU_MR * VKL_CPU_HP];
                    for (uint32_t r = 0; r < rows; r++)
                        act[r] = (vkl_cpu_act){(four ? a4 : a8) + 32 * r, ad[r], as[r]};
                    for (int i = 0; i < VKL_CPU_MR * VKL_CPU_HP; i++) x[i] = y[i] = (float)(i % 5) - 2.0f;
                    if (four) d->q4(q4, rec, act, rows, chunks, groups, x);
                    else d->q8(q8, rec, act, rows, chunks, groups, x);
                    for (uint32_t r = 0; r < rows; r++) {
                        if (four) vkl_cpu_dot_portable.q4(q4, rec, &act[r], 1, chunks, groups, y + VKL_CPU_HP * r);
                        else vkl_cpu_dot_portable.q8(q8, rec, &act[r], 1, chunks, groups, y + VKL_CPU_HP * r);
                    }
                    CHECKF(!memcmp(x, y, sizeof(x)), "%s %s, %u rows, %u chunks, %u groups: %.9g vs %.9g", what,
                           four ? "q4" : "q8", rows, chunks, groups, x[0], y[0]);
                }
}

/* The panel's parameter places (vkl_cpu_panel_param) for every even row
 * count up to the largest: every (group, row, copy) its own float, all of
 * them filled, and each pair of rows the 8 floats [r r r+1 r+1 | r r r+1
 * r+1] the 256-bit tiles read as one vector (and AVX-512 VNNI's 16 from an
 * even row). (The tile tests below fill the places through the same
 * function, so a place two rows shared would go unseen there.) */
static void test_panel_places(void) {
    enum { N = MAX_GROUPS * VKL_CPU_GEMM_MR_MAX * VKL_CPU_HP };
    for (size_t mr = 2; mr <= VKL_CPU_GEMM_MR_MAX; mr += 2) {
        int seen[N] = {0}, ok = 1;
        for (size_t g = 0; g < MAX_GROUPS; g++)
            for (size_t r = 0; r < mr; r++)
                for (size_t c = 0; c < VKL_CPU_HP; c++) {
                    const size_t at = vkl_cpu_panel_param(mr, g, r, c);
                    if (at >= MAX_GROUPS * mr * VKL_CPU_HP || seen[at]++) ok = 0;
                    const size_t pair = (g * mr + (r & ~(size_t)1)) * VKL_CPU_HP, lane = at - pair;
                    if (at < pair || lane >= 8 || (lane & 3) / 2 != (r & 1)) ok = 0;
                }
        CHECKF(ok, "panel parameter places: one float each, pairs of rows [r r r+1 r+1 | r r r+1 r+1], %zu rows", mr);
    }
}

/* Row r of the tile's panel through the portable row kernel: its group
 * scales and code sums read from the panel's layout (vkl_cpu_panel_param). */
static void portable_row(const uint8_t *q4, const float *rec, const int8_t *a4, const float *pd, const float *ps,
                         size_t mr, int r, uint32_t chunks, float *y) {
    float rd[MAX_GROUPS];
    int32_t rs[MAX_GROUPS];
    for (int g = 0; g < MAX_GROUPS; g++) {
        rd[g] = pd[vkl_cpu_panel_param(mr, (size_t)g, (size_t)r, 0)];
        rs[g] = (int32_t)ps[vkl_cpu_panel_param(mr, (size_t)g, (size_t)r, 0)];
    }
    const vkl_cpu_act act = {a4 + 32 * r, rd, rs};
    vkl_cpu_dot_portable.q4(q4, rec, &act, 1, chunks, MAX_GROUPS, y);
}

/* q4_tile2 (two blocks a call) against q4_tile on each block, bit for bit:
 * blocks of different codes and records, both added to y and from 0, y's
 * rows 11 floats apart (the two blocks' 8 columns, then 3 left alone), on
 * the last fill's panel, 1..12 chunks a group. */
static void test_tile2(const vkl_cpu_dot *d, const char *what, const uint8_t *q4, const uint8_t *other,
                       const int8_t *panel, const float *pd, const float *ps) {
    enum { MAX_MR = VKL_CPU_GEMM_MR_MAX, LDY = 11, RSTRIDE = MAX_GROUPS * 2 * VKL_CPU_HP };
    static uint8_t two[2 * Q4_BYTES];
    memcpy(two, q4, Q4_BYTES);
    memcpy(two + Q4_BYTES, other, Q4_BYTES); /* the int8 fill's bytes as codes */
    float rec[2 * RSTRIDE];
    for (int i = 0; i < 2 * RSTRIDE; i++) rec[i] = (float)(next() % 1000) / 991.0f;
    const int MR = (int)d->gemm_mr;
    int cases = 0;
    for (uint32_t chunks = 1; chunks <= MAX_CHUNKS; chunks++)
        for (int first = 0; first < 2; first++, cases++) {
            const vkl_cpu_panel p = {panel, pd, ps, (uint32_t)MR};
            float got[MAX_MR * LDY], want[MAX_MR * LDY];
            for (int i = 0; i < MAX_MR * LDY; i++) got[i] = want[i] = first ? NAN : (float)(i % 7) - 3.0f;
            d->q4_tile2(two, Q4_BYTES, rec, RSTRIDE, &p, chunks, MAX_GROUPS, first, got, LDY);
            d->q4_tile(two, rec, &p, chunks, MAX_GROUPS, first, want, LDY);
            d->q4_tile(two + Q4_BYTES, rec + RSTRIDE, &p, chunks, MAX_GROUPS, first, want + VKL_CPU_HP, LDY);
            /* bytes: from 0, the NaN left in the other columns compare equal too */
            CHECK_OR(!memcmp(got, want, sizeof(got)), {
                fprintf(stderr, "  %s q4_tile2, %u chunks, first %d: %.9g vs %.9g\n", what, chunks, first, got[0],
                        want[0]);
                return;
            });
        }
    printf("%s: q4_tile2 = q4_tile on each block, bit for bit, in %d cases\n", what, cases);
}

/* The GEMM tile: the table's gemm_mr rows laid out as a panel (cpu_dot.h)
 * against whole blocks, every fill (the int16 extremes included) and 1..12
 * chunks a group, random scales, zeros and activation sums: the bits of the
 * portable row kernel run one row at a time; and from 0 (`first`) into rows
 * of y a stride apart, y not read and its other columns untouched. */
static void test_tile(const vkl_cpu_dot *d, const char *what) {
    enum { MAX_MR = VKL_CPU_GEMM_MR_MAX };
    const int MR = (int)d->gemm_mr;
    CHECKF(MR >= 2 && MR <= MAX_MR && MR % 2 == 0, "%s: gemm_mr %d", what, MR);
    if (MR < 2 || MR > MAX_MR) return;
    static uint8_t q4[Q4_BYTES];
    static int8_t q8[Q8_BYTES], a4[A_BYTES], a8[A_BYTES], panel[MAX_GROUPS * MAX_CHUNKS * VKL_CPU_LP * MAX_MR];
    float rec[MAX_GROUPS * 2 * VKL_CPU_HP], pd[MAX_GROUPS * MAX_MR * VKL_CPU_HP], ps[MAX_GROUPS * MAX_MR * VKL_CPU_HP];
    int cases = 0;
    for (int kind = 0; kind < N_FILLS; kind++) {
        fill(kind, q4, q8, a4, a8);
        for (int i = 0; i < MAX_GROUPS * 2 * VKL_CPU_HP; i++) rec[i] = (float)(next() % 1000) / 997.0f;
        /* each row's group scale and code sum, 4 copies (the panel's layout) */
        for (size_t g = 0; g < MAX_GROUPS; g++)
            for (size_t r = 0; r < (size_t)MR; r++) {
                const float di = (float)(next() % 1000) / 1013.0f, si = (float)((int32_t)(next() % 20001) - 10000);
                for (size_t c = 0; c < VKL_CPU_HP; c++) {
                    pd[vkl_cpu_panel_param((size_t)MR, g, r, c)] = di;
                    ps[vkl_cpu_panel_param((size_t)MR, g, r, c)] = si;
                }
            }
        for (uint32_t chunks = 1; chunks <= MAX_CHUNKS; chunks++, cases++) {
            const uint32_t tiles = chunks * MAX_GROUPS;
            /* row r is a4 + 32 r; its group g scale and sum at vkl_cpu_panel_param(MR, g, r, 0..3) */
            for (uint32_t t = 0; t < tiles; t++)
                for (int half = 0; half < 2; half++)
                    for (int r = 0; r < MR; r++)
                        memcpy(panel + t * VKL_CPU_LP * MR + 16 * (MR * half + r), a4 + 32 * r + t * 32 + 16 * half, 16);
            const vkl_cpu_panel p = {panel, pd, ps, (uint32_t)MR};
            float x[MAX_MR * VKL_CPU_HP], y[MAX_MR * VKL_CPU_HP];
            for (int i = 0; i < MAX_MR * VKL_CPU_HP; i++) x[i] = y[i] = (float)(i % 5) - 2.0f;
            d->q4_tile(q4, rec, &p, chunks, MAX_GROUPS, false, x, VKL_CPU_HP);
            for (int r = 0; r < MR; r++) {
                portable_row(q4, rec, a4, pd, ps, (size_t)MR, r, chunks, y + VKL_CPU_HP * r);
            }
            CHECK_OR(!memcmp(x, y, sizeof(x)), {
                fprintf(stderr, "  %s q4_tile fill %d, %u chunks: %.9g vs %.9g\n", what, kind, chunks, x[0], y[0]);
                return;
            });
            /* from 0 (`first`: y not read, NaN there) into rows LDY apart, the columns between untouched */
            enum { LDY = 7 };
            float z[MAX_MR * LDY], y0[MAX_MR * VKL_CPU_HP] = {0};
            for (int i = 0; i < MAX_MR * LDY; i++) z[i] = NAN;
            d->q4_tile(q4, rec, &p, chunks, MAX_GROUPS, true, z, LDY);
            for (int r = 0; r < MR; r++) {
                portable_row(q4, rec, a4, pd, ps, (size_t)MR, r, chunks, y0 + VKL_CPU_HP * r);
                CHECK_OR(!memcmp(z + LDY * r, y0 + VKL_CPU_HP * r, VKL_CPU_HP * sizeof(float)) &&
                             isnan(z[LDY * r + VKL_CPU_HP]) && isnan(z[LDY * r + LDY - 1]),
                         {
                             fprintf(stderr, "  %s q4_tile from 0, fill %d, %u chunks, row %d\n", what, kind, chunks, r);
                             return;
                         });
            }
        }
    }
    printf("%s: q4_tile (%d rows) = one row at a time, bit for bit, in %d cases\n", what, MR, cases);
    if (d->q4_tile2) test_tile2(d, what, q4, (const uint8_t *)q8, panel, pd, ps);
}

static void test_float(const vkl_cpu_dot *d, const char *what) {
    enum { K = 1000 };
    static float w[K], x[K];
    static uint16_t h[K], b[K];
    for (int k = 0; k < K; k++) {
        w[k] = (float)((int)(next() % 2001) - 1000) / 1000.0f;
        x[k] = (float)((int)(next() % 2001) - 1000) / 1000.0f;
        h[k] = vkl_f32_to_f16(w[k]);
        b[k] = vkl_f32_to_bf16(w[k]);
    }
    for (size_t n = 0; n <= K; n += n < 40 ? 1 : 137) {
        double s32 = 0, s16 = 0, sb16 = 0, mag = 1e-30;
        for (size_t k = 0; k < n; k++) {
            s32 += (double)w[k] * x[k];
            s16 += (double)vkl_f16_to_f32(h[k]) * x[k];
            sb16 += (double)vkl_bf16_to_f32(b[k]) * x[k];
            mag += fabs((double)w[k] * x[k]);
        }
        CHECKF(fabs(d->f32(w, x, n) - s32) <= 1e-6 * mag, "%s f32 K %zu", what, n);
        CHECKF(fabs(d->f16(h, x, n) - s16) <= 1e-6 * mag, "%s f16 K %zu", what, n);
        CHECKF(fabs(d->bf16(b, x, n) - sb16) <= 1e-6 * mag, "%s bf16 K %zu", what, n);
        float y[K];
        for (size_t k = 0; k < n; k++) y[k] = x[k];
        d->axpy(y, 0.75f, w, n);
        for (size_t k = 0; k < n; k++) CHECKF(fabs(y[k] - (x[k] + 0.75 * w[k])) <= 1e-6, "%s axpy %zu of %zu", what, k, n);
    }
}

/* Attention's loops over keys a stride apart (dots, wsum) against double
 * arithmetic: head sizes with and without a multiple of 8 and above the 64
 * floats wsum keeps in registers, key counts off the 8- and 4-key rounds
 * (every key's score = its score alone, bit for bit, whichever round it fell
 * in: the block kernels depend on it); a key of weight 0 whose row is NaN is
 * left unread. */
static void test_keys(const vkl_cpu_dot *d, const char *what) {
    enum { MAX_K = 136, MAX_N = 23, STRIDE = 150 };
    static float rows[MAX_N * STRIDE], q[MAX_K], w[MAX_N], out[MAX_N], y[MAX_K];
    const size_t heads[] = {1, 5, 8, 64, 72, 128, 136};
    for (size_t i = 0; i < MAX_N * STRIDE; i++) rows[i] = (float)((int)(next() % 2001) - 1000) / 1000.0f;
    for (size_t i = 0; i < MAX_K; i++) q[i] = (float)((int)(next() % 2001) - 1000) / 1000.0f;
    for (size_t hi = 0; hi < sizeof(heads) / sizeof(heads[0]); hi++)
        for (size_t n = 1; n <= MAX_N; n += 3) {
            const size_t K = heads[hi];
            for (size_t t = 0; t < n; t++) w[t] = t % 5 == 2 ? 0.0f : (float)(next() % 1000) / 1000.0f;
            for (size_t t = 2; t < n; t += 5) rows[t * STRIDE] = NAN; /* weight-0 keys: must stay unread */
            d->wsum(rows, STRIDE, w, K, n, y);
            for (size_t t = 2; t < n; t += 5) rows[t * STRIDE] = 0.5f;
            d->dots(rows, STRIDE, q, K, n, out);
            for (size_t t = 0; t < n; t++) { /* a key's score alone = in any round of n keys, bit for bit */
                float one;
                d->dots(rows + t * STRIDE, STRIDE, q, K, 1, &one);
                CHECKF(!memcmp(&one, &out[t], sizeof(one)), "%s dots K %zu: key %zu of %zu differs alone", what, K,
                       t, n);
            }
            for (size_t t = 0; t < n; t++) {
                double s = 0, mag = 1e-30;
                for (size_t k = 0; k < K; k++) {
                    s += (double)rows[t * STRIDE + k] * q[k];
                    mag += fabs((double)rows[t * STRIDE + k] * q[k]);
                }
                CHECKF(fabs(out[t] - s) <= 1e-6 * mag, "%s dots K %zu key %zu of %zu", what, K, t, n);
            }
            for (size_t k = 0; k < K; k++) {
                double s = 0, mag = 1e-30;
                for (size_t t = 0; t < n; t++) {
                    s += (double)w[t] * rows[t * STRIDE + k];
                    mag += fabs((double)w[t] * rows[t * STRIDE + k]);
                }
                CHECKF(fabs(y[k] - s) <= 1e-6 * mag, "%s wsum K %zu element %zu, %zu keys: %g vs %g", what, K, k, n,
                       y[k], s);
            }
        }
}

static bool same_float(float a, float b) { return (a != a && b != b) || !memcmp(&a, &b, sizeof(a)); }

/* Attention's block kernels (dots_rows, wsum_rows, where a table has them)
 * against dots and wsum a row at a time: the same bits for 1..4 rows, head
 * sizes on and off the vector widths, key counts on and off the rounds (up
 * to 140); weights 0 in some rows (those rows must add nothing: a NaN V row
 * there stays out of them) and in all rows (that V row must stay unread). */
static void test_key_rows(const vkl_cpu_dot *d, const char *what) {
    enum { MAX_K = 136, MAX_N = 140, STRIDE = 150, ROWS = VKL_CPU_ATTN_ROWS };
    if (!d->dots_rows || !d->wsum_rows) {
        printf("%s: no attention block kernels (a row at a time)\n", what);
        return;
    }
    static float keys[MAX_N * STRIDE], q[ROWS][MAX_K], w[ROWS][MAX_N], out[ROWS][MAX_N], y[ROWS][MAX_K];
    float one[MAX_N], alone[MAX_K];
    const size_t heads[] = {1, 5, 8, 16, 20, 24, 40, 48, 64, 72, 100, 128, 136};
    int cases = 0;
    for (size_t i = 0; i < MAX_N * STRIDE; i++) keys[i] = (float)((int)(next() % 2001) - 1000) / 1000.0f;
    for (size_t r = 0; r < ROWS; r++)
        for (size_t i = 0; i < MAX_K; i++) q[r][i] = (float)((int)(next() % 2001) - 1000) / 1000.0f;
    for (uint32_t rows = 1; rows <= ROWS; rows++)
        for (size_t hi = 0; hi < sizeof(heads) / sizeof(heads[0]); hi++)
            for (size_t n = 1; n <= MAX_N; n += n < 23 ? 2 : 39) { /* 1..23, then 62, 101, 140: across wsum tiles */
                const size_t K = heads[hi];
                const float *qp[ROWS], *wp[ROWS];
                float *op[ROWS], *yp[ROWS];
                for (size_t r = 0; r < ROWS; r++) qp[r] = q[r], wp[r] = w[r], op[r] = out[r], yp[r] = y[r];
                for (size_t r = 0; r < rows; r++)
                    for (size_t t = 0; t < n; t++)
                        w[r][t] = t % 7 == 3 || (t + r) % 4 == 1 ? 0.0f : (float)(next() % 1000 + 1) / 1000.0f;
                for (size_t t = 3; t < n; t += 7) keys[t * STRIDE + K - 1] = NAN; /* weight 0 in every row */
                if (n > 1) keys[STRIDE] = NAN; /* key 1: weight 0 in row 0 only */
                d->wsum_rows(keys, STRIDE, wp, rows, K, n, yp);
                for (size_t r = 0; r < rows; r++) {
                    d->wsum(keys, STRIDE, w[r], K, n, alone);
                    for (size_t k = 0; k < K; k++)
                        CHECKF(same_float(y[r][k], alone[k]), "%s wsum_rows: %u rows K %zu n %zu, row %zu [%zu]",
                               what, rows, K, n, r, k);
                    if (r == 0) CHECKF(y[0][0] == y[0][0], "%s wsum_rows: a weight-0 NaN row read", what);
                }
                for (size_t t = 3; t < n; t += 7) keys[t * STRIDE + K - 1] = 0.25f;
                keys[STRIDE] = 0.5f;
                d->dots_rows(keys, STRIDE, qp, rows, K, n, op);
                for (size_t r = 0; r < rows; r++) {
                    d->dots(keys, STRIDE, q[r], K, n, one);
                    CHECKF(!memcmp(one, out[r], n * sizeof(float)), "%s dots_rows: %u rows K %zu n %zu, row %zu",
                           what, rows, K, n, r);
                }
                cases++;
            }
    printf("%s: dots_rows and wsum_rows = a row at a time, bit for bit, in %d cases\n", what, cases);
}

/* Attention's scores (mask_scores) against the portable loop, bit for bit:
 * lengths 0..40 (8-key rounds and tails), no mask and masks of 0, random
 * values, -inf and the lowest float; a NaN and a +inf product, each under
 * -inf (which must give -inf) and not; rows all -inf (seen false, max
 * -inf). The max compares by value (a zero's sign may differ). */
static void test_mask_scores(const vkl_cpu_dot *d, const char *what) {
    enum { MAX_N = 40 };
    float x[2][MAX_N], m[MAX_N];
    int cases = 0;
    for (size_t n = 0; n <= MAX_N; n++)
        for (int kind = 0; kind < 4; kind++) {
            for (size_t t = 0; t < n; t++) {
                x[0][t] = (float)((int)(next() % 2001) - 1000) / 100.0f;
                const uint32_t r = (uint32_t)(next() % 8);
                m[t] = kind == 3 ? -INFINITY : r == 0 ? -INFINITY : r == 1 ? -FLT_MAX : r < 5 ? 0.0f : -(float)r;
            }
            if (n > 9) x[0][3] = NAN, x[0][9] = INFINITY, m[9] = -INFINITY;
            if (n > 12) x[0][11] = INFINITY, x[0][12] = NAN, m[12] = -INFINITY;
            if (n > 12 && kind < 3) m[11] = 0.0f, m[3] = 0.0f; /* seen NaN and +inf scores */
            memcpy(x[1], x[0], n * sizeof(float));
            const float *mp = kind == 0 ? NULL : m;
            bool seen[2];
            const float max0 = d->mask_scores(x[0], mp, n, 0.125f, &seen[0]);
            const float max1 = vkl_cpu_mask_scores_portable(x[1], mp, n, 0.125f, &seen[1]);
            bool same = true;
            for (size_t t = 0; t < n; t++) same = same && same_float(x[0][t], x[1][t]);
            CHECKF(same, "%s mask_scores n %zu kind %d: scores differ from portable", what, n, kind);
            CHECKF(max0 == max1 && seen[0] == seen[1], "%s mask_scores n %zu kind %d: max %g seen %d vs %g %d", what,
                   n, kind, max0, seen[0], max1, seen[1]);
            if (kind == 3) CHECKF(!seen[0] && max0 == -INFINITY, "%s mask_scores n %zu: all masked", what, n);
            if (n > 9 && kind) CHECKF(x[0][9] == -INFINITY, "%s mask_scores: +inf under -inf", what);
            cases++;
        }
    printf("%s: mask_scores = portable, bit for bit, in %d cases\n", what, cases);
}

/* Attention's softmax weights (softmax_exp, where a table has one) against
 * double exp: within 2 ulp (or 2 units of the smallest subnormal), +0 below
 * VKL_CPU_EXP_ZERO_BELOW and for -inf, NaN kept, every length 1..40 (the
 * 8-lane rounds and their tails), the sum within 1e-6 of the double sum
 * (and the weights' subnormal units). */
static void test_softmax_exp(const vkl_cpu_dot *d, const char *what) {
    enum { MAX_N = 40 };
    float x[MAX_N], in[MAX_N];
    int cases = 0;
    for (size_t n = 1; n <= MAX_N; n++) {
        const float max = (float)((int)(next() % 2001) - 1000) / 100.0f;
        for (size_t t = 0; t < n; t++) in[t] = max - (float)(next() % 1100000) / 10000.0f; /* max - [0, 110) */
        if (n > 3) in[1] = max, in[2] = -INFINITY;             /* weight 1; a masked key */
        if (n > 5) in[3] = max - 87.5f, in[4] = max - 103.9f;  /* subnormal results */
        if (n > 6) in[5] = max + VKL_CPU_EXP_ZERO_BELOW - 0.01f; /* just below the cut */
        if (n == 17) in[9] = NAN;
        memcpy(x, in, n * sizeof(float));
        const float sum = d->softmax_exp(x, n, max);
        double want_sum = 0;
        for (size_t t = 0; t < n; t++) {
            if (isnan(in[t])) {
                CHECKF(isnan(x[t]), "%s softmax_exp: NaN in, %g out", what, x[t]);
                continue;
            }
            /* d = in - max rounds once in f32 first, as the kernel sees it */
            const double dd = (double)(in[t] - max), ef = exp(dd);
            if (dd < VKL_CPU_EXP_ZERO_BELOW) {
                CHECKF(x[t] == 0.0f && !signbit(x[t]), "%s softmax_exp: %g below the cut gave %g", what, dd, x[t]);
                continue;
            }
            const double ulp = ef < 1.1754943508222875e-38 ? 1.401298464324817e-45 : ef * 1.1920928955078125e-07;
            CHECKF(fabs((double)x[t] - ef) <= 2 * ulp, "%s softmax_exp: e^%.9g = %.9g, kernel %.9g", what, dd, ef, x[t]);
            want_sum += ef; /* of the rounded difference, as each weight is held to */
        }
        /* plus each weight's 2 subnormal units: with n <= 3 no input is the
         * max, and every weight may be subnormal (a sum of 7e-46 rounds to 0) */
        if (n != 17)
            CHECKF(fabs(sum - want_sum) <= 1e-6 * want_sum + 2.0 * (double)n * 1.401298464324817e-45,
                   "%s softmax_exp: sum %.9g of %.9g", what, sum, want_sum);
        else CHECKF(isnan(sum), "%s softmax_exp: a NaN weight, sum %g", what, sum);
        cases++;
    }
    printf("%s: softmax_exp within 2 ulp of exp in %d rows\n", what, cases);
}

/* The quantizer on random rows, rows with exact halves (max |x| = 127:
 * x * 1), NaN, inf, tiny and all-zero groups, and -0: the same bytes, scale
 * bits and sums as the portable code. */
static void test_quantize(const vkl_cpu_dot *d, const char *what) {
    enum { G = 64, NG = 8, K = G * NG };
    static float x[K];
    int8_t q[2][K];
    float sc[2][NG];
    int32_t sum[2][NG];
    for (int rep = 0; rep < 50; rep++) {
        for (int k = 0; k < K; k++) x[k] = (float)((int)(next() % 20001) - 10000) / (rep % 2 ? 7.0f : 10000.0f);
        x[0] = 127.0f; /* group 0: max 127, so x * (127 / 127) keeps the halves below exact */
        for (int k = 1; k < G; k++) x[k] = k < 8 ? (float)k - 3.5f : 0.0f;
        x[G + 5] = NAN;
        x[2 * G + 9] = rep % 3 ? INFINITY : -INFINITY;
        for (int k = 3 * G; k < 4 * G; k++) x[k] = (float)(k % 7) * 1e-35f;
        for (int k = 4 * G; k < 5 * G; k++) x[k] = k % 2 ? -0.0f : 0.0f;
        d->quantize(x, K, G, q[0], sc[0], sum[0]);
        vkl_cpu_dot_portable.quantize(x, K, G, q[1], sc[1], sum[1]);
        CHECKF(!memcmp(q[0], q[1], sizeof(q[0])), "%s quantize codes, rep %d", what, rep);
        CHECKF(!memcmp(sc[0], sc[1], sizeof(sc[0])), "%s quantize scales, rep %d", what, rep);
        CHECKF(!memcmp(sum[0], sum[1], sizeof(sum[0])), "%s quantize sums, rep %d", what, rep);
    }
    CHECK(q[1][1] == -3 && q[1][2] == -2 && q[1][4] == 1 && q[1][5] == 2); /* -2.5 -> -3, 0.5 -> 1: away from zero */
    CHECK(isnan(sc[1][1]) && isnan(sc[1][2]) && q[1][G] == 0 && sum[1][1] == 0 && sum[1][3] == 0);
}

static void test_table(const vkl_cpu_dot *d, int present) {
    if (!present) {
        printf("%s: not on this CPU, skipped\n", d->name);
        return;
    }
    test_int(d, d->name);
    test_epilogue(d, d->name);
    if (d->q4_tile) test_tile(d, d->name);
    else printf("%s: no GEMM tile (prefill runs the row kernels)\n", d->name);
    test_quantize(d, d->name);
    test_float(d, d->name);
    test_keys(d, d->name);
    test_key_rows(d, d->name);
    test_mask_scores(d, d->name);
    if (d->softmax_exp) test_softmax_exp(d, d->name);
    else printf("%s: no softmax_exp (attention takes libm's expf)\n", d->name);
}

int main(void) {
    test_panel_places();
    test_table(&vkl_cpu_dot_portable, 1);
#ifdef VKL_CPU_HAVE_AVX2
    test_table(&vkl_cpu_dot_avx2, vkl_cpu_has_avx2());
    /* the VNNI tables are AVX2's but for the GEMM tile (and AVX-512's attention blocks) */
    if (vkl_cpu_has_avx512vnni()) { /* and its attention blocks in zmm */
        test_tile(&vkl_cpu_dot_avx512vnni, vkl_cpu_dot_avx512vnni.name);
        test_key_rows(&vkl_cpu_dot_avx512vnni, vkl_cpu_dot_avx512vnni.name);
    } else printf("avx512vnni: not on this CPU (or the OS does not save zmm), skipped\n");
    if (vkl_cpu_has_avxvnni()) test_tile(&vkl_cpu_dot_avxvnni, vkl_cpu_dot_avxvnni.name);
    else printf("avxvnni: not on this CPU, skipped\n");
#endif
#ifdef VKL_CPU_HAVE_NEON
    test_table(&vkl_cpu_dot_neon, vkl_cpu_has_dotprod());
    test_table(&vkl_cpu_dot_i8mm, vkl_cpu_has_i8mm());
#endif
    printf("%d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
