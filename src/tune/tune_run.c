/* --tune on the real training path: the options from the config's tune.*
 * keys; a trial is a run of the config as given with its loader settings
 * (train.c's, as every sweep point's), held open from its first call to its
 * last, each call's epochs added to it as a round; and NAME-tuned.yaml. */
#include "tune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "effect.h"
#include "load.h"
#include "progress.h"

struct trial_ctx {
    const struct dataset *d; // without its eval split: no trial needs it
    const struct backend *be;
    const struct results *res;
    struct train *live[TUNE_MAX_TRIALS];      // each trial's run, held open between its calls
    struct config cfg[TUNE_MAX_TRIALS];       // what it trains
    struct run_result first[TUNE_MAX_TRIALS]; // its first call's epochs, until they join its run
};

/* Trial i's run finished (its final parameters) and freed. 0, -1 with e set. */
static int end_trial(struct trial_ctx *x, int i, struct error *e)
{
    struct run_result *run = &x->res->runs[i];
    struct run_result *out = run->n_epochs || run->failed ? run : &x->first[i]; // joined or not
    int rc = x->live[i] ? train_close(x->live[i], out, e) : 0;
    x->live[i] = NULL;
    run_result_free(&x->first[i]); // a first call that did not finish
    config_free(&x->cfg[i]);
    return rc;
}

/* Trial i's call cut short: 1 by a stop, else -1, its run marked failed
 * (one that failed before any epoch joined it says why too). */
static int trial_ended(struct trial_ctx *x, int i, struct run_result *run, struct error *e)
{
    end_trial(x, i, &(struct error){{0}});
    if (stop_requested())
        return 1;
    if (!run->failed)
        run->failed = true, snprintf(run->stopped, sizeof run->stopped, "%s", e->msg);
    return -1;
}

/* A trial's call: its run, set up at its first call and held open, trains
 * `epochs` more (after `warmup` at the first); epochs 0: the search is over. */
static int real_trial(void *ctx, struct run_result *run, int round, int position, int warmup,
                      int epochs, struct error *e)
{
    struct trial_ctx *x = ctx;
    int i = (int)(run - x->res->runs);
    if (epochs == 0)
        return end_trial(x, i, e);
    struct load_probe probe;
    struct load load;
    progress_trial(i, warmup + epochs, run->label);
    load_begin(&probe);
    if (!x->live[i]) {
        struct config *c = &x->cfg[i];
        if (config_copy(c, &run->cfg))
            return error_set(e, "out of memory");
        long cycle = c->train.warmup_epochs + c->train.epochs; // the config's: then over again
        c->train.warmup_epochs = warmup;
        c->report.floor = c->report.trace = false;
        if (!(x->live[i] = train_open(c, x->d, x->be, cycle, &x->first[i], e)))
            return trial_ended(x, i, run, e);
    }
    struct run_result *out = run->n_epochs ? run : &x->first[i];
    int from = out->n_epochs, rc = train_more(x->live[i], out, epochs, e), ran = out->n_epochs - from;
    load_end(&probe, &load);
    bool whole = rc == 0 && ran == epochs;
    if (!whole && round >= 0) // a round cut short is not kept; a profile turn's epochs are
        out->n_epochs = from;
    struct error quiet, *ae = whole ? e : &quiet; // a failure's own message stays in e
    int kept = 0;
    if (out == run && whole) {
        kept = run_result_mark_round(run, from, round, position, &load, ae);
    } else if (out != run && (out->n_epochs || out->failed)) { // the first call joins the run
        out->cfg.train = run->cfg.train; // the result keeps the config's epochs, not the trial's
        out->cfg.report = run->cfg.report;
        kept = run_result_add_round(run, out, out->n_epochs ? round : -1, position, &load, ae);
    }
    if (whole)
        return kept;
    if (rc == 0 && !stop_requested())
        error_set(e, "a trial ran %d of %d epochs", ran, epochs);
    return trial_ended(x, i, run, e);
}

int tune_parse_knobs(const char *text, unsigned *mask, struct error *e)
{
    char buf[CONFIG_STR], *rest = buf, *name;
    snprintf(buf, sizeof buf, "%s", text);
    *mask = *text ? 0 : TUNE_ALL_KNOBS; // "": all (" " names an empty knob)
    while (*text && (name = strsep(&rest, ",")) != NULL) { // each name, the spaces around it cut
        int k = 0;
        for (name = str_trim(name); k < TUNE_N_KNOBS && strcmp(name, tune_knob_key(k) + strlen("loader.")); k++)
            ;
        if (k == TUNE_N_KNOBS) // an empty name too: "a,,b", "a,", ",a"
            return error_set(e, "tune.knobs: %s '%s' (known: num_workers, prefetch_factor, "
                                "persistent_workers, pin_memory, async_copy, copy_depth)",
                             *name ? "unknown knob" : "an empty name in", *name ? name : text);
        if (*mask >> k & 1)
            return error_set(e, "tune.knobs: '%s' is named twice", name);
        *mask |= 1u << k;
    }
    return 0;
}

