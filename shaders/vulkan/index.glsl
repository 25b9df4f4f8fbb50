// Index tensors of the indexing kernels (backends/vulkan/vk_indexing.c):
// i32 or i64 (IDT, a dtype code of tensor.glsl), element j of word array
// BUF, for an axis of n (1 <= n < 2^31) elements. Negative indices count
// from the end. An index outside [-n, n) is an error ref reports from the
// data; a kernel cannot, so the gathers clamp it into [0, n) (never reading
// out of bounds) and ScatterND skips its update.
#ifndef VKL_INDEX_GLSL
#define VKL_INDEX_GLSL

// the index as int, or a value outside [-n, n) when it needs 64 bits
int vkl_index_value(uint lo, uint hi, uint idt, uint n) {
    const int v = int(lo);
    if (idt == VKL_DT_I64 && hi != (v < 0 ? 0xffffffffu : 0u)) return int(n);
    return v;
}
#define VKL_INDEX_RAW(BUF, IDT, j, n) \
    vkl_index_value((IDT) == VKL_DT_I64 ? BUF[2u * (j)] : BUF[j], (IDT) == VKL_DT_I64 ? BUF[2u * (j) + 1u] : 0u, IDT, n)

uint vkl_index_clamp(int v, uint n) {
    if (v < 0) v += int(n);
    return uint(clamp(v, 0, int(n) - 1));
}
// element j as a position in [0, n)
#define VKL_INDEX_AT(BUF, IDT, j, n) vkl_index_clamp(VKL_INDEX_RAW(BUF, IDT, j, n), n)

#endif
