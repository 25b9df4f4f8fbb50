// Shared by the quantized-weight shaders: the extensions a variant asks for,
// the exact decode of an fp16 header field, and the 4-bit decodes of the GPU
// packed layout (engine/quant/pack_gpu.c): u32 word t of a row holds
// elements 8t..8t+7, element 8t+2s in bits 4s..4s+3 and 8t+2s+1 in bits
// 16+4s..19+4s (s = 0..3), so one shift and one AND isolate a pair of codes.
// Both the matvecs and the dequantize shaders decode through these macros:
// what the bit-exactness test checks is what the matvecs compute with.
#ifdef VKL_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
// The _f16 variants compute in fp16 (float16_t / f16vec2 / f16vec4; SPIR-V
// capability Float16: the device feature shaderFloat16). f16 values live
// only in registers and shared memory, never in buffers, so no 16-bit
// storage feature is needed.
#ifdef VKL_F16
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif

// Activations as int8 codes (quant_act_int8.comp makes them, the _dot
// matvecs of quant_matvec_dot.glsl read them): plain arithmetic, no
// extension.
// Four values already scaled into [-127.5, 127.5] rounded to the nearest
// integers and packed as signed bytes, element 0 in the low byte: adding
// VKL_ROUND_MAGIC = 1.5 * 2^23 puts round-to-nearest(v) in the f32's low
// mantissa bits as a two's-complement integer (the float's ulp there is 1),
// so the low byte of its bits is the int8 code -- one add per value, no
// conversion or clamp. (v + MAGIC) - MAGIC is the same rounding as a float.
#define VKL_ROUND_MAGIC 12582912.0
uint vkl_pack_i8x4(vec4 v) {
    const uvec4 b = floatBitsToUint(v + VKL_ROUND_MAGIC) & 0xFFu;
    return b.x | (b.y << 8) | (b.z << 16) | (b.w << 24);
}

// The 4-bit formats' side: word t of a uvec4 of W holds elements 8t..8t+7
// (the layout above), so its bytes' low nibbles (u & 0x0F0F0F0F) are elements
// 8t + (0, 4, 1, 5) and their high nibbles 8t + (2, 6, 3, 7). The
// activations are packed in that order (VKL_NIBBLE_ORDER: word 2t against
// the low nibbles, 2t + 1 against the high), and the high nibbles are
// multiplied in place (u & 0xF0F0F0F0: 16 q as unsigned bytes, up to 240),
// their sum shifted down once: exact, every term being a multiple of 16.
vec4 vkl_nibble_order(vec4 x[8], uint i) {
    const vec4 a = x[i & ~1u], c = x[i | 1u];
    return (i & 1u) == 0u ? vec4(a.x, c.x, a.y, c.y) : vec4(a.z, c.z, a.w, c.w);
}

// The _dot variants (quant_matvec_dot.glsl, "Integer dot products") multiply
// int8 activations with the codes four at a time: SPV_KHR_integer_dot_product's
// OpSDotKHR (signed x signed) and OpSUDotKHR (signed x unsigned) on 32-bit
// words of four packed bytes (PackedVectorFormat4x8Bit, operand 0); SPIR-V
// capabilities DotProduct and DotProductInput4x8BitPacked, which need the
// device feature shaderIntegerDotProduct (vk_device.c enables it). glslang
// 12 has no GL_EXT_integer_dot_product, so the instructions are named
// through GL_EXT_spirv_intrinsics (opcodes 4450 and 4452, capabilities
// 6019 DotProduct and 6018 DotProductInput4x8BitPacked); spirv-val checks
// the result at build time (cmake/shaders.cmake).
#ifdef VKL_DOT
#extension GL_EXT_spirv_intrinsics : require
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int vkl_sdot(uint a, uint b, spirv_literal int packed_4x8);
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4452)
int vkl_sudot(uint a_signed, uint b_unsigned, spirv_literal int packed_4x8);
#define VKL_DOT_4X8 0

