/* libFuzzer target for the tokenizer.json reader: arbitrary bytes must load
 * or fail with a status; what loads must encode and decode a few texts
 * without a sanitizer report. An input holding "\n@@config@@\n" is split:
 * what follows is read as tokenizer_config.json (special tokens, chat
 * template). Seeds: tiny tokenizers with every component type. */
#include <stdint.h>
#include <string.h>

#include "tokenizer/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vkl_context_options o;
    vkl_context_options_init(&o);
    o.log_level = VKL_LOG_ERROR; /* failures are expected: keep them quiet */
    vkl_context *ctx;
    if (vkl_context_create(&o, &ctx)) return 0;
    static const char mark[] = "\n@@config@@\n";
    const char *json = (const char *)data, *cfg = NULL;
    size_t json_len = size, cfg_len = 0;
    for (size_t i = 0; i + sizeof(mark) - 1 <= size; i++)
        if (!memcmp(data + i, mark, sizeof(mark) - 1)) {
            json_len = i;
            cfg = json + i + sizeof(mark) - 1;
            cfg_len = size - i - (sizeof(mark) - 1);
            break;
        }
    vkl_tokenizer *t = NULL;
    if (vkl_tokenizer_load_json(ctx, json, json_len, cfg, cfg_len, &t) == VKL_OK) {
        static const char *const texts[] = {"Hello world! It's 2024.", "  <s> </s> <|im_start|>x\n\n",
                                            "\xc3\xa9t\xc3\xa9 e\xcc\x81 \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x98\x80",
                                            "\xff\xfe bad \xc0\xaf", ""};
        for (size_t k = 0; k < sizeof(texts) / sizeof(texts[0]); k++) {
            int32_t *ids = NULL;
            size_t n = 0, dl = 0;
            char *dec = NULL;
            if (vkl_tokenizer_encode(t, texts[k], strlen(texts[k]), k & 1, &ids, &n) == VKL_OK)
                vkl_tokenizer_decode(t, ids, n, k & 2, &dec, &dl);
            vkl_tokenizer_free_buffer(t, ids);
            vkl_tokenizer_free_buffer(t, dec);
        }
        int32_t odd[] = {0, 1, 2, 3, -1, 1 << 30, (int32_t)vkl_tokenizer_vocab_size(t) - 1};
        char *dec = NULL;
        size_t dl;
        vkl_tokenizer_decode(t, odd, 7, false, &dec, &dl);
        vkl_tokenizer_free_buffer(t, dec);
        const vkl_chat_template *ct = vkl_tokenizer_chat_template(t);
        if (ct) {
            vkl_chat_message m[] = {{"system", "s"}, {"user", "hi"}, {"assistant", "yo"}};
            char *out = NULL;
            vkl_chat_template_render(ct, m, 3, true, &out, &dl);
            vkl_chat_template_free_buffer(ct, out);
        }
        vkl_tokenizer_free(t);
    }
    vkl_context_destroy(ctx);
    return 0;
}
