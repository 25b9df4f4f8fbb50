/* engine/atomic_file.c: what an output may be (a regular file or a new
 * path, never a directory, FIFO, socket or device, also behind a symbolic
 * link), the temporary file's life as the temp-file hook sees it, cleanup on
 * abort and on a failed commit, and the removal of temporary files left by
 * dead processes (only those, only for the same output). */
#define _XOPEN_SOURCE 700 /* mknod, S_IFCHR */

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h> /* makedev */
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "atomic_file.h"
#include "check.h"

/* What the hook was told: the live temporary path, and how often. */
typedef struct hook_log {
    char live[4096];
    int created, gone;
} hook_log;

static void on_temp(void *user, const char *tmp) {
    hook_log *h = user;
    if (tmp) {
        snprintf(h->live, sizeof(h->live), "%s", tmp);
        h->created++;
    } else {
        h->live[0] = 0;
        h->gone++;
    }
}

static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

static bool exists(const char *path) {
    struct stat sb;
    return lstat(path, &sb) == 0;
}

static bool write_file(vkl_context *ctx, const char *path, const char *text) {
    vkl_atomic_file f;
    vkl_status st = vkl_atomic_file_open(ctx, path, &f);
    if (!st) st = vkl_atomic_file_write(&f, text, strlen(text));
    if (!st) st = vkl_atomic_file_commit(&f);
    else vkl_atomic_file_abort(&f);
    return st == VKL_OK;
}

static bool file_is(const char *path, const char *text) {
    size_t n;
    uint8_t *got = check_read_file(path, &n);
    bool ok = got && n == strlen(text) && !memcmp(got, text, n);
    free(got);
    return ok;
}

static void test_write_and_replace(vkl_context *ctx, hook_log *h, const char *dir) {
    char p[4200];
    snprintf(p, sizeof(p), "%s/out.vkm", dir);
    CHECKF(write_file(ctx, p, "first"), "new path: %s", vkl_context_error(ctx));
    CHECK(file_is(p, "first") && count_entries(dir) == 1);
    CHECK(h->created == 1 && h->gone == 1 && !h->live[0]);
    CHECKF(write_file(ctx, p, "second"), "replace: %s", vkl_context_error(ctx));
    CHECK(file_is(p, "second") && count_entries(dir) == 1);

    /* abort: the temporary file goes, the destination stays as it was */
    vkl_atomic_file f;
    CHECK_OK(ctx, vkl_atomic_file_open(ctx, p, &f));
    CHECK(h->live[0] && exists(h->live) && count_entries(dir) == 2);
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s", h->live);
    CHECK_OK(ctx, vkl_atomic_file_write(&f, "third", 5));
    vkl_atomic_file_abort(&f);
    vkl_atomic_file_abort(&f);
    CHECK(!exists(tmp) && !h->live[0] && file_is(p, "second") && count_entries(dir) == 1);

    /* the destination turns into a directory while it is written: the
     * commit checks again, fails, and removes the temporary file */
    CHECK_OK(ctx, vkl_atomic_file_open(ctx, p, &f));
    snprintf(tmp, sizeof(tmp), "%s", h->live);
    CHECK_OK(ctx, vkl_atomic_file_write(&f, "fourth", 6));
    CHECK(unlink(p) == 0 && mkdir(p, 0700) == 0);
    CHECK_ERR(ctx, vkl_atomic_file_commit(&f), VKL_ERR_INVALID_ARGUMENT, "it is a directory");
    CHECK(!exists(tmp) && !h->live[0] && count_entries(dir) == 1);
    rmdir(p);
}

