/* The one-input elementwise ops on Vulkan: math and activations, Neg, Abs,
 * Relu, Not, Clip (shaders/vulkan/ew_unary.comp, one dispatch), Identity
 * and Dropout (ew_copy.comp, plus ew_fill.comp for Dropout's mask). */
#include <string.h>

#include "../../engine/ops.h"
#include "../../engine/ops/shape_util.h"
#include "vk_internal.h"

/* op codes of ew_unary.comp */
typedef enum ew_un_op {
    UN_SQRT, UN_RECIPROCAL, UN_NEG, UN_ABS, UN_EXP, UN_LOG, UN_COS, UN_SIN, UN_ERF, UN_TANH, UN_SIGMOID, UN_RELU,
    UN_GELU, UN_GELU_TANH, UN_NOT, UN_CLIP
} ew_un_op;

/* The op code, and which domains (bit 0 f32, 1 int64, 2 f64) the ref
 * kernel computes it in. */
static vkl_status un_op_of(const vkl_vk_node *nd, ew_un_op *op, unsigned *domains) {
    const unsigned flt = 1u | 4u, any = 7u;
    switch (nd->g->nodes[nd->index].op) {
    case VKL_OP_SQRT: *op = UN_SQRT, *domains = flt; return VKL_OK;
    case VKL_OP_RECIPROCAL: *op = UN_RECIPROCAL, *domains = flt; return VKL_OK;
    case VKL_OP_NEG: *op = UN_NEG, *domains = any; return VKL_OK;
    case VKL_OP_ABS: *op = UN_ABS, *domains = any; return VKL_OK;
    case VKL_OP_EXP: *op = UN_EXP, *domains = flt; return VKL_OK;
    case VKL_OP_LOG: *op = UN_LOG, *domains = flt; return VKL_OK;
    case VKL_OP_COS: *op = UN_COS, *domains = flt; return VKL_OK;
    case VKL_OP_SIN: *op = UN_SIN, *domains = flt; return VKL_OK;
    case VKL_OP_ERF: *op = UN_ERF, *domains = flt; return VKL_OK;
    case VKL_OP_TANH: *op = UN_TANH, *domains = flt; return VKL_OK;
    case VKL_OP_SIGMOID: *op = UN_SIGMOID, *domains = flt; return VKL_OK;
    case VKL_OP_RELU: *op = UN_RELU, *domains = any; return VKL_OK;
    case VKL_OP_NOT: *op = UN_NOT, *domains = 2u; return VKL_OK;
    case VKL_OP_CLIP: *op = UN_CLIP, *domains = any; return VKL_OK;
    case VKL_OP_GELU: {
        const char *approx;
        vkl_status st = vkl_op_attr_string(nd->g, nd->index, "approximate", &approx);
        if (st) return st;
        if (strcmp(approx, "none") && strcmp(approx, "tanh"))
            return vkl_vk_node_fail(nd, VKL_ERR_FORMAT, "approximate is '%s'; ONNX allows 'none' or 'tanh'", approx);
        *op = strcmp(approx, "tanh") ? UN_GELU : UN_GELU_TANH;
        *domains = flt;
        return VKL_OK;
    }
    default: return vkl_vk_node_unsupported(nd, "not a unary elementwise node");
    }
}

/* Clip's bound k: absent, or one element of x's dtype (VKL_ERR_SHAPE for
 * more, as the ref kernel). */
static vkl_status clip_bound(const vkl_vk_node *nd, uint32_t k, const char *what, bool *present) {
    *present = k < nd->n_in && nd->in[k].id != VKL_NONE;
    if (!*present) return VKL_OK;
    const vkl_vk_tensor *t = &nd->in[k];
    if (t->count != 1)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "input %u (%s) must hold one element; it holds %lld", k, what,
                                (long long)t->count);
    if (t->dtype != nd->in[0].dtype)
        return vkl_vk_node_unsupported(nd, "%s is %s, the input %s", what, vkl_dtype_name(t->dtype),
                                       vkl_dtype_name(nd->in[0].dtype));
    return VKL_OK;
}

