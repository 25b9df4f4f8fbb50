// Shared by the data-movement and indexing kernels (backends/vulkan/
// vk_copy.c and the recorders that use it): the invocation index of a 1D
// job spread over a 2D grid (maxComputeWorkGroupCount[0] may be as small as
// 65535), and elements of 1, 2 or 4 bytes (ES) read from a word array.
// Tensors are uint[] arrays (tensor.glsl); an 8-byte element moves as two
// 4-byte ones, so ES is never 8 where these are used for plain copies.
#ifndef VKL_MOVE_GLSL
#define VKL_MOVE_GLSL

#define VKL_MOVE_ID(WG) ((gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * (WG) + gl_LocalInvocationID.x)

// field i of its word, in the low 8 * es bits
uint vkl_mv_bits(uint word, uint es, uint i) {
    if (es == 4u) return word;
    uint per = 4u / es;
    return (word >> (8u * es * (i % per))) & (es == 2u ? 0xffffu : 0xffu);
}
// element i (es bytes) of word array BUF
#define VKL_MV_LOAD(BUF, ES, i) vkl_mv_bits(BUF[(i) / (4u / (ES))], ES, i)

#endif
