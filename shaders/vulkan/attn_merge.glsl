// The merge of split-K decoding's chunks, shared by attn_combine.comp (one
// row per workgroup) and attn_decode.comp's fold (its block's MG_ROWS rows at
// once, so the last workgroup waits on memory twice, not twice per row).
// Per row: M = max m_c over chunks that saw a key, w_c = exp(m_c - M),
// out = sum_c w_c o_c / sum_c w_c l_c, or zeros when no chunk saw a key.
// With one row (MG_ROWS 1) the arithmetic and its order are
// attn_combine.comp's as it was before the fold, so either path gives the
// same bits for the same chunks.
//
// The includer defines REAL (kv_common.glsl), WG, DV, ODT, MG_ROWS,
// MG_MAXSPLIT, MG_CB (chunks whose loads an invocation has in flight; which
// chunks a lane sums depends on it, so the bits do), a readable part[], Ob
// with Ob_store2 (VKL_STORE_PAIR), and
//   uint merge_part(uint r, uint c)  where row r's chunk c starts (m, l, o[DV])
//   uint merge_out(uint r)           where row r's output starts
// and, for the _codes builds (VKL_QA_CODES), quant_act.glsl's writer, pc's
// qa_cols, qa_steps, qa_stride and QA_RESIDUAL (attn_combine.comp says how
// those builds keep the unfused bits).

const uint MG_NPAIR = (DV + 1u) / 2u;
const uint MG_RP = MG_ROWS * MG_NPAIR; // (row, column pair) items
// Chunk lanes: with fewer items than invocations, WG / MG_RP lanes each sum
// a share of the chunks for every item, then lane 0 adds the lanes' sums in
// lane order.
const uint MG_L = MG_RP >= WG ? 1u : WG / MG_RP;

shared REAL sMw[MG_ROWS * MG_MAXSPLIT];  // each chunk's m, then its weight
shared REAL sMl[MG_ROWS * MG_MAXSPLIT];  // each chunk's l
shared REAL sMinv[MG_ROWS];
shared REAL sMx[MG_L > 1u ? MG_L * MG_RP : 1u], sMy[MG_L > 1u ? MG_L * MG_RP : 1u];
#ifdef VKL_QA_CODES
shared float sMc[MG_ROWS * DV];          // the rows' values, as the plain build stores them
#endif

// columns e, e + 1 (if two) of row r: stored, or kept for the codes
void merge_store2(uint r, uint e, REAL v0, REAL v1, bool two) {
#ifdef VKL_QA_CODES
    sMc[r * DV + e] = float(v0);
    if (two) sMc[r * DV + e + 1u] = float(v1);
#else
    Ob_store2(ODT, merge_out(r) + e, v0, v1, two);
#endif
}

