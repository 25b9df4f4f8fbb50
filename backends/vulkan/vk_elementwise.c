/* The broadcasting elementwise ops on Vulkan: Add Sub Mul Div Pow, the
 * comparisons, And Or, variadic Max Min, SiluMul (shaders/vulkan/
 * ew_binary.comp) and Where (ew_where.comp), one dispatch per node (Max/Min
 * of more than three inputs: one more per two inputs). Every operand is a
 * strided view of the output's index space (vk_view.c). Also the helpers
 * every elementwise and generator recorder shares: workgroup size, grid,
 * compute domain, copy and fill dispatches. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../../engine/ops.h"
#include "vk_internal.h"

/* ---- shared helpers ------------------------------------------------------------------------------- */

uint32_t vkl_vk_ew_wg(const vkl_backend_device *dev) {
    /* 256 where the device allows it (every device allows 128): few
     * invocations per element, so wide groups keep the group count down */
    uint32_t wg = 256;
    const VkPhysicalDeviceLimits *lim = &dev->props.limits;
    while (wg > 32 && (wg > lim->maxComputeWorkGroupInvocations || wg > lim->maxComputeWorkGroupSize[0])) wg /= 2;
    return wg;
}

vkl_status vkl_vk_ew_grid(const vkl_vk_node *nd, uint64_t units, uint32_t wg, uint32_t groups[3]) {
    const VkPhysicalDeviceLimits *lim = &nd->dev->props.limits;
    const uint64_t n = (units + wg - 1) / wg, max_x = lim->maxComputeWorkGroupCount[0];
    const uint64_t x = n < max_x ? n : max_x, y = x ? (n + x - 1) / x : 0;
    /* the shaders' unit index is (y * groups_x + x) * wg + local, in 32 bits */
    if (y > lim->maxComputeWorkGroupCount[1] || y * x * wg >= (1ull << 32))
        return vkl_vk_node_unsupported(nd, "%llu invocations exceed the device's dispatch size or 32-bit indexing",
                                       (unsigned long long)units);
    groups[0] = (uint32_t)(x ? x : 1);
    groups[1] = (uint32_t)(y ? y : 1);
    groups[2] = 1;
    return VKL_OK;
}

uint64_t vkl_vk_ew_units(vkl_dtype t, int64_t n) {
    const size_t es = vkl_dtype_size(t);
    const uint64_t per = es >= 4 ? 1 : 4 / es;
    return ((uint64_t)n + per - 1) / per;
}

int vkl_vk_ew_domain(vkl_dtype t) {
    switch (t) {
    case VKL_DTYPE_F32: case VKL_DTYPE_F16: case VKL_DTYPE_BF16: return 0;
    case VKL_DTYPE_F64: return 2;
    case VKL_DTYPE_I64: case VKL_DTYPE_I32: case VKL_DTYPE_I16: case VKL_DTYPE_I8: case VKL_DTYPE_U64:
    case VKL_DTYPE_U32: case VKL_DTYPE_U16: case VKL_DTYPE_U8: case VKL_DTYPE_BOOL: return 1;
    default: return -1;
    }
}

vkl_status vkl_vk_ew_need_f64(const vkl_vk_node *nd) {
    if (nd->dev->has_f64) return VKL_OK;
    return vkl_vk_node_unsupported(nd, "f64 arithmetic needs shaderFloat64, which %s lacks (or VKL_VK_NO_F64=1 masks)",
                                   nd->dev->caps.device_name);
}

vkl_status vkl_vk_node_fail(const vkl_vk_node *node, vkl_status status, const char *fmt, ...) {
    char what[160], why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    return vkl_fail(node->dev->ctx, status, "vulkan: %s: %s",
                    vkl_node_str(node->g, node->index, what, sizeof(what)), why);
}

vkl_status vkl_vk_ew_copy(const vkl_vk_node *nd, VkDescriptorBufferInfo src, VkDescriptorBufferInfo dst, size_t bytes,
                          vkl_vk_dispatch *d) {
    const uint32_t wg = vkl_vk_ew_wg(nd->dev);
    const uint64_t words = ((uint64_t)bytes + 3) / 4;
    memset(d, 0, sizeof(*d));
    d->shader = "ew_copy";
    d->spec[0] = wg;
    d->n_spec = 1;
    d->bind[0] = src;
    d->bind[1] = dst;
    d->n_bind = 2;
    d->push[0] = (uint32_t)words;
    d->n_push = 1;
    return vkl_vk_ew_grid(nd, words, wg, d->groups);
}

