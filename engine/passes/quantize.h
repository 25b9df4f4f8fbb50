/* Import-time quantization: the recipe (`vkllm import --weights F --group N
 * --lm-head int8|same --embed bf16|same --kv f32|f16|int8-fp8|int8-e5m2`,
 * stored in the .vkm metadata under "import.recipe") and the pass that
 * applies it, the last one the pipeline runs. docs/quant.md ("Import recipe",
 * "KV cache in the runtime") specifies both. */
#ifndef VKL_PASSES_QUANTIZE_H
#define VKL_PASSES_QUANTIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../graph.h"

/* .vkm metadata key of the recipe text (vkl_quant_recipe_str). */
#define VKL_QUANT_RECIPE_META_KEY "import.recipe"

/* The KV cache's formats (the state tensors kv_inplace makes, docs/quant.md
 * "KV cache"): keys / values. */
typedef enum vkl_kv_format {
    VKL_KV_F32 = 0,       /* f32 / f32: as exported */
    VKL_KV_F16 = 1,       /* f16 / f16 */
    VKL_KV_INT8_FP8 = 2,  /* int8 per (token, head) / fp8 e4m3fn: MNN-LLM §4.2 */
    VKL_KV_INT8_E5M2 = 3, /* int8 per (token, head) / fp8 e5m2 */
    VKL_KV_FORMAT_COUNT_
} vkl_kv_format;

/* "f32", "f16", "int8-fp8", "int8-e5m2"; "?" if invalid. */
const char *vkl_kv_format_name(vkl_kv_format f);
/* The keys' and values' dtypes: Q_INT8 keys have group = head_dim. */
void vkl_kv_format_dtypes(vkl_kv_format f, vkl_dtype *keys, vkl_dtype *values);

typedef struct vkl_quant_recipe {
    /* Projection weights: VKL_DTYPE_F32 (left as they are), F16, Q_E0M4,
     * Q_INT4 or Q_INT8 (blocks of `group`). */
    vkl_dtype weights;
    uint32_t group;    /* elements per block along K: a multiple of 32 (32, 64, 128); default 128 */
    bool lm_head_int8; /* lm_head as int8 per output channel; false: like the other weights */
    bool embed_bf16;   /* embedding tables as bf16; false: f16 with weights=f16, else left f32 */
    vkl_kv_format kv;  /* the KV cache states' dtypes; VKL_KV_F32: left as exported */
} vkl_quant_recipe;

/* weights=f32 group=128 lm_head=same embed=same kv=f32: changes nothing. */
void vkl_quant_recipe_init(vkl_quant_recipe *r);
/* Whether the recipe converts anything (the pass is a no-op otherwise). */
bool vkl_quant_recipe_active(const vkl_quant_recipe *r);
/* One setting: key "weights" (e0m4 int4 int8 f16 f32), "group" (a
 * positive multiple of 32), "lm_head" or "lm-head" (int8 same), "embed"
 * (bf16 same), "kv" (f32 f16 int8-fp8 int8-e5m2). VKL_ERR_INVALID_ARGUMENT
 * naming key and value otherwise. */
vkl_status vkl_quant_recipe_set(vkl_context *ctx, vkl_quant_recipe *r, const char *key, const char *value);
/* "weights=e0m4 group=128 lm_head=int8 embed=bf16 kv=int8-fp8" (the
 * metadata text); keys may come in any order or be missing (defaults as in
 * _init: files written before the kv setting existed read as kv=f32). */
vkl_status vkl_quant_recipe_parse(vkl_context *ctx, const char *text, vkl_quant_recipe *r);
/* The recipe as that text; returns buf. */
const char *vkl_quant_recipe_str(const vkl_quant_recipe *r, char *buf, size_t cap);

