/* Token sampler: turns one step's logits into the next token id, with
 * repetition penalty, top-k, temperature, top-p and min-p, and its own seeded
 * PRNG so a given seed replays the same tokens.
 *
 * Order of operations (fixed; every stage is skipped when it is off):
 *   1. repetition penalty over the last `repetition_window` tokens of the
 *      history, once per distinct token: logit > 0 ? logit / p : logit * p
 *      (HF transformers / llama.cpp semantics);
 *   2. temperature <= 0: greedy, the argmax (lowest index on ties); stop;
 *   3. top-k: keep the k largest logits (ties: lower index first);
 *   4. temperature: (logit - max) * (1/T);
 *   5. softmax in double with the max subtracted (exp is the sampler's own,
 *      plain IEEE arithmetic, so probabilities are bit-identical across
 *      platforms and C libraries);
 *   6. top-p: keep the smallest prefix, in descending order, whose cumulative
 *      probability is >= top_p (at least one token);
 *   7. min-p: drop tokens whose probability is < min_p * the top probability;
 *   8. renormalize and draw with the sampler's PRNG (xoshiro256** seeded by
 *      splitmix64; one 64-bit draw per non-greedy call, turned into a double
 *      in [0,1) from its top 53 bits). Sums run in a fixed order, so for the
 *      same logits and seed the tokens are the same on every platform with
 *      IEEE doubles and no FMA contraction (gcc in ISO C mode; a pragma in
 *      sampler.c for clang).
 * Temperature is applied before top-p and min-p (as HF transformers does);
 * llama.cpp's default chain applies it after them, which gives a different
 * candidate set whenever T != 1.
 *
 * Logits: -inf is an impossible token; NaN is an error naming its index; all
 * -inf is an error. +inf tokens, if any, share all the probability equally.
 *
 * A sampler is not thread-safe; sample() allocates nothing (scratch for the
 * whole vocabulary is made at create). */
#ifndef VKL_SAMPLER_H
#define VKL_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "vkllm.h"

/* The public vkl_sampling_options (vkllm.h), checked by vkl_sampler_create:
 * temperature finite (<= 0: greedy, argmax, lowest index on ties); top_p in
 * (0, 1]; min_p at most 1; repetition_penalty finite and > 0;
 * repetition_window >= 0 (0: all of the history given). */
typedef vkl_sampling_options vkl_sampling;

/* Greedy, no top-k/top-p/min-p, no penalty, window 64, seed 0. */
void vkl_sampling_defaults(vkl_sampling *s);

typedef struct vkl_sampler vkl_sampler;

/* Validates `opt` (NaN or infinite values, top_p outside (0,1], min_p > 1,
 * penalty <= 0, negative window, vocab 0 or above INT32_MAX: each a
 * VKL_ERR_INVALID_ARGUMENT naming the field) and allocates scratch for
 * `vocab` tokens (about 31 bytes a token: 4 MB for 128k). The PRNG starts
 * from opt->seed. */
vkl_status vkl_sampler_create(vkl_context *ctx, const vkl_sampling *opt, size_t vocab,
                              vkl_sampler **out);

/* Picks the next token from `logits` (vocab floats, not modified).
 * `history` (n_history ids, oldest first; may be NULL when n_history is 0) is
 * read only for the repetition penalty; its ids in the window must lie in
 * [0, vocab). *token is written only on success; the PRNG advances by one
 * draw per successful non-greedy call and not at all otherwise. */
vkl_status vkl_sampler_sample(vkl_sampler *s, const float *logits, const int32_t *history,
                              size_t n_history, int32_t *token);

/* Restarts the PRNG stream as if the sampler had been created with `seed`. */
void vkl_sampler_reseed(vkl_sampler *s, uint64_t seed);

/* NULL is a no-op. */
void vkl_sampler_destroy(vkl_sampler *s);

#endif
