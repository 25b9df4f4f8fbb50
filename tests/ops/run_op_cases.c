/* Runs the op cases in tests/ops/cases/ (format: tests/ops/README.md) on
 * one backend: one-node graph, shape inference, poisoned execution,
 * comparison with numpy-computed outputs, with a tolerance per backend and
 * dtype (default_tol). Usage: run_op_cases [--backend NAME] [--portable] FILE...
 * (default ref; --portable: every instruction set masked off, VKL_ISA_*,
 * for host backends' portable C kernels). A case whose op the backend has no
 * kernel for fails as UNSUPPORTED: every backend runs every case. Under a
 * kill switch that takes a device feature away (scripts/test:
 * VKL_VK_NO_F64=1), refusing what needs it is right: VKL_TEST_REFUSED_OK=TEXT
 * counts an UNSUPPORTED case whose message holds TEXT ("shaderFloat64") as
 * refused, not failed. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "check.h"
#include "context.h"
#include "ops.h"
#include "ops/shape_util.h"
#include "run_once.h"
#include "backend_env_open.h"
#ifdef VKL_HAVE_VULKAN
#include "../../backends/vulkan/vulkan_backend.h"
#endif

#define MAX_IO 16

static double json_number(const cJSON *v) {
    if (cJSON_IsString(v)) {
        if (!strcmp(v->valuestring, "nan")) return NAN;
        if (!strcmp(v->valuestring, "inf")) return INFINITY;
        if (!strcmp(v->valuestring, "-inf")) return -INFINITY;
        return strtod(v->valuestring, NULL);
    }
    return v->valuedouble;
}

/* Raw bytes {"bytes": [u8...], "group": G} of a tensor whose elements have
 * no JSON number form (the block-quantized weights: canonical blocks, see
 * docs/quant.md); the count must be what dtype, group and shape need. */
static int parse_bytes(const cJSON *j, vkl_host_tensor *t, int64_t n, char *err, size_t cap) {
    const cJSON *bytes = cJSON_GetObjectItem(j, "bytes"), *grp = cJSON_GetObjectItem(j, "group"), *v;
    uint32_t group = cJSON_IsNumber(grp) ? (uint32_t)grp->valuedouble : 0;
    size_t want;
    if (!vkl_tensor_bytes_shaped(t->dtype, group, n, t->rank ? t->dims[t->rank - 1] : 1, &want)) {
        snprintf(err, cap, "%lld %s elements with group %u have no valid size", (long long)n,
                 vkl_dtype_name(t->dtype), group);
        return -1;
    }
    if ((size_t)cJSON_GetArraySize(bytes) != want) {
        snprintf(err, cap, "%d bytes given, %zu needed", cJSON_GetArraySize(bytes), want);
        return -1;
    }
    t->nbytes = want;
    t->data = malloc(want ? want : 1);
    size_t i = 0;
    cJSON_ArrayForEach(v, bytes) {
        ((unsigned char *)t->data)[i++] = (unsigned char)(int64_t)v->valuedouble;
    }
    return 0;
}

/* A host tensor from {"dtype","shape","data"} (or "bytes" instead of data,
 * with "group" for quantized dtypes); data malloc'ed. */
