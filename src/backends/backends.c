/* The registry of backends compiled into this binary. */
#include <string.h>

#include "backend.h"

static const struct backend *const all[] = {
    &backend_cpu,
#ifdef DPBENCH_HAVE_CUDA
    &backend_cuda,
#endif
};

const struct backend *backend_find(const char *name)
{
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (strcmp(all[i]->name, name) == 0)
            return all[i];
    return NULL;
}

const char *backend_list(void)
{
#ifdef DPBENCH_HAVE_CUDA
    return "cpu cuda";
#else
    return "cpu";
#endif
}
