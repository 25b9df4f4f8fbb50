/* Ref kernels for the fused LLM ops of domain "vkllm": RoPE, Attention,
 * KvAppend (RMSNorm is in norm.c). These are the ops' definitions; the
 * table entries in engine/ops/fused.c state them in words. The quantized KV
 * cache (int8 keys, fp8 values) is read and written only through
 * engine/quant's functions (docs/quant.md "KV cache"). */
#include <math.h>
#include <string.h>

#include "../../engine/context.h"
#include "../../engine/graph.h"
#include "../../engine/quant/quant.h"
#include "attention.h"
#include "nn_util.h"
#include "ref_ops.h"

/* One row of RoPE on f32 data: each value as the element path computes it
 * (double products and sum, rounded once to f32). */
static void rope_row_f32(const float *x, const float *c, const float *sn, int64_t R, int64_t D, bool interleaved,
                         float *y) {
    if (interleaved) {
        for (int64_t i = 0; i < R / 2; i++) {
            const double x1 = x[2 * i], x2 = x[2 * i + 1];
            y[2 * i] = (float)(x1 * c[2 * i] - x2 * sn[2 * i]);
            y[2 * i + 1] = (float)(x2 * c[2 * i + 1] + x1 * sn[2 * i + 1]);
        }
    } else {
        const int64_t h = R / 2;
        for (int64_t i = 0; i < h; i++) {
            const double x1 = x[i], x2 = x[i + h];
            y[i] = (float)(x1 * c[i] - x2 * sn[i]);
            y[i + h] = (float)(x2 * c[i + h] + x1 * sn[i + h]);
        }
    }
    if (y != x)
        for (int64_t d = R; d < D; d++) y[d] = x[d];
}

/* RoPE: X [B, H, S, D], cos/sin [S, R] or [B or 1, S, R]. Rotates pairs
 * (i1, i2) of the first R dims of each head, i < R/2:
 *   rotate_half (interleaved = 0): (i1, i2) = (i, i + R/2)
 *   GPT-J pairs (interleaved = 1): (i1, i2) = (2i, 2i + 1)
 *   y[i1] = x[i1] * cos[i1] - x[i2] * sin[i1]
 *   y[i2] = x[i2] * cos[i2] + x[i1] * sin[i2]
 * dims >= R are copied. */
