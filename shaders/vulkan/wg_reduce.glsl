// Workgroup reductions shared by the nn kernels (norms, softmax, ReduceXxx,
// ArgMax/TopK). VKL_WG_REDUCE(T, NAME, COMBINE, SG_OP) defines
//   T NAME(T v)
// which every invocation of the workgroup calls in uniform control flow
// and which returns COMBINE over all invocations' v to each of them; one
// shared array of WG (a specialization constant of the including shader,
// = local_size_x, a power of two) per instance. Two builds:
//   VKL_SUBGROUP (the _sg variants, where the device has subgroup
//     arithmetic): SG_OP within each subgroup (subgroupAdd, subgroupMax...),
//     then one partial per subgroup through shared memory. Nothing assumes
//     a subgroup size: gl_NumSubgroups partials, however many there are.
//   otherwise: a tree in shared memory, log2(WG) barriers.
// Include first: it declares the subgroup extensions.
#ifndef VKL_WG_REDUCE_GLSL
#define VKL_WG_REDUCE_GLSL

#ifdef VKL_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

#define VKL_WG_REDUCE(T, NAME, COMBINE, SG_OP)                                        \
    shared T NAME##_part[WG];                                                         \
    T NAME(T v) {                                                                     \
        v = SG_OP(v);                                                                 \
        if (subgroupElect()) NAME##_part[gl_SubgroupID] = v;                          \
        barrier();                                                                    \
        T r_ = NAME##_part[0];                                                        \
        for (uint s_ = 1u; s_ < gl_NumSubgroups; s_++) r_ = COMBINE(r_, NAME##_part[s_]); \
        barrier(); /* the next call rewrites the partials */                          \
        return r_;                                                                    \
    }
#else
#define VKL_WG_REDUCE(T, NAME, COMBINE, SG_OP)                                        \
    shared T NAME##_part[WG];                                                         \
    T NAME(T v) {                                                                     \
        const uint t_ = gl_LocalInvocationIndex;                                      \
        NAME##_part[t_] = v;                                                          \
        barrier();                                                                    \
        for (uint h_ = WG / 2u; h_ > 0u; h_ >>= 1) {                                  \
            if (t_ < h_) NAME##_part[t_] = COMBINE(NAME##_part[t_], NAME##_part[t_ + h_]); \
            barrier();                                                                \
        }                                                                             \
        const T r_ = NAME##_part[0];                                                  \
        barrier();                                                                    \
        return r_;                                                                    \
    }
#endif

#define VKL_COMBINE_ADD(a, b) ((a) + (b))
#define VKL_COMBINE_MAX(a, b) max((a), (b))

#endif
