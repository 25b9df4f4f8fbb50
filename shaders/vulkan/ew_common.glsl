// What the elementwise kernels (ew_*.comp, range.comp) share: exact 64-bit
// integers as uvec2 (low, high) so that i64/u64 compute exactly as the ref
// backend's int64 domain without shaderInt64; exact conversions between
// dtypes made of integer bit operations only (fp16, bf16, fp8 and f64 bits
// never pass through a float a device might flush or round differently);
// per-binding element readers; the unit index of a 1D/2D grid; and the
// index math of a strided view whose rank is a specialization constant.
#ifndef VKL_EW_COMMON_GLSL
#define VKL_EW_COMMON_GLSL

#include "kv_encode.glsl"
#include "tensor.glsl"


// ---- 64-bit integers: uvec2(low word, high word), two's complement ---------------------------

uvec2 vkl_l(int v) { return uvec2(uint(v), v < 0 ? 0xffffffffu : 0u); }
uvec2 vkl_l_add(uvec2 a, uvec2 b) {
    uint c;
    uint lo = uaddCarry(a.x, b.x, c);
    return uvec2(lo, a.y + b.y + c);
}
uvec2 vkl_l_sub(uvec2 a, uvec2 b) {
    uint br;
    uint lo = usubBorrow(a.x, b.x, br);
    return uvec2(lo, a.y - b.y - br);
}
uvec2 vkl_l_mul(uvec2 a, uvec2 b) {
    uint hi, lo;
    umulExtended(a.x, b.x, hi, lo);
    return uvec2(lo, hi + a.x * b.y + a.y * b.x);
}
uvec2 vkl_l_neg(uvec2 a) { return vkl_l_sub(uvec2(0u), a); }
bool vkl_l_is_neg(uvec2 a) { return int(a.y) < 0; }
bool vkl_l_is_zero(uvec2 a) { return (a.x | a.y) == 0u; }
bool vkl_l_ult(uvec2 a, uvec2 b) { return a.y != b.y ? a.y < b.y : a.x < b.x; }
bool vkl_l_slt(uvec2 a, uvec2 b) { return a.y != b.y ? int(a.y) < int(b.y) : a.x < b.x; }
bool vkl_l_lt(uvec2 a, uvec2 b, bool is_unsigned) { return is_unsigned ? vkl_l_ult(a, b) : vkl_l_slt(a, b); }
// shifts by s in [0, 63] (GLSL leaves shifts by 32 or more undefined)
uvec2 vkl_l_shl(uvec2 a, uint s) {
    if (s == 0u) return a;
    if (s >= 32u) return uvec2(0u, a.x << (s - 32u));
    return uvec2(a.x << s, (a.y << s) | (a.x >> (32u - s)));
}
uvec2 vkl_l_shr(uvec2 a, uint s) {
    if (s == 0u) return a;
    if (s >= 32u) return uvec2(a.y >> (s - 32u), 0u);
    return uvec2((a.x >> s) | (a.y << (32u - s)), a.y >> s);
}
int vkl_l_msb(uvec2 a) { return a.y != 0u ? 32 + findMSB(a.y) : findMSB(a.x); } // -1 for 0