static int parse_tensor(const cJSON *j, vkl_host_tensor *t, char *err, size_t cap) {
    const cJSON *dt = cJSON_GetObjectItem(j, "dtype"), *shape = cJSON_GetObjectItem(j, "shape"),
                *data = cJSON_GetObjectItem(j, "data"), *bytes = cJSON_GetObjectItem(j, "bytes");
    memset(t, 0, sizeof(*t));
    if (!cJSON_IsString(dt) || !vkl_dtype_from_name(dt->valuestring, &t->dtype) || !cJSON_IsArray(shape) ||
        !(cJSON_IsArray(data) || cJSON_IsArray(bytes))) {
        snprintf(err, cap, "tensor needs dtype, shape, data (or bytes)");
        return -1;
    }
    t->rank = (uint32_t)cJSON_GetArraySize(shape);
    int64_t n = 1;
    for (uint32_t d = 0; d < t->rank; d++) {
        t->dims[d] = (int64_t)cJSON_GetArrayItem(shape, (int)d)->valuedouble;
        n *= t->dims[d];
    }
    if (cJSON_IsArray(bytes)) return parse_bytes(j, t, n, err, cap);
    if (vkl_dtype_is_quantized(t->dtype)) {
        snprintf(err, cap, "a %s tensor needs bytes and group", vkl_dtype_name(t->dtype));
        return -1;
    }
    if (cJSON_GetArraySize(data) != n) {
        snprintf(err, cap, "data has %d elements, shape needs %lld", cJSON_GetArraySize(data), (long long)n);
        return -1;
    }
    t->nbytes = (size_t)n * vkl_dtype_size(t->dtype);
    t->data = malloc(t->nbytes ? t->nbytes : 1);
    {
        int64_t i = 0;
        const cJSON *v;
        cJSON_ArrayForEach(v, data) {
            unsigned char *p = (unsigned char *)t->data;
            double x = json_number(v);
            /* Integers beyond 2^53 are written as decimal strings; a float
             * case's data (-1e30 ...) is converted to an integer only in range. */
            int64_t exact = cJSON_IsString(v) ? strtoll(v->valuestring, NULL, 10)
                            : (x >= -0x1p63 && x < 0x1p63) ? (int64_t)x : 0;
            switch (t->dtype) {
            case VKL_DTYPE_F32: { float f = (float)x; memcpy(p + i * 4, &f, 4); break; }
            case VKL_DTYPE_F64: memcpy(p + i * 8, &x, 8); break;
            case VKL_DTYPE_F16: { uint16_t h = vkl_f32_to_f16((float)x); memcpy(p + i * 2, &h, 2); break; }
            case VKL_DTYPE_BF16: { uint16_t h = vkl_f32_to_bf16((float)x); memcpy(p + i * 2, &h, 2); break; }
            case VKL_DTYPE_I64: case VKL_DTYPE_U64: memcpy(p + i * 8, &exact, 8); break;
            case VKL_DTYPE_I32: case VKL_DTYPE_U32: { int32_t q = (int32_t)exact; memcpy(p + i * 4, &q, 4); break; }
            case VKL_DTYPE_I16: case VKL_DTYPE_U16: { int16_t q = (int16_t)exact; memcpy(p + i * 2, &q, 2); break; }
            default: p[i] = (unsigned char)exact; break;
            }
            i++;
        }
    }
    return 0;
}

static double host_get(const vkl_host_tensor *t, int64_t i) {
    const unsigned char *p = t->data;
    switch (t->dtype) {
    case VKL_DTYPE_F32: { float f; memcpy(&f, p + i * 4, 4); return f; }
    case VKL_DTYPE_F64: { double f; memcpy(&f, p + i * 8, 8); return f; }
    case VKL_DTYPE_F16: { uint16_t h; memcpy(&h, p + i * 2, 2); return vkl_f16_to_f32(h); }
    case VKL_DTYPE_BF16: { uint16_t h; memcpy(&h, p + i * 2, 2); return vkl_bf16_to_f32(h); }
    case VKL_DTYPE_I64: case VKL_DTYPE_U64: { int64_t q; memcpy(&q, p + i * 8, 8); return (double)q; }
    case VKL_DTYPE_I32: { int32_t q; memcpy(&q, p + i * 4, 4); return q; }
    case VKL_DTYPE_U32: { uint32_t q; memcpy(&q, p + i * 4, 4); return q; }
    case VKL_DTYPE_I16: { int16_t q; memcpy(&q, p + i * 2, 2); return q; }
    case VKL_DTYPE_U16: { uint16_t q; memcpy(&q, p + i * 2, 2); return q; }
    case VKL_DTYPE_I8: return (int8_t)p[i];
    default: return p[i];
    }
}

