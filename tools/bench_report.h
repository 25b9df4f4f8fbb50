/* What one `vkbench --decode / --prefill` run measured, kept for --json and
 * --svg after the lines are printed. */
#ifndef VKL_TOOLS_BENCH_REPORT_H
#define VKL_TOOLS_BENCH_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench_profile.h"

/* One printed line of the decode table: `tokens` is the length reached. */
typedef struct vkl_bench_window {
    size_t tokens;
    double ms_per_step, bytes_per_step, gbs, of_limit;
} vkl_bench_window;

typedef struct vkl_bench_report {
    const char *model, *backend, *device;
    double copy_bw;      /* bytes read + written per second */
    bool device_bw;      /* measured by the backend on its device (else the host's) */
    /* The roof of a prefill: ops per second (2 per multiply-add) of the
     * arithmetic the backend's GEMM runs on, measured in this run (cpu: its
     * int8 sequence; vulkan: vkl_bench_gemm_peak); 0: not measured. */
    double compute_peak;
    char compute_peak_kind[128]; /* what it is: "int8 (vpmaddubsw ...)", "f32 FMA", ... */
    size_t weight_bytes, kv_row_bytes;
    double load_seconds;
    bool verified;
    /* --decode */
    bool decoded;
    uint64_t decode_tokens, prepares, replays;
    uint64_t device_picks;  /* decode steps whose greedy token the backend chose */
    double readback_bytes;  /* read back per decode step */
    double decode_tok_s;
    vkl_bench_window *windows;
    size_t n_windows;
    /* --prefill N */
    size_t prefill_tokens, prefill_runs;
    double prefill_ms;   /* median of the runs */
    double prefill_tok_s, prefill_bytes, prefill_flops; /* bytes and FLOPs of one prefill */
    /* --profile (profile: asked for; timed: the backend has timestamps) */
    bool profile, timed;
    vkl_bench_profile decode_profile, prefill_profile;
} vkl_bench_report;

/* The reason a profile holds no per-op times. */
#define VKL_BENCH_NO_TIMES "per-op times need a backend with timestamps (vulkan, cpu)"

/* --json FILE: the report as JSON, written atomically. */
vkl_status vkl_bench_json_write(vkl_context *ctx, const char *path, const vkl_bench_report *r);

/* --svg FILE: a roofline of the profiled op types, written atomically. */
vkl_status vkl_bench_svg_write(vkl_context *ctx, const char *path, const vkl_bench_report *r);

#endif
