/* Progress of a long command on stderr: nothing for the first ~2 s (short
 * runs stay silent), then a bar redrawn in place when stderr is a terminal,
 * or a plain line every few seconds when it is not (logs, CI); nothing at
 * all when quiet. One phase at a time ("read", "quantize", "write"); phases
 * with a known amount of work show it. Not thread-safe: call from one
 * thread (the quantize pass calls its hook on the calling thread). */
#ifndef VKL_TOOLS_PROGRESS_H
#define VKL_TOOLS_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct vkl_progress {
    FILE *out;
    bool quiet, tty;
    bool shown;        /* a line has been drawn (the bar needs a newline at the end) */
    double start;      /* when the command began */
    double last;       /* when a line was last drawn */
    const char *label; /* "import" */
    const char *phase;
    /* Each phase's wall time, for the summary (vkl_progress_times). */
    const char *names[8];
    double seconds[8];
    unsigned n_phases;
    double phase_start;
} vkl_progress;

void vkl_progress_init(vkl_progress *p, const char *label, bool quiet);
/* A new phase; its amount of work, if any, comes through vkl_progress_update. */
void vkl_progress_phase(vkl_progress *p, const char *phase);
/* done of total bytes in the current phase. */
void vkl_progress_update(vkl_progress *p, uint64_t done, uint64_t total);
/* Ends the bar's line (before other output). */
void vkl_progress_end(vkl_progress *p);
/* Seconds since init. */
double vkl_progress_elapsed(const vkl_progress *p);
/* "read 0.3 s, quantize 5.1 s, write 3.2 s": the phases so far (the current
 * one up to now), into buf; returns buf. */
const char *vkl_progress_times(vkl_progress *p, char *buf, size_t cap);

#endif
