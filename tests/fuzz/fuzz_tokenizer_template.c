/* libFuzzer target for chat templates: the input is a Jinja template (the
 * Jinja-subset lexer, parser and renderer), rendered with a fixed
 * conversation that has a system prompt, tools and tool calls. Any input
 * must render or fail with a status, within the step/size bounds. Seeds: the
 * Llama 3 and Qwen3 templates and the Jinja cases. */
#include <stdint.h>
#include <string.h>

#include "tokenizer/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char VARS[] =
    "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"},"
    " {\"role\": \"user\", \"content\": \"Weather in Paris?\"},"
    " {\"role\": \"assistant\", \"content\": \"<think>\\nhm\\n</think>\\n\\nChecking.\", \"tool_calls\": [{\"type\": \"function\","
    " \"function\": {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}}]},"
    " {\"role\": \"tool\", \"content\": \"21C\"}, {\"role\": \"user\", \"content\": \"Thanks  \\ud83d\\ude00\"}],"
    " \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": {\"type\": \"object\","
    " \"properties\": {\"city\": {\"type\": \"string\"}}}}}], \"add_generation_prompt\": true, \"enable_thinking\": false,"
    " \"n\": 3, \"x\": 2.5, \"flag\": null}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vkl_context_options o;
    vkl_context_options_init(&o);
    o.log_level = VKL_LOG_ERROR;
    vkl_context *ctx;
    if (vkl_context_create(&o, &ctx)) return 0;
    vkl_chat_template *ct = NULL;
    if (vkl_chat_template_create(ctx, (const char *)data, size, "<s>", "</s>", &ct) == VKL_OK) {
        char *out = NULL;
        size_t len = 0;
        vkl_chat_template_render_json(ct, VARS, sizeof(VARS) - 1, &out, &len);
        vkl_chat_template_free_buffer(ct, out);
        vkl_chat_template_free(ct);
    }
    vkl_context_destroy(ctx);
    return 0;
}
