/* Prefill's GEMM on Intel AMX (docs/cpu.md, "AMX"): a 4-bit or int8 weight against
 * M >= VKL_CPU_AMX_MIN_ROWS quantized activation rows with tdpbssd, which
 * multiplies a 16 x 64 tile of signed bytes (16 weight rows, 64 codes of K)
 * by a 64 x 16 one (16 activation rows) into 16 x 16 exact int32 sums.
 *
 * The same bits as every other kernel of this backend (cpu_dot.h's f32
 * step, tests/unit/test_cpu_matmul.c): the step's t = (float)isum - zero * s
 * works on integers whose size is below 15 * 127 * group < 2^24 for groups
 * up to MAX_GROUP, so f32 holds isum, zero * s and their difference exactly
 * and t is (float) of sum((q - zero) * a). The zero point (an integer 0..15
 * in both formats, engine/quant) therefore goes into the weight bytes when
 * they are unpacked, q - zero in -15..15, and a group's f32 step is
 * u = scale * d, acc += u * t on AVX-512: no code sums, no zero products.
 * int8 weights (cpu_dot.h's q8: t = (float)isum, no zero) go in as they
 * are; their sums, at most 128 * 127 * group, are exact in int32 as on
 * every other path, and the step is the same.
 *
 * A worker takes blocks of 32 weight rows: it unpacks the block's codes
 * (the CPU layout's 4-row tiles) into bytes once, then runs every pair of
 * 16-row activation panels past them, two A tiles x two B tiles into four C
 * tiles per 64 codes of K. K is walked in slices of SLICE_A_BYTES of the
 * block, so a slice's A tiles stay in L1 while the panels pass (A from L2
 * each time, at 2 or 12 groups a slice, ran the 1B model's GEMMs at
 * 0.63-0.84 TOP/s on 2 cores; from L1, 0.98), and the panels in chunks of
 * CHUNK_PAIRS pairs whose f32 sums stay in L1 too until the last group,
 * then go to Y transposed, 16 x 16 at a time.
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
#define SLICE_A_BYTES (8u << 10)
#define CHUNK_PAIRS 4 /* panel pairs whose f32 sums a block keeps at once */
/* their sums' row stride, floats: 16 more than the chunk's columns so the
 * 16 rows a step touches fall in different L1 sets */
#define CHUNK_STRIDE (CHUNK_PAIRS * 2 * TOKENS + 16)
/* 15 * 127 * group < 2^24: every integer of the f32 step exact in f32 */
#define MAX_GROUP 4096

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
    const float *bias;
    float *Y;
    /* panels: per panel the codes [Kq / 4][16][4], then per group the 16
     * rows' scales; past M: codes 0, scale 0 */
    uint8_t *panel;
    /* per worker: the unpacked block [32][Kq] (rows wu_stride apart), per
     * group the 32 rows' scales, a chunk's f32 sums [32][CHUNK_STRIDE] */
    uint8_t *work;
} amx_job;

static size_t panel_bytes(size_t Kq, size_t ng) { return TOKENS * Kq + TOKENS * ng * sizeof(float); }
/* Row strides of a worker's unpacked block and f32 sums: a line more than
 * the row, so the 16 rows of a tile fall in 16 different sets of the L1
 * (at a power-of-two stride -- K 2048 or 8192, 512 rows -- they shared one
 * or two, more rows than the cache has ways, and each tile load missed). */
static size_t wu_stride(size_t Kq) { return Kq + 64; }
static size_t work_bytes(size_t Kq, size_t ng) {
    return ROWS * wu_stride(Kq) + ROWS * ng * sizeof(float) + ROWS * CHUNK_STRIDE * sizeof(float);
}
static int64_t rows_padded(int64_t M) { return (M + 2 * TOKENS - 1) / (2 * TOKENS) * (2 * TOKENS); }

bool vkl_cpu_amx_takes(const vkl_cpu_weight *w, int64_t M) {
    return M >= VKL_CPU_AMX_MIN_ROWS && w->lay.group % STEP == 0 && w->lay.group <= MAX_GROUP;
}

