/* The cpu backend's inner products, one table per instruction set. The
 * integer ones are exact: every implementation returns the same int32 sums
 * (tests/unit/test_cpu_dot.c holds AVX2 to the portable C), so a model's
 * output does not depend on the instruction set chosen.
 *
 * Weight tiles are engine/quant's CPU layout with hp = 4 rows and lp = 32
 * (vkl_quant_pack_cpu): for one block of 4 rows, K/32 tiles in K order,
 *   4-bit: 64 bytes a tile, row i's 32 codes (0..15) in bytes 16i..16i+15,
 *          byte j = code j | code 16+j << 4;
 *   int8:  128 bytes a tile, row i's 32 values in bytes 32i..32i+31. */
#ifndef VKL_CPU_DOT_H
#define VKL_CPU_DOT_H

#include <stddef.h>
#include <stdint.h>

#define VKL_CPU_HP 4  /* weight rows per tile */
#define VKL_CPU_LP 32 /* elements per tile row */

typedef struct vkl_cpu_dot {
    const char *name;
    /* One 4-row block against one activation row a, `groups` groups of
     * `chunks` tiles each: out[4g + i] = sum over the group's 32 * chunks
     * elements k of code(i, k) * a[k]. Codes are 0..15, a any int8. */
    void (*q4)(const uint8_t *w, const int8_t *a, uint32_t chunks, uint32_t groups, int32_t *out);
    /* The same for int8 weights (any value, -128 included); a must lie in
     * -127..127 (the activation quantizer's range): that is what lets a
     * product pair fit the 16 bits vpmaddubsw sums into. */
    void (*q8)(const int8_t *w, const int8_t *a, uint32_t chunks, uint32_t groups, int32_t *out);
    /* Float rows: sum over k < K of w[k] * x[k], w of f32, f16 or bf16. */
    float (*f32)(const float *w, const float *x, size_t K);
    float (*f16)(const uint16_t *w, const float *x, size_t K);
    float (*bf16)(const uint16_t *w, const float *x, size_t K);
} vkl_cpu_dot;

extern const vkl_cpu_dot vkl_cpu_dot_portable;
#if defined(__x86_64__) || defined(__i386__)
#define VKL_CPU_HAVE_AVX2 1
extern const vkl_cpu_dot vkl_cpu_dot_avx2;
#endif

/* Whether this CPU (and its OS, which must save the ymm registers) runs
 * vkl_cpu_dot_avx2: AVX2, FMA and F16C. */
int vkl_cpu_has_avx2(void);

#endif
