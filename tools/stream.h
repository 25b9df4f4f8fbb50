/* Text in and out of a model for run, chat and perplexity: the default
 * context, and generated text to stdout: a vkl_token_callback that keeps the
 * ids and prints, through a vkl_decode_stream (vkllm_tokenizer.h), the text
 * each one completes, so a character split over tokens prints whole. */
#ifndef VKL_TOOLS_STREAM_H
#define VKL_TOOLS_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vkllm_tokenizer.h"

/* The largest token count (-n, --context, --window) the tools accept: far
 * beyond any context they can allocate, small enough that sizes built from
 * it cannot overflow. */
#define VKL_TOOL_MAX_TOKENS 1048576u
/* run's and chat's KV cache when neither the user nor the tokenizer says. */
#define VKL_TOOL_DEFAULT_CONTEXT 1024u

typedef struct vkl_text_stream {
    vkl_decode_stream *decoder;
    int32_t *ids;      /* the generated ids, `cap` entries */
    size_t n, cap;
    int32_t stop;      /* stop token (the tokenizer's eos), or -1 */
    bool stopped;      /* generation ended at the stop token */
    vkl_status status; /* the first decoding failure: generation stopped there */
} vkl_text_stream;

/* The context a session gets unless the user names one: `fallback`, or the
 * model's tokenizer_config.json model_max_length when that is smaller (a
 * model file records no maximum of its own; Hugging Face writes a huge
 * sentinel there when the length is unknown, which the minimum ignores).
 * *tokenizer_max is that model_max_length, 0 when absent. */
size_t vkl_tool_default_context(const vkl_model *model, size_t fallback, size_t *tokenizer_max);

/* Room for `cap` ids; stops at the tokenizer's eos. */
vkl_status vkl_text_stream_init(vkl_text_stream *s, vkl_tokenizer *tok, size_t cap);
void vkl_text_stream_free(vkl_text_stream *s);
/* A new reply after `prompt` (its last ids are the decoding context): no
 * ids, nothing held back. */
vkl_status vkl_text_stream_begin(vkl_text_stream *s, const int32_t *prompt, size_t n);
/* A vkl_token_callback: user is the stream. Returns nonzero at the stop
 * token, when `cap` tokens were generated, or when decoding failed. */
int vkl_text_stream_on_token(void *user, int32_t token);
/* Print what is still held back (an incomplete character at the end);
 * returns the first failure of the reply. */
vkl_status vkl_text_stream_finish(vkl_text_stream *s);

#endif