size_t vkl_cpu_amx_scratch(const vkl_cpu_weight *w, int64_t M, unsigned threads) {
    const size_t Kq = (size_t)w->lay.cols, ng = Kq / w->lay.group;
    const int64_t Mpad = rows_padded(M);
    return (size_t)(Mpad / TOKENS) * panel_bytes(Kq, ng) + threads * work_bytes(Kq, ng);
}

/* Panel p: its 16 rows' codes in B's order (quad k / 4 of row m at byte
 * 64 * (k / 4) + 4m) and their scales per group. */
static void panel_task(void *user, size_t p, unsigned worker) {
    (void)worker;
    const amx_job *j = user;
    const size_t Kq = j->Kq, ng = j->ng;
    uint8_t *q = j->panel + p * j->panel_bytes;
    float *d = (float *)(void *)(q + TOKENS * Kq);
    if ((int64_t)((p + 1) * TOKENS) > j->M) memset(q, 0, j->panel_bytes);
    for (size_t m = 0; m < TOKENS && (int64_t)(p * TOKENS + m) < j->M; m++) {
        const size_t row = p * TOKENS + m;
        const int8_t *x = j->xq + row * Kq;
        for (size_t k = 0; k < Kq; k += 4) memcpy(q + k * TOKENS + 4 * m, x + k, 4);
        for (size_t g = 0; g < ng; g++) d[g * TOKENS + m] = j->xd[row * ng + g];
    }
}

/* Block b's 32 rows as signed bytes, each 4-bit code less its group's zero
 * point (-15..15), int8 values as they are (rows past the layout's
 * padding: 0), and their scale per group (past the padding: 0, so those
 * sums are 0). */
static void unpack_block(const amx_job *j, int64_t b, uint8_t *wu, float *sc) {
    const vkl_cpu_weight *w = j->w;
    const size_t Kq = j->Kq, ng = j->ng, tiles = Kq / VKL_CPU_LP, per_group = j->G / VKL_CPU_LP, ld = wu_stride(Kq);
    const float *params = (const float *)(const void *)(w->data + w->lay.params_offset);
    const bool q8 = w->dtype == VKL_DTYPE_Q_INT8;
    const size_t rec_floats = q8 ? VKL_CPU_HP : 2 * VKL_CPU_HP; /* a group's record: scale[4] (int8), zero[4] (4-bit) */
    for (int hb = 0; hb < ROWS / VKL_CPU_HP; hb++) {
        const int64_t blk = b * (ROWS / VKL_CPU_HP) + hb;
        uint8_t *dst = wu + (size_t)hb * VKL_CPU_HP * ld;
        const bool real = blk * VKL_CPU_HP < w->lay.rows_pad;
        const float *rec = params + (size_t)blk * ng * rec_floats;
        for (size_t g = 0; g < ng; g++)
            for (int i = 0; i < VKL_CPU_HP; i++) sc[g * ROWS + hb * VKL_CPU_HP + i] = real ? rec[g * rec_floats + i] : 0.0f;
        if (!real) {
            memset(dst, 0, VKL_CPU_HP * ld);
            continue;
        }
        if (q8) { /* a tile: row i's 32 values in bytes 32i..32i+31, as they are */
            const int8_t *src8 = (const int8_t *)w->data + (size_t)blk * tiles * (VKL_CPU_HP * VKL_CPU_LP);
            for (size_t c = 0; c < tiles; c++, src8 += VKL_CPU_HP * VKL_CPU_LP)
                for (int i = 0; i < VKL_CPU_HP; i++) memcpy(dst + i * ld + VKL_CPU_LP * c, src8 + VKL_CPU_LP * i, VKL_CPU_LP);
            continue;
        }
        /* a tile: row i's codes 0..15 in the low nibbles of bytes 16i.., 16..31
         * in the high ones; one 64-byte load a tile, each row's zero in its
         * 16-byte lane, two permutes putting each row's low and high halves
         * side by side (a row and a tile at a time, converting the zero per
         * row, this took as long as the block's tile products) */
        const uint8_t *src = w->data + (size_t)blk * tiles * (VKL_CPU_HP * VKL_CPU_LP / 2);
        const __m512i m4 = _mm512_set1_epi8(15), rows01 = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0),
                      rows23 = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);
        for (size_t g = 0; g < ng; g++) {
            const float *zero = rec + g * 2 * VKL_CPU_HP + VKL_CPU_HP; /* integers 0..15 */
            __m512i z = _mm512_setzero_si512(); /* row i's zero in bytes 16i..16i+15 */
            for (int i = 0; i < VKL_CPU_HP; i++) z = _mm512_mask_set1_epi8(z, 0xFFFFull << (16 * i), (char)(int)zero[i]);
            for (size_t c = g * per_group; c < (g + 1) * per_group; c++, src += VKL_CPU_HP * VKL_CPU_LP / 2) {
                const __m512i x = _mm512_loadu_si512(src);
                const __m512i lo = _mm512_sub_epi8(_mm512_and_si512(x, m4), z),
                              hi = _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(x, 4), m4), z);
                const __m512i r01 = _mm512_permutex2var_epi64(lo, rows01, hi), r23 = _mm512_permutex2var_epi64(lo, rows23, hi);
                uint8_t *row = dst + VKL_CPU_LP * c;
                _mm256_storeu_si256((__m256i *)(void *)row, _mm512_castsi512_si256(r01));
                _mm256_storeu_si256((__m256i *)(void *)(row + ld), _mm512_extracti64x4_epi64(r01, 1));
                _mm256_storeu_si256((__m256i *)(void *)(row + 2 * ld), _mm512_castsi512_si256(r23));
                _mm256_storeu_si256((__m256i *)(void *)(row + 3 * ld), _mm512_extracti64x4_epi64(r23, 1));
            }
        }
    }
}

