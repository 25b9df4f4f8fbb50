/* e^x in 8 lanes for the AVX2 files (compiled with -mavx2 -mfma): attention's
 * softmax weights (cpu_dot_avx2.c) and SiluMul (cpu_silu_avx2.c). */
#ifndef VKL_CPU_EXP_AVX2_H
#define VKL_CPU_EXP_AVX2_H

#include <immintrin.h>

/* e^x for x in [-151 ln2, 89] (callers clamp), within 2 ulp: x = n ln2 + r
 * with n an integer and |r| <= ln2 / 2 (ln2 in two parts, so r is nearly
 * exact), e^r as 1 + r + r^2 P(r) with P of degree 5 (Cephes' expf
 * coefficients), times 2^n built in the exponent bits. n reaches -151
 * where e^x is subnormal and 128 where it overflows, so 2^n is applied as
 * two normal halves: the result rounds once, and is +inf past expf's
 * overflow threshold (88.72) as expf's is. */
static inline __m256 vkl_exp_avx2(__m256 x) {
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    const __m256i ni = _mm256_cvtps_epi32(n), n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
    const __m256i bias = _mm256_set1_epi32(127);
    const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

#endif
