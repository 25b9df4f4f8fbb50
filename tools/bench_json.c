/* vkbench --json FILE (bench_report.h): the figures vkbench printed, as one
 * JSON object, replaced atomically. Units are in the key names; per-op
 * figures are per step (the mean of the profiled steps); a profile without
 * timestamps holds "unavailable" and no ops. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "bench_report.h"
#include "bench_util.h"

/* cJSON returns NULL on allocation failure and accepts NULL parents, so a
 * failure anywhere shows as a missing item: `ok` tracks it. */
typedef struct builder {
    bool ok;
} builder;

static cJSON *num(builder *b, cJSON *obj, const char *key, double v) {
    cJSON *item = cJSON_AddNumberToObject(obj, key, v);
    b->ok &= item != NULL;
    return item;
}

static cJSON *obj(builder *b, cJSON *parent, const char *key) {
    cJSON *item = cJSON_AddObjectToObject(parent, key);
    b->ok &= item != NULL;
    return item;
}

static void str(builder *b, cJSON *parent, const char *key, const char *v) {
    b->ok &= cJSON_AddStringToObject(parent, key, v) != NULL;
}

static void per_sec(builder *b, cJSON *o, double bytes, double flops, double ms, double copy_bw) {
    const double gbs = ms > 0 ? bytes / ms * 1e-6 : 0;
    num(b, o, "gb_per_s", gbs);
    num(b, o, "gflop_per_s", ms > 0 ? flops / ms * 1e-6 : 0);
    if (copy_bw > 0) num(b, o, "of_copy_bandwidth", gbs * 1e9 / copy_bw);
}

/* Appends a new object to array a; NULL (and b->ok false) when out of memory. */
static cJSON *element(builder *b, cJSON *a) {
    cJSON *e = b->ok ? cJSON_CreateObject() : NULL;
    if (e && cJSON_AddItemToArray(a, e)) return e;
    cJSON_Delete(e);
    b->ok = false;
    return NULL;
}

static void top_nodes(builder *b, cJSON *o, const vkl_bench_profile *p) {
    const vkl_graph *g = p->g;
    cJSON *a = cJSON_AddArrayToObject(o, "top_nodes");
    b->ok &= a != NULL;
    uint32_t top[VKL_BENCH_TOP_NODES];
    const size_t n = vkl_bench_profile_top_nodes(p, top);
    for (size_t i = 0; i < n && b->ok; i++) {
        const vkl_node *node = &g->nodes[p->order[top[i]]];
        cJSON *e = element(b, a);
        str(b, e, "name", vkl_bench_node_name(node));
        str(b, e, "op", vkl_op_info_get((vkl_op)node->op)->name);
        num(b, e, "ms", p->node_ms[top[i]] / (double)p->steps);
    }
}

static void profile(builder *b, cJSON *parent, const vkl_bench_profile *p, double copy_bw) {
    cJSON *o = obj(b, parent, p->phase);
    const double steps = (double)p->steps;
    num(b, o, "steps", steps);
    num(b, o, "step_ms", steps > 0 ? p->step_ms / steps : 0);
    num(b, o, "op_ms", steps > 0 ? p->op_ms / steps : 0);
    cJSON *ops = cJSON_AddArrayToObject(o, "ops");
    b->ok &= ops != NULL;
    vkl_op types[VKL_OP_COUNT_];
    const size_t n = steps > 0 ? vkl_bench_profile_sorted(p, types) : 0;
    for (size_t i = 0; i < n && b->ok; i++) {
        const vkl_bench_op_sum *s = &p->ops[types[i]];
        cJSON *e = element(b, ops);
        const double ms = s->ms / steps, bytes = s->bytes / steps, flops = s->flops / steps;
        str(b, e, "op", vkl_op_info_get(types[i])->name);
        num(b, e, "calls", s->calls / steps);
        num(b, e, "ms", ms);
        num(b, e, "bytes", bytes);
        num(b, e, "flops", flops);
        num(b, e, "flop_per_byte", bytes > 0 ? flops / bytes : 0);
        per_sec(b, e, bytes, flops, ms, copy_bw);
    }
    top_nodes(b, o, p);
}

