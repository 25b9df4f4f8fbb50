/* Deterministic random numbers for tests: xorshift64, the same data on
 * every compiler and platform (draws are sequenced, never two in one
 * expression). Seed with any non-zero value. */
#ifndef VKL_TEST_RNG_H
#define VKL_TEST_RNG_H

#include <math.h>
#include <stdint.h>

typedef struct rng {
    uint64_t s;
} rng;

static inline uint32_t rnd_u32(rng *r) {
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return (uint32_t)(r->s >> 11);
}

/* uniform in (0, 1) */
static inline double rnd_unit(rng *r) { return (rnd_u32(r) + 0.5) / 4294967296.0; }

/* standard normal, Box-Muller */
static inline float rnd_gauss(rng *r) {
    double u1 = rnd_unit(r), u2 = rnd_unit(r);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

#endif
