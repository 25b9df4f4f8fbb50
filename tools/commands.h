/* The vkllm subcommands; each parses its own arguments and returns the
 * process exit code (0 ok, 1 failure, 2 usage). */
#ifndef VKL_TOOLS_COMMANDS_H
#define VKL_TOOLS_COMMANDS_H

#include "context.h"

int vkl_cmd_info(vkl_context *ctx, int argc, char **argv);
int vkl_cmd_import(vkl_context *ctx, int argc, char **argv);
int vkl_cmd_check(vkl_context *ctx, int argc, char **argv);

/* Shared by import and check: clear the pass bit a --no-* flag names
 * (false if arg is not such a flag); import + pipeline with a summary. */
#include <stdbool.h>
#include <stdint.h>
typedef struct vkl_onnx_model vkl_onnx_model;
bool vkl_tool_parse_passes(const char *arg, uint32_t *passes);
vkl_status vkl_tool_import(vkl_context *ctx, const char *path, uint32_t passes, bool quiet, vkl_onnx_model **out);

#endif
