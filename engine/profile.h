/* Internal (not in vkllm.h): what vkbench --profile reads of a model and a
 * session. Apps get no per-node times: the node list is the graph's, which
 * the public API does not show, so the numbers would mean nothing to them. */
#ifndef VKL_PROFILE_H
#define VKL_PROFILE_H

#include "graph.h"
#include "vkllm.h"

/* vkl_model_load with per-node timestamps recorded in every executable
 * (vkl_backend_options.profile): a GPU backend then puts a barrier after
 * every dispatch, so steps run somewhat slower than unprofiled ones. */
vkl_status vkl_model_load_profiled(vkl_context *ctx, const char *path, const vkl_model_options *options,
                                   vkl_model **out);

/* The graph the session's last successful step ran: the model's, or its
 * one-row graph (a prompt that kept only its last row's logits); NULL
 * before any. Its nodes are what vkl_session_node_times times. */
const vkl_graph *vkl_session_last_graph(const vkl_session *s);

/* The symbol values the session's last successful step ran with (its padded
 * shape), indexed like the graph's symbol table; NULL before any. */
const int64_t *vkl_session_last_binding(const vkl_session *s, size_t *count);

/* Device milliseconds per live node of the last successful step, in
 * vkl_graph_topo_order's order (the order executables record). At most cap
 * entries; *count = entries written. VKL_ERR_UNSUPPORTED (with a message)
 * when the backend has no timestamps or the model was not loaded profiled;
 * VKL_ERR_STATE before any step. */
vkl_status vkl_session_node_times(vkl_session *s, double *ms, size_t cap, size_t *count);

#endif