/* Every kind of file an output must not be; nothing is created beside it. */
static void test_refused(vkl_context *ctx, hook_log *h, const char *dir) {
    char p[4200], q[4300];
    vkl_atomic_file f;
    int created = h->created;
    snprintf(p, sizeof(p), "%s/adir", dir);
    CHECK(mkdir(p, 0700) == 0);
    CHECK_ERR(ctx, vkl_atomic_file_open(ctx, p, &f), VKL_ERR_INVALID_ARGUMENT, "it is a directory");
    CHECK_ERR(ctx, vkl_atomic_file_open(ctx, ".", &f), VKL_ERR_INVALID_ARGUMENT, "it is a directory");
    snprintf(q, sizeof(q), "%s/", p);
    CHECK_ERR(ctx, vkl_atomic_file_open(ctx, q, &f), VKL_ERR_INVALID_ARGUMENT, "names a directory");
    rmdir(p);
    CHECK_ERR(ctx, vkl_atomic_file_open(ctx, "", &f), VKL_ERR_INVALID_ARGUMENT, "empty path");

    snprintf(p, sizeof(p), "%s/fifo", dir);
    CHECK(mkfifo(p, 0600) == 0);
    CHECK_ERR(ctx, vkl_atomic_file_open(ctx, p, &f), VKL_ERR_INVALID_ARGUMENT, "a named pipe (FIFO)");
    snprintf(q, sizeof(q), "%s/link", dir);
    CHECK(symlink(p, q) == 0);
    CHECK_ERR(ctx, vkl_atomic_file_open(ctx, q, &f), VKL_ERR_INVALID_ARGUMENT, "a named pipe (FIFO)");
    CHECK(exists(p) && exists(q) && count_entries(dir) == 2);
    unlink(q);
    unlink(p);

    snprintf(p, sizeof(p), "%s/sock", dir);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (s >= 0 && strlen(p) < sizeof(addr.sun_path)) {
        memcpy(addr.sun_path, p, strlen(p) + 1);
        CHECK(bind(s, (struct sockaddr *)&addr, sizeof(addr)) == 0);
        CHECK_ERR(ctx, vkl_atomic_file_open(ctx, p, &f), VKL_ERR_INVALID_ARGUMENT, "a socket");
        unlink(p);
    }
    if (s >= 0) close(s);

    /* A device: as root a private node (rename would replace it), else only
     * the check on /dev/null, which writes nothing. */
    if (geteuid() == 0) {
        snprintf(p, sizeof(p), "%s/null", dir);
        CHECK(mknod(p, S_IFCHR | 0666, makedev(1, 3)) == 0);
        CHECK_ERR(ctx, vkl_atomic_file_open(ctx, p, &f), VKL_ERR_INVALID_ARGUMENT, "a character device");
        struct stat sb;
        CHECK(stat(p, &sb) == 0 && S_ISCHR(sb.st_mode));
        unlink(p);
    }
    CHECK_ERR(ctx, vkl_output_path_check(ctx, "/dev/null"), VKL_ERR_INVALID_ARGUMENT, "a character device");
    snprintf(p, sizeof(p), "%s/no/such/dir/out.vkm", dir);
    CHECK_ERR(ctx, vkl_atomic_file_open(ctx, p, &f), VKL_ERR_IO, "No such file");
    /* the failed create told the hook of its name and took it back */
    CHECK(count_entries(dir) == 0 && h->created == created + 1 && h->gone == h->created && !h->live[0]);
}

/* A PID that no longer exists: a child that has exited and been reaped. */
static pid_t dead_pid(void) {
    pid_t pid = fork();
    if (pid == 0) _exit(0);
    int status;
    if (pid > 0) waitpid(pid, &status, 0);
    return pid;
}

static void touch(const char *dir, const char *name) {
    char p[4200];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    CHECKF(f && fputs("stale", f) >= 0, "create %s", p);
    if (f) fclose(f);
}

static void test_stale(vkl_context *ctx, const char *dir) {
    pid_t dead = dead_pid();
    REQUIRE(dead > 0, "fork");
    char name[256], p[4200];
    snprintf(name, sizeof(name), ".out.vkm.tmp-%ld-1a2b3c00", (long)dead); /* removed */
    touch(dir, name);
    snprintf(name, sizeof(name), ".out.vkm.tmp-%ld-ff01", (long)getppid()); /* alive: kept */
    touch(dir, name);
    snprintf(name, sizeof(name), ".other.vkm.tmp-%ld-1a2b", (long)dead); /* another output: kept */
    touch(dir, name);
    snprintf(name, sizeof(name), ".out.vkm.tmp-%ld-xyz", (long)dead); /* not our pattern: kept */
    touch(dir, name);
    snprintf(name, sizeof(name), ".out.vkm.tmp-%ld-dead", (long)dead); /* a directory: kept */
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    CHECK(mkdir(p, 0700) == 0);
    CHECK(count_entries(dir) == 5);
    snprintf(p, sizeof(p), "%s/out.vkm", dir);
    CHECKF(write_file(ctx, p, "fresh"), "write beside stale files: %s", vkl_context_error(ctx));
    snprintf(p, sizeof(p), "%s/.out.vkm.tmp-%ld-1a2b3c00", dir, (long)dead);
    CHECKF(!exists(p), "the dead process's temporary file %s is still there", p);
    CHECK(count_entries(dir) == 5); /* out.vkm + the four kept */
    snprintf(p, sizeof(p), "%s/.out.vkm.tmp-%ld-dead", dir, (long)dead);
    rmdir(p);
}

int main(void) {
    vkl_context *ctx;
    if (vkl_context_create(NULL, &ctx)) return 1;
    hook_log h = {{0}, 0, 0};
    vkl_context_set_temp_file_hook(ctx, on_temp, &h);
    char dir[] = "/tmp/test_atomic_file.XXXXXX";
    if (!mkdtemp(dir)) return 1;
    test_write_and_replace(ctx, &h, dir);
    char p[4200];
    snprintf(p, sizeof(p), "%s/out.vkm", dir);
    unlink(p);
    test_refused(ctx, &h, dir);
    test_stale(ctx, dir);
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlink(p);
    }
    if (d) closedir(d);
    rmdir(dir);
    vkl_context_destroy(ctx);
    return check_finish("test_atomic_file");
}
