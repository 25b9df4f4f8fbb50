/* The model's tokenizer, and incremental detokenization for streamed output. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "context.h"
#include "stream.h"

vkl_status vkl_tool_model_tokenizer(vkl_context *ctx, const vkl_model *model, vkl_tokenizer **out) {
    const void *json, *config = NULL;
    size_t len, config_len = 0;
    if (!vkl_model_metadata(model, "tokenizer.json", &json, &len))
        return vkl_fail(ctx, VKL_ERR_NOT_FOUND, "the model has no tokenizer; import it with --tokenizer DIR");
    vkl_model_metadata(model, "tokenizer_config.json", &config, &config_len);
    return vkl_tokenizer_load_json(ctx, json, len, config, config_len, out);
}

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

void vkl_text_stream_reset(vkl_text_stream *s) {
    s->n = s->printed = 0;
    s->stopped = false;
}

int vkl_text_stream_on_token(void *user, int32_t token) {
    vkl_text_stream *s = user;
    if (token == s->stop) {
        s->stopped = true;
        return 1;
    }
    if (s->n == s->cap) return 1;
    s->ids[s->n++] = token;
    char *text = NULL;
    size_t len = 0;
    if (vkl_tokenizer_decode(s->tok, s->ids, s->n, true, &text, &len) == VKL_OK) {
        /* an incomplete UTF-8 sequence decodes as U+FFFD at the end */
        if (len >= 3 && !memcmp(text + len - 3, "\xEF\xBF\xBD", 3)) len -= 3;
        if (len > s->printed) {
            fwrite(text + s->printed, 1, len - s->printed, stdout);
            fflush(stdout);
            s->printed = len;
        }
        vkl_tokenizer_free_buffer(s->tok, text);
    }
    return 0;
}
