/* Import-time quantization: MatMul/Gemm with a constant f32 B become
 * QuantMatMul over W^T [N, K] in the recipe's format, the lm_head int8 per
 * output channel, embedding tables bf16 behind a Cast, the KV cache states
 * int8 keys / fp8 values (or f16). Runs last. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ops.h"
#include "../quant/quant.h"
#include "match.h"
#include "quantize.h"
#include "quantize_convert.h"

/* ---- the recipe ------------------------------------------------------------------------------ */

static const char *const kv_names[VKL_KV_FORMAT_COUNT_] = {"f32", "f16", "int8-fp8", "int8-e5m2"};

const char *vkl_kv_format_name(vkl_kv_format f) {
    return (unsigned)f < VKL_KV_FORMAT_COUNT_ ? kv_names[f] : "?";
}

void vkl_kv_format_dtypes(vkl_kv_format f, vkl_dtype *keys, vkl_dtype *values) {
    switch (f) {
    case VKL_KV_F16: *keys = *values = VKL_DTYPE_F16; return;
    case VKL_KV_INT8_FP8: *keys = VKL_DTYPE_Q_INT8, *values = VKL_DTYPE_FP8_E4M3; return;
    case VKL_KV_INT8_E5M2: *keys = VKL_DTYPE_Q_INT8, *values = VKL_DTYPE_FP8_E5M2; return;
    default: *keys = *values = VKL_DTYPE_F32; return;
    }
}

void vkl_quant_recipe_init(vkl_quant_recipe *r) {
    *r = (vkl_quant_recipe){VKL_DTYPE_F32, VKL_QUANT_GROUP_DEFAULT, false, false, VKL_KV_F32};
}

bool vkl_quant_recipe_active(const vkl_quant_recipe *r) {
    return r && (r->weights != VKL_DTYPE_F32 || r->lm_head_int8 || r->embed_bf16 || r->kv != VKL_KV_F32);
}

vkl_status vkl_quant_recipe_set(vkl_context *ctx, vkl_quant_recipe *r, const char *key, const char *value) {
    if (!strcmp(key, "weights")) {
        vkl_dtype t;
        if (vkl_dtype_from_name(value, &t) && (t == VKL_DTYPE_F32 || t == VKL_DTYPE_F16 || t == VKL_DTYPE_Q_E0M4 ||
                                               t == VKL_DTYPE_Q_INT4 || t == VKL_DTYPE_Q_INT8)) {
            r->weights = t;
            return VKL_OK;
        }
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "quant recipe: weights '%s'; e0m4, int4, int8, f16 or f32",
                        value);
    }
    if (!strcmp(key, "group")) {
        char *end;
        unsigned long v = strtoul(value, &end, 10);
        if (*value >= '0' && *value <= '9' && !*end && v >= 32 && v % 32 == 0 && v <= 65536) {
            r->group = (uint32_t)v;
            return VKL_OK;
        }
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "quant recipe: group '%s'; a multiple of 32 (32, 64, 128)",
                        value);
    }
    bool same = !strcmp(value, "same");
    if (!strcmp(key, "lm_head") || !strcmp(key, "lm-head")) {
        if (same || !strcmp(value, "int8")) {
            r->lm_head_int8 = !same;
            return VKL_OK;
        }
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "quant recipe: lm_head '%s'; int8 or same", value);
    }
    if (!strcmp(key, "embed")) {
        if (same || !strcmp(value, "bf16")) {
            r->embed_bf16 = !same;
            return VKL_OK;
        }
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "quant recipe: embed '%s'; bf16 or same", value);
    }
    if (!strcmp(key, "kv")) {
        for (int f = 0; f < VKL_KV_FORMAT_COUNT_; f++)
            if (!strcmp(value, kv_names[f])) {
                r->kv = (vkl_kv_format)f;
                return VKL_OK;
            }
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "quant recipe: kv '%s'; f32, f16, int8-fp8 or int8-e5m2",
                        value);
    }
    return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "quant recipe: unknown setting '%s'", key);
}