vkl_status vkl_vk_ew_fill(const vkl_vk_node *nd, VkDescriptorBufferInfo dst, size_t bytes, const uint32_t *pattern,
                          uint32_t period, vkl_vk_dispatch *d) {
    const uint32_t wg = vkl_vk_ew_wg(nd->dev);
    const uint64_t words = ((uint64_t)bytes + 3) / 4;
    memset(d, 0, sizeof(*d));
    if (!period || period > VKL_VK_EW_FILL_MAX)
        return vkl_vk_node_unsupported(nd, "a fill pattern of %u words (at most %u)", period, VKL_VK_EW_FILL_MAX);
    d->shader = "ew_fill";
    d->spec[0] = wg;
    d->n_spec = 1;
    d->bind[0] = dst;
    d->n_bind = 1;
    d->push[0] = (uint32_t)words;
    d->push[1] = period;
    memcpy(&d->push[2], pattern, period * sizeof(uint32_t));
    d->n_push = 2 + VKL_VK_EW_FILL_MAX; /* the whole block: the shader may index any of it */
    return vkl_vk_ew_grid(nd, words, wg, d->groups);
}

/* ---- views ---------------------------------------------------------------------------------------- */

/* Strides of input t over the output's dims; VKL_ERR_SHAPE when it does not
 * broadcast (the ref kernel's run-time check: symbolic shape rules may have
 * produced max(a, b)). */
static vkl_status broadcast(const vkl_vk_node *nd, uint32_t k, const vkl_vk_tensor *t, const vkl_vk_tensor *y,
                            int64_t *strides) {
    bool ok = t->rank <= y->rank;
    for (uint32_t d = 0; ok && d < t->rank; d++) {
        const int64_t n = t->dims[d], want = y->dims[y->rank - t->rank + d];
        ok = n == want || n == 1;
    }
    if (!ok) return vkl_vk_node_fail(nd, VKL_ERR_SHAPE, "input %u (rank %u) does not broadcast to the output (rank %u)", k,
                                            t->rank, y->rank);
    return vkl_vk_broadcast_strides(nd, t, y->rank, y->dims, strides);
}

/* The view of n sources (inputs in[k]; y itself where src[k] is NULL: the
 * output read back) over y, its push constants (always the whole 25-word
 * block, as the shaders declare it) and its real rank. */
static vkl_status make_view(const vkl_vk_node *nd, const vkl_vk_tensor *const *src, uint32_t n,
                            const vkl_vk_tensor *y, vkl_vk_dispatch *d, uint32_t *rank) {
    int64_t st[VKL_VK_VIEW_SRC][VKL_MAX_RANK];
    vkl_vk_view v;
    vkl_status st_ = VKL_OK;
    for (uint32_t k = 0; !st_ && k < n; k++) {
        if (src[k]) st_ = broadcast(nd, k, src[k], y, st[k]);
        else vkl_vk_contiguous_strides(y->rank, y->dims, st[k]);
    }
    if (!st_) st_ = vkl_vk_view_make(nd, y->rank, y->dims, n, (const int64_t(*)[VKL_MAX_RANK])st, &v);
    if (st_) return st_;
    if ((uint64_t)v.count + 8 >= (1ull << 32))
        return vkl_vk_node_unsupported(nd, "%lld elements exceed 32-bit indexing", (long long)v.count);
    memset(d->push, 0, sizeof(d->push));
    vkl_vk_view_push(&v, d->push);
    d->n_push = 1 + VKL_VK_VIEW_RANK * (1 + VKL_VK_VIEW_SRC);
    *rank = 0;
    for (uint32_t k = 0; k < VKL_VK_VIEW_RANK; k++) *rank += v.dims[k] > 1;
    return VKL_OK;
}

/* ---- binary ops -------------------------------------------------------------------------------------- */

/* op codes of ew_binary.comp */
typedef enum ew_bin_op {
    BIN_ADD, BIN_SUB, BIN_MUL, BIN_DIV, BIN_POW, BIN_EQ, BIN_GT, BIN_GE, BIN_LT, BIN_LE, BIN_AND, BIN_OR, BIN_MAX,
    BIN_MIN, BIN_SILU_MUL
} ew_bin_op;

