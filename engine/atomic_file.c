/* Atomic output files (atomic_file.h): destination checks, the temporary
 * file's life, and the removal of temporary files whose writer died. */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "atomic_file.h"
#include "file_open.h"

static void report_temp(vkl_context *ctx, const char *tmp) {
    if (ctx->temp_file) ctx->temp_file(ctx->temp_file_user, tmp);
}

vkl_status vkl_output_path_check(vkl_context *ctx, const char *path) {
    size_t n = strlen(path);
    if (!n) return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "cannot write '': an empty path");
    if (path[n - 1] == '/')
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "cannot write '%s': the path names a directory", path);
    struct stat sb;
    /* stat, not lstat: a link to /dev/null is as much a device as the node */
    if (stat(path, &sb) != 0) {
        if (errno == ENOENT) return VKL_OK;
        return vkl_fail(ctx, VKL_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    }
    if (!S_ISREG(sb.st_mode))
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT,
                        "cannot write '%s': it is %s; an output must be a regular file or a new path", path,
                        vkl_file_type_name(sb.st_mode));
    return VKL_OK;
}

/* ".NAME.tmp-" then the writer's PID, '-', hex digits: the PID, or 0 when
 * `entry` is not such a name. */
static long temp_owner(const char *entry, const char *base) {
    size_t nb = strlen(base);
    if (entry[0] != '.' || strncmp(entry + 1, base, nb) || strncmp(entry + 1 + nb, ".tmp-", 5)) return 0;
    const char *p = entry + 1 + nb + 5;
    long pid = 0;
    int digits = 0;
    for (; *p >= '0' && *p <= '9' && digits < 10; p++, digits++) pid = pid * 10 + (*p - '0');
    if (!digits || *p++ != '-' || !*p) return 0;
    for (; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) return 0;
    return pid;
}

/* Temporary files for this destination whose process is gone (a kill -9,
 * a crash, a power cut). A PID only means something on this host and in
 * this PID namespace: a writer elsewhere sharing the directory looks dead
 * from here, a risk taken for files named after our own output. */
static void remove_stale(vkl_context *ctx, const char *path, size_t dir_len) {
    char dir[4096];
    if (dir_len >= sizeof(dir)) return;
    memcpy(dir, path, dir_len);
    dir[dir_len] = 0;
    DIR *d = opendir(dir_len ? dir : ".");
    if (!d) return;
    const char *base = path + dir_len;
    struct dirent *e;
    while ((e = readdir(d))) {
        long pid = temp_owner(e->d_name, base);
        if (pid <= 0 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        char stale[8192];
        struct stat sb;
        if (snprintf(stale, sizeof(stale), "%s%s", dir, e->d_name) >= (int)sizeof(stale)) continue;
        if (lstat(stale, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
        if (unlink(stale) == 0)
            vkl_log(ctx, VKL_LOG_INFO, "removed '%s', left by process %ld which no longer exists", stale, pid);
    }
    closedir(d);
}

vkl_status vkl_atomic_file_open(vkl_context *ctx, const char *path, vkl_atomic_file *f) {
    *f = (vkl_atomic_file){ctx, path, NULL, -1, 0};
    vkl_status st = vkl_output_path_check(ctx, path);
    if (st) return st;
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0, cap;
    remove_stale(ctx, path, dir_len);
    if (!vkl_add_size(strlen(path), 64, &cap))
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "cannot write '%s': path too long", path);
    char *tmp = vkl_malloc(ctx, cap);
    if (!tmp) return VKL_ERR_OUT_OF_MEMORY;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    for (unsigned attempt = 0; attempt < 100; attempt++) {
        snprintf(tmp, cap, "%.*s.%s.tmp-%ld-%lx%02x", (int)dir_len, path, path + dir_len, (long)getpid(),
                 (unsigned long)ts.tv_nsec ^ (unsigned long)ts.tv_sec, attempt);
        /* Told before the file exists, so that no moment has a file on disk
         * a signal handler does not know of; the name holds our PID, so a
         * file already there under it is ours or a dead namesake's. */
        report_temp(ctx, tmp);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) {
            f->tmp = tmp;
            f->fd = fd;
            return VKL_OK;
        }
        int err = errno;
        report_temp(ctx, NULL);
        errno = err;
        if (errno != EEXIST) {
            st = vkl_fail(ctx, VKL_ERR_IO, "cannot create temporary file '%s' for '%s': %s", tmp, path,
                          strerror(errno));
            vkl_free(ctx, tmp);
            return st;
        }
    }
    vkl_free(ctx, tmp);
    return vkl_fail(ctx, VKL_ERR_IO, "cannot create a temporary file beside '%s': every name tried exists", path);
}

vkl_status vkl_atomic_file_write(vkl_atomic_file *f, const void *data, size_t n) {
    const unsigned char *p = data;
    while (n) {
        size_t chunk = n > ((size_t)1 << 30) ? ((size_t)1 << 30) : n;
        ssize_t w = write(f->fd, p, chunk);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0)
            return vkl_fail(f->ctx, VKL_ERR_IO, "cannot write '%s' (temporary file '%s') at offset %zu: %s", f->path,
                            f->tmp, f->written, w < 0 ? strerror(errno) : "no progress");
        p += w;
        n -= (size_t)w;
        f->written += (size_t)w;
    }
    return VKL_OK;
}

/* Makes the rename durable. Best effort: the file is already complete and in
 * place, so a failure here is logged, not returned. */
static void sync_dir(vkl_context *ctx, const char *path) {
    const char *slash = strrchr(path, '/');
    char dir[4096];
    if (!slash) {
        snprintf(dir, sizeof(dir), ".");
    } else {
        size_t n = (size_t)(slash - path);
        if (n >= sizeof(dir)) return;
        memcpy(dir, path, n);
        dir[n ? n : 1] = 0;
        if (!n) dir[0] = '/';
    }
    int fd = open(dir, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0) vkl_log(ctx, VKL_LOG_WARN, "fsync of directory '%s' failed: %s", dir, strerror(errno));
    if (fd >= 0) close(fd);
}

vkl_status vkl_atomic_file_commit(vkl_atomic_file *f) {
    vkl_context *ctx = f->ctx;
    vkl_status st = VKL_OK;
    if (fsync(f->fd) != 0)
        st = vkl_fail(ctx, VKL_ERR_IO, "cannot write '%s': fsync of '%s' failed: %s", f->path, f->tmp, strerror(errno));
    int fd = f->fd;
    f->fd = -1;
    if (close(fd) != 0 && !st)
        st = vkl_fail(ctx, VKL_ERR_IO, "cannot write '%s': close of '%s' failed: %s", f->path, f->tmp, strerror(errno));
    /* again: the name may have changed kind since open (narrows, cannot close, the window) */
    if (!st) st = vkl_output_path_check(ctx, f->path);
    if (!st && rename(f->tmp, f->path) != 0)
        st = vkl_fail(ctx, VKL_ERR_IO, "cannot write '%s': rename from '%s' failed: %s", f->path, f->tmp,
                      strerror(errno));
    if (st) {
        vkl_atomic_file_abort(f);
        return st;
    }
    report_temp(ctx, NULL);
    vkl_free(ctx, f->tmp);
    f->tmp = NULL;
    sync_dir(ctx, f->path);
    return VKL_OK;
}

void vkl_atomic_file_abort(vkl_atomic_file *f) {
    if (f->fd >= 0) close(f->fd);
    f->fd = -1;
    if (!f->tmp) return;
    unlink(f->tmp);
    report_temp(f->ctx, NULL);
    vkl_free(f->ctx, f->tmp);
    f->tmp = NULL;
}
