/* vkl_model: open a .vkm, choose and open a backend, load the weights,
 * find the inputs/outputs and symbols a causal LM session binds, and plan
 * its memory once for all sessions. */
#include <stdio.h>
#include <string.h>

#include "greedy_pick.h"
#include "logits_row.h"
#include "model.h"
#include "profile.h"

void vkl_model_options_init(vkl_model_options *o) {
    if (o) memset(o, 0, sizeof(*o));
}

static const char *class_name(const vkl_backend_caps *c) {
    return c->unified_memory ? "an integrated GPU" : "a discrete GPU";
}

/* "auto": the first hardware GPU in the registry's order, else the first
 * backend written for the CPU; a GPU API run on the CPU (lavapipe) only
 * when asked for by name. The reason goes to m->reason. */
static const vkl_backend_vtable *choose_backend(vkl_context *ctx, const vkl_model_options *o, vkl_model *m) {
    const vkl_backend_vtable *be_named;
    if (o->backend) {
        const vkl_backend_vtable *be = vkl_backend_find(o->backend);
        if (!be) vkl_fail(ctx, VKL_ERR_NOT_FOUND, "no backend named '%s' in this build", o->backend);
        snprintf(m->reason, sizeof(m->reason), "asked for by name");
        return be;
    }
    if (vkl_vulkan_external_given(o->vulkan) && (be_named = vkl_backend_find("vulkan"))) {
        snprintf(m->reason, sizeof(m->reason), "the app's own Vulkan device");
        return be_named;
    }
    vkl_backend_options bo = {.disable_features = o->disable_features, .vulkan = o->vulkan, .threads = o->threads,
                              .disable_isa = o->disable_isa, .equal_shares = o->equal_shares != 0,
                              .slow_worker = o->slow_worker, .slow_factor = o->slow_factor};
    const vkl_backend_vtable *host = NULL;
    char skipped[sizeof(m->reason)] = "";
    for (size_t i = 0; i < vkl_backend_count(); i++) {
        const vkl_backend_vtable *be = vkl_backend_at(i);
        vkl_backend_caps caps;
        if (be->probe(ctx, &bo, &caps) != VKL_OK) {
            if (!skipped[0]) snprintf(skipped, sizeof(skipped), "%s", vkl_context_error(ctx)); /* names the backend */
            continue;
        }
        if (caps.device_class == VKL_DEVICE_GPU) {
            snprintf(m->reason, sizeof(m->reason), "%.120s: %s", caps.device_name, class_name(&caps));
            return be;
        }
        if (caps.device_class == VKL_DEVICE_EMULATED && !skipped[0])
            snprintf(skipped, sizeof(skipped), "%s: %.100s runs on the CPU", be->name, caps.device_name);
        if (caps.device_class == VKL_DEVICE_CPU && !host) host = be;
    }
    if (!host) {
        vkl_fail(ctx, VKL_ERR_UNSUPPORTED, "no backend in this build can run on this machine");
        return NULL;
    }
    snprintf(m->reason, sizeof(m->reason), "no hardware GPU (%.170s)", skipped[0] ? skipped : "none in this build");
    return host;
}

/* Pipelines, which a GPU backend makes on a kernel's first prepare, are
 * made at load (and come from its pipeline cache on disk when it has them):
 * a session of two padding buckets prepares decode steps and a first prompt
 * of both attention kinds, then goes. Later sessions prepare their own
 * executables from those pipelines; only a shape that picks another kernel
 * variant (a wider copy where rows allow) makes one more. CPU backends have
 * nothing to make ahead. */
static vkl_status warm_up(vkl_model *m) {
    if (m->caps.device_class == VKL_DEVICE_CPU || !m->plan) return VKL_OK;
    vkl_session_options so;
    vkl_session_options_init(&so);
    so.max_context = 2 * so.pad_multiple;
    so.prefill_chunk = so.pad_multiple;
    vkl_session *s = NULL;
    vkl_status st = vkl_session_create(m, &so, &s);
    vkl_session_free(s);
    if (st) vkl_fail_prefix(m->ctx, st, "model: preparing its kernels at load");
    return st;
}