/* The bound is max error <= rtol * max|want| + atol. ref computes as numpy
 * does (double where it matters); other backends compute in f32 with their
 * own summation order and transcendental approximations (Vulkan's exp, sin
 * are only required to a few ulp), so their f32 bound is 10x looser. A
 * case's own rtol/atol (set for ref) count when larger. Integers, bools,
 * fp8 and block formats are exact everywhere. Backends that run a
 * quantized-weight QuantMatMul on int8 activations (cpu: W4A8 / W8A8, each
 * row quantized per weight group with scale max|x| / 127) add that rounding:
 * their f32 bound is A8_RTOL, about twice the worst error measured on
 * quant.json (0.86% of max |y|, int4_g32_bias). Vulkan's _dot matvecs
 * (VKL_VK_MATVEC=dot, or the default where the device accelerates integer
 * dot products) quantize per 32 (4-bit) or 16 (int8) activations with the
 * same scale rule plus a second int8 term for the residual: they pass the
 * f32 bound here (lavapipe, every family); with VKL_VK_DOT_RESIDUAL=0 (one
 * term) they take A8_RTOL (worst measured on lavapipe: 0.95% of max |y|,
 * int8_short_k688_g128; the 4-bit formats up to 0.86%). */
#define A8_RTOL 2e-2
/* A Vulkan device whose prefill GEMM runs on the matrix units takes A and
 * d * w rounded to fp16 (docs/vulkan.md; the default where it has them,
 * unless VKL_VK_MATH=f32): quant.json's GEMM cases set rtol 1e-3 for it,
 * and every quantized QuantMatMul on such a device gets the same bound (an
 * H200 measured 3.3e-4 on pieces_int8_w_a_y). So does Attention where the
 * device runs its prefill on the matrix units or their emulation (Q * scale,
 * K, V and the softmax weights in fp16; lavapipe's emulation: at most 4.9e-4
 * of max |y| over fused.json). */
#define F16_PRODUCTS_RTOL 1e-3
static void default_tol(vkl_dtype t, bool ref, bool a8, bool f16_products, double *rtol, double *atol) {
    if (a8 && t == VKL_DTYPE_F32) {
        *rtol = A8_RTOL;
        *atol = 1e-5;
        return;
    }
    if (f16_products && t == VKL_DTYPE_F32) {
        *rtol = F16_PRODUCTS_RTOL;
        *atol = 1e-5;
        return;
    }
    switch (t) {
    case VKL_DTYPE_F32: *rtol = ref ? 1e-5 : 1e-4; *atol = ref ? 1e-6 : 1e-5; break;
    case VKL_DTYPE_F16: *rtol = 2e-3; *atol = 1e-4; break;
    case VKL_DTYPE_BF16: *rtol = 1e-2; *atol = 1e-3; break;
    case VKL_DTYPE_F64: *rtol = 1e-12; *atol = 1e-14; break;
    default: *rtol = 0; *atol = 0; break;
    }
}

