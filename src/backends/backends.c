/* The table of backends: the only list of them. parallel.device's allowed
 * values, --version's list and every lookup by name read it. */
#include <stdio.h>
#include <string.h>

#include "backend.h"

#ifdef DPBENCH_HAVE_CUDA
#define CUDA_BACKEND (&backend_cuda)
#else
#define CUDA_BACKEND NULL
#endif

/* Every backend dpbench knows, in the order parallel.device lists them
 * (before "auto"). `be` is NULL where this build does not have it: the name
 * stays a valid value, and a run that asks for it says how to get it.
 * `auto_try`: parallel.device auto tries it, in table order, before falling
 * back to the cpu. Adding a backend: its file (one `const struct backend`
 * whose fields say what other code needs to know of it), its `extern` and
 * one line here, its name in the Makefile's CPU_SRC (docs/architecture.md). */
static const struct {
    const char *name; // = be->name
    const struct backend *be;
    bool auto_try;
} all[] = {
    {"cpu", &backend_cpu, false},
    {"cuda", CUDA_BACKEND, true},
    {"emulated", &backend_emulated, false},
};
#define N_BACKENDS (sizeof all / sizeof all[0])

const struct backend *backend_find(const char *name)
{
    for (size_t i = 0; i < N_BACKENDS; i++)
        if (strcmp(all[i].name, name) == 0)
            return all[i].be;
    return NULL;
}

const char *backend_name(size_t i) { return i < N_BACKENDS ? all[i].name : NULL; }

const struct backend *backend_at(size_t i) { return i < N_BACKENDS ? all[i].be : NULL; }

const char *backend_list(void)
{
    static char list[256];
    size_t used = 0;
    list[0] = '\0';
    for (size_t i = 0; i < N_BACKENDS; i++)
        if (all[i].be)
            used = words_append(list, sizeof list, used, all[i].name);
    return list;
}

const struct backend *backend_auto(char *why, size_t n)
{
    why[0] = '\0';
    for (size_t i = 0; i < N_BACKENDS; i++) {
        if (!all[i].auto_try)
            continue;
        struct error e;
        if (all[i].be && all[i].be->probe(&e) == 0)
            return all[i].be;
        if (!why[0] && all[i].be)
            snprintf(why, n, "%s", e.msg);
        else if (!why[0])
            snprintf(why, n, "this build has no %s backend", all[i].name);
    }
    return &backend_cpu;
}
