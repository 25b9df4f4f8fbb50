/* The smallest complete use of the C API: load a model, open a session,
 * greedy-generate after a prompt given as token ids, print the ids.
 * Usage: generate MODEL.vkm ID [ID...] */
#include <stdio.h>
#include <stdlib.h>

#include "vkllm.h"

static int print_token(void *user, int32_t token) {
    (void)user;
    printf(" %d", token);
    fflush(stdout);
    return 0; /* keep going */
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL.vkm ID [ID...]\n", argv[0]);
        return 2;
    }
    vkl_context *ctx;
    if (vkl_context_create(NULL, &ctx) != VKL_OK) return 1;
    vkl_model *model = NULL;
    vkl_session *session = NULL;
    int32_t prompt[256];
    size_t n = 0;
    for (int i = 2; i < argc && n < 256; i++) prompt[n++] = (int32_t)strtol(argv[i], NULL, 10);

    vkl_session_options opt;
    vkl_session_options_init(&opt);
    opt.max_context = 256;
    vkl_status st = vkl_model_load(ctx, argv[1], NULL, &model);
    if (st == VKL_OK) st = vkl_session_create(model, &opt, &session);
    if (st == VKL_OK) {
        printf("generated:");
        st = vkl_session_generate(session, prompt, n, 40, -1, print_token, NULL);
        printf("\n");
    }
    if (st != VKL_OK) fprintf(stderr, "error %s: %s\n", vkl_status_name(st), vkl_context_error(ctx));
    vkl_session_free(session);
    vkl_model_free(model);
    vkl_context_destroy(ctx);
    return st == VKL_OK ? 0 : 1;
}
