/* Which of a point's loader knobs act, decided in one place: the notes that
 * say a knob has no effect, and the sweep's test whether a point would run
 * the same work as an earlier one, both read these. */
#ifndef DPBENCH_EFFECT_H
#define DPBENCH_EFFECT_H

#include <stdbool.h>
#include <stddef.h>

#include "backend.h"
#include "config.h"

/* pin_memory, async_copy and copy_depth act: the backend copies batches into
 * a device's own memory (struct backend's device_copies). */
bool effect_copy_knobs(const struct backend *be);
/* prefetch_factor and persistent_workers act: there are loader workers. */
bool effect_worker_knobs(const struct config *c);
/* Whether loader key `key` ("loader.prefetch_factor", ...) changes what a run
 * of config c does on be: prefetch_factor and persistent_workers act only
 * with workers, pin_memory and async_copy only where batches are copied to a
 * device, copy_depth only with async_copy there. Any other key acts. */
bool effect_knob_acts(const struct backend *be, const char *key, const struct config *c);
/* The knobs set in c that have no effect on be, in words ("" when none). */
void effect_notes(const struct config *c, const struct backend *be, char *buf, size_t n);
/* The settings c runs with on be, as a JSON object: c with every knob that
 * has no effect there at its default, without the sweep. Two points with
 * equal effective configs do the same work. Caller deletes it. */
struct cJSON *effect_config(const struct config *c, const struct backend *be);

#endif
