/* vkl_session: one conversation over a model. Memory is planned once for
 * the largest step (a prefill chunk at full context) and allocated at
 * creation; each distinct padded shape gets an executable that is prepared
 * once and replayed; the KV cache lives in state tensors at fixed offsets
 * and is written in place.
 *
 * Padding: a decode step attends over a length padded to pad_multiple (the
 * padded keys masked). A prompt fed into an empty cache is padded at its end
 * to a multiple of pad_multiple: causal attention keeps the padding rows
 * invisible to the real ones, and their cache rows are overwritten before
 * any later step unmasks them. Both kinds of executables are prepared at
 * creation, so a conversation's first prompt and every decode step prepare
 * and allocate nothing. A later prompt chunk (past > 0) is prepared on first
 * use and kept in a small LRU: its causal offset is its exact past length.
 *
 * The last row's logits: a prompt step whose caller keeps only its last
 * token's logits (vkl_session_append, a generate's prompt) runs the model's
 * one-row graph (engine/logits_row.h) where it has one, the lm_head on that
 * row alone; the row travels as an input (VKL_LOGITS_ROW_INPUT) like the
 * true length, so a padded executable serves every length in its bucket.
 * Scored steps and decode steps (one row already) run the full graph. Both
 * graphs share the arena and lay their states out at the same offsets, so
 * either kind of step reads and writes the one KV cache in place.
 *
 * Greedy decode steps: where the session's sampler is plain greedy, a
 * decode step runs the greedy-pick graph (engine/greedy_pick.h), whose
 * executable downloads the argmax and the logit there instead of the row;
 * the row stays in the arena until someone asks for it (docs/runtime.md,
 * "Greedy sampling on the device").
 *
 * Threads: a session reads its model (graph, plan, weights, backend device)
 * and writes only its own state; every failure, allocation and log line goes
 * through its own context (options.context, else the model's), so sessions
 * with contexts of their own run on different threads at once. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <math.h>
#include <string.h>
#include <time.h>

#include "executor.h"
#include "model.h"
#include "nonfinite.h"
#include "plan.h"
#include "profile.h"
#include "sampler.h"

/* Prepared executables kept per session: the decode bucket, the last
 * prefill shapes. */
#define EXEC_CACHE 6

/* What a greedy pick reads back: the index (i64), the logit there (f32). */
#define PICK_BYTES (sizeof(int64_t) + sizeof(float))

/* The graph an executable runs: the model's, the one-row graph (a prompt
 * keeping its last row's logits), or the greedy-pick graph (a greedy
 * decode step). */
typedef enum graph_kind { GRAPH_FULL, GRAPH_ROW, GRAPH_PICK } graph_kind;

typedef struct exec_slot {
    vkl_backend_exec *exec;
    int64_t seq, past, total;
    graph_kind kind;
    size_t *offsets;  /* the layout the executable was prepared with */
    uint64_t last_use;
} exec_slot;

struct vkl_session {
    vkl_model *m;
    vkl_context *ctx; /* options.context, or the model's */
    vkl_session_options opt;
    vkl_backend_buffer *arena;
    size_t arena_bytes, kv_bytes;
    int64_t *values, *max_values; /* symbol bindings: this step, the planned maximum */
    size_t n_values;
    exec_slot slots[EXEC_CACHE];  /* prefill shapes, least recently used */
    exec_slot *decode;            /* one per padded length, prepared at creation */
    size_t n_decode;
    exec_slot *first;             /* a first prompt padded to (i + 1) * pad_multiple */
    size_t n_first;
    exec_slot *last;              /* the last successful step's (vkbench's profile) */
    uint64_t clock;
    /* host staging, sized at creation for one prefill chunk */
    int64_t *ids, *pos, *mask;
    /* The host copy of the last step's logits row. After a greedy pick the
     * row is still in the arena only (stale) and vkl_session_logits, which
     * takes a const session, reads it then: hence a struct of its own. */
    struct host_row {
        float *logits;
        bool stale;
        size_t arena_at;         /* the row's arena offset while stale */
        uint64_t readback_bytes; /* everything steps and this read back (vkl_session_stats) */
    } *row;
    /* Host-visible buffers the executables copy from and to themselves:
     * ids, positions, mask and the one-row graph's row in (at io_at[role]),
     * the logits row of a decode or one-row step out. Such a step is then
     * memcpy, one execute, one wait, memcpy. */
    vkl_backend_buffer *io_in, *io_out;
    size_t io_at[4];
    size_t n_offsets; /* entries of a layout: the larger graph's tensors */
    bool have_logits;
    bool device_greedy;  /* decode steps pick the greedy token on the device */
    bool have_pick;      /* the last step picked `pick` */
    int32_t pick;
    int32_t *history; /* max_context tokens */
    size_t length;
    vkl_sampler *sampler;
    vkl_session_stats stats;
};

