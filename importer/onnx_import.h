/* ONNX -> vkllm IR. Reads a model exported from PyTorch (TorchScript or
 * dynamo exporter, opsets 13-21), external data included, and builds a
 * vkl_graph whose ops use their newest ONNX form. The only module that
 * links protobuf-c. */
#ifndef VKL_ONNX_IMPORT_H
#define VKL_ONNX_IMPORT_H

#include "graph.h"

typedef struct vkl_onnx_model vkl_onnx_model;

typedef struct vkl_onnx_stats {
    uint32_t nodes;            /* nodes in the ONNX graph */
    uint32_t initializers;
    uint32_t constants;        /* Constant nodes turned into weights */
    int64_t opset;             /* ai.onnx opset import */
    int64_t ir_version;
    uint64_t weight_bytes;     /* every weight: initializers, Constants, tensors made by the reader */
    uint64_t initializer_bytes;
} vkl_onnx_stats;

typedef struct vkl_onnx_options {
    /* Stop after building and validating the graph: tensors keep unknown
     * dtypes and shapes. For tests and for debugging a failing shape rule. */
    bool skip_shape_inference;
} vkl_onnx_options;

/* Load `path`. The returned model owns the graph and whatever the graph's
 * weights point into (the unpacked protobuf, mmapped external data files);
 * free it with vkl_onnx_close once the graph is no longer needed. Errors name
 * the node (index, name, op_type, domain, opset) or the byte offset / file. */
vkl_status vkl_onnx_open(vkl_context *ctx, const char *path, vkl_onnx_model **out);
/* Same from bytes in memory (fuzzing, tests); external data is resolved
 * relative to `base_dir` (NULL: external data is an error). The bytes are
 * copied while unpacking: the caller may free them once this returns. */
vkl_status vkl_onnx_open_memory(vkl_context *ctx, const void *data, size_t size, const char *base_dir,
                                vkl_onnx_model **out);
/* The same with options (NULL: defaults). */
vkl_status vkl_onnx_open_opts(vkl_context *ctx, const char *path, const vkl_onnx_options *opts,
                              vkl_onnx_model **out);
vkl_status vkl_onnx_open_memory_opts(vkl_context *ctx, const void *data, size_t size, const char *base_dir,
                                     const vkl_onnx_options *opts, vkl_onnx_model **out);
vkl_graph *vkl_onnx_graph(vkl_onnx_model *m);
/* A hint that [data, data + bytes) will not be read soon: when it lies in a
 * mapped external data file, its whole pages leave the process's memory
 * (they are read again from the file if needed, so the graph's weights stay
 * valid). Anything else is left alone. For vkl_quantize_options.release. */
void vkl_onnx_release(vkl_onnx_model *m, const void *data, size_t bytes);
/* Copies [data, data + bytes) into dst with pread when it lies in a mapped
 * external data file (so its pages are never mapped into the process);
 * false otherwise, or on a read error. Thread-safe. For
 * vkl_quantize_options.read. */
bool vkl_onnx_read(const vkl_onnx_model *m, const void *data, size_t bytes, void *dst);
const vkl_onnx_stats *vkl_onnx_stats_get(const vkl_onnx_model *m);
void vkl_onnx_close(vkl_onnx_model *m);

#endif
