/* The IR: tensors with dtype and symbolic shape, nodes with attributes,
 * graph inputs/outputs/weights. One graph owns one symbol table.
 *
 * Ops use their newest ONNX semantics (opset 21): where an older opset had an
 * attribute that later became an input (Squeeze axes, Split sizes, Reduce*
 * axes, Clip min/max, Slice starts/ends...), the IR always has the input; the
 * importer converts older forms. Optional inputs that are absent are
 * VKL_NONE. */
#ifndef VKL_GRAPH_H
#define VKL_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "dtype.h"
#include "sym.h"

#define VKL_MAX_RANK 8
#define VKL_NONE UINT32_MAX
/* Integer tensors with at most this many elements may carry a symbolic value
 * (shape arithmetic: Shape -> Gather -> Concat -> Reshape). */
#define VKL_MAX_VALUE_ELEMS 64

typedef struct vkl_shape {
    uint32_t rank;
    vkl_expr dims[VKL_MAX_RANK];
} vkl_shape;

typedef enum vkl_tensor_kind {
    VKL_TENSOR_ACTIVATION = 0, /* produced by a node, lives within one run */
    VKL_TENSOR_INPUT = 1,      /* graph input, written by the caller each run */
    VKL_TENSOR_WEIGHT = 2,     /* constant data (initializer) */
    VKL_TENSOR_STATE = 3       /* persists across runs (KV cache); sized at the maximum binding */
} vkl_tensor_kind;

typedef struct vkl_tensor {
    const char *name;
    vkl_dtype dtype;
    vkl_tensor_kind kind;
    vkl_shape shape;
    uint32_t producer;  /* node index, or VKL_NONE */
    bool is_output;     /* listed in graph outputs */
    uint32_t group;     /* quantization group size for quantized dtypes, else 0 */
    /* Weights: the bytes (canonical layout). Borrowed (e.g. from the mmapped
     * .vkm) or owned by the graph's arena. */
    const void *data;
    size_t nbytes;
    /* Known value as one expression per element, row-major, for small integer
     * tensors whose value is fixed by shapes and constants. NULL if unknown. */
    vkl_expr *value;
    uint32_t value_count;
} vkl_tensor;

/* Values are stored in .vkm files: append only. */
typedef enum vkl_attr_kind {
    VKL_ATTR_NONE = 0,
    VKL_ATTR_INT = 1,
    VKL_ATTR_FLOAT = 2,
    VKL_ATTR_STRING = 3,
    VKL_ATTR_INTS = 4,
    VKL_ATTR_FLOATS = 5,
    VKL_ATTR_TENSOR = 6 /* `i` is a tensor index (a weight) in the same graph */
} vkl_attr_kind;

typedef struct vkl_attr {
    const char *name;
    vkl_attr_kind kind;
    int64_t i;
    float f;
    const char *s;
    const int64_t *ints;
    const float *floats;
    uint32_t count; /* elements of ints/floats */
} vkl_attr;

typedef struct vkl_node {
    uint32_t op; /* vkl_op */
    const char *name;
    uint32_t n_inputs, n_outputs, n_attrs;
    uint32_t *inputs;  /* tensor indexes; VKL_NONE for an absent optional input */
    uint32_t *outputs; /* tensor indexes; VKL_NONE for an unused optional output */
    vkl_attr *attrs;
    bool dead;         /* removed by a pass; skipped everywhere, compacted by vkl_graph_compact */
} vkl_node;

typedef struct vkl_graph {
    vkl_context *ctx;
    vkl_symtab *syms;
    vkl_arena arena;
    vkl_tensor *tensors;
    uint32_t n_tensors, cap_tensors;
    vkl_node *nodes;
    uint32_t n_nodes, cap_nodes;
    uint32_t *inputs, n_inputs, cap_inputs;
    uint32_t *outputs, n_outputs, cap_outputs;
    /* name -> tensor index, open addressing (VKL_NONE = empty slot); kept
     * current by every function here that adds, renames or renumbers. */
    uint32_t *name_slots;
    uint32_t name_cap;
    /* The graph this one was derived from (vkl_graph_derive), NULL for an
     * original: a derived graph reads its base's symbol table, and its
     * tensors [0, base->n_tensors) are the base's, weights byte for byte, so
     * weights a backend loaded from the base serve it too. */
    const struct vkl_graph *base;
} vkl_graph;

