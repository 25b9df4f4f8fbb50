#version 450
// Second half of split-K flash decoding (attn_decode.comp or
// attn_decode_sg.comp wrote the partials): workgroup (x, y, z) = (row r of
// KV head g's R rows, g, batch b) merges that row's NSPLIT chunks
// (attn_merge.glsl, which attn_decode.comp's fold shares). Written in the
// output's dtype, column pairs per invocation (one word of a 16-bit output).
//
// The _codes builds (VKL_QA_CODES; _bytes: VKL_QA_BYTES too) are the merge
// folded into the integer-dot matvecs' activation quantizer (vk_fuse.c's
// ATTN_CODES: the output's only readers are such matvecs, o_proj): the row's
// DV values are not stored but kept in shared memory and quantized, step by
// step, into quant_act.glsl's codes at binding 1 with quant_act_int8.comp's
// own arithmetic (qa_quantize_step) on the very f32 values the plain build
// stores, so the matvecs' results are the unfused ones bit for bit. The
// codes' rows are the output read flat as rows of qa_cols (o_proj's K), so
// DV values at a multiple of DV are whole steps of one row when qa_cols is
// a multiple of DV and DV of the step (vk_attention.c checks). f32 only.
#include "kv_common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint DV = 64;
layout(constant_id = 2) const uint ODT = 1;      // output dtype
layout(constant_id = 3) const uint MAXSPLIT = 64; // chunk weights kept in shared memory

layout(set = 0, binding = 0, std430) readonly buffer Part_t { REAL part[]; };
layout(set = 0, binding = 1, std430) writeonly buffer Ob_t { uint Ob[]; };
VKL_STORE_PAIR(Ob)

layout(push_constant) uniform Push {
    uint Hq, Hkv, S, R, nsplit;
#ifdef VKL_QA_CODES
    uint qa_cols;    // elements per row of codes
    uint qa_steps;   // steps per row of codes (qa_cols / QV_CHUNK)
    uint qa_stride;  // uvec4s per row; the codes are bound whole
#endif
} pc;

#ifdef VKL_QA_CODES
layout(constant_id = 4) const bool QA_RESIDUAL = true;  // quant_act_int8.comp's DOT_RESIDUAL
#ifdef VKL_QA_BYTES
#define QV_CHUNK 16u
#else
#define QV_CHUNK 32u
#endif
#include "quant_common.glsl"
void qa_put(uint w, uint v) { Ob[w] = v; }
#define VKL_QA_WRITE
#include "quant_act.glsl"
#endif

const uint MG_ROWS = 1u;
const uint MG_MAXSPLIT = MAXSPLIT;
const uint MG_CB = 4u;
uint g_base, g_step, g_obase; // this workgroup's row: its chunk 0, the chunks' stride, its output
uint merge_part(uint r, uint c) { return g_base + c * g_step; }
uint merge_out(uint r) { return g_obase; }
#include "attn_merge.glsl"

void main() {
    const uint r = gl_WorkGroupID.x, g = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
    const uint stride = DV + 2u;
    g_base = ((b * pc.Hkv + g) * pc.nsplit * pc.R + r) * stride;
    g_step = pc.R * stride;
    const uint G = pc.Hq / pc.Hkv, h = g * G + r / pc.S, i = r % pc.S;
    g_obase = ((b * pc.Hq + h) * pc.S + i) * DV;
    merge(1u, pc.nsplit);
}
