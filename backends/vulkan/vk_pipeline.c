/* Compute pipelines from the SPIR-V embedded at build time (never compiled
 * on the device). Every kernel binds only storage buffers, at bindings
 * 0..n-1 of set 0, and up to VKL_VK_PUSH_BYTES of push constants: one
 * descriptor set layout and pipeline layout per binding count serve all.
 * Pipelines are made on first use per (shader, specialization constants) —
 * workgroup and tile shapes are specialization constants, sizes are push
 * constants, so a new shape never makes a new pipeline — and kept for the
 * device's life. The VkPipelineCache starts from the file on disk and is
 * saved back at close (vk_pipeline_cache.c), so a driver compiles once. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vk_internal.h"
#include "vk_shaders.h"

static const vkl_vk_spirv *spirv_find(const char *name) {
    for (size_t i = 0; i < vkl_vk_spirv_count; i++)
        if (!strcmp(vkl_vk_spirv_table[i].name, name)) return &vkl_vk_spirv_table[i];
    return NULL;
}

vkl_status vkl_vk_pipelines_init(vkl_backend_device *dev) {
    /* options.pipeline_cache_file names the file itself, ahead of the
     * directory option */
    const char *named = dev->cache_file_option;
    vkl_status st = VKL_OK;
    if (named && *named) {
        if (!(dev->cache_path = vkl_strdup(dev->own_ctx, named))) st = VKL_ERR_OUT_OF_MEMORY;
    } else {
        st = vkl_vk_cache_path(dev, dev->cache_dir_option, &dev->cache_path);
    }
    size_t size = 0;
    void *data = !st && dev->cache_path ? vkl_vk_cache_read(dev, named && *named, &size) : NULL;
    VkPipelineCacheCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
                                    .initialDataSize = size,
                                    .pInitialData = data};
    if (!st) st = VKL_VKD(dev, vkCreatePipelineCache, (dev->device, &ci, NULL, &dev->cache));
    vkl_free(dev->ctx, data);
    return st;
}

void vkl_vk_pipelines_destroy(vkl_backend_device *dev) {
    if (dev->cache && dev->cache_path) vkl_vk_cache_save(dev);
    for (uint32_t i = 0; i < dev->n_pipelines; i++)
        dev->vk.vkDestroyPipeline(dev->device, dev->pipelines[i].pipeline, NULL);
    for (uint32_t n = 0; n <= VKL_VK_MAX_BINDINGS; n++) {
        if (dev->pipe_layout[n]) dev->vk.vkDestroyPipelineLayout(dev->device, dev->pipe_layout[n], NULL);
        if (dev->set_layout[n]) dev->vk.vkDestroyDescriptorSetLayout(dev->device, dev->set_layout[n], NULL);
        dev->pipe_layout[n] = VK_NULL_HANDLE;
        dev->set_layout[n] = VK_NULL_HANDLE;
    }
    if (dev->cache) dev->vk.vkDestroyPipelineCache(dev->device, dev->cache, NULL);
    dev->cache = VK_NULL_HANDLE;
    vkl_free(dev->own_ctx, dev->pipelines);
    vkl_free(dev->own_ctx, dev->cache_path);
    dev->pipelines = NULL;
    dev->cache_path = NULL;
    dev->n_pipelines = dev->cap_pipelines = 0;
}

/* Layouts for n storage buffers, made on first use. */
static vkl_status layouts(vkl_backend_device *dev, uint32_t n) {
    if (dev->pipe_layout[n]) return VKL_OK;
    VkDescriptorSetLayoutBinding b[VKL_VK_MAX_BINDINGS];
    for (uint32_t i = 0; i < n; i++)
        b[i] = (VkDescriptorSetLayoutBinding){.binding = i,
                                              .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                              .descriptorCount = 1,
                                              .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo si = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                          .bindingCount = n,
                                          .pBindings = b};
    vkl_status st = VKL_VKD(dev, vkCreateDescriptorSetLayout, (dev->device, &si, NULL, &dev->set_layout[n]));
    if (st) return st;
    VkPushConstantRange pc = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = VKL_VK_PUSH_BYTES};
    VkPipelineLayoutCreateInfo li = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                     .setLayoutCount = 1,
                                     .pSetLayouts = &dev->set_layout[n],
                                     .pushConstantRangeCount = 1,
                                     .pPushConstantRanges = &pc};
    return VKL_VKD(dev, vkCreatePipelineLayout, (dev->device, &li, NULL, &dev->pipe_layout[n]));
}

/* The pipeline list lives as long as the device, so it grows through open()'s
 * allocator whichever session's prepare makes a pipeline; a failure is
 * reported to that session (dev->ctx). */
