/* VKL_VK_PIPELINE_CACHE (backends/vulkan/vk_pipeline.c): saved at close by
 * an atomic replace (a new inode, no temporary file left), created where
 * absent or empty, and never written into what is not a pipeline cache: a
 * FIFO (which once blocked the open), a directory, a device, another file.
 * Exit 77 = skipped: no Vulkan loader, driver or device. */
#define _XOPEN_SOURCE 700 /* mknod, S_IFCHR */

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h> /* makedev */
#include <unistd.h>

#include "backend.h"
#include "check.h"
#include "backend_env_open.h"

static const vkl_backend_vtable *vk;

/* Live host allocations through the context: LeakSanitizer is off for the
 * Vulkan tests (tests/CMakeLists.txt says why), so the test counts ours. */
typedef struct counter {
    long live;
} counter;
static void *count_malloc(void *user, size_t n) {
    void *p = malloc(n);
    if (p) ((counter *)user)->live++;
    return p;
}
static void *count_realloc(void *user, void *old, size_t n) {
    void *p = realloc(old, n);
    if (p && !old) ((counter *)user)->live++;
    return p;
}
static void count_free(void *user, void *p) {
    if (p) ((counter *)user)->live--;
    free(p);
}

/* Opens and closes a device with the cache at `path`. */
static void open_close(vkl_context *ctx, const char *path) {
    setenv("VKL_VK_PIPELINE_CACHE", path, 1);
    vkl_backend_device *dev = NULL;
    CHECK_OK(ctx, test_open_env(ctx, vk, 0, false, &dev));
    if (dev) vk->close(dev);
    unsetenv("VKL_VK_PIPELINE_CACHE");
}

static bool no_temp_files(const char *dir) {
    DIR *d = opendir(dir);
    bool none = d != NULL;
    struct dirent *e;
    while (d && (e = readdir(d))) none &= strstr(e->d_name, ".tmp-") == NULL;
    if (d) closedir(d);
    return none;
}

/* A VkPipelineCacheHeaderVersionOne at the start. */
static bool is_cache(const char *path) {
    size_t n;
    uint8_t *p = check_read_file(path, &n);
    uint32_t header = 0, version = 0;
    if (p && n >= 8) {
        memcpy(&header, p, 4);
        memcpy(&version, p + 4, 4);
    }
    free(p);
    return header >= 32 && version == 1;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    CHECK(f && fputs(text, f) >= 0);
    if (f) fclose(f);
}

int main(void) {
    counter live = {0};
    vkl_context_options o;
    vkl_context_options_init(&o);
    o.allocator = (vkl_allocator){&live, count_malloc, count_realloc, count_free};
    vkl_context *ctx;
    if (vkl_context_create(&o, &ctx)) return 2;
    vk = vkl_backend_find("vulkan");
    vkl_backend_caps caps;
    vkl_status st = vk ? test_probe_env(ctx, vk, &caps) : VKL_ERR_NOT_FOUND;
    if (st == VKL_ERR_NOT_FOUND) {
        printf("test_vk_pipeline_cache: skipped: %s\n", vk ? vkl_context_error(ctx) : "no vulkan backend");
        vkl_context_destroy(ctx);
        return 77;
    }
    char dir[] = "/tmp/test_vk_pipeline_cache.XXXXXX";
    if (!mkdtemp(dir)) return 1;
    char p[4200];
    struct stat before, after;

    /* absent: created; present: replaced by a new file (rename), not rewritten */
    snprintf(p, sizeof(p), "%s/cache.bin", dir);
    open_close(ctx, p);
    CHECKF(is_cache(p), "no pipeline cache written to %s", p);
    CHECK(stat(p, &before) == 0);
    open_close(ctx, p);
    CHECK(stat(p, &after) == 0 && is_cache(p) && after.st_ino != before.st_ino);
    CHECK(no_temp_files(dir));
    /* empty: taken as a cache to fill */
    write_text(p, "");
    open_close(ctx, p);
    CHECK(is_cache(p));
    unlink(p);

    /* some other file: neither read as a cache nor replaced */
    snprintf(p, sizeof(p), "%s/notes.txt", dir);
    write_text(p, "not a pipeline cache, and not to be overwritten\n");
    open_close(ctx, p);
    size_t n;
    uint8_t *text = check_read_file(p, &n);
    CHECK(text && n == 48 && !memcmp(text, "not a pipeline cache", 20));
    free(text);
    unlink(p);

    /* a FIFO (the open once blocked here), a directory, a device: unchanged */
    snprintf(p, sizeof(p), "%s/fifo", dir);
    CHECK(mkfifo(p, 0600) == 0);
    open_close(ctx, p);
    CHECK(stat(p, &after) == 0 && S_ISFIFO(after.st_mode));
    unlink(p);
    snprintf(p, sizeof(p), "%s/adir", dir);
    CHECK(mkdir(p, 0700) == 0);
    open_close(ctx, p);
    CHECK(stat(p, &after) == 0 && S_ISDIR(after.st_mode));
    rmdir(p);
    if (geteuid() == 0) { /* a private node: never /dev/null itself */
        snprintf(p, sizeof(p), "%s/null", dir);
        CHECK(mknod(p, S_IFCHR | 0666, makedev(1, 3)) == 0);
        open_close(ctx, p);
        CHECK(stat(p, &after) == 0 && S_ISCHR(after.st_mode));
        unlink(p);
    }
    CHECK(no_temp_files(dir));
    CHECK(rmdir(dir) == 0);
    vkl_context_destroy(ctx);
    CHECKF(live.live == 0, "%ld host allocations not freed", live.live);
    return check_finish("test_vk_pipeline_cache");
}
