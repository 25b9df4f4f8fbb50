/* The cpu backend's inner products, one table per instruction set. The
 * integer ones are exact: every implementation returns the same int32 sums
 * (tests/unit/test_cpu_dot.c holds AVX2, NEON sdot and i8mm to the portable
 * C), so a model's output does not depend on the instruction set chosen.
 *
 * Weight tiles are engine/quant's CPU layout with hp = 4 rows and lp = 32
 * (vkl_quant_pack_cpu): for one block of 4 rows, K/32 tiles in K order,
 *   4-bit: 64 bytes a tile, row i's 32 codes (0..15) in bytes 16i..16i+15,
 *          byte j = code j | code 16+j << 4;
 *   int8:  128 bytes a tile, row i's 32 values in bytes 32i..32i+31. */
#ifndef VKL_CPU_DOT_H
#define VKL_CPU_DOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VKL_CPU_HP 4  /* weight rows per tile */
#define VKL_CPU_LP 32 /* elements per tile row */
#define VKL_CPU_MR 4  /* activation rows per inner-product call, at most */
/* Activation rows of a GEMM panel (q4_tile), at most: each table has its
 * own count (vkl_cpu_dot.gemm_mr), from its registers (MNN-LLM's Table 2
 * idea): 6 for the 256-bit tiles (x86/cpu_gemm_ymm.h counts the 16 ymm),
 * 12 for AVX-512 VNNI's (12 zmm of sums, whose f32 steps run 4 rows a
 * vector). Even: the f32 steps take rows in pairs. A prompt's rows past
 * the last whole panel run the row kernels. */
#define VKL_CPU_GEMM_MR_MAX 12
/* Query rows of an attention block (cpu_attention.c): the rows that share
 * one pass over their keys. 4: Llama's query heads per KV head, and on AVX2
 * 4 rows x 2 keys of dot sums (8 accumulators) or 4 rows x 16 floats of the
 * weighted sum, beside the loads, fit the 16 ymm registers. */
#define VKL_CPU_ATTN_ROWS 4

/* Per group g of one activation row: its codes' scale and their sum. */
typedef struct vkl_cpu_act {
    const int8_t *q; /* K codes, -127..127 */
    const float *d;  /* per group: the scale (max |x| / 127) */
    const int32_t *s; /* per group: the sum of the codes */
} vkl_cpu_act;

/* `rows` (the table's gemm_mr) activation rows laid out so the GEMM tile
 * streams them: per 32-element tile of K, codes 0..15 of every row in row
 * order, then codes 16..31 of every row (32 * rows bytes a tile); per group
 * g and row r, the row's scale and its code sum, the sum as the float the
 * f32 step converts it to, each VKL_CPU_HP times, at
 * vkl_cpu_panel_param(rows, g, r, copy):
 * rows in pairs (r, r + 1), each pair 8 floats [r r r+1 r+1 | r r r+1 r+1].
 * That is the order the AVX2 tile's int32 sums come out of their in-lane
 * reduction (weight rows [0 2 | 1 3] of panel rows r, r + 1), so the f32
 * step reads them as they are: no lane-crossing permute a group (building
 * them in the tile, a conversion, a broadcast and an insert a row were a
 * tenth of its instructions). */
typedef struct vkl_cpu_panel {
    const int8_t *q;
    const float *d;
    const float *s;
    uint32_t rows;
} vkl_cpu_panel;

_Static_assert(VKL_CPU_GEMM_MR_MAX % 2 == 0 && VKL_CPU_HP == 4, "the panel's parameters pair rows against 4 weight rows");

/* Index into the d or s of a panel of `rows` rows of panel row r's group-g
 * value, copy 0..3. */
static inline size_t vkl_cpu_panel_param(size_t rows, size_t g, size_t r, size_t copy) {
    return (g * rows + (r & ~(size_t)1)) * VKL_CPU_HP + 2 * (r & 1) + (copy & 1) + 4 * (copy >> 1);
}