void vkl_session_options_init(vkl_session_options *o) {
    if (!o) return;
    memset(o, 0, sizeof(*o));
    o->max_context = 2048;
    o->prefill_chunk = 256;
    o->pad_multiple = 64;
    vkl_sampling_defaults(&o->sampling);
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const vkl_graph *graph_of(const vkl_session *s, graph_kind kind) {
    return kind == GRAPH_ROW ? s->m->g_row : kind == GRAPH_PICK ? s->m->g_pick : s->m->g;
}
static const vkl_plan *plan_of(const vkl_session *s, graph_kind kind) {
    return kind == GRAPH_ROW ? s->m->plan_row : kind == GRAPH_PICK ? s->m->plan_pick : s->m->plan;
}

static void bind(vkl_session *s, int64_t *values, int64_t seq, int64_t past, int64_t total) {
    const vkl_model *m = s->m;
    for (size_t i = 0; i < s->n_values; i++) values[i] = 1; /* symbols no role names: 1 */
    if (m->sym_batch != VKL_NO_SYMBOL) values[m->sym_batch] = 1;
    if (m->sym_seq != VKL_NO_SYMBOL) values[m->sym_seq] = seq;
    if (m->sym_past != VKL_NO_SYMBOL) values[m->sym_past] = past;
    if (m->sym_total != VKL_NO_SYMBOL) values[m->sym_total] = total;
}

static void release_slots(vkl_session *s, exec_slot *slots, size_t n) {
    for (size_t i = 0; slots && i < n; i++) {
        if (slots[i].exec) s->m->be->exec_release(s->m->dev, s->ctx, slots[i].exec);
        vkl_free(s->ctx, slots[i].offsets);
    }
}

void vkl_session_free(vkl_session *s) {
    if (!s) return;
    vkl_model *m = s->m;
    release_slots(s, s->slots, EXEC_CACHE);
    release_slots(s, s->decode, s->n_decode);
    release_slots(s, s->first, s->n_first);
    vkl_free(s->ctx, s->decode);
    vkl_free(s->ctx, s->first);
    if (s->arena) m->be->buffer_destroy(m->dev, s->ctx, s->arena);
    if (s->io_in) m->be->buffer_destroy(m->dev, s->ctx, s->io_in);
    if (s->io_out) m->be->buffer_destroy(m->dev, s->ctx, s->io_out);
    vkl_sampler_destroy(s->sampler);
    vkl_free(s->ctx, s->values);
    vkl_free(s->ctx, s->max_values);
    vkl_free(s->ctx, s->ids);
    vkl_free(s->ctx, s->pos);
    vkl_free(s->ctx, s->mask);
    if (s->row) vkl_free(s->ctx, s->row->logits);
    vkl_free(s->ctx, s->row);
    vkl_free(s->ctx, s->history);
    vkl_free(s->ctx, s);
}

static vkl_status check_model(vkl_context *ctx, const vkl_model *m) {
    if (m->in_ids == VKL_NONE || m->vocab == 0)
        return vkl_fail(ctx, VKL_ERR_UNSUPPORTED, "session: the model is not a causal LM (no input_ids / logits)");
    if (m->sym_past == VKL_NO_SYMBOL)
        return vkl_fail(ctx, VKL_ERR_UNSUPPORTED,
                        "session: the model has no internal KV cache; import it without --no-kv-inplace");
    if (m->sym_seq == VKL_NO_SYMBOL) return vkl_fail(ctx, VKL_ERR_UNSUPPORTED, "session: input_ids' length is not a symbol");
    if (!m->plan) return vkl_fail(ctx, VKL_ERR_INTERNAL, "session: the model has no memory plan");
    return VKL_OK;
}

/* A derived graph's layout at `values` (arena bytes to *bytes), checked to
 * put every state where the full graph's layout `full` (of the same state
 * binding) does: every kind of step shares the KV cache. */
static vkl_status same_states(vkl_session *s, graph_kind kind, const int64_t *values, const size_t *full,
                              size_t *other, size_t *bytes) {
    const vkl_graph *g = s->m->g;
    vkl_layout_binding lb = {values, s->n_values, s->max_values, 0};
    vkl_status st = vkl_plan_layout(s->ctx, plan_of(s, kind), &lb, other, bytes, NULL);
    for (uint32_t t = 0; !st && t < g->n_tensors; t++)
        if (g->tensors[t].kind == VKL_TENSOR_STATE && full[t] != other[t])
            st = vkl_fail(s->ctx, VKL_ERR_INTERNAL, "session: the %s graph lays state '%s' at byte %zu, the "
                          "full graph at %zu", kind == GRAPH_ROW ? "one-row" : "greedy-pick", g->tensors[t].name,
                          other[t], full[t]);
    return st;
}

/* Arena sized for the largest step of either graph; states zeroed. */
static vkl_status allocate(vkl_session *s) {
    vkl_context *ctx = s->ctx;
    const vkl_graph *g = s->m->g;
    int64_t chunk = (int64_t)s->opt.prefill_chunk, maxc = (int64_t)s->opt.max_context;
    bind(s, s->max_values, chunk, maxc - chunk, maxc);
    size_t *offsets = vkl_calloc(ctx, s->n_offsets, sizeof(size_t));
    size_t *row_offsets = vkl_calloc(ctx, s->n_offsets, sizeof(size_t));
    if (!offsets || !row_offsets) {
        vkl_free(ctx, offsets);
        vkl_free(ctx, row_offsets);
        return VKL_ERR_OUT_OF_MEMORY;
    }
    const vkl_plan *plan = s->m->plan;
    vkl_layout_binding largest = {s->max_values, s->n_values, s->max_values, 0};
    size_t states_end = 0;
    vkl_status st = vkl_plan_layout(ctx, plan, &largest, offsets, &s->arena_bytes, &states_end);
    size_t decode_bytes = 0, row_bytes = 0, pick_bytes = 0;
    int64_t *tmp = s->values;
    bind(s, tmp, 1, maxc - 1, maxc);
    vkl_layout_binding decode = {tmp, s->n_values, s->max_values, 0};
    if (!st) st = vkl_plan_layout(ctx, plan, &decode, offsets, &decode_bytes, NULL);
    if (decode_bytes > s->arena_bytes) s->arena_bytes = decode_bytes;
    if (!st && s->m->plan_row) st = same_states(s, GRAPH_ROW, s->max_values, offsets, row_offsets, &row_bytes);
    if (row_bytes > s->arena_bytes) s->arena_bytes = row_bytes;
    /* the greedy-pick graph runs decode steps only */
    if (!st && s->device_greedy) st = same_states(s, GRAPH_PICK, tmp, offsets, row_offsets, &pick_bytes);
    if (pick_bytes > s->arena_bytes) s->arena_bytes = pick_bytes;
    if (!st) st = vkl_arena_create(ctx, s->m->be, s->m->dev, s->arena_bytes, states_end, false, &s->arena);
    /* ids and positions hold a chunk, the mask a whole context, the row one
     * value (i64 each) */
    s->io_at[0] = 0;
    s->io_at[1] = ((size_t)chunk * 8 + 63) & ~(size_t)63;
    s->io_at[2] = s->io_at[1] * 2;
    s->io_at[3] = s->io_at[2] + (((size_t)maxc * 8 + 63) & ~(size_t)63);
    if (!st) st = s->m->be->buffer_create(s->m->dev, ctx, VKL_BUFFER_UPLOAD, s->io_at[3] + 8, &s->io_in);
    if (!st)
        st = s->m->be->buffer_create(s->m->dev, ctx, VKL_BUFFER_READBACK,
                                     s->m->vocab * sizeof(float) < PICK_BYTES ? PICK_BYTES : s->m->vocab * sizeof(float),
                                     &s->io_out);
    s->kv_bytes = 0;
    for (uint32_t t = 0; !st && t < g->n_tensors; t++)
        if (g->tensors[t].kind == VKL_TENSOR_STATE && plan->buffer_of[t] != VKL_NONE) {
            int64_t dims[VKL_MAX_RANK], n;
            size_t bytes;
            st = vkl_tensor_eval(ctx, g, t, s->max_values, s->n_values, dims, &n, &bytes);
            s->kv_bytes += bytes;
        }
    vkl_free(ctx, offsets);
    vkl_free(ctx, row_offsets);
    return st;
}

static vkl_status prepare_padded(vkl_session *s);

/* Whether decode steps may pick their token on the device: the host sampler
 * would take the argmax (greedy, no penalty), nothing needs the row at every
 * step (check_finite), the model has the graph for it with f32 logits, and
 * the host_sampling option (the tools' VKL_DEVICE_SAMPLING=0) says nothing
 * against it. */
static bool device_greedy(const vkl_session *s) {
    const vkl_model *m = s->m;
    return s->opt.sampling.temperature <= 0.0f && s->opt.sampling.repetition_penalty == 1.0f &&
           !s->opt.check_finite && !s->opt.host_sampling && m->g_pick &&
           m->g->tensors[m->g->outputs[m->out_logits]].dtype == VKL_DTYPE_F32;
}

vkl_status vkl_session_create(vkl_model *m, const vkl_session_options *options, vkl_session **out) {
    vkl_context *ctx = options && options->context ? options->context : m ? m->ctx : NULL;
    if (!m || !out) return ctx ? vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "vkl_session_create: %s is NULL",
                                          m ? "out" : "model")
                               : VKL_ERR_INVALID_ARGUMENT;
    *out = NULL;
    vkl_status st = check_model(ctx, m);
    if (st) return st;
    vkl_session *s = vkl_calloc(ctx, 1, sizeof(*s));
    if (!s) return VKL_ERR_OUT_OF_MEMORY;
    s->m = m;
    s->ctx = ctx;
    if (options) s->opt = *options;
    else vkl_session_options_init(&s->opt);
    s->opt.context = ctx;
    if (s->opt.max_context < 1 || s->opt.prefill_chunk < 1 || s->opt.pad_multiple < 1) {
        vkl_free(ctx, s);
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "session: max_context, prefill_chunk and pad_multiple must be >= 1");
    }
    if (s->opt.check_finite && !m->be->execute_checked) {
        vkl_free(ctx, s);
        return vkl_fail(ctx, VKL_ERR_UNSUPPORTED, "session: backend '%s' cannot check outputs for NaN (check_finite); "
                        "the ref backend can", m->be->name);
    }
    if (s->opt.prefill_chunk > s->opt.max_context) s->opt.prefill_chunk = s->opt.max_context;
    size_t chunk = s->opt.prefill_chunk, maxc = s->opt.max_context;
    s->n_values = vkl_symtab_symbol_count(m->g->syms);
    s->n_offsets = (size_t)m->g->n_tensors + 1;
    if (m->g_row && m->g_row->n_tensors >= s->n_offsets) s->n_offsets = (size_t)m->g_row->n_tensors + 1;
    if (m->g_pick && m->g_pick->n_tensors >= s->n_offsets) s->n_offsets = (size_t)m->g_pick->n_tensors + 1;
    s->device_greedy = device_greedy(s);
    s->values = vkl_calloc(ctx, s->n_values + 1, sizeof(int64_t));
    s->max_values = vkl_calloc(ctx, s->n_values + 1, sizeof(int64_t));
    s->ids = vkl_calloc(ctx, chunk, sizeof(int64_t));
    s->pos = vkl_calloc(ctx, chunk, sizeof(int64_t));
    s->mask = vkl_calloc(ctx, maxc, sizeof(int64_t));
    s->row = vkl_calloc(ctx, 1, sizeof(*s->row));
    if (s->row) s->row->logits = vkl_calloc(ctx, m->vocab, sizeof(float));
    s->history = vkl_calloc(ctx, maxc, sizeof(int32_t));
    for (int i = 0; i < EXEC_CACHE && !st; i++) {
        s->slots[i].offsets = vkl_calloc(ctx, s->n_offsets, sizeof(size_t));
        if (!s->slots[i].offsets) st = VKL_ERR_OUT_OF_MEMORY;
    }
    if (!s->values || !s->max_values || !s->ids || !s->pos || !s->mask || !s->row || !s->row->logits || !s->history)
        st = VKL_ERR_OUT_OF_MEMORY;
    if (!st) st = vkl_sampler_create(ctx, &s->opt.sampling, m->vocab, &s->sampler);
    if (!st) st = allocate(s);
    if (!st) st = prepare_padded(s);
    if (st) {
        vkl_session_free(s);
        return st;
    }
    s->stats.arena_bytes = s->arena_bytes;
    s->stats.kv_bytes = s->kv_bytes;
    *out = s;
    return VKL_OK;
}

