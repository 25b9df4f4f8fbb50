/* An app that owns a Vulkan device and keeps its own GPU work going every
 * frame (a compute dispatch whose result it checks exactly), while vkllm
 * generates text on the same device and the same queue (vkllm_vulkan.h).
 * It prints frame times without and with generation, checks every frame,
 * and counts, through the function pointers it hands vkllm, that vkllm
 * created no instance and no device and never waited the device or queue
 * idle. With --separate, vkllm makes its own device (its queue at LOW global
 * priority, or --priority NAME) beside the app's, for comparison.
 *
 * Usage: shared_device MODEL.vkm [--prompt TEXT] [--tokens N] [--frames N]
 *                     [--separate] [--priority low|medium|high|realtime|driver]
 *                     [--validate]
 * Exit status 0 only if every frame's check passed, generation succeeded
 * and (shared mode) vkllm made no instance or device of its own. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vulkan/vulkan.h>

#include "vkllm.h"
#include "vkllm_tokenizer.h"
#include "vkllm_vulkan.h"

/* examples/shaders/frame_work.comp, compiled at build time (glslc -mfmt=c) */
static const uint32_t frame_work_spv[] =
#include "frame_work.spv.inc"
    ;

#define FRAME_ELEMENTS (1u << 16)
#define FRAME_STEPS 512u

/* ---- what vkllm calls, counted ---------------------------------------- */

static PFN_vkGetInstanceProcAddr real_gipa;
static PFN_vkGetDeviceProcAddr real_gdpa;
static PFN_vkCreateInstance real_create_instance;
static PFN_vkCreateDevice real_create_device;
static PFN_vkDeviceWaitIdle real_device_wait_idle;
static PFN_vkQueueWaitIdle real_queue_wait_idle;
static PFN_vkQueueSubmit real_queue_submit;
static atomic_uint n_create_instance, n_create_device, n_wait_idle, n_vkllm_submits;

static VKAPI_ATTR VkResult VKAPI_CALL counted_create_instance(const VkInstanceCreateInfo *i,
                                                              const VkAllocationCallbacks *a, VkInstance *out) {
    n_create_instance++;
    return real_create_instance(i, a, out);
}
static VKAPI_ATTR VkResult VKAPI_CALL counted_create_device(VkPhysicalDevice p, const VkDeviceCreateInfo *i,
                                                            const VkAllocationCallbacks *a, VkDevice *out) {
    n_create_device++;
    return real_create_device(p, i, a, out);
}
static VKAPI_ATTR VkResult VKAPI_CALL counted_device_wait_idle(VkDevice d) {
    n_wait_idle++;
    return real_device_wait_idle(d);
}
static VKAPI_ATTR VkResult VKAPI_CALL counted_queue_wait_idle(VkQueue q) {
    n_wait_idle++;
    return real_queue_wait_idle(q);
}
static VKAPI_ATTR VkResult VKAPI_CALL counted_queue_submit(VkQueue q, uint32_t n, const VkSubmitInfo *s, VkFence f) {
    n_vkllm_submits++;
    return real_queue_submit(q, n, s, f);
}
static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL counted_gdpa(VkDevice d, const char *name) {
    if (!strcmp(name, "vkDeviceWaitIdle")) return (PFN_vkVoidFunction)counted_device_wait_idle;
    if (!strcmp(name, "vkQueueWaitIdle")) return (PFN_vkVoidFunction)counted_queue_wait_idle;
    if (!strcmp(name, "vkQueueSubmit")) return (PFN_vkVoidFunction)counted_queue_submit;
    return real_gdpa(d, name);
}
/* The vkGetInstanceProcAddr handed to vkllm: the loader's, with the calls
 * above counted. */
static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL counted_gipa(VkInstance inst, const char *name) {
    if (!strcmp(name, "vkCreateInstance")) return (PFN_vkVoidFunction)counted_create_instance;
    if (!strcmp(name, "vkCreateDevice")) return (PFN_vkVoidFunction)counted_create_device;
    if (!strcmp(name, "vkGetDeviceProcAddr")) return (PFN_vkVoidFunction)counted_gdpa;
    if (!strcmp(name, "vkDeviceWaitIdle")) return (PFN_vkVoidFunction)counted_device_wait_idle;
    if (!strcmp(name, "vkQueueWaitIdle")) return (PFN_vkVoidFunction)counted_queue_wait_idle;
    if (!strcmp(name, "vkQueueSubmit")) return (PFN_vkVoidFunction)counted_queue_submit;
    return real_gipa(inst, name);
}

