/* dpbench --tune on the real training path: each trial is train_run on the
 * config as given with the trial's loader settings (the runner every sweep
 * point uses), and its renderers: the trajectory table and recommendation,
 * the JSON "tune" object and NAME-tuned.yaml. The search is tune.c's. */
#include "tune.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataset.h"
#include "progress.h"
#include "report.h"
#include "train.h"

struct trial_ctx {
    const struct config *base;
    const struct tune_options *o;
    const struct dataset *d;
    const struct backend *be;
    struct run_result *runs; // (n_runs) one per trial, the epochs of all its rounds
    int n_runs, cap;
    bool progress;           // a line per round on stderr
};

static long usable_cores(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? n : 1;
}

/* Appends run's epochs to the kept run of the same settings, or keeps run. */
static int keep_run(struct trial_ctx *x, struct run_result *run, const struct tune_settings *s,
                    struct error *e)
{
    for (int i = 0; i < x->n_runs; i++) {
        struct tune_settings k;
        tune_settings_from(&k, &x->runs[i].cfg);
        if (!tune_settings_equal(&k, s))
            continue;
        struct run_result *to = &x->runs[i];
        struct epoch_result *ep = realloc(to->epochs, (size_t)(to->n_epochs + run->n_epochs) *
                                                          sizeof *ep);
        if (!ep)
            return error_set(e, "out of memory");
        memcpy(ep + to->n_epochs, run->epochs, (size_t)run->n_epochs * sizeof *ep);
        for (int j = 0; j < run->n_epochs; j++)
            ep[to->n_epochs + j].epoch = to->n_epochs + j + 1;
        to->epochs = ep;
        to->n_epochs += run->n_epochs;
        run_result_free(run);
        return 0;
    }
    if (x->n_runs == x->cap) {
        int cap = x->cap ? 2 * x->cap : 16;
        struct run_result *grown = realloc(x->runs, (size_t)cap * sizeof *grown);
        if (!grown)
            return error_set(e, "out of memory");
        x->runs = grown;
        x->cap = cap;
    }
    x->runs[x->n_runs++] = *run;
    return 0;
}

/* tune_trial_fn over train_run: `epochs` measured epochs after one warm-up
 * (every round starts its loader afresh, as a run does). */
static int real_trial(void *ctx, const struct tune_settings *s, int epochs,
                      struct tune_measure *m, struct error *e)
{
    struct trial_ctx *x = ctx;
    struct config pc = *x->base; // no sweep: owns nothing
    tune_settings_apply(s, &pc);
    pc.train.epochs = epochs;
    pc.train.warmup_epochs = x->base->train.warmup_epochs > 0 ? x->base->train.warmup_epochs : 1;
    pc.report.floor = false;
    pc.report.trace = false;
    char what[128];
    tune_settings_text(x->o, s, false, what, sizeof what);
    int k = 0; // the trial's number: its kept run's, or the next
    for (struct tune_settings have; k < x->n_runs; k++)
        if (tune_settings_from(&have, &x->runs[k].cfg), tune_settings_equal(&have, s))
            break;
    progress_trial(k, pc.train.warmup_epochs + epochs, what);
    if (x->progress)
        fprintf(stderr, "dpbench: tune: num_workers=%ld prefetch_factor=%ld persistent=%d "
                        "pin=%d async=%d copy_depth=%ld: %d epochs\n", s->num_workers,
                s->prefetch_factor, s->persistent_workers, s->pin_memory, s->async_copy,
                s->copy_depth, epochs);
    struct run_result run = {0};
    double t0 = now_seconds();
    int rc = train_run(&pc, x->d, x->be, NULL, &run, NULL, e);
    m->elapsed_s = now_seconds() - t0;
    if (rc == 0 && run.n_epochs < epochs)
        rc = error_set(e, "interrupted");
    if (rc) {
        run_result_free(&run); // a failure mid-run keeps epochs: none are used here
        return -1;
    }
    for (int k = 0; k < run.n_epochs; k++) {
        const struct epoch_stats *st = &run.epochs[k].st;
        m->epoch_s[k] = run.epochs[k].seconds;
        m->wait_s += st->wait_s;
        m->copy_s += st->copy_s - st->hidden_s; // exposed: what the loop waited for
        m->compute_s += st->compute_s;
    }
    return keep_run(x, &run, s, e);
}

