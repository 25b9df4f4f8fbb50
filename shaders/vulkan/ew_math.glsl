// Transcendentals of the elementwise kernels, written out rather than
// taken from GLSL's built-ins: Vulkan lets exp/log/sin/cos/pow be loose
// (sin: 2^-11 absolute on [-pi, pi] and nothing promised outside; exp:
// 3 + 2|x| ulp), and some GPUs reduce sin/cos arguments poorly, while
// rotary tables take sin/cos of position * frequency up to ~1e4 radians.
// f32: exp, log, sin, cos within 2 ulp (sin/cos for every finite argument:
// an exact integer reduction by pi/2, vkl_pio2_frac says why not Cody-Waite),
// erf and tanh within a few ulp (tests/vulkan/test_vk_ew_math.c measures
// them; docs/vulkan.md has the table). The polynomial coefficients are
// least-squares fits on Chebyshev nodes, checked in f32 arithmetic
// (scripts/fit_ew_math.py). With VKL_F64 (the _f64 shader variants; Float64
// capability) the same functions in double, from Taylor series and an erfc
// continued fraction, to a few double ulp.
#ifndef VKL_EW_MATH_GLSL
#define VKL_EW_MATH_GLSL

// `precise` marks the steps whose rounding is the algorithm (reductions,
// split products): without it a compiler may reassociate
// (x - k a) - k b into x - k (a + b) (Mesa's NIR does), undoing them.

float vkl_nan() { return uintBitsToFloat(0x7fc00000u); }
float vkl_inf() { return uintBitsToFloat(0x7f800000u); }
float vkl_pow2i(int k) { return uintBitsToFloat(uint(k + 127) << 23); } // 2^k, k in [-126, 127]

// ---- exp, log ------------------------------------------------------------------------------------

// e^x = 2^k e^r, r = x - k ln2 in two parts (k ln2_hi is exact: ln2_hi
// has 16 significant bits, k at most 8).
float vkl_exp(float x) {
    if (isnan(x)) return x;
    if (x >= 88.72283935546875) return vkl_inf();
    if (x < -103.97208) return 0.0;
    float k = roundEven(x * 1.44269502);
    precise float r = (x - k * 0.693145751953125) - k * 1.42860677e-06;
    float p = 1.0 + (r + r * r * (0.5 + r * (0.166665629 + r * (0.0416664332 + r * (0.00836553704 + r * 0.00139371771)))));
    int ki = int(k), k1 = ki / 2; // 2^k in two factors: neither over- nor underflows on its own
    return p * vkl_pow2i(k1) * vkl_pow2i(ki - k1);
}

// log x = e ln2 + log(1 + t), 1 + t = the significand in [sqrt(1/2), sqrt(2));
// log(1 + t) = 2 atanh(s), s = t / (2 + t), written t - s (t - 2 s^2 A(s^2))
// so that its leading term is exact.
float vkl_log(float x) {
    uint u = floatBitsToUint(x);
    if (isnan(x) || ((u >> 31) != 0u && (u & 0x7fffffffu) != 0u)) return vkl_nan();
    if ((u & 0x7fffffffu) == 0u) return -vkl_inf();
    if (u == 0x7f800000u) return x;
    int e = int(u >> 23) - 127;
    uint m = u & 0x7fffffu;
    if (e == -127) { // subnormal: normalize by hand (devices may flush them in float arithmetic)
        int msb = findMSB(m);
        e = msb - 149;
        m = (m << uint(23 - msb)) & 0x7fffffu;
    }
    float f = uintBitsToFloat(0x3f800000u | m);
    if (f > 1.41421354) {
        f *= 0.5;
        e += 1;
    }
    float t = f - 1.0, s = t / (2.0 + t), z = s * s;
    float a = z * (0.666666667 + z * (0.4 + z * (0.285714286 + z * 0.222222222)));
    precise float l = t - s * (t - a);
    float fe = float(e);
    precise float v = fe * 0.693145751953125 + (l + fe * 1.42860677e-06);
    return v;
}

// ---- sin, cos -----------------------------------------------------------------------------------

