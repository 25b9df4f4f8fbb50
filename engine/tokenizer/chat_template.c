/* Chat templates: the public face of the Jinja subset. A template is parsed
 * once (errors name line and column) and rendered with a messages list and
 * the config's special tokens, as transformers' apply_chat_template. */
#include <cjson/cJSON.h>
#include <string.h>

#include "jinja.h"

static const char *const SPECIAL_KEYS[] = {"bos_token", "eos_token", "unk_token", "pad_token",
                                           "sep_token", "cls_token", "mask_token"};
#define N_SPECIAL (sizeof(SPECIAL_KEYS) / sizeof(SPECIAL_KEYS[0]))

struct vkl_chat_template {
    vkl_context *ctx;
    jj_template *tmpl;
    char *special[N_SPECIAL]; /* NULL: not set */
};

static vkl_status create(vkl_context *ctx, const char *src, size_t len, vkl_chat_template **out) {
    vkl_chat_template *ct = vkl_calloc(ctx, 1, sizeof(*ct));
    if (!ct) return VKL_ERR_OUT_OF_MEMORY;
    ct->ctx = ctx;
    vkl_status st = jj_parse(ctx, src, len, &ct->tmpl);
    if (st) {
        vkl_free(ctx, ct);
        return st;
    }
    *out = ct;
    return VKL_OK;
}

static vkl_status set_special(vkl_chat_template *ct, size_t k, const char *value) {
    vkl_free(ct->ctx, ct->special[k]);
    ct->special[k] = NULL;
    if (!value) return VKL_OK;
    ct->special[k] = vkl_strdup(ct->ctx, value);
    return ct->special[k] ? VKL_OK : VKL_ERR_OUT_OF_MEMORY;
}

vkl_status vkl_chat_template_create(vkl_context *ctx, const char *source, size_t len, const char *bos_token,
                                    const char *eos_token, vkl_chat_template **out) {
    if (!out) return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "vkl_chat_template_create: out is NULL");
    *out = NULL;
    if (!ctx) return VKL_ERR_INVALID_ARGUMENT;
    if (!source && len) return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "vkl_chat_template_create: source is NULL");
    vkl_chat_template *ct;
    vkl_status st = create(ctx, source ? source : "", len, &ct);
    if (st) return st;
    if ((st = set_special(ct, 0, bos_token)) || (st = set_special(ct, 1, eos_token))) {
        vkl_chat_template_free(ct);
        return st;
    }
    *out = ct;
    return VKL_OK;
}

/* A special token in the config: a string or {"content": ...}. */
static const char *token_field(const cJSON *cfg, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (cJSON_IsString(v)) return v->valuestring;
    const cJSON *c = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "content") : NULL;
    return cJSON_IsString(c) ? c->valuestring : NULL;
}

vkl_status vkl_chat_template_load_config(vkl_context *ctx, const char *config_json, size_t len,
                                         vkl_chat_template **out) {
    if (!out) return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "vkl_chat_template_load_config: out is NULL");
    *out = NULL;
    if (!ctx) return VKL_ERR_INVALID_ARGUMENT;
    if (!config_json) return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "vkl_chat_template_load_config: NULL config");
    cJSON *cfg = cJSON_ParseWithLength(config_json, len);
    if (!cJSON_IsObject(cfg)) {
        cJSON_Delete(cfg);
        return vkl_fail(ctx, VKL_ERR_FORMAT, "tokenizer_config.json: not a JSON object");
    }
    /* chat_template: a string, or a list of {"name", "template"} of which
     * "default" is the one apply_chat_template uses */
    const cJSON *tmpl = cJSON_GetObjectItemCaseSensitive(cfg, "chat_template");
    const char *src = NULL;
    if (cJSON_IsString(tmpl)) {
        src = tmpl->valuestring;
    } else if (cJSON_IsArray(tmpl)) {
        const cJSON *e;
        cJSON_ArrayForEach(e, tmpl) {
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
            const cJSON *body = cJSON_GetObjectItemCaseSensitive(e, "template");
            if (!cJSON_IsString(body)) continue;
            if (!src || (cJSON_IsString(name) && !strcmp(name->valuestring, "default"))) src = body->valuestring;
        }
    }
    vkl_status st;
    vkl_chat_template *ct = NULL;
    if (!src) st = vkl_fail(ctx, VKL_ERR_NOT_FOUND, "tokenizer_config.json has no chat_template");
    else st = create(ctx, src, strlen(src), &ct);
    for (size_t k = 0; !st && k < N_SPECIAL; k++) st = set_special(ct, k, token_field(cfg, SPECIAL_KEYS[k]));
    cJSON_Delete(cfg);
    if (st) {
        vkl_chat_template_free(ct);
        return st;
    }
    *out = ct;
    return VKL_OK;
}

void vkl_chat_template_free(vkl_chat_template *ct) {
    if (!ct) return;
    for (size_t k = 0; k < N_SPECIAL; k++) vkl_free(ct->ctx, ct->special[k]);
    jj_free(ct->ctx, ct->tmpl);
    vkl_free(ct->ctx, ct);
}

void vkl_chat_template_free_buffer(const vkl_chat_template *ct, void *p) {
    if (ct && p) vkl_free(ct->ctx, p);
}