static cJSON *build(const vkl_bench_report *r, builder *b) {
    cJSON *root = cJSON_CreateObject();
    b->ok = root != NULL;
    str(b, root, "model", r->model);
    str(b, root, "backend", r->backend);
    str(b, root, "device", r->device);
    num(b, root, "copy_bandwidth_gb_per_s", r->copy_bw / 1e9);
    str(b, root, "copy_bandwidth_measured_on", r->device_bw ? "device" : "host");
    if (r->compute_peak > 0) {
        num(b, root, "compute_peak_gflop_per_s", r->compute_peak / 1e9);
        str(b, root, "compute_peak_kind", r->compute_peak_kind);
    } else {
        b->ok &= cJSON_AddNullToObject(root, "compute_peak_gflop_per_s") != NULL; /* VKL_BENCH_NO_PEAK */
    }
    num(b, root, "weight_bytes", (double)r->weight_bytes);
    num(b, root, "kv_bytes_per_token", (double)r->kv_row_bytes);
    num(b, root, "load_seconds", r->load_seconds);
    b->ok &= cJSON_AddBoolToObject(root, "weights_verified", r->verified) != NULL;
    if (r->prefill_tokens) {
        cJSON *p = obj(b, root, "prefill");
        num(b, p, "tokens", (double)r->prefill_tokens);
        num(b, p, "runs", (double)r->prefill_runs);
        num(b, p, "ms", r->prefill_ms);
        num(b, p, "tok_per_s", r->prefill_tok_s);
        num(b, p, "bytes", r->prefill_bytes);
        num(b, p, "flops", r->prefill_flops);
        per_sec(b, p, r->prefill_bytes, r->prefill_flops, r->prefill_ms, r->copy_bw);
        if (r->compute_peak > 0)
            num(b, p, "of_compute_peak", r->prefill_flops / (r->prefill_ms * 1e-3) / r->compute_peak);
    }
    if (r->decoded) {
        cJSON *d = obj(b, root, "decode");
        num(b, d, "tokens", (double)r->decode_tokens);
        num(b, d, "tok_per_s", r->decode_tok_s);
        num(b, d, "prepares", (double)r->prepares);
        num(b, d, "replays", (double)r->replays);
        num(b, d, "device_picks", (double)r->device_picks);
        num(b, d, "readback_bytes_per_step", r->readback_bytes);
        cJSON *w = cJSON_AddArrayToObject(d, "windows");
        b->ok &= w != NULL;
        for (size_t i = 0; i < r->n_windows && b->ok; i++) {
            cJSON *e = element(b, w);
            num(b, e, "tokens", (double)r->windows[i].tokens);
            num(b, e, "ms_per_step", r->windows[i].ms_per_step);
            num(b, e, "bytes_per_step", r->windows[i].bytes_per_step);
            num(b, e, "gb_per_s", r->windows[i].gbs);
            num(b, e, "of_limit", r->windows[i].of_limit);
        }
    }
    if (r->profile) {
        cJSON *p = obj(b, root, "profile");
        if (!r->timed) str(b, p, "unavailable", VKL_BENCH_NO_TIMES);
        else str(b, p, "compute_peak", VKL_BENCH_NO_PEAK);
        if (r->timed && r->prefill_profile.steps) profile(b, p, &r->prefill_profile, r->copy_bw);
        if (r->timed && r->decode_profile.steps) profile(b, p, &r->decode_profile, r->copy_bw);
    }
    return root;
}

vkl_status vkl_bench_json_write(vkl_context *ctx, const char *path, const vkl_bench_report *r) {
    builder b;
    cJSON *root = build(r, &b);
    char *text = b.ok ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text) return vkl_fail(ctx, VKL_ERR_OUT_OF_MEMORY, "--json: out of host memory");
    vkl_status st = vkl_bench_write_file(ctx, path, text, strlen(text));
    free(text);
    return st;
}