// Word j of the bits of 2/pi after the binary point, most significant first
// (1408 bits: enough for f64's largest exponent); 0 for j < 0, the integer
// part. A switch rather than a constant array: lavapipe took seconds to
// compile a dynamically indexed one.
uint vkl_two_over_pi(int j) {
    switch (j) {
    case 0: return 0xA2F9836Eu;
    case 1: return 0x4E441529u;
    case 2: return 0xFC2757D1u;
    case 3: return 0xF534DDC0u;
    case 4: return 0xDB629599u;
    case 5: return 0x3C439041u;
    case 6: return 0xFE5163ABu;
    case 7: return 0xDEBBC561u;
    case 8: return 0xB7246E3Au;
    case 9: return 0x424DD2E0u;
    case 10: return 0x06492EEAu;
    case 11: return 0x09D1921Cu;
    case 12: return 0xFE1DEB1Cu;
    case 13: return 0xB129A73Eu;
    case 14: return 0xE88235F5u;
    case 15: return 0x2EBB4484u;
    case 16: return 0xE99C7026u;
    case 17: return 0xB45F7E41u;
    case 18: return 0x3991D639u;
    case 19: return 0x835339F4u;
    case 20: return 0x9C845F8Bu;
    case 21: return 0xBDF9283Bu;
    case 22: return 0x1FF897FFu;
    case 23: return 0xDE05980Fu;
    case 24: return 0xEF2F118Bu;
    case 25: return 0x5A0A6D1Fu;
    case 26: return 0x6D367ECFu;
    case 27: return 0x27CB09B7u;
    case 28: return 0x4F463F66u;
    case 29: return 0x9E5FEA2Du;
    case 30: return 0x7527BAC7u;
    case 31: return 0xEBE5F17Bu;
    case 32: return 0x3D0739F7u;
    case 33: return 0x8A5292EAu;
    case 34: return 0x6BFB5FB1u;
    case 35: return 0x1F8D5D08u;
    case 36: return 0x56033046u;
    case 37: return 0xFC7B6BABu;
    case 38: return 0xF0CFBC20u;
    case 39: return 0x9AF4361Du;
    case 40: return 0xA9E39161u;
    case 41: return 0x5EE61B08u;
    case 42: return 0x6599855Fu;
    case 43: return 0x14A06840u;
    default: return 0u;
    }
}
// acc + a * b + carry: acc gets the low word, carry the high (never overflows)
void vkl_mac(uint a, uint b, inout uint acc, inout uint carry) {
    uint hi, lo, c1, c2;
    umulExtended(a, b, hi, lo);
    acc = uaddCarry(acc, lo, c1);
    acc = uaddCarry(acc, carry, c2);
    carry = hi + c1 + c2;
}
uint vkl_word6(uint p0, uint p1, uint p2, uint p3, uint p4, uint p5, int i) {
    return i == 0 ? p0 : i == 1 ? p1 : i == 2 ? p2 : i == 3 ? p3 : i == 4 ? p4 : p5;
}
// bits [pos, pos + 32) of the 192-bit number p5..p0 (pos <= 160)
uint vkl_bits6(uint p0, uint p1, uint p2, uint p3, uint p4, uint p5, int pos) {
    int i = pos >> 5, o = pos & 31;
    uint lo = vkl_word6(p0, p1, p2, p3, p4, p5, i);
    return o == 0 ? lo : (lo >> uint(o)) | (vkl_word6(p0, p1, p2, p3, p4, p5, i + 1) << uint(32 - o));
}

