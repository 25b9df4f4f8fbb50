/* vkllm tokenizer API: text to token ids and back, streamed detokenization
 * and chat templates, for the tokenizer a .vkm model carries (`vkllm import
 * --tokenizer DIR`) or a Hugging Face tokenizer.json. Encodings match the
 * `tokenizers` library token for token; chat templates render as
 * transformers' apply_chat_template. Errors as in vkllm.h: a vkl_status,
 * with the detail in vkl_context_error(ctx). */
#ifndef VKLLM_TOKENIZER_H
#define VKLLM_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vkllm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A loaded tokenizer. It keeps `ctx` for allocation and errors (ctx must
 * outlive it) and holds scratch buffers: use it from one thread at a time,
 * as its context. Buffers it returns are freed with vkl_tokenizer_free_buffer. */
typedef struct vkl_tokenizer vkl_tokenizer;

/* The tokenizer stored in a model file. VKL_ERR_NOT_FOUND when the model
 * has none. The tokenizer copies what it needs: it may outlive the model. */
VKLLM_API vkl_status vkl_tokenizer_load_model(vkl_context *ctx, const vkl_model *model, vkl_tokenizer **out);
/* `path` is a tokenizer.json file, or a folder holding tokenizer.json and,
 * if present, tokenizer_config.json (bos/eos tokens, chat template). */
VKLLM_API vkl_status vkl_tokenizer_load_path(vkl_context *ctx, const char *path, vkl_tokenizer **out);
/* From the bytes of tokenizer.json and, optionally, tokenizer_config.json
 * (NULL/0 if none); neither needs a NUL or has to outlive the call. Unknown
 * components (a normalizer type, a regex construct) fail with
 * VKL_ERR_UNSUPPORTED naming them; malformed JSON with VKL_ERR_FORMAT. */
VKLLM_API vkl_status vkl_tokenizer_load_json(vkl_context *ctx, const char *json, size_t len, const char *config_json,
                                             size_t config_len, vkl_tokenizer **out);
VKLLM_API void vkl_tokenizer_free(vkl_tokenizer *t); /* accepts NULL */

/* UTF-8 text to ids, as HF's Tokenizer.encode(text, add_special_tokens=
 * add_special): with add_special, the post-processor's tokens (a leading
 * bos) are added. Special tokens written in the text are recognised.
 * Invalid UTF-8 reads as U+FFFD per maximal bad subpart, so any bytes are
 * accepted. *ids may be NULL when *n_ids is 0. */
VKLLM_API vkl_status vkl_tokenizer_encode(vkl_tokenizer *t, const char *text, size_t len, bool add_special,
                                          int32_t **ids, size_t *n_ids);
/* Ids to text, as HF's Tokenizer.decode: ids outside the vocabulary are
 * dropped; skip_special drops special tokens (bos, eos, ...). *text is
 * NUL-terminated; *len (may be NULL) excludes the NUL. */
VKLLM_API vkl_status vkl_tokenizer_decode(vkl_tokenizer *t, const int32_t *ids, size_t n, bool skip_special,
                                          char **text, size_t *len);
/* Frees what encode, decode and apply_chat_template returned; accepts NULL. */
VKLLM_API void vkl_tokenizer_free_buffer(vkl_tokenizer *t, void *p);

/* Largest id (model vocabulary or added token) + 1. */
VKLLM_API size_t vkl_tokenizer_vocab_size(const vkl_tokenizer *t);
/* The bos/eos ids of tokenizer_config.json; without one, bos is the special
 * token the post-processor puts first. -1 when unknown. */
VKLLM_API int32_t vkl_tokenizer_bos_id(const vkl_tokenizer *t);
VKLLM_API int32_t vkl_tokenizer_eos_id(const vkl_tokenizer *t);
VKLLM_API bool vkl_tokenizer_is_special(const vkl_tokenizer *t, int32_t id);
/* Id of a token string (added tokens first, then the vocabulary), or -1. */
VKLLM_API int32_t vkl_tokenizer_token_to_id(const vkl_tokenizer *t, const char *token, size_t len);
/* The token string of an id, in the vocabulary's own spelling (byte-level
 * tokenizers write a space as "Ġ"); not NUL-terminated: see *len. NULL for
 * an unknown id. */