vkl_status vkl_graph_create(vkl_context *ctx, vkl_graph **out);
void vkl_graph_destroy(vkl_graph *g);

/* A copy of `base` to rewrite (add tensors, inputs and nodes, rewire node
 * inputs) without touching `base`: tensors, nodes, inputs and outputs are
 * copied, every node's input and output list too; names, attributes, values
 * and weight bytes stay borrowed from `base`, and the symbol table is
 * shared (new expressions go into it, so derive while nothing else reads
 * it: at model load). `base` must outlive the copy. engine/graph_derive.c. */
vkl_status vkl_graph_derive(const vkl_graph *base, vkl_graph **out);

/* The graph whose weights g reads: the base of a derived graph, else g.
 * Backends accept weights loaded from it (engine/backend.h, prepare). */
static inline const vkl_graph *vkl_graph_weight_source(const vkl_graph *g) { return g->base ? g->base : g; }

/* Adds a tensor; names must be unique and non-empty. Shape may be NULL
 * (unknown yet: rank 0, to be set by shape inference). */
vkl_status vkl_graph_add_tensor(vkl_graph *g, const char *name, vkl_dtype dtype, vkl_tensor_kind kind,
                                const vkl_shape *shape, uint32_t *id);
/* Weight bytes: `copy` duplicates them into the graph's arena, otherwise the
 * caller keeps them alive as long as the graph. nbytes must match dtype/shape
 * (checked by vkl_graph_validate). */
vkl_status vkl_graph_set_data(vkl_graph *g, uint32_t tensor, const void *data, size_t nbytes, bool copy);
vkl_status vkl_graph_set_value(vkl_graph *g, uint32_t tensor, const vkl_expr *value, uint32_t count);
vkl_status vkl_graph_find_tensor(const vkl_graph *g, const char *name, uint32_t *id);
vkl_status vkl_graph_add_input(vkl_graph *g, uint32_t tensor);
vkl_status vkl_graph_add_output(vkl_graph *g, uint32_t tensor);
/* Drop a tensor from the graph's inputs / outputs (a pass made it internal,
 * e.g. the KV cache); VKL_ERR_NOT_FOUND if it is not listed. The tensor
 * stays until vkl_graph_compact finds it unreferenced. */
vkl_status vkl_graph_remove_input(vkl_graph *g, uint32_t tensor);
vkl_status vkl_graph_remove_output(vkl_graph *g, uint32_t tensor);
/* Adds a node; copies inputs, outputs and attrs (names, strings, arrays) into
 * the graph. Sets each output's producer. */
vkl_status vkl_graph_add_node(vkl_graph *g, uint32_t op, const char *name, const uint32_t *inputs,
                              uint32_t n_inputs, const uint32_t *outputs, uint32_t n_outputs,
                              const vkl_attr *attrs, uint32_t n_attrs, uint32_t *id);

/* Every live node input reading `from` reads `to` instead. If `from` is a
 * graph output, `to` takes its place and its name (so callers still find
 * "logits"); `from` is renamed "<name>.replaced". */
vkl_status vkl_graph_replace_uses(vkl_graph *g, uint32_t from, uint32_t to);
/* Number of live nodes reading tensor t (+1 if it is a graph output). */
uint32_t vkl_graph_use_count(const vkl_graph *g, uint32_t t);
/* Drop dead nodes and the tensors nothing references any more (not read or
 * written by a live node, not a graph input/output, not an attribute);
 * renumbers tensors and nodes. Handles held across this call are invalid. */
vkl_status vkl_graph_compact(vkl_graph *g);

