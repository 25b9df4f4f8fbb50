/* The environment's kill switches for the cpu backend's instruction sets:
 * VKL_CPU_DISABLE=avx2 (a comma-separated list) -> VKL_ISA_* bits for
 * vkl_model_options.disable_isa. Only the tools read the environment; the
 * library takes the bits as an option. */
#ifndef VKL_TOOLS_CPU_ENV_H
#define VKL_TOOLS_CPU_ENV_H

#include <stdint.h>

/* 0 with the mask in *disable_isa (0 when unset), or VKL_EXIT_USAGE after
 * "PROG: VKL_CPU_DISABLE: unknown instruction set 'x' (known: avx2)". */
int vkl_tool_cpu_disable_isa(const char *prog, uint32_t *disable_isa);

#endif
