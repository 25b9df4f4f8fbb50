/* The model's tokenizer, and incremental detokenization for streamed output. */
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

void vkl_text_stream_reset(vkl_text_stream *s) { s->n = s->printed = 0; }

int vkl_text_stream_on_token(void *user, int32_t token) {
    vkl_text_stream *s = user;
    if (token == s->stop || s->n == s->cap) return 1;
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
