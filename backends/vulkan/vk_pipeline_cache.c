/* The pipeline cache on disk: where its file lives (one per device, driver
 * and vkllm build), reading it back without trusting a byte of it, and
 * writing it atomically at close. Drivers differ in how well they check the
 * data vkCreatePipelineCache is handed, so nothing reaches the driver that
 * this file has not checked: our header (magic, build hash, payload size,
 * XXH3 of the payload), then the driver's VkPipelineCacheHeaderVersionOne
 * against this device (vendor, device, pipelineCacheUUID).
 *
 * File layout, little-endian (docs/vulkan.md):
 *   0  "VKLPCACH"       8  header version (1)   12 header size (40)
 *   16 build hash       24 payload size         32 XXH3-64 of the payload
 *   40 payload: vkGetPipelineCacheData's bytes */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "atomic_file.h"
#include "file_open.h"
#include "vk_internal.h"
#include "vk_shaders.h"

#define MAGIC "VKLPCACH"
#define HEADER_VERSION 1u
#define HEADER_BYTES 40u
#define VK_HEADER_BYTES 32u /* VkPipelineCacheHeaderVersionOne */
#define CACHE_FILE_MAX ((size_t)256 << 20)

static uint32_t ld32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t ld64(const uint8_t *p) { return (uint64_t)ld32(p) | (uint64_t)ld32(p + 4) << 32; }
static void st32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void st64(uint8_t *p, uint64_t v) {
    st32(p, (uint32_t)v);
    st32(p + 4, (uint32_t)(v >> 32));
}

/* The embedded SPIR-V, names and words: a new build with other shaders has
 * another hash, so it never reads an older build's file. */
static uint64_t build_hash(void) {
    XXH3_state_t s;
    XXH3_INITSTATE(&s);
    XXH3_64bits_reset(&s);
    for (size_t i = 0; i < vkl_vk_spirv_count; i++) {
        const vkl_vk_spirv *m = &vkl_vk_spirv_table[i];
        XXH3_64bits_update(&s, m->name, strlen(m->name) + 1);
        XXH3_64bits_update(&s, m->words, m->n_words * sizeof(uint32_t));
    }
    return XXH3_64bits_digest(&s);
}

/* `dir` exists (made 0700 when missing: pipelines say which shaders an app
 * ran, nobody else's business) and we may create files in it. Else false
 * with why. */
static bool usable_dir(const char *dir, char *why, size_t cap) {
    struct stat sb;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(why, cap, "cannot create '%s': %s", dir, strerror(errno));
        return false;
    }
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        snprintf(why, cap, "'%s' is not a directory", dir);
        return false;
    }
    if (access(dir, W_OK | X_OK) != 0) {
        snprintf(why, cap, "'%s' is not writable: %s", dir, strerror(errno));
        return false;
    }
    return true;
}

/* `root`/`sub`/vkllm, each level made when missing; false with why. */
static bool cache_dir(const char *root, const char *sub, char *dir, size_t cap, char *why, size_t why_cap) {
    char base[4096];
    int n = snprintf(base, sizeof(base), "%s%s", root, sub);
    if (n < 0 || (size_t)n >= sizeof(base) || snprintf(dir, cap, "%s/vkllm", base) >= (int)cap) {
        snprintf(why, why_cap, "'%s%s/vkllm' is too long", root, sub);
        return false;
    }
    return usable_dir(base, why, why_cap) && usable_dir(dir, why, why_cap);
}

