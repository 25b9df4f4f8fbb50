/* The vkllm subcommands; each parses its own arguments and returns the
 * process exit code (0 ok, 1 failure, 2 usage). */
#ifndef VKL_TOOLS_COMMANDS_H
#define VKL_TOOLS_COMMANDS_H

#include "context.h"

int vkl_cmd_info(vkl_context *ctx, int argc, char **argv);

#endif
