/* The default context, and streamed output of generated tokens (stream.h). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#include "stream.h"

size_t vkl_tool_default_context(const vkl_model *model, size_t fallback, size_t *tokenizer_max) {
    const void *config;
    size_t len;
    *tokenizer_max = 0;
    if (!vkl_model_metadata(model, "tokenizer_config.json", &config, &len)) return fallback;
    cJSON *j = cJSON_ParseWithLength(config, len);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "model_max_length");
    /* a whole number that a size_t holds exactly (2^53 keeps the double exact) */
    if (cJSON_IsNumber(v) && v->valuedouble >= 1 && v->valuedouble <= 9007199254740992.0 &&
        v->valuedouble == (double)(size_t)v->valuedouble)
        *tokenizer_max = (size_t)v->valuedouble;
    cJSON_Delete(j);
    return *tokenizer_max && *tokenizer_max < fallback ? *tokenizer_max : fallback;
}

vkl_status vkl_text_stream_init(vkl_text_stream *s, vkl_tokenizer *tok, size_t cap) {
    *s = (vkl_text_stream){.cap = cap, .stop = vkl_tokenizer_eos_id(tok)};
    s->ids = calloc(cap ? cap : 1, sizeof(int32_t));
    vkl_status st = s->ids ? vkl_decode_stream_create(tok, true, &s->decoder) : VKL_ERR_OUT_OF_MEMORY;
    if (st) vkl_text_stream_free(s);
    return st;
}

void vkl_text_stream_free(vkl_text_stream *s) {
    vkl_decode_stream_free(s->decoder);
    free(s->ids);
    s->decoder = NULL;
    s->ids = NULL;
}

vkl_status vkl_text_stream_begin(vkl_text_stream *s, const int32_t *prompt, size_t n) {
    s->n = 0;
    s->stopped = false;
    s->status = VKL_OK;
    return vkl_decode_stream_set_context(s->decoder, prompt, n);
}

static void put(const char *text, size_t len) {
    if (!len) return;
    fwrite(text, 1, len, stdout);
    fflush(stdout);
}

int vkl_text_stream_on_token(void *user, int32_t token) {
    vkl_text_stream *s = user;
    if (token == s->stop) {
        s->stopped = true;
        return 1;
    }
    if (s->n == s->cap) return 1;
    s->ids[s->n++] = token;
    const char *text;
    size_t len;
    s->status = vkl_decode_stream_push(s->decoder, token, &text, &len);
    if (s->status) return 1;
    put(text, len);
    return 0;
}

vkl_status vkl_text_stream_finish(vkl_text_stream *s) {
    const char *text;
    size_t len;
    vkl_status st = vkl_decode_stream_flush(s->decoder, &text, &len);
    if (!st) put(text, len);
    return s->status ? s->status : st;
}