static int options_from_config(struct tune_options *o, const struct config *base,
                               const struct backend *be, struct error *e)
{
    tune_options_init(o, base, be, usable_cores());
    if (tune_parse_knobs(base->tune.knobs, &o->knobs, e))
        return -1;
    if (base->tune.max_workers > 0)
        o->max_workers = base->tune.max_workers;
    o->target_au = base->tune.target_au;
    o->budget_s = base->tune.budget_s;
    return 0;
}

int tune_main(struct results *res, const struct backend *be, struct tune_report **out,
              struct error *e)
{
    struct tune_report *t = *out = calloc(1, sizeof *t);
    if (!t)
        return error_set(e, "out of memory");
    t->base = res->cfg;
    t->base.n_sweep = 0;
    if (res->cfg.n_sweep)
        fprintf(stderr, "dpbench: --tune: the config's sweep is not run; tune searches the "
                        "loader settings from the config as given\n");
    if (options_from_config(&t->o, &t->base, be, e))
        return -2;
    struct dataset d = {0};
    if (dataset_init(&d, &t->base, e))
        return stop_requested() ? -1 : -2;
    dataset_set_sample_cost(&d, t->base.dataset.sample_cost_us);
    struct trial_ctx x = {.base = &t->base, .o = &t->o, .d = &d, .be = be,
                          .progress = isatty(STDERR_FILENO)};
    int rc = tune_search(&t->o, real_trial, &x, &t->r, e);
    dataset_free(&d);
    res->runs = x.runs;
    res->n_runs = x.n_runs;
    res->n_points = x.n_runs;
    for (int i = 0; i < x.n_runs; i++) {
        struct tune_settings s;
        tune_settings_from(&s, &x.runs[i].cfg);
        tune_settings_text(&t->o, &s, false, x.runs[i].label, sizeof x.runs[i].label);
    }
    res->interrupted = stop_requested();
    res->tune = tune_json(t);
    return rc;
}

/* ---- text ----------------------------------------------------------------- */

/* PyTorch's DataLoader line for s: prefetch_factor and persistent_workers
 * only with workers (PyTorch refuses them without). */
static void torch_line(const struct tune_settings *s, char *buf, size_t n)
{
    if (s->num_workers > 0)
        snprintf(buf, n, "DataLoader(..., num_workers=%ld, prefetch_factor=%ld, "
                         "persistent_workers=%s, pin_memory=%s)",
                 s->num_workers, s->prefetch_factor, s->persistent_workers ? "True" : "False",
                 s->pin_memory ? "True" : "False");
    else
        snprintf(buf, n, "DataLoader(..., num_workers=0, pin_memory=%s)",
                 s->pin_memory ? "True" : "False");
}

static void print_trials(FILE *f, const struct tune_report *t)
{
    int width = 8;
    char set[256];
    for (int i = 0; i < t->r.n_trials; i++) {
        tune_settings_text(&t->o, &t->r.trials[i].s, false, set, sizeof set);
        width = (int)strlen(set) > width ? (int)strlen(set) : width;
    }
    fprintf(f, "%5s  %-*s  %6s  %10s  %9s  %5s  %-8s  %s\n", "trial", width, "settings", "epochs",
            "median", "+-ci95", "AU", "bound", "decision");
    fprintf(f, "%5s  %-*s  %6s  %10s  %9s  %5s  %-8s  %s\n", "", width, "", "", "(ms)", "(ms)",
            "", "", "");
    for (int i = 0; i < t->r.n_trials; i++) {
        const struct tune_trial *tr = &t->r.trials[i];
        tune_settings_text(&t->o, &tr->s, false, set, sizeof set);
        char epochs[24]; // "12", or "12+12": the search's and the run after it
        if (tr->n > tr->n_search)
            snprintf(epochs, sizeof epochs, "%d+%d", tr->n_search, tr->n - tr->n_search);
        else
            snprintf(epochs, sizeof epochs, "%d", tr->n);
        fprintf(f, "%5d  %-*s  %6s  %10.3f  %9.3f  %5.2f  %-8s  %s\n", i, width, set, epochs,
                1e3 * tr->st.median, 1e3 * (tr->st.ci95[1] - tr->st.ci95[0]) / 2, tr->au,
                bound_name(tr->bound), tr->decision);
    }
}

