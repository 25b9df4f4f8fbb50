/* The smallest complete use of the C API: load a model and the tokenizer it
 * carries, open a session, greedy-generate after a text prompt and print the
 * text as it comes. Only the public headers; builds against an installed
 * vkllm with `cc generate.c $(pkg-config --cflags --libs --static vkllm)`.
 * Usage: generate MODEL.vkm PROMPT [MAX_TOKENS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vkllm.h"
#include "vkllm_tokenizer.h"

typedef struct printer {
    vkl_decode_stream *stream;
    vkl_status status;
} printer;

/* Called with each generated token: print the text it completes. */
static int print_token(void *user, int32_t token) {
    printer *p = user;
    const char *text;
    size_t len;
    p->status = vkl_decode_stream_push(p->stream, token, &text, &len);
    if (p->status != VKL_OK) return 1; /* stop generating */
    fwrite(text, 1, len, stdout);
    fflush(stdout);
    return 0; /* keep going */
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL.vkm PROMPT [MAX_TOKENS]\n", argv[0]);
        return 2;
    }
    size_t max_new = argc > 3 ? strtoul(argv[3], NULL, 10) : 40;
    if (vkl_version() != VKLLM_VERSION)
        fprintf(stderr, "note: built with vkllm %s, running with %s\n", VKLLM_VERSION_STRING, vkl_version_string());
    vkl_context *ctx;
    if (vkl_context_create(NULL, &ctx) != VKL_OK) return 1;
    vkl_model *model = NULL;
    vkl_tokenizer *tok = NULL;
    vkl_session *session = NULL;
    printer out = {NULL, VKL_OK};
    int32_t *prompt = NULL;
    size_t n_prompt = 0;

    vkl_session_options opt;
    vkl_session_options_init(&opt); /* sampling defaults: greedy */
    opt.max_context = 256;
    vkl_status st = vkl_model_load(ctx, argv[1], NULL, &model);
    if (st == VKL_OK) st = vkl_tokenizer_load_model(ctx, model, &tok);
    /* add_special: the tokenizer's bos goes first, as in training */
    if (st == VKL_OK) st = vkl_tokenizer_encode(tok, argv[2], strlen(argv[2]), true, &prompt, &n_prompt);
    if (st == VKL_OK) st = vkl_session_create(model, &opt, &session);
    if (st == VKL_OK) st = vkl_decode_stream_create(tok, true, &out.stream);
    /* the prompt is the context the first generated token decodes in */
    if (st == VKL_OK) st = vkl_decode_stream_set_context(out.stream, prompt, n_prompt);
    if (st == VKL_OK) {
        printf("%s", argv[2]);
        st = vkl_session_generate(session, prompt, n_prompt, max_new, vkl_tokenizer_eos_id(tok), print_token, &out);
        if (st == VKL_OK) st = out.status;
        const char *rest;
        size_t len;
        if (st == VKL_OK) st = vkl_decode_stream_flush(out.stream, &rest, &len);
        if (st == VKL_OK) fwrite(rest, 1, len, stdout);
        printf("\n");
    }
    if (st != VKL_OK) fprintf(stderr, "error %s: %s\n", vkl_status_name(st), vkl_context_error(ctx));
    vkl_decode_stream_free(out.stream);
    vkl_tokenizer_free_buffer(tok, prompt);
    vkl_tokenizer_free(tok);
    vkl_session_free(session);
    vkl_model_free(model);
    vkl_context_destroy(ctx);
    return st == VKL_OK ? 0 : 1;
}
