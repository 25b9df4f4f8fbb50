/* Inside the quantize pass: one f32 matrix converted to W^T [N, K] in a
 * weight format, row stripes spread over a thread pool, the source released
 * and progress reported as it goes. */
#ifndef VKL_PASSES_QUANTIZE_CONVERT_H
#define VKL_PASSES_QUANTIZE_CONVERT_H

#include "../pool.h"
#include "quantize.h"

typedef struct vkl_qconv_job {
    const float *src; /* [N, K] when nk, else [K, N] (read transposed) */
    bool nk;
    int64_t K, N;
    vkl_dtype dt;     /* F16, BF16 or a block format */
    uint32_t group;   /* block formats */
    size_t row_bytes; /* of one output row */
    uint8_t *dst;     /* N * row_bytes */
} vkl_qconv_job;

typedef struct vkl_qconv {
    vkl_context *ctx;
    vkl_pool *pool;
    const vkl_quantize_options *opt; /* never NULL */
    uint64_t done, total;            /* source bytes converted so far, of at most total */
} vkl_qconv;

/* Converts the job. VKL_ERR_UNSUPPORTED / VKL_ERR_INVALID_ARGUMENT: the
 * values do not fit the format (the message names the first failing rows, the
 * same whatever the thread count); VKL_ERR_STATE: the progress callback asked
 * to stop. dst's bytes do not depend on the thread count. */
vkl_status vkl_qconv_run(vkl_qconv *c, const vkl_qconv_job *job);

#endif
