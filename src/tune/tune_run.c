/* --tune on the real training path: a trial's round is train_run on the
 * config as given with its loader settings (the runner of every sweep
 * point), added to its run; and NAME-tuned.yaml. */
#include "tune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "load.h"
#include "progress.h"

struct trial_ctx {
    const struct dataset *d; // without its eval split: no trial needs it
    const struct backend *be;
    const struct results *res;
};

static int real_trial(void *ctx, struct run_result *run, int round, int position, int warmup,
                      int epochs, struct error *e)
{
    struct trial_ctx *x = ctx;
    struct config pc = run->cfg; // shallow: no sweep
    struct run_result more = {0};
    struct load_probe probe;
    struct load load;
    pc.train.epochs = epochs;
    pc.train.warmup_epochs = warmup;
    pc.report.floor = pc.report.trace = false;
    progress_trial(run - x->res->runs, warmup + epochs, run->label);
    load_begin(&probe);
    int rc = train_run(&pc, x->d, x->be, NULL, &more, NULL, e);
    load_end(&probe, &load);
    if (rc || more.n_epochs < epochs) { // a failure or a stop: the round is not kept
        int ran = more.n_epochs;
        run_result_free(&more);
        return stop_requested() ? 1 : rc ? -1 : error_set(e, "a trial ran %d of %d epochs",
                                                          ran, epochs);
    }
    more.cfg.train = run->cfg.train; // the result keeps the config's epochs, not the trial's
    more.cfg.report = run->cfg.report;
    return run_result_add_round(run, &more, round, position, &load, e);
}

int tune_main(struct results *res, const struct backend *be, struct error *e)
{
    struct tune_options o;
    struct dataset d = {0};
    if (res->cfg.n_sweep)
        fprintf(stderr, "dpbench: --tune: the sweep is not run; tune searches the loader "
                        "settings from the config as given\n");
    config_clear_sweep(&res->cfg);
    tune_options_init(&o, &res->cfg, be, (double)cores_usable());
    if (dataset_init(&d, &res->cfg, e))
        return (res->interrupted = stop_requested()) ? 0 : -2;
    dataset_set_sample_cost(&d, res->cfg.dataset.sample_cost_us);
    struct dataset trials = d;
    trials.eval = NULL;
    struct trial_ctx x = {.d = &trials, .be = be, .res = res};
    int rc = tune_search(&o, real_trial, &x, res, e);
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
    if (!res->tune || res->tune->best < 0)
        return 0;
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