// Argument reduction by pi/2 in exact integer arithmetic (Payne-Hanek):
// x = m 2^sh (m < 2^53, -32 <= sh <= 1200) times 2/pi is 4n + q + f, f in
// [-1/2, 1/2). m times 128 bits of 2/pi gives q and |f| to 96 bits (frac.x
// the top word; the bits of 2/pi left out change f by < 2^-70); neg: f < 0.
// Bits of 2/pi before 2^-(sh-1) only add multiples of 4: up to sh = 1 the
// window is 2/pi's first 128 bits (constants), beyond it starts at bit
// sh - 1 (a table lookup), which puts the binary point at bit 126.
//
// Why not Cody-Waite (x - k p1 - k p2 - ..., pi/2 in parts): it is exact
// only while each k p_i is, which without a fused multiply-add (Vulkan does
// not promise one) needs parts of 24 - log2(k) bits: five 8-bit parts up to
// 1e5, and even then near multiples of pi/2 (sin(x) ~ 1e-9) f32 results
// were off by 1e4 ulp (measured, tests/vulkan/test_vk_ew_math.c). Four
// 32x32 multiplies (eight for f64) do it exactly.
uint vkl_pio2_frac(uvec2 m, int sh, out uvec3 frac, out bool neg) {
    uint w0 = 0xA2F9836Eu, w1 = 0x4E441529u, w2 = 0xFC2757D1u, w3 = 0xF534DDC0u;
    int pt = 128 - sh; // the binary point of m * window
    if (sh > 1) {
        int b = sh - 2, j = b >> 5, o = b & 31;
        uint t0 = vkl_two_over_pi(j), t1 = vkl_two_over_pi(j + 1), t2 = vkl_two_over_pi(j + 2),
             t3 = vkl_two_over_pi(j + 3), t4 = vkl_two_over_pi(j + 4);
        w0 = o == 0 ? t0 : (t0 << uint(o)) | (t1 >> uint(32 - o));
        w1 = o == 0 ? t1 : (t1 << uint(o)) | (t2 >> uint(32 - o));
        w2 = o == 0 ? t2 : (t2 << uint(o)) | (t3 >> uint(32 - o));
        w3 = o == 0 ? t3 : (t3 << uint(o)) | (t4 >> uint(32 - o));
        pt = 126;
    }
    uint p0 = 0u, p1 = 0u, p2 = 0u, p3 = 0u, p4 = 0u, p5 = 0u, c = 0u;
    vkl_mac(m.x, w3, p0, c);
    vkl_mac(m.x, w2, p1, c);
    vkl_mac(m.x, w1, p2, c);
    vkl_mac(m.x, w0, p3, c);
    p4 = c;
    c = 0u;
    vkl_mac(m.y, w3, p1, c);
    vkl_mac(m.y, w2, p2, c);
    vkl_mac(m.y, w1, p3, c);
    vkl_mac(m.y, w0, p4, c);
    p5 = c;
    uint q = vkl_bits6(p0, p1, p2, p3, p4, p5, pt) & 3u;
    frac = uvec3(vkl_bits6(p0, p1, p2, p3, p4, p5, pt - 32), vkl_bits6(p0, p1, p2, p3, p4, p5, pt - 64),
                 vkl_bits6(p0, p1, p2, p3, p4, p5, pt - 96));
    neg = (frac.x >> 31) != 0u;
    if (neg) { // f - 1: the 96-bit fraction's two's complement is |f|
        q = (q + 1u) & 3u;
        uint cy;
        frac.z = uaddCarry(~frac.z, 1u, cy);
        frac.y = uaddCarry(~frac.y, cy, cy);
        frac.x = ~frac.x + cy;
    }
    return q;
}

// a * b = p + e exactly (Dekker's product: no fused multiply-add needed);
// a and b split at 12 bits by masking
float vkl_two_prod(float a, float b, out float e) {
    precise float ah = uintBitsToFloat(floatBitsToUint(a) & 0xfffff000u), al = a - ah;
    precise float bh = uintBitsToFloat(floatBitsToUint(b) & 0xfffff000u), bl = b - bh;
    precise float p = a * b;
    precise float err = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
    e = err;
    return p;
}

