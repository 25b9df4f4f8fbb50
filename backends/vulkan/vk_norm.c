/* Softmax, LogSoftmax, RMSNorm and LayerNormalization on Vulkan. Rows of
 * contiguous elements (every norm; softmax over the last axis) run in
 * norm.comp, one workgroup per row; softmax over another axis runs in
 * softmax_lines.comp, one invocation per line. Semantics, dtypes and
 * attributes are the ref kernels' (backends/ref/norm.c); shapes the shape
 * rule could not check are checked here and fail as ref fails
 * (VKL_ERR_SHAPE). */
#include "../../engine/ops.h"
#include "vk_internal.h"

enum { MODE_SOFTMAX = 0, MODE_LOG_SOFTMAX = 1, MODE_RMS = 2, MODE_LAYER = 3 };

enum {
    FLAG_BIAS = 1,
    FLAG_MEAN = 2,
    FLAG_INV = 4,
    FLAG_SCALE_ROW = 8,
    FLAG_BIAS_ROW = 16,
};

static const vkl_vk_variants norm_shader = {"norm", "norm_sg", "norm_f64"};
static const vkl_vk_variants lines_shader = {"softmax_lines", NULL, "softmax_lines_f64"};

static int64_t prod(const int64_t *dims, uint32_t from, uint32_t to) {
    int64_t n = 1;
    for (uint32_t d = from; d < to; d++) n *= dims[d];
    return n;
}

static vkl_status need_float(const vkl_vk_node *nd, const vkl_vk_tensor *t, const char *what) {
    if (vkl_vk_dtype_float(t->dtype)) return VKL_OK;
    return vkl_vk_node_unsupported(nd, "%s dtype %s is not supported", what, vkl_dtype_name(t->dtype));
}

/* Right-aligned numpy broadcast of t onto dims [0, rank): VKL_ERR_SHAPE as
 * the ref kernel's check, else t's element strides over that index space. */
static vkl_status broadcast(const vkl_vk_node *nd, const vkl_vk_tensor *t, uint32_t rank, const int64_t *dims,
                            const char *what, int64_t *strides) {
    bool ok = t->rank <= rank;
    for (uint32_t d = 0; ok && d < t->rank; d++) ok = t->dims[d] == 1 || t->dims[d] == dims[rank - t->rank + d];
    if (!ok) return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "%s of rank %u does not broadcast to the input", what, t->rank);
    return vkl_vk_broadcast_strides(nd, t, rank, dims, strides);
}

/* A parameter whose element k is the k-th of every row: n elements laid
 * out as the row (strides 0 outside the row, X's own inside). */
static bool is_row(const vkl_vk_tensor *x, uint32_t axis, int64_t n, const vkl_vk_tensor *t, const int64_t *strides) {
    int64_t own[VKL_MAX_RANK];
    vkl_vk_contiguous_strides(x->rank, x->dims, own);
    if (t->count != n) return false;
    for (uint32_t d = 0; d < x->rank; d++)
        if (x->dims[d] != 1 && strides[d] != (d < axis ? 0 : own[d])) return false;
    return true;
}

/* Where the _codes build of an RMSNorm writes (vkl_vk_record_rms_codes):
 * the codes' range, steps per row and elements per step, uvec4s per row. */
typedef struct codes_target {
    VkDescriptorBufferInfo at;
    uint32_t steps, chunk;
    uint64_t row_vec4s;
} codes_target;

/* norm.comp over rows = prod(X dims [0, axis)), n = the rest; with codes,
 * its _codes build (RMSNorm only) writes them instead of Y. */
