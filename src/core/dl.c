/* The run-time library loader shared by cuda_dl.c, comm_mpi.c and comm_nccl.c. */
#include "dl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

const char *dl_resolve(void *handle, const struct dl_sym *syms, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!(*syms[i].slot = dlsym(handle, syms[i].name)))
            return syms[i].name;
    return NULL;
}

void *dl_open(const char *env, const char *soname, int flags, const struct dl_sym *syms,
              size_t n, struct dl_error *err)
{
    const char *path = getenv(env);
    *err = (struct dl_error){.path = path && path[0] ? path : soname};
    void *h = dlopen(err->path, RTLD_NOW | flags);
    if (!h) {
        snprintf(err->reason, sizeof err->reason, "%s", dlerror());
        return NULL;
    }
    if ((err->missing = dl_resolve(h, syms, n))) {
        dlclose(h);
        return NULL;
    }
    return h;
}
