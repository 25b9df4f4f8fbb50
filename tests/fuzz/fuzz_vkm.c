/* libFuzzer target for the .vkm reader. Build the engine with -DVKL_FUZZING
 * so checksum mismatches are ignored and mutations reach the parsers. */
#include <stddef.h>
#include <stdint.h>

#include "context.h"
#include "graph.h"
#include "vkm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vkl_context_options o;
    vkl_context_options_init(&o);
    o.log_level = VKL_LOG_ERROR; /* failures are expected: keep them quiet */
    vkl_context *ctx;
    if (vkl_context_create(&o, &ctx)) return 0;
    vkl_vkm *m = NULL;
    if (vkl_vkm_open_memory(ctx, data, size, &m) == VKL_OK) {
        /* Read what a session would: every weight byte and the metadata, so
         * the sanitizers check the pointers the graph holds. */
        const vkl_graph *g = vkl_vkm_graph(m);
        volatile uint8_t sink = 0;
        for (uint32_t i = 0; i < g->n_tensors; i++) {
            const uint8_t *p = g->tensors[i].data;
            for (size_t k = 0; k < g->tensors[i].nbytes; k++) sink ^= p[k];
        }
        for (size_t i = 0; i < vkl_vkm_meta_count(m); i++) {
            vkl_vkm_meta e;
            if (vkl_vkm_meta_at(m, i, &e) && e.size) sink ^= ((const uint8_t *)e.data)[e.size - 1];
        }
        (void)sink;
        vkl_vkm_verify_data(m);
        vkl_vkm_close(m);
    }
    vkl_context_destroy(ctx);
    return 0;
}