/* Compare one output; returns 0 if it passes. */
static int compare(const vkl_host_tensor *got, const vkl_host_tensor *want, double rtol, double atol, char *err,
                   size_t cap) {
    if (got->dtype != want->dtype) {
        snprintf(err, cap, "dtype %s, want %s", vkl_dtype_name(got->dtype), vkl_dtype_name(want->dtype));
        return -1;
    }
    if (got->rank != want->rank || memcmp(got->dims, want->dims, sizeof(int64_t) * want->rank)) {
        snprintf(err, cap, "shape differs (rank %u vs %u)", got->rank, want->rank);
        return -1;
    }
    int64_t n = 1;
    for (uint32_t d = 0; d < want->rank; d++) n *= want->dims[d];
    /* fp8 and block formats (given as "bytes"): the bytes must be identical */
    if (vkl_dtype_is_quantized(want->dtype) || want->dtype == VKL_DTYPE_FP8_E4M3 || want->dtype == VKL_DTYPE_FP8_E5M2) {
        if (got->nbytes != want->nbytes) {
            snprintf(err, cap, "%zu bytes, want %zu", got->nbytes, want->nbytes);
            return -1;
        }
        const unsigned char *g = got->data, *w = want->data;
        for (size_t i = 0; i < want->nbytes; i++)
            if (g[i] != w[i]) {
                snprintf(err, cap, "byte %zu of %zu: got 0x%02x, want 0x%02x", i, want->nbytes, g[i], w[i]);
                return -1;
            }
        return 0;
    }
    double maxref = 0, maxerr = 0;
    int64_t worst = -1;
    for (int64_t i = 0; i < n; i++) {
        double w = host_get(want, i);
        if (isfinite(w) && fabs(w) > maxref) maxref = fabs(w);
    }
    for (int64_t i = 0; i < n; i++) {
        double w = host_get(want, i), g = host_get(got, i);
        if (isnan(w) != isnan(g) || (isinf(w) && w != g)) {
            snprintf(err, cap, "element %lld: got %g, want %g", (long long)i, g, w);
            return -1;
        }
        if (!isfinite(w)) continue;
        double e = fabs(g - w);
        if (e > maxerr) maxerr = e, worst = i;
    }
    if (maxerr > rtol * maxref + atol) {
        snprintf(err, cap, "max error %.3g at element %lld (got %.9g, want %.9g) > %.3g*%.3g + %.3g", maxerr,
                 (long long)worst, host_get(got, worst), host_get(want, worst), rtol, maxref, atol);
        return -1;
    }
    return 0;
}

static int parse_attr(vkl_graph *g, const cJSON *a, vkl_attr *out, char *err, size_t cap) {
    memset(out, 0, sizeof(*out));
    out->name = a->string;
    const cJSON *v;
    if ((v = cJSON_GetObjectItem(a, "int"))) {
        out->kind = VKL_ATTR_INT;
        out->i = (int64_t)v->valuedouble;
    } else if ((v = cJSON_GetObjectItem(a, "float"))) {
        out->kind = VKL_ATTR_FLOAT;
        out->f = (float)json_number(v);
    } else if ((v = cJSON_GetObjectItem(a, "string"))) {
        out->kind = VKL_ATTR_STRING;
        out->s = v->valuestring;
    } else if ((v = cJSON_GetObjectItem(a, "ints"))) {
        out->kind = VKL_ATTR_INTS;
        out->count = (uint32_t)cJSON_GetArraySize(v);
        int64_t *ints = vkl_arena_alloc(&g->arena, sizeof(int64_t) * (out->count + 1));
        for (uint32_t i = 0; i < out->count; i++) ints[i] = (int64_t)cJSON_GetArrayItem(v, (int)i)->valuedouble;
        out->ints = ints;
    } else if ((v = cJSON_GetObjectItem(a, "floats"))) {
        out->kind = VKL_ATTR_FLOATS;
        out->count = (uint32_t)cJSON_GetArraySize(v);
        float *fl = vkl_arena_alloc(&g->arena, sizeof(float) * (out->count + 1));
        for (uint32_t i = 0; i < out->count; i++) fl[i] = (float)json_number(cJSON_GetArrayItem(v, (int)i));
        out->floats = fl;
    } else if ((v = cJSON_GetObjectItem(a, "tensor"))) {
        vkl_host_tensor h;
        if (parse_tensor(v, &h, err, cap)) return -1;
        vkl_shape s;
        uint32_t id;
        char name[128];
        snprintf(name, sizeof(name), "attr.%s", a->string);
        if (vkl_shape_from_ints(g, h.dims, h.rank, &s) ||
            vkl_graph_add_tensor(g, name, h.dtype, VKL_TENSOR_WEIGHT, &s, &id) ||
            vkl_graph_set_data(g, id, h.data, h.nbytes, true)) {
            free(h.data);
            snprintf(err, cap, "attribute tensor: %s", vkl_context_error(g->ctx));
            return -1;
        }
        free(h.data);
        out->kind = VKL_ATTR_TENSOR;
        out->i = id;
    } else {
        snprintf(err, cap, "attribute '%s' has no known kind", a->string);
        return -1;
    }
    return 0;
}