/* The node's attribute by name, or NULL if absent (see vkl_op_attr_* in
 * ops.h for typed access with schema defaults). */
const vkl_attr *vkl_node_attr(const vkl_node *n, const char *name);

/* Readers of a built graph (vkl_graph_topo_order, vkl_shape_eval,
 * vkl_tensor_eval) allocate scratch through, and report failures to, the
 * context they are given rather than the graph's own: a loaded model's graph
 * is read by every session, each on its own thread with its own context. */

/* Live nodes in a topological order (inputs before users), stable: among
 * ready nodes, the lowest index first. `order` holds n_nodes entries; the
 * live count goes to *count. VKL_ERR_FORMAT naming a node on a cycle. */
vkl_status vkl_graph_topo_order(vkl_context *ctx, const vkl_graph *g, uint32_t *order, uint32_t *count);

/* Structural checks: indexes in range, each tensor produced at most once and
 * only activations/states produced, every node input defined (weight, input,
 * state or produced), acyclic, arity and attribute schema per the op table,
 * a valid group on every block-quantized tensor (weights and states alike)
 * and none on plain ones, weight byte sizes consistent with dtype and
 * (constant) shape. Errors name
 * the node (index, name, op) or tensor. */
vkl_status vkl_graph_validate(const vkl_graph *g);

/* Run every live node's shape rule in topological order, setting output
 * dtypes, shapes and (where derivable) values. Errors name the node. */
vkl_status vkl_graph_infer_shapes(vkl_graph *g);

/* Element count of a shape for bound symbol values (overflow-checked). */
vkl_status vkl_shape_eval(vkl_context *ctx, const vkl_graph *g, const vkl_shape *s, const int64_t *values,
                          size_t count, int64_t *dims, int64_t *elements);
/* Tensor t under bound symbol values: its dims, element count and canonical
 * bytes (vkl_tensor_bytes_shaped over its last dim); an error names the tensor. */
vkl_status vkl_tensor_eval(vkl_context *ctx, const vkl_graph *g, uint32_t t, const int64_t *values, size_t count,
                           int64_t *dims, int64_t *elements, size_t *bytes);
/* The bytes of a shape-value tensor (a value and no producer: a shape the
 * importer left as data) under bound symbol values, into dst (cap bytes):
 * integer and float dtypes of 1 to 8 bytes; *bytes = what was written.
 * Backends write them at the start of every execute (engine/backend.h). */
vkl_status vkl_tensor_value_bytes(vkl_context *ctx, const vkl_graph *g, uint32_t t, const int64_t *values, size_t count,
                                  void *dst, size_t cap, size_t *bytes);
/* Shape as text "[1, seq, 4096]" for messages; returns buf. */
const char *vkl_shape_str(const vkl_graph *g, const vkl_shape *s, char *buf, size_t cap);

/* Bytes for `elements` elements of dtype; false on overflow, unknown dtype,
 * or a quantized dtype whose `group` is invalid or does not divide elements.
 * Quantized (engine/quant/quant.h, docs/quant.md): elements / group blocks of
 * Q_E0M4 / Q_INT4: 4 + group/2 bytes (fp16 scale, fp16 zero code, nibbles;
 * group a multiple of 32) and Q_INT8: 4 + group bytes (f32 scale, int8s). */
bool vkl_tensor_bytes(vkl_dtype dtype, uint32_t group, int64_t elements, size_t *bytes);
/* The same for a tensor whose last dim is `cols` (elements a multiple of it):
 * a block format takes ceil(cols / group) blocks per row of cols, the last
 * one maybe short but stored whole (a weight whose K is not a multiple of the
 * group, docs/quant.md); plain dtypes ignore cols. cols = 0 with elements = 0
 * is 0 bytes. Every size of a tensor with a shape uses this one. */
bool vkl_tensor_bytes_shaped(vkl_dtype dtype, uint32_t group, int64_t elements, int64_t cols, size_t *bytes);

#endif
