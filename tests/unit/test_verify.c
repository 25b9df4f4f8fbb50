/* Loading verifies the weights: a copy of the bundled model with four bytes
 * flipped inside its data section fails to load (VKL_ERR_FORMAT naming the
 * section, "corrupt"), and loads with no_verify. check_finite: a weight set
 * to +inf (loaded unverified) makes the step fail naming the first node that
 * read it; on the clean model the check finds nothing. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "ops.h"
#include "vkllm.h"
#include "vkm.h"

#define MODEL VKL_TEST_DATA_DIR "/../model/vkllm-kjv.vkm"

typedef struct env {
    vkl_context *ctx;
    char dir[64], path[128];
    uint8_t *file; /* the bundled model's bytes */
    size_t size;
} env;

static bool write_file(const char *path, const uint8_t *p, size_t n) {
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(p, 1, n, f) == n;
    if (f && fclose(f)) ok = false;
    return ok;
}

static vkl_status load(env *e, int no_verify, vkl_model **m) {
    vkl_model_options mo;
    vkl_model_options_init(&mo);
    mo.backend = "ref";
    mo.no_verify = no_verify;
    return vkl_model_load(e->ctx, e->path, &mo, m);
}

/* Four bytes flipped at three places in the data section (its start, middle
 * and end): the default load refuses, naming the section; no_verify loads. */
static void test_corrupt_weights(env *e) {
    vkl_vkm *v = NULL;
    REQUIRE(vkl_vkm_open_memory(e->ctx, e->file, e->size, &v) == VKL_OK, "bundled model: %s", vkl_context_error(e->ctx));
    size_t data = vkl_vkm_data_bytes(v), start = e->size - data; /* the data section ends the file */
    vkl_vkm_close(v);
    const size_t at[3] = {start, start + data / 2, e->size - 4};
    uint8_t *f = malloc(e->size);
    REQUIRE(f, "malloc");
    for (int i = 0; i < 3; i++) {
        memcpy(f, e->file, e->size);
        for (size_t k = 0; k < 4; k++) f[at[i] + k] ^= 0xA5;
        REQUIRE(write_file(e->path, f, e->size), "write %s", e->path);
        vkl_model *m = NULL;
        CHECK_ERR(e->ctx, load(e, 0, &m), VKL_ERR_FORMAT, "data");
        CHECK_MSG(e->ctx, "corrupt");
        CHECK_MSG(e->ctx, "checksum");
        CHECK(m == NULL);
        CHECK_OK(e->ctx, load(e, 1, &m));
        vkl_model_free(m);
        /* the reader below the model API: the same check, and the same opt-out */
        vkl_vkm *raw = NULL;
        CHECK_ERR(e->ctx, vkl_vkm_open(e->ctx, e->path, &raw), VKL_ERR_FORMAT, "data: checksum mismatch");
        CHECK_OK(e->ctx, vkl_vkm_open_flags(e->ctx, e->path, VKL_VKM_NO_DATA_CHECK, &raw));
        if (raw) CHECK_ERR(e->ctx, vkl_vkm_verify_data(raw), VKL_ERR_FORMAT, "corrupt");
        vkl_vkm_close(raw);
    }
    free(f);
}

/* The f32 weight of the first node (in execution order) that reads one and
 * whose output is f32, and that node: poisoning it makes that node's output
 * the first non-finite one. */
static bool pick_weight(const vkl_graph *g, uint32_t *weight, uint32_t *node) {
    uint32_t *order = calloc(g->n_nodes + 1, sizeof(uint32_t)), count = 0;
    bool found = false;
    if (order && vkl_graph_topo_order(g->ctx, g, order, &count) == VKL_OK)
        for (uint32_t k = 0; k < count && !found; k++) {
            const vkl_node *n = &g->nodes[order[k]];
            if (n->n_outputs < 1 || n->outputs[0] == VKL_NONE || g->tensors[n->outputs[0]].dtype != VKL_DTYPE_F32)
                continue;
            for (uint32_t j = 0; j < n->n_inputs && !found; j++) {
                uint32_t t = n->inputs[j];
                if (t == VKL_NONE || g->tensors[t].kind != VKL_TENSOR_WEIGHT || g->tensors[t].dtype != VKL_DTYPE_F32 ||
                    g->tensors[t].nbytes < 4 * sizeof(float) || n->op == VKL_OP_GATHER)
                    continue;
                *weight = t;
                *node = order[k];
                found = true;
            }
        }
    free(order);
    return found;
}

