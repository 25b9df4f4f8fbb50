/* `vkllm import` killed with SIGINT or SIGTERM while it writes its output
 * leaves neither the output nor its temporary file behind, and dies of the
 * signal. A real import of tests/models/llama is started again and again;
 * this process watches the output's directory and sends the signal as soon
 * as the temporary file appears. A try where the write finished first (the
 * output exists) does not count; each signal must catch at least one write
 * in progress within the tries, and no try may leave a temporary file.
 * Usage: test_import_signal VKLLM MODEL.onnx */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TRIES 60

/* The temporary file's name in dir, if there is one. */
static bool find_temp(const char *dir, char *name, size_t cap) {
    DIR *d = opendir(dir);
    if (!d) return false;
    struct dirent *e;
    bool found = false;
    while (!found && (e = readdir(d)))
        if (!strncmp(e->d_name, ".out.vkm.tmp-", 13)) found = snprintf(name, cap, "%s", e->d_name) > 0;
    closedir(d);
    return found;
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

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef enum { TRY_CAUGHT, TRY_TOO_LATE, TRY_FAILED } try_result;

/* One import, signalled when its temporary file shows (or, on tries that
 * never see one, after `delay` seconds). */
static try_result one_try(const char *vkllm, const char *model, const char *dir, int sig, double delay) {
    char out[4200];
    snprintf(out, sizeof(out), "%s/out.vkm", dir);
    unlink(out);
    fflush(stdout); /* or the child's freopen prints it again */
    pid_t pid = fork();
    if (pid < 0) return TRY_FAILED;
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stdout)) _exit(126);
        execl(vkllm, vkllm, "import", model, "-o", out, (char *)NULL);
        _exit(127);
    }
    char temp[512] = "";
    double t0 = now();
    int status;
    bool sent = false, exited = false;
    while (!sent) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
            exited = true;
            break;
        }
        if (find_temp(dir, temp, sizeof(temp)) || now() - t0 > delay) {
            kill(pid, sig);
            sent = true;
        }
        /* a short nap: spinning would take a core from the import itself */
        nanosleep(&(struct timespec){0, 20000}, NULL);
    }
    if (!exited && waitpid(pid, &status, 0) != pid) return TRY_FAILED;
    bool has_out = access(out, F_OK) == 0;
    char left[512];
    if (find_temp(dir, left, sizeof(left))) {
        fprintf(stderr, "FAIL: signal %d left the temporary file %s/%s\n", sig, dir, left);
        return TRY_FAILED;
    }
    if (has_out) { /* the write finished before the signal arrived */
        unlink(out);
        return TRY_TOO_LATE;
    }
    if (!sent || !WIFSIGNALED(status) || WTERMSIG(status) != sig) {
        fprintf(stderr, "FAIL: import ended with status %d and no output, signal %d %s\n", status, sig,
                sent ? "sent" : "not sent");
        return TRY_FAILED;
    }
    if (count_entries(dir) != 0) {
        fprintf(stderr, "FAIL: files left in %s after signal %d\n", dir, sig);
        return TRY_FAILED;
    }
    /* Killed with nothing left. It counts as caught mid-write only when the
     * temporary file had been seen; otherwise the import was still reading. */
    return temp[0] ? TRY_CAUGHT : TRY_TOO_LATE;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: test_import_signal VKLLM MODEL.onnx\n");
        return 2;
    }
    char dir[] = "/tmp/test_import_signal.XXXXXX";
    if (!mkdtemp(dir)) return 1;
    static const int sigs[] = {SIGINT, SIGTERM};
    int failed = 0;
    for (size_t s = 0; s < 2; s++) {
        int caught = 0, late = 0;
        /* without a temporary file in sight, signal after a delay that grows:
         * a machine under load reaches the write later */
        for (int t = 0; t < TRIES && !caught && !failed; t++) {
            try_result r = one_try(argv[1], argv[2], dir, sigs[s], 0.05 * (t + 1));
            if (r == TRY_FAILED) failed++;
            else if (r == TRY_CAUGHT) caught++;
            else late++;
        }
        printf("signal %d: %s after %d tries that came too early or too late\n", sigs[s],
               caught ? "caught a write in progress, nothing left" : "never caught a write in progress", late);
        if (!caught) failed++;
    }
    DIR *d = opendir(dir); /* whatever a failure left */
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char path[4200];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlink(path);
    }
    if (d) closedir(d);
    rmdir(dir);
    printf("test_import_signal: %s\n", failed ? "FAILED" : "ok");
    return failed ? 1 : 0;
}
