/* `vkllm tokenize` and `vkllm chat-template`: the command-line faces of the
 * tokenizer, stable so anyone can check us against Hugging Face. */
#ifndef VKL_TOOLS_CMD_TOKENIZE_H
#define VKL_TOOLS_CMD_TOKENIZE_H

#include "vkllm.h"

/* vkllm tokenize TOKENIZER [--jsonl FILE | -p TEXT [--no-special] [--tokens]] */
int vkl_cmd_tokenize(vkl_context *ctx, int argc, char **argv);
/* vkllm chat-template DIR --json FILE */
int vkl_cmd_chat_template(vkl_context *ctx, int argc, char **argv);

#endif