typedef struct vkl_cpu_dot {
    const char *name;
    /* One 4-row block against `rows` (1..VKL_CPU_MR) activation rows act[r],
     * `groups` groups of `chunks` tiles each. With isum(i, g) the exact int32
     * sum over group g of code(i, k) * act[r].q[k], for weight rows
     * i = 0..3, in group order:
     *   z = zero(i, g) * s[g];  t = (float)isum - z;  u = scale(i, g) * d[g];  acc[4r + i] += u * t
     * every step one f32 rounding, none fused, so every implementation (and
     * every row count) gives the same bits. rec: per group 8 floats,
     * scale[4] then zero[4] (the CPU layout's params records). Codes 0..15. */
    void (*q4)(const uint8_t *w, const float *rec, const vkl_cpu_act *act, uint32_t rows, uint32_t chunks,
               uint32_t groups, float *acc);
    /* The same sums and f32 steps as q4 for one 4-row block against the
     * gemm_mr rows of a panel (prefill's GEMM tile; p->rows is gemm_mr), into
     * y[r * ldy + i] for panel row r, weight row i: added to, or from 0 when
     * `first` (no read of y), so the GEMM's output rows are the tile's sums
     * with no copy between (a copy of 24 floats through a buffer, read and
     * written a float at a time, was 7-9% of a prefill's CPU time). NULL in
     * a table without a tile (NEON): prefill then runs q4 on up to
     * VKL_CPU_MR rows a call. */
    void (*q4_tile)(const uint8_t *w, const float *rec, const vkl_cpu_panel *p, uint32_t chunks, uint32_t groups,
                    bool first, float *y, size_t ldy);
    uint32_t gemm_mr; /* q4_tile's panel rows, even, at most VKL_CPU_GEMM_MR_MAX; 0 without a tile */
    /* q4_tile on two blocks at once, the same bits as two calls: the second
     * block's codes `wstride` bytes and its records `rstride` floats after
     * the first's, its y at y + VKL_CPU_HP. NULL: one block a call. */
    void (*q4_tile2)(const uint8_t *w, size_t wstride, const float *rec, size_t rstride, const vkl_cpu_panel *p,
                     uint32_t chunks, uint32_t groups, bool first, float *y, size_t ldy);
    /* The same for int8 weights (any value, -128 included) with no zero:
     * t = (float)isum; rec: per group scale[4]. act[r].q must lie in
     * -127..127 (the activation quantizer's range): that is what lets a
     * product pair fit the 16 bits vpmaddubsw sums into. */
    void (*q8)(const int8_t *w, const float *rec, const vkl_cpu_act *act, uint32_t rows, uint32_t chunks,
               uint32_t groups, float *acc);
    /* Float rows: sum over k < K of w[k] * x[k], w of f32, f16 or bf16. */
    float (*f32)(const float *w, const float *x, size_t K);
    float (*f16)(const uint16_t *w, const float *x, size_t K);
    float (*bf16)(const uint16_t *w, const float *x, size_t K);
    /* y[k] += a * x[k] for k < n. */
    void (*axpy)(float *y, float a, const float *x, size_t n);
    /* Attention's two loops over n keys whose rows lie `stride` floats
     * apart: out[t] = the f32 dot of key row t with q (K floats), and
     * y[k] = sum over t of w[t] * v row t [k] (k < K; y is overwritten),
     * keys of weight 0 skipped unread (a masked key's row may hold anything,
     * NaN included, as ref never reads it either). */
    void (*dots)(const float *k, size_t stride, const float *q, size_t K, size_t n, float *out);
    void (*wsum)(const float *v, size_t stride, const float *w, size_t K, size_t n, float *y);
    /* The same two loops for 1..VKL_CPU_ATTN_ROWS query rows at once over
     * the same n keys, each key row (V row) loaded once for all of them:
     * out[r] = dots' out for q[r] and y[r] = wsum's y for w[r], bit for bit,
     * so a row's scores and sum do not depend on the rows beside it. A key
     * of weight 0 in every w[r] is not read; one of weight 0 in some adds
     * nothing to theirs (0 * NaN would). dots must therefore give a key the
     * same bits wherever it falls among the n. NULL: cpu_attention.c runs
     * dots and wsum a row at a time. */
    void (*dots_rows)(const float *k, size_t stride, const float *const *q, uint32_t rows, size_t K, size_t n,
                      float *const *out);
    void (*wsum_rows)(const float *v, size_t stride, const float *const *w, uint32_t rows, size_t K, size_t n,
                      float *const *y);
    /* One row of K activations quantized per group of G (a multiple of 32):
     * q = x * (127 / max|x|) rounded half away from zero into -127..127,
     * d[g] = max|x| / 127, s[g] = the codes' sum; a group holding NaN or
     * inf: codes 0 and d NaN (the outputs it feeds become NaN, as on ref);
     * max|x| below 1e-30 (127 / max|x| would overflow): codes 0. Every
     * implementation gives the same bytes. */
    void (*quantize)(const float *x, size_t K, size_t G, int8_t *q, float *d, int32_t *s);
    /* Attention's scores of one row in place: x[t] = scale * x[t] + m[t],
     * or -inf where m[t] is -inf (a masked key stays -inf whatever its
     * product; m NULL: no mask, x[t] = scale * x[t]), each step rounded
     * (no fused multiply-add), so every table gives the same bits. Returns
     * the max of the new x[t] (NaN ignored, as by a compare; -inf when none),
     * and in *seen whether some x[t] is not -inf. */
    float (*mask_scores)(float *x, const float *m, size_t n, float scale, bool *seen);
    /* Attention's softmax weights in place: x[t] = e^(x[t] - max) for t < n,
     * +0 where x[t] - max < VKL_CPU_EXP_ZERO_BELOW (-inf included), NaN kept;
     * returns their sum. Within 2 ulp of e^x (not expf's bits; the sum in
     * another order). NULL: cpu_attention.c's loop over libm's expf. */
    float (*softmax_exp)(float *x, size_t n, float max);
} vkl_cpu_dot;

