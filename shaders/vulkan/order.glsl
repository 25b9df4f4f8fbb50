// Order keys for ReduceMax, ArgMax and TopK: an element of any dtype as a
// uvec2 whose lexicographic unsigned order is the ref kernels' order of
// values (backends/ref/reduce.c): NaN above everything and equal to every
// NaN, -0 equal to +0, integers exact (i64 and u64 in full, from both
// words), no float arithmetic (so f64 needs no shaderFloat64 here). The
// key also gives the value back (vkl_key_bits) for ReduceMax's output.
#ifndef VKL_ORDER_GLSL
#define VKL_ORDER_GLSL

#include "real.glsl"

const uvec2 VKL_KEY_NAN = uvec2(0xffffffffu);

// f32 bits (the value of any float dtype but f64, exactly)
uvec2 vkl_key_f32(uint u) {
    if ((u & 0x7fffffffu) > 0x7f800000u) return VKL_KEY_NAN;
    if ((u & 0x7fffffffu) == 0u) u = 0u;
    return uvec2((u & 0x80000000u) != 0u ? ~u : u | 0x80000000u, 0u);
}

uvec2 vkl_key_f64(uint lo, uint hi) {
    if ((hi & 0x7ff00000u) == 0x7ff00000u && ((hi & 0xfffffu) | lo) != 0u) return VKL_KEY_NAN;
    if (((hi & 0x7fffffffu) | lo) == 0u) return uvec2(0x80000000u, 0u);
    return (hi & 0x80000000u) != 0u ? uvec2(~hi, ~lo) : uvec2(hi | 0x80000000u, lo);
}

// key of an element from its raw bits: x = its field (unshifted) or low word, y = high word
uvec2 vkl_key(uint dt, uvec2 raw) {
    switch (dt) {
    case VKL_DT_F64: return vkl_key_f64(raw.x, raw.y);
    case VKL_DT_I64: return uvec2(raw.y ^ 0x80000000u, raw.x);
    case VKL_DT_U64: return raw.yx;
    case VKL_DT_F32: return vkl_key_f32(raw.x);
    case VKL_DT_F16: case VKL_DT_BF16: case VKL_DT_FP8_E4M3: case VKL_DT_FP8_E5M2:
        return vkl_key_f32(floatBitsToUint(vkl_field_to_f(dt, raw.x, 0u)));
    case VKL_DT_I32: case VKL_DT_I16: case VKL_DT_I8:
        return uvec2(uint(vkl_field_to_i(dt, raw.x)) ^ 0x80000000u, 0u);
    default: return uvec2(raw.x, 0u); // u32, u16, u8, bool
    }
}

// the raw bits (as vkl_key takes them) of the value a key stands for
uvec2 vkl_key_bits(uint dt, uvec2 k) {
    switch (dt) {
    case VKL_DT_F64:
        if (k == VKL_KEY_NAN) return uvec2(0u, 0x7ff80000u);
        return (k.x & 0x80000000u) != 0u ? uvec2(k.y, k.x & 0x7fffffffu) : uvec2(~k.y, ~k.x);
    case VKL_DT_I64: return uvec2(k.y, k.x ^ 0x80000000u);
    case VKL_DT_U64: return k.yx;
    case VKL_DT_F32: case VKL_DT_F16: case VKL_DT_BF16: case VKL_DT_FP8_E4M3: case VKL_DT_FP8_E5M2: {
        const uint u = k == VKL_KEY_NAN ? 0x7fc00000u : (k.x & 0x80000000u) != 0u ? k.x & 0x7fffffffu : ~k.x;
        return uvec2(vkl_f_bits(dt, uintBitsToFloat(u)), 0u); // exact: the value came from dt
    }
    case VKL_DT_I32: case VKL_DT_I16: case VKL_DT_I8: return uvec2(k.x ^ 0x80000000u, 0u);
    default: return uvec2(k.x, 0u);
    }
}

bool vkl_key_gt(uvec2 a, uvec2 b) { return a.x > b.x || (a.x == b.x && a.y > b.y); }
uvec2 vkl_key_max(uvec2 a, uvec2 b) { return vkl_key_gt(b, a) ? b : a; }

// A read-only tensor NAME's element i as raw bits (x: field or low word, y: high word).
#define VKL_RAW_IN(NAME)                                                              \
    uvec2 NAME##_raw(uint dt, uint i) {                                               \
        const uint size_ = vkl_dt_size(dt);                                        \
        if (size_ == 8u) return uvec2(NAME[2u * i], NAME[2u * i + 1u]);               \
        if (size_ == 4u) return uvec2(NAME[i], 0u);                                   \
        return uvec2(vkl_field(NAME[vkl_word_of(dt, i)], dt, i), 0u);                 \
    }

#endif
