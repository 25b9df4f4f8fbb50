/* The check_finite session option's verdict: when a step's logits hold a
 * NaN or infinity, name the node where non-finite values first appeared
 * (backend execute_checked) instead of leaving the sampler to complain
 * about token 0 with no culprit. */
#ifndef VKL_NONFINITE_H
#define VKL_NONFINITE_H

#include "backend.h"

/* VKL_OK when logits[0..n) are all finite; otherwise VKL_ERR_INVALID_ARGUMENT
 * with a message naming the first non-finite logit and, from `first`, the
 * first node, output tensor and element that held one. */
vkl_status vkl_nonfinite_check_logits(vkl_context *ctx, const vkl_graph *g, const vkl_nonfinite *first,
                                      const float *logits, size_t n);

#endif
