// Exact float conversions on bit patterns, for KV cache rows that must equal
// engine/quant's bytes (docs/quant.md "KV cache"): f32 -> f16 / bf16 / fp8
// (round to nearest even, engine/dtype.c and engine/quant/kv_quant.c), the
// int8 key rule d = max|x| / 127.0f, q = roundf(x / d), and the widening
// and narrowing between f16 / f32 / f64. Everything is integer arithmetic:
// GLSL's float division is only required to 2.5 ulp, packHalf2x16 does not
// name its rounding, and a device may flush subnormals on float operations,
// so none of those can give engine/quant's bytes on every device.
#ifndef VKL_KV_ENCODE_GLSL
#define VKL_KV_ENCODE_GLSL

// f16 bits (low 16) -> f32 bits, subnormals and NaN payloads kept.
uint vkl_f16_to_f32_bits(uint h) {
    uint sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 31u) return sign | 0x7f800000u | (m << 13);
    if (e == 0u) {
        if (m == 0u) return sign;
        int s = 10 - findMSB(m); // normalize: the f16 subnormal is an f32 normal
        return sign | (uint(113 - s) << 23) | (((m << s) & 0x3ffu) << 13);
    }
    return sign | ((e + 112u) << 23) | (m << 13);
}

// f32 bits -> f16 bits, round to nearest even; beyond the range +-inf; NaN
// stays NaN (engine/dtype.c's vkl_f32_to_f16, step for step).
uint vkl_f32_to_f16_bits(uint u) {
    uint sign = (u >> 16) & 0x8000u, ex = (u >> 23) & 0xffu, man = u & 0x7fffffu;
    if (ex == 0xffu) return sign | 0x7c00u | (man != 0u ? 0x200u | (man >> 13) : 0u);
    int e = int(ex) - 127 + 15;
    if (e >= 31) return sign | 0x7c00u;
    if (e <= 0) {
        if (e < -10) return sign;
        man |= 0x800000u;
        uint shift = uint(14 - e);
        uint half_ = man >> shift, rem = man & ((1u << shift) - 1u), mid = 1u << (shift - 1u);
        if (rem > mid || (rem == mid && (half_ & 1u) != 0u)) half_++;
        return sign | half_;
    }
    uint h = sign | (uint(e) << 10) | (man >> 13), rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) != 0u)) h++; // a carry into inf is right
    return h;
}

// f32 bits -> bf16 bits, round to nearest even, NaN kept a NaN.
uint vkl_f32_to_bf16_bits(uint u) {
    if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40u;
    return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}

// f32 bits -> f64 bits (lo, hi), exact.
uvec2 vkl_f32_to_f64_bits(uint u) {
    uint sign = u & 0x80000000u, ex = (u >> 23) & 0xffu, m = u & 0x7fffffu;
    if (ex == 0xffu) return uvec2(m << 29, sign | 0x7ff00000u | (m >> 3));
    int e = int(ex) - 127;
    if (ex == 0u) {
        if (m == 0u) return uvec2(0u, sign);
        int s = 23 - findMSB(m);
        m = (m << s) & 0x7fffffu;
        e = -126 - s;
    }
    return uvec2(m << 29, sign | (uint(e + 1023) << 20) | (m >> 3));
}

// f64 bits (lo, hi) -> f32 bits, round to nearest even (a C (float) cast).
uint vkl_f64_to_f32_bits(uint lo, uint hi) {
    uint sign = hi & 0x80000000u, ex = (hi >> 20) & 0x7ffu, mh = hi & 0xfffffu;
    if (ex == 0x7ffu) return sign | ((mh | lo) != 0u ? 0x7fc00000u : 0x7f800000u);
    if (ex == 0u) return sign; // f64 subnormals are far below f32's smallest
    int e = int(ex) - 1023 + 127;
    if (e >= 255) return sign | 0x7f800000u;
    uint m = (mh << 3) | (lo >> 29), rest = lo & 0x1fffffffu; // 23 kept bits, 29 dropped
    if (e >= 1) {
        uint r = sign | (uint(e) << 23) | m;
        if (rest > 0x10000000u || (rest == 0x10000000u && (r & 1u) != 0u)) r++;
        return r;
    }
    uint shift = uint(1 - e); // an f32 subnormal: the 24-bit significand shifted right
    if (shift > 24u) return sign;
    uint sig = m | 0x800000u, q = sig >> shift, disc = sig & ((1u << shift) - 1u), mid = 1u << (shift - 1u);
    if (disc > mid || (disc == mid && (rest != 0u || (q & 1u) != 0u))) q++;
    return sign | q;
}