vkl_status vkl_ref_rope(const vkl_ref_args *a) {
    const vkl_ref_tensor *x = &a->in[0], *cs = &a->in[1], *sn = &a->in[2];
    vkl_ref_tensor *y = &a->out[0];
    int64_t interleaved;
    if (!vkl_ref_nn_is_float(x->dtype)) return vkl_ref_nn_bad_dtype(a, "RoPE", "X", x->dtype);
    if (!vkl_ref_nn_is_float(cs->dtype) || sn->dtype != cs->dtype) return vkl_ref_nn_bad_dtype(a, "RoPE", "cos/sin", sn->dtype);
    if (x->rank != 4 || (cs->rank != 2 && cs->rank != 3) || sn->rank != cs->rank ||
        memcmp(cs->dims, sn->dims, cs->rank * sizeof(int64_t)))
        return vkl_fail(a->ctx, VKL_ERR_SHAPE, "RoPE: X must be [B, H, S, D] and cos, sin both [S, R] or [B, S, R]");
    int64_t B = x->dims[0], H = x->dims[1], S = x->dims[2], D = x->dims[3];
    int64_t R = cs->dims[cs->rank - 1], cb = cs->rank == 3 ? cs->dims[0] : 1;
    vkl_status st = vkl_ref_nn_dim_eq(a, "RoPE", cs->dims[cs->rank - 2], S, "cos's and X's sequence lengths");
    if (!st && cb != 1) st = vkl_ref_nn_dim_eq(a, "RoPE", cb, B, "cos's and X's batch");
    if (!st && (R % 2 || R > D))
        st = vkl_fail(a->ctx, VKL_ERR_SHAPE, "RoPE: rotary width %lld must be even and at most D = %lld", (long long)R,
                      (long long)D);
    if (!st) st = vkl_ref_nn_attr(a, "interleaved", &interleaved);
    if (st) return st;
    /* all f32: the same double arithmetic read and written in place (the
     * element accessors were most of a prefill's RoPE time on the cpu
     * backend, which runs this kernel on slices) */
    const bool f32 = x->dtype == VKL_DTYPE_F32 && cs->dtype == VKL_DTYPE_F32 && y->dtype == VKL_DTYPE_F32;
    for (int64_t b = 0; b < B; b++) {
        for (int64_t h = 0; h < H; h++) {
            for (int64_t s = 0; s < S; s++) {
                int64_t xo = ((b * H + h) * S + s) * D, co = ((cb == 1 ? 0 : b) * S + s) * R;
                if (f32) {
                    rope_row_f32((const float *)x->data + xo, (const float *)cs->data + co,
                                 (const float *)sn->data + co, R, D, interleaved != 0, (float *)y->data + xo);
                    continue;
                }
                for (int64_t i = 0; i < R / 2; i++) {
                    int64_t i1 = interleaved ? 2 * i : i, i2 = interleaved ? 2 * i + 1 : i + R / 2;
                    double x1 = vkl_ref_get_f(x, xo + i1), x2 = vkl_ref_get_f(x, xo + i2);
                    vkl_ref_set_f(y, xo + i1, x1 * vkl_ref_get_f(cs, co + i1) - x2 * vkl_ref_get_f(sn, co + i1));
                    vkl_ref_set_f(y, xo + i2, x2 * vkl_ref_get_f(cs, co + i2) + x1 * vkl_ref_get_f(sn, co + i2));
                }
                for (int64_t d = R; d < D; d++) vkl_ref_set_f(y, xo + d, vkl_ref_get_f(x, xo + d));
            }
        }
    }
    return VKL_OK;
}

/* The KV cache dtypes Attention reads and KvAppend writes beside the plain
 * floats (docs/quant.md "KV cache"): fp8 without a scale, and int8 rows that
 * are each one Q_INT8 block (group = the row width). */
static bool kv_coded(vkl_dtype t) {
    return t == VKL_DTYPE_FP8_E4M3 || t == VKL_DTYPE_FP8_E5M2 || t == VKL_DTYPE_Q_INT8;
}

static bool kv_dtype_ok(const vkl_ref_tensor *t, int64_t width) {
    if (t->dtype == VKL_DTYPE_Q_INT8) return width > 0 && t->group == (uint64_t)width;
    return vkl_ref_nn_is_float(t->dtype) || kv_coded(t->dtype);
}

/* The row of `n` elements at element offset `off` of K or V as f32 values:
 * in place for f32, decoded into buf by engine/quant's definitions for fp8
 * and int8 (exact), NULL for f16/bf16/f64 (read per element). */
static vkl_status row_values(const vkl_ref_args *a, const vkl_ref_tensor *t, int64_t off, int64_t n, float *buf,
                             const float **row) {
    const uint8_t *bytes = t->data;
    *row = NULL;
    switch (t->dtype) {
    case VKL_DTYPE_F32: *row = (const float *)t->data + off; return VKL_OK;
    case VKL_DTYPE_FP8_E4M3: case VKL_DTYPE_FP8_E5M2:
        *row = buf;
        return vkl_kv_dequantize_rows(a->ctx, t->dtype, bytes + off, (size_t)n, 1, n, buf);
    case VKL_DTYPE_Q_INT8: {
        const size_t rb = vkl_quant_block_bytes(VKL_DTYPE_Q_INT8, (uint32_t)n);
        *row = buf;
        return vkl_kv_dequantize_rows(a->ctx, t->dtype, bytes + (size_t)(off / n) * rb, rb, 1, n, buf);
    }
    default: return VKL_OK;
    }
}

/* f16/bf16/f64 rows (row == NULL) go through the element accessor. */
static void load_row(const vkl_ref_tensor *t, int64_t off, int64_t n, double *dst) {
    if (t->dtype == VKL_DTYPE_F32) {
        const float *p = (const float *)t->data + off;
        for (int64_t i = 0; i < n; i++) dst[i] = p[i];
    } else {
        for (int64_t i = 0; i < n; i++) dst[i] = vkl_ref_get_f(t, off + i);
    }
}

