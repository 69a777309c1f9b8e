/* The backends a run's points name, resolved and probed once. */
#ifndef DPBENCH_DEVICES_H
#define DPBENCH_DEVICES_H

#include "backend.h"
#include "config.h"

#define MAX_BACKENDS 8
struct backends {
    const char *names[MAX_BACKENDS];        // the backend table's, then auto
    const struct backend *be[MAX_BACKENDS]; // NULL: not used by any point
    int n;
};

/* Probes every backend the n point configs name (auto resolved once); -1
 * with e saying why one cannot run here. */
int backends_resolve(const struct config *pts, long n, struct backends *b, struct error *e);
/* The backend resolved for parallel.device's value name, NULL when none. */
const struct backend *backends_get(const struct backends *b, const char *name);
/* The backend the results' device line names (devices before the cpu). */
const struct backend *backends_device(const struct backends *b);

#endif