/* Lay out and prepare `slot` for the binding in s->values, from the graph
 * of `kind`. */
static vkl_status prepare_slot(vkl_session *s, exec_slot *slot, int64_t seq, int64_t past, int64_t total,
                               graph_kind kind) {
    vkl_model *m = s->m;
    const vkl_graph *g = graph_of(s, kind);
    const bool row = kind == GRAPH_ROW;
    size_t total_bytes;
    vkl_layout_binding lb = {s->values, s->n_values, s->max_values, 0};
    vkl_status st = vkl_plan_layout(s->ctx, plan_of(s, kind), &lb, slot->offsets, &total_bytes, NULL);
    if (!st && total_bytes > s->arena_bytes)
        st = vkl_fail(s->ctx, VKL_ERR_INTERNAL, "session: step needs %zu arena bytes, planned %zu", total_bytes,
                      s->arena_bytes);
    /* inputs uploaded by the executable (the graphs number the common ones
     * alike); a one-row step's logits downloaded, or a greedy pick's index
     * and logit (PICK_BYTES) */
    const uint32_t roles[4] = {m->in_ids, m->in_pos, m->in_mask, row ? m->in_row : VKL_NONE};
    const int64_t rows[4] = {seq, seq, total, 1};
    vkl_io_copy up[4], down[2] = {{s->io_out, 0, g->outputs[m->out_logits], 0, m->vocab * sizeof(float)}};
    if (kind == GRAPH_PICK) {
        down[0] = (vkl_io_copy){s->io_out, 0, g->outputs[m->out_pick_index], 0, sizeof(int64_t)};
        down[1] = (vkl_io_copy){s->io_out, sizeof(int64_t), g->outputs[m->out_pick_value], 0, sizeof(float)};
    }
    size_t n_up = 0;
    for (int r = 0; r < 4; r++)
        if (roles[r] != VKL_NONE)
            up[n_up++] = (vkl_io_copy){s->io_in, s->io_at[r], g->inputs[roles[r]], 0, (size_t)rows[r] * 8};
    vkl_memory_map mem = {s->arena, slot->offsets, g->n_tensors, up, n_up, down,
                          kind == GRAPH_PICK ? 2 : seq == 1 || row ? 1 : 0};
    vkl_binding b = {s->values, s->n_values};
    if (!st) st = m->be->prepare(m->dev, s->ctx, g, m->weights, &mem, &b, &slot->exec);
    if (st) return st;
    slot->kind = kind;
    slot->seq = seq;
    slot->past = past;
    slot->total = total;
    s->stats.prepares++;
    return VKL_OK;
}

