/* The bundled model, whole, on the Vulkan backend through the public API:
 *  (a) greedy generation of 64 tokens from "In the beginning"'s ids equals
 *      the ref backend's tokens exactly, and the first step's logits agree
 *      within 1e-4 of max |logit|;
 *  (b) 500 decode steps do no per-step host work beyond one submit and one
 *      wait: 0 host allocations (the context's allocator hook), 0 device
 *      memory allocations, 0 command-buffer recordings, 0 pipeline
 *      creations, 0 descriptor writes (vkl_vk_get_host_work).
 * Validation is on (VKL_VK_VALIDATION=1 from ctest): any message fails the
 * call that saw it. No Vulkan at all: prints why and exits 77 (skipped).
 * Usage: test_vk_model MODEL.vkm */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../backends/vulkan/vulkan_backend.h"
#include "alloc_counter.h"
#include "backend_env.h"
#include "check.h"
#include "model.h"
#include "vkllm.h"

/* "In the beginning" in the bundled tokenizer, with its BOS. */
static const int32_t prompt[] = {1, 1163, 262, 2050};
#define N_GEN 64
#define N_DECODE 500

/* Greedy tokens and the logits after the prompt, on one backend. */
static int generate(vkl_context *ctx, const char *path, const char *backend, int32_t *tokens, float *first,
                    size_t vocab_cap, size_t *vocab) {
    vkl_model_options mo;
    vkl_model_options_init(&mo);
    mo.backend = backend;
    vkl_model *m;
    vkl_status st = vkl_env_model_load(ctx, path, &mo, &m);
    if (st) {
        fprintf(stderr, "%s: load: %s\n", backend, vkl_context_error(ctx));
        return st == VKL_ERR_NOT_FOUND ? 77 : 1;
    }
    vkl_session_options so;
    vkl_session_options_init(&so);
    so.max_context = 1024;
    so.sampling.temperature = 0; /* greedy */
    vkl_session *s;
    st = vkl_session_create(m, &so, &s);
    if (!st) st = vkl_session_append(s, prompt, sizeof(prompt) / sizeof(prompt[0]));
    *vocab = m->vocab;
    if (!st && m->vocab <= vocab_cap) memcpy(first, vkl_session_logits(s), m->vocab * sizeof(float));
    for (int i = 0; !st && i < N_GEN; i++) {
        st = vkl_session_sample(s, &tokens[i]);
        if (!st) st = vkl_session_append(s, &tokens[i], 1);
    }
    if (st) fprintf(stderr, "%s: generate: %s\n", backend, vkl_context_error(ctx));
    vkl_session_free(s);
    vkl_model_free(m);
    return st ? 1 : 0;
}

/* N_DECODE steps after a short prompt, counting host work around them. */
static void count_decode_work(const char *path) {
    alloc_counter c = {0};
    vkl_context_options co;
    vkl_context_options_init(&co);
    co.allocator = alloc_counter_hook(&c);
    vkl_context *ctx;
    CHECK(vkl_context_create(&co, &ctx) == VKL_OK);
    vkl_model_options mo;
    vkl_model_options_init(&mo);
    mo.backend = "vulkan";
    vkl_model *m;
    CHECK(vkl_env_model_load(ctx, path, &mo, &m) == VKL_OK);
    vkl_session_options so;
    vkl_session_options_init(&so);
    so.max_context = 1024;
    vkl_session *s;
    /* pipelines are made at model load: a session and its first prompt make none */
    vkl_vk_host_work loaded, prompted;
    vkl_vk_get_host_work(m->dev, &loaded);
    CHECK(vkl_session_create(m, &so, &s) == VKL_OK);
    CHECK(vkl_session_append(s, prompt, sizeof(prompt) / sizeof(prompt[0])) == VKL_OK);
    vkl_vk_get_host_work(m->dev, &prompted);
    printf("after load: %llu pipelines made; by a session and its first prompt: %llu\n",
           (unsigned long long)loaded.pipelines, (unsigned long long)(prompted.pipelines - loaded.pipelines));
    CHECK(loaded.pipelines > 0 && prompted.pipelines == loaded.pipelines);
    int32_t tok = 0;
    CHECK(vkl_session_sample(s, &tok) == VKL_OK);
    CHECK(vkl_session_append(s, &tok, 1) == VKL_OK); /* the first decode step: anything lazy happens here */
    vkl_vk_host_work before, after;
    vkl_vk_get_host_work(m->dev, &before);
    size_t allocs = c.allocs;
    int steps = 0;
    for (; steps < N_DECODE; steps++) {
        if (vkl_session_sample(s, &tok) || vkl_session_append(s, &tok, 1)) break;
    }
    vkl_vk_get_host_work(m->dev, &after);
    CHECK(steps == N_DECODE);
    printf("%d decode steps: host allocations %zu, device allocations %llu, recordings %llu, pipelines %llu, "
           "descriptor writes %llu, submits %llu, waits %llu\n",
           steps, c.allocs - allocs, (unsigned long long)(after.allocations - before.allocations),
           (unsigned long long)(after.recordings - before.recordings),
           (unsigned long long)(after.pipelines - before.pipelines),
           (unsigned long long)(after.descriptor_writes - before.descriptor_writes),
           (unsigned long long)(after.submits - before.submits), (unsigned long long)(after.waits - before.waits));
    CHECK(c.allocs == allocs);
    CHECK(after.allocations == before.allocations);
    CHECK(after.recordings == before.recordings);
    CHECK(after.pipelines == before.pipelines);
    CHECK(after.descriptor_writes == before.descriptor_writes);
    CHECK(after.submits - before.submits == (uint64_t)steps);
    CHECK(after.waits - before.waits == (uint64_t)steps);
    vkl_session_free(s);
    vkl_model_free(m);
    vkl_context_destroy(ctx);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_vk_model MODEL.vkm\n");
        return 2;
    }
    vkl_context *ctx;
    CHECK(vkl_context_create(NULL, &ctx) == VKL_OK);
    int32_t ref_tok[N_GEN], vk_tok[N_GEN];
    static float ref_first[1 << 17], vk_first[1 << 17];
    size_t vocab = 0;
    if (generate(ctx, argv[1], "ref", ref_tok, ref_first, 1 << 17, &vocab)) return 1;
    int rc = generate(ctx, argv[1], "vulkan", vk_tok, vk_first, 1 << 17, &vocab);
    if (rc == 77) {
        printf("skipped: no Vulkan device (%s)\n", vkl_context_error(ctx));
        return 77;
    }
    if (rc) return 1;
    double err = 0, maxref = 0;
    for (size_t i = 0; i < vocab; i++) {
        if (fabs(vk_first[i] - ref_first[i]) > err) err = fabs(vk_first[i] - ref_first[i]);
        if (fabs(ref_first[i]) > maxref) maxref = fabs(ref_first[i]);
    }
    printf("first-step logits: max error %.3g of max |logit| %.3g\n", err, maxref);
    CHECK(err <= 1e-4 * maxref);
    int same = 0;
    while (same < N_GEN && ref_tok[same] == vk_tok[same]) same++;
    printf("greedy tokens equal to ref: %d of %d\n", same, N_GEN);
    CHECK(same == N_GEN);
    vkl_context_destroy(ctx);
    if (!failures) count_decode_work(argv[1]);
    return failures ? 1 : 0;
}
