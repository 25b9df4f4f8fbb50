/* `vkllm run`: generate text from a model (the bundled one by default). */
#ifndef VKL_TOOLS_CMD_RUN_H
#define VKL_TOOLS_CMD_RUN_H

#include "vkllm.h"

int vkl_cmd_run(vkl_context *ctx, int argc, char **argv);
/* `vkllm perplexity`: how well a model predicts a text, line by line. */
/* `vkllm chat`: an interactive conversation using the model's chat template. */
int vkl_cmd_chat(vkl_context *ctx, int argc, char **argv);
int vkl_cmd_perplexity(vkl_context *ctx, int argc, char **argv);

#endif