/* ---- the app's device and its per-frame work -------------------------- */

typedef struct app {
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    VkPhysicalDevice phys;
    VkDevice device;
    uint32_t family;
    VkQueue queue;
    pthread_mutex_t queue_lock; /* the app's submits and vkllm's */
    VkBuffer buf;
    VkDeviceMemory mem;
    uint32_t *mapped;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipeline pipeline;
    VkDescriptorPool pool;
    VkDescriptorSet set;
    VkCommandPool cmd_pool;
    VkCommandBuffer cmd;
    VkFence fence;
} app;

static atomic_uint validation_messages;

static VKAPI_ATTR VkBool32 VKAPI_CALL on_validation(VkDebugUtilsMessageSeverityFlagBitsEXT sev,
                                                    VkDebugUtilsMessageTypeFlagsEXT type,
                                                    const VkDebugUtilsMessengerCallbackDataEXT *data, void *user) {
    (void)user;
    if (!(type & VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT) || sev < VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT)
        return VK_FALSE;
    validation_messages++;
    fprintf(stderr, "validation: %s\n", data->pMessage);
    return VK_FALSE;
}

static void lock_queue(void *user) { pthread_mutex_lock(user); }
static void unlock_queue(void *user) { pthread_mutex_unlock(user); }

#define VK(call)                                                                                                      \
    do {                                                                                                              \
        VkResult r_ = (call);                                                                                         \
        if (r_ != VK_SUCCESS) {                                                                                       \
            fprintf(stderr, "shared_device: %s failed (VkResult %d)\n", #call, (int)r_);                              \
            return false;                                                                                             \
        }                                                                                                             \
    } while (0)

static int type_rank(VkPhysicalDeviceType t) {
    return t == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU ? 4 : t == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ? 3
         : t == VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU ? 2 : t == VK_PHYSICAL_DEVICE_TYPE_CPU ? 1 : 0;
}

/* Instance (with validation if asked), the best device with a compute
 * queue, and a device with one queue, made the way a renderer would. */
static bool app_device(app *a, bool validate) {
    const char *layer = "VK_LAYER_KHRONOS_validation", *ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    VkApplicationInfo ai = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = "shared_device",
                            .apiVersion = VK_API_VERSION_1_2};
    VkDebugUtilsMessengerCreateInfoEXT mi = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT,
        .pfnUserCallback = on_validation};
    VkInstanceCreateInfo ii = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pNext = validate ? &mi : NULL,
                               .pApplicationInfo = &ai, .enabledLayerCount = validate, .ppEnabledLayerNames = &layer,
                               .enabledExtensionCount = validate, .ppEnabledExtensionNames = &ext};
    VK(vkCreateInstance(&ii, NULL, &a->instance));
    if (validate) {
        PFN_vkCreateDebugUtilsMessengerEXT make =
            (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(a->instance, "vkCreateDebugUtilsMessengerEXT");
        if (make) VK(make(a->instance, &mi, NULL, &a->messenger));
    }
    uint32_t n = 8;
    VkPhysicalDevice all[8];
    VkResult r = vkEnumeratePhysicalDevices(a->instance, &n, all);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) VK(r);
    int best = -1;
    for (uint32_t i = 0; i < n; i++) {
        VkPhysicalDeviceProperties p, q;
        vkGetPhysicalDeviceProperties(all[i], &p);
        if (best >= 0) vkGetPhysicalDeviceProperties(all[best], &q);
        if (p.apiVersion >= VK_API_VERSION_1_1 && (best < 0 || type_rank(p.deviceType) > type_rank(q.deviceType)))
            best = (int)i;
    }
    if (best < 0) {
        fprintf(stderr, "shared_device: no Vulkan 1.1 device\n");
        return false;
    }
    a->phys = all[best];
    uint32_t nf = 16;
    VkQueueFamilyProperties fam[16];
    vkGetPhysicalDeviceQueueFamilyProperties(a->phys, &nf, fam);
    a->family = UINT32_MAX;
    for (uint32_t i = 0; i < nf && a->family == UINT32_MAX; i++)
        if (fam[i].queueFlags & VK_QUEUE_COMPUTE_BIT) a->family = i;
    if (a->family == UINT32_MAX) {
        fprintf(stderr, "shared_device: the device has no compute queue\n");
        return false;
    }
    const float prio = 1.0f;
    VkDeviceQueueCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, .queueFamilyIndex = a->family,
                                  .queueCount = 1, .pQueuePriorities = &prio};
    VkDeviceCreateInfo di = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .queueCreateInfoCount = 1,
                             .pQueueCreateInfos = &qi};
    VK(vkCreateDevice(a->phys, &di, NULL, &a->device));
    vkGetDeviceQueue(a->device, a->family, 0, &a->queue);
    pthread_mutex_init(&a->queue_lock, NULL);
    return true;
}

