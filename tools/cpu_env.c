/* VKL_CPU_DISABLE -> VKL_ISA_* (cpu_env.h). */
#include "cpu_env.h"

#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cli.h"

static const struct {
    const char *name;
    uint32_t bit;
} isa_names[] = {{"avx2", VKL_ISA_AVX2}};

int vkl_tool_cpu_disable_isa(const char *prog, uint32_t *disable_isa) {
    *disable_isa = 0;
    const char *list = getenv("VKL_CPU_DISABLE");
    while (list && *list) {
        const size_t len = strcspn(list, ",");
        size_t i = 0;
        while (i < sizeof(isa_names) / sizeof(isa_names[0]) &&
               (strlen(isa_names[i].name) != len || strncmp(isa_names[i].name, list, len)))
            i++;
        if (i == sizeof(isa_names) / sizeof(isa_names[0]))
            return vkl_cli_usage_error(prog, "VKL_CPU_DISABLE: unknown instruction set '%.*s' (known: avx2)", (int)len,
                                       list);
        *disable_isa |= isa_names[i].bit;
        list += len + (list[len] == ',');
    }
    return 0;
}
