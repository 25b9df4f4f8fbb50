/* Tokenizers read from Hugging Face tokenizer.json (byte-level BPE, BPE with
 * byte fallback, Unigram) and Jinja chat templates from tokenizer_config.json.
 * Encodings match the `tokenizers` library token for token. */
#ifndef VKL_TOKENIZER_H
#define VKL_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vkllm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vkl_tokenizer vkl_tokenizer;
typedef struct vkl_chat_template vkl_chat_template;

/* Build a tokenizer from the bytes of tokenizer.json and, optionally, of
 * tokenizer_config.json (bos/eos tokens, chat template; NULL/0 if none).
 * Neither buffer needs a terminating NUL or has to outlive the call. Unknown
 * components (a normalizer type, a regex construct) fail with
 * VKL_ERR_UNSUPPORTED naming them; malformed JSON with VKL_ERR_FORMAT. The
 * tokenizer keeps `ctx` for allocation and errors: ctx must outlive it. */
vkl_status vkl_tokenizer_load_json(vkl_context *ctx, const char *json, size_t len, const char *config_json,
                                   size_t config_len, vkl_tokenizer **out);
/* `path` is a tokenizer.json file, or a folder holding tokenizer.json and,
 * if present, tokenizer_config.json. */
vkl_status vkl_tokenizer_load_path(vkl_context *ctx, const char *path, vkl_tokenizer **out);
void vkl_tokenizer_free(vkl_tokenizer *t);

/* Encode UTF-8 text: the `ids` of HF's Tokenizer.encode(text,
 * add_special_tokens=add_special). Special and added tokens written in the text
 * are recognised. Invalid UTF-8 is read as U+FFFD per maximal bad subpart (as
 * Rust's from_utf8_lossy), so any bytes are accepted. *ids is allocated
 * through the context (free with vkl_tokenizer_free_buffer); *ids may be
 * NULL when *n_ids is 0.
 * A tokenizer holds scratch buffers: use it from one thread at a time (as its
 * context); the loaded tables themselves are never modified. */
vkl_status vkl_tokenizer_encode(vkl_tokenizer *t, const char *text, size_t len, bool add_special, int32_t **ids,
                                size_t *n_ids);
/* Decode ids to text as HF's Tokenizer.decode: ids not in the vocabulary are
 * dropped; skip_special drops special tokens. *text is NUL-terminated, *len
 * excludes the NUL; free with vkl_tokenizer_free_buffer. */
vkl_status vkl_tokenizer_decode(vkl_tokenizer *t, const int32_t *ids, size_t n, bool skip_special, char **text,
                                size_t *len);
void vkl_tokenizer_free_buffer(vkl_tokenizer *t, void *p);

/* Largest id (model vocabulary or added token) + 1. */
size_t vkl_tokenizer_vocab_size(const vkl_tokenizer *t);
/* Id of a token string (added tokens first, then the model vocabulary), or -1. */
int32_t vkl_tokenizer_token_to_id(const vkl_tokenizer *t, const char *token, size_t len);
/* The token string of an id (not NUL-terminated: see *len), or NULL. */
const char *vkl_tokenizer_id_to_token(const vkl_tokenizer *t, int32_t id, size_t *len);
/* bos/eos from tokenizer_config.json; else bos is the special token a
 * TemplateProcessing post-processor puts first. -1 when unknown. */
int32_t vkl_tokenizer_bos_id(const vkl_tokenizer *t);
int32_t vkl_tokenizer_eos_id(const vkl_tokenizer *t);
bool vkl_tokenizer_is_special(const vkl_tokenizer *t, int32_t id);
/* The config's chat template (NULL when it has none). */
const vkl_chat_template *vkl_tokenizer_chat_template(const vkl_tokenizer *t);

/* ---- chat templates (a Jinja subset) --------------------------------------
 * Rendering follows transformers' apply_chat_template: trim_blocks and
 * lstrip_blocks on, the template's one trailing newline dropped, the
 * special tokens of the config (bos_token, eos_token, ...) defined, `tools`
 * and `documents` none unless given, raise_exception() and strftime_now().
 * Constructs outside the subset fail at load with VKL_ERR_UNSUPPORTED and
 * "line L, column C". */

typedef struct vkl_chat_message {
    const char *role;
    const char *content;
} vkl_chat_message;

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
