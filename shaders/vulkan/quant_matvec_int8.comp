#version 450
#extension GL_GOOGLE_include_directive : require
// int8 (symmetric, f32 scale; the lm_head per output channel) matvec: per
// uvec4 of W (16 codes of one group, so group % 16 == 0)
//   sum_k a_k * q_k * d  =  d * sum_k q_k * a_k.
// Same loop, loads and reduction as the 4-bit formats (quant_matvec.glsl).
#define QV_CHUNK 16u
#include "quant_common.glsl"

float qv_chunk(uvec4 w, vec4 x[4], float sum_x, uint p) {
    float s = 0.0;
    for (uint t = 0u; t < 4u; t++) {
        const int u = int(w[t]);
        const vec4 q = vec4(bitfieldExtract(u, 0, 8), bitfieldExtract(u, 8, 8), bitfieldExtract(u, 16, 8),
                            bitfieldExtract(u, 24, 8));
        s += dot(q, x[t]);
    }
    return uintBitsToFloat(p) * s;
}

#include "quant_matvec.glsl"
