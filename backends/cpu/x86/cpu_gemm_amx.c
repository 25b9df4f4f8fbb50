/* Prefill's GEMM on Intel AMX (docs/cpu.md, "AMX"): a 4-bit weight against
 * M >= VKL_CPU_AMX_MIN_ROWS quantized activation rows with tdpbusd, which
 * multiplies a 16 x 64 tile of unsigned bytes (16 weight rows, 64 codes of
 * K, 0..15) by a 64 x 16 tile of signed ones (16 activation rows) into 16 x
 * 16 exact int32 sums. Per weight group the sums go through the f32 step of
 * cpu_dot.h, each product and difference rounded once, on AVX-512, so the
 * output has the bits of every other kernel of this backend
 * (tests/unit/test_cpu_amx.c).
 *
 * A worker takes blocks of 32 weight rows: it unpacks the block's codes
 * (the CPU layout's 4-row tiles) into bytes, 32 rows of Kq, once, and then
 * runs every pair of 16-row activation panels past them, two A tiles x two
 * B tiles into four C tiles per 64 codes of K. The f32 sums of the block's
 * outputs stay in the worker's scratch ([32][M rounded up]) until the last
 * group, and go to Y transposed. K is walked in slices (whole groups) whose
 * panels fit SLICE_BYTES, so the panels' slice stays in L2 while the
 * unpacked block (at most 32 x 8192 bytes) does too.
 *
 * Compiled with -mamx-tile -mamx-int8 -mavx512f -mavx512bw -mavx512vl and
 * called only after vkl_cpu_has_amx() (which also asked Linux for the tile
 * state). */
#include <immintrin.h>
#include <string.h>

#include "../cpu_backend.h"

#define ROWS 32   /* weight rows a block: two A tiles */
#define TOKENS 16 /* activation rows a panel: one B tile */
#define STEP 64   /* codes of K a tile product */
#define SLICE_BYTES (768u << 10)

/* ldtilecfg's operand, palette 1. */
typedef struct tile_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

/* Tiles 0..3: C, weight half h (rows 16h..16h+15) x panel t at 2h + t,
 * int32 16 x 16; 4, 5: A, a half's 16 rows x 64 codes; 6, 7: B, a panel's
 * 16 quads of K x 16 rows x 4 codes. Each thread loads the configuration
 * itself: it is per thread state. */
static void tiles_on(void) {
    tile_config c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int t = 0; t < 8; t++) c.colsb[t] = 64, c.rows[t] = 16;
    _tile_loadconfig(&c);
}

typedef struct amx_job {
    const vkl_cpu_weight *w;
    int64_t M, Mpad; /* Mpad: M rounded up to two panels */
    size_t Kq, ng, G, slice_groups, panels, panel_bytes, work_bytes;
    const int8_t *xq;
    const float *xd;
    const int32_t *xs;
    const float *bias;
    float *Y;
    /* panels: per panel the codes [Kq / 4][16][4], then per group the 16
     * rows' scales, then their code sums as floats; past M: codes 0, scale 0 */
    uint8_t *panel;
    /* per worker: the unpacked block [32][Kq], per group the 32 rows' scale
     * then zero, the f32 sums [32][Mpad] */
    uint8_t *work;
} amx_job;

static size_t panel_bytes(size_t Kq, size_t ng) { return TOKENS * Kq + 2 * TOKENS * ng * sizeof(float); }
static size_t work_bytes(size_t Kq, size_t ng, int64_t Mpad) {
    return ROWS * Kq + 2 * ROWS * ng * sizeof(float) + ROWS * (size_t)Mpad * sizeof(float);
}
static int64_t rows_padded(int64_t M) { return (M + 2 * TOKENS - 1) / (2 * TOKENS) * (2 * TOKENS); }

bool vkl_cpu_amx_takes(const vkl_cpu_weight *w, int64_t M) {
    return M >= VKL_CPU_AMX_MIN_ROWS && w->dtype != VKL_DTYPE_Q_INT8 && w->lay.group % STEP == 0;
}

size_t vkl_cpu_amx_scratch(const vkl_cpu_weight *w, int64_t M, unsigned threads) {
    const size_t Kq = (size_t)w->lay.cols, ng = Kq / w->lay.group;
    const int64_t Mpad = rows_padded(M);
    return (size_t)(Mpad / TOKENS) * panel_bytes(Kq, ng) + threads * work_bytes(Kq, ng, Mpad);
}

/* Panel p: its 16 rows' codes in B's order (quad k / 4 of row m at byte
 * 64 * (k / 4) + 4m), their scales and sums per group. */
