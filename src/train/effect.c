/* The loader knobs that act on a point; see effect.h. */
#include "effect.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

bool effect_copy_knobs(const struct backend *be) { return be && be->device_copies; }

bool effect_worker_knobs(const struct config *c) { return c->loader.num_workers > 0; }

bool effect_knob_acts(const struct backend *be, const char *key, const struct config *c)
{
    if (strcmp(key, "loader.prefetch_factor") == 0 || strcmp(key, "loader.persistent_workers") == 0)
        return effect_worker_knobs(c);
    if (strcmp(key, "loader.pin_memory") == 0 || strcmp(key, "loader.async_copy") == 0)
        return effect_copy_knobs(be);
    if (strcmp(key, "loader.copy_depth") == 0)
        return effect_copy_knobs(be) && c->loader.async_copy;
    return true;
}

void effect_notes(const struct config *c, const struct backend *be, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    if (!effect_copy_knobs(be) && (c->loader.pin_memory || c->loader.async_copy))
        used = (size_t)snprintf(buf, n, "pin_memory and async_copy have no effect on the %s "
                                        "backend", be->name);
    if (!effect_worker_knobs(c) && used < n &&
        (c->loader.persistent_workers || config_is_explicit(c, "loader.prefetch_factor")))
        snprintf(buf + used, n - used, "%spersistent_workers and prefetch_factor have no effect "
                 "with num_workers 0", used ? "; " : ""); // a num_workers sweep's point
}

cJSON *effect_config(const struct config *c, const struct backend *be)
{
    struct config def, eff = *c;
    config_defaults(&def);
    eff.n_sweep = 0; // the point's values stand; the sweep's lists are not its settings
    if (!effect_worker_knobs(c)) {
        eff.loader.prefetch_factor = def.loader.prefetch_factor;
        eff.loader.persistent_workers = def.loader.persistent_workers;
    }
    if (!effect_copy_knobs(be)) {
        eff.loader.pin_memory = def.loader.pin_memory;
        eff.loader.async_copy = def.loader.async_copy;
        eff.loader.copy_depth = def.loader.copy_depth;
    }
    config_free(&def);
    return config_to_json(&eff);
}