void tune_print(FILE *f, const struct results *res, const struct tune_report *t)
{
    const struct tune_result *r = &t->r;
    fprintf(f, "# dpbench --tune %s on %s: %s; max_workers %ld, budget %.0f s\n",
            res->cfg.source[0] ? res->cfg.source : "(defaults)", t->o.be->name,
            t->o.target_au > 0 ? "the cheapest settings whose AU reaches the target"
                               : "the fastest epoch",
            t->o.max_workers, t->o.budget_s);
    if (t->o.target_au > 0)
        fprintf(f, "# target AU (compute time / epoch time): %.2f\n", t->o.target_au);
    if (res->machine.devices[0])
        fprintf(f, "# device: %s\n", res->machine.devices);
    print_trials(f, t);
    fprintf(f, "# %d trials, %.1f s of trials\n", r->n_trials, r->seconds);
    if (r->best < 0) {
        fprintf(f, "# no recommendation: %s\n", r->statement);
        return;
    }
    const struct tune_trial *b = &r->trials[r->best];
    char set[256], line[320];
    tune_settings_text(&t->o, &b->s, false, set, sizeof set);
    fprintf(f, "# recommendation (trial %d): %s\n", r->best, set);
    fprintf(f, "#   epoch %.3f ms, 95%% interval [%.3f, %.3f] ms (%d epochs%s); AU %.2f, "
               "%s-bound\n", 1e3 * b->st.median, 1e3 * b->st.ci95[0], 1e3 * b->st.ci95[1], b->n,
            r->confirmed ? ": the search's and two runs after it" : "", b->au,
            bound_name(b->bound));
    if (!isnan(r->rerun[0]))
        fprintf(f, "#   a rerun's median epoch: expected in [%.3f, %.3f] ms (95%% prediction "
                   "interval from its 3 runs)\n", 1e3 * r->rerun[0], 1e3 * r->rerun[1]);
    if (r->best == 0)
        fprintf(f, "#   the config as given: no change measured faster that held when "
                   "run again\n");
    for (int i = 0; i < r->n_trials; i++)
        if (r->trials[i].not_held)
            fprintf(f, "#   trial %d measured faster in the search, but not when run again: not "
                       "recommended\n", i);
    if (r->best != 0)
        fprintf(f, "#   %.2fx the speed of the config as given, 95%% interval [%.2f, %.2f] (%s)\n",
                r->gain.ratio, r->gain.ci95[0], r->gain.ci95[1],
                r->gain.verdict == VERDICT_SLOWER ? "faster" : "not told apart from noise");
    if (b->bound == BOUND_COMPUTE)
        fprintf(f, "#   compute-bound: the steps take most of the epoch; more loaders cannot "
                   "make it faster\n");
    if (t->o.target_au > 0 && r->next_cheaper >= 0) {
        tune_settings_text(&t->o, &r->trials[r->next_cheaper].s, false, set, sizeof set);
        fprintf(f, "#   the next cheaper setting, trial %d (%s), reaches AU %.3f\n",
                r->next_cheaper, set, floor(1000 * r->trials[r->next_cheaper].au) / 1000);
    }
    torch_line(&b->s, line, sizeof line);
    fprintf(f, "#   PyTorch: %s\n", line);
    if (b->s.async_copy && b->s.pin_memory)
        fprintf(f, "#   and batch.to(device, non_blocking=True) from the pinned batch, "
                   "%ld batches copied ahead\n", b->s.copy_depth);
    else if (b->s.async_copy) // non_blocking overlaps no copy from pageable memory
        fprintf(f, "#   and a thread that copies each batch to the device ahead of the step, "
                   "%ld batches ahead (from pageable memory: non_blocking=True alone would not "
                   "overlap the copy)\n", b->s.copy_depth);
    if (r->statement[0])
        fprintf(f, "# note: %s\n", r->statement);
}

/* ---- JSON and the tuned config ------------------------------------------- */