// Unsigned quotient; a zero divisor gives 0 (the ref backend fails the run
// instead: a GPU kernel cannot, so the result is defined and in bounds).
uvec2 vkl_l_udiv(uvec2 n, uvec2 d) {
    if (vkl_l_is_zero(d)) return uvec2(0u);
    if ((n.y | d.y) == 0u) return uvec2(n.x / d.x, 0u);
    uvec2 q = uvec2(0u), r = uvec2(0u);
    for (int i = 63; i >= 0; i--) {
        bool carry = (r.y >> 31) != 0u; // r << 1 leaves 64 bits: then it is >= d
        r = vkl_l_shl(r, 1u);
        r.x |= (i >= 32 ? n.y >> uint(i - 32) : n.x >> uint(i)) & 1u;
        if (carry || !vkl_l_ult(r, d)) {
            r = vkl_l_sub(r, d);
            if (i >= 32) q.y |= 1u << uint(i - 32);
            else q.x |= 1u << uint(i);
        }
    }
    return q;
}
// Truncating signed quotient, INT64_MIN / -1 = INT64_MIN (wraps, as ref).
uvec2 vkl_l_sdiv(uvec2 n, uvec2 d) {
    bool nn = vkl_l_is_neg(n), dn = vkl_l_is_neg(d);
    uvec2 q = vkl_l_udiv(nn ? vkl_l_neg(n) : n, dn ? vkl_l_neg(d) : d);
    return nn != dn ? vkl_l_neg(q) : q;
}
// x^e by squaring, wrapping; a negative e truncates 1/x^-e toward zero;
// 0 to a negative power gives 0 (ref fails the run: see vkl_l_udiv).
uvec2 vkl_l_pow(uvec2 x, uvec2 e) {
    if (vkl_l_is_neg(e)) {
        if (x == uvec2(1u, 0u)) return x;
        if (x == uvec2(0xffffffffu)) return (e.x & 1u) != 0u ? x : uvec2(1u, 0u);
        return uvec2(0u);
    }
    uvec2 r = uvec2(1u, 0u), b = x;
    while (!vkl_l_is_zero(e)) {
        if ((e.x & 1u) != 0u) r = vkl_l_mul(r, b);
        b = vkl_l_mul(b, b);
        e = vkl_l_shr(e, 1u);
    }
    return r;
}

// v >> s rounded to nearest, ties to even, for s >= 1 (any size).
uvec2 vkl_l_shr_rne(uvec2 v, uint s) {
    if (s > 64u) return uvec2(0u); // v < 2^64 <= half of 2^s
    uvec2 q = s == 64u ? uvec2(0u) : vkl_l_shr(v, s);
    uvec2 rem = s == 64u ? v : vkl_l_sub(v, vkl_l_shl(q, s));
    uvec2 half_ = vkl_l_shl(uvec2(1u, 0u), s - 1u);
    if (vkl_l_ult(half_, rem) || (rem == half_ && (q.x & 1u) != 0u)) q = vkl_l_add(q, uvec2(1u, 0u));
    return q;
}

// ---- exact conversions on bits ---------------------------------------------------------------

// fp8 bits -> f32 bits, exactly (f16 -> f32: kv_encode.glsl)
uint vkl_fp8_to_f32_bits(uint b, bool e4m3) {
    uint sign = (b & 0x80u) << 24;
    uint mb = e4m3 ? 3u : 2u, emax = e4m3 ? 15u : 31u;
    int bias = e4m3 ? 7 : 15;
    uint e = (b & 0x7fu) >> mb, m = b & ((1u << mb) - 1u);
    if (e4m3 && e == 15u && m == 7u) return sign | 0x7fc00000u;
    if (!e4m3 && e == emax) return sign | 0x7f800000u | (m << 21);
    if (e != 0u) return sign | (uint(int(e) - bias + 127) << 23) | (m << (23u - mb));
    if (m == 0u) return sign;
    int msb = findMSB(m); // m * 2^(1 - bias - mb)
    return sign | (uint(msb + 1 - bias - int(mb) + 127) << 23) | ((m << uint(23 - msb)) & 0x7fffffu);
}

// f32 bits -> fp8 (OCP e4m3fn or e5m2), the ref Cast's rule: nearest even;
// NaN -> S.1111111; +-inf and values rounding past the largest finite ->
// +-max with saturate, else NaN (e4m3fn) / +-inf (e5m2). Integer-only.
uint vkl_f32_bits_to_fp8(uint u, bool e4m3, bool saturate) {
    uint sign = (u >> 24) & 0x80u, a = u & 0x7fffffffu;
    uint mb = e4m3 ? 3u : 2u;
    int bias = e4m3 ? 7 : 15, emin = 1 - bias, emax = e4m3 ? 8 : 15;
    uint max_n = e4m3 ? 14u : 7u; // largest finite = max_n * 2^(emax - mb)
    uint overflow = saturate ? (e4m3 ? 0x7eu : 0x7bu) : (e4m3 ? 0x7fu : 0x7cu);
    if (a > 0x7f800000u) return sign | 0x7fu;
    if (a == 0x7f800000u) return sign | overflow;
    if (a < 0x00800000u) return sign; // zero or f32-subnormal: far below fp8's half-ulp
    int ea = int(a >> 23) - 127;
    if (ea > emax) return sign | overflow;
    int e = max(ea, emin);
    // n = |x| / 2^(e - mb), rounded: the 24-bit significand shifted right
    uint s = uint(23 - int(mb) + e - ea);
    uint sig = (a & 0x7fffffu) | 0x800000u;
    uint n = s >= 26u ? 0u : vkl_l_shr_rne(uvec2(sig, 0u), s).x;
    if (n == (1u << (mb + 1u))) {
        e += 1;
        n = 1u << mb;
    }
    if (e > emax || (e == emax && n > max_n)) return sign | overflow;
    if (n < (1u << mb)) return sign | n; // subnormal (e == emin) or zero
    return sign | (uint(e + bias) << mb) | (n - (1u << mb));
}