typedef struct target {
    const vkl_backend_vtable *be;
    vkl_backend_device *dev;
    bool f16_products; /* Vulkan's GEMM on matrix units (F16_PRODUCTS_RTOL) */
    bool f16_attention; /* Vulkan's prefill attention on matrix units or their emulation (the same bound) */
    bool a8;           /* int8 activations in QuantMatMul (A8_RTOL): cpu, Vulkan's one-term _dot matvecs */
} target;

/* Builds and runs one case; returns 0 when it passes, 1 when the backend
 * has no kernel for it (VKL_ERR_UNSUPPORTED), -1 otherwise. */
static int run_case(vkl_context *ctx, const target *tg, const cJSON *c, char *err, size_t cap) {
    const cJSON *op_j = cJSON_GetObjectItem(c, "op"), *dom_j = cJSON_GetObjectItem(c, "domain");
    const cJSON *ins = cJSON_GetObjectItem(c, "inputs"), *outs = cJSON_GetObjectItem(c, "outputs");
    const cJSON *attrs = cJSON_GetObjectItem(c, "attrs"), *xerr = cJSON_GetObjectItem(c, "expect_error");
    vkl_op op;
    if (!cJSON_IsString(op_j) || !vkl_op_find(cJSON_IsString(dom_j) ? dom_j->valuestring : "", op_j->valuestring, &op)) {
        snprintf(err, cap, "unknown op");
        return -1;
    }
    vkl_graph *g;
    if (vkl_graph_create(ctx, &g)) {
        snprintf(err, cap, "graph: %s", vkl_context_error(ctx));
        return -1;
    }
    int rc = -1;
    uint32_t in_ids[MAX_IO], out_ids[MAX_IO], n_in = 0, n_out = 0, n_attr = 0, n_graph_in = 0;
    vkl_host_tensor host_in[MAX_IO] = {0}, want[MAX_IO] = {0}, got[MAX_IO] = {0};
    vkl_attr at[32];
    vkl_status st = VKL_OK;
    const cJSON *j;
    cJSON_ArrayForEach(j, attrs) {
        if (n_attr == 32 || parse_attr(g, j, &at[n_attr++], err, cap)) goto done;
    }
    cJSON_ArrayForEach(j, ins) {
        char name[32];
        snprintf(name, sizeof(name), "in%u", n_in);
        if (cJSON_IsNull(j)) {
            in_ids[n_in++] = VKL_NONE;
            continue;
        }
        vkl_host_tensor h;
        if (parse_tensor(j, &h, err, cap)) goto done;
        bool is_const = cJSON_IsTrue(cJSON_GetObjectItem(j, "const"));
        const cJSON *sym = cJSON_GetObjectItem(j, "sym");
        vkl_shape s;
        st = vkl_shape_from_ints(g, h.dims, h.rank, &s);
        for (uint32_t d = 0; !st && sym && d < h.rank; d++) {
            const cJSON *sd = cJSON_GetArrayItem(sym, (int)d);
            if (cJSON_IsString(sd)) st = vkl_expr_parse(g->syms, sd->valuestring, &s.dims[d]);
        }
        if (!st) st = vkl_graph_add_tensor(g, name, h.dtype, is_const ? VKL_TENSOR_WEIGHT : VKL_TENSOR_INPUT, &s, &in_ids[n_in]);
        const cJSON *grp = cJSON_GetObjectItem(j, "group"); /* quantized dtypes: elements per block */
        if (!st && cJSON_IsNumber(grp)) g->tensors[in_ids[n_in]].group = (uint32_t)grp->valuedouble;
        if (!st && is_const) st = vkl_graph_set_data(g, in_ids[n_in], h.data, h.nbytes, true);
        if (!st && !is_const) {
            st = vkl_graph_add_input(g, in_ids[n_in]);
            host_in[n_graph_in++] = h;
        } else {
            free(h.data);
        }
        n_in++;
        if (st) goto fail_status;
    }
    cJSON_ArrayForEach(j, outs) {
        char name[32];
        snprintf(name, sizeof(name), "out%u", n_out);
        if (cJSON_IsNull(j)) {
            out_ids[n_out++] = VKL_NONE;
            continue;
        }
        if (parse_tensor(j, &want[n_out], err, cap)) goto done;
        st = vkl_graph_add_tensor(g, name, VKL_DTYPE_INVALID, VKL_TENSOR_ACTIVATION, NULL, &out_ids[n_out]);
        if (!st) st = vkl_graph_add_output(g, out_ids[n_out]);
        n_out++;
        if (st) goto fail_status;
    }
    st = vkl_graph_add_node(g, op, "case", in_ids, n_in, out_ids, n_out, at, n_attr, NULL);
    if (!st) st = vkl_graph_validate(g);
    if (!st) st = vkl_graph_infer_shapes(g);
    vkl_host_tensor outv[MAX_IO] = {0};
    if (!st) st = vkl_run_once_on(ctx, tg->be, tg->dev, g, host_in, outv);
    if (xerr) {
        /* "data_error": ref raises it from the data at run time (a division
         * by zero, an index out of range); a GPU kernel cannot, so other
         * backends may complete the run instead (outputs unchecked). */
        if (!st && cJSON_IsTrue(cJSON_GetObjectItem(c, "data_error")) && strcmp(tg->be->name, "ref")) {
            for (uint32_t k = 0; k < g->n_outputs; k++) vkl_free(ctx, outv[k].data);
            rc = 0;
            goto done;
        }
        if (!st) {
            /* An error ref finds in run-time data (an index out of range): a
             * GPU kernel cannot report it, only stay in bounds. */
            const bool may_run = cJSON_IsTrue(cJSON_GetObjectItem(c, "data_error")) && strcmp(tg->be->name, "ref");
            if (!may_run) snprintf(err, cap, "expected %s, but it ran", xerr->valuestring);
            for (uint32_t k = 0; k < g->n_outputs; k++) vkl_free(ctx, outv[k].data);
            rc = may_run ? 0 : -1;
            goto done;
        }
        if (strcmp(vkl_status_name(st), xerr->valuestring)) {
            snprintf(err, cap, "expected %s, got %s: %s", xerr->valuestring, vkl_status_name(st), vkl_context_error(ctx));
            goto done;
        }
        rc = 0;
        goto done;
    }
    if (st) goto fail_status;
    /* graph outputs are the non-null requested outputs, in order */
    for (uint32_t k = 0, o = 0; k < n_out; k++)
        if (out_ids[k] != VKL_NONE) got[k] = outv[o++];
    rc = 0;
    for (uint32_t k = 0; k < n_out; k++) {
        if (out_ids[k] == VKL_NONE) continue;
        double rtol, atol;
        const bool ref = !strcmp(tg->be->name, "ref");
        const bool quantized_mm = op == VKL_OP_QUANT_MAT_MUL && n_in > 1 && in_ids[1] != VKL_NONE &&
                                  vkl_dtype_is_quantized(g->tensors[in_ids[1]].dtype);
        const bool a8 = quantized_mm && tg->a8;
        const bool f16_attention = op == VKL_OP_ATTENTION && tg->f16_attention;
        default_tol(want[k].dtype, ref, a8, (quantized_mm && tg->f16_products) || f16_attention, &rtol, &atol);
        const cJSON *rt = cJSON_GetObjectItem(c, "rtol"), *abt = cJSON_GetObjectItem(c, "atol");
        if (rt && (ref || rt->valuedouble > rtol)) rtol = rt->valuedouble;
        if (abt && (ref || abt->valuedouble > atol)) atol = abt->valuedouble;
        char detail[400];
        if (compare(&got[k], &want[k], rtol, atol, detail, sizeof(detail))) {
            snprintf(err, cap, "output %u: %s", k, detail);
            rc = -1;
            break;
        }
    }
    goto done;
fail_status:
    snprintf(err, cap, "%s: %s", vkl_status_name(st), vkl_context_error(ctx));
    if (st == VKL_ERR_UNSUPPORTED) rc = 1;
done:
    for (uint32_t k = 0; k < MAX_IO; k++) {
        free(host_in[k].data);
        free(want[k].data);
        vkl_free(ctx, got[k].data);
    }
    vkl_graph_destroy(g);
    return rc;
}

