/* Opening a file the engine maps or reads whole (.vkm, .onnx, external
 * data, a pipeline cache): it must be a regular file, and a named pipe, a
 * device or a directory is refused at once instead of blocking in open(2)
 * or reading forever. */
#ifndef VKL_FILE_OPEN_H
#define VKL_FILE_OPEN_H

#include <sys/stat.h>

#include "context.h"

/* "a directory", "a named pipe (FIFO)", ... for messages. */
const char *vkl_file_type_name(mode_t mode);

/* Opens `path` read-only and close-on-exec; *fd and *sb on success. `what`
 * names the file in messages ("model file", "external data file"). Fails
 * with VKL_ERR_NOT_FOUND when it does not exist, else VKL_ERR_IO, naming
 * the path and, for the wrong kind of file, its kind. */
vkl_status vkl_open_regular(vkl_context *ctx, const char *path, const char *what, int *fd, struct stat *sb);

#endif