// f32 bits <-> f64 bits (uvec2), f32 exactly, f64 rounded to nearest even
uvec2 vkl_f32_bits_to_f64(uint f) {
    uint sign = f & 0x80000000u, e = (f >> 23) & 0xffu, m = f & 0x7fffffu;
    if (e == 0xffu) return uvec2(m << 29, sign | 0x7ff00000u | (m >> 3));
    if (e == 0u) {
        if (m == 0u) return uvec2(0u, sign);
        int msb = findMSB(m); // m * 2^-149
        m = (m << uint(23 - msb)) & 0x7fffffu;
        e = uint(msb - 149 + 127);
    }
    return uvec2(m << 29, sign | ((e + 896u) << 20) | (m >> 3));
}
uint vkl_f64_bits_to_f32(uvec2 d) {
    uint sign = d.y & 0x80000000u, e = (d.y >> 20) & 0x7ffu;
    uvec2 m = uvec2(d.x, d.y & 0xfffffu);
    if (e == 0x7ffu) return sign | 0x7f800000u | (vkl_l_is_zero(m) ? 0u : 0x400000u | (m.y << 3) | (m.x >> 29));
    if (e == 0u) return sign; // f64 subnormals are far below f32's half-ulp
    int ex = int(e) - 1023;
    if (ex > 127) return sign | 0x7f800000u;
    m.y |= 0x100000u;
    if (ex >= -126) // normal: 24 bits; a carry of the rounding moves into the exponent
        return sign | ((uint(ex + 127) << 23) + vkl_l_shr_rne(m, 29u).x - 0x800000u);
    return sign | vkl_l_shr_rne(m, uint(-97 - ex)).x; // subnormal, in units of 2^-149
}

// 64-bit integer (signed or not) -> f32 / f64 bits, nearest even
uint vkl_l_to_f32_bits(uvec2 v, bool is_signed) {
    uint sign = 0u;
    if (is_signed && vkl_l_is_neg(v)) {
        sign = 0x80000000u;
        v = vkl_l_neg(v); // INT64_MIN -> 2^63, as an unsigned magnitude
    }
    int msb = vkl_l_msb(v);
    if (msb < 0) return sign;
    uint sig = msb <= 23 ? v.x << uint(23 - msb) : vkl_l_shr_rne(v, uint(msb - 23)).x;
    return sign | ((uint(msb + 127) << 23) + sig - 0x800000u);
}
uvec2 vkl_l_to_f64_bits(uvec2 v, bool is_signed) {
    uint sign = 0u;
    if (is_signed && vkl_l_is_neg(v)) {
        sign = 0x80000000u;
        v = vkl_l_neg(v);
    }
    int msb = vkl_l_msb(v);
    if (msb < 0) return uvec2(0u, sign);
    uvec2 sig = msb <= 52 ? vkl_l_shl(v, uint(52 - msb)) : vkl_l_shr_rne(v, uint(msb - 52));
    uvec2 r = vkl_l_add(uvec2(0u, uint(msb + 1023) << 20), vkl_l_sub(sig, uvec2(0u, 0x100000u)));
    return uvec2(r.x, r.y | sign);
}

// ---- integer dtypes ---------------------------------------------------------------------------

