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

/* Where output row `row` sits, its KV head and its visible keys [lo, hi):
 * with p = i + T - S, j <= p if causal and p - j < window if window > 0. */
typedef struct vkl_ref_attn_pos {
    int64_t b, h, i, g, lo, hi;
} vkl_ref_attn_pos;

static inline vkl_ref_attn_pos vkl_ref_attn_row_pos(const vkl_ref_attn *s, int64_t row) {
    vkl_ref_attn_pos r = {row / s->S / s->Hq, row / s->S % s->Hq, row % s->S, 0, 0, s->T};
    r.g = r.h / (s->Hq / s->Hkv);
    const int64_t p = r.i + s->T - s->S;
    if (s->window > 0 && p - s->window + 1 > 0) r.lo = p - s->window + 1;
    if (s->causal && p + 1 < s->T) r.hi = p + 1;
    return r;
}

/* Element offset of row (b, KV head g, position j) of K or V, rows of `width`. */
static inline int64_t vkl_ref_attn_kv_offset(const vkl_ref_attn *s, int64_t b, int64_t g, int64_t j, int64_t width) {
    return (s->layout ? (j * s->B + b) * s->Hkv + g : (b * s->Hkv + g) * s->T + j) * width;
}

vkl_status vkl_ref_attention_setup(const vkl_ref_args *a, vkl_ref_attn *s);
/* One output row into a->out[0], with scratch_bytes of its own scratch.
 * Fails (reporting on a->ctx) only where s->coded. */
vkl_status vkl_ref_attention_row(const vkl_ref_args *a, const vkl_ref_attn *s, int64_t row, void *scratch);

#endif
