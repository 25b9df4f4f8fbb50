// The quantized GEMM's bindings and push constants, shared by its tiled
// (quant_gemm.glsl) and cooperative-matrix (quant_gemm_coopmat.glsl) bodies
// so that vk_quant_matmul.c's record_gemm binds both the same way:
//   Y[M, N] = A[M, K] W[N, K]^T (+ bias[N]), W in the GPU packed layout.
// The cooperative-matrix body reads A 16 bytes at a time (K is a multiple
// of its step there, so A's rows are whole vec4s).
#ifdef VKL_COOPMAT
layout(set = 0, binding = 0, std430) readonly buffer BufA { vec4 a[]; };       // [M, K / 4]
#else
layout(set = 0, binding = 0, std430) readonly buffer BufA { float a[]; };      // [M, K]
#endif
layout(set = 0, binding = 1, std430) readonly buffer BufQ { uint qs[]; };      // [N, KQ / QG_CODES]
layout(set = 0, binding = 2, std430) readonly buffer BufP { uint params[]; };  // [N, KQ / group]
layout(set = 0, binding = 3, std430) writeonly buffer BufY { float y[]; };     // [M, N]
layout(set = 0, binding = 4, std430) readonly buffer BufB { float bias[]; };   // [N] if has_bias
layout(set = 0, binding = 5, std430) readonly buffer BufR { float res[]; };   // [M, N] if RESIDUAL

layout(push_constant) uniform Push {
    uint M, N, K;
    uint group;  // a multiple of BK dividing KQ
    uint has_bias;
    uint KQ;  // W's row length: K rounded up to whole groups (= K in the cooperative-matrix build)
    uint splits;  // the cooperative-matrix build's K slices (z workgroups; 1 elsewhere): y holds one plane each
} pc;

// RESIDUAL (vk_fuse.c's QuantMatMul + Add on the prefill GEMM): Y = A W^T
// (+ bias) + R, R at binding 5, added as the Add would (an Add of two
// operands in either order is the same float): the unfused result bit for
// bit. A split GEMM stores partial sums and leaves it to
// quant_gemm_split_sum.comp.
#ifdef VKL_COOPMAT
layout(constant_id = 10) const bool RESIDUAL = false;
#else
layout(constant_id = 4) const bool RESIDUAL = false;
#endif
