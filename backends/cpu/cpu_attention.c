/* Attention with its output rows (b, h, i) spread over the thread pool,
 * each computed by ref's own row code (backends/ref/attention.h): the same
 * bits as ref, one row per task, each worker its own slice of scratch. A
 * cache of int8 / fp8 rows stays on one thread (ref's kernel): a row that
 * fails to decode reports on the context, which is one thread's. */
#include "../ref/attention.h"
#include "../ref/ref_ops.h"
#include "cpu_backend.h"

typedef struct attn_job {
    const vkl_ref_args *a;
    const vkl_ref_attn *s;
    unsigned char *scratch; /* per worker: s->scratch_bytes */
} attn_job;

static void row_task(void *user, size_t row, unsigned worker) {
    const attn_job *j = user;
    /* plain float K and V: a row cannot fail (attention.h) */
    (void)vkl_ref_attention_row(j->a, j->s, (int64_t)row, j->scratch + (size_t)worker * j->s->scratch_bytes);
}

vkl_status vkl_cpu_attention(const vkl_ref_args *a) {
    const vkl_backend_weights *w = a->backend;
    vkl_ref_attn s;
    vkl_status st = vkl_ref_attention_setup(a, &s);
    if (st || s.coded) return st ? st : vkl_ref_attention(a);
    const unsigned threads = vkl_pool_threads(w->dev->pool);
    unsigned char *scratch = vkl_ref_scratch_get(a, (size_t)threads * s.scratch_bytes);
    if (!scratch) return VKL_ERR_OUT_OF_MEMORY;
    attn_job j = {a, &s, scratch};
    vkl_pool_run(w->dev->pool, (size_t)s.rows, row_task, &j);
    return VKL_OK;
}
