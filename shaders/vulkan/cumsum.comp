#version 450
#extension GL_GOOGLE_include_directive : require
// CumSum (backends/vulkan/vk_reduce.c): running sums along one axis, read
// at run time from the axis tensor (a scalar i32/i64 input, as the ref
// kernel reads it; normalized, and clamped into [0, rank) when out of
// range -- the ref kernel's error from data, which a GPU kernel cannot
// raise: it still reads and writes only inside the tensors). X viewed as
// [outer, n, inner] for that axis; one invocation per line, a serial scan
// in f32 (f64 in the _f64 build) or wrapping 32-bit integers (i64: the low
// word, tensor.glsl's rule); exclusive and reverse as ONNX. The dispatch
// covers the most lines any axis can have (count), the rest return.
#include "real.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint DT = 1;
layout(constant_id = 2) const uint AXIS_DT = 5;
layout(constant_id = 3) const bool EXCLUSIVE = false;
layout(constant_id = 4) const bool REVERSE = false;

VKL_TENSOR_IN(X, 0)
VKL_REAL_IN(X)
VKL_TENSOR_IN(AX, 1)
VKL_TENSOR_STORE(Y, 2)

layout(push_constant) uniform Push { uint rank, dims[8]; } pc;

const bool FLOAT = DT == VKL_DT_F32 || DT == VKL_DT_F16 || DT == VKL_DT_BF16 || DT == VKL_DT_F64;

void main() {
    const uint line = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WG + gl_LocalInvocationIndex;
    int a = AX_i(AXIS_DT, 0u);
    if (a < 0) a += int(pc.rank);
    const uint axis = uint(clamp(a, 0, int(pc.rank) - 1));
    uint outer = 1u, inner = 1u;
    for (uint d = 0u; d < pc.rank; d++) {
        if (d < axis) outer *= pc.dims[d];
        if (d > axis) inner *= pc.dims[d];
    }
    const uint n = pc.dims[axis];
    if (line >= outer * inner) return;
    const uint base = (line / inner) * n * inner + line % inner;
    real acc = real(0.0);
    uint iacc = 0u;
    for (uint s = 0u; s < n; s++) {
        const uint e = base + (REVERSE ? n - 1u - s : s) * inner;
        if (FLOAT) {
            const real x = X_r(DT, e);
            if (!EXCLUSIVE) acc += x;
            Y_put(DT, e, vkl_real_bits(DT, acc));
            if (EXCLUSIVE) acc += x;
        } else {
            const uint x = uint(X_i(DT, e));
            if (!EXCLUSIVE) iacc += x;
            Y_put(DT, e, uvec2(iacc, vkl_hi_word(DT, iacc)));
            if (EXCLUSIVE) iacc += x;
        }
    }
}