/* The shape of a step of n tokens after `len` cached ones: decode steps
 * attend over a padded total; a first prompt is padded in its length (and so
 * in its total); other prompts are exact. */
static void step_shape(const vkl_session *s, int64_t len, int64_t n, int64_t *seq, int64_t *total) {
    int64_t p = (int64_t)s->opt.pad_multiple, maxc = (int64_t)s->opt.max_context;
    int64_t chunk = (int64_t)s->opt.prefill_chunk;
    *seq = n;
    *total = len + n;
    if (p <= 1) return;
    if (n == 1) {
        *total = (len + 1 + p - 1) / p * p;
        if (*total > maxc) *total = maxc;
    } else if (len == 0) {
        *seq = (n + p - 1) / p * p;
        if (*seq > chunk) *seq = chunk; /* n <= chunk <= max_context */
        *total = *seq;
    }
}

/* Prepare `count` slots for (seq, total) = shape(i) now. */
static vkl_status prepare_slots(vkl_session *s, exec_slot **slots, size_t count, bool decode) {
    *slots = vkl_calloc(s->ctx, count ? count : 1, sizeof(exec_slot));
    if (!*slots) return VKL_ERR_OUT_OF_MEMORY;
    int64_t p = (int64_t)s->opt.pad_multiple;
    for (size_t i = 0; i < count; i++) {
        exec_slot *e = &(*slots)[i];
        int64_t seq, total;
        step_shape(s, decode ? (int64_t)i * p : 0, decode ? 1 : ((int64_t)i + 1) * p, &seq, &total);
        e->offsets = vkl_calloc(s->ctx, s->n_offsets, sizeof(size_t));
        if (!e->offsets) return VKL_ERR_OUT_OF_MEMORY;
        bind(s, s->values, seq, total - seq, total);
        /* first prompts keep their last row's logits unless scored */
        const graph_kind kind = decode ? (s->device_greedy ? GRAPH_PICK : GRAPH_FULL)
                                       : (s->m->g_row ? GRAPH_ROW : GRAPH_FULL);
        vkl_status st = prepare_slot(s, e, seq, total - seq, total, kind);
        if (st) return st;
    }
    return VKL_OK;
}

