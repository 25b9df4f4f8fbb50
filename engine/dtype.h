/* Element types: plain ONNX-style types the graph computes in, and the
 * block-quantized weight formats (engine/quant defines their bytes). */
#ifndef VKL_DTYPE_H
#define VKL_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Values are stored in .vkm files: append only, never renumber. */
typedef enum vkl_dtype {
    VKL_DTYPE_INVALID = 0,
    VKL_DTYPE_F32 = 1,
    VKL_DTYPE_F16 = 2,
    VKL_DTYPE_BF16 = 3,
    VKL_DTYPE_F64 = 4,
    VKL_DTYPE_I64 = 5,
    VKL_DTYPE_I32 = 6,
    VKL_DTYPE_I16 = 7,
    VKL_DTYPE_I8 = 8,
    VKL_DTYPE_U8 = 9,
    VKL_DTYPE_U16 = 10,
    VKL_DTYPE_U32 = 11,
    VKL_DTYPE_U64 = 12,
    VKL_DTYPE_BOOL = 13,     /* one byte, 0 or 1 */
    VKL_DTYPE_FP8_E4M3 = 14, /* one byte, OCP e4m3fn */
    VKL_DTYPE_FP8_E5M2 = 15,
    /* Block-quantized weights, grouped along the last (reduction) axis. */
    VKL_DTYPE_Q_E0M4 = 32,
    VKL_DTYPE_Q_INT4 = 33,
    VKL_DTYPE_Q_INT8 = 34,
    VKL_DTYPE_COUNT_
} vkl_dtype;

const char *vkl_dtype_name(vkl_dtype t);                 /* "f32"; "?" if invalid */
bool vkl_dtype_from_name(const char *name, vkl_dtype *out);
bool vkl_dtype_valid(vkl_dtype t);
bool vkl_dtype_is_float(vkl_dtype t);   /* f32 f16 bf16 f64 fp8 */
bool vkl_dtype_is_int(vkl_dtype t);     /* signed or unsigned integer, not bool */
bool vkl_dtype_is_quantized(vkl_dtype t);
/* Bytes per element of a plain type (0 for quantized types). */
size_t vkl_dtype_size(vkl_dtype t);

/* Scalar conversions used by every CPU-side path (ref backend, quant, tests). */
float vkl_f16_to_f32(uint16_t h);
uint16_t vkl_f32_to_f16(float f);  /* round to nearest even, inf/nan kept */
float vkl_bf16_to_f32(uint16_t h);
uint16_t vkl_f32_to_bf16(float f); /* round to nearest even */

#endif
