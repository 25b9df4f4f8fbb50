// RoPE's arithmetic, shared by rope.comp and rope_kv_append.comp (vk_fuse.c's
// RoPE + KvAppend fusion) so that the fused dispatch computes the unfused
// values bit for bit: the same loads, products and sums in the same order.
// VKL_ROPE_AT(FN, XB, XDT, CB, SB, CDT) defines REAL FN(e, D, S, H, R,
// per_batch): element e of RoPE(X) for X [B, H, S, D] in binding XB (dtype
// XDT), cos / sin [S, R] or [B or 1, S, R] in CB / SB (dtype CDT); needs the
// spec constant INTERLEAVED (rotate_half pairs (i, i + R/2) when 0, GPT-J
// pairs (2i, 2i + 1) otherwise):
//   y[i1] = x[i1] cos[i1] - x[i2] sin[i1],  y[i2] = x[i2] cos[i2] + x[i1] sin[i2]
// dims >= R are copied.
#ifndef VKL_ROPE_AT_GLSL
#define VKL_ROPE_AT_GLSL

#include "kv_common.glsl"

#define VKL_ROPE_AT(FN, XB, XDT, CB, SB, CDT)                                                   \
    REAL FN(uint e, uint D, uint S, uint H, uint R, bool per_batch) {                          \
        const uint d = e % D, row = e - d;                                                      \
        if (d >= R) return VKL_REAL_AT(XB, XDT, e);                                             \
        const uint s = (e / D) % S, b = e / (D * S * H);                                        \
        const uint co = ((per_batch ? b : 0u) * S + s) * R;                                     \
        uint i1, i2;                                                                            \
        if (INTERLEAVED != 0u) {                                                                \
            i1 = d & ~1u;                                                                       \
            i2 = i1 + 1u;                                                                       \
        } else {                                                                                \
            i1 = d < R / 2u ? d : d - R / 2u;                                                   \
            i2 = i1 + R / 2u;                                                                   \
        }                                                                                       \
        const REAL x1 = VKL_REAL_AT(XB, XDT, row + i1), x2 = VKL_REAL_AT(XB, XDT, row + i2);    \
        if (d == i1) return x1 * VKL_REAL_AT(CB, CDT, co + i1) - x2 * VKL_REAL_AT(SB, CDT, co + i1); \
        return x2 * VKL_REAL_AT(CB, CDT, co + i2) + x1 * VKL_REAL_AT(SB, CDT, co + i2);         \
    }

#endif