/* One C tile's group into the f32 sums (cpu_dot.h's step, none fused):
 * rows r of 16 weight rows (scale), columns 16 activation rows (d). The
 * step's t = (float)isum - zero * s is (float) of C's sum as it is: the
 * zero went into the weights' bytes (see the top of this file). */
static inline __attribute__((always_inline)) void apply(const int32_t *c, const float *scale, const float *d,
                                                        float *acc, size_t ld) {
    const __m512 dv = _mm512_loadu_ps(d);
    for (int r = 0; r < 16; r++) {
        const __m512 t = _mm512_cvtepi32_ps(_mm512_load_si512(c + 16 * r));
        const __m512 u = _mm512_mul_ps(_mm512_set1_ps(scale[r]), dv);
        float *a = acc + (size_t)r * ld;
        _mm512_storeu_ps(a, _mm512_add_ps(_mm512_loadu_ps(a), _mm512_mul_ps(u, t)));
    }
}

/* out[16 x 16] = the transpose of the 16 x 16 floats at in (rows ld apart). */
static inline void transpose16(const float *in, size_t ld, float *out) {
    __m512 r[16], t[16];
    for (int i = 0; i < 16; i++) r[i] = _mm512_loadu_ps(in + (size_t)i * ld);
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
        r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
        r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
        r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
    }
    /* r[4q + c]: column c of each 4-row group q's lanes; gather the groups' 128-bit lanes */
    for (int c = 0; c < 4; c++) {
        const __m512 a = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88), b = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xDD);
        const __m512 e = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88), f = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xDD);
        t[c] = _mm512_shuffle_f32x4(a, e, 0x88);
        t[c + 8] = _mm512_shuffle_f32x4(a, e, 0xDD);
        t[c + 4] = _mm512_shuffle_f32x4(b, f, 0x88);
        t[c + 12] = _mm512_shuffle_f32x4(b, f, 0xDD);
    }
    for (int i = 0; i < 16; i++) _mm512_store_ps(out + 16 * i, t[i]);
}

/* One (panel pair, group) of a block: its four C tiles, stored, into the
 * f32 sums. */
typedef struct unit {
    const uint8_t *p0, *p1; /* the pair's panels */
    size_t pp, g;
} unit;