static vkl_status record_rows(const vkl_vk_node *nd, uint32_t mode, uint32_t axis, float eps, const codes_target *codes,
                              vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_vk_tensor *X = &nd->in[0], *Y = &nd->out[0];
    const vkl_vk_tensor *S = mode >= MODE_RMS ? &nd->in[1] : NULL;
    const vkl_vk_tensor *B = mode == MODE_LAYER && nd->n_in > 2 && nd->in[2].id != VKL_NONE ? &nd->in[2] : NULL;
    const vkl_vk_tensor *mean = mode == MODE_LAYER && nd->n_out > 1 && nd->out[1].id != VKL_NONE ? &nd->out[1] : NULL;
    const vkl_vk_tensor *inv = mode == MODE_LAYER && nd->n_out > 2 && nd->out[2].id != VKL_NONE ? &nd->out[2] : NULL;
    const int64_t rows = prod(X->dims, 0, axis), n = prod(X->dims, axis, X->rank);
    int64_t strides[2][VKL_MAX_RANK] = {{0}};
    uint32_t flags = (B ? FLAG_BIAS : 0) | (mean ? FLAG_MEAN : 0) | (inv ? FLAG_INV : 0);
    vkl_status st = VKL_OK;
    if (S) {
        st = need_float(nd, S, "Scale");
        if (!st) st = broadcast(nd, S, X->rank, X->dims, "Scale", strides[0]);
        /* RMSNorm's Scale broadcasts over the normalized dims only */
        if (!st && mode == MODE_RMS && S->rank > X->rank - axis)
            st = vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "Scale of rank %u does not broadcast to the normalized dims",
                                  S->rank);
        if (!st && is_row(X, axis, n, S, strides[0])) flags |= FLAG_SCALE_ROW;
    }
    if (!st && B) st = need_float(nd, B, "B");
    if (!st && B) st = broadcast(nd, B, X->rank, X->dims, "B", strides[1]);
    if (!st && B && is_row(X, axis, n, B, strides[1])) flags |= FLAG_BIAS_ROW;
    if (st) return st;
    vkl_vk_view v = {0};
    const bool need_view = (S && !(flags & FLAG_SCALE_ROW)) || (B && !(flags & FLAG_BIAS_ROW));
    if (need_view && (st = vkl_vk_view_make(nd, X->rank, X->dims, 2, (const int64_t (*)[VKL_MAX_RANK])strides, &v))) return st;
    if (X->count >= (1ll << 32)) return vkl_vk_node_unsupported(nd, "%lld elements exceed 32-bit indexing",
                                                                  (long long)X->count);
    *count = 0;
    if (!rows) return VKL_OK; /* n = 0 still has statistics to write (NaN, as ref) */
    vkl_vk_dispatch *d = &out[0];
    static const vkl_vk_variants codes_shader[2] = {{"norm_codes", "norm_sg_codes", NULL},
                                                    {"norm_codes_bytes", "norm_sg_codes_bytes", NULL}};
    st = vkl_vk_pick(nd, vkl_vk_node_has_f64(nd), codes ? &codes_shader[codes->chunk == 16] : &norm_shader,
                     &d->shader);
    /* A decode step's norms are one row: one workgroup, whose passes over
     * the row are a chain of loads per invocation; up to 1024 invocations
     * keep that chain at two or so (an H100's RMSNorm of 2048 took twice
     * an Add's time with 256). Many rows fill the device with 256 each. */
    const uint32_t wg = rows < 16 ? vkl_vk_wg_size_max(nd, n, 1024) : vkl_vk_wg_size(nd, n);
    if (!st) st = vkl_vk_grid(nd, (uint64_t)rows * wg, wg, d->groups);
    if (st) return st;
    const vkl_vk_tensor *stat = mean ? mean : inv;
    const uint32_t spec[] = {wg, mode, X->dtype, Y->dtype, S ? S->dtype : VKL_DTYPE_F32,
                             B ? B->dtype : VKL_DTYPE_F32, stat ? stat->dtype : VKL_DTYPE_F32, flags};
    d->n_spec = sizeof(spec) / sizeof(spec[0]);
    for (uint32_t i = 0; i < d->n_spec; i++) d->spec[i] = spec[i];
    d->bind[0] = X->at;
    vkl_vk_bind_or(d, 1, S, X);
    vkl_vk_bind_or(d, 2, B, X);
    d->bind[3] = Y->at;
    vkl_vk_bind_or(d, 4, mean, Y);
    vkl_vk_bind_or(d, 5, inv, Y);
    d->n_bind = 6;
    d->push[0] = (uint32_t)rows;
    d->push[1] = (uint32_t)n;
    d->push[2] = vkl_vk_f32_bits(eps);
    d->n_push = 3 + vkl_vk_view_push(&v, d->push + 3);
    if (codes) { /* after norm.comp's fixed-size view fields: 3 + 1 + 6 + 2 * 6 words */
        d->spec[d->n_spec++] = nd->dev->qmv_dot_residual;
        d->bind[3] = codes->at;
        d->push[22] = codes->steps;
        d->push[23] = 0; /* the codes' range is bound whole */
        d->push[24] = (uint32_t)codes->row_vec4s;
        d->n_push = 25;
    }
    *count = 1;
    return VKL_OK;
}

