/* Text in and out of a model for run, chat and perplexity: the tokenizer a
 * model file carries, and streaming generated tokens as text (decode
 * everything generated so far and print only what is new, holding back an
 * incomplete UTF-8 tail, so a character split over tokens prints whole). */
#ifndef VKL_TOOLS_STREAM_H
#define VKL_TOOLS_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenizer/tokenizer.h"
#include "vkllm.h"

/* The largest token count (-n, --context, --window) the tools accept: far
 * beyond any context they can allocate, small enough that sizes built from
 * it cannot overflow. */
#define VKL_TOOL_MAX_TOKENS 1048576u
/* run's and chat's KV cache when neither the user nor the tokenizer says. */
#define VKL_TOOL_DEFAULT_CONTEXT 1024u

typedef struct vkl_text_stream {
    vkl_tokenizer *tok;
    int32_t *ids;   /* the generated ids, `cap` entries */
    size_t n, cap, printed;
    int32_t stop;   /* stop token (eos), or -1 */
    bool stopped;   /* generation ended at the stop token */
} vkl_text_stream;

/* The tokenizer stored in the model by `vkllm import --tokenizer`;
 * VKL_ERR_NOT_FOUND (message set) when the model has none. */
vkl_status vkl_tool_model_tokenizer(vkl_context *ctx, const vkl_model *model, vkl_tokenizer **out);

/* The context a session gets unless the user names one: `fallback`, or the
 * model's tokenizer_config.json model_max_length when that is smaller (a
 * model file records no maximum of its own; Hugging Face writes a huge
 * sentinel there when the length is unknown, which the minimum ignores).
 * *tokenizer_max is that model_max_length, 0 when absent. */
size_t vkl_tool_default_context(const vkl_model *model, size_t fallback, size_t *tokenizer_max);

void vkl_text_stream_reset(vkl_text_stream *s);
/* A vkl_token_callback: user is the stream. Returns nonzero at the stop
 * token or when `cap` tokens were generated. */
int vkl_text_stream_on_token(void *user, int32_t token);

#endif