static bool app_frame_work(app *a) {
    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = FRAME_ELEMENTS * 4,
                             .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT};
    VK(vkCreateBuffer(a->device, &bi, NULL, &a->buf));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(a->device, a->buf, &req);
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(a->phys, &mp);
    const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    uint32_t type = UINT32_MAX;
    for (uint32_t i = 0; i < mp.memoryTypeCount && type == UINT32_MAX; i++)
        if ((req.memoryTypeBits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & want) == want) type = i;
    if (type == UINT32_MAX) return false;
    VkMemoryAllocateInfo ma = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size,
                               .memoryTypeIndex = type};
    VK(vkAllocateMemory(a->device, &ma, NULL, &a->mem));
    VK(vkBindBufferMemory(a->device, a->buf, a->mem, 0));
    VK(vkMapMemory(a->device, a->mem, 0, VK_WHOLE_SIZE, 0, (void **)&a->mapped));
    VkDescriptorSetLayoutBinding b = {.binding = 0, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                      .descriptorCount = 1, .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo si = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                          .bindingCount = 1, .pBindings = &b};
    VK(vkCreateDescriptorSetLayout(a->device, &si, NULL, &a->set_layout));
    VkPushConstantRange pr = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = 12};
    VkPipelineLayoutCreateInfo li = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, .setLayoutCount = 1,
                                     .pSetLayouts = &a->set_layout, .pushConstantRangeCount = 1,
                                     .pPushConstantRanges = &pr};
    VK(vkCreatePipelineLayout(a->device, &li, NULL, &a->layout));
    VkShaderModuleCreateInfo smi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                    .codeSize = sizeof(frame_work_spv), .pCode = frame_work_spv};
    VkShaderModule sm;
    VK(vkCreateShaderModule(a->device, &smi, NULL, &sm));
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = sm, .pName = "main"},
        .layout = a->layout};
    VkResult r = vkCreateComputePipelines(a->device, VK_NULL_HANDLE, 1, &ci, NULL, &a->pipeline);
    vkDestroyShaderModule(a->device, sm, NULL);
    VK(r);
    VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1};
    VkDescriptorPoolCreateInfo dpi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, .maxSets = 1,
                                      .poolSizeCount = 1, .pPoolSizes = &ps};
    VK(vkCreateDescriptorPool(a->device, &dpi, NULL, &a->pool));
    VkDescriptorSetAllocateInfo dai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                       .descriptorPool = a->pool, .descriptorSetCount = 1,
                                       .pSetLayouts = &a->set_layout};
    VK(vkAllocateDescriptorSets(a->device, &dai, &a->set));
    VkDescriptorBufferInfo dbi = {a->buf, 0, VK_WHOLE_SIZE};
    VkWriteDescriptorSet w = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = a->set, .descriptorCount = 1,
                              .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .pBufferInfo = &dbi};
    vkUpdateDescriptorSets(a->device, 1, &w, 0, NULL);
    VkCommandPoolCreateInfo cpi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = a->family};
    VK(vkCreateCommandPool(a->device, &cpi, NULL, &a->cmd_pool));
    VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                       .commandPool = a->cmd_pool, .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                       .commandBufferCount = 1};
    VK(vkAllocateCommandBuffers(a->device, &cai, &a->cmd));
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VK(vkCreateFence(a->device, &fi, NULL, &a->fence));
    return true;
}

