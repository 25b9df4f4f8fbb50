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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../backends/vulkan/vulkan_backend.h"
#include "alloc_counter.h"
#include "backend_env.h"
#include "check.h"
#include "greedy.h"
#include "model.h"
#include "vkllm.h"

/* "In the beginning" in the bundled tokenizer, with its BOS. */
static const int32_t prompt[] = {1, 1163, 262, 2050};
#define N_GEN 64
#define N_DECODE 500

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
    REQUIRE(vkl_env_model_load(ctx, path, &mo, &m) == VKL_OK, "load: %s", vkl_context_error(ctx));
    /* pipelines are made at model load: a session and its first prompt make none */
    vkl_vk_host_work loaded, prompted;
    vkl_vk_get_host_work(m->dev, &loaded);
    vkl_session_options so;
    vkl_session_options_init(&so);
    so.max_context = GREEDY_CONTEXT;
    vkl_session *s = NULL;
    CHECK_OK(ctx, vkl_session_create(m, &so, &s));
    if (s) CHECK_OK(ctx, vkl_session_append(s, prompt, sizeof(prompt) / sizeof(prompt[0])));
    vkl_vk_get_host_work(m->dev, &prompted);
    printf("after load: %llu pipelines made; by a session and its first prompt: %llu\n",
           (unsigned long long)loaded.pipelines, (unsigned long long)(prompted.pipelines - loaded.pipelines));
    CHECK(loaded.pipelines > 0 && prompted.pipelines == loaded.pipelines);
    REQUIRE(s != NULL, "no session");
    CHECK(greedy_steps(s, 1, NULL) == 1); /* the first decode step: anything lazy happens here */
    vkl_vk_host_work before, after;
    vkl_vk_get_host_work(m->dev, &before);
    size_t allocs = c.allocs;
    const int steps = greedy_steps(s, N_DECODE, NULL);
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
    vkl_context *ctx;
    const int rc = greedy_vulkan_start(argc, argv, prompt, sizeof(prompt) / sizeof(prompt[0]), N_GEN, &ctx);
    if (rc >= 0) return rc;
    vkl_context_destroy(ctx);
    if (!failures) count_decode_work(argv[1]);
    return failures ? 1 : 0;
}
