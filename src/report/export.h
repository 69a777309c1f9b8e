/* `dpbench --export DIR`: writes, per run point, what another implementation
 * needs to train on the same bytes in the same order (the resolved config,
 * the dataset, the initial parameters and every epoch's sample order), so a
 * reference such as scripts/torch_reference.py reads dpbench's data instead
 * of re-implementing its config reader or its generator.
 *
 * Layout (arrays are NumPy .npy v1.0 files, C order, little-endian):
 *   DIR/export.json             format, base config, one entry per point
 *   DIR/point-NNN/config.json   the point's resolved config (dpbench's JSON)
 *   DIR/point-NNN/x.npy         float32 (length, features)   } generated
 *   DIR/point-NNN/y.npy         float32 (length, out_features) } data only
 *   DIR/point-NNN/w0.npy        float32 (out_features, features) initial weight
 *   DIR/point-NNN/b0.npy        float32 (out_features) initial bias
 *   DIR/point-NNN/orders.npy    int64 (warmup_epochs + epochs, length):
 *                               row k is epoch k's sample order, warmup first
 *   DIR/point-NNN/augment.npy   int64 (warmup_epochs + epochs, length, 3): labelled
 *                               data with random transforms only; [k, i] = sample
 *                               i's (top, left, flip) in epoch k: the random crop's
 *                               offsets in the zero-padded image and the flip
 * Everything is written into a staging folder and moved into DIR when the
 * last point is written (export.json last), so a failed or interrupted
 * export leaves DIR as it was. */
#ifndef DPBENCH_EXPORT_H
#define DPBENCH_EXPORT_H

#include <stdbool.h>

#include "config.h"
#include "dataset.h"
#include "staging.h"
#include "util.h"

struct cJSON;

struct export {
    char dir[4200]; // where the files are written: the staging folder
    struct staging stage; // moved to the --export DIR by export_finish
    struct cJSON *points; // manifest entries, one per exported point
    long n_points;
};

/* Creates DIR's missing parents and the staging folder the export goes to. */
int export_init(struct export *x, const char *dir, struct error *e);
/* Writes point number n_points: pc is its resolved config, label its sweep
 * label ("" without a sweep), d the dataset built for pc. */
int export_point(struct export *x, const struct config *pc, const char *label,
                 const struct dataset *d, struct error *e);
/* Writes export.json for the points written so far and moves them all into
 * DIR; base is the config before sweep expansion. */
int export_finish(struct export *x, const struct config *base, struct error *e);
void export_free(struct export *x);

/* Whether the export of a config carries the samples themselves (x.npy,
 * y.npy): generated datasets do; a file-backed one is read from its files. */
bool export_has_data(const struct config *c);

#endif
