/* A host allocator hook that counts every allocation (malloc and realloc
 * alike): the tests that promise "no allocation per step" install it in
 * their context and compare counts around the steps. */
#ifndef VKL_TEST_ALLOC_COUNTER_H
#define VKL_TEST_ALLOC_COUNTER_H

#include <stdlib.h>

#include "vkllm.h"

typedef struct alloc_counter {
    size_t allocs;
} alloc_counter;

static void *alloc_counter_malloc(void *u, size_t n) {
    ((alloc_counter *)u)->allocs++;
    return malloc(n);
}
static void *alloc_counter_realloc(void *u, void *p, size_t n) {
    ((alloc_counter *)u)->allocs++;
    return realloc(p, n);
}
static void alloc_counter_free(void *u, void *p) {
    (void)u;
    free(p);
}

/* The hook counting into c. */
static inline vkl_allocator alloc_counter_hook(alloc_counter *c) {
    return (vkl_allocator){c, alloc_counter_malloc, alloc_counter_realloc, alloc_counter_free};
}

#endif