static vkl_status grow_pipelines(vkl_backend_device *dev) {
    uint32_t cap = dev->cap_pipelines ? 2 * dev->cap_pipelines : 16;
    size_t bytes;
    const vkl_allocator *a = &dev->own_ctx->alloc;
    vkl_vk_pipeline *p = cap > dev->cap_pipelines && vkl_mul_size(cap, sizeof(*p), &bytes)
                             ? a->realloc(a->user, dev->pipelines, bytes)
                             : NULL;
    if (!p) return vkl_fail(dev->ctx, VKL_ERR_OUT_OF_MEMORY, "vulkan: out of host memory growing the pipeline list "
                            "to %u", cap);
    dev->pipelines = p;
    dev->cap_pipelines = cap;
    return VKL_OK;
}

/* options.pipeline_stats: the driver's statistics of each executable of
 * the new pipeline, one log line (registers, shared memory, instructions:
 * what decides how many workgroups share a compute unit). */
static void log_statistics(vkl_backend_device *dev, VkPipeline pipe, const char *shader, const uint32_t *spec,
                           uint32_t n_spec) {
    if (!dev->vk.vkGetPipelineExecutablePropertiesKHR || !dev->vk.vkGetPipelineExecutableStatisticsKHR) return;
    VkPipelineInfoKHR pi = {.sType = VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR, .pipeline = pipe};
    VkPipelineExecutablePropertiesKHR props[4];
    uint32_t n = 4;
    for (uint32_t e = 0; e < n; e++) props[e] = (VkPipelineExecutablePropertiesKHR){
        .sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR};
    VkResult r = dev->vk.vkGetPipelineExecutablePropertiesKHR(dev->device, &pi, &n, props);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) return;
    for (uint32_t e = 0; e < n; e++) {
        char line[1024];
        int at = snprintf(line, sizeof(line), "vulkan: pipeline %s [", shader);
        for (uint32_t i = 0; i < n_spec && at > 0 && (size_t)at < sizeof(line); i++)
            at += snprintf(line + at, sizeof(line) - (size_t)at, "%s%u", i ? " " : "", spec[i]);
        VkPipelineExecutableStatisticKHR st[32];
        uint32_t ns = 32;
        for (uint32_t i = 0; i < ns; i++)
            st[i] = (VkPipelineExecutableStatisticKHR){.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR};
        VkPipelineExecutableInfoKHR ei = {.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR,
                                          .pipeline = pipe, .executableIndex = e};
        r = dev->vk.vkGetPipelineExecutableStatisticsKHR(dev->device, &ei, &ns, st);
        if (r != VK_SUCCESS && r != VK_INCOMPLETE) ns = 0;
        if (at > 0 && (size_t)at < sizeof(line)) at += snprintf(line + at, sizeof(line) - (size_t)at, "] %s:", props[e].name);
        for (uint32_t i = 0; i < ns && at > 0 && (size_t)at < sizeof(line); i++) {
            const VkPipelineExecutableStatisticKHR *s = &st[i];
            switch (s->format) {
            case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
                at += snprintf(line + at, sizeof(line) - (size_t)at, " %s %s;", s->name, s->value.b32 ? "yes" : "no");
                break;
            case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
                at += snprintf(line + at, sizeof(line) - (size_t)at, " %s %lld;", s->name, (long long)s->value.i64);
                break;
            case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
                at += snprintf(line + at, sizeof(line) - (size_t)at, " %s %llu;", s->name,
                               (unsigned long long)s->value.u64);
                break;
            default:
                at += snprintf(line + at, sizeof(line) - (size_t)at, " %s %g;", s->name, s->value.f64);
            }
        }
        vkl_log(dev->ctx, VKL_LOG_INFO, "%s", line);
    }
}