vkl_status vkl_quant_recipe_parse(vkl_context *ctx, const char *text, vkl_quant_recipe *r) {
    vkl_quant_recipe_init(r);
    for (const char *p = text; *p;) {
        while (*p == ' ' || *p == '\t' || *p == '\n') p++;
        if (!*p) break;
        size_t len = strcspn(p, " \t\n"), klen = strcspn(p, "=");
        char key[32], value[32];
        if (klen >= len || klen >= sizeof(key) || len - klen - 1 >= sizeof(value))
            return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "quant recipe: '%.*s' is not key=value", (int)len, p);
        memcpy(key, p, klen);
        key[klen] = 0;
        memcpy(value, p + klen + 1, len - klen - 1);
        value[len - klen - 1] = 0;
        vkl_status st = vkl_quant_recipe_set(ctx, r, key, value);
        if (st) return st;
        p += len;
    }
    return VKL_OK;
}

const char *vkl_quant_recipe_str(const vkl_quant_recipe *r, char *buf, size_t cap) {
    snprintf(buf, cap, "weights=%s group=%u lm_head=%s embed=%s kv=%s", vkl_dtype_name(r->weights), r->group,
             r->lm_head_int8 ? "int8" : "same", r->embed_bf16 ? "bf16" : "same", vkl_kv_format_name(r->kv));
    return buf;
}

/* ---- finding the weights --------------------------------------------------------------------- */

/* A 2-D f32 weight with constant dims and its data, or false. */
static bool weight_2d(const vkl_graph *g, uint32_t t, int64_t *rows, int64_t *cols) {
    if (t == VKL_NONE || t >= g->n_tensors) return false;
    const vkl_tensor *w = &g->tensors[t];
    if (w->kind != VKL_TENSOR_WEIGHT || w->dtype != VKL_DTYPE_F32 || w->shape.rank != 2 || !w->data) return false;
    return vkl_expr_is_const(g->syms, w->shape.dims[0], rows) && vkl_expr_is_const(g->syms, w->shape.dims[1], cols) &&
           *rows > 0 && *cols > 0 && *cols <= UINT32_MAX && w->nbytes == (size_t)*rows * (size_t)*cols * sizeof(float);
}

/* A constant B operand as the f32 weight it reads. */
typedef struct bsrc {
    uint32_t tensor; /* the 2-D f32 weight */
    bool nk;         /* stored as [N, K] already: Gemm's transB, or read through a Transpose */
    int64_t K, N;
} bsrc;

/* B (tensor b, transposed once more when `trans`) is a 2-D f32 weight, or a
 * 2-D Transpose of one (perm [1, 0] or absent), which a fold too large to
 * run leaves in front of big weights. */
static bool b_source(const vkl_graph *g, uint32_t b, bool trans, bsrc *out) {
    if (b == VKL_NONE || b >= g->n_tensors) return false;
    const vkl_tensor *bt = &g->tensors[b];
    if (bt->kind == VKL_TENSOR_ACTIVATION && bt->producer != VKL_NONE) {
        uint32_t p = bt->producer;
        const int64_t *perm = NULL;
        uint32_t count = 0;
        if (g->nodes[p].dead || g->nodes[p].op != VKL_OP_TRANSPOSE || g->nodes[p].n_inputs != 1 ||
            vkl_op_attr_ints(g, p, "perm", &perm, &count) || (count && (count != 2 || perm[0] != 1 || perm[1] != 0)))
            return false;
        b = g->nodes[p].inputs[0];
        trans = !trans;
    }
    int64_t rows, cols;
    if (!weight_2d(g, b, &rows, &cols)) return false;
    *out = (bsrc){b, trans, trans ? cols : rows, trans ? rows : cols};
    return true;
}

/* The lm_head: the MatMul/Gemm making the graph output "logits", or the
 * last one before it along the chain of producers (Reshape, Cast, Slice...
 * between them). VKL_NONE when there is no such output or MatMul. */
