/* The loader knobs that act on a point; see effect.h. */
#include "effect.h"

#include <cjson/cJSON.h>

bool effect_copy_knobs(const struct backend *be) { return be && be->device_copies; }

bool effect_worker_knobs(const struct config *c) { return c->loader.num_workers > 0; }

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