static uint32_t expected(uint32_t i, uint32_t frame) {
    uint32_t x = i ^ (frame * 2654435761u);
    for (uint32_t k = 0; k < FRAME_STEPS; k++) x = x * 1664525u + 1013904223u;
    return x;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* One frame: record, submit (under the queue lock), wait for our fence,
 * check every 64th element exactly. *ok = false on a wrong value. */
static bool app_frame(app *a, uint32_t frame, bool *ok) {
    const uint32_t pc[3] = {frame, FRAME_STEPS, FRAME_ELEMENTS};
    VK(vkResetCommandBuffer(a->cmd, 0));
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    VK(vkBeginCommandBuffer(a->cmd, &bi));
    vkCmdBindPipeline(a->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, a->pipeline);
    vkCmdBindDescriptorSets(a->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, a->layout, 0, 1, &a->set, 0, NULL);
    vkCmdPushConstants(a->cmd, a->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(pc), pc);
    vkCmdDispatch(a->cmd, FRAME_ELEMENTS / 64, 1, 1);
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
    vkCmdPipelineBarrier(a->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL,
                         0, NULL);
    VK(vkEndCommandBuffer(a->cmd));
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &a->cmd};
    pthread_mutex_lock(&a->queue_lock);
    VkResult r = vkQueueSubmit(a->queue, 1, &si, a->fence);
    pthread_mutex_unlock(&a->queue_lock);
    VK(r);
    VK(vkWaitForFences(a->device, 1, &a->fence, VK_TRUE, UINT64_MAX));
    VK(vkResetFences(a->device, 1, &a->fence));
    for (uint32_t i = frame % 64; i < FRAME_ELEMENTS; i += 64)
        if (a->mapped[i] != expected(i, frame)) *ok = false;
    return true;
}

static void app_destroy(app *a) {
    if (!a->device) goto instance;
    if (a->fence) vkDestroyFence(a->device, a->fence, NULL);
    if (a->cmd_pool) vkDestroyCommandPool(a->device, a->cmd_pool, NULL);
    if (a->pool) vkDestroyDescriptorPool(a->device, a->pool, NULL);
    if (a->pipeline) vkDestroyPipeline(a->device, a->pipeline, NULL);
    if (a->layout) vkDestroyPipelineLayout(a->device, a->layout, NULL);
    if (a->set_layout) vkDestroyDescriptorSetLayout(a->device, a->set_layout, NULL);
    if (a->buf) vkDestroyBuffer(a->device, a->buf, NULL);
    if (a->mem) vkFreeMemory(a->device, a->mem, NULL);
    vkDestroyDevice(a->device, NULL);
instance:
    if (a->messenger) {
        PFN_vkDestroyDebugUtilsMessengerEXT destroy =
            (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(a->instance, "vkDestroyDebugUtilsMessengerEXT");
        if (destroy) destroy(a->instance, a->messenger, NULL);
    }
    if (a->instance) vkDestroyInstance(a->instance, NULL);
}

/* ---- frame statistics ------------------------------------------------- */

typedef struct frames {
    double ms[4096];
    size_t n;
} frames;

static int by_value(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static void report(const char *what, frames *f) {
    if (!f->n) {
        printf("%-26s no frames\n", what);
        return;
    }
    double sum = 0;
    for (size_t i = 0; i < f->n; i++) sum += f->ms[i];
    qsort(f->ms, f->n, sizeof(double), by_value);
    printf("%-26s %4zu frames: mean %7.2f ms, median %7.2f, p95 %7.2f, max %7.2f\n", what, f->n, sum / f->n,
           f->ms[f->n / 2], f->ms[f->n * 95 / 100], f->ms[f->n - 1]);
}

/* ---- vkllm on a thread of its own ------------------------------------- */

typedef struct generation {
    vkl_session *session;
    const int32_t *prompt;
    size_t n_prompt, max_new;
    int32_t eos;
    int32_t out[512];
    size_t n_out;
    vkl_status status;
    atomic_bool done;
} generation;

static int keep_token(void *user, int32_t token) {
    generation *g = user;
    if (g->n_out < sizeof(g->out) / sizeof(g->out[0])) g->out[g->n_out++] = token;
    return 0;
}

static void *generate(void *user) {
    generation *g = user;
    g->status = vkl_session_generate(g->session, g->prompt, g->n_prompt, g->max_new, g->eos, keep_token, g);
    atomic_store(&g->done, true);
    return NULL;
}

typedef struct args {
    const char *model, *prompt;
    size_t tokens, frames;
    bool separate, validate;
    vkl_vulkan_priority priority;
} args;

static bool parse(int argc, char **argv, args *o) {
    static const char *const prios[] = {"low", "medium", "high", "realtime", "driver"};
    *o = (args){.prompt = "In the beginning", .tokens = 48, .frames = 60, .priority = VKL_VULKAN_PRIORITY_LOW};
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--separate")) o->separate = true;
        else if (!strcmp(argv[i], "--validate")) o->validate = true;
        else if (!strcmp(argv[i], "--prompt") && v) o->prompt = argv[++i];
        else if (!strcmp(argv[i], "--tokens") && v) o->tokens = strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--frames") && v) o->frames = strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--priority") && v) {
            int k = 0;
            while (k < 5 && strcmp(v, prios[k])) k++;
            if (k == 5) return false;
            o->priority = (vkl_vulkan_priority)k;
            i++;
        } else if (argv[i][0] != '-' && !o->model) o->model = argv[i];
        else return false;
    }
    return o->model && o->tokens && o->tokens <= 512 && o->frames && o->frames <= 4096;
}

