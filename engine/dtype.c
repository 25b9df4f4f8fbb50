/* Element type table and half-precision scalar conversions. */
#include <string.h>

#include "dtype.h"

static const struct {
    vkl_dtype t;
    const char *name;
    size_t size;
} table[] = {
    {VKL_DTYPE_F32, "f32", 4},      {VKL_DTYPE_F16, "f16", 2},       {VKL_DTYPE_BF16, "bf16", 2},
    {VKL_DTYPE_F64, "f64", 8},      {VKL_DTYPE_I64, "i64", 8},       {VKL_DTYPE_I32, "i32", 4},
    {VKL_DTYPE_I16, "i16", 2},      {VKL_DTYPE_I8, "i8", 1},         {VKL_DTYPE_U8, "u8", 1},
    {VKL_DTYPE_U16, "u16", 2},      {VKL_DTYPE_U32, "u32", 4},       {VKL_DTYPE_U64, "u64", 8},
    {VKL_DTYPE_BOOL, "bool", 1},    {VKL_DTYPE_FP8_E4M3, "fp8e4m3", 1}, {VKL_DTYPE_FP8_E5M2, "fp8e5m2", 1},
    {VKL_DTYPE_Q_E0M4, "e0m4", 0},  {VKL_DTYPE_Q_INT4, "int4", 0},   {VKL_DTYPE_Q_INT8, "int8", 0},
};

static int find(vkl_dtype t) {
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (table[i].t == t) return (int)i;
    return -1;
}

const char *vkl_dtype_name(vkl_dtype t) {
    int i = find(t);
    return i < 0 ? "?" : table[i].name;
}

bool vkl_dtype_from_name(const char *name, vkl_dtype *out) {
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        if (!strcmp(table[i].name, name)) {
            *out = table[i].t;
            return true;
        }
    }
    return false;
}

bool vkl_dtype_valid(vkl_dtype t) { return find(t) >= 0; }

bool vkl_dtype_is_float(vkl_dtype t) {
    return t == VKL_DTYPE_F32 || t == VKL_DTYPE_F16 || t == VKL_DTYPE_BF16 || t == VKL_DTYPE_F64 ||
           t == VKL_DTYPE_FP8_E4M3 || t == VKL_DTYPE_FP8_E5M2;
}

bool vkl_dtype_is_int(vkl_dtype t) {
    return t == VKL_DTYPE_I64 || t == VKL_DTYPE_I32 || t == VKL_DTYPE_I16 || t == VKL_DTYPE_I8 ||
           t == VKL_DTYPE_U8 || t == VKL_DTYPE_U16 || t == VKL_DTYPE_U32 || t == VKL_DTYPE_U64;
}

bool vkl_dtype_is_quantized(vkl_dtype t) {
    return t == VKL_DTYPE_Q_E0M4 || t == VKL_DTYPE_Q_INT4 || t == VKL_DTYPE_Q_INT8;
}

size_t vkl_dtype_size(vkl_dtype t) {
    int i = find(t);
    return i < 0 ? 0 : table[i].size;
}

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

float vkl_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t man = h & 0x3ff;
    if (exp == 0x1f) return bits_f32(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        /* zero or subnormal: man * 2^-24 exactly */
        float v = (float)man * (1.0f / 16777216.0f);
        return sign ? -v : v;
    }
    return bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t vkl_f32_to_f16(float f) {
    uint32_t u = f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000;
    uint32_t exp = (u >> 23) & 0xff;
    uint32_t man = u & 0x7fffff;
    if (exp == 0xff) return (uint16_t)(sign | 0x7c00 | (man ? 0x200 | (man >> 13) : 0));
    int32_t e = (int32_t)exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7c00);
    if (e <= 0) {
        if (e < -10) return (uint16_t)sign;
        man |= 0x800000;
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t half = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = sign | ((uint32_t)e << 10) | (man >> 13);
    uint32_t rem = man & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) half++; /* carry may round into inf: correct */
    return (uint16_t)half;
}

float vkl_bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

uint16_t vkl_f32_to_bf16(float f) {
    uint32_t u = f32_bits(f);
    if ((u & 0x7fffffff) > 0x7f800000) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    uint32_t rounding = 0x7fff + ((u >> 16) & 1);
    return (uint16_t)((u + rounding) >> 16);
}
