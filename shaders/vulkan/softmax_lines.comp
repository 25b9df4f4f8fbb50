#version 450
#extension GL_GOOGLE_include_directive : require
// Softmax / LogSoftmax over an axis that is not the last: X viewed as
// [outer, n, inner], one invocation per line (o, i) of n elements at stride
// inner. Neighbouring invocations take neighbouring lines, so every pass
// reads memory coalesced across the subgroup; each element is written by
// its own invocation (real.glsl's _put merges 1/2-byte elements). Rows on
// the last axis (the attention case) run in norm.comp instead, a
// workgroup per row.
#include "real.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint LOG = 0; // LogSoftmax
layout(constant_id = 2) const uint X_DT = 1;
layout(constant_id = 3) const uint Y_DT = 1;

VKL_TENSOR_IN(X, 0)
VKL_REAL_IN(X)
VKL_TENSOR_STORE(Y, 1)

layout(push_constant) uniform Push { uint lines, n, inner; } pc;

void main() {
    const uint line = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WG + gl_LocalInvocationIndex;
    if (line >= pc.lines) return;
    const uint o = line / pc.inner, i = line % pc.inner;
    const uint base = o * pc.n * pc.inner + i;
    real m = -vkl_inf_real();
    for (uint k = 0u; k < pc.n; k++) m = max(m, X_r(X_DT, base + k * pc.inner));
    real s = real(0.0);
    for (uint k = 0u; k < pc.n; k++) s += vkl_exp(X_r(X_DT, base + k * pc.inner) - m);
    const real ls = vkl_log(s);
    for (uint k = 0u; k < pc.n; k++) {
        const uint e = base + k * pc.inner;
        const real d = X_r(X_DT, e) - m;
        Y_put(Y_DT, e, vkl_real_bits(Y_DT, LOG != 0u ? d - ls : vkl_exp(d) / s));
    }
}