static bool bin_op_of(uint32_t op, ew_bin_op *out) {
    switch (op) {
    case VKL_OP_ADD: *out = BIN_ADD; return true;
    case VKL_OP_SUB: *out = BIN_SUB; return true;
    case VKL_OP_MUL: *out = BIN_MUL; return true;
    case VKL_OP_DIV: *out = BIN_DIV; return true;
    case VKL_OP_POW: *out = BIN_POW; return true;
    case VKL_OP_EQUAL: *out = BIN_EQ; return true;
    case VKL_OP_GREATER: *out = BIN_GT; return true;
    case VKL_OP_GREATER_OR_EQUAL: *out = BIN_GE; return true;
    case VKL_OP_LESS: *out = BIN_LT; return true;
    case VKL_OP_LESS_OR_EQUAL: *out = BIN_LE; return true;
    case VKL_OP_AND: *out = BIN_AND; return true;
    case VKL_OP_OR: *out = BIN_OR; return true;
    case VKL_OP_MAX: *out = BIN_MAX; return true;
    case VKL_OP_MIN: *out = BIN_MIN; return true;
    case VKL_OP_SILU_MUL: *out = BIN_SILU_MUL; return true;
    default: return false;
    }
}

/* What the ref kernel accepts: plain dtypes, equal except Pow's exponent;
 * And/Or on integers and bool, SiluMul on floats; comparisons give bool. */
static vkl_status check_binary(const vkl_vk_node *nd, ew_bin_op op, int *domain) {
    const vkl_vk_tensor *y = &nd->out[0];
    const vkl_dtype ta = nd->in[0].dtype;
    for (uint32_t k = 0; k < nd->n_in; k++) {
        const vkl_vk_tensor *t = &nd->in[k];
        if (t->id == VKL_NONE) return vkl_vk_node_unsupported(nd, "input %u is absent", k);
        if (vkl_vk_ew_domain(t->dtype) < 0)
            return vkl_vk_node_unsupported(nd, "input %u is %s; elementwise arithmetic takes plain dtypes", k,
                                           vkl_dtype_name(t->dtype));
        if (t->dtype != ta && !(op == BIN_POW && k == 1))
            return vkl_vk_node_fail(nd, VKL_ERR_INVALID_ARGUMENT, "inputs are %s and %s; they must match",
                                    vkl_dtype_name(ta), vkl_dtype_name(t->dtype));
    }
    *domain = vkl_vk_ew_domain(ta);
    if (op == BIN_POW && *domain == 1 && vkl_vk_ew_domain(nd->in[1].dtype) != 1) *domain = 2; /* as ref: f64, truncated */
    const bool logic = op == BIN_AND || op == BIN_OR;
    const bool cmp = logic || (op >= BIN_EQ && op <= BIN_LE);
    if ((logic && *domain != 1) || (op == BIN_SILU_MUL && *domain == 1))
        return vkl_vk_node_unsupported(nd, "no %s kernel for dtype %s", logic ? "logical" : "SiluMul",
                                       vkl_dtype_name(ta));
    if (y->dtype != (cmp ? VKL_DTYPE_BOOL : ta))
        return vkl_vk_node_unsupported(nd, "output is %s, want %s", vkl_dtype_name(y->dtype),
                                       vkl_dtype_name(cmp ? VKL_DTYPE_BOOL : ta));
    return *domain == 2 ? vkl_vk_ew_need_f64(nd) : VKL_OK;
}

