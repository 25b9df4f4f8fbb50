/* libFuzzer target for the ONNX reader: arbitrary bytes through
 * vkl_onnx_open_memory (no base directory, so external data is an error),
 * graph building, validation and shape inference. */
#include <stddef.h>
#include <stdint.h>

#include "onnx_import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vkl_context_options o;
    vkl_context_options_init(&o);
    o.log_level = VKL_LOG_ERROR; /* warnings about declared output types would flood the log */
    vkl_context *ctx = NULL;
    if (vkl_context_create(&o, &ctx)) return 0;
    vkl_onnx_model *m = NULL;
    if (vkl_onnx_open_memory(ctx, data, size, NULL, &m) == VKL_OK) vkl_onnx_close(m);
    vkl_context_destroy(ctx);
    return 0;
}
