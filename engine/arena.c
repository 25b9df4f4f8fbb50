/* Bump allocator: blocks of at least 64 KiB, larger requests get their own. */
#include <string.h>

#include "arena.h"

struct vkl_arena_block {
    vkl_arena_block *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

#define ARENA_BLOCK_MIN (64u * 1024u)

void vkl_arena_init(vkl_arena *a, vkl_context *ctx) {
    a->ctx = ctx;
    a->head = NULL;
}

void vkl_arena_release(vkl_arena *a) {
    vkl_arena_block *b = a->head;
    while (b) {
        vkl_arena_block *next = b->next;
        vkl_free(a->ctx, b);
        b = next;
    }
    a->head = NULL;
}

void *vkl_arena_alloc(vkl_arena *a, size_t size) {
    size_t need = (size + 15u) & ~(size_t)15u;
    if (need < size) {
        vkl_fail(a->ctx, VKL_ERR_OUT_OF_MEMORY, "arena allocation of %zu bytes overflows", size);
        return NULL;
    }
    vkl_arena_block *b = a->head;
    if (!b || b->cap - b->used < need) {
        size_t cap = need > ARENA_BLOCK_MIN ? need : ARENA_BLOCK_MIN;
        size_t total;
        if (!vkl_add_size(sizeof(vkl_arena_block), cap, &total)) {
            vkl_fail(a->ctx, VKL_ERR_OUT_OF_MEMORY, "arena allocation of %zu bytes overflows", size);
            return NULL;
        }
        b = vkl_malloc(a->ctx, total);
        if (!b) return NULL;
        b->cap = cap;
        b->used = 0;
        b->next = a->head;
        a->head = b;
    }
    void *p = b->data + b->used;
    b->used += need;
    return p;
}

void *vkl_arena_memdup(vkl_arena *a, const void *src, size_t size) {
    void *p = vkl_arena_alloc(a, size);
    if (p && size) memcpy(p, src, size);
    return p;
}

char *vkl_arena_strdup(vkl_arena *a, const char *s) {
    return vkl_arena_memdup(a, s, strlen(s) + 1);
}
