/* The tools' answer to SIGINT, SIGTERM and SIGHUP while an output is being
 * written: remove its temporary file, then die of the signal as before. */
#ifndef VKL_TOOLS_CLEANUP_H
#define VKL_TOOLS_CLEANUP_H

#include "context.h"

/* Installs the handlers (leaving a signal the process ignores ignored),
 * ignores SIGXFSZ (a write past ulimit -f fails cleanly instead) and
 * registers with ctx's temp-file hook. Call once, before any write. */
void vkl_tool_cleanup_on_signal(vkl_context *ctx);

#endif