// x >= 0 finite: x = q pi/2 + r + lo (mod 2 pi), |r| <= ~pi/4 and lo below
// r's last place: |f| as two 24-bit floats times pi/2 as two floats.
float vkl_reduce_pio2(float x, out uint q, out float lo) {
    lo = 0.0;
    q = 0u;
    if (x <= 0.785398163) return x;
    uint u = floatBitsToUint(x);
    uvec3 f;
    bool neg;
    q = vkl_pio2_frac(uvec2((u & 0x7fffffu) | 0x800000u, 0u), int(u >> 23) - 150, f, neg);
    // |f| = f 2^-96, normalized so that f.x's top bit is set; a float is
    // never within 2^-64 of k pi/2 (f32's closest approaches are ~2^-30)
    int lead = f.x != 0u ? 31 - findMSB(f.x) : f.y != 0u ? 63 - findMSB(f.y) : f.z != 0u ? 95 - findMSB(f.z) : 96;
    if (lead > 64) return 0.0;
    int s = lead;
    for (int k = 0; k < 2 && s >= 32; k++) {
        f = uvec3(f.y, f.z, 0u);
        s -= 32;
    }
    if (s > 0) f = uvec3((f.x << uint(s)) | (f.y >> uint(32 - s)), (f.y << uint(s)) | (f.z >> uint(32 - s)), f.z << uint(s));
    float fh = float(f.x & 0xffffff00u) * vkl_pow2i(-32 - lead); // the top 24 bits, exactly
    float fl = float(((f.x & 0xffu) << 16) | (f.y >> 16)) * vkl_pow2i(-56 - lead); // the next 24
    float pe, ph = vkl_two_prod(fh, 1.57079637, pe);
    precise float l = pe + (fh * -4.37113883e-08 + fl * 1.57079637);
    precise float r = ph + l;
    precise float rl = l - (r - ph);
    lo = neg ? -rl : rl;
    return neg ? -r : r;
}

// sin(r + lo) ~ sin(r) + lo cos(r), cos(r + lo) ~ cos(r) - lo sin(r): lo is
// below r's last place, so cos(r) ~ 1 - r^2/2 and sin(r) ~ r are enough
float vkl_sin_poly(float r, float lo) {
    float z = r * r;
    return r + (lo * (1.0 - 0.5 * z) + r * z * (-0.166666523 + z * (0.00833202247 + z * -0.000194970751)));
}
float vkl_cos_poly(float r, float lo) {
    float z = r * r;
    return (1.0 - 0.5 * z) + (z * z * (0.0416666418 + z * (-0.00138871791 + z * 2.44171260e-05)) - lo * r);
}
// sin x, or cos x = sin(x + pi/2): one reduction, one of the two polynomials
float vkl_sincos(float x, bool is_cos) {
    if (isnan(x) || isinf(x)) return vkl_nan();
    uint q;
    float lo, r = vkl_reduce_pio2(abs(x), q, lo);
    if (is_cos) q += 1u;
    float v = (q & 1u) != 0u ? vkl_cos_poly(r, lo) : vkl_sin_poly(r, lo);
    if ((q & 2u) != 0u) v = -v;
    return x < 0.0 && !is_cos ? -v : v;
}
float vkl_sin(float x) { return vkl_sincos(x, false); }
float vkl_cos(float x) { return vkl_sincos(x, true); }

// ---- tanh, erf ---------------------------------------------------------------------------------

float vkl_tanh(float x) {
    float a = abs(x);
    if (isnan(x)) return x;
    if (a < 0.55) {
        float z = x * x;
        return x + x * z * (-0.333333164 + z * (0.133325651 + z * (-0.0538502969 + z * (0.0210641362 + z * -0.00626436807))));
    }
    float t = a >= 9.01 ? 1.0 : 1.0 - 2.0 / (vkl_exp(2.0 * a) + 1.0);
    return x < 0.0 ? -t : t;
}

// |x| < 1: x P(x^2); 1 <= |x| < 4: 1 - erfc, erfc = exp(-x^2) R(1/x), with
// x^2 split as xh^2 (exact: xh keeps 12 bits) + (x - xh)(x + xh) so the
// exponent's rounding does not become erfc's relative error (e^-x^2 =
// e^-xh^2 (1 + l + l^2/2 + l^3/6), l = (xh - x)(x + xh), |l| < 2^-7); beyond 4
// erf is 1 in f32.
float vkl_erf(float x) {
    float a = abs(x);
    if (isnan(x)) return x;
    if (a < 1.0) {
        float z = x * x;
        return x * (1.12837911 + z * (-0.37612319 + z * (0.112801306 + z * (-0.0267099496 + z * (0.00491602346 + z * -0.000562539615)))));
    }
    if (a >= 4.0) return x < 0.0 ? -1.0 : 1.0;
    float u = 1.0 / a;
    float r = 0.000114669296 + u * (0.561885715 + u * (0.0196039155 + u * (-0.371693611 + u * (0.218765482 + u * (0.259326607 + u * (-0.561503887 + u * (0.456214011 + u * (-0.187195152 + u * 0.0320658349))))))));
    float ah = uintBitsToFloat(floatBitsToUint(a) & 0xfffff000u);
    precise float l = (ah - a) * (a + ah);
    float erfc = vkl_exp(-ah * ah) * (1.0 + l * (1.0 + l * (0.5 + l * 0.166666667))) * r;
    float v = 1.0 - erfc;
    return x < 0.0 ? -v : v;
}