static vkl_status render(const vkl_chat_template *ct, const cJSON *vars, char **out, size_t *out_len) {
    jj_global g[N_SPECIAL];
    for (size_t k = 0; k < N_SPECIAL; k++) g[k] = (jj_global){SPECIAL_KEYS[k], ct->special[k]};
    tok_buf b = {0};
    vkl_status st = tok_buf_reserve(ct->ctx, &b, 0);
    if (!st) st = jj_render(ct->ctx, ct->tmpl, vars, g, N_SPECIAL, &b);
    if (st) {
        tok_buf_free(ct->ctx, &b);
        return st;
    }
    *out = b.p; /* NUL-terminated by tok_buf */
    if (out_len) *out_len = b.n;
    return VKL_OK;
}

vkl_status vkl_chat_template_render_json(const vkl_chat_template *ct, const char *vars_json, size_t len, char **out,
                                         size_t *out_len) {
    if (!ct) return VKL_ERR_INVALID_ARGUMENT;
    if (!out || !vars_json)
        return vkl_fail(ct->ctx, VKL_ERR_INVALID_ARGUMENT, "vkl_chat_template_render_json: NULL argument");
    *out = NULL;
    cJSON *vars = cJSON_ParseWithLength(vars_json, len);
    if (!cJSON_IsObject(vars)) {
        cJSON_Delete(vars);
        return vkl_fail(ct->ctx, VKL_ERR_FORMAT,
                        "chat template variables: expected a JSON object like {\"messages\": [...]}");
    }
    vkl_status st = render(ct, vars, out, out_len);
    cJSON_Delete(vars);
    return st;
}

/* The variables of a messages render: `extra` (a JSON object, or NULL) with
 * messages and add_generation_prompt set from the arguments. */
static vkl_status messages_vars(vkl_context *ctx, const vkl_chat_message *messages, size_t n,
                                bool add_generation_prompt, const char *extra, cJSON **out) {
    *out = NULL;
    cJSON *vars = extra ? cJSON_Parse(extra) : cJSON_CreateObject();
    if (!cJSON_IsObject(vars)) {
        cJSON_Delete(vars);
        return extra ? vkl_fail(ctx, VKL_ERR_FORMAT, "chat template variables: expected a JSON object like {\"tools\": [...]}")
                     : vkl_fail(ctx, VKL_ERR_OUT_OF_MEMORY, "out of memory building chat messages");
    }
    cJSON_DeleteItemFromObjectCaseSensitive(vars, "messages");
    cJSON_DeleteItemFromObjectCaseSensitive(vars, "add_generation_prompt");
    cJSON *list = cJSON_CreateArray();
    bool ok = list && cJSON_AddItemToObject(vars, "messages", list);
    if (!ok) cJSON_Delete(list);
    for (size_t i = 0; ok && i < n; i++) {
        if (!messages[i].role || !messages[i].content) {
            cJSON_Delete(vars);
            return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "chat template: message %zu has a NULL %s", i,
                            messages[i].role ? "content" : "role");
        }
        cJSON *m = cJSON_CreateObject();
        ok = m && cJSON_AddItemToArray(list, m) && cJSON_AddStringToObject(m, "role", messages[i].role) &&
             cJSON_AddStringToObject(m, "content", messages[i].content);
    }
    ok = ok && cJSON_AddBoolToObject(vars, "add_generation_prompt", add_generation_prompt);
    if (!ok) {
        cJSON_Delete(vars);
        return vkl_fail(ctx, VKL_ERR_OUT_OF_MEMORY, "out of memory building chat messages");
    }
    *out = vars;
    return VKL_OK;
}

vkl_status vkl_chat_template_render(const vkl_chat_template *ct, const vkl_chat_message *messages, size_t n,
                                    bool add_generation_prompt, char **out, size_t *out_len) {
    if (!ct) return VKL_ERR_INVALID_ARGUMENT;
    if (!out || (!messages && n)) return vkl_fail(ct->ctx, VKL_ERR_INVALID_ARGUMENT, "vkl_chat_template_render: NULL argument");
    *out = NULL;
    cJSON *vars;
    vkl_status st = messages_vars(ct->ctx, messages, n, add_generation_prompt, NULL, &vars);
    if (!st) st = render(ct, vars, out, out_len);
    cJSON_Delete(vars);
    return st;
}

void vkl_chat_options_init(vkl_chat_options *options) {
    if (options) *options = (vkl_chat_options){.add_generation_prompt = true, .variables_json = NULL};
}

bool vkl_tokenizer_has_chat_template(const vkl_tokenizer *t) {
    return vkl_tokenizer_chat_template(t) != NULL;
}

vkl_status vkl_tokenizer_apply_chat_template(vkl_tokenizer *t, const vkl_chat_message *messages, size_t n,
                                             const vkl_chat_options *options, char **text, size_t *len) {
    if (!t) return VKL_ERR_INVALID_ARGUMENT;
    vkl_context *ctx = t->ctx;
    if (!text || (!messages && n))
        return vkl_fail(ctx, VKL_ERR_INVALID_ARGUMENT, "vkl_tokenizer_apply_chat_template: NULL argument");
    *text = NULL;
    if (len) *len = 0;
    const vkl_chat_template *ct = vkl_tokenizer_chat_template(t);
    if (!ct)
        return vkl_fail(ctx, VKL_ERR_NOT_FOUND,
                        "vkl_tokenizer_apply_chat_template: the tokenizer has no chat template "
                        "(its tokenizer_config.json has no chat_template)");
    vkl_chat_options defaults;
    vkl_chat_options_init(&defaults);
    const vkl_chat_options *o = options ? options : &defaults;
    cJSON *vars;
    vkl_status st = messages_vars(ctx, messages, n, o->add_generation_prompt, o->variables_json, &vars);
    if (!st) st = render(ct, vars, text, len);
    cJSON_Delete(vars);
    return st;
}
