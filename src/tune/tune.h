/* dpbench --tune (docs/tune.md): profile the stage costs, predict every
 * setting in reach (train/pipeline.h), race the few best against the config
 * as given in interleaved rounds (core/rounds.h), confirm. The search runs
 * nothing itself: it calls a trial function (tune_run.c trains, tests simulate). */
#ifndef DPBENCH_TUNE_H
#define DPBENCH_TUNE_H

#include "backend.h"
#include "estimate.h"
#include "pipeline.h"
#include "report.h"

enum tune_knob { TUNE_WORKERS, TUNE_PREFETCH, TUNE_PERSISTENT, TUNE_PIN, TUNE_ASYNC,
                 TUNE_DEPTH, TUNE_N_KNOBS }; // pipeline_knobs' order
#define TUNE_ALL_KNOBS ((1u << TUNE_N_KNOBS) - 1)

const char *tune_knob_key(enum tune_knob k); // "loader.num_workers", ...
/* tune.knobs' text ("num_workers, pin_memory"; "" = all) as a mask of
 * 1 << enum tune_knob; an unknown, empty or repeated name is an error. */
int tune_parse_knobs(const char *text, unsigned *mask, struct error *e);

#define TUNE_MAX_TRIALS 8 // the config as given, the profile's other runs (3), the candidates

/* Runs `warmup` + `epochs` epochs of run->cfg and adds the measured ones to
 * run as round `round` (its `position`-th; -1: a profile turn): 0, 1 when a
 * stop ended it (nothing added), -1 with e set. Each call goes on where the
 * run's last stopped (warmup only at its first); epochs 0 ends the run. */
typedef int (*tune_trial_fn)(void *ctx, struct run_result *run, int round, int position,
                             int warmup, int epochs, struct error *e);

struct tune_options {
    const struct config *base; // the config as given: trial 0 and the fixed workload
    const struct backend *be;  // which knobs act on it (effect_knob_acts)
    unsigned knobs;            // 1 << enum tune_knob: the knobs the search may change
    long max_workers;          // tune.max_workers (0 there: twice the cores)
    double cores;              // cores this process may use (the model's bound)
    double target_au;          // 0: the fastest epoch; else the cheapest reaching it
    double budget_s;           // seconds the trials may take
    size_t max_bytes;          // host memory for the trials held open together (0: no limit)
    struct estimate est;       // the config as given's (estimate.h), when max_bytes
    double (*clock)(void *ctx); // the budget's clock (ctx: the trial's); NULL: now_seconds
};
/* From the config's tune.* keys. */
void tune_options_init(struct tune_options *o, const struct config *base,
                       const struct backend *be, double cores);

/* The search on o->base: res->runs gets a run per trial (run 0 the config as
 * given), res->tune the outcome. 0 (a stop too), -1 with e set when a trial
 * failed (what was measured stays in res). */
int tune_search(const struct tune_options *o, tune_trial_fn trial, void *ctx,
                struct results *res, struct error *e);

/* The search on res->cfg with backend be, the trials held open together
 * within max_bytes; 0, -1 with e set when a trial failed, -2 when the data
 * cannot be loaded. */
int tune_main(struct results *res, const struct backend *be, size_t max_bytes, struct error *e);
/* DIR/NAME-tuned.yaml (NAME as the result files have it), the config's
 * explicit keys with the recommended loader settings: whole or not at all,
 * replacing an earlier run's (each run's choice stays in its result file);
 * its name in path. Without a recommendation from a search that ended (not
 * stopped) an earlier run's is removed: 1, its name in path ("" where there
 * was none). 0, 1, -1. */
int tune_write_yaml(const struct results *res, const char *dir, char *path, size_t n,
                    struct error *e);

#endif
