/* The pipeline cache's file (backends/vulkan/vk_pipeline_cache.c).
 *
 * Where it goes (vkl_vk_cache_path, no device needed): $XDG_CACHE_HOME/vkllm,
 * else $HOME/.cache/vkllm, made 0700; a directory option instead; "" and
 * nowhere usable: no file, an info line.
 *
 * The default file, with the bundled model (argv[1]) loaded twice: the
 * first load writes it, the second reads it ("loaded N bytes"); both loads
 * are timed and printed. A copy with a flipped byte, one truncated, one from
 * another device (UUID), one of another build and a file that is no cache
 * are each ignored with one warning saying what is wrong, and replaced.
 *
 * VKL_VK_PIPELINE_CACHE (a file a user names): saved at close by an atomic
 * replace (a new inode, no temporary file left), created where absent or
 * empty, and never written into what is not a pipeline cache: a FIFO (which
 * once blocked the open), a directory, a device, another file.
 * Exit 77 = skipped: no Vulkan loader, driver or device. */
#define _XOPEN_SOURCE 700 /* mknod, S_IFCHR */

#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h> /* makedev */
#include <time.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "backend.h"
#include "check.h"
#include "vk_internal.h" /* vkl_vk_cache_path; first: volk before any Vulkan header */
#include "backend_env_open.h"
#include "vkllm.h"

static const vkl_backend_vtable *vk;

/* The log lines of the last open/close (warnings and info), one per line. */
static char log_text[16384];
static int warnings;
static void capture(void *user, vkl_log_level level, const char *message) {
    (void)user;
    size_t n = strlen(log_text);
    snprintf(log_text + n, sizeof(log_text) - n, "%s\n", message);
    warnings += level == VKL_LOG_WARN;
}
static void log_reset(void) {
    log_text[0] = 0;
    warnings = 0;
}

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

/* The file's layout (vk_pipeline_cache.c): "VKLPCACH", version 1, header
 * size 40, build hash at 16, payload size at 24, its XXH3 at 32, then the
 * driver's VkPipelineCacheHeaderVersionOne (UUID at 40 + 16). */
#define HDR 40
static uint64_t ld64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* Our header, a payload of its stated size and checksum, and a
 * VkPipelineCacheHeaderVersionOne at its start. */
static bool is_cache(const char *path) {
    size_t n;
    uint8_t *p = check_read_file(path, &n);
    uint32_t header = 0, version = 0;
    bool ok = p && n >= HDR + 32 && !memcmp(p, "VKLPCACH", 8) && ld64(p + 24) == n - HDR &&
              XXH3_64bits(p + HDR, n - HDR) == ld64(p + 32);
    if (ok) {
        memcpy(&header, p + HDR, 4);
        memcpy(&version, p + HDR + 4, 4);
    }
    free(p);
    return ok && header >= 32 && version == 1;
}

static void write_bytes(const char *path, const uint8_t *p, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(p, 1, n, f) == n);
    if (f) fclose(f);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void write_text(const char *path, const char *text) { write_bytes(path, (const uint8_t *)text, strlen(text)); }

/* Opens and closes a device with the cache in its default place. */
static void open_close_default(vkl_context *ctx) {
    vkl_backend_device *dev = NULL;
    CHECK_OK(ctx, test_open_env(ctx, vk, 0, false, &dev));
    if (dev) vk->close(dev);
}

static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)ftw;
    return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static bool is_dir_0700(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode) && (sb.st_mode & 0777) == 0700;
}

/* XDG_CACHE_HOME and HOME at regular files made in `dir` (their paths in
 * xdg_file, home_file), where nobody, root included, can make a directory:
 * nowhere usable. */
static void nowhere_usable(const char *dir, char *xdg_file, char *home_file, size_t cap) {
    snprintf(xdg_file, cap, "%s/xdg-file", dir);
    snprintf(home_file, cap, "%s/home-file", dir);
    write_text(xdg_file, "x");
    write_text(home_file, "y");
    setenv("XDG_CACHE_HOME", xdg_file, 1);
    setenv("HOME", home_file, 1);
    log_reset();
}

/* *path starts with `dir`/pipelines- and names the fake device below. */
static void check_path(vkl_context *ctx, char *path, const char *dir) {
    char want[4200];
    snprintf(want, sizeof(want), "%s/pipelines-10de-2335-8a5c4000-abababababababababababababababab-", dir);
    CHECKF(path && !strncmp(path, want, strlen(want)) && strstr(path, ".bin"), "path %s, want %s...", path, want);
    vkl_free(ctx, path);
}

/* The default place is the directory `want`, made 0700. */
static void expect_default(vkl_context *ctx, vkl_backend_device *fake, const char *want) {
    char *path = NULL;
    CHECK_OK(ctx, vkl_vk_cache_path(fake, NULL, &path));
    check_path(ctx, path, want);
    CHECK(is_dir_0700(want));
}

