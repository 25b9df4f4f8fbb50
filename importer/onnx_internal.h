/* Internal interface between the ONNX reader's files: the builder state that
 * lives while one unpacked ModelProto becomes a vkl_graph. */
#ifndef VKL_ONNX_INTERNAL_H
#define VKL_ONNX_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "context.h"
#include "onnx.pb-c.h"
#include "onnx_import.h"
#include "ops.h"

/* TensorProto.DataType values newer than the onnx.proto protoc-c reads. */
enum {
    ONNX_DT_FLOAT8E4M3FN = 17,
    ONNX_DT_FLOAT8E4M3FNUZ = 18,
    ONNX_DT_FLOAT8E5M2 = 19,
    ONNX_DT_FLOAT8E5M2FNUZ = 20,
    ONNX_DT_UINT4 = 21,
    ONNX_DT_INT4 = 22,
    ONNX_DT_FLOAT4E2M1 = 23
};

/* A read-only mapping of one external data file, shared by its tensors and
 * kept until the model is closed (weights borrow from it). */
typedef struct onnx_extfile {
    char *location; /* as written in the model, relative to its directory */
    const uint8_t *map;
    size_t size;
    int fd;         /* kept open for vkl_onnx_read; -1 when closed */
    struct onnx_extfile *next;
} onnx_extfile;

typedef struct onnx_builder {
    vkl_context *ctx;
    vkl_graph *g;
    const Onnx__ModelProto *proto;
    ProtobufCAllocator *pb_alloc; /* frees typed arrays once converted */
    const char *base_dir;         /* external data directory, or NULL */
    onnx_extfile **extfiles;      /* owned by the model */
    vkl_onnx_stats *stats;
    int64_t opset;               /* ai.onnx opset, 0 if not imported */
    uint32_t *onnx_index;        /* graph node -> ONNX node index, for messages */
    uint32_t cap_onnx_index;
    uint32_t n_onnx_nodes;       /* GraphProto.node count */
} onnx_builder;

/* One ONNX node on its way into the graph. */
typedef struct onnx_node {
    uint32_t index; /* in GraphProto.node */
    const Onnx__NodeProto *np;
    const char *name, *op_type, *domain; /* never NULL */
    int64_t opset;                       /* of its domain; -1 when not imported */
    vkl_op op;
    const vkl_op_info *info;
    uint32_t *inputs;
    uint32_t n_inputs, cap_inputs;
    uint32_t *outputs;
    uint32_t n_outputs;
    vkl_attr *attrs;
    uint32_t n_attrs, cap_attrs;
    bool *consumed; /* per ONNX attribute: taken over by a legacy-form rewrite */
} onnx_node;

static inline const char *onnx_str(const char *s) { return s ? s : ""; }

/* onnx_names.c: names and tensor creation. */
bool onnx_names_get(const onnx_builder *b, const char *name, uint32_t *id);
/* Adds a tensor (its name must be new). */
vkl_status onnx_add_tensor(onnx_builder *b, const char *name, vkl_dtype dtype, vkl_tensor_kind kind,
                           const vkl_shape *shape, uint32_t *id);
/* The tensor called `name`, created as an activation of unknown dtype on its
 * first reference (graphs need not be sorted). */
vkl_status onnx_tensor_ref(onnx_builder *b, const char *name, uint32_t *id);
/* A tensor named base + suffix, made unique with ".N". */
vkl_status onnx_add_unique_tensor(onnx_builder *b, const char *base, const char *suffix, vkl_dtype dtype,
                                  vkl_tensor_kind kind, const vkl_shape *shape, uint32_t *id);
/* A weight named base + suffix (made unique), or exactly `base` when suffix
 * is NULL (taken already: an error). Data borrowed or copied. */
vkl_status onnx_add_weight(onnx_builder *b, const char *base, const char *suffix, vkl_dtype dtype,
                           const vkl_shape *shape, const void *data, size_t nbytes, bool copy, uint32_t *id);
/* 1-D i64 weight of n values (scalar shape [] when `scalar`). */
vkl_status onnx_add_i64_weight(onnx_builder *b, const char *base, const char *suffix, const int64_t *v, size_t n,
                               bool scalar, uint32_t *id);