static double dot_row(const vkl_ref_tensor *t, int64_t off, const float *row, const double *q, int64_t n) {
    double s = 0;
    if (row) {
        for (int64_t i = 0; i < n; i++) s += q[i] * row[i];
    } else {
        for (int64_t i = 0; i < n; i++) s += q[i] * vkl_ref_get_f(t, off + i);
    }
    return s;
}

static void axpy_row(double *acc, double w, const vkl_ref_tensor *t, int64_t off, const float *row, int64_t n) {
    if (row) {
        for (int64_t i = 0; i < n; i++) acc[i] += w * row[i];
    } else {
        for (int64_t i = 0; i < n; i++) acc[i] += w * vkl_ref_get_f(t, off + i);
    }
}

/* Reads and checks the dims of Q, K, V (and the mask's broadcast). */
static vkl_status attention_dims(const vkl_ref_args *a, const vkl_ref_tensor *mask, vkl_ref_attn *s) {
    const vkl_ref_tensor *q = &a->in[0], *k = &a->in[1], *v = &a->in[2];
    vkl_status st = vkl_ref_nn_attr(a, "kv_layout", &s->layout);
    if (st) return st;
    if (q->rank != 4 || k->rank != 4 || v->rank != 4 || (s->layout != 0 && s->layout != 1))
        return vkl_fail(a->ctx, VKL_ERR_SHAPE, "Attention: Q, K, V must be 4-D and kv_layout 0 or 1");
    /* positions of B, Hkv, T, D in K and V */
    static const uint32_t pos0[4] = {0, 1, 2, 3}, pos1[4] = {1, 2, 0, 3};
    const uint32_t *p = s->layout ? pos1 : pos0;
    s->B = q->dims[0], s->Hq = q->dims[1], s->S = q->dims[2], s->D = q->dims[3];
    s->Hkv = k->dims[p[1]], s->T = k->dims[p[2]], s->Dv = v->dims[p[3]];
    st = vkl_ref_nn_dim_eq(a, "Attention", k->dims[p[0]], s->B, "K's and Q's batch");
    if (!st) st = vkl_ref_nn_dim_eq(a, "Attention", v->dims[p[0]], s->B, "V's and Q's batch");
    if (!st) st = vkl_ref_nn_dim_eq(a, "Attention", v->dims[p[1]], s->Hkv, "V's and K's heads");
    if (!st) st = vkl_ref_nn_dim_eq(a, "Attention", v->dims[p[2]], s->T, "V's and K's lengths");
    if (!st) st = vkl_ref_nn_dim_eq(a, "Attention", k->dims[p[3]], s->D, "K's and Q's head dims");
    if (!st && (s->Hkv == 0 ? s->Hq != 0 : s->Hq % s->Hkv != 0))
        st = vkl_fail(a->ctx, VKL_ERR_SHAPE, "Attention: Q's %lld heads are not a multiple of K's %lld", (long long)s->Hq,
                      (long long)s->Hkv);
    int64_t scores[4] = {s->B, s->Hq, s->S, s->T};
    if (!st && mask) st = vkl_ref_nn_broadcast_to(a, "Attention", mask, scores, 4, "mask");
    return st;
}