static void apply_unit(const amx_job *j, int32_t (*c)[16 * 16], unit u, const float *sc, float *acc, size_t lda) {
    for (int h = 0; h < 2; h++)
        for (int t = 0; t < 2; t++) {
            const float *d = (const float *)(const void *)((t ? u.p1 : u.p0) + TOKENS * j->Kq) + u.g * TOKENS;
            apply(c[2 * h + t], sc + u.g * ROWS + 16 * h, d, acc + 16 * h * lda + 2 * TOKENS * u.pp + TOKENS * t, lda);
        }
}

/* The block's 32 rows of Y for activation rows m0..m1 from their f32 sums
 * (acc: rows lda apart, column 0 = row m0), a row of Y at a time (a column
 * at a time, every store on another line of Y, was a third of the block's
 * time), the bias added as the other kernels add it: once, at the end.
 * Streaming stores where the row is 64-byte aligned: Y is larger than the
 * caches and its next reader takes it from memory anyway, so reading each
 * line before writing it (a plain store's) was wasted traffic (the caller
 * fences them before the block counts as done). */
static void store_rows(const amx_job *j, size_t b, const float *acc, size_t lda, size_t m0, size_t m1) {
    const size_t N = (size_t)j->w->N, n0 = b * ROWS, cols = N - n0 < ROWS ? N - n0 : ROWS;
    for (size_t c0 = m0; c0 < m1; c0 += 16)
        for (size_t r0 = 0; r0 < cols; r0 += 16) {
            _Alignas(64) float t[16][16];
            transpose16(acc + r0 * lda + (c0 - m0), lda, t[0]);
            for (size_t m = c0; m < c0 + 16 && m < m1; m++) {
                float *y = j->Y + m * N + n0 + r0;
                const float *v = t[m - c0];
                if (r0 + 16 <= cols) {
                    __m512 x = _mm512_load_ps(v);
                    if (j->bias) x = _mm512_add_ps(x, _mm512_loadu_ps(j->bias + n0 + r0));
                    if (((uintptr_t)y & 63) == 0) _mm512_stream_ps(y, x);
                    else _mm512_storeu_ps(y, x);
                    continue;
                }
                for (size_t r = 0; r < 16 && r0 + r < cols; r++) y[r] = j->bias ? v[r] + j->bias[n0 + r0 + r] : v[r];
            }
        }
}

/* Block b, CHUNK_PAIRS panel pairs of activation rows at a time so their
 * f32 sums stay in L1 beside the K slice of A: with the sums of all M rows
 * in L2, each group's f32 steps read and wrote 4 KiB there on top of the
 * B tiles' 4 KiB. The tile products of a unit run while the vector units
 * take the previous unit's f32 steps (C stored into two buffers in turn):
 * the products do not wait for the steps, nor the steps for them. (The
 * sums of a C tile kept in registers across a slice's groups, loaded and
 * stored once a slice, measured the same.) */
