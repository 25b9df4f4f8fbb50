/* SiluMul's float rows on AVX2: o = x / (1 + e^-x) * y, 8 at a time. ref's
 * kernel calls expf once per element, which on the 1B model's prefill
 * (512 x 8192 a layer) was ~9% of the cpu backend's time.
 *
 * e^-x by cpu_exp_avx2.h (within 2 ulp of e^-x, +inf past expf's overflow
 * as expf's), its argument clamped to [-104, 89] (below -104, 1 + e is 1
 * either way; above 89 both overflow); then the same three roundings as
 * ref: 1 + e, the division, the product. The whole was within 5 ulps of
 * ref's output over 2^25 values in [-88.3, 88.3] (the worst where e >> 1,
 * exp's own error passing straight to the output); NaN and ±inf in x give
 * ref's NaN, ±inf and signed zeros (x itself is the numerator). The bound
 * is checked in tests/unit/test_cpu_split.c. */
#include <immintrin.h>

#include "../cpu_backend.h"
#include "cpu_exp_avx2.h"

void vkl_cpu_silu_mul_avx2(const float *x, const float *y, float *o, int64_t n) {
    const __m256 one = _mm256_set1_ps(1.0f), sign = _mm256_set1_ps(-0.0f), lo = _mm256_set1_ps(-104.0f),
                 hi = _mm256_set1_ps(89.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 xv = _mm256_loadu_ps(x + i);
        /* vmaxps gives its second operand for a NaN: the clamp, and x's NaN goes through the division */
        const __m256 e = vkl_exp_avx2(_mm256_min_ps(_mm256_max_ps(_mm256_xor_ps(xv, sign), lo), hi));
        _mm256_storeu_ps(o + i, _mm256_mul_ps(_mm256_div_ps(xv, _mm256_add_ps(one, e)), _mm256_loadu_ps(y + i)));
    }
    if (i < n) { /* the tail through a zero-padded vector, so it rounds as the body does */
        float xt[8] = {0}, yt[8] = {0}, ot[8];
        for (int64_t k = i; k < n; k++) xt[k - i] = x[k], yt[k - i] = y[k];
        vkl_cpu_silu_mul_avx2(xt, yt, ot, 8);
        for (int64_t k = i; k < n; k++) o[k] = ot[k - i];
    }
}