static uint32_t find_lm_head(const vkl_graph *g) {
    uint32_t t;
    if (vkl_graph_find_tensor(g, "logits", &t) || !g->tensors[t].is_output) return VKL_NONE;
    for (int depth = 0; depth < 16 && t != VKL_NONE; depth++) {
        uint32_t p = g->tensors[t].producer;
        if (p == VKL_NONE || g->nodes[p].dead) return VKL_NONE;
        if (g->nodes[p].op == VKL_OP_MAT_MUL || g->nodes[p].op == VKL_OP_GEMM) return p;
        t = VKL_NONE;
        for (uint32_t k = 0; k < g->nodes[p].n_inputs && t == VKL_NONE; k++) {
            uint32_t in = g->nodes[p].inputs[k];
            if (in != VKL_NONE && g->tensors[in].producer != VKL_NONE) t = in;
        }
    }
    return VKL_NONE;
}

/* ---- converting one matrix ------------------------------------------------------------------- */

typedef struct converted {
    uint32_t src;
    bool nk;
    vkl_dtype dtype;
    uint32_t group;
    uint32_t id; /* the new weight, or VKL_NONE: the format could not hold the values */
} converted;

typedef struct qpass {
    vkl_graph *g;
    const vkl_quant_recipe *r;
    vkl_quantize_report *rep;
    converted *done;
    uint32_t n_done, cap_done;
    vkl_qconv conv;
} qpass;

/* The weight holding b as W^T [N, K] (b as stored when b->nk) in format
 * (dt, group): made on first use, shared after. *id = VKL_NONE when the
 * values do not fit the format (non-finite, beyond the f16 range, a 4-bit
 * group whose scale overflows fp16): the matrix then stays f32. */
static vkl_status converted_weight(qpass *q, const bsrc *b, vkl_dtype dt, uint32_t group, uint32_t *id) {
    vkl_graph *g = q->g;
    for (uint32_t i = 0; i < q->n_done; i++) {
        const converted *c = &q->done[i];
        if (c->src == b->tensor && c->nk == b->nk && c->dtype == dt && c->group == group) {
            *id = c->id;
            return VKL_OK;
        }
    }
    if (q->n_done == q->cap_done) {
        uint32_t cap = q->cap_done ? 2 * q->cap_done : 16;
        converted *p = vkl_realloc(g->ctx, q->done, cap * sizeof(converted));
        if (!p) return VKL_ERR_OUT_OF_MEMORY;
        q->done = p;
        q->cap_done = cap;
    }
    *id = VKL_NONE;
    size_t row_bytes, bytes;
    vkl_status st = vkl_dtype_is_quantized(dt) ? vkl_quant_canonical_bytes(g->ctx, dt, group, 1, b->K, &row_bytes)
                    : vkl_mul_size((size_t)b->K, vkl_dtype_size(dt), &row_bytes) ? VKL_OK
                                                                                 : VKL_ERR_OVERFLOW;
    if (!st && !vkl_mul_size(row_bytes, (size_t)b->N, &bytes)) st = VKL_ERR_OVERFLOW;
    if (st) return vkl_fail(g->ctx, st, "%lld x %lld %s elements are too large", (long long)b->N, (long long)b->K,
                            vkl_dtype_name(dt));
    /* Straight into the graph's arena: no second copy of the converted bytes
     * (a matrix the format cannot hold leaves its bytes there unused). */
    uint8_t *dst = vkl_arena_alloc(&g->arena, bytes ? bytes : 1);
    if (!dst) st = VKL_ERR_OUT_OF_MEMORY;
    if (!st) {
        const vkl_qconv_job job = {g->tensors[b->tensor].data, b->nk, b->K, b->N, dt, group, row_bytes, dst};
        st = vkl_qconv_run(&q->conv, &job);
        if (st == VKL_ERR_UNSUPPORTED || st == VKL_ERR_INVALID_ARGUMENT) st = VKL_OK; /* stays f32 */
        else if (!st) {
            uint32_t t;
            vkl_shape s = {2, {VKL_EXPR_INVALID, VKL_EXPR_INVALID}};
            st = vkl_expr_const(g->syms, b->N, &s.dims[0]);
            if (!st) st = vkl_expr_const(g->syms, b->K, &s.dims[1]);
            if (!st) st = vkl_match_new_tensor(g, g->tensors[b->tensor].name, vkl_dtype_name(dt), &t);
            if (!st) {
                vkl_tensor *w = &g->tensors[t];
                w->kind = VKL_TENSOR_WEIGHT;
                w->dtype = dt;
                w->shape = s;
                w->group = vkl_dtype_is_quantized(dt) ? group : 0;
                st = vkl_graph_set_data(g, t, dst, bytes, false);
            }
            if (!st) {
                *id = t;
                q->rep->tensors[dt]++;
                q->rep->bytes_before += (uint64_t)b->N * (uint64_t)b->K * sizeof(float);
                q->rep->bytes_after += bytes;
            }
        }
    }
    if (!st) q->done[q->n_done++] = (converted){b->tensor, b->nk, dt, group, *id};
    return st;
}

