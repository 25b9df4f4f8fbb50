/* vkllm: the command-line tool. Subcommands dispatch to small functions;
 * each prints its own usage. */
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "cmd_quant_report.h"
#include "cmd_run.h"
#include "cmd_tokenize.h"
#include "commands.h"
#include "context.h"
#include "vkm.h"

static int usage(FILE *f) {
    fprintf(f,
            "usage: vkllm COMMAND [ARGS]\n"
            "commands:\n"
            "  backends            list the compiled-in backends and what each device reports\n"
            "  run [-m MODEL.vkm] -p PROMPT   generate text (default: the bundled model)\n"
            "  chat [-m MODEL.vkm]            talk with a model through its chat template\n"
            "  perplexity MODEL.vkm TEXT      perplexity of a text, line by line\n"
            "  tokenize TOKENIZER [--jsonl FILE | -p TEXT]   token ids as Hugging Face computes them\n"
            "  chat-template DIR --json FILE  render a chat with the model's template\n"
            "  import MODEL.onnx -o OUT.vkm   import an ONNX export (see `vkllm import` for options)\n"
            "  check FIXTURE_DIR   compare a fixture's ONNX Runtime outputs with a backend\n"
            "  info MODEL.vkm      what a model file holds: metadata, inputs, ops, weights\n"
            "  quant-report MODEL.onnx [--group N]   E0M4 vs int4 error per weight matrix\n"
            "  version, --version print the version of vkllm and of the .vkm format it reads\n");
    return f == stderr ? 2 : 0;
}

static int cmd_backends(vkl_context *ctx) {
    for (size_t i = 0; i < vkl_backend_count(); i++) {
        const vkl_backend_vtable *be = vkl_backend_at(i);
        vkl_backend_caps caps;
        vkl_status st = be->probe(ctx, NULL, &caps);
        if (st) {
            printf("%-8s unavailable: %s\n", be->name, vkl_context_error(ctx));
            continue;
        }
        printf("%-8s %s (%s)\n", be->name, caps.device_name, caps.driver);
    }
    return 0;
}

static int print_version(void) {
    return printf("vkllm %s (.vkm format %u.%u)\n", vkl_version_string(), VKL_VKM_VERSION_MAJOR,
                  VKL_VKM_VERSION_MINOR) < 0;
}

int main(int argc, char **argv) {
    if (argc < 2) return usage(stderr);
    vkl_context *ctx;
    if (vkl_context_create(NULL, &ctx)) {
        fprintf(stderr, "vkllm: cannot create a context (out of memory)\n");
        return 1;
    }
    int rc;
    if (!strcmp(argv[1], "backends")) rc = cmd_backends(ctx);
    else if (!strcmp(argv[1], "info")) rc = vkl_cmd_info(ctx, argc - 1, argv + 1);
    else if (!strcmp(argv[1], "run")) rc = vkl_cmd_run(ctx, argc - 1, argv + 1);
    else if (!strcmp(argv[1], "chat")) rc = vkl_cmd_chat(ctx, argc - 1, argv + 1);
    else if (!strcmp(argv[1], "perplexity")) rc = vkl_cmd_perplexity(ctx, argc - 1, argv + 1);
    else if (!strcmp(argv[1], "tokenize")) rc = vkl_cmd_tokenize(ctx, argc - 1, argv + 1);
    else if (!strcmp(argv[1], "chat-template")) rc = vkl_cmd_chat_template(ctx, argc - 1, argv + 1);
    else if (!strcmp(argv[1], "import")) rc = vkl_cmd_import(ctx, argc - 1, argv + 1);
    else if (!strcmp(argv[1], "check")) rc = vkl_cmd_check(ctx, argc - 1, argv + 1);
    else if (!strcmp(argv[1], "quant-report")) rc = vkl_cmd_quant_report(ctx, argc - 1, argv + 1);
    else if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) rc = print_version();
    else if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) rc = usage(stdout);
    else {
        fprintf(stderr, "vkllm: unknown command '%s'\n", argv[1]);
        rc = usage(stderr);
    }
    vkl_context_destroy(ctx);
    return rc;
}
