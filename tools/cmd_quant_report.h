/* `vkllm quant-report`: E0M4 vs int4 weight error per matrix of a model. */
#ifndef VKL_TOOLS_CMD_QUANT_REPORT_H
#define VKL_TOOLS_CMD_QUANT_REPORT_H

#include "context.h"

/* argv[0] is "quant-report"; returns the exit code (0 ok, 1 failure, 2 usage). */
int vkl_cmd_quant_report(vkl_context *ctx, int argc, char **argv);

#endif
