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
/* Quantization flags (--weights, --group, --lm-head, --embed, --kv) at
 * argv[*i]: 1 when it was one (its value consumed, *i advanced), 0 when not,
 * -1 on a missing or bad value (message printed, naming prog). Import with that recipe (NULL:
 * none) run last in the pipeline; prints its counts unless quiet. */
typedef struct vkl_quant_recipe vkl_quant_recipe;
#define VKL_TOOL_MAX_GROUP 65536 /* the recipe's own bound */
int vkl_tool_parse_quant(vkl_context *ctx, const char *prog, int argc, char **argv, int *i, vkl_quant_recipe *r);
vkl_status vkl_tool_import_recipe(vkl_context *ctx, const char *path, uint32_t passes, const vkl_quant_recipe *recipe,
                                  bool quiet, vkl_onnx_model **out);
/* The same on `threads` threads (0: all CPUs), reporting to `progress`
 * (NULL: none); the f32 weights' mapped pages are dropped as they are
 * converted. */
typedef struct vkl_progress vkl_progress;
vkl_status vkl_tool_import_opts(vkl_context *ctx, const char *path, uint32_t passes, const vkl_quant_recipe *recipe,
                                uint32_t threads, vkl_progress *progress, bool quiet, vkl_onnx_model **out);

#endif
