/* dpbench --tune: a search over the loader settings (num_workers,
 * prefetch_factor, persistent_workers, and where batches are copied to a
 * device pin_memory, async_copy, copy_depth) guided by measurement, not a
 * grid. Each trial's stage breakdown says what bounds it (input: more workers
 * or prefetch; copy: pinned memory, async copy, a deeper ring; compute: stop
 * adding loaders); stats_compare decides whether a change helped or is noise;
 * a knob without effect in a state (effect_knob_acts) is never tried; each
 * trial runs only as many epochs as its interval needs.
 *
 * The search does not run anything itself: it calls a trial function, so it
 * is tested against synthetic stage timings (tests/test_tune.c) and runs the
 * real training path in tune_run.c. */
#ifndef DPBENCH_TUNE_H
#define DPBENCH_TUNE_H

#include <stdbool.h>
#include <stdio.h>

#include "backend.h"
#include "config.h"
#include "report.h"
#include "stats.h"
#include "util.h"

enum tune_knob { TUNE_WORKERS, TUNE_PREFETCH, TUNE_PERSISTENT, TUNE_PIN, TUNE_ASYNC,
                 TUNE_DEPTH, TUNE_N_KNOBS };
#define TUNE_ALL_KNOBS ((1u << TUNE_N_KNOBS) - 1)

/* The config key a knob sets ("loader.num_workers"). */
const char *tune_knob_key(enum tune_knob k);
/* tune.knobs' text ("num_workers, pin_memory"; "" = all) as a mask of
 * 1 << enum tune_knob; an unknown name is an error naming the known ones. */
int tune_parse_knobs(const char *text, unsigned *mask, struct error *e);

struct tune_settings {
    long num_workers, prefetch_factor, copy_depth;
    bool persistent_workers, pin_memory, async_copy;
};
void tune_settings_from(struct tune_settings *s, const struct config *c);
void tune_settings_apply(const struct tune_settings *s, struct config *c);
bool tune_settings_equal(const struct tune_settings *a, const struct tune_settings *b);

/* What one call of a trial function measured over `epochs` epochs. */
struct tune_measure {
    double *epoch_s;   // (epochs) wall seconds of each measured epoch, filled by the trial
    double wait_s;     // summed over the epochs: the loop waiting for data
    double copy_s;     // ... exposed host-to-device copies (not hidden behind compute)
    double compute_s;  // ... DataParallel steps (the device's work)
    double elapsed_s;  // wall seconds the call took, start-up and warm-up included
};

/* Runs `epochs` measured epochs with settings s; 0, or -1 with e set. */
typedef int (*tune_trial_fn)(void *ctx, const struct tune_settings *s, int epochs,
                             struct tune_measure *m, struct error *e);

struct tune_options {
    const struct config *base; // the config as given: the first trial and the fixed workload
    const struct backend *be;  // decides which knobs act (effect_knob_acts)
    unsigned knobs;            // 1 << enum tune_knob: the knobs the search may change
    long max_workers;          // workers the search may try, >= 1
    double target_au;          // 0 = the fastest epoch; else the cheapest settings reaching it
    double budget_s;           // trial seconds the search may spend (sum of elapsed_s)
    int min_epochs, max_epochs; // measured epochs per trial: first call (6), cap
                                // (twice train.epochs, 6 to 48)
    double ci_rel;             // a trial stops once its median's ci95 half-width / median is this
    double noise_rel;          // the first trial's half-width above this at the cap: too noisy
    double min_epoch_s;        // a median epoch shorter than this: too short to measure
};
/* Defaults for everything but base and be; knobs, workers, goal and budget
 * come from the config's tune.* keys. */
void tune_options_init(struct tune_options *o, const struct config *base,
                       const struct backend *be, long usable_cores);

struct tune_trial {
    struct tune_settings s;
    double *epoch_s;       // (n) every measured epoch of this trial
    int n;
    int n_search;          // of those, measured during the search (the rest: the runs after it)
    double again_median[2]; // the median epoch of each of its runs after the search
    int n_again;
    struct stats st;       // over epoch_s
    double stage_s[3];     // summed over epoch_s: waiting for data, exposed copies, compute
    double wait, copy, compute; // shares of the summed epoch time
    double au;             // compute / epoch time
    enum bound bound;
    int from;              // the trial the climb judged it against (its last kept one),
                           // -1 for none
    int origin;            // the trial whose move it was (`from` but in a one-step look),
                           // -1 for none (not a move)
    struct comparison vs;  // against trial `from` (valid when from >= 0)
    char decision[512];    // what the search concluded from it, and why
    bool not_held;         // chosen, then run again after the search it was not faster than
                           // the config as given: never recommended
};

struct tune_result {
    struct tune_trial *trials; // (n_trials) in the order they ran; trial 0 is the config as given
    int n_trials, cap;
    int best;              // the recommendation's trial, -1 when there is none
    int next_cheaper;      // target_au: the measured next cheaper setting, -1 if none
    struct comparison gain; // trial 0 against best: ratio = median(given) / median(best)
                            // is the speed-up, with its 95% interval
    bool confirmed;        // the chosen trial was run again after the search
    double rerun[2];       // seconds: the 95% prediction interval of a rerun's median epoch,
                           // from the chosen trial's three runs, never narrower than its
                           // search run's interval of the median (NaN when not run again)
    double seconds;        // trial seconds spent
    char statement[1024];  // why there is no recommendation, or what limited it; "" if none
};

/* Runs the search; 0 with r filled (r->best -1 and r->statement when the
 * workload is too short or too noisy to decide), -1 with e set when a trial
 * failed or memory ran out. */
int tune_search(const struct tune_options *o, tune_trial_fn trial, void *ctx,
                struct tune_result *r, struct error *e);
void tune_result_free(struct tune_result *r);

/* "num_workers=4 prefetch_factor=2 ...": the knobs that act for s (all of
 * them with every_knob). */
void tune_settings_text(const struct tune_options *o, const struct tune_settings *s,
                        bool every_knob, char *buf, size_t n);

/* ---- dpbench --tune (tune_run.c): real trials through train_run ---------- */

struct results;
struct cJSON;

/* The search as results carry it. */
struct tune_report {
    struct config base;       // the config as given, without its sweep (shallow: owns nothing)
    struct tune_options o;
    struct tune_result r;
};

/* Runs the search on res->cfg with backend be: res->runs gets one run per
 * trial (every epoch of its rounds), res->tune the JSON "tune" object, *t
 * the search (the caller frees it, also on failure). 0, -1 with e set when a
 * trial failed, -2 for bad input (tune.knobs, a dataset that cannot be
 * loaded). */
int tune_main(struct results *res, const struct backend *be, struct tune_report **t,
              struct error *e);
/* The trajectory table and the recommendation, as text. */
void tune_print(FILE *f, const struct results *res, const struct tune_report *t);
/* The JSON "tune" object (caller owns it). */
struct cJSON *tune_json(const struct tune_report *t);
/* DIR/NAME-tuned.yaml: the config as given (its explicit keys) with the
 * recommended loader settings, loadable as is; path gets its name. 0 when
 * written or when there is no recommendation (path ""), -1 with e set. */
int tune_write_yaml(const struct tune_report *t, const char *dir, char *path, size_t n,
                    struct error *e);
void tune_report_free(struct tune_report *t);

#endif