vkl_status vkl_ref_attention_setup(const vkl_ref_args *a, vkl_ref_attn *s) {
    const vkl_ref_tensor *q = &a->in[0], *k = &a->in[1], *v = &a->in[2];
    const vkl_ref_tensor *mask = a->n_in > 3 && a->in[3].data ? &a->in[3] : NULL;
    float scale;
    memset(s, 0, sizeof(*s));
    if (!vkl_ref_nn_is_float(q->dtype)) return vkl_ref_nn_bad_dtype(a, "Attention", "Q", q->dtype);
    if (mask && mask->dtype != VKL_DTYPE_BOOL && !vkl_ref_nn_is_float(mask->dtype))
        return vkl_ref_nn_bad_dtype(a, "Attention", "mask", mask->dtype);
    vkl_status st = attention_dims(a, mask, s);
    if (!st && !kv_dtype_ok(k, s->D))
        st = vkl_fail(a->ctx, VKL_ERR_UNSUPPORTED, "Attention: K of dtype %s (group %u) is not supported",
                      vkl_dtype_name(k->dtype), k->group);
    if (!st && !kv_dtype_ok(v, s->Dv))
        st = vkl_fail(a->ctx, VKL_ERR_UNSUPPORTED, "Attention: V of dtype %s (group %u) is not supported",
                      vkl_dtype_name(v->dtype), v->group);
    if (!st && s->layout != 1 && (kv_coded(k->dtype) || kv_coded(v->dtype)))
        st = vkl_fail(a->ctx, VKL_ERR_UNSUPPORTED, "Attention: int8 / fp8 K and V need kv_layout 1");
    if (!st) st = vkl_ref_nn_attr(a, "causal", &s->causal);
    if (!st) st = vkl_ref_nn_attr(a, "window", &s->window);
    if (!st) st = vkl_op_attr_float(a->g, a->node, "scale", &scale);
    if (st) return st;
    s->sc = scale != 0 ? scale : 1.0 / sqrt((double)s->D);
    s->rows = s->B * s->Hq * s->S;
    s->coded = kv_coded(k->dtype) || kv_coded(v->dtype);
    /* scores[T], qrow[D], acc[Dv] in double; one decoded K and V row in f32 */
    s->scratch_bytes = (size_t)(s->T + s->D + s->Dv + 1) * sizeof(double) + (size_t)(s->D + s->Dv + 1) * sizeof(float);
    s->scratch_bytes = (s->scratch_bytes + 63) / 64 * 64;
    return VKL_OK;
}

vkl_status vkl_ref_attention_row(const vkl_ref_args *a, const vkl_ref_attn *s, int64_t row, void *scratch) {
    const vkl_ref_tensor *q = &a->in[0], *k = &a->in[1], *v = &a->in[2];
    const vkl_ref_tensor *mask = a->n_in > 3 && a->in[3].data ? &a->in[3] : NULL;
    vkl_ref_tensor *out = &a->out[0];
    double *scores = scratch, *qrow = scores + s->T, *acc = qrow + s->D;
    float *kbuf = (float *)(acc + s->Dv + 1), *vbuf = kbuf + s->D;
    const float *krow, *vrow;
    vkl_status st;
    const vkl_ref_attn_pos at = vkl_ref_attn_row_pos(s, row);
    const int64_t b = at.b, h = at.h, i = at.i, g = at.g, lo = at.lo, hi = at.hi;
    double max = -INFINITY, sum = 0;
    bool any = false;
    load_row(q, row * s->D, s->D, qrow);
    for (int64_t j = lo; j < hi; j++) {
        int64_t idx[4] = {b, h, i, j};
        double m = mask ? vkl_ref_get_f(mask, vkl_ref_broadcast_offset(mask, idx, 4)) : 0;
        if (mask && mask->dtype == VKL_DTYPE_BOOL) m = m != 0 ? 0 : -INFINITY;
        scores[j] = m;
        if (m != -INFINITY) {
            const int64_t off = vkl_ref_attn_kv_offset(s, b, g, j, s->D);
            if ((st = row_values(a, k, off, s->D, kbuf, &krow)))
                return vkl_fail_prefix(a->ctx, st, "Attention: K (position %lld, batch %lld, head %lld)", (long long)j,
                                       (long long)b, (long long)g);
            scores[j] = s->sc * dot_row(k, off, krow, qrow, s->D) + m;
        }
        any = any || scores[j] != -INFINITY;
        if (scores[j] > max) max = scores[j];
    }
    for (int64_t d = 0; d < s->Dv; d++) acc[d] = 0;
    for (int64_t j = lo; any && j < hi; j++) {
        if (scores[j] == -INFINITY) continue;
        double w = exp(scores[j] - max);
        const int64_t off = vkl_ref_attn_kv_offset(s, b, g, j, s->Dv);
        if ((st = row_values(a, v, off, s->Dv, vbuf, &vrow)))
            return vkl_fail_prefix(a->ctx, st, "Attention: V (position %lld, batch %lld, head %lld)", (long long)j,
                                   (long long)b, (long long)g);
        sum += w;
        axpy_row(acc, w, v, off, vrow, s->Dv);
    }
    for (int64_t d = 0; d < s->Dv; d++) vkl_ref_set_f(out, row * s->Dv + d, any ? acc[d] / sum : 0);
    return VKL_OK;
}

