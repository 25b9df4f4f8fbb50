/* Regular files only (file_open.h). O_NONBLOCK is what keeps open(2) from
 * waiting for a writer on a FIFO; on a regular file it changes nothing, so
 * the descriptor is returned as opened. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "file_open.h"

const char *vkl_file_type_name(mode_t mode) {
    if (S_ISREG(mode)) return "a regular file";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a named pipe (FIFO)";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "a file of another kind";
}

vkl_status vkl_open_regular(vkl_context *ctx, const char *path, const char *what, int *fd, struct stat *sb) {
    *fd = -1;
    int f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (f < 0)
        return vkl_fail(ctx, errno == ENOENT ? VKL_ERR_NOT_FOUND : VKL_ERR_IO, "cannot open %s '%s': %s", what, path,
                        strerror(errno));
    if (fstat(f, sb) != 0) {
        vkl_status st = vkl_fail(ctx, VKL_ERR_IO, "cannot stat %s '%s': %s", what, path, strerror(errno));
        close(f);
        return st;
    }
    if (!S_ISREG(sb->st_mode)) {
        close(f);
        return vkl_fail(ctx, VKL_ERR_IO, "%s '%s' is not a regular file: it is %s", what, path,
                        vkl_file_type_name(sb->st_mode));
    }
    *fd = f;
    return VKL_OK;
}
