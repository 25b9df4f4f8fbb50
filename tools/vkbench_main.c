/* vkbench: measures a device. --probe prints what each backend reports. */
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "context.h"

static void print_features(uint32_t f) {
    static const char *const names[] = {"fp16", "int8-dot", "coopmat", "fusion", "priority", "timestamps"};
    for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (f & (1u << i)) printf(" %s", names[i]);
    printf("\n");
}

int main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "--probe")) {
        fprintf(stderr, "usage: vkbench --probe\n");
        return 2;
    }
    vkl_context *ctx;
    if (vkl_context_create(NULL, &ctx)) return 1;
    for (size_t i = 0; i < vkl_backend_count(); i++) {
        const vkl_backend_vtable *be = vkl_backend_at(i);
        vkl_backend_caps caps;
        if (be->probe(ctx, NULL, &caps)) {
            printf("%s: unavailable: %s\n", be->name, vkl_context_error(ctx));
            continue;
        }
        printf("%s: %s (%s)\n  features:", be->name, caps.device_name, caps.driver);
        print_features(caps.features);
    }
    vkl_context_destroy(ctx);
    return 0;
}