bool vkl_dt_is_int(uint dt) { return !vkl_dt_is_float(dt) && dt != VKL_DT_F64; }
bool vkl_dt_is_unsigned(uint dt) {
    return dt == VKL_DT_U8 || dt == VKL_DT_U16 || dt == VKL_DT_U32 || dt == VKL_DT_U64 || dt == VKL_DT_BOOL;
}
// range of an integer dtype other than the 64-bit ones, as (hi, |lo|)
uvec2 vkl_dt_range(uint dt) {
    switch (dt) {
    case VKL_DT_I8: return uvec2(127u, 128u);
    case VKL_DT_U8: return uvec2(255u, 0u);
    case VKL_DT_I16: return uvec2(32767u, 32768u);
    case VKL_DT_U16: return uvec2(65535u, 0u);
    case VKL_DT_I32: return uvec2(0x7fffffffu, 0x80000000u);
    default: return uvec2(0xffffffffu, 0u); // u32
    }
}
// f64 bits -> integer dtype dt: truncated toward zero, saturated to dt's
// range, NaN -> 0 (the ref Cast's float_to_int). Returns the int64 value.
uvec2 vkl_f64_bits_to_int(uvec2 d, uint dt) {
    uint e = (d.y >> 20) & 0x7ffu;
    bool neg = (d.y >> 31) != 0u;
    uvec2 m = uvec2(d.x, d.y & 0xfffffu);
    if (e == 0x7ffu && !vkl_l_is_zero(m)) return uvec2(0u);
    int ex = int(e) - 1023;
    bool big = ex >= 64; // |d| >= 2^64, inf included
    uvec2 mag = uvec2(0u);
    if (!big && ex >= 0) {
        m.y |= 0x100000u;
        mag = ex >= 52 ? vkl_l_shl(m, uint(ex - 52)) : vkl_l_shr(m, uint(52 - ex));
    }
    if (dt == VKL_DT_U64) return neg ? uvec2(0u) : big ? uvec2(0xffffffffu) : mag;
    if (dt == VKL_DT_I64) {
        if (neg) return big || vkl_l_ult(uvec2(0u, 0x80000000u), mag) ? uvec2(0u, 0x80000000u) : vkl_l_neg(mag);
        return big || (mag.y >> 31) != 0u ? uvec2(0xffffffffu, 0x7fffffffu) : mag;
    }
    uvec2 r = vkl_dt_range(dt);
    if (neg) return big || mag.y != 0u || mag.x > r.y ? vkl_l_neg(uvec2(r.y, 0u)) : vkl_l_neg(mag);
    return big || mag.y != 0u || mag.x > r.x ? uvec2(r.x, 0u) : mag;
}

// ---- element access -----------------------------------------------------------------------------

// A read-only tensor binding NAME (a uint[] of words) and NAME_raw(dt, i),
// element i's bits: (field, 0) for dtypes of up to 4 bytes, (low, high)
// words for 8-byte ones. The conversions below take these raw bits, so a
// kernel converts all its operands at one call site: spirv-opt inlines
// every call, and modules with one copy of each conversion stay small (fast
// to validate and compile). dt is a specialization constant in every caller.
#define VKL_EW_IN(NAME, BINDING)                                                                     \
    layout(set = 0, binding = BINDING, std430) readonly buffer NAME##_t { uint NAME[]; };            \
    uvec2 NAME##_raw(uint dt, uint i) {                                                              \
        if (vkl_dt_size(dt) == 8u) return uvec2(NAME[2u * i], NAME[2u * i + 1u]);                    \
        return uvec2(vkl_field(NAME[vkl_word_of(dt, i)], dt, i), 0u);                                \
    }