/* Below this, e^x is +0 in f32 (e^-104 is under half the smallest
 * subnormal): softmax weights there are 0 without computing them. */
#define VKL_CPU_EXP_ZERO_BELOW -104.0f

/* The int8 instruction sequence of an instruction set's GEMM kernel in a
 * register-only loop: its peak, measured by cpu_peak.c. */
typedef struct vkl_cpu_int8_loop {
    const char *sequence;    /* the instructions, for the reader */
    uint32_t ops_per_round;  /* int8 ops a round does, 2 per multiply-add */
    /* `rounds` rounds on registers made from seed (so nothing is constant);
     * returns a value of the sums, so the work cannot be dropped */
    uint32_t (*run)(uint64_t rounds, const int8_t seed[128]);
} vkl_cpu_int8_loop;

extern const vkl_cpu_dot vkl_cpu_dot_portable;
/* The portable mask_scores, which the NEON tables share. */
float vkl_cpu_mask_scores_portable(float *x, const float *m, size_t n, float scale, bool *seen);
#if defined(__x86_64__) || defined(__i386__)
#define VKL_CPU_HAVE_AVX2 1
extern const vkl_cpu_dot vkl_cpu_dot_avx2;
/* AVX2's table with prefill's GEMM tile on vpdpbusd (the same bits): 512-bit
 * (x86/cpu_gemm_avx512vnni.c) and 256-bit VEX (x86/cpu_gemm_avxvnni.c); the
 * 512-bit one also has prefill's attention blocks in zmm
 * (x86/cpu_attn_avx512.c, the same bits). Decode's row kernels stay AVX2's:
 * they wait on memory, not on products. */
