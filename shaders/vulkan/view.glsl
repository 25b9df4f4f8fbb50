// The index math of strided views (backends/vulkan/vk_view.c): push
// constants hold the element count, VKL_VIEW_RANK dims (outermost first)
// and, per source, VKL_VIEW_RANK element strides; an output element's linear
// index maps to each source's element index. Include after declaring
//   layout(push_constant) uniform Push { uint count; uint dims[VKL_VIEW_RANK];
//                                        uint strides[N][VKL_VIEW_RANK]; ... } pc;
#ifndef VKL_VIEW_GLSL
#define VKL_VIEW_GLSL

#define VKL_VIEW_RANK 6

// source s's element index of output element i
#define VKL_VIEW_SRC_INDEX(pc, s, i, out)                           \
    {                                                               \
        uint rem_ = (i);                                            \
        out = 0u;                                                   \
        for (int d_ = VKL_VIEW_RANK - 1; d_ >= 0; d_--) {           \
            uint n_ = pc.dims[d_];                                  \
            out += (rem_ % n_) * pc.strides[s][d_];                 \
            rem_ /= n_;                                             \
        }                                                           \
    }

#endif