/* vkl_vk_cache_path on a device that is only its properties. */
static void path_tests(vkl_context *ctx, const char *dir) {
    vkl_backend_device fake = {.ctx = ctx, .own_ctx = ctx};
    fake.props.vendorID = 0x10de;
    fake.props.deviceID = 0x2335;
    fake.props.driverVersion = 0x8a5c4000;
    memset(fake.props.pipelineCacheUUID, 0xab, VK_UUID_SIZE);
    char paths[4200], a[4300], b[4300], c[4400];
    char *path = NULL;
    snprintf(paths, sizeof(paths), "%s/paths", dir);
    CHECK(mkdir(paths, 0700) == 0);
    /* $XDG_CACHE_HOME/vkllm, both levels made 0700 */
    snprintf(a, sizeof(a), "%s/xdg", paths);
    setenv("XDG_CACHE_HOME", a, 1);
    snprintf(c, sizeof(c), "%s/vkllm", a);
    expect_default(ctx, &fake, c);
    CHECK(is_dir_0700(a));
    /* a relative XDG_CACHE_HOME is ignored: $HOME/.cache/vkllm */
    setenv("XDG_CACHE_HOME", "relative/cache", 1);
    snprintf(a, sizeof(a), "%s/home", paths);
    CHECK(mkdir(a, 0755) == 0);
    setenv("HOME", a, 1);
    snprintf(c, sizeof(c), "%s/.cache/vkllm", a);
    expect_default(ctx, &fake, c);
    /* nowhere usable: no file, an info line */
    nowhere_usable(paths, a, b, sizeof(a));
    CHECK_OK(ctx, vkl_vk_cache_path(&fake, NULL, &path));
    CHECKF(!path && strstr(log_text, "no pipeline cache on disk") && !warnings, "path %s, log: %s", path, log_text);
    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
    log_reset();
    CHECK_OK(ctx, vkl_vk_cache_path(&fake, NULL, &path));
    CHECKF(!path && strstr(log_text, "no pipeline cache on disk"), "path %s, log: %s", path, log_text);
    /* "": none, whatever the environment says */
    log_reset();
    CHECK_OK(ctx, vkl_vk_cache_path(&fake, "", &path));
    CHECKF(!path && strstr(log_text, "off"), "path %s, log: %s", path, log_text);
    /* a directory option: that directory, made 0700 */
    snprintf(a, sizeof(a), "%s/option", paths);
    CHECK_OK(ctx, vkl_vk_cache_path(&fake, a, &path));
    check_path(ctx, path, a);
    CHECK(is_dir_0700(a));
}

/* The bundled model loaded on Vulkan with a session (whose prepare makes
 * every pipeline), then freed: seconds taken. */
static double load_model(vkl_context *ctx, const char *model) {
    vkl_model_options mo;
    vkl_model_options_init(&mo);
    mo.backend = "vulkan";
    vkl_session_options so;
    vkl_session_options_init(&so);
    so.max_context = 512; /* as `vkllm run` */
    vkl_model *m = NULL;
    vkl_session *s = NULL;
    double t = now();
    vkl_status st = vkl_env_model_load(ctx, model, &mo, &m);
    if (!st) st = vkl_session_create(m, &so, &s);
    t = now() - t;
    CHECK_OK(ctx, st);
    vkl_session_free(s);
    vkl_model_free(m);
    return t;
}

/* The number after `key` in the captured log, or -1. */
static double logged(const char *key) {
    const char *p = strstr(log_text, key);
    return p ? atof(p + strlen(key)) : -1;
}

/* The one pipelines-* file in `dir` (into out), or false. */
static bool the_cache_file(const char *dir, char *out, size_t cap) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (!strncmp(e->d_name, "pipelines-", 10) && ++n == 1) snprintf(out, cap, "%s/%s", dir, e->d_name);
    if (d) closedir(d);
    return n == 1;
}

/* The default place ($XDG_CACHE_HOME/vkllm here): written by the first
 * load, read by the second; bad files ignored, said so, and replaced. */