// ---- pow -----------------------------------------------------------------------------------------

// C's powf: exact special cases; an integral exponent up to 2^10 by
// squaring (x^2 is x*x, correctly rounded); otherwise exp(y log|x|), whose
// relative error grows with |y log x| (~1e-7 per unit).
float vkl_pow(float x, float y) {
    if (y == 0.0 || x == 1.0) return 1.0;
    if (isnan(x) || isnan(y)) return vkl_nan();
    bool yint = y == trunc(y), yodd = yint && abs(y) < 16777216.0 && (int(abs(y)) & 1) != 0;
    if (isinf(y)) {
        float a = abs(x);
        if (a == 1.0) return 1.0;
        return (a < 1.0) == (y > 0.0) ? 0.0 : vkl_inf();
    }
    bool xneg = (floatBitsToUint(x) >> 31) != 0u; // -0 included
    if (x == 0.0) return y > 0.0 ? (xneg && yodd ? -0.0 : 0.0) : (xneg && yodd ? -vkl_inf() : vkl_inf());
    if (x < 0.0 && !yint) return vkl_nan();
    float r;
    if (yint && abs(y) <= 1024.0) {
        float b = abs(x);
        uint n = uint(abs(y));
        r = 1.0;
        while (n != 0u) {
            if ((n & 1u) != 0u) r *= b;
            b *= b;
            n >>= 1;
        }
        if (y < 0.0) r = 1.0 / r;
    } else {
        r = vkl_exp(y * vkl_log(abs(x)));
    }
    return xneg && yodd ? -r : r;
}

#ifdef VKL_F64
// ---- double precision -----------------------------------------------------------------------------

double vkl_nan_d() { return packDouble2x32(uvec2(0u, 0x7ff80000u)); }
double vkl_inf_d() { return packDouble2x32(uvec2(0u, 0x7ff00000u)); }
double vkl_pow2i_d(int k) { return packDouble2x32(uvec2(0u, uint(k + 1023) << 20)); } // k in [-1022, 1023]
bool vkl_isnan_d(double x) { return x != x; }

double vkl_exp_d(double x) {
    if (vkl_isnan_d(x)) return x;
    if (x > 709.782712893384LF) return vkl_inf_d();
    if (x < -745.1332191019412LF) return 0.0LF;
    double k = roundEven(x * 1.4426950408889634LF);
    precise double r = (x - k * 6.93147180369123816490e-01LF) - k * 1.90821492927058770002e-10LF;
    double p = 1.0LF / 6227020800.0LF; // Taylor to r^13: |r| <= 0.347, the rest is below 1e-17
    p = p * r + 1.0LF / 479001600.0LF;
    p = p * r + 1.0LF / 39916800.0LF;
    p = p * r + 1.0LF / 3628800.0LF;
    p = p * r + 1.0LF / 362880.0LF;
    p = p * r + 1.0LF / 40320.0LF;
    p = p * r + 1.0LF / 5040.0LF;
    p = p * r + 1.0LF / 720.0LF;
    p = p * r + 1.0LF / 120.0LF;
    p = p * r + 1.0LF / 24.0LF;
    p = p * r + 1.0LF / 6.0LF;
    p = p * r + 0.5LF;
    p = 1.0LF + (r + r * r * p);
    int ki = int(k), k1 = ki / 2;
    return p * vkl_pow2i_d(k1) * vkl_pow2i_d(ki - k1);
}

