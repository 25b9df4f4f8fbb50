// The quantized activations the _dot matvecs read (quant_act_int8.comp
// writes them, or norm.comp's _codes builds from an RMSNorm's output;
// quant_matvec_dot.glsl reads them; backends/vulkan/vk_quant_matmul.c
// places them in the executable's scratch buffer).
// Per step of QV_CHUNK activations (one 16-byte load of W: 32 codes of a
// 4-bit format, 16 of int8), x ~ scale * (ia * 254 + ib) with the residual
// (DOT_RESIDUAL), x ~ scale * ia without (quant_act_int8.comp says how).
// One row of A is, in 32-bit words, with S steps of V = QV_CHUNK / 4 words:
//   ia    S * V words: the codes, four to a word in the byte order the
//         format's codes sit in their words (vkl_nibble_order for the
//         4-bit formats, element order for int8), step c at c * V;
//   ib    S * V words, the residual codes in the same order (DOT_RESIDUAL
//         only; absent otherwise);
//   meta  S uvec2s: the step's f32 scale (sa / 254 with the residual, sa
//         without) and its code sum isum (isa * 254 + isb, or isa), which
//         the 4-bit formats' offset term needs;
// then padding to a whole uvec4, so every row starts at a uvec4. V is 4 or
// 8, so ia, ib and meta start at uvec4s too.
const uint QA_VEC4 = QV_CHUNK / 16u;  // uvec4s of codes per step

uint qa_ib(uint row, uint steps) { return row + steps * QA_VEC4; }  // in uvec4s
// the meta of step 0, in uvec2s
uint qa_meta(uint row, uint steps, bool residual) { return 2u * (row + steps * QA_VEC4 * (residual ? 2u : 1u)); }

#ifdef VKL_QA_WRITE
// The writers' side: one step's QV_CHUNK activations x to codes, stored
// through qa_put(word, value) (the including shader's; words of the row's
// binding). Per step: sa = max|x| / 127, ia = round(x / sa) (|ia| <= 127)
// and, with the residual, the rounding left over as a second code
// ib = round((x / sa - ia) * 254) (|ib| <= 127), so x ~ sa (ia + ib / 254)
// to within sa / 508: about 16 bits per step instead of 8. The matvec then
// gets each step's sum_k x'_k w0_k exactly (x' the rounded activations):
// docs/vulkan.md, "Integer dot products", has the bound.
const uint QA_VEC = QV_CHUNK / 4u;  // vec4s of activations, and words of codes, per step

// the step's values in the byte order of the format's codes: the 4-bit
// formats' nibble order, or int8's element order (VKL_QA_BYTES)
vec4 qa_step_bytes(vec4 x[QA_VEC], uint i) {
#ifdef VKL_QA_BYTES
    return x[i];
#else
    return vkl_nibble_order(x, i);
#endif
}

int qa_sum_i8x4(uint w) {
    const int v = int(w);
    return (bitfieldExtract(v, 0, 8) + bitfieldExtract(v, 8, 8)) + (bitfieldExtract(v, 16, 8) + bitfieldExtract(v, 24, 8));
}

// One word's four values (already in the step's byte order) to its code
// word ia and, with the residual, ib: the one arithmetic every writer uses.
void qa_word_codes(vec4 x, float to_code, bool residual, out uint ia, out uint ib) {
    const vec4 v = x * to_code;  // in [-127, 127]
    // round to nearest (precise: a compiler may not fold the add and subtract away)
    precise vec4 q = (v + VKL_ROUND_MAGIC) - VKL_ROUND_MAGIC;
    ia = vkl_pack_i8x4(q);
    ib = residual ? vkl_pack_i8x4((v - q) * 254.0) : 0u;  // |v - q| <= 1/2: codes within +-127
}

float qa_to_code(float amax) { return amax > 1e-30 ? 127.0 / amax : 0.0; }  // below: a block of zeros

// The step's meta words: sa and the code sum. An infinite activation makes
// sa infinite and the row's sums NaN, not 0 (a NaN one propagates only
// where max does: GLSL leaves max with NaN undefined).
void qa_put_meta(uint row, uint steps, uint c, float amax, int isa, int isb, bool residual) {
    const float sa = amax * (1.0 / 127.0);
    // |isa| <= 32 * 127: isa * 254 + isb is exact in int32
    const uint meta = 2u * (qa_meta(row, steps, residual) + c);
    qa_put(meta, floatBitsToUint(residual ? sa * (1.0 / 254.0) : sa));
    qa_put(meta + 1u, uint(residual ? isa * 254 + isb : isa));
}

// row: the row's first uvec4 in the binding; c: the step
void qa_quantize_step(uint row, uint steps, uint c, vec4 x[QA_VEC], bool residual) {
    float amax = 0.0;
    for (uint i = 0u; i < QA_VEC; i++) {
        const vec4 ax = abs(x[i]);
        amax = max(amax, max(max(ax.x, ax.y), max(ax.z, ax.w)));
    }
    const float to_code = qa_to_code(amax);
    int isa = 0, isb = 0;
    for (uint i = 0u; i < QA_VEC; i++) {
        uint ia, ib;
        qa_word_codes(qa_step_bytes(x, i), to_code, residual, ia, ib);
        isa += qa_sum_i8x4(ia);
        qa_put(4u * (row + c * QA_VEC4) + i, ia);
        if (residual) {
            isb += qa_sum_i8x4(ib);
            qa_put(4u * (qa_ib(row, steps) + c * QA_VEC4) + i, ib);
        }
    }
    qa_put_meta(row, steps, c, amax, isa, isb, residual);
}

// Word i of a step holds these of the step's QV_CHUNK elements, in its byte
// order (qa_step_bytes): a writer with a value per element can quantize a
// word per invocation (norm.comp's _codes builds).
uvec4 qa_word_elems(uint i) {
#ifdef VKL_QA_BYTES
    return 4u * i + uvec4(0u, 1u, 2u, 3u);
#else
    return 8u * (i >> 1) + 2u * (i & 1u) + uvec4(0u, 4u, 1u, 5u);
#endif
}
#endif
