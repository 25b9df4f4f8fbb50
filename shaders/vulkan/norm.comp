#version 450
#extension GL_GOOGLE_include_directive : require
// Row-wise normalizations, one workgroup per row of n contiguous elements
// (backends/vulkan/vk_norm.c): MODE
//   0 Softmax     y = exp(x - max) / sum(exp(x - max))
//   1 LogSoftmax  y = x - max - log(sum(exp(x - max)))
//   2 RMSNorm     y = x / sqrt(mean(x^2) + eps) * scale
//   3 LayerNorm   y = (x - mean) / sqrt(mean((x - mean)^2) + eps) * scale + bias,
//                 and the row's mean and 1/sqrt(var + eps) when asked for
// Softmax over another axis than the last is softmax_lines.comp. Each pass
// strides the row by WG (coalesced), statistics are two passes as in the
// ref kernel (mean first, then the squared deviations: no cancellation),
// reductions are wg_reduce.glsl's; arithmetic is f32 (f64 in the _f64
// variant) whatever the tensors' dtypes. Dtypes are specialization
// constants, so each pipeline reads and writes exactly one layout.
//
// The _codes builds (VKL_QA_CODES; _bytes: VKL_QA_BYTES too) are RMSNorm
// folded into the integer-dot matvecs' activation quantizer
// (backends/vulkan/vk_fuse.c decides): the normalized row is not stored but
// quantized, step by step, into quant_act.glsl's codes at binding 3, with
// quant_act_int8.comp's own arithmetic (qa_quantize_step) on the very
// values the plain build would store, so the matvecs' results are the
// unfused ones bit for bit. f32 X, Y and scale (a row) only.
#include "wg_reduce.glsl"
#include "real.glsl"
#include "view.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128; // power of two
layout(constant_id = 1) const uint MODE = 0;
layout(constant_id = 2) const uint X_DT = 1;
layout(constant_id = 3) const uint Y_DT = 1;
layout(constant_id = 4) const uint S_DT = 1;
layout(constant_id = 5) const uint B_DT = 1;
layout(constant_id = 6) const uint STAT_DT = 1;
// 1: bias, 2: mean output, 4: inv_std_dev output, 8: scale is one row
// (element k of the row uses scale[k]), 16: bias is one row; otherwise
// scale/bias are indexed through the view (any numpy broadcast onto X)
layout(constant_id = 7) const uint FLAGS = 0;
#ifdef VKL_QA_CODES
layout(constant_id = 8) const bool QA_RESIDUAL = true;  // quant_act_int8.comp's DOT_RESIDUAL
#endif

VKL_TENSOR_IN(X, 0)
VKL_REAL_IN(X)
VKL_TENSOR_IN(S, 1)
VKL_REAL_IN(S)
VKL_TENSOR_IN(B, 2)
VKL_REAL_IN(B)
VKL_TENSOR_STORE(Y, 3)
VKL_TENSOR_STORE(MEAN, 4)
VKL_TENSOR_STORE(INV, 5)

layout(push_constant) uniform Push {
    uint rows, n;
    float eps;
    uint count;                          // view.glsl: X's index space,
    uint dims[VKL_VIEW_RANK];            // scale (source 0) and bias (1)
    uint strides[2][VKL_VIEW_RANK];
#ifdef VKL_QA_CODES
    uint qa_steps;   // steps per row of codes
    uint qa_off;     // the first row's first uvec4 in binding 3
    uint qa_stride;  // uvec4s per row
#endif
} pc;

#ifdef VKL_QA_CODES
#ifdef VKL_QA_BYTES
#define QV_CHUNK 16u
#else
#define QV_CHUNK 32u
#endif
#include "quant_common.glsl"
void qa_put(uint w, uint v) { Y[w] = v; }
#define VKL_QA_WRITE
#include "quant_act.glsl"
shared float s_qa_max[WG];   // each word's max |x|
shared ivec2 s_qa_sum[WG];   // each word's code sums (ia, ib)
#endif

VKL_WG_REDUCE(real, wg_sum, VKL_COMBINE_ADD, subgroupAdd)
VKL_WG_REDUCE(real, wg_max, VKL_COMBINE_MAX, subgroupMax)

real g_a, g_b; // the row's statistics: (max, sum) / (max, log sum) / (mean, inv)

real scale_at(uint i, uint k) {
    if ((FLAGS & 8u) != 0u) return S_r(S_DT, k);
    uint j;
    VKL_VIEW_SRC_INDEX(pc, 0, i, j);
    return S_r(S_DT, j);
}

real bias_at(uint i, uint k) {
    if ((FLAGS & 1u) == 0u) return real(0.0);
    if ((FLAGS & 16u) != 0u) return B_r(B_DT, k);
    uint j;
    VKL_VIEW_SRC_INDEX(pc, 1, i, j);
    return B_r(B_DT, j);
}

// element i of X, the k-th of its row, normalized
real value(uint i, uint k) {
    const real x = X_r(X_DT, i);
    if (MODE == 0u) return vkl_exp(x - g_a) / g_b;
    if (MODE == 1u) return x - g_a - g_b;
    if (MODE == 2u) return x * g_b * scale_at(i, k);
    return (x - g_a) * g_b * scale_at(i, k) + bias_at(i, k);
}