extern const vkl_cpu_dot vkl_cpu_dot_avx512vnni;
extern const vkl_cpu_dot vkl_cpu_dot_avxvnni;
extern const vkl_cpu_int8_loop vkl_cpu_int8_loop_avx2;
extern const vkl_cpu_int8_loop vkl_cpu_int8_loop_avx512vnni;
extern const vkl_cpu_int8_loop vkl_cpu_int8_loop_avxvnni;
extern const vkl_cpu_int8_loop vkl_cpu_int8_loop_amx;
/* The tiles' panel rows: the 256-bit tiles' (x86/cpu_gemm_ymm.h) and
 * AVX-512 VNNI's (x86/cpu_gemm_avx512vnni.c) */
#define VKL_CPU_YMM_TILE_MR 6
#define VKL_CPU_ZMM_TILE_MR 12
/* x86/cpu_gemm_avx2.c: vkl_cpu_dot_avx2's q4_tile */
void vkl_cpu_q4_tile_avx2(const uint8_t *w, const float *rec, const vkl_cpu_panel *p, uint32_t chunks,
                          uint32_t groups, bool first, float *y, size_t ldy);
void vkl_cpu_q4_tile_avx512vnni(const uint8_t *w, const float *rec, const vkl_cpu_panel *p, uint32_t chunks,
                                uint32_t groups, bool first, float *y, size_t ldy);
void vkl_cpu_q4_tile2_avx512vnni(const uint8_t *w, size_t wstride, const float *rec, size_t rstride,
                                 const vkl_cpu_panel *p, uint32_t chunks, uint32_t groups, bool first, float *y,
                                 size_t ldy);
void vkl_cpu_q4_tile_avxvnni(const uint8_t *w, const float *rec, const vkl_cpu_panel *p, uint32_t chunks,
                             uint32_t groups, bool first, float *y, size_t ldy);
/* x86/cpu_attn_avx512.c: dots_rows and wsum_rows of the AVX-512 VNNI table
 * in zmm, AVX2's bits */
void vkl_cpu_dots_rows_avx512(const float *k, size_t stride, const float *const *q, uint32_t rows, size_t K,
                              size_t n, float *const *out);
void vkl_cpu_wsum_rows_avx512(const float *v, size_t stride, const float *const *w, uint32_t rows, size_t K,
                              size_t n, float *const *y);
/* x86/cpu_silu_avx2.c: o = x / (1 + exp(-x)) * y on n floats (SiluMul), exp
 * by a polynomial, within a few ulp of ref's expf per element (test_cpu_split) */
void vkl_cpu_silu_mul_avx2(const float *x, const float *y, float *o, int64_t n);
#endif

#if defined(__aarch64__)
#define VKL_CPU_HAVE_NEON 1
extern const vkl_cpu_dot vkl_cpu_dot_neon; /* sdot (FEAT_DotProd) */
extern const vkl_cpu_dot vkl_cpu_dot_i8mm; /* smmla (FEAT_I8MM) for 2..4 rows, the sdot table's code else */
#endif

/* Whether this CPU (and its OS, which must save the ymm registers) runs
 * vkl_cpu_dot_avx2: AVX2, FMA and F16C. */
int vkl_cpu_has_avx2(void);
/* Whether it runs vkl_cpu_dot_avx512vnni (AVX2's, and AVX-512 F/BW/VL
 * with VNNI, the OS saving the zmm state) and vkl_cpu_dot_avxvnni (AVX2's
 * and AVX-VNNI). */
int vkl_cpu_has_avx512vnni(void);
int vkl_cpu_has_avxvnni(void);
/* Whether it runs x86/cpu_gemm_amx.c: AMX-INT8 tiles, AVX-512 F/BW/VL, the
 * OS saving both states, and Linux's tile-data permission (asked here). */
int vkl_cpu_has_amx(void);
/* Whether this CPU runs vkl_cpu_dot_neon (the kernel lists ASIMDDP in
 * AT_HWCAP) and vkl_cpu_dot_i8mm (that, and I8MM in AT_HWCAP2). */
int vkl_cpu_has_dotprod(void);
int vkl_cpu_has_i8mm(void);

#endif