double vkl_log_d(double x) {
    uvec2 u = unpackDouble2x32(x);
    if (vkl_isnan_d(x) || ((u.y >> 31) != 0u && ((u.y & 0x7fffffffu) | u.x) != 0u)) return vkl_nan_d();
    if (((u.y & 0x7fffffffu) | u.x) == 0u) return -vkl_inf_d();
    if (u.y == 0x7ff00000u && u.x == 0u) return x;
    int e = int(u.y >> 20) - 1023;
    uvec2 m = uvec2(u.x, u.y & 0xfffffu);
    if (e == -1023) { // subnormal
        int msb = vkl_l_msb(m);
        e = msb - 1074;
        m = vkl_l_shl(m, uint(52 - msb));
        m.y &= 0xfffffu;
    }
    double f = packDouble2x32(uvec2(m.x, m.y | 0x3ff00000u));
    if (f > 1.4142135623730951LF) {
        f *= 0.5LF;
        e += 1;
    }
    double t = f - 1.0LF, s = t / (2.0LF + t), z = s * s;
    double a = 2.0LF / 23.0LF; // 2 atanh(s) = 2s + 2s z (1/3 + z/5 + ...): to z^11, s <= 0.172
    a = a * z + 2.0LF / 21.0LF;
    a = a * z + 2.0LF / 19.0LF;
    a = a * z + 2.0LF / 17.0LF;
    a = a * z + 2.0LF / 15.0LF;
    a = a * z + 2.0LF / 13.0LF;
    a = a * z + 2.0LF / 11.0LF;
    a = a * z + 2.0LF / 9.0LF;
    a = a * z + 2.0LF / 7.0LF;
    a = a * z + 2.0LF / 5.0LF;
    a = a * z + 2.0LF / 3.0LF;
    precise double l = t - s * (t - z * a);
    double fe = double(e);
    precise double v = fe * 6.93147180369123816490e-01LF + (l + fe * 1.90821492927058770002e-10LF);
    return v;
}

double vkl_reduce_pio2_d(double x, out uint q) {
    if (x < 1647099.0LF) { // k < 2^20: k times each 33-bit part of pi/2 is exact
        double k = roundEven(x * 0.6366197723675814LF);
        q = uint(k) & 3u;
        precise double r = ((x - k * 1.5707963267341256LF) - k * 6.077100506303966e-11LF) - k * 2.0222662487959506e-21LF;
        return r;
    }
    uvec2 u = unpackDouble2x32(x);
    uvec3 f;
    bool neg;
    q = vkl_pio2_frac(uvec2(u.x, (u.y & 0xfffffu) | 0x100000u), int(u.y >> 20) - 1075, f, neg);
    double r = ((double(f.z) * 2.3283064365386963e-10LF + double(f.y)) * 2.3283064365386963e-10LF + double(f.x)) *
               2.3283064365386963e-10LF * 1.5707963267948966LF;
    return neg ? -r : r;
}
double vkl_sin_poly_d(double r) { // Taylor to r^17, |r| <= ~pi/4
    double z = r * r, p = -1.0LF / 355687428096000.0LF;
    p = p * z + 1.0LF / 1307674368000.0LF;
    p = p * z - 1.0LF / 6227020800.0LF;
    p = p * z + 1.0LF / 39916800.0LF;
    p = p * z - 1.0LF / 362880.0LF;
    p = p * z + 1.0LF / 5040.0LF;
    p = p * z - 1.0LF / 120.0LF;
    p = p * z + 1.0LF / 6.0LF;
    return r - r * z * p;
}
double vkl_cos_poly_d(double r) { // Taylor to r^18
    double z = r * r, p = -1.0LF / 6402373705728000.0LF;
    p = p * z + 1.0LF / 20922789888000.0LF;
    p = p * z - 1.0LF / 87178291200.0LF;
    p = p * z + 1.0LF / 479001600.0LF;
    p = p * z - 1.0LF / 3628800.0LF;
    p = p * z + 1.0LF / 40320.0LF;
    p = p * z - 1.0LF / 720.0LF;
    p = p * z + 1.0LF / 24.0LF;
    return (1.0LF - 0.5LF * z) + z * z * p;
}
double vkl_sincos_d(double x, bool is_cos) {
    if (vkl_isnan_d(x) || abs(x) == vkl_inf_d()) return vkl_nan_d();
    uint q;
    double r = vkl_reduce_pio2_d(abs(x), q);
    if (is_cos) q += 1u;
    double v = (q & 1u) != 0u ? vkl_cos_poly_d(r) : vkl_sin_poly_d(r);
    if ((q & 2u) != 0u) v = -v;
    return x < 0.0LF && !is_cos ? -v : v;
}