/* onnx_tensor.c: element types and TensorProto payloads. */
bool onnx_dtype_to_vkl(int32_t onnx_type, vkl_dtype *out);
const char *onnx_dtype_name(int32_t onnx_type);
/* Dtype, constant shape and canonical bytes of a TensorProto. `what` and
 * `name` identify it in messages ("initializer 'w'"). The bytes are
 * borrowed from the message or an external file, or converted into the
 * graph arena. */
vkl_status onnx_tensor_payload(onnx_builder *b, Onnx__TensorProto *tp, const char *what, const char *name,
                               vkl_dtype *dtype, vkl_shape *shape, const void **data, size_t *nbytes);
/* Adds the TensorProto as a weight named as onnx_add_weight names it. */
vkl_status onnx_tensor_to_weight(onnx_builder *b, Onnx__TensorProto *tp, const char *what, const char *base,
                                 const char *suffix, uint32_t *id);
void onnx_extfiles_close(vkl_context *ctx, onnx_extfile *list);

/* onnx_shape.c: declared types of graph inputs. */
vkl_status onnx_value_info_type(onnx_builder *b, const Onnx__ValueInfoProto *vi, vkl_dtype *dtype,
                                vkl_shape *shape);
/* A valid symbol name for arbitrary text: invalid bytes become '_', a
 * leading digit gets a '_' prefix, overlong names end in a hash. out holds
 * VKL_SYM_NAME_MAX + 1 bytes. Deterministic. */
void onnx_symbol_name(const char *text, char *out);

/* onnx_node.c: nodes. */
const char *onnx_node_str(const onnx_builder *b, uint32_t index, char *buf, size_t cap);
int64_t onnx_opset_of(const onnx_builder *b, const char *domain);
/* Name base for tensors made for a node: its first output, else "node<i>"
 * written into buf. */
const char *onnx_node_base(const onnx_node *n, char *buf, size_t cap);
bool onnx_is_constant(const Onnx__NodeProto *np);
/* A Constant node's value as a weight named after its output. */
vkl_status onnx_convert_constant(onnx_builder *b, uint32_t index, const Onnx__NodeProto *np);
/* Creates the node's output tensors up front (sorted or not, every name is
 * known before any node is converted); a name defined twice is an error. */
vkl_status onnx_register_outputs(onnx_builder *b, uint32_t index, const Onnx__NodeProto *np);
vkl_status onnx_convert_node(onnx_builder *b, uint32_t index, Onnx__NodeProto *np);
/* Every node input is defined (a node output, weight or graph input). */
vkl_status onnx_check_inputs_defined(onnx_builder *b);
/* Adds a graph node for the ONNX node (recording its ONNX index). */
vkl_status onnx_emit(onnx_builder *b, const onnx_node *n, vkl_op op, const char *name, const uint32_t *inputs,
                     uint32_t n_inputs, const uint32_t *outputs, uint32_t n_outputs, const vkl_attr *attrs,
                     uint32_t n_attrs);

/* onnx_attrs.c: attributes. */
vkl_status onnx_node_fail(const onnx_builder *b, const onnx_node *n, vkl_status st, const char *fmt, ...)
    VKL_PRINTF(4, 5);
const Onnx__AttributeProto *onnx_attr_get(const onnx_node *n, const char *name, uint32_t *index);
Onnx__AttributeProto__AttributeType onnx_attr_type(const Onnx__AttributeProto *ap);
const char *onnx_attr_type_name(Onnx__AttributeProto__AttributeType t);
/* Every attribute not consumed by a rewrite, checked against the op's
 * schema and converted into n->attrs. */
vkl_status onnx_convert_attrs(onnx_builder *b, onnx_node *n);
vkl_status onnx_push_attr(onnx_builder *b, onnx_node *n, const vkl_attr *a);
vkl_status onnx_set_input(onnx_builder *b, onnx_node *n, uint32_t k, uint32_t tensor);

/* onnx_legacy.c: older-opset forms rewritten to the newest. Sets *done when
 * it emitted the node itself (an expansion). */
vkl_status onnx_legacy_rewrite(onnx_builder *b, onnx_node *n, bool *done);
/* An attribute the op's schema does not know that is safe to drop. */
bool onnx_attr_droppable(const onnx_node *n, const char *name);

/* onnx_wire.c: where a malformed protobuf goes wrong (byte offset). */
vkl_status onnx_wire_diagnose(vkl_context *ctx, const uint8_t *data, size_t size);

#endif
