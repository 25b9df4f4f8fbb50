#version 450
// The matrix units' peak (backends/vulkan/vk_peak.c): each subgroup keeps
// one fp16 A and B fragment and 4 independent f32 accumulators of the
// device's shape (CM_M x CM_N x CM_K, specialization constants, as the
// GEMM's) in registers and multiplies-adds them `iters` times: 8 CM_M CM_N
// CM_K FLOPs per iteration. A and B are built from push constants, the
// accumulators stored at the end, so nothing folds or is dead.
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128;
layout(constant_id = 1) const uint CM_M = 16;
layout(constant_id = 2) const uint CM_N = 16;
layout(constant_id = 3) const uint CM_K = 16;

layout(set = 0, binding = 0, std430) writeonly buffer BufY { float y[]; };

layout(push_constant) uniform Push {
    uint iters;
    float m, c;
} pc;

void main() {
    const fcoopmatNV<16, gl_ScopeSubgroup, CM_M, CM_K> a = fcoopmatNV<16, gl_ScopeSubgroup, CM_M, CM_K>(float16_t(pc.m));
    const fcoopmatNV<16, gl_ScopeSubgroup, CM_K, CM_N> b = fcoopmatNV<16, gl_ScopeSubgroup, CM_K, CM_N>(float16_t(pc.c));
    fcoopmatNV<32, gl_ScopeSubgroup, CM_M, CM_N> acc[4];
    for (uint i = 0u; i < 4u; i++) acc[i] = fcoopmatNV<32, gl_ScopeSubgroup, CM_M, CM_N>(float(i));
    for (uint it = 0u; it < pc.iters; it++)
        for (uint i = 0u; i < 4u; i++) acc[i] = coopMatMulAddNV(a, b, acc[i]);
    const uint sg = gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID;
    for (uint i = 0u; i < 4u; i++) coopMatStoreNV(acc[i], y, (sg * 4u + i) * CM_M * CM_N, CM_N, false);
}