/* ---- rewriting nodes ------------------------------------------------------------------------- */

/* Gemm's C as QuantMatMul's bias: [N] of A's dtype. */
static bool bias_fits(const vkl_graph *g, uint32_t c, int64_t N, vkl_dtype dt) {
    const vkl_tensor *t = &g->tensors[c];
    int64_t n;
    return t->dtype == dt && t->shape.rank == 1 && vkl_expr_is_const(g->syms, t->shape.dims[0], &n) && n == N;
}

/* MatMul / Gemm node i with a constant B -> QuantMatMul. */
static vkl_status rewrite_matmul(qpass *q, uint32_t i, bool is_lm, uint32_t *fired) {
    vkl_graph *g = q->g;
    const vkl_node *n = &g->nodes[i];
    if (n->n_inputs < 2 || n->n_outputs != 1 || n->inputs[0] == VKL_NONE || n->outputs[0] == VKL_NONE) return VKL_OK;
    uint32_t a = n->inputs[0], out = n->outputs[0], bias = VKL_NONE;
    bsrc b;
    bool fits = true;
    if (n->op == VKL_OP_GEMM) {
        int64_t ta = 0, tb = 0;
        float alpha = 1, beta = 1;
        vkl_status st = vkl_op_attr_int(g, i, "transA", &ta);
        if (!st) st = vkl_op_attr_int(g, i, "transB", &tb);
        if (!st) st = vkl_op_attr_float(g, i, "alpha", &alpha);
        if (!st) st = vkl_op_attr_float(g, i, "beta", &beta);
        if (st || !b_source(g, n->inputs[1], tb != 0, &b)) return VKL_OK;
        bias = n->n_inputs > 2 ? n->inputs[2] : VKL_NONE;
        fits = ta == 0 && alpha == 1.0f &&
               (bias == VKL_NONE || (beta == 1.0f && bias_fits(g, bias, b.N, g->tensors[a].dtype)));
    } else if (!b_source(g, n->inputs[1], false, &b)) {
        return VKL_OK;
    }
    const vkl_tensor *at = &g->tensors[a];
    if (at->dtype != VKL_DTYPE_F32 || at->shape.rank < 1) fits = false;
    vkl_dtype dt = q->r->weights;
    uint32_t group = vkl_dtype_is_quantized(dt) ? q->r->group : 0;
    if (is_lm && q->r->lm_head_int8) { /* int8 per output channel: one block of K per row */
        dt = VKL_DTYPE_Q_INT8;
        group = (uint32_t)b.K;
    }
    if (dt == VKL_DTYPE_F32) return VKL_OK; /* nothing asked for this matrix */
    if (!fits) {
        q->rep->skipped++;
        return VKL_OK;
    }
    uint32_t w, to;
    vkl_status st = converted_weight(q, &b, dt, group, &w);
    if (st) return vkl_fail_prefix(g->ctx, st, "quantize: weight '%s'", g->tensors[b.tensor].name);
    if (w == VKL_NONE) {
        q->rep->skipped++;
        return VKL_OK;
    }
    const uint32_t ins[3] = {a, w, bias};
    st = vkl_match_add_node(g, VKL_OP_QUANT_MAT_MUL, g->tensors[out].name, "qmm", ins, bias == VKL_NONE ? 2 : 3,
                            NULL, 0, &to);
    vkl_pattern pat = {{i}, 1};
    bool done = false;
    if (!st) st = vkl_match_replace(g, &pat, out, to, &done);
    if (st) return st;
    if (done) {
        q->rep->matmuls++;
        q->rep->lm_head += is_lm;
        ++*fired;
    } else {
        q->rep->skipped++;
    }
    return VKL_OK;
}

