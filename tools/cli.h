/* Command-line conventions shared by vkllm and vkbench: strict numeric
 * values, help, exit codes and the one-line error messages.
 *
 * Every number on a command line goes through vkl_cli_* below: the whole
 * string must be a number (no sign where none is allowed, no trailing text,
 * no overflow, finite for floats) inside the option's range, or the caller
 * gets VKL_EXIT_USAGE and stderr reads
 *   PROG: OPT 'TEXT' is not a whole number; expected MIN to MAX
 * Failures of the work itself go to stderr as "PROG: message" with
 * VKL_EXIT_FAILURE; help goes to stdout with exit 0. */
#ifndef VKL_TOOLS_CLI_H
#define VKL_TOOLS_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "context.h"

#define VKL_EXIT_FAILURE 1
#define VKL_EXIT_USAGE 2

/* -h or --help. */
bool vkl_cli_is_help(const char *arg);

/* The value of option argv[*i] (argv[*i + 1]); advances *i. NULL, with
 * "PROG: OPT needs a value" printed, when there is none. */
const char *vkl_cli_value(const char *prog, int argc, char **argv, int *i);

/* Unsigned and signed integers in [min, max]. */
int vkl_cli_u64(const char *prog, const char *opt, const char *text, uint64_t min, uint64_t max, uint64_t *out);
int vkl_cli_size(const char *prog, const char *opt, const char *text, size_t min, size_t max, size_t *out);
int vkl_cli_i64(const char *prog, const char *opt, const char *text, int64_t min, int64_t max, int64_t *out);
int vkl_cli_i32(const char *prog, const char *opt, const char *text, int32_t min, int32_t max, int32_t *out);

/* Finite numbers in [min, max], or (min, max] when min_open. */
int vkl_cli_f64(const char *prog, const char *opt, const char *text, double min, double max, bool min_open,
                double *out);
int vkl_cli_f32(const char *prog, const char *opt, const char *text, float min, float max, bool min_open,
                float *out);

/* Prints "PROG: <formatted>" and "try 'PROG --help'" to stderr; returns
 * VKL_EXIT_USAGE. */
int vkl_cli_usage_error(const char *prog, const char *fmt, ...) VKL_PRINTF(2, 3);

/* Prints "PROG: <ctx's message>" to stderr (the status' name when the
 * message is empty, so an error line is never blank); returns
 * VKL_EXIT_FAILURE. */
int vkl_cli_fail(const char *prog, const vkl_context *ctx, vkl_status st);

#endif