VKLLM_API const char *vkl_tokenizer_id_to_token(const vkl_tokenizer *t, int32_t id, size_t *len);

/* --- Streamed decoding ---------------------------------------------------
 * Text of generated tokens as they come, one id at a time. A character can
 * span several tokens (byte-fallback and byte-level vocabularies split
 * UTF-8), and a token's text can depend on the one before it (a leading
 * space); the stream decodes a short window of recent ids and hands out only
 * text that is complete. The pieces joined equal vkl_tokenizer_decode of all
 * ids for every decoder whose output for a prefix of ids is a prefix of its
 * output for all of them (the HF decoders are, except ones that clean up
 * spaces before punctuation). */
typedef struct vkl_decode_stream vkl_decode_stream;

/* skip_special as in vkl_tokenizer_decode. The stream uses `t` until freed. */
VKLLM_API vkl_status vkl_decode_stream_create(vkl_tokenizer *t, bool skip_special, vkl_decode_stream **out);
/* Start after `ids` (the prompt): their text is not returned (but for a
 * character they leave incomplete, which comes whole with the push that
 * completes it); it is the context the first pushed id decodes in, so a
 * leading space a decoder drops at the start of a text is kept. Forgets
 * earlier ids, as reset. */
VKLLM_API vkl_status vkl_decode_stream_set_context(vkl_decode_stream *s, const int32_t *ids, size_t n);
/* Append one id; *text is the new text it completes, possibly "" (while a
 * character is incomplete). NUL-terminated, *len bytes (len may be NULL),
 * valid until the next call on the stream. */
VKLLM_API vkl_status vkl_decode_stream_push(vkl_decode_stream *s, int32_t id, const char **text, size_t *len);
/* The text still held back at the end of the ids (an incomplete character,
 * as U+FFFD); the stream then starts afresh, as after reset. */
VKLLM_API vkl_status vkl_decode_stream_flush(vkl_decode_stream *s, const char **text, size_t *len);
VKLLM_API void vkl_decode_stream_reset(vkl_decode_stream *s); /* forget every id: a new reply */
VKLLM_API void vkl_decode_stream_free(vkl_decode_stream *s);  /* accepts NULL */

/* --- Chat templates ------------------------------------------------------
 * The Jinja template of tokenizer_config.json, rendered as transformers'
 * apply_chat_template: special tokens (bos_token, eos_token, ...) defined,
 * trim_blocks and lstrip_blocks on. Constructs outside vkllm's Jinja subset
 * fail at load with VKL_ERR_UNSUPPORTED naming line and column. */
typedef struct vkl_chat_message {
    const char *role;    /* "system", "user", "assistant", ... */
    const char *content; /* UTF-8, NUL-terminated */
} vkl_chat_message;

typedef struct vkl_chat_options {
    bool add_generation_prompt; /* end with the opening of the assistant's turn; default true */
    /* NULL (default), or a JSON object whose keys become further template
     * variables: {"enable_thinking": false}, {"tools": [...]}. `messages`
     * and `add_generation_prompt` come from the arguments, never from here. */
    const char *variables_json;
} vkl_chat_options;

VKLLM_API void vkl_chat_options_init(vkl_chat_options *options);
VKLLM_API bool vkl_tokenizer_has_chat_template(const vkl_tokenizer *t);
/* Render `messages` with the tokenizer's chat template. *text is
 * NUL-terminated (*len may be NULL); free it with vkl_tokenizer_free_buffer.
 * Encode the result with add_special = false: templates write their own
 * bos. VKL_ERR_NOT_FOUND when the tokenizer has no template; options may be
 * NULL (defaults). */
VKLLM_API vkl_status vkl_tokenizer_apply_chat_template(vkl_tokenizer *t, const vkl_chat_message *messages, size_t n,
                                                       const vkl_chat_options *options, char **text, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