int main(int argc, char **argv) {
    args o;
    if (!parse(argc, argv, &o)) {
        fprintf(stderr, "usage: %s MODEL.vkm [--prompt TEXT] [--tokens N<=512] [--frames N<=4096] [--separate] "
                        "[--priority low|medium|high|realtime|driver] [--validate]\n", argv[0]);
        return 2;
    }
    app a = {0};
    static frames idle, busy;
    bool ok = true, frames_ok = true;
    vkl_context *ctx = NULL;
    vkl_model *model = NULL;
    vkl_tokenizer *tok = NULL;
    vkl_session *session = NULL;
    int32_t *prompt = NULL;
    size_t n_prompt = 0;
    static generation gen;
    vkl_status st = VKL_OK;
    if (!app_device(&a, o.validate) || !app_frame_work(&a)) {
        app_destroy(&a);
        return 1;
    }
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(a.phys, &props);
    printf("app device: %s; vkllm on %s\n", props.deviceName,
           o.separate ? "a device of its own" : "the app's device and queue");

    /* vkllm on the app's device: the handles, what the app enabled (no
     * optional features here), and its queue lock. */
    real_gipa = vkGetInstanceProcAddr;
    real_gdpa = vkGetDeviceProcAddr;
    real_create_instance = (PFN_vkCreateInstance)vkGetInstanceProcAddr(NULL, "vkCreateInstance");
    real_create_device = (PFN_vkCreateDevice)vkGetInstanceProcAddr(a.instance, "vkCreateDevice");
    real_device_wait_idle = (PFN_vkDeviceWaitIdle)vkGetDeviceProcAddr(a.device, "vkDeviceWaitIdle");
    real_queue_wait_idle = (PFN_vkQueueWaitIdle)vkGetDeviceProcAddr(a.device, "vkQueueWaitIdle");
    real_queue_submit = (PFN_vkQueueSubmit)vkGetDeviceProcAddr(a.device, "vkQueueSubmit");
    const VkPhysicalDeviceFeatures none = {0};
    vkl_vulkan_external ext = {.get_instance_proc_addr = counted_gipa, .instance = a.instance,
                               .api_version = VK_API_VERSION_1_2, .physical_device = a.phys, .device = a.device,
                               .queue_family = a.family, .queue_index = 0, .enabled_core_features = &none,
                               .queue_lock = lock_queue, .queue_unlock = unlock_queue,
                               .queue_lock_user = &a.queue_lock};
    vkl_vulkan_options vk;
    vkl_vulkan_options_init(&vk);
    vk.external = o.separate ? NULL : &ext;
    vk.priority = o.priority;
    vk.validation = o.validate && o.separate;
    vkl_model_options mo;
    vkl_model_options_init(&mo);
    mo.backend = "vulkan";
    mo.vulkan = &vk;
    vkl_session_options so;
    vkl_session_options_init(&so);
    so.max_context = 256;

    double t0 = now_ms();
    if (vkl_context_create(NULL, &ctx)) st = VKL_ERR_OUT_OF_MEMORY;
    if (!st) st = vkl_model_load(ctx, o.model, &mo, &model);
    if (!st) st = vkl_tokenizer_load_model(ctx, model, &tok);
    if (!st) st = vkl_tokenizer_encode(tok, o.prompt, strlen(o.prompt), true, &prompt, &n_prompt);
    if (!st) st = vkl_session_create(model, &so, &session);
    if (!st) printf("model loaded in %.1f ms (%s)\n", now_ms() - t0, vkl_model_backend_reason(model));

    /* frames with the GPU to ourselves, then while vkllm generates */
    for (uint32_t f = 0; !st && ok && f < o.frames; f++) {
        double t = now_ms();
        ok = app_frame(&a, f, &frames_ok);
        idle.ms[idle.n++] = now_ms() - t;
    }
    pthread_t thread;
    bool started = false;
    if (!st && ok) {
        gen = (generation){.session = session, .prompt = prompt, .n_prompt = n_prompt, .max_new = o.tokens,
                           .eos = vkl_tokenizer_eos_id(tok)};
        started = pthread_create(&thread, NULL, generate, &gen) == 0;
        ok = started;
    }
    double t_gen = now_ms();
    for (uint32_t f = (uint32_t)o.frames; started && ok && !atomic_load(&gen.done) && busy.n < 4096; f++) {
        double t = now_ms();
        ok = app_frame(&a, f, &frames_ok);
        busy.ms[busy.n++] = now_ms() - t;
    }
    if (started) pthread_join(thread, NULL);
    t_gen = now_ms() - t_gen;
    if (started && !st) st = gen.status;
    if (!st) {
        printf("generated %zu tokens in %.1f ms (%.1f tok/s) while rendering:\n%s", gen.n_out, t_gen,
               gen.n_out / (t_gen / 1e3), o.prompt);
        vkl_decode_stream *ds = NULL;
        const char *text;
        size_t len;
        if (!vkl_decode_stream_create(tok, true, &ds) && !vkl_decode_stream_set_context(ds, prompt, n_prompt)) {
            for (size_t i = 0; i < gen.n_out; i++)
                if (!vkl_decode_stream_push(ds, gen.out[i], &text, &len)) fwrite(text, 1, len, stdout);
            if (!vkl_decode_stream_flush(ds, &text, &len)) fwrite(text, 1, len, stdout);
        }
        vkl_decode_stream_free(ds);
        printf("\n");
    }
    report("frames, GPU to itself:", &idle);
    report("frames, while generating:", &busy);
    if (st) fprintf(stderr, "shared_device: vkllm: %s: %s\n", vkl_status_name(st), vkl_context_error(ctx));
    vkl_tokenizer_free_buffer(tok, prompt);
    vkl_tokenizer_free(tok);
    vkl_session_free(session);
    vkl_model_free(model);
    vkl_context_destroy(ctx);
    /* the app's device is still the app's: one more frame after vkllm left */
    if (ok) ok = app_frame(&a, 0xFFFF, &frames_ok);
    app_destroy(&a);

    const bool own = n_create_instance || n_create_device || n_wait_idle;
    printf("frame checks: %s; vkllm made %u instance(s), %u device(s), %u wait-idle call(s), %u submit(s) on the "
           "app's queue; validation messages: %u\n",
           frames_ok ? "all passed" : "FAILED", n_create_instance, n_create_device, n_wait_idle, n_vkllm_submits,
           validation_messages);
    return st || !ok || !frames_ok || (!o.separate && own) || validation_messages ? 1 : 0;
}