static uint32_t find_io(const vkl_graph *g, const uint32_t *list, uint32_t n, const char *name) {
    for (uint32_t i = 0; i < n; i++)
        if (!strcmp(g->tensors[list[i]].name, name)) return i;
    return VKL_NONE;
}

uint32_t vkl_model_logits_output(const vkl_graph *g) {
    uint32_t i = find_io(g, g->outputs, g->n_outputs, "logits");
    return i == VKL_NONE && g->n_outputs ? 0 : i;
}

bool vkl_model_graph_vocab(const vkl_graph *g, size_t *vocab) {
    uint32_t i = vkl_model_logits_output(g);
    if (i == VKL_NONE) return false;
    const vkl_tensor *logits = &g->tensors[g->outputs[i]];
    int64_t v;
    if (logits->shape.rank != 3 || !vkl_expr_is_const(g->syms, logits->shape.dims[2], &v) || v <= 0) return false;
    *vocab = (size_t)v;
    return true;
}

static size_t symbol_of(const vkl_graph *g, vkl_expr e) {
    size_t s;
    return vkl_expr_is_symbol(g->syms, e, &s) ? s : VKL_NO_SYMBOL;
}

/* Roles by the names every HF causal-LM export uses; the KV cache's length
 * symbol is the one its sequence dimension adds to `seq`. */
static vkl_status find_roles(vkl_model *m) {
    const vkl_graph *g = m->g;
    m->in_ids = find_io(g, g->inputs, g->n_inputs, "input_ids");
    m->in_mask = find_io(g, g->inputs, g->n_inputs, "attention_mask");
    m->in_pos = find_io(g, g->inputs, g->n_inputs, "position_ids");
    m->out_logits = vkl_model_logits_output(g);
    m->sym_batch = m->sym_seq = m->sym_total = m->sym_past = VKL_NO_SYMBOL;
    if (m->in_ids == VKL_NONE || m->out_logits == VKL_NONE)
        return VKL_OK; /* not a causal LM: loadable, but sessions will refuse it */
    const vkl_tensor *ids = &g->tensors[g->inputs[m->in_ids]];
    const vkl_tensor *logits = &g->tensors[g->outputs[m->out_logits]];
    if (ids->shape.rank != 2 || logits->shape.rank != 3)
        return vkl_fail(m->ctx, VKL_ERR_UNSUPPORTED, "model: input_ids must be [batch, seq] and logits [batch, seq, vocab]");
    m->sym_batch = symbol_of(g, ids->shape.dims[0]);
    m->sym_seq = symbol_of(g, ids->shape.dims[1]);
    if (!vkl_model_graph_vocab(g, &m->vocab))
        return vkl_fail(m->ctx, VKL_ERR_UNSUPPORTED, "model: the logits' vocab dimension is not a constant");
    if (m->in_mask != VKL_NONE) {
        const vkl_tensor *mask = &g->tensors[g->inputs[m->in_mask]];
        if (mask->shape.rank == 2) m->sym_total = symbol_of(g, mask->shape.dims[1]);
    }
    for (uint32_t t = 0; t < g->n_tensors && m->sym_past == VKL_NO_SYMBOL; t++) {
        const vkl_tensor *st = &g->tensors[t];
        if (st->kind != VKL_TENSOR_STATE || !st->shape.rank) continue;
        for (size_t s = 0; s < vkl_symtab_symbol_count(g->syms); s++)
            if (s != m->sym_seq && s != m->sym_batch && s != m->sym_total &&
                vkl_expr_uses_symbol(g->syms, st->shape.dims[0], s))
                m->sym_past = s;
    }
    return VKL_OK;
}

void vkl_model_free(vkl_model *m) {
    if (!m) return;
    vkl_plan_destroy(m->plan);
    vkl_plan_destroy(m->plan_row);
    vkl_graph_destroy(m->g_row);
    vkl_plan_destroy(m->plan_pick);
    vkl_graph_destroy(m->g_pick);
    if (m->weights) m->be->weights_release(m->dev, m->weights);
    if (m->dev) m->be->close(m->dev);
    vkl_vkm_close(m->vkm);
    vkl_free(m->ctx, m);
}

