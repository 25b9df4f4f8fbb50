/* The bundled model on Vulkan under a small binding limit and a small
 * memory budget (docs/vulkan.md, "Limits"):
 *  (a) with VKL_VK_MAX_BINDING_BYTES=200000 (set by ctest) and 64 positions,
 *      the bf16 embedding (2 MiB: 11 pieces), the int8 lm_head (1 MiB: 6),
 *      the f32 down projections (688 KiB: 4, read by MatMul) and the
 *      prefill's logits ([64, 4096] f32, 1 MiB: ranges of rows) are over the
 *      limit and go in pieces: greedy tokens equal ref's, first logits
 *      within 1e-4 of max |logit|;
 *  (b) the same limit with 1024 positions: the KV cache and the MLP's
 *      activations pass it too, and their ops bind no pieces: the session
 *      fails, naming the node and the tensor (so the limit is in force);
 *  (c) a memory budget of 4 MiB: the load fails before allocating, saying
 *      what needs how many bytes of how many available;
 *  (d) a budget of 16 MiB: the weights fit; a session of 1024 positions
 *      (an 11 MiB arena) fails saying so, one of 64 positions runs.
 * Validation is on (VKL_VK_VALIDATION=1 from ctest). No Vulkan: exit 77.
 * Usage: test_vk_pieces MODEL.vkm */
#define GREEDY_CONTEXT 64
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_env.h"
#include "check.h"
#include "greedy.h"
#include "vkllm.h"

/* "In the beginning" in the bundled tokenizer, with its BOS. */
static const int32_t prompt[] = {1, 1163, 262, 2050};
#define N_GEN 24

/* The model on Vulkan with the environment's options and these limits. */
static vkl_status load(vkl_context *ctx, const char *path, uint64_t binding, uint64_t budget, vkl_model **m) {
    vkl_env_options e;
    vkl_status st = vkl_env_options_read(ctx, &e);
    if (st) return st;
    if (binding) e.vulkan.max_binding_bytes = binding;
    e.vulkan.memory_budget_bytes = budget;
    vkl_model_options mo;
    vkl_model_options_init(&mo);
    mo.backend = "vulkan";
    mo.disable_features = e.backend.disable_features;
    mo.vulkan = &e.vulkan;
    return vkl_model_load(ctx, path, &mo, m);
}

/* A session of `context` positions with the prompt appended. */
static vkl_status session(vkl_model *m, uint32_t context, vkl_session **s) {
    vkl_session_options so;
    vkl_session_options_init(&so);
    so.max_context = context;
    so.sampling.temperature = 0;
    vkl_status st = vkl_session_create(m, &so, s);
    if (!st) st = vkl_session_append(*s, prompt, sizeof(prompt) / sizeof(prompt[0]));
    return st;
}

static void limit_in_force(vkl_context *ctx, const char *path) {
    vkl_model *m = NULL;
    vkl_session *s = NULL;
    CHECK_OK(ctx, load(ctx, path, 0, 0, &m));
    if (!m) return;
    CHECK_ERR(ctx, session(m, 1024, &s), VKL_ERR_UNSUPPORTED, "is over the binding limit (max_binding_bytes");
    CHECK_MSG(ctx, "and this op takes no pieces");
    printf("1024 positions: %s\n", vkl_context_error(ctx));
    vkl_session_free(s);
    vkl_model_free(m);
}

static void budget(vkl_context *ctx, const char *path) {
    vkl_model *m = NULL;
    vkl_session *s = NULL;
    CHECK_ERR(ctx, load(ctx, path, 1ull << 30, 4u << 20, &m), VKL_ERR_OUT_OF_MEMORY, "the model's weights (");
    CHECK_MSG(ctx, "memory_budget_bytes (VKL_VK_MEMORY_BUDGET)");
    printf("4 MiB budget: %s\n", vkl_context_error(ctx));
    vkl_model_free(m);
    m = NULL;
    CHECK_OK(ctx, load(ctx, path, 1ull << 30, 16u << 20, &m));
    if (!m) return;
    CHECK_ERR(ctx, session(m, 1024, &s), VKL_ERR_OUT_OF_MEMORY, "a session's arena");
    printf("16 MiB budget, 1024 positions: %s\n", vkl_context_error(ctx));
    vkl_session_free(s);
    s = NULL;
    CHECK_OK(ctx, session(m, 64, &s));
    vkl_session_free(s);
    vkl_model_free(m);
}

int main(int argc, char **argv) {
    vkl_context *ctx;
    const int rc = greedy_vulkan_start(argc, argv, prompt, sizeof(prompt) / sizeof(prompt[0]), N_GEN, &ctx);
    if (rc >= 0) return rc;
    limit_in_force(ctx, argv[1]);
    budget(ctx, argv[1]);
    vkl_context_destroy(ctx);
    printf("%d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