/* Every decode length and every padded first-prompt length gets its
 * executable now, so those steps never prepare (nor allocate) anything. A
 * scored first prompt (every row's logits) is prepared on first use. */
static vkl_status prepare_padded(vkl_session *s) {
    size_t pad = s->opt.pad_multiple, maxc = s->opt.max_context, chunk = s->opt.prefill_chunk;
    if (pad <= 1) return VKL_OK;
    s->n_decode = (maxc + pad - 1) / pad;
    s->n_first = chunk > 1 ? (chunk + pad - 1) / pad : 0;
    vkl_status st = prepare_slots(s, &s->decode, s->n_decode, true);
    if (!st) st = prepare_slots(s, &s->first, s->n_first, false);
    return st;
}

/* The prepared executable for this shape and graph: a decode bucket, a
 * cached prefill shape, or a fresh one in the least recently used slot. */
static vkl_status executable(vkl_session *s, int64_t seq, int64_t past, int64_t total, graph_kind kind,
                             exec_slot **out) {
    exec_slot *victim = &s->slots[0];
    s->clock++;
    size_t pad = s->opt.pad_multiple;
    exec_slot *fixed = NULL;
    if (seq == 1 && s->n_decode) {
        size_t i = ((size_t)total + pad - 1) / pad - 1;
        if (i < s->n_decode) fixed = &s->decode[i];
    } else if (past == 0 && s->n_first) {
        size_t i = ((size_t)seq + pad - 1) / pad - 1;
        if (i < s->n_first) fixed = &s->first[i];
    }
    if (fixed && fixed->exec && fixed->seq == seq && fixed->past == past && fixed->total == total &&
        fixed->kind == kind) {
        s->stats.replays++;
        *out = fixed;
        return VKL_OK;
    }
    for (int i = 0; i < EXEC_CACHE; i++) {
        exec_slot *e = &s->slots[i];
        if (e->exec && e->seq == seq && e->past == past && e->total == total && e->kind == kind) {
            e->last_use = s->clock;
            s->stats.replays++;
            *out = e;
            return VKL_OK;
        }
        if (!e->exec || (victim->exec && e->last_use < victim->last_use)) victim = e;
    }
    if (victim->exec) s->m->be->exec_release(s->m->dev, s->ctx, victim->exec);
    victim->exec = NULL;
    vkl_status st = prepare_slot(s, victim, seq, past, total, kind);
    if (st) return st;
    victim->last_use = s->clock;
    *out = victim;
    return VKL_OK;
}