static void default_file_tests(vkl_context *ctx, const char *dir, const char *model) {
    char xdg[4200], cache_dir[4300], file[8400];
    snprintf(xdg, sizeof(xdg), "%s/xdg", dir);
    snprintf(cache_dir, sizeof(cache_dir), "%s/vkllm", xdg);
    setenv("XDG_CACHE_HOME", xdg, 1);
    log_reset();
    double t1 = model ? load_model(ctx, model) : 0;
    if (!model) open_close_default(ctx);
    double made1 = logged("pipelines made in ");
    REQUIRE(the_cache_file(cache_dir, file, sizeof(file)), "no cache file in %s; log: %s", cache_dir, log_text);
    CHECK(is_cache(file) && is_dir_0700(cache_dir));
    log_reset();
    double t2 = model ? load_model(ctx, model) : 0;
    if (!model) open_close_default(ctx);
    double loaded = logged("pipeline cache: loaded ");
    CHECKF(loaded >= 32 && !warnings, "second open did not load the file; log: %s", log_text);
    if (model) {
        double made2 = logged("pipelines made in ");
        printf("test_vk_pipeline_cache: model load + session: %.3f s without a cache file (%.3f s making pipelines), "
               "%.3f s with it (%.0f driver bytes loaded; %.3f s making pipelines)\n",
               t1, made1, t2, loaded, made2);
        if (loaded <= 32)
            printf("test_vk_pipeline_cache: the driver's cache data is its 32-byte header alone: it keeps no "
                   "pipelines, so the second load has nothing to hit\n");
        else
            CHECKF(made2 < made1, "pipelines from the cache took %.3f s, without it %.3f s", made2, made1);
    }
    size_t vn;
    uint8_t *valid = check_read_file(file, &vn);
    REQUIRE(valid && vn >= HDR + 32, "cannot read %s back", file);
    static const struct {
        const char *what, *said;
    } bad[] = {{"a flipped byte", "corrupt"},
               {"truncated", "truncated"},
               {"another device's UUID", "another device or driver"},
               {"another build's hash", "another vkllm build"},
               {"a text file", "not a vkllm pipeline cache"}};
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        uint8_t *b = malloc(vn);
        size_t n = vn;
        if (!b) break;
        memcpy(b, valid, vn);
        if (k == 0) b[vn - 1] ^= 0x40;
        if (k == 1) n = vn - 7;
        if (k == 2) { /* a checksum that holds: only the driver header's check can tell */
            b[HDR + 16] ^= 1;
            uint64_t sum = XXH3_64bits(b + HDR, vn - HDR);
            memcpy(b + 32, &sum, 8);
        }
        if (k == 3) b[16] ^= 1;
        if (k == 4) n = (size_t)snprintf((char *)b, vn, "not a cache at all\n");
        write_bytes(file, b, n);
        free(b);
        log_reset();
        open_close_default(ctx);
        CHECKF(warnings == 1 && strstr(log_text, bad[k].said) && strstr(log_text, "replaced at close"),
               "%s: want one warning saying '%s'; log: %s", bad[k].what, bad[k].said, log_text);
        CHECKF(is_cache(file), "%s: not replaced by a cache", bad[k].what);
        log_reset();
        open_close_default(ctx);
        CHECKF(!warnings && logged("pipeline cache: loaded ") >= 32, "%s: the replacement does not load; log: %s",
               bad[k].what, log_text);
    }
    free(valid);
    CHECK(no_temp_files(cache_dir));
    /* nowhere to write: no file anywhere, an info line */
    char a[4300], b[4300];
    nowhere_usable(dir, a, b, sizeof(a));
    open_close_default(ctx);
    size_t na, nb;
    uint8_t *pa = check_read_file(a, &na), *pb = check_read_file(b, &nb);
    CHECKF(strstr(log_text, "no pipeline cache on disk") && pa && na == 1 && pb && nb == 1, "log: %s", log_text);
    free(pa);
    free(pb);
    setenv("XDG_CACHE_HOME", xdg, 1); /* the driver's own caches (Mesa's) want a directory too */
}

int main(int argc, char **argv) {
    counter live = {0};
    vkl_context_options o;
    vkl_context_options_init(&o);
    o.allocator = (vkl_allocator){&live, count_malloc, count_realloc, count_free};
    o.log = capture;
    o.log_level = VKL_LOG_INFO;
    vkl_context *ctx;
    if (vkl_context_create(&o, &ctx)) return 2;
    char dir[] = "/tmp/test_vk_pipeline_cache.XXXXXX";
    if (!mkdtemp(dir)) return 1;
    path_tests(ctx, dir);
    vk = vkl_backend_find("vulkan");
    vkl_backend_caps caps;
    vkl_status st = vk ? test_probe_env(ctx, vk, &caps) : VKL_ERR_NOT_FOUND;
    if (st == VKL_ERR_NOT_FOUND) {
        printf("test_vk_pipeline_cache: device part skipped: %s\n", vk ? vkl_context_error(ctx) : "no vulkan backend");
        vkl_context_destroy(ctx);
        return failures ? check_finish("test_vk_pipeline_cache") : 77;
    }
    default_file_tests(ctx, dir, argc > 1 ? argv[1] : NULL);
    char p[4200];
    struct stat before, after;

    /* VKL_VK_PIPELINE_CACHE, a file a user names: absent, created; present
     * and unchanged, left alone; present and bad, replaced by a new file
     * (rename), not rewritten */
    snprintf(p, sizeof(p), "%s/cache.bin", dir);
    open_close(ctx, p);
    CHECKF(is_cache(p), "no pipeline cache written to %s", p);
    CHECK(stat(p, &before) == 0);
    open_close(ctx, p);
    CHECK(stat(p, &after) == 0 && is_cache(p) && after.st_ino == before.st_ino);
    CHECK(truncate(p, before.st_size - 1) == 0);
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
    /* what the test made, and what the driver may have put under
     * XDG_CACHE_HOME beside ours (Mesa's shader cache) */
    CHECK(nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS) == 0);
    vkl_context_destroy(ctx);
    CHECKF(live.live == 0, "%ld host allocations not freed", live.live);
    return check_finish("test_vk_pipeline_cache");
}
