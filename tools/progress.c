/* vkl_progress: see progress.h. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, fileno */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "progress.h"

#define QUIET_SECONDS 2.0 /* runs shorter than this print nothing */
#define TTY_PERIOD 0.1    /* redraws of the bar */
#define LOG_PERIOD 5.0    /* plain lines when stderr is not a terminal */
#define BAR_WIDTH 30

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void vkl_progress_init(vkl_progress *p, const char *label, bool quiet) {
    memset(p, 0, sizeof(*p));
    p->out = stderr;
    p->quiet = quiet;
    p->tty = isatty(fileno(stderr));
    p->start = p->last = p->phase_start = now();
    p->label = label;
    p->phase = "";
}

/* Closes the current phase's time. */
static void close_phase(vkl_progress *p, double t) {
    if (*p->phase && p->n_phases < sizeof(p->names) / sizeof(p->names[0])) {
        p->names[p->n_phases] = p->phase;
        p->seconds[p->n_phases++] = t - p->phase_start;
    }
    p->phase_start = t;
}

const char *vkl_progress_times(vkl_progress *p, char *buf, size_t cap) {
    close_phase(p, now());
    p->phase = "";
    size_t at = 0;
    buf[0] = 0;
    for (unsigned i = 0; i < p->n_phases && at < cap; i++) {
        int n = snprintf(buf + at, cap - at, "%s%s %.2f s", i ? ", " : "", p->names[i], p->seconds[i]);
        if (n < 0) break;
        at += (size_t)n;
    }
    return buf;
}

double vkl_progress_elapsed(const vkl_progress *p) { return now() - p->start; }

static void draw(vkl_progress *p, double t, uint64_t done, uint64_t total) {
    double mb = 1.0 / (1 << 20), frac = total ? (double)done / (double)total : 0.0;
    if (frac > 1.0) frac = 1.0;
    if (p->tty) {
        char bar[BAR_WIDTH + 1];
        int fill = total ? (int)(frac * BAR_WIDTH + 0.5) : 0;
        for (int i = 0; i < BAR_WIDTH; i++) bar[i] = i < fill ? '#' : '-';
        bar[BAR_WIDTH] = 0;
        /* \033[K clears what a longer previous line left */
        if (total)
            fprintf(p->out, "\r%s: %-9s [%s] %3.0f%% %7.0f / %.0f MiB  %5.1f s\033[K", p->label, p->phase, bar,
                    100.0 * frac, (double)done * mb, (double)total * mb, t - p->start);
        else
            fprintf(p->out, "\r%s: %-9s %5.1f s\033[K", p->label, p->phase, t - p->start);
    } else if (total) {
        fprintf(p->out, "%s: %s %.0f%% (%.0f of %.0f MiB) after %.1f s\n", p->label, p->phase, 100.0 * frac,
                (double)done * mb, (double)total * mb, t - p->start);
    } else {
        fprintf(p->out, "%s: %s after %.1f s\n", p->label, p->phase, t - p->start);
    }
    fflush(p->out);
    p->shown = true;
    p->last = t;
}

void vkl_progress_phase(vkl_progress *p, const char *phase) {
    double t = now();
    close_phase(p, t);
    p->phase = phase;
    if (!p->quiet && t - p->start >= QUIET_SECONDS) draw(p, t, 0, 0);
}

void vkl_progress_update(vkl_progress *p, uint64_t done, uint64_t total) {
    if (p->quiet) return;
    double t = now();
    if (t - p->start < QUIET_SECONDS) return;
    bool finished = total && done >= total;
    if (t - p->last < (p->tty ? TTY_PERIOD : LOG_PERIOD) && !(finished && p->tty)) return;
    draw(p, t, done, total);
}

void vkl_progress_end(vkl_progress *p) {
    if (p->tty && p->shown) fputc('\n', p->out);
    p->shown = false;
}