/* Into the upload buffer; the executable copies it into the arena. */
static vkl_status write_input(vkl_session *s, int r, uint32_t role, const int64_t *data, size_t count) {
    const vkl_graph *g = s->m->g;
    if (role == VKL_NONE) return VKL_OK;
    uint32_t t = g->inputs[role];
    if (g->tensors[t].dtype != VKL_DTYPE_I64)
        return vkl_fail(s->ctx, VKL_ERR_UNSUPPORTED, "session: input '%s' is %s; int64 expected", g->tensors[t].name,
                        vkl_dtype_name(g->tensors[t].dtype));
    return s->m->be->buffer_write(s->m->dev, s->ctx, s->io_in, s->io_at[r], data, count * sizeof(int64_t));
}

/* No last step's result any more: neither its logits, nor its pick, nor a
 * row left to fetch (a failed step, a rewind, a reset). */
static void forget_logits(vkl_session *s) {
    s->have_logits = false;
    s->have_pick = false;
    s->row->stale = false;
}

/* Reads the stale logits row (after a greedy pick) into the host copy. */
static vkl_status fetch_logits(const vkl_session *s) {
    struct host_row *r = s->row;
    if (!r->stale) return VKL_OK;
    const size_t bytes = s->m->vocab * sizeof(float);
    vkl_status st = s->m->be->buffer_read(s->m->dev, s->ctx, s->arena, r->arena_at, r->logits, bytes);
    if (st) return st;
    r->stale = false;
    r->readback_bytes += bytes;
    return VKL_OK;
}

/* A greedy decode step's result: the picked token; where the row holds a
 * NaN or only -inf (the logit read back says which), the row itself, so
 * that the host sampler fails on it exactly as it would have without the
 * pick. */
static vkl_status read_pick(vkl_session *s, const exec_slot *e) {
    const vkl_model *m = s->m;
    unsigned char got[PICK_BYTES];
    vkl_status st = m->be->buffer_read(m->dev, s->ctx, s->io_out, 0, got, sizeof(got));
    if (st) return st;
    int64_t index;
    float value;
    memcpy(&index, got, sizeof(index));
    memcpy(&value, got + sizeof(index), sizeof(value));
    s->row->readback_bytes += sizeof(got);
    s->row->stale = true;
    s->row->arena_at = e->offsets[m->g_pick->outputs[m->out_logits]];
    if (index < 0 || (uint64_t)index >= m->vocab)
        return vkl_fail(s->ctx, VKL_ERR_INTERNAL, "session: the %s backend's greedy pick is token %lld, outside the "
                        "vocab of %zu", m->be->name, (long long)index, m->vocab);
    if (isnan(value) || value == -INFINITY) return fetch_logits(s);
    s->pick = (int32_t)index;
    s->have_pick = true;
    s->stats.device_picks++;
    return VKL_OK;
}

/* One step: n tokens at positions [length, length + n). Decode steps (n = 1)
 * attend over a length padded to pad_multiple, masked, so their executable
 * is replayed until the padding runs out. `prompt`: count the tokens as
 * prefill even when there is one (a one-token prompt is no decode step). */