int main(int argc, char **argv) {
    vkl_context *ctx;
    if (vkl_context_create(NULL, &ctx)) return 2;
    const char *backend = "ref";
    int first = 1;
    bool portable = false;
    if (argc > 2 && !strcmp(argv[1], "--backend")) {
        backend = argv[2];
        first = 3;
    }
    if (argc > first && !strcmp(argv[first], "--portable")) {
        portable = true;
        first++;
    }
    target tg = {vkl_backend_find(backend), NULL, false};
    if (!tg.be) {
        fprintf(stderr, "run_op_cases: no backend '%s' in this build\n", backend);
        vkl_context_destroy(ctx);
        return 2;
    }
    vkl_env_options env;
    vkl_status ost = vkl_env_options_read(ctx, &env);
    if (portable) env.backend.disable_isa = ~0u; /* host backends: the portable C kernels only */
    if (!ost) ost = tg.be->open(ctx, &env.backend, &tg.dev);
    if (ost) {
        /* No device at all (no Vulkan driver): ctest's skip code, with why. */
        fprintf(stderr, "run_op_cases: cannot open backend '%s': %s\n", backend, vkl_context_error(ctx));
        vkl_context_destroy(ctx);
        return ost == VKL_ERR_NOT_FOUND ? 77 : 2;
    }
#ifdef VKL_HAVE_VULKAN
    vkl_backend_caps caps;
    tg.be->caps(tg.dev, &caps);
    tg.f16_products = !strcmp(backend, "vulkan") && (caps.features & VKL_FEATURE_COOPMAT) &&
                      env.vulkan.math != VKL_VULKAN_MATH_F32;
    tg.a8 = !strcmp(backend, "vulkan") && vkl_vk_matvec_dot(tg.dev) && env.vulkan.matvec_dot_residual == 0;
    tg.f16_attention = !strcmp(backend, "vulkan") && vkl_vk_attention_coopmat(tg.dev);
#endif
    tg.a8 |= !strcmp(backend, "cpu");
    int passed = 0, failed = 0, unsupported = 0, refused = 0;
    const char *refused_ok = getenv("VKL_TEST_REFUSED_OK");
    for (int a = first; a < argc; a++) {
        size_t len;
        char *text = (char *)check_read_file(argv[a], &len);
        cJSON *root = text ? cJSON_Parse(text) : NULL;
        if (!root) {
            fprintf(stderr, "%s: cannot read or parse\n", argv[a]);
            failed++;
            free(text);
            continue;
        }
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItem(root, "cases")) {
            char err[600] = "";
            const cJSON *name = cJSON_GetObjectItem(c, "name");
            int rc = run_case(ctx, &tg, c, err, sizeof(err));
            if (rc) {
                bool ok = rc > 0 && refused_ok && *refused_ok && strstr(err, refused_ok);
                printf("%s %s: %s\n", ok ? "REFUSED" : rc > 0 ? "UNSUPPORTED" : "FAIL",
                       cJSON_IsString(name) ? name->valuestring : "?", err);
                if (ok) refused++;
                else if (rc > 0) unsupported++;
                else failed++;
            } else {
                passed++;
            }
        }
        cJSON_Delete(root);
        free(text);
    }
    printf("%s: %d passed, %d failed, %d unsupported", backend, passed, failed, unsupported);
    if (refused_ok && *refused_ok) printf(", %d refused for want of %s", refused, refused_ok);
    printf("\n");
    tg.be->close(tg.dev);
    vkl_context_destroy(ctx);
    return failed || unsupported ? 1 : 0;
}