/* Gather(table [V, D] f32 weight, integer indices, axis 0) -> Cast(to f32)
 * of a Gather from the table in `dt`: the rows move as bf16/f16 bytes. */
static vkl_status rewrite_embedding(qpass *q, uint32_t i, vkl_dtype dt, uint32_t *fired) {
    vkl_graph *g = q->g;
    const vkl_node *n = &g->nodes[i];
    int64_t axis, V, D;
    if (n->n_inputs != 2 || n->n_outputs != 1 || n->outputs[0] == VKL_NONE || n->inputs[1] == VKL_NONE ||
        !weight_2d(g, n->inputs[0], &V, &D) || !vkl_dtype_is_int(g->tensors[n->inputs[1]].dtype) ||
        vkl_op_attr_int(g, i, "axis", &axis) || (axis != 0 && axis != -2))
        return VKL_OK;
    const uint32_t out = n->outputs[0], idx = n->inputs[1], n_attrs = n->n_attrs;
    const vkl_attr *attrs = n->attrs; /* arena memory: stays put when g->nodes grows */
    bsrc b = {n->inputs[0], true, D, V};
    uint32_t w, rows, to;
    vkl_status st = converted_weight(q, &b, dt, 0, &w);
    if (st) return vkl_fail_prefix(g->ctx, st, "quantize: embedding '%s'", g->tensors[b.tensor].name);
    if (w == VKL_NONE) return VKL_OK;
    const uint32_t ins[2] = {w, idx};
    const vkl_attr to_f32 = {.name = "to", .kind = VKL_ATTR_INT, .i = VKL_DTYPE_F32};
    st = vkl_match_add_node(g, VKL_OP_GATHER, g->tensors[out].name, vkl_dtype_name(dt), ins, 2, attrs, n_attrs, &rows);
    if (st || rows == VKL_NONE) return st;
    st = vkl_match_add_node(g, VKL_OP_CAST, g->tensors[out].name, "f32", &rows, 1, &to_f32, 1, &to);
    vkl_pattern pat = {{i}, 1};
    bool done = false;
    if (!st) st = vkl_match_replace(g, &pat, out, to, &done);
    if (!st && done) {
        q->rep->embeddings++;
        ++*fired;
    }
    return st;
}

/* ---- the KV cache ----------------------------------------------------------------------------- */

/* Whether KvAppend node i's output is a cache of keys or of values: 1 when
 * every reader is an Attention taking it as K (input 1), 2 when every reader
 * takes it as V (input 2), else 0 (left alone). */
static uint32_t kv_side(const vkl_graph *g, uint32_t i) {
    const uint32_t out = g->nodes[i].outputs[0];
    uint32_t side = 0;
    for (uint32_t j = 0; j < g->n_nodes; j++) {
        const vkl_node *n = &g->nodes[j];
        if (n->dead) continue;
        for (uint32_t k = 0; k < n->n_inputs; k++) {
            if (n->inputs[k] != out) continue;
            if (n->op != VKL_OP_ATTENTION || (k != 1 && k != 2) || (side && side != k)) return 0;
            side = k;
        }
    }
    return g->tensors[out].is_output ? 0 : side;
}

/* KvAppend(state, x, position_ids) -> the state and the KvAppend's output
 * take the recipe's key or value dtype (Q_INT8: group = D, a constant). */
