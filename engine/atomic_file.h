/* Output files written whole or not at all: bytes go to a temporary file
 * beside the destination, which is fsynced and renamed over it. Readers see
 * the old file or the new one, never a part.
 *
 * The destination must be a regular file or a new path: never a directory,
 * a device, a FIFO or a socket (rename(2) replaces whatever the name holds,
 * so `-o /dev/null` run as root once turned the device node into a regular
 * file). The temporary file is ".NAME.tmp-PID-STAMP" in the same directory;
 * it is removed on every failure, its name is reported to the context's
 * temp-file hook so a signal handler can remove it too, and one left behind
 * by a process that no longer exists is removed by the next write to the
 * same destination. */
#ifndef VKL_ATOMIC_FILE_H
#define VKL_ATOMIC_FILE_H

#include <stddef.h>

#include "context.h"

typedef struct vkl_atomic_file {
    vkl_context *ctx;
    const char *path; /* the destination, borrowed */
    char *tmp;        /* the temporary file; NULL once renamed or removed */
    int fd;           /* -1 once closed */
    size_t written;
} vkl_atomic_file;

/* Whether `path` may be written: absent, or (after symbolic links) a
 * regular file. VKL_ERR_INVALID_ARGUMENT naming what it is otherwise,
 * VKL_ERR_IO when it cannot be examined. */
vkl_status vkl_output_path_check(vkl_context *ctx, const char *path);

/* Checks the destination, removes stale temporary files of dead processes
 * beside it, creates this one's exclusively. On failure nothing is left
 * and *f needs no abort. */
vkl_status vkl_atomic_file_open(vkl_context *ctx, const char *path, vkl_atomic_file *f);
/* All of data, retrying short writes and EINTR. */
vkl_status vkl_atomic_file_write(vkl_atomic_file *f, const void *data, size_t n);
/* fsync, close, check the destination again, rename, fsync the directory
 * (best effort). On failure the temporary file is removed. */
vkl_status vkl_atomic_file_commit(vkl_atomic_file *f);
/* Closes and removes the temporary file; safe after commit and twice. */
void vkl_atomic_file_abort(vkl_atomic_file *f);

#endif
