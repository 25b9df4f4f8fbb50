/* The check behind execute_checked (sessions with check_finite): find the
 * first NaN or infinity in a node's output. Debugging only; never on the
 * path of a plain execute. */
#include <math.h>

#include "../../engine/quant/quant.h"
#include "ref_kernels.h"

bool vkl_ref_first_nonfinite(const vkl_ref_tensor *t, int64_t *index, double *value) {
    const unsigned char *p = t->data;
    for (int64_t i = 0; p && i < t->count; i++) {
        double v;
        switch (t->dtype) {
        case VKL_DTYPE_F32: case VKL_DTYPE_F64: case VKL_DTYPE_F16: case VKL_DTYPE_BF16:
            v = vkl_ref_get_f(t, i);
            break;
        case VKL_DTYPE_FP8_E4M3: v = vkl_fp8_e4m3_to_f32(p[i]); break;
        case VKL_DTYPE_FP8_E5M2: v = vkl_fp8_e5m2_to_f32(p[i]); break;
        default: return false;
        }
        if (!isfinite(v)) {
            *index = i;
            *value = v;
            return true;
        }
    }
    return false;
}
