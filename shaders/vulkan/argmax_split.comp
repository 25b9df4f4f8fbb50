#version 450
#extension GL_GOOGLE_include_directive : require
// ArgMax of a few long lines (a vocabulary of logits) in two levels
// (backends/vulkan/vk_select.c): select.comp gives such a line one
// workgroup, which leaves most of a GPU idle; here the line is cut into
// `parts` chunks of `chunk` elements. !FINAL: workgroup (p, line) finds the
// best (key, index) of chunk p and writes it to Part[line * parts + p].
// FINAL: workgroup (0, line) reduces the line's parts and writes the index
// (i64) to I. The order is select.comp's (order.glsl's keys: NaN largest;
// ties to the first index, or the last with TIE_LAST), and it is a total
// order on (key, index), so the grouping cannot change the winner.
#include "order.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64; // power of two
layout(constant_id = 1) const uint DT = 1;
layout(constant_id = 2) const bool TIE_LAST = false;
layout(constant_id = 3) const bool FINAL = false;

VKL_TENSOR_IN(X, 0)
VKL_RAW_IN(X)
VKL_TENSOR_STORE(I, 1)
layout(set = 0, binding = 2, std430) buffer Part_t { uvec4 part[]; }; // (key, index, unused)

layout(push_constant) uniform Push { uint lines, n, inner, chunk, parts; } pc;

const uint NONE = 0xffffffffu; // no candidate (an empty chunk)

bool before(uvec2 ka, uint ia, uvec2 kb, uint ib) {
    if (ia == NONE) return false;
    if (ib == NONE) return true;
    if (ka != kb) return vkl_key_gt(ka, kb);
    return TIE_LAST ? ia > ib : ia < ib;
}

shared uvec2 s_key[WG];
shared uint s_idx[WG];

void main() {
    const uint tid = gl_LocalInvocationIndex, line = gl_WorkGroupID.y, p = gl_WorkGroupID.x;
    if (line >= pc.lines) return; // the whole workgroup
    const uint o = line / pc.inner, i = line % pc.inner, base = o * pc.n * pc.inner + i;
    uvec2 bk = uvec2(0u);
    uint bi = NONE;
    if (FINAL) {
        for (uint q = tid; q < pc.parts; q += WG) {
            const uvec4 e = part[line * pc.parts + q];
            if (before(e.xy, e.z, bk, bi)) {
                bk = e.xy;
                bi = e.z;
            }
        }
    } else {
        const uint lo = p * pc.chunk, hi = min(pc.n, lo + pc.chunk);
        for (uint k = lo + tid; k < hi; k += WG) {
            const uvec2 key = vkl_key(DT, X_raw(DT, base + k * pc.inner));
            if (before(key, k, bk, bi)) {
                bk = key;
                bi = k;
            }
        }
    }
    s_key[tid] = bk;
    s_idx[tid] = bi;
    barrier();
    for (uint h = WG / 2u; h > 0u; h >>= 1) {
        if (tid < h && before(s_key[tid + h], s_idx[tid + h], s_key[tid], s_idx[tid])) {
            s_key[tid] = s_key[tid + h];
            s_idx[tid] = s_idx[tid + h];
        }
        barrier();
    }
    if (tid != 0u) return;
    if (FINAL) I_put(VKL_DT_I64, line, uvec2(min(s_idx[0], pc.n - 1u), 0u)); // output [outer, 1, inner]: line order
    else part[line * pc.parts + p] = uvec4(s_key[0], s_idx[0], 0u);
}
