// Tensors of any element type as arrays of 32-bit words, so that no
// kernel needs 8- or 16-bit storage or shaderInt64 (phones lack them): a
// tensor binding is `uint NAME[]`, elements are read by dtype (the codes of
// engine/dtype.h, passed as specialization constants or push constants),
// and a kernel that writes a tensor writes whole words — one "unit" per
// invocation: 4 elements of a 1-byte type, 2 of a 2-byte type, 1 of a
// 4-byte type, 1 element (2 words) of an 8-byte type. The arena places
// every tensor 64-byte aligned and backends/vulkan binds ranges rounded up
// to a word, so the bytes after a tensor's last element up to the word's
// end are padding no other tensor owns.
//
// int64 tensors hold indices, positions, ids and masks: kernels compute on
// their low word as a 32-bit int and write the high word as its sign. A
// value outside the int32 range is not representable on this path (stated
// in docs/vulkan.md). f64 elements are only sized here: the kernels that
// compute in f64 (real.glsl's _f64 builds) read them themselves.
#ifndef VKL_TENSOR_GLSL
#define VKL_TENSOR_GLSL

#define VKL_DT_F32 1u
#define VKL_DT_F16 2u
#define VKL_DT_BF16 3u
#define VKL_DT_F64 4u
#define VKL_DT_I64 5u
#define VKL_DT_I32 6u
#define VKL_DT_I16 7u
#define VKL_DT_I8 8u
#define VKL_DT_U8 9u
#define VKL_DT_U16 10u
#define VKL_DT_U32 11u
#define VKL_DT_U64 12u
#define VKL_DT_BOOL 13u
#define VKL_DT_FP8_E4M3 14u
#define VKL_DT_FP8_E5M2 15u

uint vkl_dt_size(uint dt) {
    if (dt == VKL_DT_I64 || dt == VKL_DT_U64 || dt == VKL_DT_F64) return 8u;
    if (dt == VKL_DT_F32 || dt == VKL_DT_I32 || dt == VKL_DT_U32) return 4u;
    if (dt == VKL_DT_F16 || dt == VKL_DT_BF16 || dt == VKL_DT_I16 || dt == VKL_DT_U16) return 2u;
    return 1u;
}
bool vkl_dt_is_float(uint dt) {
    return dt == VKL_DT_F32 || dt == VKL_DT_F16 || dt == VKL_DT_BF16 || dt == VKL_DT_FP8_E4M3 ||
           dt == VKL_DT_FP8_E5M2;
}
// elements per unit and words per unit of a dtype (the header says why)
uint vkl_unit_elems(uint dt) { return max(1u, 4u / vkl_dt_size(dt)); }
uint vkl_unit_words(uint dt) { return max(1u, vkl_dt_size(dt) / 4u); }

// fp8 byte -> float, exactly (OCP e4m3fn: no infinities, S.1111.111 is NaN;
// e5m2: the top byte of an fp16)
float vkl_fp8_e4m3_to_f(uint b) {
    uint e = (b >> 3) & 15u, m = b & 7u;
    float mag = e == 0u ? float(m) * exp2(-9.0) : (1.0 + float(m) / 8.0) * exp2(float(e) - 7.0);
    if (e == 15u && m == 7u) mag = uintBitsToFloat(0x7fc00000u);
    return (b & 0x80u) != 0u ? -mag : mag;
}
float vkl_fp8_e5m2_to_f(uint b) { return unpackHalf2x16(b << 8).x; }

// Sub-word field of element i: its bits shifted down, masked to its size.
uint vkl_field(uint word, uint dt, uint i) {
    uint size = vkl_dt_size(dt);
    if (size == 1u) return (word >> (8u * (i & 3u))) & 0xffu;
    if (size == 2u) return (word >> (16u * (i & 1u))) & 0xffffu;
    return word;
}
uint vkl_word_of(uint dt, uint i) {
    uint size = vkl_dt_size(dt);
    return size == 8u ? 2u * i : size == 4u ? i : size == 2u ? i >> 1 : i >> 2;
}