/* Attention: for each (b, h, i), with g = h / (Hq / Hkv) and p = i + T - S,
 *   score_j = scale * Q[b,h,i,:] . K[b,g,j,:] + mask[b,h,i,j]   (float mask)
 * over the visible keys j: j <= p if causal, p - j < window if window > 0,
 * mask true for a bool mask, and score > -inf. Then
 *   out[b,h,i,:] = sum_j exp(score_j - max) V[b,g,j,:] / sum_j exp(score_j - max)
 * or zeros when no key is visible. One row at a time (attention.h). */
vkl_status vkl_ref_attention(const vkl_ref_args *a) {
    vkl_ref_attn s;
    vkl_status st = vkl_ref_attention_setup(a, &s);
    if (st) return st;
    void *scratch = vkl_ref_scratch_get(a, s.scratch_bytes);
    if (!scratch) return VKL_ERR_OUT_OF_MEMORY;
    for (int64_t row = 0; !st && row < s.rows; row++) st = vkl_ref_attention_row(a, &s, row, scratch);
    return st;
}

/* x[b, h, s, :] of a Q_INT8 state: every value finite (vkl_kv_quantize_keys
 * refuses NaN/inf), checked before anything is written. */
static vkl_status check_key_rows(const vkl_ref_args *a, const vkl_ref_tensor *x) {
    const int64_t H = x->dims[1], S = x->dims[2], D = x->dims[3];
    for (int64_t i = 0; i < x->count; i++) {
        const float f = (float)vkl_ref_get_f(x, i);
        if (!isfinite(f))
            return vkl_fail(a->ctx, VKL_ERR_INVALID_ARGUMENT,
                            "KvAppend: x[%lld, %lld, %lld, %lld] is %s; an int8 key row needs finite values",
                            (long long)(i / D / S / H), (long long)(i / D / S % H), (long long)(i / D % S),
                            (long long)(i % D), isnan(f) ? "NaN" : "infinite");
    }
    return VKL_OK;
}

/* KvAppend: state [T, B, H, D] updated in place (output 0 is the state's
 * memory): state[pos[b, s], b, h, :] = x[b, h, s, :], converted to the
 * state's dtype: f64 takes x's value, the others f = (float)x and then f32:
 * f, f16/bf16: RNE, fp8: vkl_fp8_*_from_f32 (RNE, saturating), int8 (group =
 * D): one vkl_kv_quantize_keys block per row. Positions (and, for int8, the
 * finiteness of x) are all checked before anything is written. */