static vkl_status load(vkl_context *ctx, const char *path, const vkl_model_options *options, bool profile,
                       vkl_model **out) {
    if (!ctx || !out) return VKL_ERR_INVALID_ARGUMENT;
    *out = NULL;
    if (!path) return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "vkl_model_load: path is NULL");
    vkl_model_options defaults;
    vkl_model_options_init(&defaults);
    if (!options) options = &defaults;
    vkl_model *m = vkl_calloc(ctx, 1, sizeof(*m));
    if (!m) return VKL_ERR_OUT_OF_MEMORY;
    m->ctx = ctx;
    vkl_status st = vkl_vkm_open_flags(ctx, path, options->no_verify ? VKL_VKM_NO_DATA_CHECK : 0, &m->vkm);
    if (!st) {
        m->g = vkl_vkm_graph(m->vkm);
        m->be = choose_backend(ctx, options, m);
        if (!m->be) st = VKL_ERR_NOT_FOUND;
    }
    vkl_backend_options bo = {.disable_features = options->disable_features, .vulkan = options->vulkan,
                              .profile = profile, .threads = options->threads, .disable_isa = options->disable_isa,
                              .equal_shares = options->equal_shares != 0, .slow_worker = options->slow_worker,
                              .slow_factor = options->slow_factor};
    if (!st) st = m->be->open(ctx, &bo, &m->dev);
    if (!st) m->be->caps(m->dev, &m->caps);
    if (!st) st = m->be->weights_load(m->dev, m->g, &m->weights);
    if (!st) st = find_roles(m);
    /* only where a session could run: other graphs load for inspection */
    if (!st && m->in_ids != VKL_NONE && m->vocab && m->sym_past != VKL_NO_SYMBOL &&
        (st = vkl_plan_create(m->g, VKL_PLAN_REUSE, vkl_arena_alignment(&m->caps), &m->plan)))
        vkl_fail_prefix(ctx, st, "model: memory plan");
    /* the one-row graph, planned now for the same reason (its plan interns
     * into the symbol table it shares with g) */
    if (!st && m->plan) st = vkl_logits_row_graph(m->g, m->out_logits, &m->g_row, &m->in_row);
    if (!st && m->g_row && (st = vkl_plan_create(m->g_row, VKL_PLAN_REUSE, vkl_arena_alignment(&m->caps), &m->plan_row)))
        vkl_fail_prefix(ctx, st, "model: memory plan of the one-row graph");
    if (!st && m->plan)
        st = vkl_greedy_pick_graph(m->g, m->out_logits, &m->g_pick, &m->out_pick_index, &m->out_pick_value);
    if (!st && m->g_pick &&
        (st = vkl_plan_create(m->g_pick, VKL_PLAN_REUSE, vkl_arena_alignment(&m->caps), &m->plan_pick)))
        vkl_fail_prefix(ctx, st, "model: memory plan of the greedy-pick graph");
    if (!st) st = warm_up(m);
    if (st) {
        vkl_model_free(m);
        return st;
    }
    *out = m;
    return VKL_OK;
}

vkl_status vkl_model_load(vkl_context *ctx, const char *path, const vkl_model_options *options, vkl_model **out) {
    return load(ctx, path, options, false, out);
}

vkl_status vkl_model_load_profiled(vkl_context *ctx, const char *path, const vkl_model_options *options,
                                   vkl_model **out) {
    return load(ctx, path, options, true, out);
}

size_t vkl_model_vocab_size(const vkl_model *m) { return m ? m->vocab : 0; }

int vkl_model_metadata(const vkl_model *m, const char *key, const void **data, size_t *size) {
    return m && key && data && size && vkl_vkm_meta_get(m->vkm, key, data, size);
}

const char *vkl_model_backend_name(const vkl_model *m) { return m ? m->be->name : ""; }

uint32_t vkl_model_features(const vkl_model *m) { return m ? m->caps.features : 0u; }

const char *vkl_model_backend_reason(const vkl_model *m) { return m ? m->reason : ""; }

size_t vkl_model_weight_bytes(const vkl_model *m) {
    size_t bytes = 0;
    for (uint32_t t = 0; m && t < m->g->n_tensors; t++)
        if (m->g->tensors[t].kind == VKL_TENSOR_WEIGHT) bytes += m->g->tensors[t].nbytes;
    return bytes;
}
