#version 450
#extension GL_GOOGLE_include_directive : require
// Direct convolution, 1 to 3 spatial dims (backends/vulkan/vk_conv.c):
//   Y[n, m, o] = B[m] + sum over c < C/group and kernel taps q of
//                X[n, g C/group + c, o * stride - pad + q * dilation] * W[m, c, q],
// g = m / (M / group), taps in the padding counting as zero: the ref
// kernel's definition and summation order. One invocation per output
// element, spatial dims padded in front to three (size 1, stride 1). No
// im2col buffer and no shared-memory tiling: every output rereads its
// C/group * taps inputs and weights through the cache. Enough for a CLIP
// patch embedding (stride = kernel, each input read once per output
// channel); a convolution-heavy model would want a tiled kernel.
#include "real.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint X_DT = 1;
layout(constant_id = 2) const uint W_DT = 1;
layout(constant_id = 3) const uint B_DT = 1;
layout(constant_id = 4) const uint Y_DT = 1;
layout(constant_id = 5) const uint HAS_B = 0;

VKL_TENSOR_IN(X, 0)
VKL_REAL_IN(X)
VKL_TENSOR_IN(W, 1)
VKL_REAL_IN(W)
VKL_TENSOR_IN(B, 2)
VKL_REAL_IN(B)
VKL_TENSOR_STORE(Y, 3)

layout(push_constant) uniform Push {
    uint count;            // outputs
    uint C, M, cg, mpg;    // input channels, output channels, C / group, M / group
    uint in_[3], k[3], out_[3];
    uint stride[3], dil[3];
    int pad[3];            // leading pads
} pc;

void main() {
    const uint id = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WG + gl_LocalInvocationIndex;
    if (id >= pc.count) return;
    uint t = id;
    const uint o2 = t % pc.out_[2];
    t /= pc.out_[2];
    const uint o1 = t % pc.out_[1];
    t /= pc.out_[1];
    const uint o0 = t % pc.out_[0];
    t /= pc.out_[0];
    const uint m = t % pc.M, n = t / pc.M;
    const uint plane = pc.in_[0] * pc.in_[1] * pc.in_[2], taps = pc.k[0] * pc.k[1] * pc.k[2];
    const int b0 = int(o0 * pc.stride[0]) - pc.pad[0], b1 = int(o1 * pc.stride[1]) - pc.pad[1];
    const int b2 = int(o2 * pc.stride[2]) - pc.pad[2];
    real acc = HAS_B != 0u ? B_r(B_DT, m) : real(0.0);
    for (uint c = 0u; c < pc.cg; c++) {
        const uint xb = (n * pc.C + (m / pc.mpg) * pc.cg + c) * plane, wb = (m * pc.cg + c) * taps;
        for (uint q0 = 0u; q0 < pc.k[0]; q0++) {
            const int p0 = b0 + int(q0 * pc.dil[0]);
            if (p0 < 0 || p0 >= int(pc.in_[0])) continue;
            for (uint q1 = 0u; q1 < pc.k[1]; q1++) {
                const int p1 = b1 + int(q1 * pc.dil[1]);
                if (p1 < 0 || p1 >= int(pc.in_[1])) continue;
                const uint xr = xb + (uint(p0) * pc.in_[1] + uint(p1)) * pc.in_[2];
                const uint wr = wb + (q0 * pc.k[1] + q1) * pc.k[2];
                for (uint q2 = 0u; q2 < pc.k[2]; q2++) {
                    const int p2 = b2 + int(q2 * pc.dil[2]);
                    if (p2 < 0 || p2 >= int(pc.in_[2])) continue;
                    acc += X_r(X_DT, xr + uint(p2)) * W_r(W_DT, wr + q2);
                }
            }
        }
    }
    Y_put(Y_DT, id, vkl_real_bits(Y_DT, acc));
}