vkl_status vkl_vk_record_unary(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_vk_tensor *x = &nd->in[0], *y = &nd->out[0];
    ew_un_op op = UN_SQRT;
    unsigned domains = 0;
    bool has_lo = false, has_hi = false;
    *count = 0;
    vkl_status st = un_op_of(nd, &op, &domains);
    if (st) return st;
    const int domain = vkl_vk_ew_domain(x->dtype);
    if (domain < 0 || !(domains & (1u << domain)))
        return vkl_vk_node_unsupported(nd, "no kernel for dtype %s", vkl_dtype_name(x->dtype));
    if (y->dtype != x->dtype || y->count != x->count)
        return vkl_vk_node_unsupported(nd, "output %s of %lld elements, input %s of %lld", vkl_dtype_name(y->dtype),
                                       (long long)y->count, vkl_dtype_name(x->dtype), (long long)x->count);
    if (op == UN_CLIP) {
        if ((st = clip_bound(nd, 1, "min", &has_lo)) || (st = clip_bound(nd, 2, "max", &has_hi))) return st;
    }
    if (domain == 2 && (st = vkl_vk_ew_need_f64(nd))) return st;
    if (!y->count) return VKL_OK;
    const uint32_t wg = vkl_vk_ew_wg(nd->dev);
    vkl_vk_dispatch *d = &out[0];
    memset(d, 0, sizeof(*d));
    d->shader = domain == 2 ? "ew_unary_f64" : "ew_unary";
    d->spec[0] = wg;
    d->spec[1] = op;
    d->spec[2] = (uint32_t)x->dtype;
    d->spec[3] = (uint32_t)domain;
    d->spec[4] = has_lo;
    d->spec[5] = has_hi;
    d->n_spec = 6;
    d->bind[0] = x->at;
    d->bind[1] = has_lo ? nd->in[1].at : x->at; /* absent bounds: any buffer, never read */
    d->bind[2] = has_hi ? nd->in[2].at : x->at;
    d->bind[3] = y->at;
    d->n_bind = 4;
    d->push[0] = (uint32_t)y->count;
    d->n_push = 1;
    if (y->count >= (1ll << 32) - 8)
        return vkl_vk_node_unsupported(nd, "%lld elements exceed 32-bit indexing", (long long)y->count);
    if ((st = vkl_vk_ew_grid(nd, vkl_vk_ew_units(y->dtype, y->count), wg, d->groups))) return st;
    *count = 1;
    return VKL_OK;
}

/* out = x's bytes (any plain dtype, fp8 included); nothing when out is not requested. */
static vkl_status copy_input(const vkl_vk_node *nd, vkl_vk_dispatch *d, uint32_t *n) {
    const vkl_vk_tensor *x = &nd->in[0], *y = &nd->out[0];
    if (y->id == VKL_NONE) return VKL_OK;
    if (!vkl_dtype_size(x->dtype) || vkl_dtype_is_quantized(x->dtype) || y->dtype != x->dtype || y->bytes != x->bytes)
        return vkl_vk_node_unsupported(nd, "input %s, output %s: want one plain dtype and size",
                                       vkl_dtype_name(x->dtype), vkl_dtype_name(y->dtype));
    if (!y->bytes) return VKL_OK;
    vkl_status st = vkl_vk_ew_copy(nd, x->at, y->at, y->bytes, d);
    if (!st) (*n)++;
    return st;
}

vkl_status vkl_vk_record_identity(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    *count = 0;
    return copy_input(nd, out, count);
}

/* Dropout's optional input k: one element of a plain dtype (ref's checks). */
static vkl_status dropout_scalar(const vkl_vk_node *nd, uint32_t k, const char *what, const vkl_tensor **t) {
    *t = NULL;
    if (k >= nd->n_in || nd->in[k].id == VKL_NONE) return VKL_OK;
    if (vkl_vk_ew_domain(nd->in[k].dtype) < 0)
        return vkl_vk_node_unsupported(nd, "%s is %s", what, vkl_dtype_name(nd->in[k].dtype));
    if (nd->in[k].count != 1)
        return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "input %u (%s) must hold one element; it holds %lld", k, what,
                                (long long)nd->in[k].count);
    *t = &nd->g->tensors[nd->in[k].id];
    return VKL_OK;
}

/* Dropout, inference: output = data, mask all true. A training_mode known
 * at prepare that is true with a ratio that is not known to be 0 is
 * refused, as ref refuses it; one known only at run time cannot be checked
 * by a kernel: it runs as inference (ref fails the run when it is true and
 * the ratio is not 0). */
vkl_status vkl_vk_record_dropout(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_tensor *ratio, *training;
    *count = 0;
    vkl_status st = dropout_scalar(nd, 1, "ratio", &ratio);
    if (!st) st = dropout_scalar(nd, 2, "training_mode", &training);
    if (st) return st;
    double train = 0, r = 0.5;
    if (training && vkl_tensor_const_scalar(training, 0, &train) && train != 0 &&
        (!ratio || !vkl_tensor_const_scalar(ratio, 0, &r) || r != 0))
        return vkl_vk_node_unsupported(nd, "training_mode is true with a ratio that is not 0; only inference (or "
                                       "ratio 0) is supported");
    if ((st = copy_input(nd, out, count))) return st;
    if (nd->n_out > 1 && nd->out[1].id != VKL_NONE && nd->out[1].bytes) {
        if (nd->out[1].dtype != VKL_DTYPE_BOOL)
            return vkl_vk_node_unsupported(nd, "mask is %s, want bool", vkl_dtype_name(nd->out[1].dtype));
        const uint32_t ones = 0x01010101u; /* four bool true */
        if ((st = vkl_vk_ew_fill(nd, nd->out[1].at, nd->out[1].bytes, &ones, 1, &out[*count]))) return st;
        (*count)++;
    }
    return VKL_OK;
}