static void block_task(void *user, size_t b, unsigned worker) {
    const amx_job *j = user;
    const size_t Kq = j->Kq, ng = j->ng, G = j->G, ldw = wu_stride(Kq), lda = CHUNK_STRIDE;
    uint8_t *wu = j->work + worker * j->work_bytes;
    float *sc = (float *)(void *)(wu + ROWS * ldw), *acc = sc + ng * ROWS;
    _Alignas(64) int32_t c[2][4][16 * 16];
    tiles_on();
    unpack_block(j, (int64_t)b, wu, sc);
    const size_t pairs = j->panels / 2;
    for (size_t q0 = 0; q0 < pairs; q0 += CHUNK_PAIRS) {
        const size_t q1 = q0 + CHUNK_PAIRS < pairs ? q0 + CHUNK_PAIRS : pairs;
        memset(acc, 0, ROWS * lda * sizeof(float));
        unit prev = {0};
        bool pending = false;
        int buf = 0;
        for (size_t g0 = 0; g0 < ng; g0 += j->slice_groups) {
            const size_t g1 = g0 + j->slice_groups < ng ? g0 + j->slice_groups : ng;
            for (size_t pp = q0; pp < q1; pp++) {
                const uint8_t *p0 = j->panel + 2 * pp * j->panel_bytes, *p1 = p0 + j->panel_bytes;
                for (size_t g = g0; g < g1; g++) {
                    _tile_zero(0);
                    _tile_zero(1);
                    _tile_zero(2);
                    _tile_zero(3);
                    for (size_t k = g * G; k < (g + 1) * G; k += STEP) {
                        _tile_loadd(4, wu + k, ldw);
                        _tile_loadd(5, wu + 16 * ldw + k, ldw);
                        _tile_loadd(6, p0 + k * TOKENS, 64);
                        _tile_loadd(7, p1 + k * TOKENS, 64);
                        _tile_dpbssd(0, 4, 6);
                        _tile_dpbssd(1, 4, 7);
                        _tile_dpbssd(2, 5, 6);
                        _tile_dpbssd(3, 5, 7);
                    }
                    if (pending) apply_unit(j, c[buf ^ 1], prev, sc, acc, lda);
                    _tile_stored(0, c[buf][0], 64);
                    _tile_stored(1, c[buf][1], 64);
                    _tile_stored(2, c[buf][2], 64);
                    _tile_stored(3, c[buf][3], 64);
                    prev = (unit){p0, p1, pp - q0, g};
                    pending = true;
                    buf ^= 1;
                }
            }
        }
        if (pending) apply_unit(j, c[buf ^ 1], prev, sc, acc, lda);
        const size_t m0 = q0 * 2 * TOKENS, m1 = q1 * 2 * TOKENS < (size_t)j->M ? q1 * 2 * TOKENS : (size_t)j->M;
        store_rows(j, b, acc, lda, m0, m1);
    }
    _mm_sfence(); /* the streamed Y stores before the pool reports the block done */
    _tile_release();
}

void vkl_cpu_gemm_amx(vkl_pool *pool, const vkl_cpu_weight *w, int64_t M, const int8_t *xq, const float *xd,
                      const float *bias, float *Y, void *scratch) {
    const size_t Kq = (size_t)w->lay.cols, ng = Kq / w->lay.group;
    const int64_t Mpad = rows_padded(M);
    amx_job j = {.w = w, .M = M, .Mpad = Mpad, .Kq = Kq, .ng = ng, .G = w->lay.group,
                 .panels = (size_t)(Mpad / TOKENS), .panel_bytes = panel_bytes(Kq, ng),
                 .work_bytes = work_bytes(Kq, ng), .xq = xq, .xd = xd, .bias = bias, .Y = Y};
    const size_t by_slice = SLICE_A_BYTES / (ROWS * w->lay.group);
    j.slice_groups = by_slice ? by_slice : 1;
    j.panel = scratch;
    j.work = j.panel + j.panels * j.panel_bytes;
    vkl_pool_run(pool, j.panels, panel_task, &j);
    /* blocks handed out one at a time to whoever is free, not in shares
     * sized by the workers' speeds at open: a block is long enough (0.3 ms
     * at M 512, K 2048) for the hand-out not to count, and on a VM whose
     * cores' speeds change from minute to minute (a neighbour on the same
     * physical core) shares measured earlier left one worker idle while
     * the other finished */
    vkl_pool_run(pool, (size_t)((w->N + ROWS - 1) / ROWS), block_task, &j);
}

/* The peak of tdpbssd (the GEMM's instruction) on this core: four C tiles
 * (each product's latency hidden behind the three others), nothing loaded
 * in the loop. */
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
        _tile_dpbssd(0, 4, 6);
        _tile_dpbssd(1, 4, 7);
        _tile_dpbssd(2, 5, 6);
        _tile_dpbssd(3, 5, 7);
    }
    _tile_stored(0, out, 64);
    _tile_release();
    return (uint32_t)out[0] ^ (uint32_t)out[255];
}

const vkl_cpu_int8_loop vkl_cpu_int8_loop_amx = {"tdpbssd, 4 accumulator tiles", 4 * 16 * 16 * 64 * 2, int8_loop};
