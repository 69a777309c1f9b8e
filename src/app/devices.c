/* Which backend each point runs on: parallel.device's values (the base's and
 * a sweep's) resolved once, each probed before any run, so that a backend
 * that cannot run fails up front as a single run would. */
#include "devices.h"

#include <stdio.h>
#include <string.h>

static const struct backend *pick_backend(const char *dev, struct error *e)
{
    if (strcmp(dev, "auto") == 0) {
        char why[sizeof e->msg];
        const struct backend *be = backend_auto(why, sizeof why);
        if (why[0])
            fprintf(stderr, "dpbench: parallel.device auto: using %s (%s)\n", be->name, why);
        return be;
    }
    const struct backend *be = backend_find(dev);
    if (!be) {
        error_set(e, "parallel.device %s: this dpbench was built without it (backends: %s); "
                     "rebuild with the CUDA toolkit installed",
                  dev, backend_list());
        return NULL;
    }
    if (be->probe(e)) {
        error_wrap(e, "parallel.device %s", dev);
        return NULL;
    }
    return be;
}

int backends_resolve(const struct config *pts, long n, struct backends *b, struct error *e)
{
    *b = (struct backends){0};
    for (const char *t; b->n < MAX_BACKENDS - 1 && (t = backend_name((size_t)b->n));)
        b->names[b->n++] = t;
    b->names[b->n++] = "auto";
    bool known = false;
    for (long i = 0; i < n; i++, known = false) {
        const char *used = pts[i].parallel.device;
        for (int k = 0; k < b->n; k++)
            if (strcmp(used, b->names[k]) == 0) {
                known = true;
                if (!b->be[k] && !(b->be[k] = pick_backend(used, e)))
                    return -1;
            }
        if (!known && !pick_backend(used, e)) // not built: says so
            return -1;
    }
    /* a point whose auto was resolved names the backend it got */
    const struct backend *a = b->be[b->n - 1];
    for (int k = 0; k < b->n - 1; k++)
        if (a && !b->be[k] && strcmp(a->name, b->names[k]) == 0)
            b->be[k] = a;
    return 0;
}

const struct backend *backends_get(const struct backends *b, const char *name)
{
    for (int k = 0; k < b->n; k++)
        if (strcmp(name, b->names[k]) == 0)
            return b->be[k];
    return NULL;
}

/* The backend the device line names: the last one with devices that a
 * point uses, else the first used. */
const struct backend *backends_device(const struct backends *b)
{
    const struct backend *be = NULL;
    for (int k = 0; k < b->n; k++)
        if (b->be[k] && (!be || b->be[k]->has_devices))
            be = b->be[k];
    return be;
}
