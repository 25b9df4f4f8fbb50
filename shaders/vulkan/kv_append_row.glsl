// KvAppend's row encoding, shared by kv_append.comp and rope_kv_append.comp
// (vk_fuse.c's RoPE + KvAppend fusion) so that the fused dispatch writes the
// unfused bytes: VKL_KV_WRITE_ROW(FN, ST, SDT, BITS) defines
// void FN(dst, src, D, tid), which a workgroup of WG invocations (tid its
// own) calls to write state row dst of ST (dtype SDT: f32, f16, bf16, fp8 or
// int8; f64 is kv_append.comp's own) from x's elements src .. src + D - 1,
// each read as the f32 bits of (float)x by uint BITS(uint i). The bytes
// equal engine/quant's (kv_encode.glsl: integer arithmetic only): f32 as
// is, f16 / bf16 / fp8 round to nearest even, int8 one block per row,
// d = max|f| / 127.0f and q = clamp(roundf(f / d), -127, 127); an int8 row
// holding NaN or inf is skipped (the ref kernel refuses it). Needs the
// includer's `shared uint sRed[WG]` (WG a power of two).
#ifndef VKL_KV_APPEND_ROW_GLSL
#define VKL_KV_APPEND_ROW_GLSL

#include "kv_common.glsl"

#define VKL_KV_WRITE_ROW(FN, ST, SDT, BITS)                                                          \
    void FN(uint dst, uint src, uint D, uint tid) {                                                  \
        if (SDT == VKL_DT_Q_INT8) {                                                                  \
            uint amax = 0u;                                                                          \
            for (uint e = tid; e < D; e += WG) amax = max(amax, BITS(src + e) & 0x7fffffffu);         \
            sRed[tid] = amax;                                                                        \
            barrier();                                                                               \
            for (uint n = WG / 2u; n > 0u; n /= 2u) {                                                \
                if (tid < n) sRed[tid] = max(sRed[tid], sRed[tid + n]);                              \
                barrier();                                                                           \
            }                                                                                        \
            amax = sRed[0];                                                                          \
            if (amax >= 0x7f800000u) return; /* NaN or inf in the row */                             \
            const uint d = vkl_f32_div_bits(amax, 0x42fe0000u); /* amax / 127.0f */                   \
            const uint base = dst * (D + 4u) / 4u;            /* D % 4 == 0: rows are whole words */ \
            if (tid == 0u) ST[base] = d;                                                             \
            for (uint w = tid; w < D / 4u; w += WG) {                                                \
                uint word = 0u;                                                                      \
                for (uint k = 0u; k < 4u; k++) {                                                     \
                    uint code = d == 0u ? 0u : vkl_int8_code(BITS(src + 4u * w + k), d);             \
                    word |= code << (8u * k);                                                        \
                }                                                                                    \
                ST[base + 1u + w] = word;                                                            \
            }                                                                                        \
        } else if (SDT == VKL_DT_FP8_E4M3 || SDT == VKL_DT_FP8_E5M2) {                               \
            for (uint w = tid; w < D / 4u; w += WG) {                                                \
                uint word = 0u;                                                                      \
                for (uint k = 0u; k < 4u; k++) {                                                     \
                    uint f = BITS(src + 4u * w + k);                                                 \
                    word |= (SDT == VKL_DT_FP8_E4M3 ? vkl_fp8_e4m3_bits(f) : vkl_fp8_e5m2_bits(f)) << (8u * k); \
                }                                                                                    \
                ST[dst * D / 4u + w] = word;                                                         \
            }                                                                                        \
        } else if (SDT == VKL_DT_F16 || SDT == VKL_DT_BF16) {                                        \
            for (uint w = tid; w < D / 2u; w += WG) {                                                \
                uint f0 = BITS(src + 2u * w), f1 = BITS(src + 2u * w + 1u);                          \
                ST[dst * D / 2u + w] = SDT == VKL_DT_F16                                             \
                                           ? vkl_f32_to_f16_bits(f0) | (vkl_f32_to_f16_bits(f1) << 16) \
                                           : vkl_f32_to_bf16_bits(f0) | (vkl_f32_to_bf16_bits(f1) << 16); \
            }                                                                                        \
        } else {                                                                                     \
            for (uint e = tid; e < D; e += WG) ST[dst * D + e] = BITS(src + e);                      \
        }                                                                                            \
    }

// VKL_KV_POSITION(FN, PB, PDT) defines bool FN(pi, T, out p): entry pi of
// position_ids PB (i64 or i32) as a row of a state of T rows; false for a
// position outside [0, T), whose row is skipped.
#define VKL_KV_POSITION(FN, PB, PDT)                                                                 \
    bool FN(uint pi, uint T, out uint p) {                                                           \
        if (PDT == VKL_DT_I64) {                                                                     \
            if (PB[2u * pi + 1u] != 0u) return false; /* negative, or beyond 2^32 */                  \
            p = PB[2u * pi];                                                                         \
        } else {                                                                                     \
            int v = int(PB[pi]);                                                                     \
            if (v < 0) return false;                                                                 \
            p = uint(v);                                                                             \
        }                                                                                            \
        return p < T;                                                                                \
    }

#endif
