// The quantized activations the _dot matvecs read (quant_act_int8.comp
// writes them, quant_matvec_dot.glsl reads them; backends/vulkan/
// vk_quant_matmul.c places them in the executable's scratch buffer).
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