// Raw bits of an integer dtype as int64 (sign- or zero-extended).
uvec2 vkl_raw_l(uint dt, uvec2 r) {
    switch (dt) {
    case VKL_DT_I64: case VKL_DT_U64: return r;
    case VKL_DT_I32: return vkl_l(int(r.x));
    case VKL_DT_I16: return vkl_l(bitfieldExtract(int(r.x), 0, 16));
    case VKL_DT_I8: return vkl_l(bitfieldExtract(int(r.x), 0, 8));
    default: return uvec2(r.x, 0u);
    }
}
// Raw bits of a float dtype of at most 4 bytes as f32 bits, exactly.
uint vkl_raw_f32_bits(uint dt, uvec2 r) {
    switch (dt) {
    case VKL_DT_F16: return vkl_f16_to_f32_bits(r.x);
    case VKL_DT_BF16: return r.x << 16;
    case VKL_DT_FP8_E4M3: return vkl_fp8_to_f32_bits(r.x, true);
    case VKL_DT_FP8_E5M2: return vkl_fp8_to_f32_bits(r.x, false);
    default: return r.x; // f32
    }
}
// Raw bits as float: float dtypes exactly, f64 and integers rounded to nearest.
float vkl_raw_f(uint dt, uvec2 r) {
    if (dt == VKL_DT_F64) return uintBitsToFloat(vkl_f64_bits_to_f32(r));
    if (vkl_dt_is_float(dt)) return uintBitsToFloat(vkl_raw_f32_bits(dt, r));
    return uintBitsToFloat(vkl_l_to_f32_bits(vkl_raw_l(dt, r), dt != VKL_DT_U64));
}
#ifdef VKL_F64
// Raw bits as double (integers rounded once, to nearest).
double vkl_raw_d(uint dt, uvec2 r) {
    if (dt == VKL_DT_F64) return packDouble2x32(r);
    if (vkl_dt_is_float(dt)) return double(uintBitsToFloat(vkl_raw_f32_bits(dt, r)));
    uvec2 l = vkl_raw_l(dt, r);
    return (dt == VKL_DT_U64 ? double(l.y) : double(int(l.y))) * 4294967296.0LF + double(l.x);
}
#endif

// Writes output unit U of dtype DT: its elements' bits from ELEM(e) (a
// uvec2: the low word, and the high one of an 8-byte element), placed in
// one word (or two for 8-byte elements). ELEM is called at one site.
#define VKL_EW_STORE_UNIT(OUT, DT, U, COUNT, ELEM)                                   \
    {                                                                                \
        uint n_ = vkl_unit_elems(DT), e0_ = (U) * n_, word_ = 0u;                 \
        for (uint j_ = 0u; j_ < n_ && e0_ + j_ < (COUNT); j_++) {                    \
            uvec2 v_ = ELEM(e0_ + j_);                                               \
            if (vkl_dt_size(DT) == 8u) {                                             \
                OUT[2u * (U)] = v_.x;                                                \
                OUT[2u * (U) + 1u] = v_.y;                                           \
            } else {                                                                 \
                word_ |= vkl_place(DT, v_.x, e0_ + j_);                              \
            }                                                                        \
        }                                                                            \
        if (vkl_dt_size(DT) != 8u && e0_ < (COUNT)) OUT[U] = word_;                  \
    }

// ---- grid and views -----------------------------------------------------------------------------

// The unit this invocation writes on a (x, y) grid of workgroups of WG
// invocations (the recorder splits large dispatches over y).
#define VKL_EW_UNIT(WG) ((gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * (WG) + gl_LocalInvocationID.x)

// Push constants of a strided view (backends/vulkan/vk_view.c's layout:
// count, 6 dims outermost first, 6 strides per source) and the source
// element index of output element e. RANK (a specialization constant) is
// how many innermost dims are real: the loop unrolls to exactly those, and
// the outermost real dim needs no modulo (its index is what remains).
#define VKL_EW_VIEW_FIELDS uint count; uint dims[6]; uint strides[3][6];
#define VKL_EW_VIEW_INDEX(PC, RANK)                                       \
    uint vkl_ew_index(uint s, uint e) {                                   \
        uint idx = 0u, rem = e;                                           \
        for (uint k = 0u; k < RANK; k++) {                                \
            uint d = 5u - k;                                              \
            if (k + 1u == RANK) {                                         \
                idx += rem * PC.strides[s][d];                            \
            } else {                                                      \
                idx += (rem % PC.dims[d]) * PC.strides[s][d];             \
                rem /= PC.dims[d];                                        \
            }                                                             \
        }                                                                 \
        return idx;                                                       \
    }

#endif