static void panel_task(void *user, size_t p, unsigned worker) {
    (void)worker;
    const amx_job *j = user;
    const size_t Kq = j->Kq, ng = j->ng;
    uint8_t *q = j->panel + p * j->panel_bytes;
    float *d = (float *)(void *)(q + TOKENS * Kq), *s = d + TOKENS * ng;
    if ((int64_t)((p + 1) * TOKENS) > j->M) memset(q, 0, j->panel_bytes);
    for (size_t m = 0; m < TOKENS && (int64_t)(p * TOKENS + m) < j->M; m++) {
        const size_t row = p * TOKENS + m;
        const int8_t *x = j->xq + row * Kq;
        for (size_t k = 0; k < Kq; k += 4) memcpy(q + k * TOKENS + 4 * m, x + k, 4);
        for (size_t g = 0; g < ng; g++) {
            d[g * TOKENS + m] = j->xd[row * ng + g];
            s[g * TOKENS + m] = (float)j->xs[row * ng + g];
        }
    }
}

/* Block b's 32 rows as bytes (rows past the layout's padding: 0) and their
 * scale and zero per group (past the padding: 0, so those sums are 0). */
static void unpack_block(const amx_job *j, int64_t b, uint8_t *wu, float *sz) {
    const vkl_cpu_weight *w = j->w;
    const size_t Kq = j->Kq, ng = j->ng, tiles = Kq / VKL_CPU_LP;
    const float *params = (const float *)(const void *)(w->data + w->lay.params_offset);
    const __m128i m4 = _mm_set1_epi8(15);
    for (int hb = 0; hb < ROWS / VKL_CPU_HP; hb++) {
        const int64_t blk = b * (ROWS / VKL_CPU_HP) + hb;
        uint8_t *dst = wu + (size_t)hb * VKL_CPU_HP * Kq;
        const bool real = blk * VKL_CPU_HP < w->lay.rows_pad;
        const float *rec = params + (size_t)blk * ng * 2 * VKL_CPU_HP;
        for (size_t g = 0; g < ng; g++)
            for (int i = 0; i < VKL_CPU_HP; i++) {
                sz[g * 2 * ROWS + hb * VKL_CPU_HP + i] = real ? rec[g * 2 * VKL_CPU_HP + i] : 0.0f;
                sz[g * 2 * ROWS + ROWS + hb * VKL_CPU_HP + i] = real ? rec[g * 2 * VKL_CPU_HP + VKL_CPU_HP + i] : 0.0f;
            }
        if (!real) {
            memset(dst, 0, VKL_CPU_HP * Kq);
            continue;
        }
        /* a tile: row i's codes 0..15 in the low nibbles of bytes 16i.., 16..31 in the high ones */
        const uint8_t *src = w->data + (size_t)blk * tiles * (VKL_CPU_HP * VKL_CPU_LP / 2);
        for (size_t c = 0; c < tiles; c++, src += VKL_CPU_HP * VKL_CPU_LP / 2)
            for (int i = 0; i < VKL_CPU_HP; i++) {
                const __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(src + 16 * i));
                uint8_t *row = dst + i * Kq + VKL_CPU_LP * c;
                _mm_storeu_si128((__m128i *)(void *)row, _mm_and_si128(x, m4));
                _mm_storeu_si128((__m128i *)(void *)(row + 16), _mm_and_si128(_mm_srli_epi16(x, 4), m4));
            }
    }
}

/* One C tile's group into the f32 sums (cpu_dot.h's step, none fused):
 * rows r of 16 weight rows (scale, zero), columns 16 activation rows (d, s). */
static inline __attribute__((always_inline)) void apply(const int32_t *c, const float *scale, const float *zero,
                                                        const float *d, const float *s, float *acc, size_t ld) {
    const __m512 dv = _mm512_loadu_ps(d), sv = _mm512_loadu_ps(s);
    for (int r = 0; r < 16; r++) {
        const __m512 t = _mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c + 16 * r)),
                                       _mm512_mul_ps(_mm512_set1_ps(zero[r]), sv));
        const __m512 u = _mm512_mul_ps(_mm512_set1_ps(scale[r]), dv);
        float *a = acc + (size_t)r * ld;
        _mm512_storeu_ps(a, _mm512_add_ps(_mm512_loadu_ps(a), _mm512_mul_ps(u, t)));
    }
}