static vkl_status step(vkl_session *s, const int32_t *tokens, size_t n, float *all_logits, bool prompt) {
    vkl_model *m = s->m;
    double t0 = now_seconds();
    int64_t len = (int64_t)s->length, total = len + (int64_t)n, seq, padded;
    step_shape(s, len, (int64_t)n, &seq, &padded);
    bind(s, s->values, seq, padded - seq, padded);
    /* only the last row's logits wanted: the lm_head on that row alone (a
     * one-row step gains nothing from it); a greedy decode step picks its
     * token on the device */
    const bool row = !all_logits && m->g_row && seq > 1;
    const graph_kind kind = row ? GRAPH_ROW : !all_logits && seq == 1 && s->device_greedy ? GRAPH_PICK : GRAPH_FULL;
    s->have_pick = false;
    s->row->stale = false;
    exec_slot *e;
    vkl_status st = executable(s, seq, padded - seq, padded, kind, &e);
    /* padding rows: token 0 at the next positions (their keys are masked) */
    for (int64_t i = 0; !st && i < seq; i++) {
        s->ids[i] = i < (int64_t)n ? tokens[i] : 0;
        s->pos[i] = len + i;
    }
    for (int64_t j = 0; !st && j < padded; j++) s->mask[j] = j < total;
    if (!st) st = write_input(s, 0, m->in_ids, s->ids, (size_t)seq);
    if (!st) st = write_input(s, 1, m->in_pos, s->pos, (size_t)seq);
    if (!st) st = write_input(s, 2, m->in_mask, s->mask, (size_t)padded);
    const int64_t last_row = (int64_t)n - 1; /* the last true token's, padding rows after it */
    if (!st && row) st = m->be->buffer_write(m->dev, s->ctx, s->io_in, s->io_at[3], &last_row, sizeof(last_row));
    vkl_binding actual = {s->values, s->n_values};
    vkl_nonfinite first = {0};
    if (!st) st = vkl_exec_run(s->ctx, m->be, m->dev, e->exec, &actual, s->opt.check_finite ? &first : NULL);
    vkl_state_traffic traffic;
    if (!st && m->be->state_traffic && !m->be->state_traffic(m->dev, s->ctx, e->exec, &traffic)) {
        s->stats.kv_bytes_written += traffic.written;
        s->stats.kv_bytes_read += traffic.read;
        s->stats.kv_bytes_copied += traffic.copied;
    }
    if (!st && e->kind == GRAPH_PICK) {
        st = read_pick(s, e);
    } else if (!st) {
        uint32_t t = m->g->outputs[m->out_logits];
        size_t row_bytes = m->vocab * sizeof(float);
        float *logits = s->row->logits;
        /* a one-row step (decode, or the one-row graph) downloaded its row
         * itself; a scored prompt's last real row depends on its true
         * length, so it is read from the arena */
        st = seq == 1 || e->kind == GRAPH_ROW
                 ? m->be->buffer_read(m->dev, s->ctx, s->io_out, 0, logits, row_bytes)
                 : m->be->buffer_read(m->dev, s->ctx, s->arena, e->offsets[t] + (n - 1) * row_bytes, logits,
                                      row_bytes);
        if (!st) s->row->readback_bytes += row_bytes;
        if (!st && all_logits)
            st = m->be->buffer_read(m->dev, s->ctx, s->arena, e->offsets[t], all_logits, n * row_bytes);
        if (!st && all_logits) s->row->readback_bytes += n * row_bytes;
        if (!st && s->opt.check_finite)
            st = vkl_nonfinite_check_logits(s->ctx, graph_of(s, e->kind), &first, all_logits ? all_logits : logits,
                                            all_logits ? n * m->vocab : m->vocab);
    }
    if (st) {
        /* the cache rows of this step may be written: forget them */
        forget_logits(s);
        s->last = NULL;
        return st;
    }
    s->last = e;
    memcpy(s->history + s->length, tokens, n * sizeof(int32_t));
    s->length += n;
    s->have_logits = true;
    double dt = now_seconds() - t0;
    if (n == 1 && !prompt) {
        s->stats.decode_tokens++;
        s->stats.decode_seconds += dt;
    } else {
        s->stats.prefill_tokens += n;
        s->stats.prefill_seconds += dt;
    }
    return VKL_OK;
}

/* Callers of the public functions are counted by size (one token: a decode
 * step); vkl_session_generate knows which tokens are its prompt. */
