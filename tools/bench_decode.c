/* vkbench --decode (bench_decode.h). Each step reads all weights once plus
 * the KV rows attended (the padded length): those bytes over the step time,
 * beside the copy bandwidth, say how close decode is to its limit. */
#include <stdio.h>
#include <stdlib.h>

#include "bench_decode.h"
#include "backend_env.h"
#include "bench_util.h"
#include "profile.h"

vkl_status vkl_bench_decode(vkl_context *ctx, vkl_model *m, size_t tokens, size_t window, vkl_bench_report *r) {
    vkl_session_options so;
    vkl_session_options_init(&so);
    so.max_context = tokens + 1;
    vkl_session *s = NULL;
    int32_t tok = 1;
    r->windows = calloc((tokens - 1) / window + 2, sizeof(vkl_bench_window));
    vkl_status st = r->windows ? VKL_OK : vkl_fail(ctx, VKL_ERR_OUT_OF_MEMORY, "decode: out of host memory");
    if (!st) st = vkl_env_session_options(ctx, &so);
    if (!st) st = vkl_session_create(m, &so, &s);
    if (!st) st = vkl_session_append(s, &tok, 1);
    /* the graph decode steps run: with greedy sampling on the device, the
     * model's plus the pick (engine/greedy_pick.h) */
    if (!st && r->profile)
        st = vkl_bench_profile_init(ctx, vkl_session_last_graph(s), "decode", r->timed, &r->decode_profile);
    vkl_session_stats stats;
    vkl_session_get_stats(s, &stats);
    r->kv_row_bytes = stats.kv_bytes / so.max_context;
    if (!st) printf("decode: %zu KV bytes per token\n", r->kv_row_bytes);
    if (!st) printf("%10s %12s %14s %14s %10s\n", "tokens", "ms/step", "bytes/step", "GB/s", "of limit");
    double t_window = 0, bytes_window = 0;
    for (size_t i = 1; i < tokens && !st; i++) {
        double t0 = vkl_bench_now();
        st = vkl_session_sample(s, &tok);
        if (!st) st = vkl_session_append(s, &tok, 1);
        double dt = vkl_bench_now() - t0;
        /* outside the timed part: the host work of the accounting is no step's */
        if (!st && r->profile) st = vkl_bench_profile_add(&r->decode_profile, ctx, s, dt);
        size_t len = vkl_session_length(s), padded = (len + so.pad_multiple - 1) / so.pad_multiple * so.pad_multiple;
        if (padded > so.max_context) padded = so.max_context;
        t_window += dt;
        bytes_window += (double)(r->weight_bytes + r->kv_row_bytes * padded);
        if (!st && (i % window == 0 || i + 1 == tokens)) {
            size_t steps = i % window ? i % window : window;
            vkl_bench_window *w = &r->windows[r->n_windows++];
            w->tokens = len;
            w->ms_per_step = 1e3 * t_window / (double)steps;
            w->bytes_per_step = bytes_window / (double)steps;
            w->gbs = bytes_window / t_window / 1e9;
            w->of_limit = w->gbs * 1e9 / r->copy_bw;
            printf("%10zu %12.3f %14.0f %14.2f %9.1f%%\n", len, w->ms_per_step, w->bytes_per_step, w->gbs,
                   100.0 * w->of_limit);
            t_window = bytes_window = 0;
        }
    }
    vkl_session_get_stats(s, &stats);
    if (!st) {
        r->decoded = true;
        r->decode_tokens = stats.decode_tokens;
        r->decode_tok_s = (double)stats.decode_tokens / stats.decode_seconds;
        r->prepares = stats.prepares;
        r->replays = stats.replays;
        r->device_picks = stats.device_picks;
        r->readback_bytes = (double)stats.readback_bytes / (double)stats.decode_tokens;
        printf("decode: %llu tokens, %.1f tok/s; %llu prepares, %llu replays\n", (unsigned long long)stats.decode_tokens,
               r->decode_tok_s, (unsigned long long)stats.prepares, (unsigned long long)stats.replays);
        printf("sampling: %s; %llu tokens picked by the backend, %.1f bytes read back per step\n",
               stats.device_picks ? "greedy on the device" : "on the host (VKL_DEVICE_SAMPLING=0, or not greedy)",
               (unsigned long long)stats.device_picks, r->readback_bytes);
        if (m->be->state_traffic)
            printf("KV cache traffic (counted by the backend): %.1f MB written in place, %.1f MB read by attention, "
                   "%llu bytes copied\n",
                   (double)stats.kv_bytes_written / 1e6, (double)stats.kv_bytes_read / 1e6,
                   (unsigned long long)stats.kv_bytes_copied);
        else
            printf("KV cache traffic: not counted by the %s backend (bytes/step above assume each attended row "
                   "read once)\n", m->be->name);
    }
    vkl_session_free(s);
    return st;
}
