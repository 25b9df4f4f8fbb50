/* The version the library was built as, for apps that check at run time
 * that the library they loaded matches the header they compiled against. */
#include "vkllm.h"

uint32_t vkl_version(void) { return VKLLM_VERSION; }

const char *vkl_version_string(void) { return VKLLM_VERSION_STRING; }
