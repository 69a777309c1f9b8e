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

bool backend_knob_acts(const struct backend *be, const char *key, const struct config *c)
{
    if (strcmp(key, "loader.prefetch_factor") == 0 || strcmp(key, "loader.persistent_workers") == 0)
        return c->loader.num_workers > 0;
    if (strcmp(key, "loader.pin_memory") == 0 || strcmp(key, "loader.async_copy") == 0)
        return be->device_copies;
    if (strcmp(key, "loader.copy_depth") == 0)
        return be->device_copies && c->loader.async_copy;
    return true;
}

const char *backend_list(void)
{
#ifdef DPBENCH_HAVE_CUDA
    return "cpu cuda";
#else
    return "cpu";
#endif
}
