/* vkbench --decode: greedy decode on a loaded model, the step time beside
 * its memory-bound limit. */
#ifndef VKL_TOOLS_BENCH_DECODE_H
#define VKL_TOOLS_BENCH_DECODE_H

#include "bench_report.h"
#include "model.h"

/* Decodes `tokens` tokens after token 1, printing one line per `window`
 * tokens and a summary; fills r's decode figures (and r->decode_profile
 * when r->profile). r's copy bandwidth and weight bytes must be set. */
vkl_status vkl_bench_decode(vkl_context *ctx, vkl_model *m, size_t tokens, size_t window, vkl_bench_report *r);

#endif
