/* Temporary files removed on SIGINT/SIGTERM/SIGHUP (cleanup.h).
 *
 * The one piece of global mutable state in vkllm: a signal handler gets no
 * argument, so the temporary file's name must be where it can read it. It is
 * written only through the context's temp-file hook (on the writing thread),
 * and the handler does nothing but unlink(2) and raise(3), both
 * async-signal-safe. The name is copied while `armed` is 0 and published by
 * setting it (a lock-free atomic, so a handler on any thread sees a whole
 * name or none). One temporary file at a time: the tools write one output
 * at a time. */
#define _POSIX_C_SOURCE 200809L

#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"

static char temp_path[4096];
static atomic_int armed;

static void on_temp(void *user, const char *tmp) {
    (void)user;
    atomic_store(&armed, 0);
    if (!tmp) return;
    size_t n = strlen(tmp);
    if (n >= sizeof(temp_path)) return; /* too long to keep: left behind on a signal, removed by the next write */
    memcpy(temp_path, tmp, n + 1);
    atomic_store(&armed, 1);
}

static void on_signal(int sig) {
    if (atomic_load(&armed)) unlink(temp_path);
    /* SA_RESETHAND restored the default action: the raised signal ends the
     * process once this handler returns, with the status a shell expects */
    raise(sig);
}

void vkl_tool_cleanup_on_signal(vkl_context *ctx) {
    static const int signals[] = {SIGINT, SIGTERM, SIGHUP};
    vkl_context_set_temp_file_hook(ctx, on_temp, NULL);
    /* Past a file size limit (ulimit -f) write(2) then fails with EFBIG and
     * the writer removes its file and says so, instead of the process dying
     * of SIGXFSZ with the file left behind. */
    signal(SIGXFSZ, SIG_IGN);
    for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++) {
        struct sigaction old, sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_signal;
        sa.sa_flags = SA_RESETHAND;
        sigemptyset(&sa.sa_mask);
        if (sigaction(signals[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN) sigaction(signals[i], &sa, NULL);
    }
}