vkl_status vkl_ref_kv_append(const vkl_ref_args *a) {
    const vkl_ref_tensor *state = &a->in[0], *x = &a->in[1], *pos = &a->in[2];
    vkl_ref_tensor *out = &a->out[0];
    if (!vkl_ref_nn_is_float(x->dtype)) return vkl_ref_nn_bad_dtype(a, "KvAppend", "x", x->dtype);
    if (pos->dtype != VKL_DTYPE_I64 && pos->dtype != VKL_DTYPE_I32)
        return vkl_ref_nn_bad_dtype(a, "KvAppend", "position_ids", pos->dtype);
    if (state->rank != 4 || x->rank != 4 || pos->rank != 2)
        return vkl_fail(a->ctx, VKL_ERR_SHAPE, "KvAppend: state [T, B, H, D], x [B, H, S, D], position_ids [B, S] expected");
    int64_t T = state->dims[0], B = x->dims[0], H = x->dims[1], S = x->dims[2], D = x->dims[3];
    if (!kv_dtype_ok(state, D))
        return vkl_fail(a->ctx, VKL_ERR_UNSUPPORTED, "KvAppend: a state of dtype %s (group %u) is not supported",
                        vkl_dtype_name(state->dtype), state->group);
    vkl_status st = vkl_ref_nn_dim_eq(a, "KvAppend", state->dims[1], B, "state's and x's batch");
    if (!st) st = vkl_ref_nn_dim_eq(a, "KvAppend", state->dims[2], H, "state's and x's heads");
    if (!st) st = vkl_ref_nn_dim_eq(a, "KvAppend", state->dims[3], D, "state's and x's head dims");
    if (!st) st = vkl_ref_nn_dim_eq(a, "KvAppend", pos->dims[0], B, "position_ids' and x's batch");
    if (!st) st = vkl_ref_nn_dim_eq(a, "KvAppend", pos->dims[1], S, "position_ids' and x's lengths");
    for (int64_t i = 0; !st && i < B * S; i++) {
        int64_t p = vkl_ref_get_i(pos, i);
        if (p < 0 || p >= T)
            st = vkl_fail(a->ctx, VKL_ERR_INVALID_ARGUMENT, "KvAppend: position %lld (batch %lld, step %lld) is outside [0, T = %lld)",
                          (long long)p, (long long)(i / S), (long long)(i % S), (long long)T);
    }
    if (!st && state->dtype == VKL_DTYPE_Q_INT8) st = check_key_rows(a, x);
    if (st) return st;
    /* Another backend's caller may hand distinct buffers: then start from a copy. */
    size_t bytes = 0;
    if (out->data != state->data && vkl_tensor_bytes(state->dtype, state->group, state->count, &bytes))
        memcpy(out->data, state->data, bytes);
    const size_t key_bytes = vkl_quant_block_bytes(VKL_DTYPE_Q_INT8, (uint32_t)D);
    float *row = state->dtype == VKL_DTYPE_Q_INT8 ? vkl_ref_scratch_get(a, (size_t)(D + 1) * sizeof(float)) : NULL;
    if (state->dtype == VKL_DTYPE_Q_INT8 && !row) return VKL_ERR_OUT_OF_MEMORY;
    uint8_t *codes = out->data;
    /* x in the state's own float dtype: each row is its bytes, copied whole
     * (element by element through double, a 512-token prompt's appends were
     * 2% of the cpu backend's prefill) */
    const size_t same = x->dtype == state->dtype ? vkl_dtype_size(x->dtype) : 0;
    for (int64_t b = 0; b < B; b++) {
        for (int64_t s = 0; s < S; s++) {
            int64_t p = vkl_ref_get_i(pos, b * S + s);
            for (int64_t h = 0; h < H; h++) {
                int64_t src = ((b * H + h) * S + s) * D, dst = ((p * B + b) * H + h) * D;
                if (same) {
                    memcpy(codes + (size_t)dst * same, (const uint8_t *)x->data + (size_t)src * same, (size_t)D * same);
                    continue;
                }
                switch (state->dtype) {
                case VKL_DTYPE_Q_INT8:
                    for (int64_t d = 0; d < D; d++) row[d] = (float)vkl_ref_get_f(x, src + d);
                    st = vkl_kv_quantize_keys(a->ctx, row, 1, 1, D, codes + (size_t)(dst / D) * key_bytes, key_bytes);
                    if (st) return vkl_fail_prefix(a->ctx, st, "KvAppend");
                    break;
                case VKL_DTYPE_FP8_E4M3:
                    for (int64_t d = 0; d < D; d++) codes[dst + d] = vkl_fp8_e4m3_from_f32((float)vkl_ref_get_f(x, src + d));
                    break;
                case VKL_DTYPE_FP8_E5M2:
                    for (int64_t d = 0; d < D; d++) codes[dst + d] = vkl_fp8_e5m2_from_f32((float)vkl_ref_get_f(x, src + d));
                    break;
                default:
                    for (int64_t d = 0; d < D; d++) vkl_ref_set_f(out, dst + d, vkl_ref_get_f(x, src + d));
                    break;
                }
            }
        }
    }
    return VKL_OK;
}