void tune_options_init(struct tune_options *o, const struct config *base,
                       const struct backend *be, double cores)
{
    struct error e;
    cores = cores > 0 ? cores : 1;
    *o = (struct tune_options){
        .base = base, .be = be, .cores = cores, .target_au = base->tune.target_au,
        .max_workers = base->tune.max_workers > 0 ? base->tune.max_workers : 2 * (long)cores,
        .budget_s = base->tune.budget_s};
    o->knobs = tune_parse_knobs(base->tune.knobs, &o->knobs, &e) ? TUNE_ALL_KNOBS : o->knobs;
}

/* A note for each knob tune.knobs names that acts at no setting the search
 * reaches (with the knobs it searches that would let it act turned on). */
static void note_inert(const struct tune_options *o)
{
    struct config c = *o->base; // shallow: only the loader's fields change
    if (o->knobs >> TUNE_WORKERS & 1 && o->max_workers > 0)
        c.loader.num_workers = o->max_workers;
    c.loader.async_copy |= o->knobs >> TUNE_ASYNC & 1;
    for (int k = TUNE_PREFETCH; k < TUNE_N_KNOBS && o->base->tune.knobs[0]; k++) // "": all
        if (o->knobs >> k & 1 && !effect_knob_acts(o->be, tune_knob_key(k), &c))
            fprintf(stderr, "dpbench: --tune: tune.knobs names %s, which has no effect at any "
                    "setting the search reaches: %s\n", tune_knob_key(k) + strlen("loader."),
                    k < TUNE_PIN ? "there are no workers (loader.num_workers is 0, and tune.knobs "
                    "leaves it out)" : !effect_copy_knobs(o->be) ? "this backend copies no batch "
                    "to a device" : "loader.async_copy is false, and tune.knobs leaves it out");
}

int tune_main(struct results *res, const struct backend *be, size_t max_bytes, struct error *e)
{
    struct tune_options o;
    struct dataset d = {0};
    if (res->cfg.n_sweep)
        fprintf(stderr, "dpbench: --tune: the sweep is not run; tune searches the loader "
                        "settings from the config as given\n");
    config_clear_sweep(&res->cfg);
    tune_options_init(&o, &res->cfg, be, (double)cores_usable());
    note_inert(&o);
    o.max_bytes = estimate_host(&res->cfg, &o.est) == 0 ? max_bytes : 0; // else refused before
    if (dataset_init(&d, &res->cfg, e))
        return (res->interrupted = stop_requested()) ? 0 : -2;
    dataset_set_sample_cost(&d, res->cfg.dataset.sample_cost_us);
    struct dataset trials = d;
    trials.eval = NULL;
    struct trial_ctx *x = calloc(1, sizeof *x);
    if (!x) {
        dataset_free(&d);
        return error_set(e, "out of memory");
    }
    *x = (struct trial_ctx){.d = &trials, .be = be, .res = res};
    int rc = tune_search(&o, real_trial, x, res, e);
    free(x);
    dataset_free(&d);
    res->interrupted = stop_requested();
    return rc;
}

/* Whether key path goes into the tuned config: what the user gave (file and
 * --set), every loader knob and, on the cpu, the BLAS choice the trial ran
 * with (a rerun measuring its own could take another), less the output
 * choices and the knobs PyTorch refuses without workers. */
static bool yaml_key(const struct config *c, const char *path)
{
    if (!strcmp(path, "report.out") || !strcmp(path, "report.format") ||
        (c->loader.num_workers == 0 && (!strcmp(path, "loader.prefetch_factor") ||
                                        !strcmp(path, "loader.persistent_workers"))))
        return false;
    for (int k = 0; k < TUNE_N_KNOBS; k++)
        if (!strcmp(path, tune_knob_key(k)))
            return true;
    if (!strcmp(path, "parallel.blas") || !strcmp(path, "parallel.blas_threads"))
        return c->parallel.blas_threads > 0 || strcmp(c->parallel.blas, "auto");
    return config_is_explicit(c, path);
}

int tune_write_yaml(const struct results *res, const char *dir, char *path, size_t n,
                    struct error *e)
{
    struct config c;
    path[0] = '\0';
    if (!res->tune)
        return 0;
    if (res->tune->best < 0) // stopped: the earlier one stands; else it would pass for this one's
        return res->tune->outcome == TUNE_STOPPED ? 0 : report_remove_text(dir, res->cfg.name,
                                                                           "tuned", "yaml", path, n, e);
    if (config_copy(&c, &res->cfg))
        return error_set(e, "out of memory");
    const struct run_result *best = &res->runs[res->tune->best];
    struct pipeline_knobs k = pipeline_knobs_of(&best->cfg);
    pipeline_knobs_apply(&k, &c);
    if (best->blas.n_tried) { // the cpu's BLAS choice, as the trial ran it
        bool xsmm = best->blas.lib == HOSTMM_LIBXSMM;
        snprintf(c.parallel.blas, sizeof c.parallel.blas, xsmm ? "libxsmm" : "openblas");
        c.parallel.blas_threads = xsmm ? 0 : best->blas.threads;
    }
    char header[4200];
    snprintf(header, sizeof header, "%s with the loader settings dpbench --tune chose",
             c.source[0] ? c.source : "the default config");
    char *text = config_yaml(header, &c, yaml_key);
    int rc = text ? report_write_text(dir, c.name, "tuned", "yaml", true, text, path, n, e)
                  : error_set(e, "out of memory");
    free(text);
    config_free(&c);
    return rc;
}