static void blocks(void *user, size_t begin, size_t end, unsigned worker) {
    const amx_job *j = user;
    const size_t Kq = j->Kq, ng = j->ng, G = j->G, Mpad = (size_t)j->Mpad;
    uint8_t *wu = j->work + worker * j->work_bytes;
    float *sz = (float *)(void *)(wu + ROWS * Kq), *acc = sz + ng * 2 * ROWS;
    _Alignas(64) int32_t c[4][16 * 16];
    tiles_on();
    for (size_t b = begin; b < end; b++) {
        unpack_block(j, (int64_t)b, wu, sz);
        memset(acc, 0, ROWS * Mpad * sizeof(float));
        for (size_t g0 = 0; g0 < ng; g0 += j->slice_groups) {
            const size_t g1 = g0 + j->slice_groups < ng ? g0 + j->slice_groups : ng;
            for (size_t pp = 0; pp < j->panels / 2; pp++) {
                const uint8_t *p0 = j->panel + 2 * pp * j->panel_bytes, *p1 = p0 + j->panel_bytes;
                for (size_t g = g0; g < g1; g++) {
                    _tile_zero(0);
                    _tile_zero(1);
                    _tile_zero(2);
                    _tile_zero(3);
                    for (size_t k = g * G; k < (g + 1) * G; k += STEP) {
                        _tile_loadd(4, wu + k, Kq);
                        _tile_loadd(5, wu + 16 * Kq + k, Kq);
                        _tile_loadd(6, p0 + k * TOKENS, 64);
                        _tile_loadd(7, p1 + k * TOKENS, 64);
                        _tile_dpbusd(0, 4, 6);
                        _tile_dpbusd(1, 4, 7);
                        _tile_dpbusd(2, 5, 6);
                        _tile_dpbusd(3, 5, 7);
                    }
                    _tile_stored(0, c[0], 64);
                    _tile_stored(1, c[1], 64);
                    _tile_stored(2, c[2], 64);
                    _tile_stored(3, c[3], 64);
                    for (int h = 0; h < 2; h++)
                        for (int t = 0; t < 2; t++) {
                            const float *d = (const float *)(const void *)((t ? p1 : p0) + TOKENS * Kq) + g * TOKENS;
                            apply(c[2 * h + t], sz + g * 2 * ROWS + 16 * h, sz + g * 2 * ROWS + ROWS + 16 * h, d,
                                  d + TOKENS * ng, acc + 16 * h * Mpad + 2 * TOKENS * pp + TOKENS * t, Mpad);
                        }
                }
            }
        }
        /* the block's rows of Y (transposed), the bias added as the other kernels add it: once, at the end */
        const int64_t N = j->w->N;
        for (size_t r = 0; r < ROWS && (int64_t)(b * ROWS + r) < N; r++) {
            const size_t n = b * ROWS + r;
            const float *a = acc + r * Mpad;
            for (int64_t m = 0; m < j->M; m++) j->Y[(size_t)m * (size_t)N + n] = j->bias ? a[m] + j->bias[n] : a[m];
        }
    }
    _tile_release();
}

void vkl_cpu_gemm_amx(vkl_pool *pool, const vkl_cpu_weight *w, int64_t M, const int8_t *xq, const float *xd,
                      const int32_t *xs, const float *bias, float *Y, void *scratch) {
    const size_t Kq = (size_t)w->lay.cols, ng = Kq / w->lay.group;
    const int64_t Mpad = rows_padded(M);
    amx_job j = {.w = w, .M = M, .Mpad = Mpad, .Kq = Kq, .ng = ng, .G = w->lay.group,
                 .panels = (size_t)(Mpad / TOKENS), .panel_bytes = panel_bytes(Kq, ng),
                 .work_bytes = work_bytes(Kq, ng, Mpad), .xq = xq, .xd = xd, .xs = xs, .bias = bias, .Y = Y};
    const size_t by_slice = SLICE_BYTES / ((size_t)Mpad * w->lay.group);
    j.slice_groups = by_slice ? by_slice : 1;
    j.panel = scratch;
    j.work = j.panel + j.panels * j.panel_bytes;
    vkl_pool_run(pool, j.panels, panel_task, &j);
    vkl_pool_run_shares(pool, (size_t)((w->N + ROWS - 1) / ROWS), 1, blocks, &j);
}

/* The peak of tdpbusd on this core: four C tiles (tdpbusd's latency is
 * hidden behind the three others), nothing loaded in the loop. */
static uint32_t int8_loop(uint64_t rounds, const int8_t seed[128]) {
    _Alignas(64) int8_t src[1024];
    _Alignas(64) int32_t out[256];
    for (int i = 0; i < 1024; i++) src[i] = seed[i % 128];
    tiles_on();
    _tile_loadd(4, src, 64);
    _tile_loadd(5, src, 64);
    _tile_loadd(6, src, 64);
    _tile_loadd(7, src, 64);
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (uint64_t r = 0; r < rounds; r++) {
        _tile_dpbusd(0, 4, 6);
        _tile_dpbusd(1, 4, 7);
        _tile_dpbusd(2, 5, 6);
        _tile_dpbusd(3, 5, 7);
    }
    _tile_stored(0, out, 64);
    _tile_release();
    return (uint32_t)out[0] ^ (uint32_t)out[255];
}

const vkl_cpu_int8_loop vkl_cpu_int8_loop_amx = {"tdpbusd, 4 accumulator tiles", 4 * 16 * 16 * 64 * 2, int8_loop};