static vkl_status append_prompt(vkl_model *m, int check_finite, vkl_session **s) {
    vkl_session_options so;
    vkl_session_options_init(&so);
    so.max_context = 64;
    so.check_finite = check_finite;
    const int32_t prompt[4] = {1, 1163, 262, 2050};
    vkl_status st = vkl_session_create(m, &so, s);
    if (!st) st = vkl_session_append(*s, prompt, 4);
    return st;
}

static void test_check_finite(env *e) {
    /* the clean model: nothing to report */
    snprintf(e->path, sizeof(e->path), "%s", MODEL);
    vkl_model *m = NULL;
    vkl_session *s = NULL;
    CHECK_OK(e->ctx, load(e, 0, &m));
    if (m) CHECK_OK(e->ctx, append_prompt(m, 1, &s));
    vkl_session_free(s);
    vkl_model_free(m);
    s = NULL;
    m = NULL;

    vkl_vkm *v = NULL;
    REQUIRE(vkl_vkm_open_memory(e->ctx, e->file, e->size, &v) == VKL_OK, "bundled model: %s", vkl_context_error(e->ctx));
    const vkl_graph *g = vkl_vkm_graph(v);
    uint32_t w = VKL_NONE, node = VKL_NONE;
    bool picked = pick_weight(g, &w, &node);
    char who[192] = "", wname[128] = "";
    size_t off = 0;
    if (picked) {
        vkl_node_str(g, node, who, sizeof(who));
        snprintf(wname, sizeof(wname), "'%s'", g->tensors[w].name);
        off = (size_t)((const uint8_t *)g->tensors[w].data - e->file) + sizeof(float); /* element 1 */
    }
    vkl_vkm_close(v);
    REQUIRE(picked, "the bundled model has no f32 weight read by an f32 node");
    uint8_t *f = malloc(e->size);
    REQUIRE(f, "malloc");
    memcpy(f, e->file, e->size);
    const uint8_t inf[4] = {0x00, 0x00, 0x80, 0x7F}; /* +inf, little-endian */
    memcpy(f + off, inf, 4);
    snprintf(e->path, sizeof(e->path), "%s/inf.vkm", e->dir);
    REQUIRE(write_file(e->path, f, e->size), "write %s", e->path);
    free(f);

    CHECK_ERR(e->ctx, load(e, 0, &m), VKL_ERR_FORMAT, "corrupt"); /* verification would have caught it */
    CHECK_OK(e->ctx, load(e, 1, &m));
    REQUIRE(m, "no_verify load failed");
    /* without the check the step runs and the logits are not all finite:
     * what a sampler would later trip over */
    vkl_status st = append_prompt(m, 0, &s);
    CHECK_OK(e->ctx, st);
    const float *logits = s ? vkl_session_logits(s) : NULL;
    bool all_finite = logits != NULL;
    for (size_t i = 0; logits && i < vkl_model_vocab_size(m); i++) all_finite &= logits[i] - logits[i] == 0.0f;
    CHECKF(logits && !all_finite, "poisoned weight %s left the logits finite", wname);
    vkl_session_free(s);
    s = NULL;
    /* with it, the step fails naming the node and the weight */
    CHECK_ERR(e->ctx, append_prompt(m, 1, &s), VKL_ERR_INVALID_ARGUMENT, "check_finite");
    CHECK_MSG(e->ctx, who);
    CHECK_MSG(e->ctx, wname);
    CHECK_MSG(e->ctx, "element 1 is +inf");
    vkl_session_free(s);
    vkl_model_free(m);
}

int main(void) {
    env e = {0};
    snprintf(e.dir, sizeof(e.dir), "/tmp/vkl_test_verify_XXXXXX");
    if (!mkdtemp(e.dir) || vkl_context_create(NULL, &e.ctx)) {
        fprintf(stderr, "test_verify: cannot set up\n");
        return 1;
    }
    e.file = check_read_file(MODEL, &e.size);
    CHECKF(e.file && e.size > 4096, "cannot read %s", MODEL);
    snprintf(e.path, sizeof(e.path), "%s/corrupt.vkm", e.dir);
    if (e.file) {
        test_corrupt_weights(&e);
        test_check_finite(&e);
    }
    char p[160];
    snprintf(p, sizeof(p), "%s/corrupt.vkm", e.dir);
    unlink(p);
    snprintf(p, sizeof(p), "%s/inf.vkm", e.dir);
    unlink(p);
    rmdir(e.dir);
    free(e.file);
    vkl_context_destroy(e.ctx);
    return check_finish("test_verify");
}
