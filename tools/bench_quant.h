/* vkbench --quant: E0M4 vs int4 (and int8) QuantMatMul speed on the
 * Transformer-Lite paper's Table 1 shapes, per backend and device. */
#ifndef VKL_TOOLS_BENCH_QUANT_H
#define VKL_TOOLS_BENCH_QUANT_H

#include <stddef.h>

#include "context.h"

typedef struct vkl_bench_quant_options {
    const char *backend;  /* NULL: every compiled-in backend */
    int reps;             /* timed executes per case (each times every weight copy) */
    size_t rotate_bytes;  /* weight copies per case total at least this (past the GPU's L2) */
    size_t gemm_rows;     /* M of the prefill GEMM table; 0: no GEMM table */
    unsigned maths;       /* bit m: time vkl_bench_quant_maths' m-th math; 0: every one the device has */
} vkl_bench_quant_options;

/* Parses a comma-separated list of "f32", "f16", "dot", "dot1" into bits
 * (f32 = 1, f16 = 2, dot = 4, dot1 = 8); nonzero for anything else. */
int vkl_bench_quant_maths(const char *list, unsigned *mask);

/* Prints the table; returns the process exit status. */
int vkl_bench_quant(vkl_context *ctx, const vkl_bench_quant_options *o);

#endif
