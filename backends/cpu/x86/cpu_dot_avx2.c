/* The inner products with AVX2 (vpmaddubsw / vpmaddwd; this machine class
 * has no VNNI), FMA and F16C. Compiled with -mavx2 -mfma -mf16c and called
 * only after vkl_cpu_has_avx2(). vpmaddubsw multiplies unsigned by signed
 * bytes and adds each pair into an int16 with saturation, so each use below
 * keeps a pair's sum inside int16 and the results are exact:
 *   4-bit: codes 0..15 are the unsigned side, |pair| <= 2 * 15 * 128 = 3840;
 *          a chunk adds two pairs into each int16 lane, and up to 4 chunks
 *          add there (30720) before widening;
 *   int8:  |w| (0..128) is the unsigned side and a takes w's sign; with
 *          |a| <= 127, |pair| <= 2 * 128 * 127 = 32512. */
#include <immintrin.h>
#include <string.h>

#include "../cpu_dot.h"

/* The group's f32 step (cpu_dot.h) on the four rows' int32 sums, as
 * separate multiplies and subtractions: -std=c11 keeps the compiler from
 * fusing them, so the bits equal the portable code's. */
static inline __m128 apply(__m128i isum, const float *scale, const float *zero, float d, int32_t s, __m128 acc) {
    __m128 t = _mm_cvtepi32_ps(isum);
    if (zero) t = _mm_sub_ps(t, _mm_mul_ps(_mm_loadu_ps(zero), _mm_set1_ps((float)s)));
    return _mm_add_ps(acc, _mm_mul_ps(_mm_mul_ps(_mm_loadu_ps(scale), _mm_set1_ps(d)), t));
}

static void q4(const uint8_t *w, const float *rec, vkl_cpu_act act, uint32_t chunks, uint32_t groups, float *out) {
    const __m256i m4 = _mm256_set1_epi8(15), ones = _mm256_set1_epi16(1);
    const int8_t *a = act.q;
    __m128 acc = _mm_loadu_ps(out);
    for (uint32_t g = 0; g < groups; g++, rec += 2 * VKL_CPU_HP) {
        __m256i s01 = _mm256_setzero_si256(), s23 = _mm256_setzero_si256();
        for (uint32_t c0 = 0; c0 < chunks; c0 += 4) {
            const uint32_t c1 = chunks - c0 < 4 ? chunks : c0 + 4;
            __m256i p01 = _mm256_setzero_si256(), p23 = _mm256_setzero_si256();
            for (uint32_t c = c0; c < c1; c++, w += VKL_CPU_HP * 16, a += VKL_CPU_LP) {
                const __m256i lo = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)a));
                const __m256i hi = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(a + 16)));
                const __m256i x01 = _mm256_loadu_si256((const __m256i *)w);
                const __m256i x23 = _mm256_loadu_si256((const __m256i *)(w + 32));
                p01 = _mm256_add_epi16(p01, _mm256_maddubs_epi16(_mm256_and_si256(x01, m4), lo));
                p23 = _mm256_add_epi16(p23, _mm256_maddubs_epi16(_mm256_and_si256(x23, m4), lo));
                p01 = _mm256_add_epi16(p01, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(x01, 4), m4), hi));
                p23 = _mm256_add_epi16(p23, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(x23, 4), m4), hi));
            }
            s01 = _mm256_add_epi32(s01, _mm256_madd_epi16(p01, ones));
            s23 = _mm256_add_epi32(s23, _mm256_madd_epi16(p23, ones));
        }
        /* lanes: [r0 x4 | r1 x4], [r2 x4 | r3 x4] -> r0 r1 r2 r3 */
        const __m256i h = _mm256_hadd_epi32(s01, s23);     /* r0 r0 r2 r2 | r1 r1 r3 r3 */
        const __m256i q = _mm256_hadd_epi32(h, h);         /* r0 r2 r0 r2 | r1 r3 r1 r3 */
        const __m128i v = _mm_unpacklo_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
        acc = apply(v, rec, rec + VKL_CPU_HP, act.d[g], act.s[g], acc); /* v: r0 r1 r2 r3 */
    }
    _mm_storeu_ps(out, acc);
}

static void q8(const int8_t *w, const float *rec, vkl_cpu_act act, uint32_t chunks, uint32_t groups, float *out) {
    const __m256i ones = _mm256_set1_epi16(1);
    const int8_t *a = act.q;
    __m128 acc = _mm_loadu_ps(out);
    for (uint32_t g = 0; g < groups; g++, rec += VKL_CPU_HP) {
        __m256i s[VKL_CPU_HP];
        for (int i = 0; i < VKL_CPU_HP; i++) s[i] = _mm256_setzero_si256();
        for (uint32_t c = 0; c < chunks; c++, w += VKL_CPU_HP * VKL_CPU_LP, a += VKL_CPU_LP) {
            const __m256i x = _mm256_loadu_si256((const __m256i *)a);
            for (int i = 0; i < VKL_CPU_HP; i++) {
                const __m256i v = _mm256_loadu_si256((const __m256i *)(w + VKL_CPU_LP * i));
                const __m256i p = _mm256_maddubs_epi16(_mm256_abs_epi8(v), _mm256_sign_epi8(x, v));
                s[i] = _mm256_add_epi32(s[i], _mm256_madd_epi16(p, ones));
            }
        }
        /* four rows' 8-lane sums -> r0 r1 r2 r3 */
        const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(s[0], s[1]), _mm256_hadd_epi32(s[2], s[3]));
        const __m128i v = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
        acc = apply(v, rec, NULL, act.d[g], 0, acc);
    }
    _mm_storeu_ps(out, acc);
}

static inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline __m256 load_f32(const float *w) { return _mm256_loadu_ps(w); }
static inline __m256 load_f16(const uint16_t *w) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w)); }
static inline __m256 load_bf16(const uint16_t *w) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)w)), 16));
}
static inline float tail_f32(float w) { return w; }
static inline float tail_f16(uint16_t w) { return _cvtsh_ss(w); }
static inline float tail_bf16(uint16_t w) {
    const uint32_t u = (uint32_t)w << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Two 8-lane sums hide the FMA latency; the tail is scalar. */
#define FLOAT_DOT(name, type)                                                             \
    static float name(const type *w, const float *x, size_t K) {                         \
        __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();                        \
        size_t k = 0;                                                                     \
        for (; k + 16 <= K; k += 16) {                                                    \
            s0 = _mm256_fmadd_ps(load_##name(w + k), _mm256_loadu_ps(x + k), s0);         \
            s1 = _mm256_fmadd_ps(load_##name(w + k + 8), _mm256_loadu_ps(x + k + 8), s1); \
        }                                                                                 \
        float t = hsum(_mm256_add_ps(s0, s1));                                            \
        for (; k < K; k++) t += tail_##name(w[k]) * x[k];                                 \
        return t;                                                                         \
    }

FLOAT_DOT(f32, float)
FLOAT_DOT(f16, uint16_t)
FLOAT_DOT(bf16, uint16_t)

const vkl_cpu_dot vkl_cpu_dot_avx2 = {"avx2", q4, q8, f32, f16, bf16};