static cJSON *settings_json(const struct tune_settings *s)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "num_workers", (double)s->num_workers);
    cJSON_AddNumberToObject(o, "prefetch_factor", (double)s->prefetch_factor);
    cJSON_AddBoolToObject(o, "persistent_workers", s->persistent_workers);
    cJSON_AddBoolToObject(o, "pin_memory", s->pin_memory);
    cJSON_AddBoolToObject(o, "async_copy", s->async_copy);
    cJSON_AddNumberToObject(o, "copy_depth", (double)s->copy_depth);
    return o;
}

static cJSON *pair_json(double a, double b)
{
    cJSON *p = cJSON_CreateArray();
    cJSON_AddItemToArray(p, cJSON_CreateNumber(a));
    cJSON_AddItemToArray(p, cJSON_CreateNumber(b));
    return p;
}

/* A trial's figures: epoch_ms with the keys results use for a point's stats. */
static cJSON *trial_stats_json(const struct tune_trial *t)
{
    const struct stats *s = &t->st;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "epochs", t->n);
    cJSON_AddNumberToObject(o, "search_epochs", t->n_search); // the rest: the runs after it
    if (t->n_again) {
        cJSON *again = cJSON_AddArrayToObject(o, "again_median_ms"); // the runs after the search
        for (int i = 0; i < t->n_again; i++)
            cJSON_AddItemToArray(again, cJSON_CreateNumber(1e3 * t->again_median[i]));
    }
    cJSON *ms = cJSON_AddObjectToObject(o, "epoch_ms");
    const char *names[] = {"mean", "stddev", "median", "min", "max", "p90", "p99"};
    double v[] = {s->mean, s->stddev, s->median, s->min, s->max, s->p90, s->p99};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        cJSON_AddNumberToObject(ms, names[i], 1e3 * v[i]);
    cJSON_AddItemToObject(ms, "ci95", pair_json(1e3 * s->ci95[0], 1e3 * s->ci95[1]));
    cJSON_AddNumberToObject(o, "au", t->au);
    cJSON_AddNumberToObject(o, "wait_share", t->wait);
    cJSON_AddNumberToObject(o, "copy_share", t->copy);
    cJSON_AddNumberToObject(o, "compute_share", t->compute);
    return o;
}

cJSON *tune_json(const struct tune_report *t)
{
    const struct tune_result *r = &t->r;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "goal", t->o.target_au > 0 ? "target_au" : "fastest");
    cJSON_AddNumberToObject(o, "target_au", t->o.target_au);
    cJSON_AddNumberToObject(o, "max_workers", (double)t->o.max_workers);
    if (r->best >= 0) {
        const struct tune_trial *b = &r->trials[r->best];
        cJSON_AddItemToObject(o, "best", settings_json(&b->s));
        cJSON_AddNumberToObject(o, "best_trial", r->best);
        cJSON_AddNumberToObject(o, "best_epoch_ms", 1e3 * b->st.median);
        cJSON_AddItemToObject(o, "best_epoch_ci95",
                              pair_json(1e3 * b->st.ci95[0], 1e3 * b->st.ci95[1]));
        cJSON_AddBoolToObject(o, "confirmed", r->confirmed);
        if (isnan(r->rerun[0]))
            cJSON_AddNullToObject(o, "rerun_ms");
        else
            cJSON_AddItemToObject(o, "rerun_ms", pair_json(1e3 * r->rerun[0], 1e3 * r->rerun[1]));
        cJSON_AddNumberToObject(o, "gain_ratio", r->gain.ratio);
        cJSON_AddItemToObject(o, "gain", pair_json(r->gain.ci95[0], r->gain.ci95[1]));
    } else {
        cJSON_AddNullToObject(o, "best");
        cJSON_AddNullToObject(o, "best_epoch_ms");
        cJSON_AddNullToObject(o, "best_epoch_ci95");
        cJSON_AddBoolToObject(o, "confirmed", false);
        cJSON_AddNullToObject(o, "rerun_ms");
        cJSON_AddNullToObject(o, "gain");
    }
    cJSON *not_held = cJSON_AddArrayToObject(o, "not_held_trials");
    for (int i = 0; i < r->n_trials; i++)
        if (r->trials[i].not_held)
            cJSON_AddItemToArray(not_held, cJSON_CreateNumber(i));
    if (r->next_cheaper >= 0)
        cJSON_AddNumberToObject(o, "next_cheaper_trial", r->next_cheaper);
    cJSON_AddStringToObject(o, "statement", r->statement);
    cJSON_AddNumberToObject(o, "seconds", r->seconds);
    cJSON *trials = cJSON_AddArrayToObject(o, "trials");
    for (int i = 0; i < r->n_trials; i++) {
        const struct tune_trial *tr = &r->trials[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddItemToObject(j, "settings", settings_json(&tr->s));
        cJSON_AddItemToObject(j, "stats", trial_stats_json(tr));
        cJSON_AddStringToObject(j, "bound", bound_name(tr->bound));
        cJSON_AddStringToObject(j, "decision", tr->decision);
        cJSON_AddItemToArray(trials, j);
    }
    return o;
}