static vkl_status softmax(const vkl_vk_node *nd, bool log_out, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_vk_tensor *X = &nd->in[0], *Y = &nd->out[0];
    uint32_t axis = 0; /* set by the axis check; -O3 cannot see it */
    *count = 0;
    vkl_status st = need_float(nd, X, "input");
    if (!st) st = vkl_vk_axis_attr(nd, X->rank, &axis);
    if (st) return st;
    const int64_t inner = prod(X->dims, axis + 1, X->rank);
    if (inner == 1) return record_rows(nd, log_out ? MODE_LOG_SOFTMAX : MODE_SOFTMAX, axis, 0.0f, NULL, out, count);
    const int64_t n = X->dims[axis], lines = X->count / (n ? n : 1);
    if (X->count >= (1ll << 32))
        return vkl_vk_node_unsupported(nd, "%lld elements exceed 32-bit indexing", (long long)X->count);
    if (!X->count) return VKL_OK;
    vkl_vk_dispatch *d = &out[0];
    const uint32_t wg = 64;
    st = vkl_vk_pick(nd, vkl_vk_node_has_f64(nd), &lines_shader, &d->shader);
    if (!st) st = vkl_vk_grid(nd, (uint64_t)lines, wg, d->groups);
    if (st) return st;
    d->spec[0] = wg;
    d->spec[1] = log_out;
    d->spec[2] = X->dtype;
    d->spec[3] = Y->dtype;
    d->n_spec = 4;
    d->bind[0] = X->at;
    d->bind[1] = Y->at;
    d->n_bind = 2;
    d->push[0] = (uint32_t)lines;
    d->push[1] = (uint32_t)n;
    d->push[2] = (uint32_t)inner;
    d->n_push = 3;
    *count = 1;
    return VKL_OK;
}

vkl_status vkl_vk_record_softmax(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    return softmax(nd, false, out, count);
}

vkl_status vkl_vk_record_log_softmax(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    return softmax(nd, true, out, count);
}

static vkl_status norm(const vkl_vk_node *nd, uint32_t mode, const codes_target *codes, vkl_vk_dispatch *out,
                       uint32_t *count) {
    const vkl_vk_tensor *X = &nd->in[0];
    uint32_t axis = 0; /* set by the axis check; -O3 cannot see it */
    float eps;
    *count = 0;
    vkl_status st = need_float(nd, X, "X");
    if (!st) st = vkl_vk_axis_attr(nd, X->rank, &axis);
    if (!st) st = vkl_op_attr_float(nd->g, nd->index, "epsilon", &eps);
    return st ? st : record_rows(nd, mode, axis, eps, codes, out, count);
}

bool vkl_vk_rms_codes_fit(const vkl_vk_node *nd, int64_t cols, uint32_t steps, uint32_t chunk) {
    const vkl_vk_tensor *X = &nd->in[0], *S = nd->n_in > 1 ? &nd->in[1] : NULL, *Y = &nd->out[0];
    uint32_t axis = 0;
    int64_t strides[VKL_MAX_RANK] = {0};
    if (!S || S->id == VKL_NONE || nd->n_out != 1 || X->dtype != VKL_DTYPE_F32 || Y->dtype != VKL_DTYPE_F32 ||
        S->dtype != VKL_DTYPE_F32 || X->pieced || S->pieced || X->rank < 1 || X->count >= (1ll << 32) ||
        vkl_vk_axis_attr(nd, X->rank, &axis) || axis != X->rank - 1 || X->dims[axis] != cols ||
        S->rank > 1 || vkl_vk_broadcast_strides(nd, S, X->rank, X->dims, strides) ||
        (uint64_t)steps * chunk < (uint64_t)cols)
        return false;
    /* the codes bound whole */
    const uint64_t bytes = (uint64_t)(X->count / cols) * vkl_vk_codes_row_vec4s(nd->dev, steps, chunk) * 16;
    return bytes <= nd->dev->bind_limit && is_row(X, axis, cols, S, strides);
}

vkl_status vkl_vk_record_rms_codes(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_vk_tensor *X = &nd->in[0];
    codes_target t = {.steps = nd->fusion->steps, .chunk = nd->fusion->chunk};
    int64_t rows = 1;
    for (uint32_t d = 0; d + 1 < X->rank; d++) rows *= X->dims[d];
    vkl_status st = vkl_vk_codes_made_here(nd, nd->out[0].id, rows, t.steps, t.chunk, &t.at, &t.row_vec4s);
    if (!st && t.at.range > nd->dev->bind_limit)
        st = vkl_vk_node_unsupported(nd, "the codes of its output (%llu bytes) are over the binding limit",
                                     (unsigned long long)t.at.range);
    return st ? st : norm(nd, MODE_RMS, &t, out, count);
}

vkl_status vkl_vk_record_rms_norm(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    return norm(nd, MODE_RMS, NULL, out, count);
}

vkl_status vkl_vk_record_layer_normalization(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    return norm(nd, MODE_LAYER, NULL, out, count);
}
