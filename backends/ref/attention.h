/* Attention (fused.c) in two steps, so a host backend can run its rows on
 * several threads with ref's own arithmetic: setup checks the operands and
 * attributes once; each row (b, h, i) of the output is then independent. */
#ifndef VKL_REF_ATTENTION_H
#define VKL_REF_ATTENTION_H

#include <stdbool.h>

#include "ref_kernels.h"

typedef struct vkl_ref_attn {
    int64_t B, Hq, S, D, Hkv, T, Dv;
    int64_t layout; /* 0: K [B, Hkv, T, D]; 1: K [T, B, Hkv, D] */
    int64_t causal, window;
    double sc;            /* the scale applied to Q . K */
    int64_t rows;         /* B * Hq * S: row = (b * Hq + h) * S + i */
    bool coded;           /* K or V int8 / fp8: a row may fail to decode (a bad int8 scale) */
    size_t scratch_bytes; /* one row's, a multiple of 64 */
} vkl_ref_attn;

vkl_status vkl_ref_attention_setup(const vkl_ref_args *a, vkl_ref_attn *s);
/* One output row into a->out[0], with scratch_bytes of its own scratch.
 * Fails (reporting on a->ctx) only where s->coded. */
vkl_status vkl_ref_attention_row(const vkl_ref_args *a, const vkl_ref_attn *s, int64_t row, void *scratch);

#endif