int vkl_dot_nibbles(uvec4 w, uint ia[8]) {
    int lo = 0, hi = 0;
    for (uint t = 0u; t < 4u; t++) {
        lo = vkl_sudot(ia[2u * t], w[t] & 0x0F0F0F0Fu, VKL_DOT_4X8) + lo;
        hi = vkl_sudot(ia[2u * t + 1u], w[t] & 0xF0F0F0F0u, VKL_DOT_4X8) + hi;
    }
    return lo + (hi >> 4);
}
#endif

// fp16 bits -> f32, exactly, subnormals included: a block's scale d may be
// subnormal (a group of range below ~1e-4), and unpackHalf2x16 may flush
// fp16 subnormals on some devices, so those are decoded by hand (m * 2^-24
// is exact in f32).
float vkl_half_exact(uint h) {
    if ((h & 0x7C00u) != 0u) return unpackHalf2x16(h).x;
    const float m = float(h & 0x3FFu) * (1.0 / 16777216.0);
    return (h & 0x8000u) != 0u ? -m : m;
}

// E0M4 (Transformer-Lite §2.3): pair s of word u as two fp16 codes
// w1 = half(EXP | q << 6), made with one shift, one AND and one OR: the
// shift moves the pair's nibbles to bits 6..9 and 22..25, the AND clears the
// rest, the OR adds EXP (sign + exponent, shared by the group) to both
// halves (e2 = EXP | EXP << 16). unpackHalf2x16 then reads both halves as
// f32; they are normal fp16 values, so no flushing can touch them. In the
// fp16 variants, VKL_E0M4_H2s reads the same bits as an f16vec2 with
// unpackFloat2x16, a bitcast (OpBitcast): no conversion at all, the
// paper's as_half.
#define VKL_E0M4_MASK 0x03C003C0u
#define VKL_E0M4_BITS0(u, e2) ((((u) << 6) & VKL_E0M4_MASK) | (e2))
#define VKL_E0M4_BITS1(u, e2) ((((u) << 2) & VKL_E0M4_MASK) | (e2))
#define VKL_E0M4_BITS2(u, e2) ((((u) >> 2) & VKL_E0M4_MASK) | (e2))
#define VKL_E0M4_BITS3(u, e2) ((((u) >> 6) & VKL_E0M4_MASK) | (e2))
#define VKL_E0M4_PAIR0(u, e2) unpackHalf2x16(VKL_E0M4_BITS0(u, e2))
#define VKL_E0M4_PAIR1(u, e2) unpackHalf2x16(VKL_E0M4_BITS1(u, e2))
#define VKL_E0M4_PAIR2(u, e2) unpackHalf2x16(VKL_E0M4_BITS2(u, e2))
#define VKL_E0M4_PAIR3(u, e2) unpackHalf2x16(VKL_E0M4_BITS3(u, e2))
#ifdef VKL_F16
#define VKL_E0M4_H2_0(u, e2) unpackFloat2x16(VKL_E0M4_BITS0(u, e2))
#define VKL_E0M4_H2_1(u, e2) unpackFloat2x16(VKL_E0M4_BITS1(u, e2))
#define VKL_E0M4_H2_2(u, e2) unpackFloat2x16(VKL_E0M4_BITS2(u, e2))
#define VKL_E0M4_H2_3(u, e2) unpackFloat2x16(VKL_E0M4_BITS3(u, e2))
#endif

// int4, the baseline: pair s of word u as two codes q converted to float
// (the plain conversion the paper measures E0M4 against); VKL_INT4_H2 to
// f16 (OpConvertUToF to half: the int -> float conversion of §2.3).
#define VKL_INT4_CODES(u, s) ((uvec2(u) >> uvec2(4u * (s), 16u + 4u * (s))) & 0xFu)
#define VKL_INT4_PAIR(u, s) vec2(VKL_INT4_CODES(u, s))
#ifdef VKL_F16
#define VKL_INT4_H2(u, s) f16vec2(VKL_INT4_CODES(u, s))
#endif
