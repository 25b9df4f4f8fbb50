/* vkbench --prefill N: the time of one prompt of N tokens, and the FLOP/s
 * it reached. */
#ifndef VKL_TOOLS_BENCH_PREFILL_H
#define VKL_TOOLS_BENCH_PREFILL_H

#include "bench_report.h"
#include "model.h"

/* Prints one line and fills r's prefill figures (and r->prefill_profile,
 * timed when r->timed). r's copy bandwidth must be set. */
vkl_status vkl_bench_prefill(vkl_context *ctx, vkl_model *m, size_t tokens, vkl_bench_report *r);

#endif