vkl_status vkl_vk_cache_path(vkl_backend_device *dev, const char *dir_option, char **out) {
    *out = NULL;
    if (dir_option && !*dir_option) {
        vkl_log(dev->ctx, VKL_LOG_INFO, "vulkan: pipeline cache on disk off (empty cache directory option)");
        return VKL_OK;
    }
    char dir[4096], why[2][4400] = {"", ""};
    bool ok = false;
    if (dir_option) {
        ok = snprintf(dir, sizeof(dir), "%s", dir_option) < (int)sizeof(dir);
        if (!ok) snprintf(why[0], sizeof(why[0]), "the cache directory path is too long");
        ok = ok && usable_dir(dir, why[0], sizeof(why[0]));
    } else {
        /* $XDG_CACHE_HOME/vkllm, else $HOME/.cache/vkllm (the base directory
         * spec ignores a relative XDG_CACHE_HOME) */
        const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        if (xdg && xdg[0] == '/') ok = cache_dir(xdg, "", dir, sizeof(dir), why[0], sizeof(why[0]));
        else snprintf(why[0], sizeof(why[0]), "XDG_CACHE_HOME is unset or relative");
        if (!ok && home && home[0] == '/') ok = cache_dir(home, "/.cache", dir, sizeof(dir), why[1], sizeof(why[1]));
        else if (!ok) snprintf(why[1], sizeof(why[1]), "HOME is unset or relative");
    }
    if (!ok) {
        vkl_log(dev->ctx, VKL_LOG_INFO, "vulkan: no pipeline cache on disk: %s%s%s", why[0], why[1][0] ? "; " : "",
                why[1]);
        return VKL_OK;
    }
    /* Everything that makes a driver's cache data unusable elsewhere is in
     * the name, so devices, drivers and builds never overwrite each other. */
    const VkPhysicalDeviceProperties *p = &dev->props;
    char uuid[2 * VK_UUID_SIZE + 1];
    for (unsigned i = 0; i < VK_UUID_SIZE; i++) snprintf(uuid + 2 * i, 3, "%02x", p->pipelineCacheUUID[i]);
    char name[160];
    snprintf(name, sizeof(name), "pipelines-%04x-%04x-%08x-%s-%016llx.bin", p->vendorID, p->deviceID,
             p->driverVersion, uuid, (unsigned long long)build_hash());
    size_t bytes;
    if (!vkl_add_size(strlen(dir), strlen(name) + 2, &bytes) || !(*out = vkl_malloc(dev->own_ctx, bytes)))
        return VKL_ERR_OUT_OF_MEMORY;
    snprintf(*out, bytes, "%s/%s", dir, name);
    return VKL_OK;
}

/* NULL when `p`, `n` bytes, is a cache file this device may load, else
 * what is wrong with it (in `why`). */
static const char *check_file(const vkl_backend_device *dev, const uint8_t *p, size_t n, char *why, size_t cap) {
    if (n < 8 || memcmp(p, MAGIC, 8)) return "not a vkllm pipeline cache (no VKLPCACH magic)";
    if (n < HEADER_BYTES) {
        snprintf(why, cap, "truncated: %zu bytes, the header alone is %u", n, HEADER_BYTES);
        return why;
    }
    if (ld32(p + 8) != HEADER_VERSION || ld32(p + 12) != HEADER_BYTES) {
        snprintf(why, cap, "header version %u (size %u); this build reads version %u", ld32(p + 8), ld32(p + 12),
                 HEADER_VERSION);
        return why;
    }
    if (ld64(p + 16) != build_hash()) return "written by another vkllm build (other shaders)";
    uint64_t payload = ld64(p + 24);
    if (payload != n - HEADER_BYTES) {
        snprintf(why, cap, "%s: the header says %llu payload bytes, the file holds %zu",
                 payload > n - HEADER_BYTES ? "truncated" : "trailing bytes", (unsigned long long)payload,
                 n - HEADER_BYTES);
        return why;
    }
    if (XXH3_64bits(p + HEADER_BYTES, (size_t)payload) != ld64(p + 32)) return "corrupt: the payload's checksum differs";
    const uint8_t *v = p + HEADER_BYTES;
    if (payload < VK_HEADER_BYTES || ld32(v) < VK_HEADER_BYTES || ld32(v) > payload ||
        ld32(v + 4) != VK_PIPELINE_CACHE_HEADER_VERSION_ONE)
        return "the driver data has no valid VkPipelineCacheHeaderVersionOne";
    if (ld32(v + 8) != dev->props.vendorID || ld32(v + 12) != dev->props.deviceID ||
        memcmp(v + 16, dev->props.pipelineCacheUUID, VK_UUID_SIZE)) {
        snprintf(why, cap, "made by another device or driver (vendor 0x%x, device 0x%x, or its pipelineCacheUUID)",
                 ld32(v + 8), ld32(v + 12));
        return why;
    }
    return NULL;
}

/* A file a user named that is neither ours nor a bare driver cache (what
 * vkllm wrote before its own header): not ours to replace. */
static bool foreign(const uint8_t *p, size_t n) {
    if (!n || (n >= 8 && !memcmp(p, MAGIC, 8))) return false;
    return n < 8 || ld32(p) < VK_HEADER_BYTES || ld32(p) > n || ld32(p + 4) != VK_PIPELINE_CACHE_HEADER_VERSION_ONE;
}

