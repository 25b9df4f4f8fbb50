/* Reader for .npy files (format 1.0/2.0/3.0, little-endian, C order), as
 * numpy.save writes them: the fixtures' reference inputs and outputs. */
#ifndef VKL_NPY_H
#define VKL_NPY_H

#include "run_once.h"

/* Reads `path` into t (data allocated with vkl_malloc). Supported dtypes:
 * <f4 <f8 <f2 <i8 <i4 <i2 |i1 |u1 |b1 <u2 <u4 <u8. Errors name the file and
 * what is wrong (VKL_ERR_FORMAT, VKL_ERR_UNSUPPORTED, VKL_ERR_IO). */
vkl_status vkl_npy_read(vkl_context *ctx, const char *path, vkl_host_tensor *t);
/* Same over bytes in memory (fuzzing); `name` is used in messages. */
vkl_status vkl_npy_parse(vkl_context *ctx, const char *name, const void *bytes, size_t size, vkl_host_tensor *t);

#endif
