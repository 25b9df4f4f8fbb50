/* Post-processors for one sequence with special tokens on: TemplateProcessing
 * (and Bert/Roberta, read into the same form) put their ids around it;
 * ByteLevel changes only offsets; Sequence applies each in turn. */
#include "tok_internal.h"

vkl_status tok_post_process(vkl_tokenizer *t, const tok_post *pp, const tok_ids *in, tok_ids *out) {
    out->n = 0;
    switch (pp->kind) {
    case TOK_POST_NOOP: return tok_ids_append(t->ctx, out, in->v, in->n);
    case TOK_POST_TEMPLATE:
        for (size_t k = 0; k < pp->n_single; k++) {
            vkl_status st = pp->single[k] == TOK_POST_SEQ_A ? tok_ids_append(t->ctx, out, in->v, in->n)
                                                            : tok_ids_push(t->ctx, out, pp->single[k]);
            if (st) return st;
        }
        return VKL_OK;
    case TOK_POST_SEQUENCE: {
        tok_ids a = {0}, b = {0};
        vkl_status st = tok_ids_append(t->ctx, &a, in->v, in->n);
        for (size_t k = 0; k < pp->n_items && !st; k++) {
            st = tok_post_process(t, &pp->items[k], &a, &b);
            tok_ids sw = a;
            a = b;
            b = sw;
        }
        if (!st) st = tok_ids_append(t->ctx, out, a.v, a.n);
        tok_ids_free(t->ctx, &a);
        tok_ids_free(t->ctx, &b);
        return st;
    }
    }
    return vkl_fail(t->ctx, VKL_ERR_INTERNAL, "post-processor kind %d", (int)pp->kind);
}