static vkl_status retype_kv(qpass *q, uint32_t i, uint32_t *fired) {
    vkl_graph *g = q->g;
    const vkl_node *n = &g->nodes[i];
    if (n->n_inputs != 3 || n->n_outputs != 1 || n->outputs[0] == VKL_NONE || n->inputs[0] == VKL_NONE) return VKL_OK;
    vkl_tensor *state = &g->tensors[n->inputs[0]], *out = &g->tensors[n->outputs[0]];
    int64_t D;
    if (state->kind != VKL_TENSOR_STATE || state->shape.rank != 4 || !vkl_dtype_is_float(state->dtype) ||
        state->dtype == VKL_DTYPE_FP8_E4M3 || state->dtype == VKL_DTYPE_FP8_E5M2 ||
        !vkl_expr_is_const(g->syms, state->shape.dims[3], &D) || D <= 0 || D > UINT32_MAX)
        return VKL_OK;
    uint32_t side = kv_side(g, i);
    if (!side) return VKL_OK;
    vkl_dtype keys, values;
    vkl_kv_format_dtypes(q->r->kv, &keys, &values);
    const vkl_dtype dt = side == 1 ? keys : values;
    const uint32_t group = dt == VKL_DTYPE_Q_INT8 ? (uint32_t)D : 0;
    state->dtype = out->dtype = dt;
    state->group = out->group = group;
    q->rep->kv_states++;
    ++*fired;
    return VKL_OK;
}

/* Upper bound of the source bytes the pass converts, for progress: every
 * 2-D f32 weight it could read. */
static uint64_t candidate_bytes(const vkl_graph *g) {
    uint64_t total = 0;
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        int64_t rows, cols;
        if (weight_2d(g, t, &rows, &cols)) total += g->tensors[t].nbytes;
    }
    return total;
}

void vkl_quantize_options_init(vkl_quantize_options *o) { memset(o, 0, sizeof(*o)); }

vkl_status vkl_pass_quantize(vkl_graph *g, const vkl_quant_recipe *r, vkl_quantize_report *report, uint32_t *fired) {
    return vkl_pass_quantize_opts(g, r, NULL, report, fired);
}

vkl_status vkl_pass_quantize_opts(vkl_graph *g, const vkl_quant_recipe *r, const vkl_quantize_options *options,
                                  vkl_quantize_report *report, uint32_t *fired) {
    vkl_quantize_report scratch_report;
    vkl_quantize_report *rep = report ? report : &scratch_report;
    memset(rep, 0, sizeof(*rep));
    *fired = 0;
    if (!vkl_quant_recipe_active(r)) return VKL_OK;
    if (vkl_dtype_is_quantized(r->weights) && (r->group < 32 || r->group % 32))
        return vkl_fail(g->ctx, VKL_ERR_INVALID_ARGUMENT, "quantize: group %u is not a multiple of 32", r->group);
    vkl_quantize_options defaults;
    vkl_quantize_options_init(&defaults);
    const vkl_quantize_options *o = options ? options : &defaults;
    qpass q = {g, r, rep, NULL, 0, 0, {g->ctx, NULL, o, 0, candidate_bytes(g)}};
    vkl_status st = vkl_pool_create(g->ctx, o->threads, &q.conv.pool);
    if (st) return st;
    const uint32_t lm = find_lm_head(g), n_nodes = g->n_nodes; /* nodes added here are not revisited */
    /* embed=same: tables follow f16 weights; a Gather cannot read blocks, so 4-bit/int8 leave them f32 */
    const vkl_dtype embed = r->embed_bf16                    ? VKL_DTYPE_BF16
                            : r->weights == VKL_DTYPE_F16 ? VKL_DTYPE_F16
                                                          : VKL_DTYPE_F32;
    for (uint32_t i = 0; i < n_nodes && !st; i++) {
        if (g->nodes[i].dead) continue;
        uint32_t op = g->nodes[i].op;
        if (op == VKL_OP_MAT_MUL || op == VKL_OP_GEMM) st = rewrite_matmul(&q, i, i == lm, fired);
        else if (op == VKL_OP_GATHER && embed != VKL_DTYPE_F32) st = rewrite_embedding(&q, i, embed, fired);
        else if (op == VKL_OP_KV_APPEND && r->kv != VKL_KV_F32) st = retype_kv(&q, i, fired);
    }
    if (!st && o->progress && o->progress(o->user, q.conv.total, q.conv.total))
        st = vkl_fail(g->ctx, VKL_ERR_STATE, "quantize: stopped by the caller");
    vkl_pool_destroy(q.conv.pool);
    vkl_free(g->ctx, q.done);
    return st;
}
