/* Bump allocator for objects that live as long as their owner (graph
 * strings, attribute arrays). Freed all at once. */
#ifndef VKL_ARENA_H
#define VKL_ARENA_H

#include <stddef.h>

#include "context.h"

typedef struct vkl_arena_block vkl_arena_block;

typedef struct vkl_arena {
    vkl_context *ctx;
    vkl_arena_block *head;
} vkl_arena;

void vkl_arena_init(vkl_arena *a, vkl_context *ctx);
void vkl_arena_release(vkl_arena *a);
/* 16-byte aligned; NULL (error set) on failure. */
void *vkl_arena_alloc(vkl_arena *a, size_t size);
void *vkl_arena_memdup(vkl_arena *a, const void *src, size_t size);
char *vkl_arena_strdup(vkl_arena *a, const char *s);

#endif
