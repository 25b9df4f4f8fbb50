/* Greedy generation through the public API for the whole-model tests
 * (tests/vulkan/test_vk_model.c, test_vk_pieces.c, tests/cpu/test_cpu_model.c): the tokens a
 * backend generates after a prompt, their agreement with ref's, and a
 * session started for counting what later decode steps do. Header-only;
 * its checks count in check.h's file-scope counters. */
#ifndef VKL_TEST_GREEDY_H
#define VKL_TEST_GREEDY_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_env.h" /* the tools' VKL_VK_* mapping: ctest turns validation on */
#include "check.h"
#include "vkllm.h"

#ifndef GREEDY_CONTEXT /* a test may ask for fewer positions (smaller activations) */
#define GREEDY_CONTEXT 1024
#endif

/* Loads `path` with `mo`, creates a greedy session of GREEDY_CONTEXT
 * positions and appends the prompt. On failure nothing stays open. */
static inline vkl_status greedy_open(vkl_context *ctx, const char *path, const vkl_model_options *mo,
                                     const int32_t *prompt, size_t n_prompt, vkl_model **m, vkl_session **s) {
    vkl_session_options so;
    vkl_session_options_init(&so);
    so.max_context = GREEDY_CONTEXT;
    so.sampling.temperature = 0;
    *s = NULL;
    vkl_model_options with_env = *mo;
    vkl_status st = vkl_env_model_load(ctx, path, &with_env, m);
    if (st) return st;
    st = vkl_session_create(*m, &so, s);
    if (!st) st = vkl_session_append(*s, prompt, n_prompt);
    if (st) {
        vkl_session_free(*s);
        vkl_model_free(*m);
        *s = NULL;
        *m = NULL;
    }
    return st;
}

/* Up to n decode steps (sample, append); the number that ran. */
static inline int greedy_steps(vkl_session *s, int n, int32_t *tokens) {
    int i = 0;
    int32_t tok;
    for (; i < n; i++) {
        if (vkl_session_sample(s, &tok) || vkl_session_append(s, &tok, 1)) break;
        if (tokens) tokens[i] = tok;
    }
    return i;
}

/* Whether a Vulkan model's products take fp16 operands: fp16 math asked
 * for, or the cooperative-matrix GEMM (the default where the device has
 * it) under any math but f32. */
static inline bool greedy_fp16_operands(const vkl_model *m) {
    const char *math = getenv("VKL_VK_MATH");
    if (strcmp(vkl_model_backend_name(m), "vulkan")) return false;
    if (math && !strcmp(math, "f16")) return true;
    return (vkl_model_features(m) & VKL_FEATURE_COOPMAT) && !(math && !strcmp(math, "f32"));
}

/* n_gen greedy tokens after the prompt on `backend`, and the logits after
 * the prompt (when the vocab fits `cap`): 0, or 77 when the backend finds no
 * device, or 1 on any other failure (said on stderr). *fp16: the products
 * took fp16 operands (greedy_fp16_operands). */
static inline int greedy_generate(vkl_context *ctx, const char *path, const char *backend, const int32_t *prompt,
                                  size_t n_prompt, int32_t *tokens, int n_gen, float *first, size_t cap,
                                  size_t *vocab, bool *fp16) {
    vkl_model_options mo;
    vkl_model_options_init(&mo);
    mo.backend = backend;
    vkl_model *m;
    vkl_session *s;
    vkl_status st = greedy_open(ctx, path, &mo, prompt, n_prompt, &m, &s);
    if (st) {
        fprintf(stderr, "%s: load: %s\n", backend, vkl_context_error(ctx));
        return st == VKL_ERR_NOT_FOUND ? 77 : 1;
    }
    *vocab = vkl_model_vocab_size(m);
    *fp16 = greedy_fp16_operands(m);
    if (*vocab <= cap) memcpy(first, vkl_session_logits(s), *vocab * sizeof(float));
    const int ran = greedy_steps(s, n_gen, tokens);
    if (ran < n_gen) fprintf(stderr, "%s: generate: %s\n", backend, vkl_context_error(ctx));
    vkl_session_free(s);
    vkl_model_free(m);
    return ran < n_gen;
}

#define GREEDY_VOCAB_MAX (1 << 17)

/* `backend` against ref on the model at `path`: n_gen greedy tokens after
 * the prompt must all be equal and the logits after the prompt within 1e-4
 * of max |logit|, 2e-3 where the products took fp16 operands (each rounded
 * by 2^-11 relative; an H200's coopmat prefill of the bundled model: 1.8e-4),
 * both printed. 0, or 77 when the backend finds no device,
 * or 1 when a run failed (the checks count in check.h's counters). */
static inline int greedy_check_vs_ref(vkl_context *ctx, const char *path, const char *backend, const int32_t *prompt,
                                      size_t n_prompt, int n_gen) {
    int32_t *ref_tok = calloc((size_t)n_gen, sizeof(int32_t)), *tok = calloc((size_t)n_gen, sizeof(int32_t));
    float *ref_first = calloc(GREEDY_VOCAB_MAX, sizeof(float)), *first = calloc(GREEDY_VOCAB_MAX, sizeof(float));
    size_t vocab = 0;
    bool ref_fp16 = false, fp16 = false;
    int rc = !ref_tok || !tok || !ref_first || !first;
    if (!rc)
        rc = greedy_generate(ctx, path, "ref", prompt, n_prompt, ref_tok, n_gen, ref_first, GREEDY_VOCAB_MAX, &vocab,
                             &ref_fp16);
    if (!rc)
        rc = greedy_generate(ctx, path, backend, prompt, n_prompt, tok, n_gen, first, GREEDY_VOCAB_MAX, &vocab, &fp16);
    if (!rc) {
        double err = 0, maxref = 0;
        for (size_t i = 0; i < vocab && vocab <= GREEDY_VOCAB_MAX; i++) {
            err = fmax(err, fabs((double)first[i] - ref_first[i]));
            maxref = fmax(maxref, fabs((double)ref_first[i]));
        }
        const double bound = fp16 ? 2e-3 : 1e-4;
        printf("first-step logits: max error %.3g of max |logit| %.3g (bound %g of it: %s operands)\n", err, maxref,
               bound, fp16 ? "fp16" : "f32");
        CHECK(err <= bound * maxref);
        int same = 0;
        while (same < n_gen && ref_tok[same] == tok[same]) same++;
        printf("greedy tokens equal to ref: %d of %d\n", same, n_gen);
        CHECK(same == n_gen);
    }
    free(ref_tok);
    free(tok);
    free(ref_first);
    free(first);
    return rc;
}

/* The start of a Vulkan model test's main (test_vk_model, test_vk_pieces):
 * argv[1] is the model, whose greedy tokens after the prompt must be ref's
 * (greedy_check_vs_ref). -1: go on, *ctx open; else the exit code (2 for
 * usage, 77 without a Vulkan device, 1 when a run failed), *ctx closed. */
static inline int greedy_vulkan_start(int argc, char **argv, const int32_t *prompt, size_t n_prompt, int n_gen,
                                      vkl_context **ctx) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s MODEL.vkm\n", argv[0]);
        return 2;
    }
    CHECK(vkl_context_create(NULL, ctx) == VKL_OK);
    const int rc = greedy_check_vs_ref(*ctx, argv[1], "vulkan", prompt, n_prompt, n_gen);
    if (rc == 77) printf("skipped: no Vulkan device (%s)\n", vkl_context_error(*ctx));
    if (!rc) return -1;
    vkl_context_destroy(*ctx);
    return rc == 77 ? 77 : 1;
}

#endif