vkl_status vkl_vk_record_binary(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_vk_tensor *y = &nd->out[0];
    ew_bin_op op;
    int domain = 0;
    *count = 0;
    if (!bin_op_of(nd->g->nodes[nd->index].op, &op) || nd->n_in < 1 || (op != BIN_MAX && op != BIN_MIN && nd->n_in != 2))
        return vkl_vk_node_unsupported(nd, "not a binary elementwise node");
    vkl_status st = check_binary(nd, op, &domain);
    if (st) return st;
    /* Max/Min: 3 inputs in the first dispatch, then 2 more per dispatch,
     * folding into the output (read back as a) */
    const uint32_t n_in = nd->n_in, n_disp = n_in <= 3 ? 1 : 1 + (n_in - 3 + 1) / 2;
    if (n_disp > VKL_VK_MAX_DISPATCHES)
        return vkl_vk_node_unsupported(nd, "%u inputs; at most %u fold in %u dispatches", n_in,
                                       3 + 2 * (VKL_VK_MAX_DISPATCHES - 1), VKL_VK_MAX_DISPATCHES);
    if (!y->count) return VKL_OK;
    const uint32_t wg = vkl_vk_ew_wg(nd->dev);
    for (uint32_t i = 0, next = 0; i < n_disp; i++) {
        vkl_vk_dispatch *d = &out[i];
        const vkl_vk_tensor *src[VKL_VK_VIEW_SRC];
        uint32_t n = 0, rank;
        if (i > 0) src[n++] = NULL; /* the output so far */
        while (n < VKL_VK_VIEW_SRC && next < n_in) src[n++] = &nd->in[next++];
        if (n == 1) src[n++] = src[0]; /* one-input Max/Min: x op x = x */
        memset(d, 0, sizeof(*d));
        if ((st = make_view(nd, src, n, y, d, &rank))) return st;
        d->shader = domain == 2 ? "ew_binary_f64" : "ew_binary";
        d->spec[0] = wg;
        d->spec[1] = op;
        d->spec[2] = src[0] ? (uint32_t)src[0]->dtype : (uint32_t)y->dtype;
        d->spec[3] = (uint32_t)src[1]->dtype;
        d->spec[4] = (uint32_t)y->dtype;
        d->spec[5] = rank;
        d->spec[6] = n;
        d->spec[7] = (uint32_t)domain;
        d->n_spec = 8;
        for (uint32_t k = 0; k < 3; k++) {
            const vkl_vk_tensor *t = k < n ? src[k] : src[1]; /* binding 2 unused with 2 sources */
            d->bind[k] = t ? t->at : y->at;
        }
        d->bind[3] = y->at;
        d->n_bind = 4;
        if ((st = vkl_vk_ew_grid(nd, vkl_vk_ew_units(y->dtype, y->count), wg, d->groups))) return st;
    }
    *count = n_disp;
    return VKL_OK;
}

/* ---- Where ------------------------------------------------------------------------------------------ */

vkl_status vkl_vk_record_where(const vkl_vk_node *nd, vkl_vk_dispatch *out, uint32_t *count) {
    const vkl_vk_tensor *y = &nd->out[0];
    *count = 0;
    if (nd->n_in != 3) return vkl_vk_node_unsupported(nd, "Where takes 3 inputs, not %u", nd->n_in);
    if (nd->in[0].dtype != VKL_DTYPE_BOOL)
        return vkl_vk_node_unsupported(nd, "condition is %s, want bool", vkl_dtype_name(nd->in[0].dtype));
    if (!vkl_dtype_size(y->dtype) || vkl_dtype_is_quantized(y->dtype) || nd->in[1].dtype != y->dtype ||
        nd->in[2].dtype != y->dtype)
        return vkl_vk_node_unsupported(nd, "x %s, y %s, output %s: want one plain dtype",
                                       vkl_dtype_name(nd->in[1].dtype), vkl_dtype_name(nd->in[2].dtype),
                                       vkl_dtype_name(y->dtype));
    if (!y->count) return VKL_OK;
    const vkl_vk_tensor *src[3] = {&nd->in[0], &nd->in[1], &nd->in[2]};
    const uint32_t wg = vkl_vk_ew_wg(nd->dev);
    vkl_vk_dispatch *d = &out[0];
    uint32_t rank;
    memset(d, 0, sizeof(*d));
    vkl_status st = make_view(nd, src, 3, y, d, &rank);
    if (st) return st;
    d->shader = "ew_where";
    d->spec[0] = wg;
    d->spec[1] = (uint32_t)y->dtype;
    d->spec[2] = rank;
    d->n_spec = 3;
    for (uint32_t k = 0; k < 3; k++) d->bind[k] = nd->in[k].at;
    d->bind[3] = y->at;
    d->n_bind = 4;
    if ((st = vkl_vk_ew_grid(nd, vkl_vk_ew_units(y->dtype, y->count), wg, d->groups))) return st;
    *count = 1;
    return VKL_OK;
}
