#version 450
#extension GL_GOOGLE_include_directive : require
// ArgMax and TopK (backends/vulkan/vk_select.c): X viewed as [outer, n,
// inner]; on each line (o, i) of n elements at stride inner, the first K
// elements of the line in the order
//   key descending (LARGEST) or ascending, ties by index ascending, or
//   descending with TIE_LAST (ArgMax's select_last_index)
// (order.glsl's keys: NaN largest, as the ref kernels sort), written to
// [outer, K, inner]: the values (X's dtype, the input's own bits) and/or
// the indices (i64). Selection, not a sort: pass j finds the first element
// after pass j - 1's in that order, one scan of the line per output, which
// suits the small K of sampling (top-k of the logits) and ArgMax (K = 1).
// COOP: a workgroup per line, each pass a workgroup reduction of the
// invocations' best candidates in shared memory (for long lines: a
// vocabulary); else an invocation per line (many short lines).
#include "order.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64; // power of two
layout(constant_id = 1) const uint DT = 1;
layout(constant_id = 2) const bool LARGEST = true;
layout(constant_id = 3) const bool TIE_LAST = false;
layout(constant_id = 4) const bool COOP = false;
layout(constant_id = 5) const uint OUTS = 3; // 1: values, 2: indices

VKL_TENSOR_IN(X, 0)
VKL_RAW_IN(X)
VKL_TENSOR_STORE(V, 1)
VKL_TENSOR_STORE(I, 2)

layout(push_constant) uniform Push { uint lines, n, inner, K; } pc;

const uint NONE = 0xffffffffu; // no candidate

// (ka, ia) comes before (kb, ib) in the selection order
bool before(uvec2 ka, uint ia, uvec2 kb, uint ib) {
    if (ia == NONE) return false;
    if (ib == NONE) return true;
    if (ka != kb) return LARGEST ? vkl_key_gt(ka, kb) : vkl_key_gt(kb, ka);
    return TIE_LAST ? ia > ib : ia < ib;
}

shared uvec2 s_key[COOP ? WG : 1u];
shared uint s_idx[COOP ? WG : 1u];

void emit(uint o, uint i, uint j, uint idx, uint base) {
    idx = min(idx, pc.n - 1u); // K <= n: always a candidate; never read outside the line anyway
    const uint out_i = (o * pc.K + j) * pc.inner + i;
    if ((OUTS & 1u) != 0u) V_put(DT, out_i, X_raw(DT, base + idx * pc.inner));
    if ((OUTS & 2u) != 0u) I_put(VKL_DT_I64, out_i, uvec2(idx, 0u));
}

void main() {
    const uint tid = gl_LocalInvocationIndex, wid = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    const uint line = COOP ? wid : wid * WG + tid;
    if (line >= pc.lines) return; // COOP: the whole workgroup
    const uint o = line / pc.inner, i = line % pc.inner, base = o * pc.n * pc.inner + i;
    uvec2 pk = uvec2(0u); // the previous pass's selection (none before pass 0)
    uint pi = NONE;
    for (uint j = 0u; j < pc.K; j++) {
        uvec2 bk = uvec2(0u);
        uint bi = NONE;
        for (uint k = COOP ? tid : 0u; k < pc.n; k += COOP ? WG : 1u) {
            const uvec2 key = vkl_key(DT, X_raw(DT, base + k * pc.inner));
            if ((pi == NONE || before(pk, pi, key, k)) && before(key, k, bk, bi)) {
                bk = key;
                bi = k;
            }
        }
        if (COOP) {
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
            bk = s_key[0];
            bi = s_idx[0];
            barrier();
        }
        if (!COOP || tid == 0u) emit(o, i, j, bi, base);
        pk = bk;
        pi = bi;
    }
}