/* Whether key path goes into the tuned config: what the user gave (file and
 * --set), and every loader knob, less the output choices and the knobs
 * PyTorch refuses without workers. */
static bool yaml_key(const struct config *c, const char *path)
{
    if (strcmp(path, "report.out") == 0 || strcmp(path, "report.format") == 0)
        return false;
    bool without_workers = c->loader.num_workers == 0 &&
                           (strcmp(path, "loader.prefetch_factor") == 0 ||
                            strcmp(path, "loader.persistent_workers") == 0);
    if (without_workers)
        return false;
    for (int k = 0; k < TUNE_N_KNOBS; k++)
        if (strcmp(path, tune_knob_key(k)) == 0)
            return true;
    return config_is_explicit(c, path);
}

/* The YAML text of c's chosen keys; values as JSON scalars and flow lists,
 * which YAML reads as they are. */
static int yaml_write(FILE *f, const struct config *c, const char *tuned_from)
{
    cJSON *all = config_to_json(c);
    if (!all)
        return -1;
    fprintf(f, "# %s with the loader settings dpbench --tune chose\n", tuned_from);
    char section[CONFIG_STR] = "";
    for (size_t i = 0; config_key_name(i); i++) {
        const char *path = config_key_name(i), *dot = strchr(path, '.');
        if (!yaml_key(c, path))
            continue;
        size_t len = dot ? (size_t)(dot - path) : 0;
        bool new_section = dot && (strlen(section) != len || strncmp(section, path, len) != 0);
        if (new_section)
            snprintf(section, sizeof section, "%.*s", (int)len, path);
        cJSON *v = dot ? cJSON_GetObjectItemCaseSensitive(
                             cJSON_GetObjectItemCaseSensitive(all, section), dot + 1)
                       : cJSON_GetObjectItemCaseSensitive(all, path);
        char *text = v ? cJSON_PrintUnformatted(v) : NULL;
        if (!text)
            continue;
        if (new_section)
            fprintf(f, "%s:\n", section);
        fprintf(f, "%s%s: %s\n", dot ? "  " : "", dot ? dot + 1 : path, text);
        free(text);
    }
    cJSON_Delete(all);
    return ferror(f) ? -1 : 0;
}

int tune_write_yaml(const struct tune_report *t, const char *dir, char *path, size_t n,
                    struct error *e)
{
    path[0] = '\0';
    if (!t || t->r.best < 0)
        return 0;
    struct config c = t->base; // owns nothing: no sweep
    tune_settings_apply(&t->r.trials[t->r.best].s, &c);
    char tmp[4400];
    snprintf(path, n, "%s/%s-tuned.yaml", dir, c.name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return error_set(e, "%s: %s", tmp, strerror(errno));
    int rc = yaml_write(f, &c, c.source[0] ? c.source : "the default config");
    if (fclose(f) != 0 || rc != 0) {
        remove(tmp);
        return error_set(e, "%s: cannot write the tuned config", path);
    }
    if (rename(tmp, path) != 0) {
        remove(tmp);
        return error_set(e, "%s: %s", path, strerror(errno));
    }
    return 0;
}

void tune_report_free(struct tune_report *t)
{
    if (!t)
        return;
    tune_result_free(&t->r);
    free(t);
}