static vkl_status append(vkl_session *s, const int32_t *tokens, size_t count, float *all_logits, bool prompt) {
    if (!s) return VKL_ERR_INVALID_ARGUMENT;
    if (!tokens && count) return vkl_fail(s->ctx, VKL_ERR_INVALID_ARGUMENT, "vkl_session_append: tokens is NULL");
    if (count > s->opt.max_context - s->length)
        return vkl_fail(s->ctx, VKL_ERR_INVALID_ARGUMENT,
                        "session: %zu tokens do not fit: %zu of the %zu-token context are used", count, s->length,
                        s->opt.max_context);
    for (size_t i = 0; i < count; i++)
        if (tokens[i] < 0 || (size_t)tokens[i] >= s->m->vocab)
            return vkl_fail(s->ctx, VKL_ERR_INVALID_ARGUMENT, "session: token %zu is %d, outside the vocab of %zu", i,
                            tokens[i], s->m->vocab);
    for (size_t done = 0; done < count;) {
        size_t n = count - done < s->opt.prefill_chunk ? count - done : s->opt.prefill_chunk;
        vkl_status st = step(s, tokens + done, n, all_logits ? all_logits + done * s->m->vocab : NULL, prompt);
        if (st) return st;
        done += n;
    }
    return VKL_OK;
}

vkl_status vkl_session_append(vkl_session *s, const int32_t *tokens, size_t count) {
    return append(s, tokens, count, NULL, false);
}

vkl_status vkl_session_append_scored(vkl_session *s, const int32_t *tokens, size_t count, float *all_logits) {
    return append(s, tokens, count, all_logits, false);
}

/* After a greedy pick the row is read now (a failure: NULL, the reason in
 * the session's context). */
const float *vkl_session_logits(const vkl_session *s) {
    return s && s->have_logits && !fetch_logits(s) ? s->row->logits : NULL;
}

vkl_status vkl_session_sample(vkl_session *s, int32_t *token) {
    if (!s || !token) return s ? vkl_fail(s->ctx, VKL_ERR_INVALID_ARGUMENT, "vkl_session_sample: token is NULL")
                               : VKL_ERR_INVALID_ARGUMENT;
    if (!s->have_logits) return vkl_fail(s->ctx, VKL_ERR_STATE, "session: no logits yet; append tokens first");
    if (s->have_pick) { /* what the sampler would say: plain greedy draws nothing */
        *token = s->pick;
        return VKL_OK;
    }
    vkl_status st = fetch_logits(s);
    return st ? st : vkl_sampler_sample(s->sampler, s->row->logits, s->history, s->length, token);
}

vkl_status vkl_session_generate(vkl_session *s, const int32_t *prompt, size_t count, size_t max_new,
                                int32_t stop_token, vkl_token_callback callback, void *user) {
    if (!s) return VKL_ERR_INVALID_ARGUMENT;
    vkl_status st = append(s, prompt, count, NULL, true);
    for (size_t i = 0; !st && i < max_new && s->length < s->opt.max_context; i++) {
        int32_t tok;
        st = vkl_session_sample(s, &tok);
        if (st) break;
        if (callback && callback(user, tok)) break;
        if (tok == stop_token) break;
        st = vkl_session_append(s, &tok, 1);
    }
    return st;
}

size_t vkl_session_length(const vkl_session *s) { return s ? s->length : 0; }

vkl_status vkl_session_rewind(vkl_session *s, size_t length) {
    if (!s) return VKL_ERR_INVALID_ARGUMENT;
    if (length > s->length)
        return vkl_fail(s->ctx, VKL_ERR_INVALID_ARGUMENT, "session: cannot rewind to %zu tokens; it holds %zu", length,
                        s->length);
    /* Rows past `length` stay in the cache but are masked out, and are
     * overwritten in place by the next tokens. */
    s->length = length;
    forget_logits(s);
    return VKL_OK;
}

void vkl_session_reset(vkl_session *s) {
    if (!s) return;
    s->length = 0;
    forget_logits(s);
    vkl_sampler_reseed(s->sampler, s->opt.sampling.seed);
}

const vkl_graph *vkl_session_last_graph(const vkl_session *s) {
    return s && s->last ? graph_of(s, s->last->kind) : NULL;
}

const int64_t *vkl_session_last_binding(const vkl_session *s, size_t *count) {
    *count = s && s->last ? s->n_values : 0;
    return s && s->last ? s->values : NULL;
}

vkl_status vkl_session_node_times(vkl_session *s, double *ms, size_t cap, size_t *count) {
    *count = 0;
    if (!s->last) return vkl_fail(s->ctx, VKL_ERR_STATE, "session: no step has run yet");
    if (!s->m->be->node_times)
        return vkl_fail(s->ctx, VKL_ERR_UNSUPPORTED, "the %s backend has no per-node timestamps", s->m->be->name);
    return s->m->be->node_times(s->m->dev, s->ctx, s->last->exec, ms, cap, count);
}

void vkl_session_get_stats(const vkl_session *s, vkl_session_stats *out) {
    if (!out) return;
    if (!s) {
        memset(out, 0, sizeof(*out));
        return;
    }
    *out = s->stats;
    out->readback_bytes = s->row->readback_bytes;
}
