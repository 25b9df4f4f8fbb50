/* The .vkm model file: a graph, its metadata and its weights in one
 * little-endian file that is mmapped and used in place. Layout: docs/vkm-format.md. */
#ifndef VKL_VKM_H
#define VKL_VKM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "context.h"
#include "graph.h"

/* --- On-disk constants (docs/vkm-format.md is the specification) ------- */

#define VKL_VKM_MAGIC "\x89VKM\r\n\x1a\n" /* 8 bytes; catches text-mode transfers like PNG's */
#define VKL_VKM_VERSION_MAJOR 1u          /* incompatible layout changes bump this */
#define VKL_VKM_VERSION_MINOR 1u          /* additive changes (new sections, keys, enum values, flags) */
#define VKL_VKM_BYTE_ORDER 0x01020304u    /* stored little-endian: bytes 04 03 02 01 */
#define VKL_VKM_HEADER_SIZE 64u
#define VKL_VKM_SECTION_ENTRY_SIZE 32u
#define VKL_VKM_MAX_SECTIONS 64u
#define VKL_VKM_ALIGN 64u                    /* every section and every tensor's data */
#define VKL_VKM_PAGE_ALIGN 4096u             /* the data section, and large tensors */
#define VKL_VKM_LARGE_TENSOR (64u * 1024u)   /* tensors of at least this many bytes are page-aligned */
#define VKL_VKM_META_ALIGN 8u                /* metadata values */
#define VKL_VKM_MAX_STRING (1u << 20)        /* longest name/expression/attribute string, bytes */

typedef enum vkl_vkm_section_id {
    VKL_VKM_SECTION_META = 1,    /* key -> bytes entries */
    VKL_VKM_SECTION_TENSORS = 2, /* symbol list, then the tensor table */
    VKL_VKM_SECTION_GRAPH = 3,   /* nodes, graph inputs and outputs */
    VKL_VKM_SECTION_DATA = 4     /* tensor bytes; checksum verified at open unless skipped */
} vkl_vkm_section_id;

/* Tensor record flags. */
#define VKL_VKM_TENSOR_HAS_DATA 1u
#define VKL_VKM_TENSOR_HAS_VALUE 2u
/* 1.1: a block-quantized tensor whose constant last dim is not a multiple of
 * its group (a short last group, stored whole: docs/quant.md). Set exactly
 * then, so that a 1.0 reader, which would misjudge the size, refuses the
 * tensor by its unknown flag instead. */
#define VKL_VKM_TENSOR_SHORT_GROUP 4u

/* Whether tensor t needs VKL_VKM_TENSOR_SHORT_GROUP (the writer's rule, the
 * reader's check). */
bool vkl_vkm_short_group(const vkl_graph *g, vkl_dtype dtype, uint32_t group, const vkl_shape *shape);

/* Suggested metadata keys (conventions, not enforced; any key may be added). */
#define VKL_VKM_KEY_ARCH "arch"                     /* architecture name, UTF-8 */
#define VKL_VKM_KEY_TOKENIZER "tokenizer"           /* tokenizer blob */
#define VKL_VKM_KEY_IMPORT_OPTIONS "import.options" /* the importer's options, text */

/* --- API ----------------------------------------------------------------- */

typedef struct vkl_vkm vkl_vkm; /* an opened model file */

typedef struct vkl_vkm_meta {
    const char *key; /* non-empty, unique, NUL-free, at most VKL_VKM_MAX_STRING bytes */
    const void *data;
    size_t size;
} vkl_vkm_meta;

/* Writes g (live nodes only) and the metadata entries to `path` atomically:
 * a temporary file in the same directory, fsync, rename. On any failure no
 * temporary file remains and an existing file at `path` is untouched. The
 * graph must pass vkl_graph_validate (VKL_ERR_INVALID_ARGUMENT otherwise);
 * OS failures are VKL_ERR_IO naming the file and the call. */
vkl_status vkl_vkm_write(vkl_context *ctx, const vkl_graph *g, const vkl_vkm_meta *meta, size_t n_meta,
                         const char *path);

/* Maps the file read-only, validates it (header, section table, metadata,
 * tensor table and graph are checksummed and bounds-checked; the data
 * section's checksum too, unless VKL_VKM_NO_DATA_CHECK), then builds the
 * graph with every weight pointing into the mapping. Errors: VKL_ERR_IO
 * (open/stat/mmap, not a regular file), VKL_ERR_FORMAT (malformed or corrupt;
 * the message names the section and byte offset), VKL_ERR_UNSUPPORTED (newer
 * major version, unknown op, big-endian host), VKL_ERR_OUT_OF_MEMORY. *out
 * stays NULL on failure. */
vkl_status vkl_vkm_open(vkl_context *ctx, const char *path, vkl_vkm **out);
/* Same over a caller's buffer, which must outlive the vkm (weights point
 * into it; give it 4096-byte alignment to keep the weights' alignment). */
vkl_status vkl_vkm_open_memory(vkl_context *ctx, const void *data, size_t size, vkl_vkm **out);

/* Open flags. Hashing the data section reads every weight byte (the whole
 * file, and every page of the mapping) at each load: about 0.1 s per GB from
 * the page cache (docs/perf.md). A flipped weight byte otherwise loads and
 * surfaces much later, if at all, as NaN logits or plausible wrong text. */
#define VKL_VKM_NO_DATA_CHECK 1u /* skip the data checksum (vkl_vkm_verify_data can run it later) */

vkl_status vkl_vkm_open_flags(vkl_context *ctx, const char *path, uint32_t flags, vkl_vkm **out);
vkl_status vkl_vkm_open_memory_flags(vkl_context *ctx, const void *data, size_t size, uint32_t flags, vkl_vkm **out);
void vkl_vkm_close(vkl_vkm *m); /* accepts NULL */

/* Hashes the whole data section and compares it with its stored checksum:
 * what open does unless VKL_VKM_NO_DATA_CHECK. VKL_ERR_FORMAT naming the data
 * section and saying the file is corrupt on a mismatch; the error goes to
 * the vkm's context. */
vkl_status vkl_vkm_verify_data(const vkl_vkm *m);
/* Bytes of the data section (what vkl_vkm_verify_data hashes). */
size_t vkl_vkm_data_bytes(const vkl_vkm *m);

/* The file's bytes (the mapping, or the caller's buffer): weights point
 * into them, so a backend may import this range instead of copying. */
const void *vkl_vkm_bytes(const vkl_vkm *m, size_t *size);

/* The format version the file declares (its major is VKL_VKM_VERSION_MAJOR;
 * its minor may be older or newer than this build's). */
void vkl_vkm_version(const vkl_vkm *m, uint32_t *major, uint32_t *minor);

/* The graph, owned by the vkm; its weights are valid until vkl_vkm_close. */
const vkl_graph *vkl_vkm_graph(const vkl_vkm *m);

/* Metadata: data points into the file (8-byte aligned relative to its
 * start); false when the key is absent. */
bool vkl_vkm_meta_get(const vkl_vkm *m, const char *key, const void **data, size_t *size);
size_t vkl_vkm_meta_count(const vkl_vkm *m);
/* Entry i in file order (i < vkl_vkm_meta_count); false when out of range. */
bool vkl_vkm_meta_at(const vkl_vkm *m, size_t i, vkl_vkm_meta *out);

#endif
