/* The registry of backends compiled into this binary: --version, the
 * parallel.device lookup and the result files read this table. */
#include <stdio.h>
#include <string.h>

#include "backend.h"

static const struct backend *const all[] = {
    &backend_cpu,
#ifdef DPBENCH_HAVE_CUDA
    &backend_cuda,
#endif
    &backend_emulated,
};
#define N_BACKENDS (sizeof all / sizeof all[0])

const struct backend *backend_find(const char *name)
{
    for (size_t i = 0; i < N_BACKENDS; i++)
        if (strcmp(all[i]->name, name) == 0)
            return all[i];
    return NULL;
}

const struct backend *backend_at(size_t i) { return i < N_BACKENDS ? all[i] : NULL; }

const char *backend_list(void)
{
    static char names[128];
    if (!names[0])
        for (size_t i = 0, used = 0; i < N_BACKENDS && used < sizeof names; i++)
            used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? " " : "",
                                     all[i]->name);
    return names;
}