static uint8_t *read_all(vkl_context *ctx, int fd, size_t n) {
    uint8_t *data = vkl_malloc(ctx, n ? n : 1);
    size_t got = 0;
    while (data && got < n) {
        ssize_t r = read(fd, data + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    if (data && got == n) return data;
    vkl_free(ctx, data);
    return NULL;
}

void *vkl_vk_cache_read(vkl_backend_device *dev, bool user_named, size_t *size) {
    vkl_context *ctx = dev->ctx;
    const char *path = dev->cache_path;
    *size = 0;
    dev->cache_rewrite = true;
    int fd;
    struct stat sb;
    vkl_status st = vkl_open_regular(ctx, path, "pipeline cache", &fd, &sb);
    if (st == VKL_ERR_NOT_FOUND) {
        vkl_log(ctx, VKL_LOG_INFO, "vulkan: pipeline cache '%s' absent: made at close", path);
        return NULL;
    }
    uint8_t *data = NULL;
    const char *bad = NULL;
    char why[256];
    if (!st) {
        if ((size_t)sb.st_size > CACHE_FILE_MAX) {
            snprintf(why, sizeof(why), "%lld bytes, over the %zu a cache may have", (long long)sb.st_size,
                     CACHE_FILE_MAX);
            bad = why;
        } else if (!(data = read_all(ctx, fd, (size_t)sb.st_size))) {
            bad = "unreadable";
        }
        close(fd);
    }
    /* A FIFO, a directory or a device under the name, or a file a user
     * named that is someone else's: never read, never replaced. */
    if (st || (user_named && data && foreign(data, (size_t)sb.st_size))) {
        vkl_log(ctx, VKL_LOG_WARN, "vulkan: pipeline cache '%s' is %s; it is neither read nor replaced", path,
                st ? vkl_context_error(ctx) : "not a pipeline cache");
        vkl_free(ctx, data);
        vkl_free(dev->own_ctx, dev->cache_path);
        dev->cache_path = NULL;
        return NULL;
    }
    if (!bad && sb.st_size == 0) {
        vkl_free(ctx, data);
        return NULL; /* an empty file (a user's touch) is a cache to fill */
    }
    if (!bad) bad = check_file(dev, data, (size_t)sb.st_size, why, sizeof(why));
    if (bad) {
        vkl_log(ctx, VKL_LOG_WARN, "vulkan: pipeline cache '%s' ignored: %s; it is replaced at close", path, bad);
        vkl_free(ctx, data);
        return NULL;
    }
    *size = (size_t)sb.st_size - HEADER_BYTES;
    memmove(data, data + HEADER_BYTES, *size);
    dev->cache_loaded = *size;
    dev->cache_rewrite = false;
    vkl_log(ctx, VKL_LOG_INFO, "vulkan: pipeline cache: loaded %zu bytes from '%s'", *size, path);
    return data;
}

/* Written whole or not at all (engine/atomic_file.c): never half a cache
 * for the next run, never into a FIFO or device. Only when something is
 * new: the file was absent or bad, the driver's data changed size, or
 * pipelines were made (a driver may keep its size and change its bytes).
 * A failure is a warning; the context's error message is kept for whoever
 * reads it after close. */
void vkl_vk_cache_save(vkl_backend_device *dev) {
    size_t size = 0;
    if (dev->vk.vkGetPipelineCacheData(dev->device, dev->cache, &size, NULL) != VK_SUCCESS || !size) return;
    if (!dev->cache_rewrite && size == dev->cache_loaded && !dev->work.pipelines) {
        vkl_log(dev->ctx, VKL_LOG_DEBUG, "vulkan: pipeline cache '%s' unchanged: not rewritten", dev->cache_path);
        return;
    }
    size_t total;
    uint8_t *data = vkl_add_size(size, HEADER_BYTES, &total) ? vkl_malloc(dev->ctx, total) : NULL;
    if (!data) return;
    char saved[VKL_ERROR_CAP];
    memcpy(saved, dev->ctx->error, sizeof(saved));
    vkl_atomic_file f;
    vkl_status st = VKL_OK;
    if (dev->vk.vkGetPipelineCacheData(dev->device, dev->cache, &size, data + HEADER_BYTES) == VK_SUCCESS) {
        memcpy(data, MAGIC, 8);
        st32(data + 8, HEADER_VERSION);
        st32(data + 12, HEADER_BYTES);
        st64(data + 16, build_hash());
        st64(data + 24, size);
        st64(data + 32, XXH3_64bits(data + HEADER_BYTES, size));
        st = vkl_atomic_file_open(dev->ctx, dev->cache_path, &f);
        if (!st) st = vkl_atomic_file_write(&f, data, HEADER_BYTES + size);
        if (!st) st = vkl_atomic_file_commit(&f);
        else if (f.tmp) vkl_atomic_file_abort(&f);
        if (!st)
            vkl_log(dev->ctx, VKL_LOG_INFO, "vulkan: pipeline cache: saved %zu bytes to '%s' (%llu pipelines made in "
                    "%.3f s since open)", size, dev->cache_path, (unsigned long long)dev->work.pipelines,
                    dev->pipeline_seconds);
    }
    if (st) vkl_log(dev->ctx, VKL_LOG_WARN, "vulkan: pipeline cache not saved: %s", vkl_context_error(dev->ctx));
    memcpy(dev->ctx->error, saved, sizeof(saved));
    vkl_free(dev->ctx, data);
}