typedef struct vkl_quantize_report {
    uint32_t matmuls;    /* MatMul / Gemm nodes that became QuantMatMul */
    uint32_t lm_head;    /* 1 when the lm_head (the MatMul making "logits") was found */
    uint32_t embeddings; /* Gathers now reading a converted table (+ a Cast to f32) */
    uint32_t skipped;    /* MatMul / Gemm with a constant f32 B the recipe would convert, left f32:
                            an A that is not f32, a Gemm epilogue QuantMatMul cannot
                            express, or values the format cannot hold (a K that is not a
                            multiple of the group is converted: a short last group) */
    uint32_t tensors[VKL_DTYPE_COUNT_]; /* weights made, by dtype */
    uint64_t bytes_before;              /* f32 bytes of the weights converted */
    uint64_t bytes_after;               /* bytes of the weights that replaced them */
    uint32_t kv_states;                 /* KV cache state tensors given the recipe's kv dtypes */
} vkl_quantize_report;

/* Rewrites, per the recipe (docs/quant.md):
 *   MatMul(A, W) with W a 2-D f32 weight [K, N] (directly or through a 2-D
 *     Transpose of a weight [N, K]) -> QuantMatMul(A, Wq), Wq = W^T [N, K]
 *     in the recipe's format; Gemm(A, B[, C]) with a constant B likewise
 *     when transA = 0, alpha = 1 and C is absent or (beta = 1, C [N]: the
 *     bias);
 *   the lm_head -> int8 per output channel (group = K) with lm_head=int8;
 *   Gather(table [V, D] f32 weight, integer indices, axis 0) -> Cast(to f32)
 *     of Gather(table as bf16 / f16);
 *   with kv != f32, every f32 KV cache state [T, B, H, D] that kv_inplace
 *     made (written by a KvAppend whose output is an Attention's K or V)
 *     takes the recipe's key / value dtype (Q_INT8 keys: group = D), and
 *     so does the KvAppend's output.
 * Converts one matrix at a time, its row stripes spread over threads
 * (scratch: one stripe of f32 per thread), straight into the graph's arena;
 * weights read by several nodes are converted once. The old f32 weights stay
 * until vkl_graph_compact drops the unreferenced ones. *fired = nodes
 * rewritten. The output does not depend on the thread count. */
vkl_status vkl_pass_quantize(vkl_graph *g, const vkl_quant_recipe *r, vkl_quantize_report *report, uint32_t *fired);

/* How the pass runs (never what it makes). release and progress are called
 * on the calling thread, between rounds of about 64 MB of source. */
typedef struct vkl_quantize_options {
    uint32_t threads; /* threads converting, the caller's included; 0 (default): one per online CPU */
    /* Optional: the pass will not read these f32 source bytes again (others
     * may: the memory must stay readable). An importer that mapped them from
     * a file drops their pages, so that an import's peak RSS is about its
     * output, not its f32 input. */
    void (*release)(void *user, const void *data, size_t bytes);
    /* Optional: copy source bytes [data, data + bytes) into dst without
     * mapping them (pread on the file an importer mapped them from); false
     * when it cannot (not from such a file, an I/O error), and the pass then
     * reads them in place. Called from the pass's threads at once: must be
     * thread-safe. Through a mapping, a [K, N] source read in column bands
     * gets all its pages mapped by the first band (the kernel maps whole
     * large folios): this keeps an import's peak RSS at its output. */
    bool (*read)(void *user, const void *data, size_t bytes, void *dst);
    /* Optional: source bytes converted so far, of about `total` (an upper
     * bound until the end, when done == total). A nonzero return stops the
     * pass: VKL_ERR_STATE, the graph half converted. */
    int (*progress)(void *user, uint64_t done, uint64_t total);
    void *user;
} vkl_quantize_options;

void vkl_quantize_options_init(vkl_quantize_options *o); /* all zero: defaults, no hooks */
/* vkl_pass_quantize with options (NULL: defaults). */
vkl_status vkl_pass_quantize_opts(vkl_graph *g, const vkl_quant_recipe *r, const vkl_quantize_options *options,
                                  vkl_quantize_report *report, uint32_t *fired);

#endif
