/* Inside the tokenizer library: what vkllm_tokenizer.h declares, plus chat
 * templates as objects of their own (loaded from a config, rendered with any
 * JSON variables) for `vkllm chat-template`, the tests and the fuzzers.
 * Tokenizers read Hugging Face tokenizer.json (byte-level BPE, BPE with
 * byte fallback, Unigram) and Jinja chat templates from tokenizer_config.json. */
#ifndef VKL_TOKENIZER_H
#define VKL_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vkllm_tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vkl_chat_template vkl_chat_template;

/* The config's chat template (NULL when it has none). */
const vkl_chat_template *vkl_tokenizer_chat_template(const vkl_tokenizer *t);

/* ---- chat templates (a Jinja subset) --------------------------------------
 * Rendering follows transformers' apply_chat_template: trim_blocks and
 * lstrip_blocks on, the template's one trailing newline dropped, the
 * special tokens of the config (bos_token, eos_token, ...) defined, `tools`
 * and `documents` none unless given, raise_exception() and strftime_now().
 * Constructs outside the subset fail at load with VKL_ERR_UNSUPPORTED and
 * "line L, column C". */

/* From the bytes of tokenizer_config.json: its chat_template (a string, or
 * the "default" entry of a list) and special tokens. VKL_ERR_NOT_FOUND if it
 * has no template. */
vkl_status vkl_chat_template_load_config(vkl_context *ctx, const char *config_json, size_t len,
                                         vkl_chat_template **out);
/* From template source; bos/eos may be NULL (then undefined in the template). */
vkl_status vkl_chat_template_create(vkl_context *ctx, const char *source, size_t len, const char *bos_token,
                                    const char *eos_token, vkl_chat_template **out);
void vkl_chat_template_free(vkl_chat_template *ct);
/* Render with the variables of a JSON object: {"messages": [...],
 * "add_generation_prompt": bool, ...}; every key becomes a template variable
 * (tools, enable_thinking, ...). *out is NUL-terminated; free it with
 * vkl_chat_template_free_buffer. */
vkl_status vkl_chat_template_render_json(const vkl_chat_template *ct, const char *vars_json, size_t len, char **out,
                                         size_t *out_len);
vkl_status vkl_chat_template_render(const vkl_chat_template *ct, const vkl_chat_message *messages, size_t n,
                                    bool add_generation_prompt, char **out, size_t *out_len);
void vkl_chat_template_free_buffer(const vkl_chat_template *ct, void *p);

#ifdef __cplusplus
}
#endif
#endif