// Rows 0 .. nr - 1 (nr <= MG_ROWS) of nsplit chunks (<= MG_MAXSPLIT); all
// invocations of the workgroup call it.
void merge(uint nr, uint nsplit) {
    const uint tid = gl_LocalInvocationID.x;
    const uint lane = MG_L > 1u ? tid / MG_RP : 0u, item = MG_L > 1u ? tid % MG_RP : tid;
    // this invocation's first batch of columns, loaded beside (m, l) rather
    // than after the weights: every chunk wrote its partials (zeros where it
    // saw nothing), so they are loaded whatever the weight, which the sums
    // below still test
    REAL v0[2u * MG_CB];
    {
        const uint r = item / MG_NPAIR, col = 2u * (item % MG_NPAIR);
        for (uint u = 0u; u < MG_CB; u++) {
            const uint c = lane * MG_CB + u;
            const bool use = r < nr && lane < MG_L && c < nsplit;
            const uint at = use ? merge_part(r, c) : 0u;
            v0[2u * u] = use ? part[at + 2u + col] : REAL(0);
            v0[2u * u + 1u] = use && col + 1u < DV ? part[at + 3u + col] : REAL(0);
        }
    }
    // every chunk's (m, l) read at once, one invocation each (one invocation
    // reading them in a loop waited on memory once per chunk)
    for (uint idx = tid; idx < nr * nsplit; idx += WG) {
        const uint r = idx / nsplit, c = idx % nsplit, at = merge_part(r, c);
        sMw[r * MG_MAXSPLIT + c] = part[at];
        sMl[r * MG_MAXSPLIT + c] = part[at + 1u];
    }
    barrier();
    for (uint r = tid; r < nr; r += WG) {
        const uint w0 = r * MG_MAXSPLIT;
        bool any = false;
        REAL M = REAL(0);
        for (uint c = 0u; c < nsplit; c++) {
            if (sMl[w0 + c] == REAL(0)) continue; // l = 0: the chunk saw no key
            M = any ? max(M, sMw[w0 + c]) : sMw[w0 + c];
            any = true;
        }
        REAL L_ = REAL(0);
        for (uint c = 0u; c < nsplit; c++) {
            const REAL l = sMl[w0 + c];
            const REAL w = l == REAL(0) ? REAL(0) : vkl_exp(sMw[w0 + c] - M);
            sMw[w0 + c] = w;
            L_ += w * l;
        }
        sMinv[r] = any ? REAL(1) / L_ : REAL(0);
    }
    barrier();
    for (uint it = item; it < MG_RP; it += MG_L > 1u ? MG_RP : WG) {
        const uint r = it / MG_NPAIR, col = 2u * (it % MG_NPAIR), w0 = r * MG_MAXSPLIT;
        if (r >= nr) break;
        REAL a0 = REAL(0), a1 = REAL(0);
        // this lane's chunks: MG_CB at a time, every MG_L-th batch; their
        // columns loaded before any is added
        for (uint c0 = lane * MG_CB; lane < MG_L && c0 < nsplit; c0 += MG_L * MG_CB) {
            REAL v[2u * MG_CB];
            if (it == item && c0 == lane * MG_CB) v = v0;
            else for (uint u = 0u; u < MG_CB; u++) {
                const uint c = c0 + u;
                // a chunk that saw nothing holds zeros; skip it all the same
                const bool use = c < nsplit && sMw[w0 + c] != REAL(0);
                const uint at = use ? merge_part(r, c) : 0u;
                v[2u * u] = use ? part[at + 2u + col] : REAL(0);
                v[2u * u + 1u] = use && col + 1u < DV ? part[at + 3u + col] : REAL(0);
            }
            for (uint u = 0u; u < MG_CB && c0 + u < nsplit; u++) {
                const REAL w = sMw[w0 + c0 + u];
                if (w == REAL(0)) continue;
                a0 += w * v[2u * u];
                if (col + 1u < DV) a1 += w * v[2u * u + 1u];
            }
        }
        if (MG_L > 1u) {
            if (lane < MG_L) {
                sMx[lane * MG_RP + it] = a0;
                sMy[lane * MG_RP + it] = a1;
            }
        } else {
            merge_store2(r, col, a0 * sMinv[r], a1 * sMinv[r], col + 1u < DV);
        }
    }
    if (MG_L > 1u) {
        barrier();
        const uint r = item / MG_NPAIR, col = 2u * (item % MG_NPAIR);
        if (lane == 0u && r < nr) {
            REAL a0 = REAL(0), a1 = REAL(0);
            for (uint l = 0u; l < MG_L; l++) {
                a0 += sMx[l * MG_RP + item];
                a1 += sMy[l * MG_RP + item];
            }
            merge_store2(r, col, a0 * sMinv[r], a1 * sMinv[r], col + 1u < DV);
        }
    }
#ifdef VKL_QA_CODES
    barrier();
    // row r's DV values are steps c0 .. of codes row m
    for (uint idx = tid; idx < nr * (DV / QV_CHUNK); idx += WG) {
        const uint r = idx / (DV / QV_CHUNK), c = idx % (DV / QV_CHUNK), obase = merge_out(r);
        const uint m = obase / pc.qa_cols, c0 = obase % pc.qa_cols / QV_CHUNK;
        vec4 x[QA_VEC];
        for (uint i = 0u; i < QA_VEC; i++) {
            const uint e = r * DV + (c * QA_VEC + i) * 4u;
            x[i] = vec4(sMc[e], sMc[e + 1u], sMc[e + 2u], sMc[e + 3u]);
        }
        qa_quantize_step(m * pc.qa_stride, pc.qa_steps, c0 + c, x, QA_RESIDUAL);
    }
#endif
}