vkl_status vkl_vk_pipeline_get(vkl_backend_device *dev, const char *shader, uint32_t n_bindings,
                               const uint32_t *spec, uint32_t n_spec, const vkl_vk_pipeline **out) {
    *out = NULL;
    if (n_bindings > VKL_VK_MAX_BINDINGS || n_spec > VKL_VK_MAX_SPEC)
        return vkl_fail(dev->ctx, VKL_ERR_INTERNAL, "vulkan: %s: %u bindings, %u specialization constants", shader,
                        n_bindings, n_spec);
    for (uint32_t i = 0; i < dev->n_pipelines; i++) {
        const vkl_vk_pipeline *p = &dev->pipelines[i];
        if (!strcmp(p->shader, shader) && p->n_bindings == n_bindings && p->n_spec == n_spec &&
            (!n_spec || !memcmp(p->spec, spec, n_spec * sizeof(uint32_t)))) {
            *out = p;
            return VKL_OK;
        }
    }
    const vkl_vk_spirv *code = spirv_find(shader);
    if (!code) return vkl_fail(dev->ctx, VKL_ERR_INTERNAL, "vulkan: no embedded shader named '%s'", shader);
    vkl_status st;
    if (dev->n_pipelines == dev->cap_pipelines && (st = grow_pipelines(dev))) return st;
    if ((st = layouts(dev, n_bindings))) return st;
    VkShaderModuleCreateInfo mi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                   .codeSize = code->n_words * sizeof(uint32_t),
                                   .pCode = code->words};
    VkShaderModule module;
    if ((st = VKL_VKD(dev, vkCreateShaderModule, (dev->device, &mi, NULL, &module)))) return st;
    VkSpecializationMapEntry map[VKL_VK_MAX_SPEC];
    for (uint32_t i = 0; i < n_spec; i++)
        map[i] = (VkSpecializationMapEntry){.constantID = i, .offset = i * 4, .size = 4};
    VkSpecializationInfo si = {.mapEntryCount = n_spec, .pMapEntries = map, .dataSize = n_spec * 4, .pData = spec};
    VkComputePipelineCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
                                      .flags = dev->pipeline_stats ? VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR : 0,
                                      .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                                                .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                                                .module = module,
                                                .pName = "main",
                                                .pSpecializationInfo = n_spec ? &si : NULL},
                                      .layout = dev->pipe_layout[n_bindings]};
    vkl_vk_pipeline *p = &dev->pipelines[dev->n_pipelines];
    memset(p, 0, sizeof(*p));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    st = VKL_VKD(dev, vkCreateComputePipelines, (dev->device, dev->cache, 1, &ci, NULL, &p->pipeline));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    dev->pipeline_seconds += (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    dev->work.pipelines++;
    dev->vk.vkDestroyShaderModule(dev->device, module, NULL);
    if (st) return vkl_fail_prefix(dev->ctx, st, "shader %s", shader);
    if (dev->pipeline_stats) log_statistics(dev, p->pipeline, code->name, spec, n_spec);
    p->shader = code->name;
    p->n_bindings = n_bindings;
    p->n_spec = n_spec;
    if (n_spec) memcpy(p->spec, spec, n_spec * sizeof(uint32_t));
    dev->n_pipelines++;
    *out = p;
    return VKL_OK;
}

vkl_status vkl_vk_set_once(vkl_backend_device *dev, uint32_t n, const VkDescriptorBufferInfo *bufs,
                           VkDescriptorPool *pool, VkDescriptorSet *set) {
    *pool = VK_NULL_HANDLE;
    vkl_status st = n <= VKL_VK_MAX_BINDINGS ? layouts(dev, n)
                                             : vkl_fail(dev->ctx, VKL_ERR_INTERNAL, "vulkan: %u bindings", n);
    VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, n ? n : 1};
    VkDescriptorPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                     .maxSets = 1,
                                     .poolSizeCount = 1,
                                     .pPoolSizes = &size};
    if (!st) st = VKL_VKD(dev, vkCreateDescriptorPool, (dev->device, &pi, NULL, pool));
    VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                      .descriptorPool = *pool,
                                      .descriptorSetCount = 1,
                                      .pSetLayouts = &dev->set_layout[n]};
    if (!st) st = VKL_VKD(dev, vkAllocateDescriptorSets, (dev->device, &ai, set));
    VkWriteDescriptorSet wr[VKL_VK_MAX_BINDINGS];
    for (uint32_t j = 0; !st && j < n; j++)
        wr[j] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                       .dstSet = *set,
                                       .dstBinding = j,
                                       .descriptorCount = 1,
                                       .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                       .pBufferInfo = &bufs[j]};
    if (!st) dev->vk.vkUpdateDescriptorSets(dev->device, n, wr, 0, NULL);
    dev->work.descriptor_writes++;
    return st;
}

void vkl_vk_cmd_dispatch(vkl_backend_device *dev, VkCommandBuffer cmd, VkPipeline pipe, uint32_t n_bind,
                         VkDescriptorSet set, const uint32_t *push, uint32_t n_push, const uint32_t groups[3]) {
    dev->vk.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
    dev->vk.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, dev->pipe_layout[n_bind], 0, 1, &set, 0,
                                    NULL);
    if (n_push)
        dev->vk.vkCmdPushConstants(cmd, dev->pipe_layout[n_bind], VK_SHADER_STAGE_COMPUTE_BIT, 0, n_push * 4, push);
    dev->vk.vkCmdDispatch(cmd, groups[0], groups[1], groups[2]);
}
