// The matvecs' reductions across invocations through shared memory, for
// quant_matvec.glsl (a workgroup per team) and quant_matvec_dot.glsl (teams
// of TEAM invocations): NR sums an invocation, in acc[0 .. NR). The
// including file declares WG, NR and shared float partial[NR * WG].

#ifdef VKL_SUBGROUP
// After it, partial[r * WG + i] holds subgroup i's sum of row r (one
// barrier); qmv_subgroups_total(r) adds them in subgroup order.
#define QMV_SUBGROUP_SUMS(acc)                                                \
    {                                                                         \
        for (uint r_ = 0u; r_ < NR; r_++) {                                   \
            const float s_ = subgroupAdd(acc[r_]);                            \
            if (subgroupElect()) partial[r_ * WG + gl_SubgroupID] = s_;       \
        }                                                                     \
        barrier();                                                            \
    }

float qmv_subgroups_total(uint r) {
    float s = 0.0;
    for (uint i = 0u; i < gl_NumSubgroups; i++) s += partial[r * WG + i];
    return s;
}
#endif

// A tree over each team of SPAN invocations (a power of two dividing WG;
// lane = tid % SPAN): after it, row r's team sum is at
// partial[r * WG + tid - lane], the team's first slot. Every invocation of
// the workgroup must reach it (barriers).
#define QMV_TREE_SUM(acc, tid, lane, SPAN)                                            \
    {                                                                                 \
        for (uint r_ = 0u; r_ < NR; r_++) partial[r_ * WG + (tid)] = acc[r_];         \
        barrier();                                                                    \
        for (uint h_ = (SPAN) / 2u; h_ > 0u; h_ >>= 1) {                              \
            if ((lane) < h_)                                                          \
                for (uint r_ = 0u; r_ < NR; r_++)                                     \
                    partial[r_ * WG + (tid)] += partial[r_ * WG + (tid) + h_];        \
            barrier();                                                                \
        }                                                                             \
    }