// e^x - 1 for |x| <= 1.1, Taylor to x^20 (no cancellation: the terms fall)
double vkl_expm1_small_d(double x) {
    double p = 1.0LF / 2432902008176640000.0LF;
    double f = 2432902008176640000.0LF;
    for (int n = 19; n >= 1; n--) {
        f /= double(n + 1);
        p = p * x + 1.0LF / f;
    }
    return p * x;
}
double vkl_tanh_d(double x) {
    double a = abs(x);
    if (vkl_isnan_d(x)) return x;
    if (a < 0.55LF) {
        double e = vkl_expm1_small_d(2.0LF * x);
        return e / (e + 2.0LF);
    }
    double t = a >= 19.1LF ? 1.0LF : 1.0LF - 2.0LF / (vkl_exp_d(2.0LF * a) + 1.0LF);
    return x < 0.0LF ? -t : t;
}
// e^(-a^2) without the rounding of a^2 in the exponent: a = ah + (a - ah),
// ah with 26 bits so ah^2 is exact, e^l for l = (ah - a)(a + ah), |l| < 2^-19,
// as 1 + l + l^2/2
double vkl_exp_negsq_d(double a) {
    uvec2 u = unpackDouble2x32(a);
    double ah = packDouble2x32(uvec2(u.x & 0xf8000000u, u.y));
    precise double l = (ah - a) * (a + ah);
    return vkl_exp_d(-ah * ah) * (1.0LF + l * (1.0LF + 0.5LF * l));
}
// |x| < 1.5: erf = 2/sqrt(pi) e^(-x^2) sum x (2x^2)^n / (1 3 5 ... (2n+1)), all
// terms positive; 1.5 <= |x| < 6: 1 - erfc from erfc's continued fraction
// (120 levels: 5e-16 at 1.5, better beyond); from 6 on, 1.
double vkl_erf_d(double x) {
    double a = abs(x);
    if (vkl_isnan_d(x)) return x;
    if (a >= 6.0LF) return x < 0.0LF ? -1.0LF : 1.0LF;
    double e = vkl_exp_negsq_d(a), v;
    if (a < 1.5LF) {
        double z2 = 2.0LF * a * a, t = a, s = a;
        for (int n = 1; n < 80 && t > s * 1e-17LF; n++) {
            t *= z2 / double(2 * n + 1);
            s += t;
        }
        v = 1.1283791670955126LF * e * s;
    } else {
        double k = a;
        for (int n = 120; n >= 1; n--) k = a + double(n) * 0.5LF / k;
        v = 1.0LF - e * 0.5641895835477563LF / k;
    }
    return x < 0.0LF ? -v : v;
}

double vkl_pow_d(double x, double y) {
    if (y == 0.0LF || x == 1.0LF) return 1.0LF;
    if (vkl_isnan_d(x) || vkl_isnan_d(y)) return vkl_nan_d();
    bool yint = y == trunc(y), yodd = yint && abs(y) < 9007199254740992.0LF && mod(abs(y), 2.0LF) == 1.0LF;
    if (abs(y) == vkl_inf_d()) {
        double a = abs(x);
        if (a == 1.0LF) return 1.0LF;
        return (a < 1.0LF) == (y > 0.0LF) ? 0.0LF : vkl_inf_d();
    }
    bool xneg = (unpackDouble2x32(x).y >> 31) != 0u;
    if (x == 0.0LF) return y > 0.0LF ? (xneg && yodd ? -0.0LF : 0.0LF) : (xneg && yodd ? -vkl_inf_d() : vkl_inf_d());
    if (x < 0.0LF && !yint) return vkl_nan_d();
    double r;
    if (yint && abs(y) <= 1024.0LF) {
        double b = abs(x);
        uint n = uint(abs(y));
        r = 1.0LF;
        while (n != 0u) {
            if ((n & 1u) != 0u) r *= b;
            b *= b;
            n >>= 1;
        }
        if (y < 0.0LF) r = 1.0LF / r;
    } else {
        r = vkl_exp_d(y * vkl_log_d(abs(x)));
    }
    return xneg && yodd ? -r : r;
}
#endif

#endif
