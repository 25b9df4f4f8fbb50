/* vkllm: the command-line tool. Subcommands dispatch to small functions;
 * each prints its own usage, on stdout for --help (exit 0), on stderr after
 * a usage error (exit 2). `vkllm help CMD` is `vkllm CMD --help`. */
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "backend_env.h"
#include "cleanup.h"
#include "cli.h"
#include "cmd_quant_report.h"
#include "cmd_run.h"
#include "cmd_tokenize.h"
#include "commands.h"
#include "context.h"
#include "vkm.h"

static int usage(FILE *f) {
    fprintf(f,
            "usage: vkllm COMMAND [ARGS]   (vkllm help COMMAND, or vkllm COMMAND --help, for its options)\n"
            "commands:\n"
            "  backends            list the compiled-in backends and what each device reports\n"
            "  run [-m MODEL.vkm] -p PROMPT   generate text (default: the bundled model)\n"
            "  chat [-m MODEL.vkm]            talk with a model through its chat template\n"
            "  perplexity MODEL.vkm TEXT      perplexity of a text, line by line\n"
            "  tokenize TOKENIZER [--jsonl FILE | -p TEXT]   token ids as Hugging Face computes them\n"
            "  chat-template DIR --json FILE  render a chat with the model's template\n"
            "  import MODEL.onnx -o OUT.vkm   import an ONNX export (see `vkllm help import` for options)\n"
            "  check FIXTURE_DIR   compare a fixture's ONNX Runtime outputs with a backend\n"
            "  info MODEL.vkm      what a model file holds: metadata, inputs, ops, weights\n"
            "  quant-report MODEL.onnx [--group N]   E0M4 vs int4 error per weight matrix\n"
            "  version, --version  print the version of vkllm and of the .vkm format it reads\n"
            "  help [COMMAND]      this list, or a command's options\n");
    return f == stdout ? 0 : VKL_EXIT_USAGE;
}

/* Commands without arguments: only --help. */
static int no_args(const char *prog, const char *what, int argc, char **argv) {
    if (argc == 2 && vkl_cli_is_help(argv[1])) {
        printf("usage: %s\n  %s\n", prog, what);
        return 0;
    }
    if (argc > 1) return vkl_cli_usage_error(prog, "unexpected argument '%s'", argv[1]);
    return -1;
}

static int cmd_backends(vkl_context *ctx, int argc, char **argv) {
    int rc = no_args("vkllm backends", "list the compiled-in backends and what each device reports", argc, argv);
    if (rc >= 0) return rc;
    /* the VKL_VK_* and VKL_CPU_DISABLE kill switches, as a model load would see them */
    vkl_env_options env;
    if (vkl_env_options_read(ctx, &env)) {
        fprintf(stderr, "vkllm backends: %s\n", vkl_context_error(ctx));
        return VKL_EXIT_FAILURE;
    }
    for (size_t i = 0; i < vkl_backend_count(); i++) {
        const vkl_backend_vtable *be = vkl_backend_at(i);
        vkl_backend_caps caps;
        vkl_status st = be->probe(ctx, &env.backend, &caps);
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
                  VKL_VKM_VERSION_MINOR) < 0
               ? VKL_EXIT_FAILURE
               : 0;
}

static int cmd_version(vkl_context *ctx, int argc, char **argv) {
    (void)ctx;
    int rc = no_args("vkllm version", "print the version of vkllm and of the .vkm format it reads", argc, argv);
    if (rc >= 0) return rc;
    return print_version();
}

typedef struct command {
    const char *name;
    int (*run)(vkl_context *ctx, int argc, char **argv);
} command;

static const command commands[] = {
    {"backends", cmd_backends},
    {"run", vkl_cmd_run},
    {"chat", vkl_cmd_chat},
    {"perplexity", vkl_cmd_perplexity},
    {"tokenize", vkl_cmd_tokenize},
    {"chat-template", vkl_cmd_chat_template},
    {"import", vkl_cmd_import},
    {"check", vkl_cmd_check},
    {"info", vkl_cmd_info},
    {"quant-report", vkl_cmd_quant_report},
    {"version", cmd_version},
};

static const command *find_command(const char *name) {
    for (size_t i = 0; i < VKL_ARRAY_LEN(commands); i++)
        if (!strcmp(commands[i].name, name)) return &commands[i];
    return NULL;
}

/* `vkllm help [COMMAND]` */
static int cmd_help(vkl_context *ctx, int argc, char **argv) {
    if (argc < 2 || (argc == 2 && vkl_cli_is_help(argv[1]))) return usage(stdout);
    if (argc > 2) return vkl_cli_usage_error("vkllm help", "unexpected argument '%s'", argv[2]);
    const command *c = find_command(argv[1]);
    if (!c) return vkl_cli_usage_error("vkllm help", "unknown command '%s'", argv[1]);
    char help[] = "--help";
    char *args[] = {argv[1], help, NULL};
    return c->run(ctx, 2, args);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "vkllm: no command given\n");
        return usage(stderr);
    }
    if (vkl_cli_is_help(argv[1])) return usage(stdout);
    if (!strcmp(argv[1], "--version")) return argc == 2 ? print_version() : cmd_version(NULL, argc - 1, argv + 1);
    const command *c = find_command(argv[1]);
    if (!c && strcmp(argv[1], "help")) {
        fprintf(stderr, "vkllm: unknown command '%s'\n", argv[1]);
        return usage(stderr);
    }
    vkl_context *ctx;
    if (vkl_context_create(NULL, &ctx)) {
        fprintf(stderr, "vkllm: cannot create a context (out of memory)\n");
        return VKL_EXIT_FAILURE;
    }
    /* an interrupted write (import -o, a pipeline cache) leaves no temporary file */
    vkl_tool_cleanup_on_signal(ctx);
    int rc = c ? c->run(ctx, argc - 1, argv + 1) : cmd_help(ctx, argc - 1, argv + 1);
    vkl_context_destroy(ctx);
    return rc;
}