void main() {
    const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (row >= pc.rows) return; // the whole workgroup: barriers stay uniform
    const uint tid = gl_LocalInvocationIndex, n = pc.n, base = row * n;

    if (MODE <= 1u) {
        real m = -vkl_inf_real();
        for (uint k = tid; k < n; k += WG) m = max(m, X_r(X_DT, base + k));
        m = wg_max(m);
        // a NaN the max skipped makes the sum, and so the whole row, NaN (numpy's result)
        real s = real(0.0);
        for (uint k = tid; k < n; k += WG) s += vkl_exp(X_r(X_DT, base + k) - m);
        s = wg_sum(s);
        g_a = m;
        g_b = MODE == 0u ? s : vkl_log(s);
    } else {
        real mean = real(0.0);
        if (MODE == 3u) {
            real s = real(0.0);
            for (uint k = tid; k < n; k += WG) s += X_r(X_DT, base + k);
            mean = wg_sum(s) / real(n);
        }
        real v = real(0.0);
        for (uint k = tid; k < n; k += WG) {
            const real d = X_r(X_DT, base + k) - mean;
            v += d * d;
        }
        v = wg_sum(v);
        g_a = mean;
        g_b = real(1.0) / sqrt(v / real(n) + real(pc.eps));
        if (tid == 0u && (FLAGS & 2u) != 0u) MEAN_put(STAT_DT, row, vkl_real_bits(STAT_DT, g_a));
        if (tid == 0u && (FLAGS & 4u) != 0u) INV_put(STAT_DT, row, vkl_real_bits(STAT_DT, g_b));
    }

#ifdef VKL_QA_CODES
    // A code word per invocation (a step's QA_VEC words side by side, so a
    // round of WG words holds whole steps): its four values, the step's
    // max |x| and code sums through shared memory. Rather than an
    // invocation per step, which left most of the workgroup idle for the
    // step's 32 values one after another.
    const uint qa_row = pc.qa_off + row * pc.qa_stride, words = pc.qa_steps * QA_VEC;
    const uint lead = tid - tid % QA_VEC;  // the step's first word's invocation
    for (uint w0 = 0u; w0 < words; w0 += WG) {
        const uint w = w0 + tid, c = w / QA_VEC, i = w % QA_VEC;
        vec4 x = vec4(0.0);
        if (w < words) {
            const uvec4 e = c * QV_CHUNK + qa_word_elems(i);  // past n (the short last group's tail): zeros
            for (uint j = 0u; j < 4u; j++) x[j] = e[j] < n ? float(value(base + e[j], e[j])) : 0.0;
        }
        const vec4 ax = abs(x);
        s_qa_max[tid] = max(max(ax.x, ax.y), max(ax.z, ax.w));
        barrier();
        float amax = 0.0;
        for (uint j = 0u; j < QA_VEC; j++) amax = max(amax, s_qa_max[lead + j]);
        uint ia, ib;
        qa_word_codes(x, qa_to_code(amax), QA_RESIDUAL, ia, ib);
        if (w < words) {
            qa_put(4u * (qa_row + c * QA_VEC4) + i, ia);
            if (QA_RESIDUAL) qa_put(4u * (qa_ib(qa_row, pc.qa_steps) + c * QA_VEC4) + i, ib);
        }
        s_qa_sum[tid] = ivec2(qa_sum_i8x4(ia), qa_sum_i8x4(ib));
        barrier();
        if (w < words && i == 0u) {
            ivec2 sum = ivec2(0);
            for (uint j = 0u; j < QA_VEC; j++) sum += s_qa_sum[tid + j];
            qa_put_meta(qa_row, pc.qa_steps, c, amax, sum.x, sum.y, QA_RESIDUAL);
        }
        barrier();  // the sums read before the next round writes them
    }
    return;
#endif
    // Words wholly inside the row are written whole; a 1- or 2-byte
    // element in a word shared with the neighbouring row goes through _put.
    const uint UE = vkl_unit_elems(Y_DT);
    if (UE == 1u) {
        for (uint k = tid; k < n; k += WG) Y_put(Y_DT, base + k, vkl_real_bits(Y_DT, value(base + k, k)));
        return;
    }
    const uint e1 = base + n;
    for (uint w = base / UE + tid; w < (e1 + UE - 1u) / UE; w += WG) {
        const uint first = w * UE;
        if (first >= base && first + UE <= e1) {
            uint word = 0u;
            for (uint j = 0u; j < UE; j++)
                word |= vkl_place(Y_DT, vkl_real_bits(Y_DT, value(first + j, first + j - base)).x, first + j);
            Y[w] = word;
        } else {
            for (uint j = 0u; j < UE; j++) {
                const uint e = first + j;
                if (e >= base && e < e1) Y_put(Y_DT, e, vkl_real_bits(Y_DT, value(e, e - base)));
            }
        }
    }
}