// f32 bits -> fp8 code (e4m3fn: mbits 3, bias 7, max code 0x7E; e5m2: 2,
// 15, 0x7B): kv_quant.c's fp8_encode step for step. Nearest even, beyond max
// and +-inf saturate, NaN -> 0x7F | sign.
uint vkl_fp8_encode(uint u, uint mbits, int bias, uint max_code) {
    uint sign = (u >> 24) & 0x80u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7fu;
    if (a == 0x7f800000u) return sign | max_code;
    if (a < 0x00800000u) return sign;
    int e = int(a >> 23) - 127, emin = 1 - bias;
    int eq = max(e, emin);
    int shift = eq - int(mbits) - (e - 23); // >= 23 - mbits
    if (shift > 24) return sign;
    uint sig = (a & 0x7fffffu) | 0x800000u;
    uint r = sig >> uint(shift);
    uint rem = sig & ((1u << uint(shift)) - 1u), mid = 1u << uint(shift - 1);
    if (rem > mid || (rem == mid && (r & 1u) != 0u)) r++;
    uint code = (uint(eq - emin) << mbits) + r;
    return sign | min(code, max_code);
}
uint vkl_fp8_e4m3_bits(uint u) { return vkl_fp8_encode(u, 3u, 7, 0x7eu); }
uint vkl_fp8_e5m2_bits(uint u) { return vkl_fp8_encode(u, 2u, 15, 0x7bu); }

// f32 bits a / b, both finite and positive (a may be 0), rounded to nearest
// even as IEEE division: 24 quotient bits by restoring division of the
// significands, then the remainder decides the rounding (normal and
// subnormal results alike).
uint vkl_f32_div_bits(uint a, uint b) {
    if (a == 0u) return 0u;
    int ea = int(a >> 23), eb = int(b >> 23);
    uint ma = a & 0x7fffffu, mb = b & 0x7fffffu;
    if (ea == 0) { int s = 23 - findMSB(ma); ma <<= uint(s); ea = 1 - s; } else ma |= 0x800000u;
    if (eb == 0) { int s = 23 - findMSB(mb); mb <<= uint(s); eb = 1 - s; } else mb |= 0x800000u;
    int e = ea - eb + 127; // biased exponent of the quotient in [1, 2)
    if (ma < mb) { ma <<= 1; e--; }
    uint q = 0u, rem = ma; // rem < 2 mb < 2^25 throughout
    for (int k = 0; k < 24; k++) {
        q <<= 1;
        if (rem >= mb) { rem -= mb; q |= 1u; }
        rem <<= 1;
    }
    // q in [2^23, 2^24); the dropped fraction is rem / (2 mb)
    if (e >= 255) return 0x7f800000u;
    if (e >= 1) {
        uint r = (uint(e) << 23) + (q - 0x800000u);
        if (rem > mb || (rem == mb && (q & 1u) != 0u)) r++; // a carry into the exponent is right
        return r;
    }
    uint shift = uint(1 - e);
    if (shift > 24u) return 0u;
    uint qs = q >> shift, disc = q & ((1u << shift) - 1u), mid = 1u << (shift - 1u);
    if (disc > mid || (disc == mid && (rem != 0u || (qs & 1u) != 0u))) qs++;
    return qs;
}

// roundf (half away from zero) of a non-negative f32 (bits) below 256; 255
// for anything larger (the callers clamp to 127).
uint vkl_roundf_small(uint u) {
    int e = int(u >> 23) - 127;
    if (e < -1) return 0u;
    if (e == -1) return 1u;
    if (e > 7) return 255u;
    uint m = (u & 0x7fffffu) | 0x800000u, shift = uint(23 - e);
    uint ip = m >> shift, frac = m & ((1u << shift) - 1u);
    return ip + (frac >= (1u << (shift - 1u)) ? 1u : 0u);
}

// The int8 key code of x (f32 bits) for scale d (f32 bits, > 0):
// clamp(roundf(x / d), -127, 127) as a byte.
uint vkl_int8_code(uint x, uint d) {
    uint q = min(vkl_roundf_small(vkl_f32_div_bits(x & 0x7fffffffu, d)), 127u);
    return ((x & 0x80000000u) != 0u ? uint(-int(q)) : q) & 0xffu;
}

#endif
