// The epilogue of a fused GEMM (vk_fuse.c's Add and SiluMul patterns on the
// prefill path), shared by the GEMM bodies' store (quant_gemm_io.glsl) and
// the split-K sum (quant_gemm_split_sum.comp): epi 0 stores v = A W^T
// (+ bias) as it is; 1 adds e, the residual Add's other operand; 2 stores
// silu(e) * v, e the gate projection's output, by ew_binary.comp's formula.
// Each is the unfused node's arithmetic on the same values (an Add of two
// operands in either order is the same float), so fused results equal the
// unfused ones bit for bit.
#include "ew_math.glsl"

float qg_epilogue_apply(uint epi, float v, float e) {
    if (epi == 1u) return v + e;
    if (epi == 2u) return e / (1.0 + vkl_exp(-e)) * v;
    return v;
}