// A field (from vkl_field; for 8-byte types the low word) as float / int.
float vkl_field_to_f(uint dt, uint f, uint hi) {
    switch (dt) {
    case VKL_DT_F32: return uintBitsToFloat(f);
    case VKL_DT_F16: return unpackHalf2x16(f).x;
    case VKL_DT_BF16: return uintBitsToFloat(f << 16);
    case VKL_DT_I64: return float(int(hi)) * 4294967296.0 + float(f);
    case VKL_DT_U64: return float(hi) * 4294967296.0 + float(f);
    case VKL_DT_I32: return float(int(f));
    case VKL_DT_I16: return float(bitfieldExtract(int(f), 0, 16));
    case VKL_DT_I8: return float(bitfieldExtract(int(f), 0, 8));
    case VKL_DT_FP8_E4M3: return vkl_fp8_e4m3_to_f(f);
    case VKL_DT_FP8_E5M2: return vkl_fp8_e5m2_to_f(f);
    default: return float(f); // u8, u16, u32, bool
    }
}
int vkl_field_to_i(uint dt, uint f) {
    switch (dt) {
    case VKL_DT_F32: case VKL_DT_F16: case VKL_DT_BF16: case VKL_DT_FP8_E4M3: case VKL_DT_FP8_E5M2:
        return int(vkl_field_to_f(dt, f, 0u)); // toward zero, as C casts
    case VKL_DT_I16: return bitfieldExtract(int(f), 0, 16);
    case VKL_DT_I8: return bitfieldExtract(int(f), 0, 8);
    default: return int(f); // low word of i64/u64, i32, u32, u16, u8, bool
    }
}

// Bits of value v as dtype dt placed at element i's position in its word
// (for 8-byte types: the low word; vkl_hi_word gives the high one).
uint vkl_place(uint dt, uint bits, uint i) {
    uint size = vkl_dt_size(dt);
    if (size == 1u) return (bits & 0xffu) << (8u * (i & 3u));
    if (size == 2u) return (bits & 0xffffu) << (16u * (i & 1u));
    return bits;
}
uint vkl_f_to_bf16_bits(float v) {
    uint u = floatBitsToUint(v);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40u; // NaN stays NaN
    return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;                  // round to nearest even
}
// float -> bits of dt (floats rounded to nearest even; integers toward zero)
uint vkl_f_bits(uint dt, float v) {
    switch (dt) {
    case VKL_DT_F32: return floatBitsToUint(v);
    case VKL_DT_F16: return packHalf2x16(vec2(v, 0.0)) & 0xffffu;
    case VKL_DT_BF16: return vkl_f_to_bf16_bits(v);
    case VKL_DT_BOOL: return v != 0.0 ? 1u : 0u;
    case VKL_DT_U8: case VKL_DT_U16: case VKL_DT_U32: case VKL_DT_U64: return uint(v);
    default: return uint(int(v));
    }
}
uint vkl_i_bits(uint dt, int v) {
    switch (dt) {
    case VKL_DT_F32: case VKL_DT_F16: case VKL_DT_BF16: return vkl_f_bits(dt, float(v));
    case VKL_DT_BOOL: return v != 0 ? 1u : 0u;
    default: return uint(v);
    }
}
// the high word of an 8-byte integer whose low word is lo (sign or zero)
uint vkl_hi_word(uint dt, uint lo) { return dt == VKL_DT_I64 && int(lo) < 0 ? 0xffffffffu : 0u; }

// A read-only tensor binding NAME with accessors NAME_f(dt, i), NAME_i(dt, i)
// and NAME_w(word): element i as float, as int, a raw word.
#define VKL_TENSOR_IN(NAME, BINDING)                                                          \
    layout(set = 0, binding = BINDING, std430) readonly buffer NAME##_t { uint NAME[]; };     \
    uint NAME##_w(uint w) { return NAME[w]; }                                                 \
    float NAME##_f(uint dt, uint i) {                                                         \
        uint w = vkl_word_of(dt, i);                                                          \
        return vkl_field_to_f(dt, vkl_field(NAME[w], dt, i), vkl_dt_size(dt) == 8u ? NAME[w + 1u] : 0u); \
    }                                                                                         \
    int NAME##_i(uint dt, uint i) { return vkl_field_to_i(dt, vkl_field(NAME[vkl_word_of(dt, i)], dt, i)); }

// A written tensor binding NAME (whole words only: NAME[w] = ...).
#define VKL_TENSOR_OUT(NAME, BINDING) \
    layout(set = 0, binding = BINDING, std430) writeonly buffer NAME##_t { uint NAME[]; };

#endif
